"""Legacy message sets, magic v0 and v1 (spec §6), on the spec's vector B (§21)."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seglog_cli.formats import legacy, record_batch
from seglog_cli.formats.legacy import LegacyAttributes, LegacyEntry, LegacyMessage, LegacyMessageSet, LogOverhead

# §21 B: v1 message, uncompressed, offset 7 (36 bytes)
VECTOR_B = bytes.fromhex(
    "0000000000000007"  # offset 7
    "00000018"          # message_size 24
    "bf070c1c"          # crc: CRC-32 (IEEE) of the next 20 bytes = 3204910108
    "01"                # magic 1
    "00"                # attributes: codec none, CreateTime
    "0000015d3ef79800"  # timestamp 1500000000000
    "00000001" "6b"     # key length 1, "k"
    "00000001" "76"     # value length 1, "v"
)

# a v0 message: no timestamp, so the key length follows the attributes directly (28 bytes)
V0_ENTRY = bytes.fromhex(
    "0000000000000003"  # offset 3
    "00000010"          # message_size 16 (= 14 + 1 + 1)
    "1fecd70a"          # crc: CRC-32 of the next 12 bytes
    "00"                # magic 0
    "00"                # attributes: codec none (v0 has no timestamp type)
    "00000001" "6b"     # key length 1, "k"
    "00000001" "76"     # value length 1, "v"
)

# v1 with a null key and a null value: the smallest v1 message (34 bytes)
V1_NULLS = bytes.fromhex(
    "0000000000000000"  # offset 0
    "00000016"          # message_size 22 = RECORD_OVERHEAD_V1
    "46f14185"          # crc
    "01"                # magic 1
    "08"                # attributes: codec none, LogAppendTime (bit 3)
    "0000018bcfe56800"  # timestamp 1700000000000
    "ffffffff"          # key length -1: null
    "ffffffff"          # value length -1: null
)


def crc_of(entry: bytes) -> int:
    """CRC-32 (IEEE) of the message from its magic byte on: entry bytes [16, end)."""
    return zlib.crc32(entry[legacy.LOG_OVERHEAD + legacy.CRC_COVERED_START:])


# -- layout constants -------------------------------------------------------------------------

def test_overheads():
    assert legacy.LOG_OVERHEAD == LogOverhead.sizeof() == 12
    assert legacy.RECORD_OVERHEAD_V0 == 14  # crc 4 + magic 1 + attributes 1 + key len 4 + value len 4
    assert legacy.RECORD_OVERHEAD_V1 == 22  # + timestamp 8
    assert (legacy.MAGIC_OFFSET, legacy.ATTRIBUTES_OFFSET, legacy.TIMESTAMP_OFFSET) == (4, 5, 6)
    assert (legacy.KEY_SIZE_OFFSET_V0, legacy.KEY_SIZE_OFFSET_V1) == (6, 14)


def test_magic_is_byte_16_in_every_format():
    assert legacy.LOG_OVERHEAD + legacy.MAGIC_OFFSET == record_batch.MAGIC_OFFSET == 16
    assert VECTOR_B[16] == 1 and V0_ENTRY[16] == 0


@pytest.mark.parametrize("magic, timestamp, overhead", [
    (0, None, legacy.RECORD_OVERHEAD_V0),
    (1, -1, legacy.RECORD_OVERHEAD_V1),
])
def test_record_overhead_is_the_size_of_an_empty_message(magic, timestamp, overhead):
    message = dict(crc=0, magic=magic, attributes=dict(timestamp_type=0, compression=0),
                   timestamp=timestamp, key=None, value=None)
    assert len(LegacyMessage.build(message)) == overhead


# -- vector B (v1) ----------------------------------------------------------------------------

def test_vector_b():
    assert VECTOR_B.hex() == ("000000000000000700000018bf070c1c01000000015d3ef79800000000016b"
                              "0000000176")  # §21 B "Full:"
    entry = LegacyEntry.parse(VECTOR_B)
    assert (entry.offset, entry.message_size) == (7, 24)
    message = entry.message
    assert message.crc == 3204910108 == crc_of(VECTOR_B)
    assert message.magic == legacy.MAGIC_V1
    assert (message.attributes.timestamp_type, message.attributes.compression) == (0, 0)
    assert message.timestamp == 1500000000000
    assert (message.key, message.value) == (b"k", b"v")
    assert len(VECTOR_B) == 36 == legacy.LOG_OVERHEAD + legacy.RECORD_OVERHEAD_V1 + 1 + 1
    assert LegacyEntry.build(entry) == VECTOR_B


# -- v0 ---------------------------------------------------------------------------------------

def test_v0_message_parse():
    entry = LegacyEntry.parse(V0_ENTRY)
    assert (entry.offset, entry.message_size) == (3, 16)
    assert entry.message.crc == crc_of(V0_ENTRY)
    assert entry.message.magic == legacy.MAGIC_V0
    assert entry.message.timestamp is None  # no timestamp field at all
    assert (entry.message.key, entry.message.value) == (b"k", b"v")


def test_v0_message_build():
    message = dict(crc=0x1FECD70A, magic=0, attributes=dict(timestamp_type=0, compression=0),
                   timestamp=None, key=b"k", value=b"v")
    assert LegacyEntry.build(dict(offset=3, message_size=16, message=message)) == V0_ENTRY


# -- nulls ------------------------------------------------------------------------------------

def test_null_key_and_value():
    entry = LegacyEntry.parse(V1_NULLS)
    assert entry.message.key is None and entry.message.value is None
    assert entry.message.attributes.timestamp_type == 1
    assert entry.message.crc == crc_of(V1_NULLS)
    assert LegacyEntry.build(entry) == V1_NULLS


def test_empty_is_not_null():
    message = dict(crc=0, magic=1, attributes=dict(timestamp_type=0, compression=0), timestamp=0,
                   key=b"", value=b"")
    data = LegacyMessage.build(message)
    assert data[14:] == bytes.fromhex("00000000" "00000000")  # two zero lengths, not -1
    assert LegacyMessage.parse(data).key == b""


# -- attributes -------------------------------------------------------------------------------

def test_attribute_bits():
    assert (legacy.COMPRESSION_CODEC_MASK, legacy.TIMESTAMP_TYPE_MASK) == (0x07, 0x08)
    for raw in range(256):
        attributes = LegacyAttributes.parse(bytes([raw]))
        assert attributes.compression == raw & 0x07
        assert attributes.timestamp_type == (raw & 0x08) >> 3
        assert LegacyAttributes.build(attributes) == bytes([raw & 0x0F])  # bits 4-7: written 0


# -- a compressed wrapper ---------------------------------------------------------------------

def inner_entry(offset: int, magic: int, timestamp: int, value: bytes) -> bytes:
    message = dict(crc=0, magic=magic, attributes=dict(timestamp_type=0, compression=0),
                   timestamp=timestamp if magic else None, key=None, value=value)
    body = bytearray(LegacyMessage.build(message))
    body[0:4] = zlib.crc32(body[4:]).to_bytes(4, "big")
    return LogOverhead.build(dict(offset=offset, message_size=len(body))) + bytes(body)


@pytest.mark.parametrize("magic, inner_offsets", [
    (0, [40, 41, 42]),  # v0: inner offsets are absolute
    (1, [0, 1, 2]),     # v1: inner offsets are relative; the wrapper holds the last absolute one
])
def test_gzip_wrapper(magic, inner_offsets):
    values = [b"a", b"bb", b"ccc"]
    inner = b"".join(inner_entry(o, magic, 1700000000000 + i, v)
                     for i, (o, v) in enumerate(zip(inner_offsets, values)))
    compressed = gzip.compress(inner)
    wrapper = dict(crc=0, magic=magic, attributes=dict(timestamp_type=0, compression=1),
                   timestamp=1700000000002 if magic else None, key=None, value=compressed)
    message = LegacyMessage.build(wrapper)
    entry = LogOverhead.build(dict(offset=42, message_size=len(message))) + message

    parsed = LegacyEntry.parse(entry)
    assert parsed.offset == 42  # the absolute offset of the LAST inner message
    assert parsed.message.attributes.compression == 1  # gzip
    assert entry[legacy.LOG_OVERHEAD + legacy.ATTRIBUTES_OFFSET] & legacy.COMPRESSION_CODEC_MASK == 1
    assert parsed.message.key is None
    assert parsed.message.value == compressed

    stream = zlib.decompress(parsed.message.value, wbits=31)  # a gzip member, header and all
    inner_entries = LegacyMessageSet.parse(stream)
    assert [e.offset for e in inner_entries] == inner_offsets
    assert [e.message.value for e in inner_entries] == values
    assert all(e.message.attributes.compression == 0 for e in inner_entries)
    assert all(e.message.crc == zlib.crc32(stream[start + 16:start + 12 + e.message_size])
               for e, start in zip(inner_entries, _starts(inner_entries)))
    assert LegacyMessageSet.build(inner_entries) == inner

    # §6.4: absolute offset = wrapper offset - last inner offset + inner offset (v1)
    base = parsed.offset - inner_entries[-1].offset if magic == 1 else 0
    assert [base + e.offset for e in inner_entries] == [40, 41, 42]


def _starts(entries):
    position = 0
    for e in entries:
        yield position
        position += legacy.LOG_OVERHEAD + e.message_size


# -- round trip -------------------------------------------------------------------------------

messages = st.builds(
    lambda magic, ts_type, codec, timestamp, key, value: dict(
        crc=0, magic=magic, attributes=dict(timestamp_type=ts_type, compression=codec),
        timestamp=timestamp if magic else None, key=key, value=value),
    st.sampled_from([0, 1]), st.integers(0, 1), st.integers(0, 7),
    st.integers(-(2**63), 2**63 - 1), st.none() | st.binary(max_size=64),
    st.none() | st.binary(max_size=64))


@given(st.integers(-(2**63), 2**63 - 1), messages)
def test_entry_round_trip(offset, message):
    body = LegacyMessage.build(message)
    overhead = legacy.RECORD_OVERHEAD_V1 if message["magic"] else legacy.RECORD_OVERHEAD_V0
    assert len(body) == overhead + len(message["key"] or b"") + len(message["value"] or b"")
    data = LegacyEntry.build(dict(offset=offset, message_size=len(body), message=message))
    parsed = LegacyEntry.parse(data)
    assert parsed.offset == offset
    assert parsed.message_size == len(body)
    for field in ("crc", "magic", "timestamp", "key", "value"):
        assert parsed.message[field] == message[field]
    assert dict(timestamp_type=parsed.message.attributes.timestamp_type,
                compression=parsed.message.attributes.compression) == message["attributes"]
