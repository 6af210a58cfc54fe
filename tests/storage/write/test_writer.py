"""The segment writer follows LogSegment.append: replaying broker-written segments batch by batch
(the leader's one-batch-per-append path) reproduces the broker's own .index and .timeindex."""

from __future__ import annotations

import pytest

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.write.writer import SegmentConfig, SegmentWriter, WriterError
from tests.conftest import CORPUS, requires_corpus


def _segments():
    if not CORPUS.is_dir():
        return []
    data = CORPUS / "kafka-4.2.0" / "data"
    return [pytest.param(p, id=f"{p.parent.name}/{p.name}") for p in sorted(data.glob("*/*.log"))
            if p.with_suffix(".index").exists()]


@requires_corpus
@pytest.mark.parametrize("log_path", _segments())
def test_replayed_segment_has_the_brokers_indexes(log_path, tmp_path):
    base = int(log_path.name[:20])
    with MappedFile(log_path) as mapped:
        writer = SegmentWriter(tmp_path, base)
        for batch in LogScan(mapped):
            writer.append(mapped.buffer[batch.position:batch.end_position])
        writer.close()
    assert writer.log_path.read_bytes() == log_path.read_bytes()
    assert writer.index_path.read_bytes() == log_path.with_suffix(".index").read_bytes()
    assert writer.time_index_path.read_bytes() == log_path.with_suffix(".timeindex").read_bytes()


def _batch(offset, size=150, timestamp=1_700_000_000_000):
    value = b"x" * max(0, size - 71)  # 71 bytes of batch and record overhead here
    return build_batch([NewRecord(b"k", value, timestamp=timestamp)], base_offset=offset)


def test_index_entry_only_after_more_than_interval_bytes(tmp_path):
    writer = SegmentWriter(tmp_path, 0, SegmentConfig(index_interval_bytes=300))
    sizes = []
    for offset in range(6):
        data = _batch(offset, timestamp=1_700_000_000_000 + offset)
        sizes.append(len(data))
        writer.append(data)
    assert set(sizes) == {150}
    # bytes since the last entry before each append: 0, 150, 300 (not > 300), 450 -> entry at the
    # 4th append, mapping ITS offset (3) to ITS position (450); the counter restarts from 150
    assert writer.offset_entries == [(3, 450)]
    assert writer.time_entries == [(1_700_000_000_003, 3)]  # max so far includes the 4th batch
    writer.close()
    assert writer.time_entries[-1] == (1_700_000_000_005, 5)  # the final entry at close


def test_roll_conditions(tmp_path):
    writer = SegmentWriter(tmp_path, 0, SegmentConfig(segment_bytes=1000, index_interval_bytes=150,
                                                      segment_index_bytes=300))
    from seglog_cli.storage.write.writer import describe_v2_message_set
    info = describe_v2_message_set(_batch(0))
    assert not writer.should_roll(info, now_ms=0)
    writer.size = 900
    assert writer.should_roll(info, now_ms=0)  # 900 > 1000 - 150
    writer.size = 0
    for i in range(23):
        writer.indexer.maybe_append_time(i + 1, i)
    assert not writer.should_roll(info, now_ms=0)
    writer.indexer.maybe_append_time(24, 23)  # 300 // 12 = 25 slots, full at 24
    assert writer.should_roll(info, now_ms=0)


def test_offsets_must_increase(tmp_path):
    writer = SegmentWriter(tmp_path, 0, SegmentConfig(index_interval_bytes=0))
    writer.append(_batch(5))
    writer.append(_batch(6))
    with pytest.raises(WriterError):
        writer.append(_batch(6))
