"""The engine's hand-written fast paths agree with the construct schemas in ``formats``.

``seglog_cli.storage`` decodes with precompiled ``struct`` layouts and inlined varint loops; each
test feeds the same bytes to the engine and to the schema and compares field by field. Where
the engine derives values (absolute offsets, record timestamps, sequences) the oracle is the
schema's fields combined with Kafka's Java arithmetic (``int``/``long`` wrap-around).
"""

from __future__ import annotations

import struct
import zlib

import pytest
from construct import GreedyRange, Struct, Tell
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog_cli.formats import control as control_format
from seglog_cli.formats import legacy as legacy_format
from seglog_cli.formats import record_batch as v2_format
from seglog_cli.formats.indexes import OffsetIndexFile, TimeIndexFile
from seglog_cli.formats.legacy import LegacyEntry, LegacyMessage, LogOverhead
from seglog_cli.formats.producer_snapshot import ProducerSnapshot
from seglog_cli.formats.record_batch import Record, RecordBatch, RecordBatchHeader, UncompressedRecords
from seglog_cli.formats.txn_index import AbortedTxnEntry, TransactionIndexFile
from seglog_cli.storage.log.batch_header import (CREATE_TIME, LEGACY_HEADER, LOG_APPEND_TIME, NO_TIMESTAMP,
                                                 NO_TIMESTAMP_TYPE, OFFSET_AND_SIZE, V2_HEADER, BatchHeader,
                                                 read_batch_header)
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.control import parse_control_record
from seglog_cli.storage.log.errors import DecodeError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.indexes import (
    AbortedTxn,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
    TransactionIndex,
)
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.log.snapshots import BatchMetadata, read_snapshot

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
INT32_MAX = 2**31 - 1

# file-backed examples: hypothesis shares one scratch directory, so no per-test fixture
file_settings = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("layouts")


def java_int(n: int) -> int:
    return (n + 2**31) % 2**32 - 2**31


def java_long(n: int) -> int:
    return (n + 2**63) % 2**64 - 2**63


