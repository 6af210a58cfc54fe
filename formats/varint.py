"""Variable-length integers used by Kafka's on-disk formats.

Layout (spec §1.1, Kafka ``ByteUtils``)::

    zig-zag varint  (32-bit)  u = (n << 1) ^ (n >> 31), 7 bits per byte, least significant
                              group first, high bit 0x80 = "more bytes follow", at most 5 bytes
    zig-zag varlong (64-bit)  u = (n << 1) ^ (n >> 63), same grouping, at most 10 bytes
    unsigned varint           the same 7-bit grouping without zig-zag, at most 5 bytes; used only
                              by Kafka's *flexible* message encodings (compact arrays, strings,
                              tagged fields), never inside a v2 record

Every varint inside a v2 record, including lengths and counts, is zig-zag encoded.

Examples: 0 -> ``00``, -1 -> ``01``, 1 -> ``02``, -2 -> ``03``, 63 -> ``7e``, 64 -> ``80 01``,
300 -> ``d8 04``.

Decoder rules mirrored from Kafka: a varint whose 5th byte still has the continuation bit set is an
error ("Varint is too long"); a varlong with more than 10 groups is an error.
"""

from __future__ import annotations

from construct import Construct, IntegerError, SizeofError, StreamError, stream_read, stream_write

MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


class VarintTooLong(StreamError):
    """A varint ran past its maximum width (Kafka: "Varint is too long")."""


def zigzag_encode(value: int, bits: int) -> int:
    return (value << 1) ^ (value >> (bits - 1))


def zigzag_decode(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


def encode_unsigned(raw: int) -> bytes:
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


class _Varint(Construct):
    """Base for the three varint flavours; subclasses set the width and zig-zag use."""

    max_bytes = MAX_VARINT_BYTES
    bits = 32
    zigzag = True

    def _parse(self, stream, context, path):
        raw = 0
        shift = 0
        for _ in range(self.max_bytes):
            byte = stream_read(stream, 1, path)[0]
            raw |= (byte & 0x7F) << shift
            if byte < 0x80:
                raw &= (1 << self.bits) - 1  # Kafka accumulates into an int/long: extra bits drop
                return zigzag_decode(raw) if self.zigzag else raw
            shift += 7
        raise VarintTooLong(f"varint longer than {self.max_bytes} bytes", path=path)

    def _build(self, obj, stream, context, path):
        if not isinstance(obj, int) or not self._low <= obj <= self._high:
            raise IntegerError(f"{obj!r} does not fit a {self.bits}-bit "
                               f"{'signed' if self.zigzag else 'unsigned'} varint", path=path)
        raw = zigzag_encode(obj, self.bits) & ((1 << self.bits) - 1) if self.zigzag else obj
        data = encode_unsigned(raw)
        stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError("varints have no fixed size", path=path)


class ZigZagVarIntType(_Varint):
    """Signed 32-bit zig-zag varint (``ByteUtils.readVarint``)."""

    _low, _high = -(2**31), 2**31 - 1


class ZigZagVarLongType(_Varint):
    """Signed 64-bit zig-zag varlong (``ByteUtils.readVarlong``)."""

    max_bytes = MAX_VARLONG_BYTES
    bits = 64
    _low, _high = -(2**63), 2**63 - 1


class UnsignedVarIntType(_Varint):
    """Unsigned 32-bit varint (``ByteUtils.readUnsignedVarint``), flexible message encodings only."""

    zigzag = False
    _low, _high = 0, 2**32 - 1


ZigZagVarInt = ZigZagVarIntType()
ZigZagVarLong = ZigZagVarLongType()
UnsignedVarInt = UnsignedVarIntType()
