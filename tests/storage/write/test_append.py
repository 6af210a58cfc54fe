"""The append engine: Kafka's leader path, checked against Kafka's rules, an independent client
(kafka-python), seglog's own verify and rebuild-index, and kills at every write step."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from seglog_cli.storage.write.append import apply_append, plan_append
from seglog_cli.storage.write.append_plan import AppendError, AppendOptions, ProducerOptions
from seglog_cli.storage.write.builder import NewRecord
from seglog_cli.storage.log.checkpoints import TopicPartition, read_leader_epoch_checkpoint, read_offset_checkpoint
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.write.rebuild_index import plan_rebuild
from seglog_cli.storage.log.snapshots import read_snapshot
from seglog_cli.storage.config.topic_config import TopicConfig
from seglog_cli.storage.verify.verify import verify

T = 1_700_000_000_000
STRIMZI = TopicConfig(segment_bytes=16384, index_interval_bytes=150, segment_index_bytes=300)


def _canary(n: int) -> list[list[NewRecord]]:
    """The Strimzi canary's records: one per produce request, 5 s apart, message ids 1, 4, 7, ..."""
    out = []
    for k in range(n):
        value = json.dumps({"producerId": "strimzi-canary-client", "messageId": 1 + 3 * k,
                            "timestamp": T + 5000 * k}, separators=(",", ":")).encode()
        out.append([NewRecord(value=value, timestamp=T + 5000 * k)])
    return out


def _apply(directory, batches, config=TopicConfig(), **options):
    Path(directory).parent.mkdir(parents=True, exist_ok=True)
    plan = plan_append(directory, batches, config, AppendOptions(now_ms=T, **options))
    apply_append(plan, backup_root=Path(directory).parent.parent / "backups")
    return plan


def _problems(directory) -> list[str]:
    return [str(f) for f in verify([str(directory)]).all_findings() if f.severity.value != "info"]


