"""Index readers: Kafka's entry count, lookups (checked against a bisect oracle), sanity checks."""

from __future__ import annotations

import bisect
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_cli.storage.log.errors import CorruptIndexError, DecodeError
from seglog_cli.storage.log.indexes import OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset, TransactionIndex
from tests.conftest import CORPUS, requires_corpus

BASE = 1000


def _write_offset_index(path, relatives, zero_tail=0):
    data = b"".join(struct.pack(">ii", rel, rel * 100) for rel in relatives) + bytes(zero_tail * 8)
    path.write_bytes(data)
    return path


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10_000), unique=True, min_size=0, max_size=3000).map(sorted),
       st.integers(BASE - 10, BASE + 10_010))
def test_offset_lookup_matches_bisect_oracle(tmp_path_factory, relatives, target):
    path = _write_offset_index(tmp_path_factory.mktemp("idx") / "00000000000000001000.index", relatives)
    with OffsetIndex(path, BASE) as index:
        found = index.lookup(target)
    keys = [BASE + rel for rel in relatives]
    slot = bisect.bisect_right(keys, target) - 1
    expected = OffsetPosition(BASE, 0) if slot < 0 else OffsetPosition(keys[slot], relatives[slot] * 100)
    assert found == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10**6), unique=True, max_size=2000).map(sorted), st.integers(-5, 10**6 + 5))
def test_time_lookup_matches_bisect_oracle(tmp_path_factory, timestamps, target):
    path = tmp_path_factory.mktemp("tix") / "00000000000000001000.timeindex"
    path.write_bytes(b"".join(struct.pack(">qi", ts, i) for i, ts in enumerate(timestamps)))
    with TimeIndex(path, BASE) as index:
        found = index.lookup(target)
    slot = bisect.bisect_right(timestamps, target) - 1
    expected = TimestampOffset(-1, BASE) if slot < 0 else TimestampOffset(timestamps[slot], BASE + slot)
    assert found == expected


def test_preallocated_index_counts_every_slot_like_kafka(tmp_path):
    path = _write_offset_index(tmp_path / "00000000000000001000.index", [5, 9, 20], zero_tail=1000)
    with OffsetIndex(path, BASE) as index:
        assert index.entries == 1003  # Kafka: file length / 8
        assert index.dump_entry_count() == 3  # DumpLogSegments stops at the first zero slot
        index.sanity_check()  # a zero tail passes the offset index check (§8.3)


def test_offset_index_sanity_failures(tmp_path):
    path = tmp_path / "00000000000000001000.index"
    path.write_bytes(struct.pack(">ii", -5, 0))
    with OffsetIndex(path, BASE) as index, pytest.raises(CorruptIndexError, match="last offset is 995 which is less than the base offset 1000"):
        index.sanity_check()
    path.write_bytes(bytes(12))
    with OffsetIndex(path, BASE) as index, pytest.raises(CorruptIndexError, match="found 12 bytes which is neither positive nor a multiple of 8"):
        index.sanity_check()


def test_time_index_with_zero_tail_fails_sanity_check(tmp_path):
    path = tmp_path / "00000000000000001000.timeindex"
    path.write_bytes(struct.pack(">qi", 1_700_000_000_000, 3) + bytes(12 * 5))
    with TimeIndex(path, BASE) as index:
        assert index.entries == 6 and index.dump_entry_count() == 1
        with pytest.raises(CorruptIndexError, match="last timestamp is 0 which is less than the first timestamp 1700000000000"):
            index.sanity_check()
    path.write_bytes(bytes(12 * 5))  # an all-zero file passes (§9.5)
    with TimeIndex(path, BASE) as index:
        index.sanity_check()


def test_time_index_full_keeps_one_slot(tmp_path):
    path = tmp_path / "00000000000000001000.timeindex"
    path.write_bytes(b"".join(struct.pack(">qi", 10 + i, i) for i in range(3)))
    with TimeIndex(path, BASE) as index:
        assert index.max_entries == 3 and index.is_full  # entries >= max - 1


def test_transaction_index(tmp_path):
    path = tmp_path / "00000000000000001000.txnindex"
    entry = struct.pack(">hqqqq", 0, 7, 1005, 1010, 1011)
    path.write_bytes(entry + entry[:20])  # a trailing partial entry is ignored
    index = TransactionIndex(path, BASE)
    (txn,) = list(index.aborted_txns())
    assert (txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset) == (7, 1005, 1010, 1011)
    index.sanity_check()
    path.write_bytes(struct.pack(">hqqqq", 0, 7, 5, 10, 11))
    with pytest.raises(CorruptIndexError, match="is less than start offset 1000"):
        TransactionIndex(path, BASE).sanity_check()
    path.write_bytes(b"\x01" + entry[1:])  # version byte 1
    with pytest.raises(DecodeError, match="Unexpected aborted transaction version 1"):
        list(TransactionIndex(path, BASE).aborted_txns())


@requires_corpus
def test_every_broker_index_entry_points_at_a_batch_ending_at_its_offset():
    from seglog_cli.storage.log.segments import LogSegment

    checked = 0
    for index_path in sorted((CORPUS / "kafka-4.2.0" / "data").glob("*/*.index")):
        segment = LogSegment(index_path.with_suffix(".log"))
        with OffsetIndex(index_path, segment.base_offset) as index:
            for entry in index.iter_entries(index.dump_entry_count()):
                match = segment.translate_offset(entry.offset)
                assert match is not None and match.position == entry.position
                assert match.batch.last_offset == entry.offset
                checked += 1
        segment.close()
    assert checked > 800  # every entry of every .index in the 4.2.0 data dir
