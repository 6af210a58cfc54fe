"""Record batch v2 and its records (spec §2-§4), on the spec's vectors A, C and D (§21)."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from seglog_cli.formats import control
from seglog_cli.formats import record_batch as rb
from seglog_cli.formats.record_batch import (
    BatchAttributes,
    Record,
    RecordBatch,
    RecordBatchHeader,
    RecordBody,
    UncompressedRecords,
)
from seglog_cli.formats.varint import MAX_VARINT_BYTES, MAX_VARLONG_BYTES, ZigZagVarInt

# §21 A: v2 batch, 2 records, uncompressed, CreateTime (88 bytes)
VECTOR_A = bytes.fromhex(
    "0000000000000000"  # base_offset 0
    "0000004c"          # length 76 (= 88 - 12)
    "00000000"          # partition_leader_epoch 0
    "02"                # magic 2
    "30bdd1df"          # crc: CRC-32C of bytes [21, 88) = 817746399
    "0000"              # attributes: codec none, CreateTime, no flags
    "00000001"          # last_offset_delta 1
    "0000018bcfe56800"  # base_timestamp 1700000000000
    "0000018bcfe56805"  # max_timestamp 1700000000005
    "ffffffffffffffff"  # producer_id -1
    "ffff"              # producer_epoch -1
    "ffffffff"          # base_sequence -1
    "00000002"          # records_count 2
    # -- record 0 (11 bytes) --
    "14"                # length 10 (zig-zag 0x14)
    "00"                # attributes
    "00"                # timestamp_delta 0
    "00"                # offset_delta 0
    "04" "6b30"         # key length 2, "k0"
    "04" "7630"         # value length 2, "v0"
    "00"                # header_count 0
    # -- record 1 (16 bytes) --
    "1e"                # length 15
    "00"                # attributes
    "0a"                # timestamp_delta 5
    "02"                # offset_delta 1
    "01"                # key length -1: null
    "0a" "68656c6c6f"   # value length 5, "hello"
    "02"                # header_count 1
    "02" "68"           # header key length 1, "h"
    "02" "78"           # header value length 1, "x"
)

# §21 C: COMMIT transaction marker, base offset 2, producer 4000, epoch 0 (78 bytes)
VECTOR_C = bytes.fromhex(
    "0000000000000002"  # base_offset 2
    "00000042"          # length 66 (= 78 - 12)
    "00000000"          # partition_leader_epoch 0
    "02"                # magic 2
    "70514139"          # crc 1884373305
    "0030"              # attributes: transactional (0x10) + control (0x20)
    "00000000"          # last_offset_delta 0
    "0000018bcfe56864"  # base_timestamp 1700000000100 (the marker time)
    "0000018bcfe56864"  # max_timestamp 1700000000100
    "0000000000000fa0"  # producer_id 4000
    "0000"              # producer_epoch 0
    "ffffffff"          # base_sequence -1 (markers carry no sequence)
    "00000001"          # records_count 1
    # -- the control record (17 bytes) --
    "20"                # length 16
    "00"                # attributes
    "00"                # timestamp_delta 0
    "00"                # offset_delta 0
    "08" "00000001"     # key length 4: control key version 0, type 1 (COMMIT)
    "0c" "000000000000" # value length 6: marker version 0, coordinator_epoch 0
    "00"                # header_count 0
)

# §21 D: empty batch as left by the cleaner (61 bytes, no records section)
VECTOR_D = bytes.fromhex(
    "000000000000000a"  # base_offset 10
    "00000031"          # length 49: the minimum, nothing after the header
    "00000003"          # partition_leader_epoch 3
    "02"                # magic 2
    "1587eb96"          # crc 361229206
    "0000"              # attributes: none (delete horizon bit NOT set by the cleaner)
    "00000004"          # last_offset_delta 4 (offsets 10-14 kept as a gap)
    "ffffffffffffffff"  # base_timestamp -1
    "0000018bcfe568c8"  # max_timestamp 1700000000200 (preserved)
    "0000000000000fa0"  # producer_id 4000
    "0000"              # producer_epoch 0
    "00000005"          # base_sequence 5
    "00000000"          # records_count 0
)

NO_FLAGS = dict(unused=False, has_delete_horizon=False, is_control=False, is_transactional=False,
                timestamp_type=0, compression=0)


def header_fields(header) -> dict:
    return {k: v for k, v in header.items() if not k.startswith("_")}


def attribute_fields(attributes) -> dict:
    return {k: v for k, v in attributes.items() if not k.startswith("_")}


@pytest.mark.parametrize("vector, spec_hex", [
    (VECTOR_A, "00000000000000000000004c000000000230bdd1df0000000000010000018bcfe568000000018bcfe56805"
               "ffffffffffffffffffffffffffff0000000214000000046b30047630001e000a02010a68656c6c6f0202680278"),
    (VECTOR_C, "0000000000000002000000420000000002705141390030000000000000018bcfe568640000018bcfe56864"
               "0000000000000fa00000ffffffff000000012000000008000000010c00000000000000"),
    (VECTOR_D, "000000000000000a0000003100000003021587eb96000000000004ffffffffffffffff0000018bcfe568c8"
               "0000000000000fa000000000000500000000"),
], ids=["A", "C", "D"])
def test_literals_are_the_spec_vectors(vector, spec_hex):
    """The commented literals above are byte for byte the "Full:" hex of §21."""
    assert vector.hex() == spec_hex


# -- the header layout ------------------------------------------------------------------------

def test_header_size():
    assert RecordBatchHeader.sizeof() == 61 == rb.RECORD_BATCH_OVERHEAD == rb.RECORDS_OFFSET
    assert rb.LOG_OVERHEAD == 12
    assert rb.MIN_LENGTH == 49
    assert rb.CRC_COVERED_START == 21
    assert rb.MAX_RECORD_OVERHEAD == MAX_VARINT_BYTES + 1 + MAX_VARLONG_BYTES + MAX_VARINT_BYTES


# (constant, struct format, field) -- positions from the spec's §2.1 table
OFFSETS = [
    (rb.BASE_OFFSET_OFFSET, 0, ">q", "base_offset"),
    (rb.LENGTH_OFFSET, 8, ">i", "length"),
    (rb.PARTITION_LEADER_EPOCH_OFFSET, 12, ">i", "partition_leader_epoch"),
    (rb.MAGIC_OFFSET, 16, ">b", "magic"),
    (rb.CRC_OFFSET, 17, ">I", "crc"),
    (rb.LAST_OFFSET_DELTA_OFFSET, 23, ">i", "last_offset_delta"),
    (rb.BASE_TIMESTAMP_OFFSET, 27, ">q", "base_timestamp"),
    (rb.MAX_TIMESTAMP_OFFSET, 35, ">q", "max_timestamp"),
    (rb.PRODUCER_ID_OFFSET, 43, ">q", "producer_id"),
    (rb.PRODUCER_EPOCH_OFFSET, 51, ">h", "producer_epoch"),
    (rb.BASE_SEQUENCE_OFFSET, 53, ">i", "base_sequence"),
    (rb.RECORDS_COUNT_OFFSET, 57, ">i", "records_count"),
]


@pytest.mark.parametrize("constant, expected, fmt, field", OFFSETS, ids=[o[3] for o in OFFSETS])
@pytest.mark.parametrize("vector", [VECTOR_A, VECTOR_C, VECTOR_D], ids=["A", "C", "D"])
def test_offset_constants_locate_the_schema_fields(vector, constant, expected, fmt, field):
    assert constant == expected
    assert struct.unpack_from(fmt, vector, constant)[0] == RecordBatchHeader.parse(vector)[field]


def test_attributes_offset():
    assert rb.ATTRIBUTES_OFFSET == 21
    # the low byte (file offset 22) carries the flags: vector C's 0x30
    assert VECTOR_C[rb.ATTRIBUTES_OFFSET + 1] == rb.TRANSACTIONAL_FLAG_MASK | rb.CONTROL_FLAG_MASK


# -- vector A ---------------------------------------------------------------------------------

def test_vector_a_header():
    header = RecordBatch.parse(VECTOR_A).header
    fields = header_fields(header)
    attributes = fields.pop("attributes")
    assert fields == {
        "base_offset": 0, "length": 76, "partition_leader_epoch": 0, "magic": 2,
        "crc": 817746399, "last_offset_delta": 1,
        "base_timestamp": 1700000000000, "max_timestamp": 1700000000005,
        "producer_id": -1, "producer_epoch": -1, "base_sequence": -1, "records_count": 2,
    }
    assert attribute_fields(attributes) == NO_FLAGS


def test_vector_a_size_and_crc():
    batch = RecordBatch.parse(VECTOR_A)
    assert len(VECTOR_A) == 88 == rb.LOG_OVERHEAD + batch.header.length
    assert len(batch.records_data) == 88 - 61
    assert crc32c(VECTOR_A[rb.CRC_COVERED_START:]) == batch.header.crc


def test_vector_a_records():
    records = UncompressedRecords.parse(RecordBatch.parse(VECTOR_A).records_data)
    assert len(records) == 2
    first, second = records
    assert (first.attributes, first.timestamp_delta, first.offset_delta) == (0, 0, 0)
    assert (first.key, first.value, first.header_count, list(first.headers)) == (b"k0", b"v0", 0, [])
    assert (second.attributes, second.timestamp_delta, second.offset_delta) == (0, 5, 1)
    assert second.key is None
    assert second.value == b"hello"
    assert second.header_count == 1
    assert [(h.key, h.value) for h in second.headers] == [(b"h", b"x")]


def test_vector_a_record_sizes():
    """Each record occupies size(varint(length)) + length bytes: 1 + 10 and 1 + 15."""
    records = UncompressedRecords.parse(RecordBatch.parse(VECTOR_A).records_data)
    assert [len(Record.build(r)) for r in records] == [11, 16]
    assert len(RecordBody.build(records[1])) == 15


def test_vector_a_round_trip():
    batch = RecordBatch.parse(VECTOR_A)
    assert RecordBatch.build(batch) == VECTOR_A
    records = UncompressedRecords.parse(batch.records_data)
    assert UncompressedRecords.build(records) == batch.records_data


# -- vector C: a COMMIT marker ----------------------------------------------------------------

def test_vector_c_header():
    batch = RecordBatch.parse(VECTOR_C)
    header = batch.header
    assert len(VECTOR_C) == 78 == rb.LOG_OVERHEAD + header.length
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (2, 0, 1)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4000, 0, -1)
    assert header.base_timestamp == header.max_timestamp == 1700000000100
    assert attribute_fields(header.attributes) == NO_FLAGS | dict(is_transactional=True,
                                                                   is_control=True)
    assert header.crc == 1884373305 == crc32c(VECTOR_C[rb.CRC_COVERED_START:])
    assert RecordBatch.build(batch) == VECTOR_C


def test_vector_c_control_record():
    (record,) = UncompressedRecords.parse(RecordBatch.parse(VECTOR_C).records_data)
    assert (record.timestamp_delta, record.offset_delta, record.header_count) == (0, 0, 0)
    assert len(Record.build(record)) == 17  # 61 + 17 = 78

    key = control.ControlRecordKey.parse(record.key)
    assert (key.version, key.type, key.rest) == (0, control.COMMIT, b"")
    assert control.CONTROL_TYPES[key.type] == "COMMIT"

    value = control.EndTxnMarkerValue.parse(record.value)
    assert (value.version, value.coordinator_epoch, value.rest) == (0, 0, b"")


# -- vector D: an empty batch -----------------------------------------------------------------

def test_vector_d_empty_batch():
    batch = RecordBatch.parse(VECTOR_D)
    header = batch.header
    assert len(VECTOR_D) == 61
    assert header.length == rb.MIN_LENGTH
    assert header.records_count == 0
    assert batch.records_data == b""
    assert UncompressedRecords.parse(batch.records_data) == []
    assert (header.base_offset, header.last_offset_delta) == (10, 4)
    assert (header.base_timestamp, header.max_timestamp) == (-1, 1700000000200)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (4000, 0, 5)
    assert header.partition_leader_epoch == 3
    assert attribute_fields(header.attributes) == NO_FLAGS
    assert header.crc == 361229206 == crc32c(VECTOR_D[rb.CRC_COVERED_START:])
    assert RecordBatch.build(batch) == VECTOR_D


# -- attribute bits ---------------------------------------------------------------------------

@pytest.mark.parametrize("codec", range(8))
def test_codec_bits(codec):
    """Bits 0-2 of the low byte; 5-7 are invalid codecs but still three bits on disk."""
    attributes = BatchAttributes.parse(bytes([0x00, codec]))
    assert attribute_fields(attributes) == NO_FLAGS | dict(compression=codec)
    assert BatchAttributes.build(attributes) == bytes([0x00, codec])


@pytest.mark.parametrize("field, mask, value", [
    ("timestamp_type", rb.TIMESTAMP_TYPE_MASK, 1),          # 0x08 LogAppendTime
    ("is_transactional", rb.TRANSACTIONAL_FLAG_MASK, True),  # 0x10
    ("is_control", rb.CONTROL_FLAG_MASK, True),              # 0x20
    ("has_delete_horizon", rb.DELETE_HORIZON_FLAG_MASK, True),  # 0x40 (KIP-534)
    ("unused", 0x80, True),                                  # bit 7
])
def test_flag_bits(field, mask, value):
    assert mask == {"timestamp_type": 0x08, "is_transactional": 0x10, "is_control": 0x20,
                    "has_delete_horizon": 0x40, "unused": 0x80}[field]
    attributes = BatchAttributes.parse(bytes([0x00, mask]))
    assert attribute_fields(attributes) == NO_FLAGS | {field: value}
    assert BatchAttributes.build(attributes) == bytes([0x00, mask])


def test_high_byte_is_ignored_and_written_zero():
    attributes = BatchAttributes.parse(bytes([0xff, 0x00]))
    assert attribute_fields(attributes) == NO_FLAGS
    assert BatchAttributes.build(attributes) == b"\x00\x00"


@given(st.integers(0, 0xFFFF))
def test_every_attribute_value(raw):
    low = raw & 0xFF
    attributes = BatchAttributes.parse(raw.to_bytes(2, "big"))
    assert attributes.compression == low & rb.COMPRESSION_CODEC_MASK
    assert attributes.timestamp_type == bool(low & rb.TIMESTAMP_TYPE_MASK)
    assert attributes.is_transactional == bool(low & rb.TRANSACTIONAL_FLAG_MASK)
    assert attributes.is_control == bool(low & rb.CONTROL_FLAG_MASK)
    assert attributes.has_delete_horizon == bool(low & rb.DELETE_HORIZON_FLAG_MASK)
    assert attributes.unused == bool(low & 0x80)
    assert BatchAttributes.build(attributes) == bytes([0, low])


# -- records: null lengths, null header values, negative deltas -------------------------------

RECORD_WITH_NULLS = bytes.fromhex(
    "18"                # length 12
    "00"                # attributes
    "09"                # timestamp_delta -5 (a record older than the batch base timestamp)
    "06"                # offset_delta 3
    "03"                # key length -2: any negative length is null
    "01"                # value length -1: null (a tombstone)
    "04"                # header_count 2
    "02" "61"           # header 0: key length 1, "a"
    "01"                #           value length -1: null
    "00"                # header 1: key length 0, "" (empty, not null)
    "02" "7a"           #           value length 1, "z"
)


def test_record_with_nulls():
    record = Record.parse(RECORD_WITH_NULLS)
    assert (record.timestamp_delta, record.offset_delta) == (-5, 3)
    assert record.key is None
    assert record.value is None
    assert [(h.key, h.value) for h in record.headers] == [(b"a", None), (b"", b"z")]


def test_null_is_built_as_minus_one():
    """A null read from any negative length is written back as -1 (01)."""
    canonical = RECORD_WITH_NULLS[:4] + b"\x01" + RECORD_WITH_NULLS[5:]
    assert Record.build(Record.parse(RECORD_WITH_NULLS)) == canonical


RECORD_WITH_LARGE_DELTAS = bytes.fromhex(
    "1e"                      # length 15
    "00"                      # attributes
    "ffffffffffffffffff01"    # timestamp_delta -2^63 (10-byte varlong)
    "00"                      # offset_delta 0
    "00"                      # key length 0: empty key, not null
    "00"                      # value length 0
    "00"                      # header_count 0
)


def test_record_with_large_negative_timestamp_delta():
    record = Record.parse(RECORD_WITH_LARGE_DELTAS)
    assert record.timestamp_delta == -(2**63)
    assert (record.key, record.value) == (b"", b"")
    assert Record.build(record) == RECORD_WITH_LARGE_DELTAS


def test_records_are_back_to_back():
    data = RECORD_WITH_NULLS + RECORD_WITH_LARGE_DELTAS + RECORD_WITH_NULLS
    records = UncompressedRecords.parse(data)
    assert [r.offset_delta for r in records] == [3, 0, 3]
    assert [r.timestamp_delta for r in records] == [-5, -(2**63), -5]


def test_records_stop_silently_at_a_damaged_record():
    """``UncompressedRecords`` is a GreedyRange: a truncated record ends the list without an
    error, so comparing with ``records_count`` is the caller's job (the engine's decoder raises)."""
    data = RECORD_WITH_NULLS + RECORD_WITH_LARGE_DELTAS[:-1]
    assert [r.offset_delta for r in UncompressedRecords.parse(data)] == [3]


headers = st.lists(st.fixed_dictionaries({"key": st.binary(max_size=8),
                                          "value": st.none() | st.binary(max_size=8)}), max_size=3)
bodies = st.fixed_dictionaries({
    "attributes": st.integers(-128, 127),
    "timestamp_delta": st.integers(-(2**63), 2**63 - 1),
    "offset_delta": st.integers(-(2**31), 2**31 - 1),
    "key": st.none() | st.binary(max_size=300),
    "value": st.none() | st.binary(max_size=300),
    "headers": headers,
})


@given(bodies)
def test_record_round_trip(body):
    data = Record.build(body)
    parsed = Record.parse(data)
    assert {k: parsed[k] for k in body if k != "headers"} == {k: body[k] for k in body if k != "headers"}
    assert [dict(key=h.key, value=h.value) for h in parsed.headers] == body["headers"]
    assert parsed.header_count == len(body["headers"])
    # the length prefix counts exactly the body bytes that follow it
    body_bytes = RecordBody.build(body)
    assert data.endswith(body_bytes)
    assert data[: len(data) - len(body_bytes)] == ZigZagVarInt.build(len(body_bytes))
