"""Legacy message sets, magic v0 and v1 (Kafka ``LegacyRecord``), spec §6.

Log entry (the 12-byte "log overhead" followed by one message)::

    offset width field         notes
    ------ ----- ------------- ------------------------------------------------------------
         0     8 offset        int64; for a compressed wrapper, the offset of the LAST inner message
         8     4 message_size  int32, size of the message that follows (>= 14 v0, >= 22 v1)
        12     . message

Message::

    offset width field        v0 v1  notes
    ------ ----- ------------ -- --  ---------------------------------------------------------
         0     4 crc           x  x  uint32, CRC-32 (IEEE) of bytes [4, end of message)
         4     1 magic         x  x  0 or 1 (byte 16 of the log entry, as in every format)
         5     1 attributes    x  x  bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4),
                                     bit 3 timestamp type (v1 only)
         6     8 timestamp        x  int64
    6 / 14     . key           x  x  int32 length + bytes, -1 = null
         .     . value         x  x  int32 length + bytes, -1 = null

A compressed wrapper has codec != 0, a null key, and a value holding one compressed stream of
ordinary (uncompressed) log entries, the inner messages. v1 inner offsets are relative
(0, 1, 2, ...), v0 inner offsets absolute.
"""

from __future__ import annotations

from construct import (
    BitsInteger,
    BitStruct,
    FixedSized,
    GreedyRange,
    If,
    Int8sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Padding,
    Struct,
    this,
)

from seglog_cli.formats import layout
from seglog_cli.formats.fields import NullableBytes

MAGIC_V0 = 0
MAGIC_V1 = 1

LOG_OVERHEAD = 12
CRC_OFFSET = 0  # inside the message
MAGIC_OFFSET = 4
ATTRIBUTES_OFFSET = 5
TIMESTAMP_OFFSET = 6
CRC_COVERED_START = MAGIC_OFFSET
KEY_SIZE_OFFSET_V0 = TIMESTAMP_OFFSET
KEY_SIZE_OFFSET_V1 = TIMESTAMP_OFFSET + 8
RECORD_OVERHEAD_V0 = KEY_SIZE_OFFSET_V0 + 4 + 4  # 14
RECORD_OVERHEAD_V1 = KEY_SIZE_OFFSET_V1 + 4 + 4  # 22

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08

LegacyAttributes = BitStruct(
    Padding(4),
    "timestamp_type" / BitsInteger(1),
    "compression" / BitsInteger(3),
)

LegacyMessage = Struct(
    "crc" / Int32ub,
    "magic" / Int8sb,
    "attributes" / LegacyAttributes,
    "timestamp" / If(this.magic >= MAGIC_V1, Int64sb),
    "key" / NullableBytes(Int32sb),
    "value" / NullableBytes(Int32sb),
)

LogOverhead = Struct(
    "offset" / Int64sb,
    "message_size" / Int32sb,
)

LegacyEntry = Struct(
    "offset" / Int64sb,
    "message_size" / Int32sb,
    "message" / FixedSized(this.message_size, LegacyMessage),
)

# The decompressed value of a wrapper: inner log entries back to back.
LegacyMessageSet = GreedyRange(LegacyEntry)

assert (LogOverhead.sizeof() + MAGIC_OFFSET, RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1, COMPRESSION_CODEC_MASK) == (
    layout.MAGIC_OFFSET, layout.RECORD_OVERHEAD_V0, layout.RECORD_OVERHEAD_V1, layout.COMPRESSION_CODEC_MASK)
