"""Lag of committed offsets against their partitions (seglog offsets): on the broker-written corpus
(expectations from the checkpoint text and the segment bytes, read here by hand), on a log dir
where retention (seglog simulate-retention --apply, Kafka's deletion) removed segments past a
group's commit, a commit beyond the log end, a partition hosted elsewhere, an empty partition."""

from __future__ import annotations

import json
import shutil
import struct


from seglog_cli.storage.coordinator.consumer_lag import (
    BELOW_LOG_START, BEYOND_LOG_END, FROM_SEGMENTS, NO_SEGMENTS, NOT_HERE, PartitionEnds,
)
from seglog_cli.storage.coordinator.offsets import read_committed_offsets
from seglog_cli.storage.write.writer import PartitionWriter, SegmentConfig
from tests.conftest import run_seglog
from tests.coordinator_bytes import batch, offset_commit_key, offset_commit_value


def checkpoint_text(path) -> dict[tuple[str, int], int]:
    """An offset checkpoint file read as text: version line, count line, ``topic partition offset``."""
    lines = path.read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2
    return {(topic, int(partition)): int(offset) for topic, partition, offset in (line.split() for line in lines[2:])}


def next_offset_of(log_file) -> int:
    """The offset after the last batch of a .log file, from the raw v2 headers (baseOffset int64,
    batchLength int32, ..., lastOffsetDelta int32 at byte 23)."""
    data, position, end = log_file.read_bytes(), 0, int(log_file.name.split(".")[0])
    while position + 27 <= len(data):
        base, length = struct.unpack_from(">qi", data, position)
        end = base + struct.unpack_from(">i", data, position + 23)[0] + 1
        position += 12 + length
    return end


def rows(report):
    return {(c.group, c.topic, c.partition): report.committed_dict(c) for c in report.committed}


def test_corpus_log_dir_lag_against_the_checkpointed_high_watermark(corpus):
    data = corpus / "kafka-4.2.0" / "data"
    high_watermarks = checkpoint_text(data / "replication-offset-checkpoint")
    assert checkpoint_text(data / "log-start-offset-checkpoint") == {}
    report = read_committed_offsets(data)
    found = rows(report)
    assert {key[:2] for key in found} == {("corpus-group", "plain"), ("corpus-txn-group", "plain")}
    present = [key for key in found if (data / f"plain-{key[2]}").is_dir()]
    assert len(present) == 3  # plain-0 (twice) and plain-1
    for key in present:
        row, directory = found[key], data / f"plain-{key[2]}"
        segments = sorted(directory.glob("*.log"))
        log_end = next_offset_of(segments[-1])
        # a clean shutdown leaves a producer snapshot named after the log end offset
        assert log_end == max(int(p.name.split(".")[0]) for p in directory.glob("*.snapshot"))
        hw = high_watermarks[("plain", key[2])]
        assert (row["logStartOffset"], row["logEndOffset"], row["highWatermark"]) == (
            int(segments[0].name.split(".")[0]), log_end, hw)
        assert row["lag"] == hw - row["offset"] > 0 and row["lagBasis"] == "highWatermark"
        assert (row["logEndSource"], row["flags"], row["notes"]) == (FROM_SEGMENTS, [], [])
    # plain-2 is in the checkpoint but its directory is not in this log dir: nothing computed
    absent = found[("corpus-group", "plain", 2)]
    assert not (data / "plain-2").exists() and ("plain", 2) in high_watermarks
    assert (absent["logStartOffset"], absent["logEndOffset"], absent["highWatermark"], absent["lag"],
            absent["logEndSource"], absent["flags"]) == (None, None, None, None, NOT_HERE, [])
    assert f"lists plain-2 at {high_watermarks[('plain', 2)]}" in absent["notes"][0]
    assert report.flagged_groups == []


def write_partition(directory, batches, config=SegmentConfig()):
    writer = PartitionWriter(directory, config)
    for data in batches:
        writer.append(data)
    writer.close()


def commits(directory, *entries):
    write_partition(directory, [batch(n, offset_commit_key(group, topic, partition),
                                      offset_commit_value(offset, "", 1_700_000_000_000))
                                for n, (group, topic, partition, offset) in enumerate(entries)])


