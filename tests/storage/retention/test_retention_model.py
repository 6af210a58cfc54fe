"""The what-if model: the published Strimzi numbers, the index-full roll, a batch-by-batch replay
of ``LogSegment.append``/``shouldRoll`` as an oracle, and the append engine's real rolls."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_cli.storage.write.append import apply_append, plan_append
from seglog_cli.storage.write.append_plan import AppendOptions
from seglog_cli.storage.write.builder import NewRecord
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.retention.retention_model import ModelError, Producer, model_retention, model_roll
from seglog_cli.storage.config.topic_config import TopicConfig

MINUTE = 60_000
STRIMZI = TopicConfig(segment_bytes=16384, retention_ms=600_000, file_delete_delay_ms=60_000)


def test_strimzi_numbers():
    """Strimzi's 'Kafka storage internals' example: 150-byte records every 5 s, segment.bytes=16384,
    retention.ms=600000, 5 min check interval, 1 min delete delay: ~109 records a segment, filled
    in ~9 min, a record remains up to ~25 min."""
    model = model_retention(Producer(records_per_sec=0.2, record_bytes=150), STRIMZI, check_interval_ms=5 * MINUTE)
    assert model.roll.records_per_segment == 109
    assert model.roll.roll_cause == "segment.bytes"
    assert model.roll.fill_ms == 108 * 5000 and model.roll.roll_after_ms == 109 * 5000  # 9.0 and 9.08 min
    assert round(model.lifetime.max_on_disk_ms / MINUTE) == 25
    assert model.lifetime.max_readable_ms == 108 * 5000 + 600_000 + 1 + 5 * MINUTE
    assert model.lifetime.min_readable_ms == 600_001  # the newest record of a segment
    assert model.lifetime.min_on_disk_ms == 600_001 + 60_000
    first, second = model.segments[:2]
    assert first.rolled_ms == second.first_record_ms == 109 * 5000
    assert first.files_gone_by_ms == model.lifetime.max_on_disk_ms
    assert second.deletable_ms - first.deletable_ms == 109 * 5000


def test_index_full_roll_at_24_entries():
    """index.interval.bytes=150, segment.index.bytes=300: the time index (25 slots, one kept for
    the roll) is full at 24 entries, before the offset index (37) and segment.bytes."""
    config = TopicConfig(segment_bytes=16384, index_interval_bytes=150, segment_index_bytes=300)
    roll = model_roll(Producer(0.2, 150), config)
    assert (roll.roll_cause, roll.index_entries, roll.batches_per_segment) == ("time index full", 24, 49)
    assert roll.candidates["offset index full"] == 75  # 37 entries


def replay(batch_bytes: int, interval_ms: float, config: TopicConfig, batches: int = 100_000):
    """Batch-by-batch: shouldRoll before each append, then LogSegment.append's index rule."""
    size = entries = since_entry = count = 0
    first_ts = None
    offset_slots = config.segment_index_bytes // 8
    time_slots = config.segment_index_bytes // 12
    for n in range(batches):
        ts = n * Fraction(interval_ms)
        if count and (size > config.segment_bytes - batch_bytes or ts - first_ts > config.segment_ms
                      or entries >= offset_slots or entries >= time_slots - 1):
            return count, entries
        if count == 0:
            first_ts = ts
        if since_entry > config.index_interval_bytes:
            entries += 1
            since_entry = 0
        since_entry += batch_bytes
        size += batch_bytes
        count += 1
    return count, entries


@settings(max_examples=200, deadline=None)
@given(st.integers(20, 3000), st.integers(1, 20), st.integers(0, 5000), st.integers(40, 4000),
       st.integers(1000, 20000), st.floats(0.5, 50))
def test_rolls_match_a_batch_by_batch_replay(record_bytes, batch_records, interval_bytes, index_bytes, segment_bytes,
                                            records_per_sec):
    config = TopicConfig(segment_bytes=segment_bytes * 10, index_interval_bytes=interval_bytes,
                         segment_index_bytes=index_bytes, segment_ms=600_000)
    producer = Producer(records_per_sec, record_bytes, batch_records)
    if producer.batch_bytes > config.segment_bytes:
        with pytest.raises(ModelError):
            model_roll(producer, config)
        return
    roll = model_roll(producer, config)
    assert (roll.batches_per_segment, roll.index_entries) == replay(producer.batch_bytes, producer.exact_interval_ms,
                                                                     config)


def test_model_agrees_with_the_append_engine(tmp_path):
    """Batches of one fixed-size record through seglog's append path (Kafka's roll rules)."""
    config = TopicConfig(segment_bytes=4000, index_interval_bytes=300, segment_index_bytes=96)
    directory = tmp_path / "logs" / "m-0"
    directory.parent.mkdir()
    t0 = 1_700_000_000_000
    batches = [[NewRecord(key=b"k", value=b"v" * 40, timestamp=t0 + 2000 * i)] for i in range(60)]
    plan = plan_append(directory, batches, config, AppendOptions(now_ms=t0 + 200_000, create=True))
    apply_append(plan, backup_root=tmp_path / "backups")
    log = PartitionLog(directory)
    first = log.segments[0]
    batch_size = next(iter(first.batches())).size
    held = sum(1 for _ in first.batches())
    log.close()
    roll = model_roll(Producer(0.5, batch_size), config)
    assert roll.batches_per_segment == held
    assert roll.roll_cause == "time index full"  # 96 // 12 - 1 = 7 entries, before segment.bytes


def test_size_retention_and_no_retention():
    producer = Producer(10, 100)  # 1 kB/s
    config = TopicConfig(segment_bytes=10_000, retention_ms=-1, retention_bytes=50_000)
    model = model_retention(producer, config, check_interval_ms=0)
    assert model.lifetime.deciding_rule == "retention.bytes"
    # a segment (100 batches, 10 kB) goes once 60 kB were written from its start: 599 batches later
    assert model.lifetime.max_readable_ms == 599 * 100
    forever = model_retention(producer, TopicConfig(retention_ms=-1), check_interval_ms=0)
    assert forever.lifetime.max_on_disk_ms is None and forever.lifetime.deciding_rule is None
