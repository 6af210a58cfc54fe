"""recover --mode kafka against what the real broker did at start-up (recovery cases a, c, c2).

The broker's ``after/`` is the partition after it loaded (and later shut down cleanly): the
same files, the same ``.log``, ``.index``, ``.timeindex`` and ``.snapshot`` bytes. The only
difference allowed is the leader-epoch-checkpoint entry the broker added when it was elected
leader (an epoch starting at the log end offset): that is leadership, not recovery.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seglog_cli.storage.log.checkpoints import TopicPartition, read_offset_checkpoint
from seglog_cli.storage.recovery.recover import apply_recover, plan_recover
from seglog_cli.storage.write.manifest import read_manifest
from seglog_cli.storage.write.undo import undo
from seglog_cli.storage.write.write_session import WriteSession
from seglog_cli.storage.verify.verify import verify

CASES = ["a-append-garbage-active-log", "c-delete-oldest-index", "c2-delete-active-index"]


def _copy(corpus, case: str, target: Path) -> Path:
    shutil.copytree(corpus / "kafka-4.2.0" / "recovery-cases" / case / "before", target)
    for root, dirs, files in os.walk(target):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    return target


def _tree(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def _assert_like_the_broker(corpus, case: str, partition: Path) -> None:
    after = corpus / "kafka-4.2.0" / "recovery-cases" / case / "after" / "plain-0"
    mine, theirs = _tree(partition), _tree(after)
    assert sorted(mine) == sorted(theirs)
    for name in mine:
        if name == "leader-epoch-checkpoint":
            lines = theirs[name].decode().splitlines()
            elected = f"{int(lines[1]) - 1}"
            assert mine[name].decode().splitlines() == [lines[0], elected] + lines[2:-1], "leader epochs"
            assert lines[-1].endswith(" 8929")  # the broker's election at the log end offset
        else:
            assert mine[name] == theirs[name], name


@pytest.mark.parametrize("case", CASES)
def test_kafka_mode_does_what_the_broker_did(corpus, tmp_path, case):
    data = _copy(corpus, case, tmp_path / "data")
    before = _tree(data / "plain-0")
    plan = plan_recover([data / "plain-0"])
    assert plan.partitions[0].recovered_segments[-2:] == [6225, 8203]  # from the recovery point 6729 on
    result = apply_recover(plan, backup_root=tmp_path / "backups")
    _assert_like_the_broker(corpus, case, data / "plain-0")
    assert read_offset_checkpoint(data / "recovery-point-offset-checkpoint")[TopicPartition("plain", 0)] == 8929
    assert [f for f in verify([str(data / "plain-0")]).all_findings() if f.severity.value != "info"] == []
    assert plan_recover([data / "plain-0"]).steps == []  # a second run has nothing to do
    undo(result.backup_dir)
    assert _tree(data / "plain-0") == before


def test_the_garbage_is_kept_in_the_backup(corpus, tmp_path):
    data = _copy(corpus, CASES[0], tmp_path / "data")
    original = (data / "plain-0" / "00000000000000008203.log").read_bytes()
    plan = plan_recover([data / "plain-0"])
    (truncate,) = [s for s in plan.steps if s.op == "truncate"]
    assert truncate.size == 399586 and plan.partitions[0].bytes_truncated == 100
    result = apply_recover(plan, backup_root=tmp_path / "backups")
    (kept,) = (result.backup_dir / "files").glob("*00000000000000008203.log.tail")  # the bytes cut off
    assert (data / "plain-0" / "00000000000000008203.log").read_bytes() + kept.read_bytes() == original


def test_damage_in_an_older_segment_drops_every_later_one(corpus, tmp_path):
    """A CRC failure in segment 6225 (above the recovery point's floor): Kafka truncates there
    and deletes segment 8203 whole; the plan names the offsets lost."""
    data = _copy(corpus, CASES[0], tmp_path / "data")
    log = data / "plain-0" / "00000000000000006225.log"
    raw = bytearray(log.read_bytes())
    raw[200000] ^= 0xFF
    log.write_bytes(bytes(raw))
    plan = plan_recover([data / "plain-0"])
    partition = plan.partitions[0]
    removed = {s.path.name for s in plan.steps if s.op == "remove"}
    assert {"00000000000000008203.log", "00000000000000008203.index", "00000000000000008203.timeindex"} <= removed
    assert partition.offsets_lost[-1] == (8203, 8928)
    assert partition.log_end_offset < 8203
    result = apply_recover(plan, backup_root=tmp_path / "backups")
    assert not (data / "plain-0" / "00000000000000008203.log").exists()
    changes = {Path(c["path"]).name: c for c in read_manifest(result.backup_dir)["steps"]}
    assert changes["00000000000000008203.log"]["offsets"] == [8203, 8928]  # what the removed bytes held
    assert changes["00000000000000008203.log"]["op"] == "remove" and changes["00000000000000008203.log"]["before"]["sha256"]
    assert changes["00000000000000006225.log"]["op"] == "truncate"
    assert changes["00000000000000006225.log"]["offsets"][0] == 6607
    assert [f for f in verify([str(data / "plain-0")]).all_findings() if f.severity.value not in ("info",)] == []


APPLY = textwrap.dedent("""
    import sys
    from pathlib import Path
    from seglog_cli.storage.recovery.recover import apply_recover, plan_recover
    apply_recover(plan_recover([Path(sys.argv[1])]), backup_root=sys.argv[2])
""")


def test_a_kill_at_any_step_is_finished_by_running_again(corpus, tmp_path):
    step = 1
    while True:
        data = _copy(corpus, CASES[1], tmp_path / f"run{step}" / "data")
        done = subprocess.run([sys.executable, "-c", APPLY, str(data / "plain-0"), str(tmp_path / f"run{step}" / "b")],
                              env=dict(os.environ, SEGLOG_FAULT_AT=str(step)), capture_output=True, text=True)
        assert done.returncode in (0, 137), done.stderr
        with WriteSession([data], "recover", tmp_path / f"run{step}" / "again") as session:  # rolls the kill back
            apply_recover(plan_recover([data / "plain-0"]), session=session)
        assert plan_recover([data / "plain-0"]).steps == []
        mine = {n: b for n, b in _tree(data / "plain-0").items() if not n.endswith(".tmp")}
        theirs = _tree(corpus / "kafka-4.2.0" / "recovery-cases" / CASES[1] / "after" / "plain-0")
        # every .log and index as the broker left them; the broker's snapshots there (a run
        # interrupted after the missing index was written recovers less, as Kafka would, and may
        # keep one more valid snapshot)
        for name, data_bytes in theirs.items():
            if name != "leader-epoch-checkpoint":
                assert mine.get(name) == data_bytes, (step, name)
        assert set(mine) - set(theirs) <= {"00000000000000004138.snapshot"}, step
        assert [f for f in verify([str(data / "plain-0")]).all_findings() if f.severity.value != "info"] == []
        if done.returncode == 0:
            break
        step += 1
    assert step > 10


def _damage_6225(data: Path) -> None:
    log = data / "plain-0" / "00000000000000006225.log"
    raw = bytearray(log.read_bytes())
    raw[200000] ^= 0xFF  # inside the batch holding offsets 6607..6633
    log.write_bytes(bytes(raw))


def _records(partition: Path) -> list[int]:
    from seglog_cli.storage.log.partition_log import PartitionLog
    from seglog_cli.storage.log.records import read_records

    offsets = []
    for segment in PartitionLog(partition).segments:
        for batch in segment.batches():
            assert batch.is_valid
            offsets.extend(r.offset for r in read_records(segment.log.buffer, batch, str(segment.log_path)))
        segment.close()
    return offsets


def test_salvage_keeps_everything_kafka_drops(corpus, tmp_path):
    results = {}
    for mode in ("kafka", "salvage"):
        data = _copy(corpus, CASES[0], tmp_path / mode / "data")
        _damage_6225(data)
        before = _tree(data / "plain-0")
        plan = plan_recover([data / "plain-0"], mode=mode)
        result = apply_recover(plan, backup_root=tmp_path / mode / "backups")
        assert [f for f in verify([str(data / "plain-0")]).all_findings() if f.severity.value != "info"] == []
        results[mode] = (plan.partitions[0], _records(data / "plain-0"))
        undo(result.backup_dir)
        assert _tree(data / "plain-0") == before
    kafka, salvage = results["kafka"], results["salvage"]
    assert kafka[0].offsets_lost == [(6607, 8202), (8203, 8928)] and len(kafka[1]) == 6607
    assert salvage[0].offsets_lost == [(6607, 6633)] and salvage[0].log_end_offset == 8929
    assert set(kafka[1]) < set(salvage[1]) and len(salvage[1]) == 8929 - 27


def _set_log_start(data: Path, offset: int) -> None:
    (data / "log-start-offset-checkpoint").write_text(f"0\n1\nplain 0 {offset}\n")


def test_a_log_ending_below_its_start_offset_is_replaced_by_an_empty_segment(corpus, tmp_path):
    """``deleteSegmentsIfLogStartGreaterThanLogEnd``: every segment, snapshot and leader epoch
    goes and an empty active segment starts at the log start offset; salvage keeps the
    segments and lowers the checkpoint instead."""
    data = _copy(corpus, CASES[1], tmp_path / "data")
    _set_log_start(data, 20000)
    before = _tree(data / "plain-0")
    plan = plan_recover([data / "plain-0"])
    partition = plan.partitions[0]
    assert (partition.log_start_offset, partition.log_end_offset) == (20000, 20000)
    assert partition.offsets_lost[-5:] == [(0, 2070), (2071, 4137), (4138, 6224), (6225, 8202), (8203, 8928)]
    result = apply_recover(plan, backup_root=tmp_path / "backups")
    left = sorted(p.name for p in (data / "plain-0").iterdir())
    assert left == ["00000000000000020000.index", "00000000000000020000.log", "00000000000000020000.timeindex",
                    "leader-epoch-checkpoint", "partition.metadata"]
    assert (data / "plain-0" / "leader-epoch-checkpoint").read_text() == "0\n0\n"
    assert read_offset_checkpoint(data / "recovery-point-offset-checkpoint")[TopicPartition("plain", 0)] == 20000
    assert [f for f in verify([str(data / "plain-0")]).all_findings() if f.severity.value == "error"] == []
    assert plan_recover([data / "plain-0"]).steps == []
    undo(result.backup_dir)
    assert _tree(data / "plain-0") == before

    salvage = plan_recover([data / "plain-0"], mode="salvage")
    assert not [s for s in salvage.steps if s.op == "remove" and s.path.suffix == ".log"]
    (lowered,) = [s for s in salvage.steps if s.path.name == "log-start-offset-checkpoint"]
    assert lowered.data == b"0\n1\nplain 0 0\n"
    assert salvage.partitions[0].log_end_offset == 8929


def test_a_partition_without_segments_gets_an_empty_one_at_its_log_start(tmp_path):
    data = tmp_path / "data"
    (data / "t-0").mkdir(parents=True)
    (data / "t-0" / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    (data / "log-start-offset-checkpoint").write_text("0\n1\nt 0 42\n")
    plan = plan_recover([data / "t-0"])
    created = sorted(s.path.name for s in plan.steps if s.op == "replace" and s.data == b"")
    assert created == ["00000000000000000042.index", "00000000000000000042.log", "00000000000000000042.timeindex"]
    assert (plan.partitions[0].log_start_offset, plan.partitions[0].log_end_offset) == (42, 42)
    apply_recover(plan, backup_root=tmp_path / "backups")
    assert (data / "t-0" / "00000000000000000042.log").stat().st_size == 0
    assert plan_recover([data / "t-0"]).partitions[0].steps == []


@pytest.mark.parametrize("mode", ["kafka", "salvage"])
def test_a_torn_last_batch_names_the_offsets_its_header_claims(corpus, tmp_path, mode):
    """A power loss in the middle of the last write: the batch's header survives, its end does
    not. Its offsets were perhaps acknowledged (acks=1): the plan names them as lost."""
    from seglog_cli.storage.log.batches import LogScan
    from seglog_cli.storage.log.files import MappedFile

    data = _copy(corpus, CASES[1], tmp_path / "data")
    log = data / "plain-0" / "00000000000000008203.log"
    with MappedFile(log) as mapped:
        last = list(LogScan(mapped))[-1]
    log.write_bytes(log.read_bytes()[: last.position + 70])  # header and a little of the records
    plan = plan_recover([data / "plain-0"], mode=mode)
    assert plan.partitions[0].offsets_lost == [(last.base_offset, last.last_offset)]
    assert plan.partitions[0].log_end_offset == last.base_offset


def test_garbage_after_the_last_batch_loses_no_offsets(corpus, tmp_path):
    data = _copy(corpus, CASES[0], tmp_path / "data")  # 100 random bytes appended
    assert plan_recover([data / "plain-0"]).partitions[0].offsets_lost == []


def test_salvage_cuts_damage_out_where_kafka_does_not_look(corpus, tmp_path):
    """After a clean shutdown Kafka recovers nothing, so a damaged batch in an old segment stays
    (and fails every fetch of it). --mode salvage walks every segment and cuts the damage out of
    the damaged one only; --mode kafka plans nothing for it."""
    data = tmp_path / "data"
    data.mkdir()
    source = corpus / "kafka-4.2.0" / "data"
    for name in (".kafka_cleanshutdown", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                 "replication-offset-checkpoint"):
        shutil.copyfile(source / name, data / name)
    shutil.copytree(source / "plain-0", data / "plain-0")
    log = data / "plain-0" / "00000000000000000000.log"
    raw = bytearray(log.read_bytes())
    raw[500000] ^= 0xFF
    log.write_bytes(bytes(raw))
    before = _tree(data / "plain-0")
    assert [s for s in plan_recover([data / "plain-0"]).steps if s.path.suffix == ".log"] == []
    plan = plan_recover([data / "plain-0"], mode="salvage")
    partition = plan.partitions[0]
    assert partition.recovered_segments == [0]
    (cut,) = [s for s in plan.steps if s.path.name == "00000000000000000000.log"]
    assert cut.op == "replace" and cut.data is None and cut.new_size < len(raw)
    assert {s.path.name for s in plan.steps} >= {"00000000000000000000.log", "00000000000000000000.index",
                                                 "00000000000000000000.timeindex"}
    assert not [s for s in plan.steps if s.path.name.startswith("00000000000000002071")]  # undamaged: untouched
    (lost,) = partition.offsets_lost
    result = apply_recover(plan, backup_root=tmp_path / "backups")
    assert [f for f in verify([str(data / "plain-0")]).all_findings() if f.severity.value == "error"] == []
    offsets = _records(data / "plain-0")
    assert set(range(lost[0], lost[1] + 1)).isdisjoint(offsets)
    assert len(offsets) == partition.log_end_offset - (lost[1] - lost[0] + 1)
    undo(result.backup_dir)
    assert _tree(data / "plain-0") == before


def _overflowed_partition(root: Path, segment: bytes) -> Path:
    directory = root / "data" / "old-0"
    directory.mkdir(parents=True)
    (directory / "00000000000000000000.log").write_bytes(segment)
    return directory


def test_an_overflowed_segment_is_split_as_kafka_splits_it(tmp_path):
    """KAFKA-6264: offsets past base + 2^31 - 1 in one segment. Kafka splits it at the batches
    whose offsets no longer fit, names each piece by its first batch, and recovers the pieces
    on its second load; nothing is lost, and a second run plans nothing."""
    from seglog_cli.storage.write.builder import NewRecord, build_batch

    high = 2**31 + 5
    batches = [build_batch([NewRecord(b"k%d" % i, b"v" * 200, timestamp=1_700_000_000_000 + i)], base_offset=i)
               for i in range(40)]
    batches += [build_batch([NewRecord(b"h%d" % i, b"w" * 200, timestamp=1_700_000_100_000 + i)], base_offset=high + i)
                for i in range(30)]
    directory = _overflowed_partition(tmp_path, b"".join(batches))
    before = _tree(directory)
    plan = plan_recover([directory])
    partition = plan.partitions[0]
    assert partition.refused is None and partition.offsets_lost == [] and partition.bytes_truncated == 0
    assert partition.recovered_segments == [0, high]
    assert partition.log_end_offset == high + 30
    result = apply_recover(plan, backup_root=tmp_path / "backups")
    names = sorted(p.name for p in directory.iterdir() if not p.name.endswith(".snapshot"))
    assert names == [f"{base:020d}{suffix}" for base in (0, high) for suffix in (".index", ".log", ".timeindex")]
    assert (directory / "00000000000000000000.log").read_bytes() == b"".join(batches[:40])
    assert (directory / f"{high:020d}.log").read_bytes() == b"".join(batches[40:])
    assert [f for f in verify([str(directory)]).all_findings() if f.severity.value == "error"] == []
    assert _records(directory) == list(range(40)) + list(range(high, high + 30))
    assert plan_recover([directory]).partitions[0].steps == []
    undo(result.backup_dir)
    assert _tree(directory) == before


def test_a_legacy_piece_is_named_by_its_first_inner_message(tmp_path):
    """A compressed v1 wrapper carries its last inner offset; the piece it starts is named by
    its first (``AbstractLegacyRecordBatch.baseOffset``), and a clean shutdown keeps the split's
    own indexes (one entry per appended chunk) because no second recovery runs."""
    from seglog_cli.storage.write.builder import NewRecord, build_legacy_entry, build_legacy_wrapper

    first = 2**31 + 10
    segment = b"".join(build_legacy_entry(i, b"k", b"v" * 100, timestamp=1_600_000_000_000 + i) for i in range(5))
    segment += build_legacy_wrapper([NewRecord(b"k", b"x" * 100, timestamp=1_600_000_001_000 + i) for i in range(3)],
                                    last_offset=first + 2)
    directory = _overflowed_partition(tmp_path, segment)  # no .index: recovered despite the clean shutdown
    (tmp_path / "data" / ".kafka_cleanshutdown").write_text("")
    plan = plan_recover([directory])
    partition = plan.partitions[0]
    assert partition.refused is None
    created = {s.path.name: s.data for s in plan.steps if s.op == "replace"}
    assert f"{first:020d}.log" in created and f"{first + 2:020d}.log" not in created
    assert partition.recovered_segments == []  # clean shutdown: Kafka's second load recovers nothing
    assert partition.log_end_offset == first + 3
    # the split's own indexes: one append of the whole (small) chunk, so no offset entry, and the
    # final time index entry of onBecomeInactiveSegment (largest timestamp, its offset)
    assert created["00000000000000000000.index"] == b""
    assert created["00000000000000000000.timeindex"] == struct.pack(">qi", 1_600_000_000_004, 4)
    assert created[f"{first:020d}.timeindex"] == struct.pack(">qi", 1_600_000_001_002, 2)


def test_a_clean_log_dir_keeps_its_checkpoints(corpus):
    """The broker's own clean log dir: every recovery point is already its log end offset, and
    __cluster_metadata-0 (the Raft log, which LogManager never loads) is added to no checkpoint."""
    data = corpus / "kafka-4.2.0" / "data"
    partitions = sorted(p for p in data.iterdir() if p.is_dir())
    plan = plan_recover(partitions)
    assert plan.log_dir_steps.get(data.absolute(), []) == []
    assert "__cluster_metadata" not in (data / "recovery-point-offset-checkpoint").read_text()