def kafka_increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence`` evaluated with Java ``int`` arithmetic."""
    if sequence > java_int(INT32_MAX - increment):
        return java_int(increment - java_int(INT32_MAX - sequence) - 1)
    return java_int(sequence + increment)


# -- (1) the v2 batch header ------------------------------------------------------------------

HEADER_NAMES = [sc.name for sc in RecordBatchHeader.subcons]


def test_struct_sizes():
    assert V2_HEADER.size == RecordBatchHeader.sizeof() == v2_format.RECORD_BATCH_OVERHEAD
    assert OFFSET_AND_SIZE.size == LogOverhead.sizeof() == v2_format.LOG_OVERHEAD
    # offset, size, crc, magic, attributes, v1 timestamp
    assert LEGACY_HEADER.size == legacy_format.LOG_OVERHEAD + legacy_format.KEY_SIZE_OFFSET_V1
    assert len(V2_HEADER.unpack(bytes(61))) == len(HEADER_NAMES)


def assert_same_header(engine: BatchHeader, parsed) -> None:
    for name in HEADER_NAMES:
        if name != "attributes":
            assert getattr(engine, name) == parsed[name], name
    attributes = parsed.attributes
    assert engine.compression == attributes.compression
    assert engine.timestamp_type == (LOG_APPEND_TIME if attributes.timestamp_type else CREATE_TIME)
    assert engine.is_transactional == attributes.is_transactional
    assert engine.is_control == attributes.is_control
    assert engine.has_delete_horizon == attributes.has_delete_horizon
    assert engine.delete_horizon_ms == (parsed.base_timestamp if attributes.has_delete_horizon else None)
    assert engine.size == v2_format.LOG_OVERHEAD + parsed.length
    # equal as Java longs (whether the engine wraps like Kafka: test_v2_record_arithmetic_wraps_like_java)
    assert java_long(engine.last_offset) == java_long(parsed.base_offset + parsed.last_offset_delta)


v2_headers = st.binary(min_size=61, max_size=61).map(lambda b: b[:16] + b"\x02" + b[17:])


@given(v2_headers)
def test_v2_header(data):
    fields = V2_HEADER.unpack(data)
    attributes = fields[HEADER_NAMES.index("attributes")]  # the whole int16, signed
    assert attributes.to_bytes(2, "big", signed=True) == data[21:23]
    assert_same_header(BatchHeader(0, *fields), RecordBatchHeader.parse(data))


@given(v2_headers, st.integers(17, 61))
def test_v2_header_of_a_short_file(data, end):
    """A header cut short at ``end`` (a torn file) reads as if zero-padded to 61 bytes."""
    short = data[:end]
    engine = read_batch_header(short, memoryview(short), 0, end, check_crc=False)
    assert engine.position == 0
    assert_same_header(engine, RecordBatchHeader.parse(short.ljust(61, b"\0")))


# -- (2) legacy messages ----------------------------------------------------------------------

legacy_entries = st.fixed_dictionaries({
    "offset": INT64,
    "magic": st.sampled_from([0, 1]),
    "attributes": st.integers(0, 255),
    "timestamp": INT64,
    "key": st.none() | st.binary(max_size=20),
    "value": st.none() | st.binary(max_size=20),
})


def build_legacy(spec: dict) -> bytes:
    message = dict(crc=0, magic=spec["magic"], attributes=dict(timestamp_type=0, compression=0),
                   timestamp=spec["timestamp"] if spec["magic"] else None, key=spec["key"],
                   value=spec["value"])
    body = bytearray(LegacyMessage.build(message))
    body[legacy_format.ATTRIBUTES_OFFSET] = spec["attributes"]  # every bit, unused ones too
    body[0:4] = zlib.crc32(body[4:]).to_bytes(4, "big")
    return LogOverhead.build(dict(offset=spec["offset"], message_size=len(body))) + bytes(body)


@given(legacy_entries)
def test_legacy_header(spec):
    entry = build_legacy(spec)
    parsed = LegacyEntry.parse(entry)
    message = parsed.message
    if len(entry) >= LEGACY_HEADER.size:
        offset, size, crc, magic, attributes, timestamp = LEGACY_HEADER.unpack_from(entry)
        assert (offset, size, crc, magic) == (parsed.offset, parsed.message_size, message.crc,
                                              message.magic)
        assert attributes & 0x07 == message.attributes.compression
        assert (attributes & 0x08) >> 3 == message.attributes.timestamp_type
        if message.magic == 1:
            assert timestamp == message.timestamp

    engine = read_batch_header(entry, memoryview(entry), 0, len(entry))
    assert (engine.base_offset, engine.last_offset, engine.length) == (parsed.offset, parsed.offset,
                                                                       parsed.message_size)
    assert (engine.crc, engine.magic) == (message.crc, message.magic)
    assert engine.computed_crc == message.crc and engine.is_valid
    assert engine.compression == message.attributes.compression
    if message.magic == 0:
        assert engine.timestamp_type == NO_TIMESTAMP_TYPE
        assert engine.base_timestamp == engine.max_timestamp == NO_TIMESTAMP
    else:
        assert engine.timestamp_type == (LOG_APPEND_TIME if message.attributes.timestamp_type
                                         else CREATE_TIME)
        assert engine.base_timestamp == engine.max_timestamp == message.timestamp
    assert (engine.producer_id, engine.producer_epoch, engine.base_sequence) == (-1, -1, -1)


@given(legacy_entries.map(lambda spec: spec | {"attributes": spec["attributes"] & 0xF8}))
def test_legacy_uncompressed_record(spec):
    entry = build_legacy(spec)
    message = LegacyEntry.parse(entry).message
    (record,) = read_records(entry, read_batch_header(entry, memoryview(entry), 0, len(entry)))
    assert record.offset == spec["offset"]
    assert (record.key, record.value, record.headers) == (message.key, message.value, ())
    assert (record.crc, record.is_valid, record.magic) == (message.crc, True, message.magic)
    assert record.timestamp == (message.timestamp if message.magic else NO_TIMESTAMP)
    assert record.size_in_bytes == len(entry)


# -- (3) v2 records through LogScan and read_records ------------------------------------------

record_headers = st.lists(st.fixed_dictionaries({
    "key": st.binary(max_size=8), "value": st.none() | st.binary(max_size=8)}), max_size=3)
records = st.lists(st.fixed_dictionaries({
    "attributes": st.integers(-128, 127),
    "timestamp_delta": st.integers(-(2**62), 2**62),
    "offset_delta": st.integers(0, INT32_MAX),
    "key": st.none() | st.binary(max_size=40),
    "value": st.none() | st.binary(max_size=200),
    "headers": record_headers,
}), max_size=8)
batch_headers = st.fixed_dictionaries({
    "base_offset": st.integers(0, 2**62),
    "partition_leader_epoch": INT32,
    "attributes": st.fixed_dictionaries({
        "unused": st.just(False), "has_delete_horizon": st.booleans(), "is_control": st.just(False),
        "is_transactional": st.booleans(), "timestamp_type": st.integers(0, 1),
        "compression": st.just(0)}),
    "last_offset_delta": INT32,
    "base_timestamp": st.integers(-(2**62), 2**62),
    "max_timestamp": INT64,
    "producer_id": INT64,
    "producer_epoch": INT16,
    "base_sequence": st.just(-1) | st.integers(0, INT32_MAX),
})


def build_v2_batch(header: dict, batch_records: list[dict]) -> bytes:
    """An uncompressed v2 batch built by the schemas, with its CRC-32C filled in."""
    records_data = UncompressedRecords.build(batch_records)
    header = dict(header, length=v2_format.MIN_LENGTH + len(records_data), magic=2, crc=0,
                  records_count=len(batch_records))
    raw = bytearray(RecordBatch.build(dict(header=header, records_data=records_data)))
    struct.pack_into(">I", raw, v2_format.CRC_OFFSET, crc32c(raw[v2_format.CRC_COVERED_START:]))
    return bytes(raw)


def scan_records(path):
    """Scan ``path`` like the engine does: (batch headers, their records, the LogScan)."""
    with MappedFile(path) as mapped:
        scan = LogScan(mapped)
        batches = list(scan)
        decoded = [list(read_records(mapped.buffer, batch, str(path))) for batch in batches]
    return batches, decoded, scan


# each record with the stream position after it, so sizes are those of the bytes as stored
RecordsWithEnds = GreedyRange(Struct("record" / Record, "end" / Tell))


def expected_records(raw: bytes) -> list[tuple]:
    """What Kafka reports for each record, from the construct parse of ``raw``."""
    batch = RecordBatch.parse(raw)
    h = batch.header
    log_append_time = h.attributes.timestamp_type == 1
    parsed = RecordsWithEnds.parse(batch.records_data)
    ends = [0] + [p.end for p in parsed]
    return [(
        java_long(h.base_offset + r.offset_delta),
        h.max_timestamp if log_append_time else java_long(h.base_timestamp + r.timestamp_delta),
        LOG_APPEND_TIME if log_append_time else CREATE_TIME,
        r.key,
        r.value,
        tuple((x.key, x.value) for x in r.headers),
        kafka_increment_sequence(h.base_sequence, r.offset_delta) if h.base_sequence >= 0 else -1,
        end - start,
    ) for r, start, end in zip((p.record for p in parsed), ends, ends[1:])]


def engine_records(decoded) -> list[tuple]:
    return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers, r.sequence,
             r.size_in_bytes) for r in decoded]


@file_settings
@given(header=batch_headers, batch_records=records)
def test_v2_records(scratch, header, batch_records):
    raw = build_v2_batch(header, batch_records)
    path = scratch / "00000000000000000000.log"
    path.write_bytes(raw)
    (batch,), (decoded,), scan = scan_records(path)
    assert scan.findings == [] and scan.valid_bytes == len(raw)
    assert batch.is_valid
    assert_same_header(batch, RecordBatch.parse(raw).header)
    assert engine_records(decoded) == expected_records(raw)


@pytest.mark.parametrize("header_change, record_change", [
    pytest.param(dict(base_sequence=5), dict(offset_delta=-1), id="negative-offset-delta-sequence"),
    pytest.param(dict(base_offset=2**63 - 1), dict(offset_delta=1), id="offset-past-int64"),
    pytest.param(dict(base_timestamp=2**63 - 1), dict(timestamp_delta=1), id="timestamp-past-int64"),
])
def test_v2_record_arithmetic_wraps_like_java(tmp_path, header_change, record_change):
    header = dict(base_offset=0, partition_leader_epoch=0, attributes=dict(
        unused=False, has_delete_horizon=False, is_control=False, is_transactional=False,
        timestamp_type=0, compression=0), last_offset_delta=0, base_timestamp=0, max_timestamp=0,
        producer_id=-1, producer_epoch=-1, base_sequence=-1) | header_change
    record = dict(attributes=0, timestamp_delta=0, offset_delta=0, key=b"k", value=b"v",
                  headers=[]) | record_change
    raw = build_v2_batch(header, [record])
    (tmp_path / "00000000000000000000.log").write_bytes(raw)
    _, (decoded,), _ = scan_records(tmp_path / "00000000000000000000.log")
    assert engine_records(decoded) == expected_records(raw)


def test_control_record_through_the_engine(tmp_path):
    """Spec vector C (a COMMIT marker) read by LogScan, read_records and parse_control_record."""
    raw = build_v2_batch(dict(
        base_offset=2, partition_leader_epoch=0, attributes=dict(
            unused=False, has_delete_horizon=False, is_control=True, is_transactional=True,
            timestamp_type=0, compression=0),
        last_offset_delta=0, base_timestamp=1700000000100, max_timestamp=1700000000100,
        producer_id=4000, producer_epoch=0, base_sequence=-1), [dict(
            attributes=0, timestamp_delta=0, offset_delta=0, key=bytes.fromhex("00000001"),
            value=bytes.fromhex("000000000000"), headers=[])])
    assert raw.hex() == ("0000000000000002000000420000000002705141390030000000000000018bcfe56864"
                         "0000018bcfe568640000000000000fa00000ffffffff000000012000000008000000010c"
                         "00000000000000")  # exactly §21 C
    (tmp_path / "00000000000000000000.log").write_bytes(raw)
    (batch,), ((record,),), _ = scan_records(tmp_path / "00000000000000000000.log")
    assert batch.is_control and batch.is_transactional
    parsed = parse_control_record(record)
    key = control_format.ControlRecordKey.parse(record.key)
    value = control_format.EndTxnMarkerValue.parse(record.value)
    assert (parsed.key_version, parsed.type_id, parsed.type_name) == (key.version, key.type, "COMMIT")
    assert parsed.coordinator_epoch == value.coordinator_epoch == 0


@given(key=st.binary(min_size=4, max_size=8), value=st.binary(min_size=6, max_size=10), commit=st.booleans())
def test_control_key_and_marker_layouts(key, value, commit):
    """The engine's struct reads of a control key and an end-transaction marker (any bytes) give
    the schemas' fields, or the error Kafka gives for a negative version."""
    from seglog_cli.storage.log.control import parse_control_type
    from seglog_cli.storage.log.errors import InvalidRecordError
    from seglog_cli.storage.log.records import Record

    schema_key = control_format.ControlRecordKey.parse(key)
    if schema_key.version < 0:
        with pytest.raises(InvalidRecordError, match=f"control record: {schema_key.version}. May"):
            parse_control_type(key)
    else:
        assert parse_control_type(key) == (schema_key.version, schema_key.type)
    marker_key = key[:2] + (b"\x00\x01" if commit else b"\x00\x00") + key[4:]
    if schema_key.version < 0:
        return
    record = Record(offset=7, timestamp=0, timestamp_type=0, key=marker_key, value=value, headers=(), sequence=-1,
                    size_in_bytes=0)
    schema_value = control_format.EndTxnMarkerValue.parse(value)
    if schema_value.version < 0:
        with pytest.raises(InvalidRecordError, match="Invalid version found for end transaction marker"):
            parse_control_record(record)
    else:
        parsed = parse_control_record(record)
        assert (parsed.type_name, parsed.coordinator_epoch) == ("COMMIT" if commit else "ABORT",
                                                                schema_value.coordinator_epoch)


