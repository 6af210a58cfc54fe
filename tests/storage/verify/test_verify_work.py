"""The fixed work of a shallow ``seglog verify`` per segment, counted (never timed).

Partitions written by seglog's own writer (rolled segments with their ``.index``,
``.timeindex`` and producer snapshots, as a broker leaves them) are verified at two sizes;
:mod:`tests.work_count` counts each Python function's calls, the files opened and the
directories listed. What one more segment costs is the difference divided by the segments
added: a bounded number of files (its ``.log``, ``.index``, ``.timeindex`` and snapshot), a
bounded number of calls of any one function and in all, no directory listing. A per-segment
``stat``, ``Path`` or re-read of the directory shows up here as calls or opens that grow.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seglog_cli.storage.log.checkpoints import PartitionMetadata, TopicPartition, write_offset_checkpoint, \
    write_partition_metadata
from seglog_cli.storage.log.log_dir_files import write_clean_shutdown
from seglog_cli.storage.verify.verify import VerifyOptions, verify
from seglog_cli.storage.verify.verify_partition import verify_partition
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.write.writer import PartitionWriter, SegmentConfig
from tests.work_count import assert_linear, count_work

T0 = 1_767_225_600_000
CONFIG = SegmentConfig(segment_bytes=8192, index_interval_bytes=1024)
BATCHES_PER_SEGMENT = 12  # ~650-byte batches: a segment rolls every 12
SMALL, LARGE = 8, 32  # segments per partition
FILES_PER_SEGMENT = 4  # .log, .index, .timeindex, producer snapshot
CALLS_PER_SEGMENT = 5  # of any one Python function (a segment's 4 files, and its 4-5 directory entries listed)
BUILTIN_CALLS_PER_SEGMENT = 40  # of any one builtin (len, list.append, ...)
ALL_CALLS_PER_SEGMENT = 250  # of every function, builtins included (582 before 2026-11: pathlib, stat, regexes)


def write_partition(directory: Path, segments: int) -> Path:
    """``segments`` rolled segments of v2 batches (the last one active), a snapshot at each roll."""
    directory.mkdir(parents=True)
    write_partition_metadata(directory / "partition.metadata", PartitionMetadata(0, "b3JkZXJzLXRvcGljLWlkAA"))
    writer = PartitionWriter(directory, CONFIG)
    offset = 0
    for n in range(segments * BATCHES_PER_SEGMENT - BATCHES_PER_SEGMENT // 2):
        records = [NewRecord(key=f"k-{(offset + i) % 17}".encode(), value=json.dumps({"n": offset + i, "pad": "x" * 80})
                             .encode(), timestamp=T0 + 1000 * (offset + i)) for i in range(5)]
        writer.append(build_batch(records, base_offset=offset, partition_leader_epoch=0))
        offset += 5
    writer.close()
    return directory


def write_log_dir(root: Path, partitions: int, segments: int) -> Path:
    ends = {}
    for p in range(partitions):
        directory = write_partition(root / f"orders-{p}", segments)
        ends[TopicPartition("orders", p)] = int(sorted(directory.glob("*.log"))[-1].stem) + 1
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        write_offset_checkpoint(root / name, {tp: 0 for tp in ends})
    write_offset_checkpoint(root / "log-start-offset-checkpoint", {})
    write_clean_shutdown(root / ".kafka_cleanshutdown", 1)
    return root


def segments_in(directory: Path) -> int:
    return sum(1 for _ in directory.glob("*.log"))


def per_segment(small, large, added: int) -> dict[str, float]:
    """What each added segment cost: every figure and every function's calls."""
    out = {name: (large.figures()[name] - value) / added for name, value in small.figures().items()}
    out.update({f"calls of {function}": (calls - small.calls.get(function, 0)) / added
                for function, calls in large.calls.items()})
    out["all calls"] = (sum(large.calls.values()) - sum(small.calls.values())) / added
    return out


def assert_calls_bounded(cost: dict[str, float], segments: int = 1, once: int = 0) -> None:
    """No function called more than a fixed number of times per segment (``cost`` is the cost
    of ``segments`` segments), no ``stat`` and no ``pathlib`` per segment: the directory
    listing says what exists. ``once``: the calls allowed per partition on top (its
    directory, its log dir's files) of each such function."""
    heavy = {}
    for name, calls in cost.items():
        if not name.startswith("calls of ") or calls <= 0:
            continue
        if "posix.stat" in name or "pathlib.py" in name:
            bound = once
        elif name.startswith("calls of ~:0("):
            bound = BUILTIN_CALLS_PER_SEGMENT * segments + once
        else:
            bound = CALLS_PER_SEGMENT * segments + once
        if calls > bound:
            heavy[name] = calls
    assert not heavy, f"calls over their bound: {heavy}"
    assert cost["all calls"] <= ALL_CALLS_PER_SEGMENT * segments + 20 * once, cost["all calls"]


@pytest.fixture(scope="module")
def partitions(tmp_path_factory):
    root = tmp_path_factory.mktemp("verify-work")
    return {n: write_partition(root / f"n{n}" / "orders-0", n) for n in (2, SMALL, LARGE)}


def test_partition_verify_work_per_segment_is_bounded(partitions):
    verify_partition(partitions[2])  # warm-up: imports, first-use tables
    small_report, small = count_work(lambda: verify_partition(partitions[SMALL]))
    large_report, large = count_work(lambda: verify_partition(partitions[LARGE]))
    assert not small_report.findings and not large_report.findings
    added = large_report.segments - small_report.segments
    assert added == segments_in(partitions[LARGE]) - segments_in(partitions[SMALL]) > 0
    cost = per_segment(small, large, added)
    assert cost["files opened"] <= FILES_PER_SEGMENT, cost["files opened"]
    assert large.listings == small.listings == 1  # the partition listed once, whatever its size
    assert cost["bytes mapped"] == 0  # small segments are read, not mapped
    assert_calls_bounded(cost)
    assert_linear(small, large, LARGE / SMALL, "verify_partition")


def test_log_dir_verify_work_per_partition_is_bounded(tmp_path):
    """A log dir of partitions of SMALL segments: each added partition costs its segments'
    work and a small constant (its listing, partition.metadata, a few stats of the log dir's
    files, its Path)."""
    verify([str(write_log_dir(tmp_path / "warm", 2, 2))])
    small_dir, large_dir = write_log_dir(tmp_path / "small", 3, SMALL), write_log_dir(tmp_path / "large", 12, SMALL)
    small_report, small = count_work(lambda: verify([str(small_dir)], VerifyOptions(jobs=1)))
    large_report, large = count_work(lambda: verify([str(large_dir)], VerifyOptions(jobs=1)))
    assert small_report.status == large_report.status == "clean"
    added = len(large_report.partitions) - len(small_report.partitions)
    assert sum(p.segments for p in large_report.partitions) == 12 * SMALL
    cost = per_segment(small, large, added)  # per partition here
    assert cost["files opened"] <= FILES_PER_SEGMENT * SMALL + 2  # + partition.metadata, leader-epoch-checkpoint
    assert cost["directories listed"] == 1
    assert_calls_bounded(cost, segments=SMALL, once=12)
    assert_linear(small, large, 4, "verify of a log dir")