def test_retention_deleted_segments_past_a_commit(tmp_path):
    data = tmp_path / "data"
    (data / "meta.properties").parent.mkdir()
    (data / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    write_partition(data / "events-0", [batch(n, b"k%d" % n, b"v" * 30, timestamp=1_700_000_000_000 + n)
                                        for n in range(40)], SegmentConfig(segment_bytes=400))
    commits(data / "__consumer_offsets-0", ("slow", "events", 0, 3), ("fast", "events", 0, 38),
            ("done", "events", 0, 40))
    (data / "replication-offset-checkpoint").write_text("0\n1\nevents 0 40\n")
    before = rows(read_committed_offsets(data))
    assert all(row["flags"] == [] and row["logStartOffset"] == 0 for row in before.values())
    # retention by size, as the broker's cleaner thread deletes (and checkpoints the new log start)
    applied = run_seglog("simulate-retention", "--config", "retention.bytes=1000", "--config", "retention.ms=-1",
                         "--apply", str(data / "events-0"))
    assert applied.exit_code == 0, applied.out + applied.err
    first_kept = min(int(p.name.split(".")[0]) for p in (data / "events-0").glob("*.log"))
    assert first_kept > 3 and checkpoint_text(data / "log-start-offset-checkpoint") == {("events", 0): first_kept}
    report = read_committed_offsets(data)
    after = rows(report)
    slow = after[("slow", "events", 0)]
    assert (slow["logStartOffset"], slow["logEndOffset"], slow["highWatermark"]) == (first_kept, 40, 40)
    assert slow["lag"] == 40 - 3 and slow["flags"] == [BELOW_LOG_START]
    assert f"committed offset 3 is below the log start offset {first_kept}" in slow["notes"][0]
    assert f"the {first_kept - 3} offset(s) between were deleted" in slow["notes"][0]
    assert (after[("fast", "events", 0)]["lag"], after[("fast", "events", 0)]["flags"]) == (2, [])
    assert (after[("done", "events", 0)]["lag"], after[("done", "events", 0)]["flags"]) == (0, [])
    assert report.flagged_groups == ["slow"]
    result = run_seglog("offsets", str(data), "--format", "text")
    assert result.exit_code == 1 and "BELOW-START" in result.out
    assert "flagged slow events-0: COMMITTED_BELOW_LOG_START" in result.out
    assert run_seglog("offsets", str(data), "--group", "fast").exit_code == 0


def test_log_start_checkpoint_above_the_first_segment(tmp_path):
    """DeleteRecords moves the log start offset inside a segment: the checkpoint decides."""
    write_partition(tmp_path / "events-0", [batch(n, b"k", b"v") for n in range(10)])
    commits(tmp_path / "__consumer_offsets-0", ("g", "events", 0, 4), ("h", "events", 0, 6))
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\nevents 0 6\n")
    found = rows(read_committed_offsets(tmp_path))
    assert found[("g", "events", 0)]["flags"] == [BELOW_LOG_START]
    assert found[("g", "events", 0)]["logStartOffset"] == 6
    assert (found[("h", "events", 0)]["flags"], found[("h", "events", 0)]["lag"]) == ([], 4)
    # no replication-offset-checkpoint entry: lag against the log end offset, said so
    assert found[("h", "events", 0)]["lagBasis"] == "logEndOffset" and found[("h", "events", 0)]["highWatermark"] is None


def test_committed_beyond_the_log_end_and_a_partition_elsewhere(tmp_path):
    write_partition(tmp_path / "orders-0", [batch(n, b"k", b"v") for n in range(10)])
    commits(tmp_path / "__consumer_offsets-7", ("ahead", "orders", 0, 25), ("ok", "orders", 0, 10),
            ("ok", "orders", 3, 5))
    # a high watermark past the data (the files are older than the checkpoint): clamped as Kafka loads it
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\norders 0 30\n")
    report = read_committed_offsets(tmp_path)
    found = rows(report)
    ahead = found[("ahead", "orders", 0)]
    assert (ahead["logEndOffset"], ahead["highWatermark"], ahead["lag"], ahead["flags"]) == (10, 10, -15, [BEYOND_LOG_END])
    assert "committed offset 25 is beyond the log end offset 10" in ahead["notes"][0]
    assert (found[("ok", "orders", 0)]["lag"], found[("ok", "orders", 0)]["flags"]) == (0, [])
    elsewhere = found[("ok", "orders", 3)]
    assert (elsewhere["logEndOffset"], elsewhere["lag"], elsewhere["logEndSource"], elsewhere["notes"]) == (
        None, None, NOT_HERE, [])
    assert report.flagged_groups == ["ahead"]
    ends = PartitionEnds([tmp_path / "orders-0"])
    assert ends.end("orders", 0).high_watermark_source == "replication-offset-checkpoint, clamped from 30"


def test_a_partition_with_no_segment_starts_at_its_checkpointed_log_start(tmp_path):
    (tmp_path / "orders-0").mkdir()
    (tmp_path / "orders-0" / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\norders 0 120\n")
    end = PartitionEnds([tmp_path / "orders-0"]).end("orders", 0)
    assert (end.log_start_offset, end.log_end_offset, end.end_source) == (120, 120, NO_SEGMENTS)


def test_replicas_after_an_unclean_election(corpus, tmp_path):
    """Three brokers' log dirs of one partition (corpus replicas/unclean-election): the replica with
    the highest high watermark counts (broker 1's longer tail was never committed: its checkpoint
    says 3900); a group that had read into that lost tail is beyond the log end."""
    case = corpus / "kafka-4.2.0" / "replicas" / "unclean-election"
    facts = json.loads((case / "case.json").read_text())["replicas"]
    tree = tmp_path / "brokers"
    for broker in ("broker-1", "broker-2", "broker-3"):
        shutil.copytree(case / broker, tree / broker)
    commits(tree / "broker-2" / "__consumer_offsets-0", ("kept-up", "events", 0, 3500),
            ("read-lost-tail", "events", 0, 4700))
    found = rows(read_committed_offsets(tree))
    hw = facts["broker-2"]["checkpoint_files"]["replication-offset-checkpoint"]["events-0"]
    leo = facts["broker-2"]["log_end_offset"]
    assert facts["broker-1"]["log_end_offset"] > 4700 > leo == hw  # the tail only broker 1 had
    kept, lost = found[("kept-up", "events", 0)], found[("read-lost-tail", "events", 0)]
    assert kept["partitionDir"] in (str(tree / "broker-2" / "events-0"), str(tree / "broker-3" / "events-0"))
    assert (kept["logEndOffset"], kept["highWatermark"], kept["lag"], kept["flags"]) == (leo, hw, hw - 3500, [])
    assert (lost["lag"], lost["flags"]) == (hw - 4700, [BEYOND_LOG_END])
    # broker 1 alone: its longer log, but the high watermark it had checkpointed
    alone = PartitionEnds([tree / "broker-1" / "events-0"]).end("events", 0)
    assert (alone.log_end_offset, alone.high_watermark) == (
        facts["broker-1"]["log_end_offset"], facts["broker-1"]["checkpoint_files"]["replication-offset-checkpoint"]["events-0"])


def test_tiered_topic_log_start_in_remote_storage(corpus, tmp_path):
    """corpus tiered/: local segments start at 2080, log-start-offset-checkpoint says 0 (the broker
    writes an entry below the first local segment only for a remote-storage log): a commit
    between the two is readable from remote storage, not flagged."""
    source = corpus / "kafka-4.2.0" / "tiered" / "data"
    data = tmp_path / "data"
    shutil.copytree(source / "tiered-0", data / "tiered-0")
    for name in ("log-start-offset-checkpoint", "replication-offset-checkpoint", "meta.properties"):
        shutil.copy2(source / name, data / name)
    start = checkpoint_text(data / "log-start-offset-checkpoint")[("tiered", 0)]
    hw = checkpoint_text(data / "replication-offset-checkpoint")[("tiered", 0)]
    segments = sorted((data / "tiered-0").glob("*.log"))
    first_local = int(segments[0].name.split(".")[0])
    assert start < 500 < first_local
    commits(data / "__consumer_offsets-0", ("remote-reader", "tiered", 0, 500))
    [row] = rows(read_committed_offsets(data)).values()
    assert (row["logStartOffset"], row["logEndOffset"], row["highWatermark"]) == (start, next_offset_of(segments[-1]), hw)
    assert (row["lag"], row["flags"]) == (hw - 500, [])
    assert f"offsets {start} to {first_local - 1} are in remote storage" in row["notes"][0]