def _records(directory) -> list[tuple]:
    out = []
    for log in sorted(Path(directory).glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while records.has_next():
            batch = records.next_batch()
            assert batch.validate_crc()
            if batch.is_control_batch:
                continue
            for record in batch:
                out.append((record.offset, record.timestamp, record.key, record.value, list(record.headers)))
    return out


def test_strimzi_example_rolls_when_the_time_index_is_full(tmp_path):
    """segment.bytes=16384, index.interval.bytes=150, segment.index.bytes=300, ~150-byte batches:
    an index entry every second batch; the time index (25 slots) is full at 24 entries, so the
    first segment rolls at 7314 bytes with a 192-byte index and a 288-byte time index."""
    directory = tmp_path / "logs" / "__strimzi_canary-0"
    plan = _apply(directory, _canary(150), STRIMZI, create=True)
    assert plan.rolls[0] == (49, "the time index is full (24 entries of segment.index.bytes)")
    assert (directory / "00000000000000000000.log").stat().st_size == 7314
    assert (directory / "00000000000000000000.index").stat().st_size == 192
    assert (directory / "00000000000000000000.timeindex").stat().st_size == 288
    assert (directory / "00000000000000000049.snapshot").exists()
    assert _problems(directory) == []
    assert not plan_rebuild([str(directory)], STRIMZI).changes  # recovery would write the same indexes


def test_records_read_back_by_kafka_python_in_every_codec(tmp_path):
    batches = [[NewRecord(key=f"k{i}".encode() if i % 3 else None, value=None if i % 7 == 0 else b"v" * i,
                          headers=(("h", b"x"), ("empty", None)) if i % 2 else (), timestamp=T + i)
                for i in range(n * 10, n * 10 + 10)] for n in range(5)]
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        directory = tmp_path / codec / "logs" / "t-0"
        _apply(directory, batches, compression=codec, create=True)
        got = _records(directory)
        want = [(i, T + i, f"k{i}".encode() if i % 3 else None, None if i % 7 == 0 else b"v" * i,
                 [("h", b"x"), ("empty", None)] if i % 2 else []) for i in range(50)]
        assert got == want, codec
        assert _problems(directory) == [], codec


def test_appending_to_a_broker_written_partition(corpus, tmp_path):
    """plain-0 as Kafka 4.2 left it: the next offsets, the broker's leader epoch, the active
    segment reopened (no index entry for the first append after the restart), recovery point."""
    data = tmp_path / "data"
    shutil.copytree(corpus / "kafka-4.2.0" / "data", data)
    for root, dirs, files in os.walk(data):
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    directory = data / "plain-0"
    before_end = PartitionLog(directory).log_end_offset()
    epochs = read_leader_epoch_checkpoint(directory / "leader-epoch-checkpoint")
    plan = _apply(directory, [[NewRecord(value=b"x" * 3000, timestamp=T + i)] for i in range(20)])
    assert plan.log_end_offset_before == before_end and plan.log_end_offset_after == before_end + 20
    assert read_leader_epoch_checkpoint(directory / "leader-epoch-checkpoint") == epochs  # same leader epoch
    assert read_offset_checkpoint(data / "recovery-point-offset-checkpoint")[TopicPartition("plain", 0)] == before_end + 20
    assert _problems(directory) == []
    assert _records(directory)[-1][0] == before_end + 19
    assert (directory / f"{before_end + 20:020d}.snapshot").exists()
    assert (data / ".kafka_cleanshutdown").exists() == (corpus / "kafka-4.2.0" / "data" / ".kafka_cleanshutdown").exists()


def test_a_new_leader_epoch_is_checkpointed(tmp_path):
    directory = tmp_path / "logs" / "t-0"
    _apply(directory, [[NewRecord(value=b"a")]], create=True)
    _apply(directory, [[NewRecord(value=b"b")]], leader_epoch=3)
    assert [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(directory / "leader-epoch-checkpoint")] \
        == [(0, 0), (3, 1)]
    with pytest.raises(AppendError, match="older than the partition's latest"):
        plan_append(directory, [[NewRecord(value=b"c")]], TopicConfig(), AppendOptions(leader_epoch=2))


def test_plain_producer_base_sequence_is_stored_as_sent(tmp_path):
    """A non-idempotent batch (producer id -1) with a base sequence, as Sarama sends it (the Strimzi
    canary's first batch: size 148, crc 2142666254): the broker keeps it, checks no sequence and
    keeps no producer state; an epoch or a transaction still needs a producer id."""
    directory = tmp_path / "logs" / "canary-0"
    value = b'{"producerId":"strimzi-canary-client","messageId":1,"timestamp":1639132508991}'
    _apply(directory, [[NewRecord(value=value, timestamp=1639132508991)]], create=True, leader_epoch=0,
           producer=ProducerOptions(base_sequence=0))
    _apply(directory, [[NewRecord(value=b"x", timestamp=T), NewRecord(value=b"y", timestamp=T)]],
           producer=ProducerOptions(base_sequence=0))
    # (the second batch's timestamp, two years later, rolls a segment as segment.ms does)
    batches = [b for segment in PartitionLog(directory).segments for b in segment.batches()]
    assert [(b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence) for b in batches] == [
        (-1, -1, 0, 0), (-1, -1, 0, 1)]
    data = (directory / "00000000000000000000.log").read_bytes()
    assert (batches[0].size, int.from_bytes(data[17:21], "big")) == (148, 2142666254)
    assert all(not read_snapshot(path).entries for path in directory.glob("*.snapshot"))
    for producer in (ProducerOptions(base_sequence=0, producer_epoch=0), ProducerOptions(transactional=True)):
        with pytest.raises(AppendError, match="need --producer-id"):
            plan_append(directory, [[NewRecord(value=b"z")]], TopicConfig(), AppendOptions(producer=producer))
    assert _problems(directory) == []


def test_idempotent_sequences_continue_from_the_producer_state(tmp_path):
    directory = tmp_path / "logs" / "t-0"
    producer = ProducerOptions(producer_id=42, producer_epoch=0)
    _apply(directory, [[NewRecord(value=b"a"), NewRecord(value=b"b")], [NewRecord(value=b"c")]], create=True,
           producer=producer)
    _apply(directory, [[NewRecord(value=b"d")]], producer=ProducerOptions(producer_id=42))
    headers = [b for b in PartitionLog(directory).segments[0].batches()]
    assert [(b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence) for b in headers] == [
        (42, 0, 0, 1), (42, 0, 2, 2), (42, 0, 3, 3)]
    (entry,) = read_snapshot(directory / "00000000000000000004.snapshot").entries
    assert entry.batch_metadata.last_sequence == 3
    # the snapshot at 4 keeps the last batch only (3..3), as Kafka's does: only that one is known
    for base, message in ((7, "does not follow"), (3, "duplicate"), (2, "does not follow"), (0, "does not follow")):
        with pytest.raises(AppendError, match=message):
            plan_append(directory, [[NewRecord(value=b"e")]], TopicConfig(),
                        AppendOptions(producer=ProducerOptions(producer_id=42, base_sequence=base)))
    with pytest.raises(AppendError, match="a new epoch must start at 0"):
        plan_append(directory, [[NewRecord(value=b"e")]], TopicConfig(),
                    AppendOptions(producer=ProducerOptions(producer_id=42, producer_epoch=1, base_sequence=5)))
    _apply(directory, [[NewRecord(value=b"e")]], producer=ProducerOptions(producer_id=42, producer_epoch=1))
    with pytest.raises(AppendError, match="fences"):
        plan_append(directory, [[NewRecord(value=b"f")]], TopicConfig(),
                    AppendOptions(producer=ProducerOptions(producer_id=42, producer_epoch=0)))
    assert _problems(directory) == []


def test_an_aborted_transaction_is_indexed_with_kafkas_last_stable_offset(tmp_path):
    """Producer 1 opens a transaction at 0; producer 2 writes and aborts at 1..2: the abort's
    last stable offset is producer 1's open transaction (0); producer 1 then aborts too."""
    directory = tmp_path / "logs" / "t-0"
    _apply(directory, [[NewRecord(value=b"p1")]], create=True,
           producer=ProducerOptions(producer_id=1, producer_epoch=0, transactional=True))
    _apply(directory, [[NewRecord(value=b"p2")]], end_transaction="abort",
           producer=ProducerOptions(producer_id=2, producer_epoch=0, transactional=True))
    with pytest.raises(AppendError, match="open transaction"):
        plan_append(directory, [[NewRecord(value=b"x")]], TopicConfig(),
                    AppendOptions(producer=ProducerOptions(producer_id=1)))
    _apply(directory, [], end_transaction="abort", producer=ProducerOptions(producer_id=1))
    entries = (directory / "00000000000000000000.txnindex").read_bytes()
    assert [struct.unpack_from(">hqqqq", entries, i) for i in range(0, len(entries), 34)] == [
        (0, 2, 1, 2, 0), (0, 1, 0, 3, 4)]
    assert _problems(directory) == []
    assert not plan_rebuild([str(directory)]).changes


def test_segment_ms_rolls_on_record_time(tmp_path):
    directory = tmp_path / "logs" / "t-0"
    config = TopicConfig(segment_ms=60_000)
    plan = _apply(directory, [[NewRecord(value=b"x", timestamp=T + i * 25_000)] for i in range(6)], config, create=True)
    assert [base for base, _ in plan.rolls] == [3, 6][:len(plan.rolls)] and plan.rolls[0][1].startswith("segment.ms")


def test_segment_bytes_and_too_large_batches(tmp_path):
    directory = tmp_path / "logs" / "t-0"
    config = TopicConfig(segment_bytes=1000)
    plan = _apply(directory, [[NewRecord(value=b"x" * 300)] for _ in range(7)], config, create=True)
    assert all(reason.startswith("segment.bytes") for _, reason in plan.rolls) and len(plan.rolls) == 3
    assert all(p.stat().st_size <= 1000 for p in directory.glob("*.log"))
    with pytest.raises(AppendError, match="max.message.bytes"):
        plan_append(directory, [[NewRecord(value=b"x" * 2000)]], TopicConfig(max_message_bytes=1000), AppendOptions())


def test_a_torn_tail_is_refused(tmp_path):
    directory = tmp_path / "logs" / "t-0"
    _apply(directory, [[NewRecord(value=b"x" * 100)] for _ in range(3)], create=True)
    log = directory / "00000000000000000000.log"
    with open(log, "ab") as handle:
        handle.write(log.read_bytes()[:40])
    with pytest.raises(AppendError, match="seglog recover"):
        plan_append(directory, [[NewRecord(value=b"y")]], TopicConfig(), AppendOptions())


def test_log_append_time(tmp_path):
    directory = tmp_path / "logs" / "t-0"
    _apply(directory, [[NewRecord(value=b"x", timestamp=5)]], create=True, timestamp_type="LogAppendTime")
    (batch,) = PartitionLog(directory).segments[0].batches()
    assert batch.timestamp_type_name == "LogAppendTime" and batch.max_timestamp == T


APPLY = textwrap.dedent("""
    import sys
    from pathlib import Path
    from seglog_cli.storage.write.append import apply_append, plan_append
    from seglog_cli.storage.write.append_plan import AppendOptions, ProducerOptions
    from seglog_cli.storage.write.builder import NewRecord
    from seglog_cli.storage.config.topic_config import TopicConfig
    config = TopicConfig(segment_bytes=16384, index_interval_bytes=150, segment_index_bytes=300)
    batches = [[NewRecord(value=b"v" * 120, timestamp=1700000000000 + i)] for i in range(int(sys.argv[2]))]
    plan = plan_append(sys.argv[1], batches, config, AppendOptions(
        now_ms=1700000000000, end_transaction="abort",
        producer=ProducerOptions(producer_id=9, producer_epoch=0, transactional=True)))
    apply_append(plan, backup_root=sys.argv[3])
""")


def test_a_kill_at_any_write_step_leaves_a_clean_loadable_dir(corpus, tmp_path):
    """A transactional append that rolls twice, into a copy of a broker-written log dir with
    a clean-shutdown marker: kill it before each write step in turn. Every time verify finds
    nothing (infos aside: an index past the log end, a .tmp), and undo restores the original."""
    source = corpus / "kafka-4.2.0" / "data"
    step = 1
    while True:
        data = tmp_path / f"run{step}" / "data"
        shutil.copytree(source / "plain-1", data / "plain-1")
        for name in ("recovery-point-offset-checkpoint", "meta.properties"):
            shutil.copyfile(source / name, data / name)
        (data / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
        for root, dirs, files in os.walk(data):
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        original = {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()}
        backups = tmp_path / f"run{step}" / "backups"
        done = subprocess.run([sys.executable, "-c", APPLY, str(data / "plain-1"), "110", str(backups)],
                              env=dict(os.environ, SEGLOG_FAULT_AT=str(step)), capture_output=True, text=True)
        assert done.returncode in (0, 137), done.stderr
        assert _problems(data / "plain-1") == [], f"step {step}"
        if done.returncode == 0:
            assert (data / ".kafka_cleanshutdown").exists()
            break
        from seglog_cli.storage.write.undo import undo

        for manifest in backups.glob("*/manifest.json"):
            undo(manifest.parent)
        now = {p.relative_to(data): p.read_bytes() for p in data.rglob("*")
               if p.is_file() and not p.name.endswith(".tmp") and p.name != ".lock"}  # Kafka creates .lock too
        assert now == original, f"step {step}"
        step += 1
    assert step > 15


def test_an_empty_active_segment_is_appended_to(tmp_path):
    """A broker that rolled just before it stopped leaves an empty active .log (and perhaps no
    index files yet): the append goes into it."""
    directory = tmp_path / "logs" / "t-0"
    _apply(directory, [[NewRecord(value=b"a")], [NewRecord(value=b"b")]], create=True)
    (directory / "00000000000000000002.log").touch()
    plan = _apply(directory, [[NewRecord(value=b"c")]])
    assert plan.batches[0].segment == 2 and not plan.rolls
    assert (directory / "00000000000000000002.log").stat().st_size > 0
    assert (directory / "00000000000000000002.index").exists()
    assert _problems(directory) == []


def test_kafka_dump_log_lines_say_valid(tmp_path):
    """seglog dump prints kafka-dump-log's lines byte for byte (the golden tests): every batch
    seglog appended, in every codec and shape, is 'isvalid: true' there."""
    from tests.conftest import run_seglog

    directory = tmp_path / "logs" / "t-0"
    for n, codec in enumerate(("none", "gzip", "snappy", "lz4", "zstd")):
        _apply(directory, [[NewRecord(key=b"k", value=b"v" * 50, headers=(("h", b"1"),))] * 4] * 3,
               compression=codec, create=n == 0,
               producer=ProducerOptions(producer_id=5, producer_epoch=0, transactional=n == 4),
               end_transaction="commit" if n == 4 else None)
    result = run_seglog("dump", "--deep-iteration", str(directory))
    assert result.exit_code == 0, result.err
    batch_lines = [line for line in result.out.splitlines() if line.startswith("baseOffset:")]
    assert len(batch_lines) == 16 and all(line.endswith("isvalid: true") for line in batch_lines)
    assert "isControl: true" in batch_lines[-1]


def test_timestamps_out_of_kafkas_range_are_refused(tmp_path):
    """message.timestamp.after.max.ms is 1 hour by default since Kafka 4.0 (KIP-1030)."""
    directory = tmp_path / "logs" / "t-0"
    directory.parent.mkdir(parents=True)
    with pytest.raises(AppendError, match=r"Timestamp .* of message with offset 1 is out of range"):
        plan_append(directory, [[NewRecord(value=b"a", timestamp=T), NewRecord(value=b"b", timestamp=T + 3_600_001)]],
                    TopicConfig(), AppendOptions(now_ms=T, create=True))
    plan_append(directory, [[NewRecord(value=b"a", timestamp=T + 3_600_000)]], TopicConfig(),
                AppendOptions(now_ms=T, create=True))
    with pytest.raises(AppendError, match="out of range"):
        plan_append(directory, [[NewRecord(value=b"a", timestamp=T - 2000)]],
                    TopicConfig(message_timestamp_before_max_ms=1000), AppendOptions(now_ms=T, create=True))
    plan_append(directory, [[NewRecord(value=b"a", timestamp=0)]], TopicConfig(),
                AppendOptions(now_ms=T, create=True, timestamp_type="LogAppendTime"))  # the broker's clock decides


def test_an_index_cut_inside_its_last_entry_is_read_to_its_last_whole_entry(tmp_path):
    """Kafka counts an index's entries as its length // the entry size: a last entry cut short
    is not an entry (and the zeros of a whole last entry are kept)."""
    from seglog_cli.storage.write.active_segment import _entries_of

    whole = (5).to_bytes(4, "big") + (4096).to_bytes(4, "big") + (16).to_bytes(4, "big") + (0).to_bytes(4, "big")
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(whole + b"\x00\x00\x00\x09\x00\x00")  # a third entry cut after 6 bytes
    assert _entries_of(index, 8) == whole
    index.write_bytes(whole + b"\x00" * 64)  # preallocated: the zero tail goes, the last entry's zeros stay
    assert _entries_of(index, 8) == whole
