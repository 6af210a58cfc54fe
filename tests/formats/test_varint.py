"""Varints (spec §1.1, Kafka ``ByteUtils``): zig-zag varint/varlong and the unsigned varint.

Oracles: the spec's examples and size rule, kafka-python's independent zig-zag encoder
(``kafka.record.util.encode_varint``), and Kafka's decoder arithmetic (groups accumulated into a
Java ``int``/``long``, so bits past the width are dropped before zig-zag).
"""

from __future__ import annotations

import pytest
from construct import ConstructError, GreedyBytes, SizeofError, StreamError, Struct
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.util import encode_varint as kafka_python_encode_varint

from seglog_cli.formats.varint import (
    MAX_VARINT_BYTES,
    MAX_VARLONG_BYTES,
    UnsignedVarInt,
    VarintTooLong,
    ZigZagVarInt,
    ZigZagVarLong,
    zigzag_decode,
    zigzag_encode,
)

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT32_MAX = 2**32 - 1

int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)
uint32s = st.integers(0, UINT32_MAX)

SIGNED = [pytest.param(ZigZagVarInt, id="varint"), pytest.param(ZigZagVarLong, id="varlong")]
ALL = SIGNED + [pytest.param(UnsignedVarInt, id="unsigned")]


def spec_size(u: int) -> int:
    """§1.1: 1 byte if u < 2^7, 2 if u < 2^14, ... (7 payload bits per byte)."""
    size = 1
    while u >= 2 ** (7 * size):
        size += 1
    return size


def kafka_python(value: int) -> bytes:
    out = bytearray()
    kafka_python_encode_varint(value, out.append)
    return bytes(out)


# -- the spec's examples ----------------------------------------------------------------------

SPEC_EXAMPLES = [(0, "00"), (-1, "01"), (1, "02"), (-2, "03"), (63, "7e"), (64, "8001"),
                 (300, "d804")]


@pytest.mark.parametrize("schema", SIGNED)
@pytest.mark.parametrize("value, encoded", SPEC_EXAMPLES)
def test_spec_examples(schema, value, encoded):
    assert schema.build(value) == bytes.fromhex(encoded)
    assert schema.parse(bytes.fromhex(encoded)) == value


@pytest.mark.parametrize("value, encoded", [
    (0, "00"),
    (1, "01"),           # no zig-zag: 1 is 01, not 02
    (127, "7f"),
    (128, "8001"),
    (300, "ac02"),
    (UINT32_MAX, "ffffffff0f"),
])
def test_unsigned_examples(value, encoded):
    assert UnsignedVarInt.build(value) == bytes.fromhex(encoded)
    assert UnsignedVarInt.parse(bytes.fromhex(encoded)) == value


# -- extremes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("schema, value, encoded", [
    (ZigZagVarInt, INT32_MAX, "feffffff0f"),              # u = 2^32 - 2, 5 bytes
    (ZigZagVarInt, INT32_MIN, "ffffffff0f"),              # u = 2^32 - 1, 5 bytes
    (ZigZagVarLong, INT32_MAX, "feffffff0f"),             # same value, same bytes as varlong
    (ZigZagVarLong, INT64_MAX, "feffffffffffffffff01"),   # u = 2^64 - 2, 10 bytes
    (ZigZagVarLong, INT64_MIN, "ffffffffffffffffff01"),   # u = 2^64 - 1, 10 bytes
])
def test_extremes(schema, value, encoded):
    data = bytes.fromhex(encoded)
    assert schema.build(value) == data
    assert schema.parse(data) == value
    assert len(data) == (MAX_VARLONG_BYTES if abs(value) > INT32_MAX + 1 else MAX_VARINT_BYTES)


# -- decoder errors ---------------------------------------------------------------------------

@pytest.mark.parametrize("schema, encoded", [
    (ZigZagVarInt, "8080808080" "00"),        # 5th byte still has the continuation bit
    (UnsignedVarInt, "8080808080" "00"),
    (ZigZagVarInt, "ffffffffff" "ffff"),
    (ZigZagVarLong, "80808080808080808080" "00"),  # 10th byte still has the continuation bit
])
def test_too_long(schema, encoded):
    with pytest.raises(VarintTooLong):
        schema.parse(bytes.fromhex(encoded))


def test_too_long_is_a_stream_error():
    """The engine's error bridge catches ConstructError; VarintTooLong must be one."""
    assert issubclass(VarintTooLong, StreamError)
    with pytest.raises(StreamError):
        ZigZagVarInt.parse(bytes.fromhex("8080808080"))


@pytest.mark.parametrize("schema", ALL)
@pytest.mark.parametrize("encoded", ["", "80", "ffffff", "ffffffff"])
def test_truncated_input(schema, encoded):
    """Running out of bytes is a plain StreamError, not "too long"."""
    with pytest.raises(StreamError) as info:
        schema.parse(bytes.fromhex(encoded))
    assert not isinstance(info.value, VarintTooLong)