# -- (4) index, transaction index and snapshot readers ----------------------------------------

@file_settings
@given(data=st.binary(max_size=120), base_offset=st.integers(0, 2**40))
def test_offset_index(scratch, data, base_offset):
    path = scratch / "00000000000000000000.index"
    path.write_bytes(data)
    with OffsetIndex(path, base_offset) as index:
        assert index.entries == len(data) // 8
        entries = list(index.iter_entries())
    assert entries == [OffsetPosition(base_offset + e.relative_offset, e.position)
                       for e in OffsetIndexFile.parse(data)]


@file_settings
@given(data=st.binary(max_size=120), base_offset=st.integers(0, 2**40))
def test_time_index(scratch, data, base_offset):
    path = scratch / "00000000000000000000.timeindex"
    path.write_bytes(data)
    with TimeIndex(path, base_offset) as index:
        assert index.entries == len(data) // 12
        entries = list(index.iter_entries())
    assert entries == [TimestampOffset(e.timestamp, base_offset + e.relative_offset)
                       for e in TimeIndexFile.parse(data)]


aborted_txns = st.lists(st.fixed_dictionaries({
    "version": st.integers(-255, 255) | INT16,  # often a zero first byte, sometimes not
    "producer_id": INT64, "first_offset": INT64, "last_offset": INT64, "last_stable_offset": INT64,
}), max_size=5)


