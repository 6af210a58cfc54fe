"""Kafka protocol primitive types for *flexible* message versions (KIP-482).

Used by the KRaft control records (§4) and, later, the internal-topic record schemas::

    compact string   unsigned varint (length + 1; 0 = null) + UTF-8 bytes
    compact bytes    unsigned varint (length + 1; 0 = null) + bytes
    compact array    unsigned varint (count + 1; 0 = null) + count elements
    uuid             16 bytes (printed by Kafka as URL-safe base64 without padding)
    tagged fields    unsigned varint count, then count x (unsigned varint tag,
                     unsigned varint size, size bytes)
    uint16           2 bytes big-endian, unsigned

All varints here are unsigned (no zig-zag), unlike those inside a v2 record.
"""

from __future__ import annotations

from construct import (
    Array,
    Bytes,
    Construct,
    GreedyRange,
    Int16ub,
    SizeofError,
    Struct,
    stream_read,
    stream_write,
    this,
)

from seglog_cli.formats.varint import UnsignedVarInt

Uuid = Bytes(16)
Uint16 = Int16ub


class CompactBytesType(Construct):
    """Compact (length + 1) bytes; ``None`` when the stored length is 0."""

    def _parse(self, stream, context, path):
        size = UnsignedVarInt._parsereport(stream, context, path) - 1
        if size < 0:
            return None
        return stream_read(stream, size, path)

    def _build(self, obj, stream, context, path):
        if obj is None:
            UnsignedVarInt._build(0, stream, context, path)
            return None
        data = bytes(obj)
        UnsignedVarInt._build(len(data) + 1, stream, context, path)
        stream_write(stream, data, len(data), path)
        return data

    def _sizeof(self, context, path):
        raise SizeofError("compact bytes have no fixed size", path=path)


class CompactStringType(CompactBytesType):
    """Compact (length + 1) UTF-8 string; ``None`` when the stored length is 0."""

    def _parse(self, stream, context, path):
        data = super()._parse(stream, context, path)
        return None if data is None else data.decode("utf-8", "replace")

    def _build(self, obj, stream, context, path):
        super()._build(None if obj is None else obj.encode("utf-8"), stream, context, path)
        return obj


class CompactArray(Construct):
    """Compact (count + 1) array of ``subcon``; ``None`` when the stored count is 0."""

    def __init__(self, subcon: Construct):
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream, context, path):
        count = UnsignedVarInt._parsereport(stream, context, path) - 1
        if count < 0:
            return None
        return [self.subcon._parsereport(stream, context, path) for _ in range(count)]

    def _build(self, obj, stream, context, path):
        if obj is None:
            UnsignedVarInt._build(0, stream, context, path)
            return None
        UnsignedVarInt._build(len(obj) + 1, stream, context, path)
        return [self.subcon._build(item, stream, context, path) for item in obj]

    def _sizeof(self, context, path):
        raise SizeofError("compact arrays have no fixed size", path=path)


CompactBytes = CompactBytesType()
CompactString = CompactStringType()

TaggedField = Struct(
    "tag" / UnsignedVarInt,
    "size" / UnsignedVarInt,
    "data" / Bytes(this.size),
)

TaggedFields = Struct(
    "count" / UnsignedVarInt,
    "fields" / Array(this.count, TaggedField),
)

EMPTY_TAGGED_FIELDS = {"count": 0, "fields": []}

__all__ = [
    "CompactArray",
    "CompactBytes",
    "CompactString",
    "GreedyRange",
    "TaggedFields",
    "Uint16",
    "Uuid",
    "EMPTY_TAGGED_FIELDS",
]
