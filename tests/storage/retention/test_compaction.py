"""The cleaner simulation against the real cleaner: the broker's compacted partitions (its own
pre-clean segments survive as ``*.deleted``, so a real pass can be replayed and compared), a
further pass over what it kept, and logs written with seglog's append path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from seglog_cli.storage.write.append import apply_append, plan_append
from seglog_cli.storage.write.append_plan import AppendOptions, ProducerOptions
from seglog_cli.storage.write.builder import NewRecord
from seglog_cli.storage.retention.compaction import plan_compaction
from seglog_cli.storage.retention.retention import read_partition_state
from seglog_cli.storage.config.topic_config import TopicConfig

COMPACT = TopicConfig(cleanup_policy="compact")
DAY = 86_400_000
T = 1_700_000_000_000


def broker_batches(path: Path) -> list[tuple[int, int | None, list[tuple[int, bool]]]]:
    """(base offset, delete horizon, [(offset, is tombstone)]) per batch, read by kafka-python."""
    out = []
    records = MemoryRecords(path.read_bytes())
    while records.has_next():
        batch = records.next_batch()
        horizon = batch.first_timestamp if batch.attributes & 0x40 else None
        out.append((batch.base_offset, horizon, [(r.offset, r.value is None) for r in batch]))
    return out


def replay_dir(tmp_path: Path, partition: Path, deleted_bases: list[int], active: int) -> Path:
    """The partition as it was before the broker's last cleaning pass: the segments it renamed
    to .deleted, plus the active segment."""
    target = tmp_path / partition.name
    target.mkdir()
    for base in deleted_bases:
        for suffix in (".log", ".index", ".timeindex"):
            source = partition / f"{base:020d}{suffix}.deleted"
            if source.exists():
                shutil.copy(source, target / f"{base:020d}{suffix}")
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(partition / f"{active:020d}{suffix}", target / f"{active:020d}{suffix}")
    return target


# the broker's last pass: its time is the new delete horizon minus delete.retention.ms (1 day)
REPLAYS = [
    ("kafka-4.2.0/data/compacted-retain-0", [0, 2105], 2156, 2105, 1795433366772 - DAY),
    ("kafka-4.2.0/data-extra/compacted-rich-0", [0, 3300], 3600, 3300, 1795434914623 - DAY),
]


@pytest.mark.parametrize("name, deleted, active, checkpoint, now", REPLAYS, ids=[r[0] for r in REPLAYS])
def test_a_replayed_pass_equals_the_brokers_cleaned_segment(corpus, tmp_path, name, deleted, active, checkpoint, now):
    partition = corpus / name
    before = replay_dir(tmp_path, partition, deleted, active)
    plan = plan_compaction(before, COMPACT, now, high_watermark=active + 1, cleaner_checkpoint=checkpoint)
    assert plan.range.first_dirty_offset == checkpoint and plan.range.first_uncleanable_segment == active
    assert plan.end_offset == active  # the broker's cleaner-offset-checkpoint
    assert plan.groups == [deleted]  # cleaned into one segment named after the first
    cleaned = broker_batches(partition / f"{0:020d}.log")
    kept = [b for s in plan.segments if s.in_pass for b in s.batches if b.kept]
    assert [b.base_offset for b in kept] == [base for base, _, _ in cleaned]
    assert [(b.new_delete_horizon_ms or b.delete_horizon_ms) for b in kept] == [h for _, h, _ in cleaned]
    assert [[(r.offset, r.tombstone) for r in b.records if r.kept] for b in kept] == [rs for _, _, rs in cleaned]


@pytest.mark.parametrize("name", ["kafka-4.2.0/data/compacted-0", "kafka-4.2.0/data/compacted-retain-0",
                                  "kafka-4.2.0/data-extra/compacted-rich-0"])
def test_a_further_pass_removes_only_tombstones_past_their_horizon(corpus, name):
    partition = corpus / name
    batches = [b for log in sorted(partition.glob("*.log")) for b in broker_batches(log)]
    horizons = sorted({h for _, h, _ in batches if h is not None})
    everything = [offset for _, _, records in batches for offset, _ in records]
    for now in (horizons[0] - 1, horizons[0], horizons[-1] + 1):
        plan = plan_compaction(partition, COMPACT, now)
        assert not plan.range.would_clean  # the broker left nothing dirty
        expired = [offset for _, h, records in batches if h is not None and h <= now
                   for offset, tombstone in records if tombstone]
        assert plan.removed_offsets == expired
        assert plan.kept_offsets == [o for o in everything if o not in expired]
        assert {r.code for r in plan.records if not r.kept} <= {"TOMBSTONE_EXPIRED"}


def _append(directory: Path, batches, config=TopicConfig(segment_bytes=400), now=T + 10**6, **options):
    directory.parent.mkdir(parents=True, exist_ok=True)
    plan = plan_append(directory, batches, config, AppendOptions(now_ms=now, create=not directory.exists(),
                                                                 **options))
    apply_append(plan, backup_root=directory.parent.parent / "backups")


def test_appended_log_keeps_the_latest_record_per_key_and_its_tombstones(tmp_path):
    directory = tmp_path / "logs" / "c-0"
    writes = []  # (key, value) in offset order
    for i in range(60):
        key = f"k{i % 7}".encode()
        value = None if i % 11 == 5 else f"v{i}".encode()
        writes.append((key, value))
    _append(directory, [[NewRecord(key=k, value=v, timestamp=T + i)] for i, (k, v) in enumerate(writes)])
    plan = plan_compaction(directory, COMPACT, T + 2 * DAY, high_watermark=len(writes))
    active = plan.segments[-1].base_offset
    assert len(plan.segments) > 3 and plan.range.first_uncleanable_segment == active
    latest = {}
    for offset, (key, _) in enumerate(writes[:active]):
        latest[key] = offset
    in_pass = [r for s in plan.segments if s.in_pass for r in s.records]
    assert sorted(r.offset for r in in_pass if r.kept) == sorted(latest.values())
    tombstones = [o for o in latest.values() if writes[o][1] is None]
    assert tombstones and sorted(r.offset for r in in_pass if r.kept and r.tombstone) == tombstones
    # no horizon yet: the pass keeps the tombstone and stamps now + delete.retention.ms
    stamped = {b.new_delete_horizon_ms for s in plan.segments for b in s.batches if b.new_delete_horizon_ms}
    assert stamped == {T + 2 * DAY + DAY}
    assert all(r.kept and r.code == "NOT_IN_PASS" for r in plan.segments[-1].records)
    assert plan.range.would_clean and plan.end_offset == active


def test_min_compaction_lag_and_dirty_ratio(tmp_path):
    directory = tmp_path / "logs" / "c-0"
    _append(directory, [[NewRecord(key=b"k", value=b"v" * 50, timestamp=T + 1000 * i)] for i in range(30)])
    lagged = plan_compaction(directory, TopicConfig(cleanup_policy="compact", min_compaction_lag_ms=10_000),
                             T + 20_000, high_watermark=30)
    assert lagged.range.uncleanable_because == "min.compaction.lag.ms"
    segments = read_partition_state(directory).segments
    assert lagged.range.first_uncleanable_segment == min(
        s.base_offset for s in segments[:-1] if s.largest_timestamp > T + 20_000 - 10_000)
    assert 0 < lagged.range.first_uncleanable_segment < segments[-1].base_offset
    assert [s.in_pass for s in lagged.segments] == [s.base_offset < lagged.end_offset for s in segments]
    checkpointed = plan_compaction(directory, COMPACT, T + DAY, high_watermark=30, cleaner_checkpoint=29)
    assert checkpointed.range.cleanable_bytes == 0 and not checkpointed.range.would_clean
    assert plan_compaction(directory, COMPACT, T + DAY, high_watermark=30,
                           cleaner_checkpoint=10**6).range.first_dirty_note.endswith("reset")


def test_aborted_data_goes_and_the_producers_last_batch_stays_empty(tmp_path):
    directory = tmp_path / "logs" / "x-0"
    config = TopicConfig(segment_bytes=300)
    _append(directory, [[NewRecord(key=b"a", value=b"1", timestamp=T)]], config, end_transaction="commit",
            producer=ProducerOptions(producer_id=1, producer_epoch=0, transactional=True))
    _append(directory, [[NewRecord(key=b"b", value=b"2", timestamp=T)]], config, end_transaction="abort",
            producer=ProducerOptions(producer_id=2, producer_epoch=0, transactional=True))
    _append(directory, [[NewRecord(key=b"c", value=b"x" * 60, timestamp=T + i)] for i in range(8)], config)
    plan = plan_compaction(directory, COMPACT, T + 1000, high_watermark=12)
    by_offset = {r.offset: r for r in plan.records}
    assert by_offset[2].code == "ABORTED_DATA" and not by_offset[2].kept
    assert by_offset[0].code == "LATEST" and by_offset[1].code == "MARKER" and by_offset[3].code == "MARKER"
    aborted = next(b for s in plan.segments for b in s.batches if b.base_offset == 2)
    assert aborted.retention == "RETAIN_EMPTY" and aborted.empty  # producer 2's last data batch
    expired = plan_compaction(directory, COMPACT, T + 2 * DAY, high_watermark=12)
    gone = next(b for s in expired.segments for b in s.batches if b.base_offset == 2)
    assert gone.retention == "DELETE" and not gone.kept  # producer expired: nothing left to keep


def test_broker_transactions_aborted_data_removed_markers_kept(corpus, tmp_path):
    """The broker's txn-0 (two producers, 35 COMMIT and 14 ABORT markers) made cleanable by rolling
    one more record after it: aborted data goes (by its .txnindex), markers stay while their
    transaction's data is still in the log, the rest keeps the latest record per key."""
    import struct

    directory = tmp_path / "logs" / "txn-0"
    shutil.copytree(corpus / "kafka-4.2.0" / "data" / "txn-0", directory)
    for path in directory.iterdir():
        path.chmod(0o644)
    # the broker stopped cleanly (seglog refuses to append to a log a broker would recover first)
    shutil.copyfile(corpus / "kafka-4.2.0" / "data" / ".kafka_cleanshutdown", directory.parent / ".kafka_cleanshutdown")
    _append(directory, [[NewRecord(key=b"roll", value=b"r", timestamp=1795346899000)]], TopicConfig(segment_bytes=1000),
            now=1795346899000)
    entries = (directory / f"{0:020d}.txnindex").read_bytes()
    aborted = [struct.unpack_from(">hqqqq", entries, i)[1:4] for i in range(0, len(entries), 34)]
    assert len(aborted) == 14
    batches = broker_batches(directory / f"{0:020d}.log")
    records = MemoryRecords((directory / f"{0:020d}.log").read_bytes())
    data, markers = [], []
    while records.has_next():
        batch = records.next_batch()
        for record in batch:
            if batch.is_control_batch:
                markers.append(record.offset)
            elif any(pid == batch.producer_id and first <= record.offset <= last for pid, first, last in aborted):
                data.append((record.offset, record.key, True))
            else:
                data.append((record.offset, record.key, False))
    assert len(markers) == 49 and len(batches) > 49
    plan = plan_compaction(directory, COMPACT, 1795346899000)
    assert plan.range.first_uncleanable_segment == 339 and plan.range.would_clean
    latest = {key: offset for offset, key, is_aborted in data if not is_aborted}
    verdicts = {r.offset: r for r in plan.records}
    assert sorted(o for o, _, is_aborted in data if is_aborted) == \
        sorted(o for o, r in verdicts.items() if r.code == "ABORTED_DATA")
    assert sorted(o for o, r in verdicts.items() if r.code == "LATEST") == sorted(latest.values())
    assert all(verdicts[o].kept and verdicts[o].code == "MARKER" for o in markers)