@file_settings
@given(entries=aborted_txns, tail=st.binary(max_size=33))
def test_transaction_index(scratch, entries, tail):
    """Same entries as the schema; the version is the int16's first byte (Kafka's ``get(0)``),
    and the first entry whose first byte is above 0 stops the walk with Kafka's error."""
    data = TransactionIndexFile.build(entries) + tail
    path = scratch / "00000000000000000000.txnindex"
    path.write_bytes(data)
    parsed = TransactionIndexFile.parse(data)
    expected = [AbortedTxn(e.version >> 8, e.producer_id, e.first_offset, e.last_offset,
                           e.last_stable_offset) for e in parsed]
    stop = next((i for i, txn in enumerate(expected) if txn.version > 0), len(expected))

    index = TransactionIndex(path, 0)
    assert index.entries == len(parsed) == len(entries)
    read = []
    try:
        for txn in index.aborted_txns():
            read.append(txn)
    except DecodeError as exc:
        assert stop < len(expected)
        assert f"Unexpected aborted transaction version {expected[stop].version} " in str(exc)
    assert read == expected[:stop]
    assert AbortedTxnEntry.sizeof() == index.entry_size


producer_entries = st.lists(st.fixed_dictionaries({
    "producer_id": INT64, "epoch": INT16, "last_sequence": INT32,
    "last_offset": st.just(-1) | INT64, "offset_delta": INT32, "timestamp": INT64,
    "coordinator_epoch": INT32, "current_txn_first_offset": st.just(-1) | INT64,
}), max_size=5)