def test_truncated_varlong_after_nine_bytes():
    with pytest.raises(StreamError) as info:
        ZigZagVarLong.parse(bytes.fromhex("ff" * 9))
    assert not isinstance(info.value, VarintTooLong)


@pytest.mark.parametrize("schema", ALL)
def test_sizeof_is_an_error(schema):
    with pytest.raises(SizeofError):
        schema.sizeof()


# -- Kafka's truncation to the target width ---------------------------------------------------

@pytest.mark.parametrize("schema, encoded, value", [
    # 5-byte varint: the 5th group lands on bits 28-34; Kafka keeps bits 0-31 (u mod 2^32)
    (ZigZagVarInt, "ffffffff7f", INT32_MIN),     # u = 2^35 - 1 -> 0xffffffff -> -2^31
    (ZigZagVarInt, "ffffffff1f", INT32_MIN),     # u = 2^33 - 1 -> 0xffffffff
    (ZigZagVarInt, "feffffff7f", INT32_MAX),     # u = 2^35 - 2 -> 0xfffffffe -> 2^31 - 1
    (ZigZagVarInt, "8080808010", 0),             # u = 2^32     -> 0
    (ZigZagVarInt, "8080808070", 0),             # u = 7 * 2^32 -> 0
    (ZigZagVarInt, "8280808010", 1),             # u = 2^32 + 2 -> 2 -> 1
    (UnsignedVarInt, "ffffffff7f", UINT32_MAX),  # Kafka's int -1, the same 32 bits
    (UnsignedVarInt, "8180808010", 1),           # u = 2^32 + 1 -> 1
    # 10-byte varlong: the 10th group lands on bits 63-69; only bit 63 survives
    (ZigZagVarLong, "80808080808080808002", 0),          # u = 2^64     -> 0
    (ZigZagVarLong, "80808080808080808001", 2**62),      # u = 2^63     -> 2^62
    (ZigZagVarLong, "ffffffffffffffffff7f", INT64_MIN),  # u = 2^70 - 1 -> 2^64 - 1 -> -2^63
])
def test_bits_past_the_width_are_dropped(schema, encoded, value):
    assert schema.parse(bytes.fromhex(encoded)) == value


def test_five_byte_varint_reads_differently_as_varlong():
    """The same bytes are a different number at 64 bits: the width is part of the format."""
    data = bytes.fromhex("8080808010")
    assert ZigZagVarInt.parse(data) == 0
    assert ZigZagVarLong.parse(data) == 2**31


@pytest.mark.parametrize("schema", ALL)
def test_non_minimal_encoding_is_accepted(schema):
    """Kafka accepts padded encodings (80 00 is zero); the parser stops at the first final byte."""
    parsed = Struct("n" / schema, "rest" / GreedyBytes).parse(bytes.fromhex("8000" "05"))
    assert parsed.n == 0
    assert parsed.rest == b"\x05"


# -- round trips and sizes --------------------------------------------------------------------

def _check_round_trip(schema, value, u):
    data = schema.build(value)
    assert schema.parse(data) == value
    assert len(data) == spec_size(u)
    assert all(b & 0x80 for b in data[:-1]) and data[-1] < 0x80
    return data


@given(int32s)
def test_varint_round_trip(n):
    data = _check_round_trip(ZigZagVarInt, n, zigzag_encode(n, 32))
    assert len(data) <= MAX_VARINT_BYTES
    assert data == kafka_python(n)


@given(int64s)
def test_varlong_round_trip(n):
    data = _check_round_trip(ZigZagVarLong, n, zigzag_encode(n, 64))
    assert len(data) <= MAX_VARLONG_BYTES
    assert data == kafka_python(n)


@given(uint32s)
def test_unsigned_round_trip(n):
    data = _check_round_trip(UnsignedVarInt, n, n)
    assert len(data) <= MAX_VARINT_BYTES


@given(int32s)
def test_varint_and_varlong_agree_on_int32(n):
    assert ZigZagVarInt.build(n) == ZigZagVarLong.build(n)


@given(int64s)
def test_zigzag_mapping(n):
    """0, -1, 1, -2, 2, ... map to 0, 1, 2, 3, 4, ...: u = 2n for n >= 0, else -2n - 1."""
    u = zigzag_encode(n, 64)
    assert u == (2 * n if n >= 0 else -2 * n - 1)
    assert zigzag_decode(u) == n


@given(int32s)
def test_zigzag_mapping_32(n):
    u = zigzag_encode(n, 32)
    assert 0 <= u <= UINT32_MAX
    assert u == zigzag_encode(n, 64)
    assert zigzag_decode(u) == n


# -- building out-of-range values -------------------------------------------------------------

@pytest.mark.parametrize("schema, value", [
    (ZigZagVarInt, INT32_MAX + 1),
    (ZigZagVarInt, INT32_MIN - 1),
    (ZigZagVarLong, INT64_MAX + 1),
    (UnsignedVarInt, UINT32_MAX + 1),
    (UnsignedVarInt, -1),
])
def test_out_of_range_build_is_rejected(schema, value):
    with pytest.raises(ConstructError):
        schema.build(value)
