"""Record batch, magic v2 (Kafka ``DefaultRecordBatch`` / ``DefaultRecord``), spec §2-§3.

Batch header, 61 bytes, big-endian::

    offset width field                   notes
    ------ ----- ----------------------- -------------------------------------------------------
         0     8 base_offset             int64, first offset of the batch
         8     4 length                  int32, bytes after this field = batch size - 12 (>= 49)
        12     4 partition_leader_epoch  int32, -1 if never set           (not covered by CRC)
        16     1 magic                   int8, 2                          (not covered by CRC)
        17     4 crc                     uint32, CRC-32C of bytes [21, 12 + length)
        21     2 attributes              int16, only the low byte is used (see below)
        23     4 last_offset_delta       int32, last_offset - base_offset
        27     8 base_timestamp          int64 (the delete horizon when bit 6 is set)
        35     8 max_timestamp           int64 (LogAppendTime: the broker's append time)
        43     8 producer_id             int64, -1 = none
        51     2 producer_epoch          int16, -1 = none
        53     4 base_sequence           int32, -1 = none
        57     4 records_count           int32
        61     . records                 records_count records (§3), compressed as one stream
                                         when the codec is not 0 (§5)

Attributes, low byte (byte 22 of the batch); the high byte is ignored on read::

    bit 0-2  compression   0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd (5-7 invalid)
    bit 3    timestamp_type 0 CreateTime, 1 LogAppendTime
    bit 4    is_transactional
    bit 5    is_control
    bit 6    has_delete_horizon (KIP-534, base_timestamp holds the horizon)
    bit 7    unused

Record (v2), back to back with no padding; every varint is zig-zag::

    length            varint   bytes from ``attributes`` to the end of the last header
    attributes        int8     unused, written 0
    timestamp_delta   varlong  relative to base_timestamp
    offset_delta      varint   relative to base_offset
    key               varint length + bytes, negative length = null
    value             varint length + bytes, negative length = null
    header_count      varint   >= 0
    headers           header_count x (key: varint length >= 0 + UTF-8 bytes,
                                      value: varint length + bytes, negative = null)

Schemas expose the stored CRC; they never verify it (the engine judges).
"""

from __future__ import annotations

from construct import (
    Array,
    BitsInteger,
    BitStruct,
    Bytes,
    Flag,
    GreedyRange,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Padding,
    Prefixed,
    Rebuild,
    Struct,
    len_,
    this,
)

from seglog_cli.formats import layout
from seglog_cli.formats.fields import NullableBytes
from seglog_cli.formats.varint import ZigZagVarInt, ZigZagVarLong

MAGIC_V2 = 2

# Byte positions inside a batch (the DefaultRecordBatch *_OFFSET chain).
BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = BASE_OFFSET_OFFSET + 8
PARTITION_LEADER_EPOCH_OFFSET = LENGTH_OFFSET + 4
MAGIC_OFFSET = PARTITION_LEADER_EPOCH_OFFSET + 4
CRC_OFFSET = MAGIC_OFFSET + 1
ATTRIBUTES_OFFSET = CRC_OFFSET + 4
LAST_OFFSET_DELTA_OFFSET = ATTRIBUTES_OFFSET + 2
BASE_TIMESTAMP_OFFSET = LAST_OFFSET_DELTA_OFFSET + 4
MAX_TIMESTAMP_OFFSET = BASE_TIMESTAMP_OFFSET + 8
PRODUCER_ID_OFFSET = MAX_TIMESTAMP_OFFSET + 8
PRODUCER_EPOCH_OFFSET = PRODUCER_ID_OFFSET + 8
BASE_SEQUENCE_OFFSET = PRODUCER_EPOCH_OFFSET + 2
RECORDS_COUNT_OFFSET = BASE_SEQUENCE_OFFSET + 4
RECORDS_OFFSET = RECORDS_COUNT_OFFSET + 4

LOG_OVERHEAD = 12  # base_offset + length: the part not counted by ``length``
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET  # 61
CRC_COVERED_START = ATTRIBUTES_OFFSET  # 21
MIN_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49

# Attribute masks on the low byte.
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

# Largest fixed overhead of one record without key, value and headers: 5 + 1 + 10 + 5.
MAX_RECORD_OVERHEAD = 21

BatchAttributes = BitStruct(
    Padding(8),  # high byte: ignored on read, written 0
    "unused" / Flag,
    "has_delete_horizon" / Flag,
    "is_control" / Flag,
    "is_transactional" / Flag,
    "timestamp_type" / BitsInteger(1),
    "compression" / BitsInteger(3),
)

RecordBatchHeader = Struct(
    "base_offset" / Int64sb,
    "length" / Int32sb,
    "partition_leader_epoch" / Int32sb,
    "magic" / Int8sb,
    "crc" / Int32ub,
    "attributes" / BatchAttributes,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "records_count" / Int32sb,
)
assert (RecordBatchHeader.sizeof(), LOG_OVERHEAD, MAGIC_OFFSET, COMPRESSION_CODEC_MASK) == (
    layout.RECORD_BATCH_OVERHEAD, layout.LOG_OVERHEAD, layout.MAGIC_OFFSET, layout.COMPRESSION_CODEC_MASK)

RecordBatch = Struct(
    "header" / RecordBatchHeader,
    # Everything after the header: the records, or one compressed stream of them.
    "records_data" / Bytes(this.header.length - MIN_LENGTH),
)

RecordHeader = Struct(
    "key" / NullableBytes(ZigZagVarInt),  # Kafka rejects a negative header key length
    "value" / NullableBytes(ZigZagVarInt),
)

RecordBody = Struct(
    "attributes" / Int8sb,
    "timestamp_delta" / ZigZagVarLong,
    "offset_delta" / ZigZagVarInt,
    "key" / NullableBytes(ZigZagVarInt),
    "value" / NullableBytes(ZigZagVarInt),
    "header_count" / Rebuild(ZigZagVarInt, len_(this.headers)),
    "headers" / Array(this.header_count, RecordHeader),
)

Record = Prefixed(ZigZagVarInt, RecordBody)

UncompressedRecords = GreedyRange(Record)

__all__ = [
    "BatchAttributes",
    "Record",
    "RecordBatch",
    "RecordBatchHeader",
    "RecordBody",
    "RecordHeader",
    "UncompressedRecords",
]