@file_settings
@given(entries=producer_entries, trailing=st.binary(max_size=20))
def test_producer_snapshot(scratch, entries, trailing):
    data = bytearray(ProducerSnapshot.build(dict(version=1, crc=0, entries=entries, trailing=trailing)))
    data[2:6] = crc32c(data[6:]).to_bytes(4, "big")  # CRC-32C of [6, end), trailing bytes included
    path = scratch / "00000000000000000012.snapshot"
    path.write_bytes(data)
    parsed = ProducerSnapshot.parse(bytes(data))
    snapshot = read_snapshot(path)
    assert (snapshot.offset, snapshot.version, snapshot.crc) == (12, parsed.version, parsed.crc)
    assert len(snapshot.entries) == parsed.entry_count == len(entries)
    for engine, p in zip(snapshot.entries, parsed.entries):
        assert (engine.producer_id, engine.producer_epoch) == (p.producer_id, p.epoch)
        assert (engine.coordinator_epoch, engine.last_timestamp) == (p.coordinator_epoch, p.timestamp)
        assert engine.current_txn_first_offset == (p.current_txn_first_offset
                                                   if p.current_txn_first_offset >= 0 else None)
        assert engine.batch_metadata == (BatchMetadata(p.last_sequence, p.last_offset, p.offset_delta,
                                                       p.timestamp) if p.last_offset >= 0 else None)
