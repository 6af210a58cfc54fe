"""Codecs in Kafka's flavours (§5): seglog's ``compress``/``decompress`` against each other, against
kafka-python's codec functions, against the reference libraries' own framings and against Kafka's
error messages.

Oracles that share no code with seglog:

* kafka-python 3.0.12 ``kafka.codec`` (gzip via ``gzip.GzipFile``, xerial snappy, LZ4 frames via
  ``lz4.frame``, its magic-0 "old kafka" LZ4 variant, zstd via ``stream_reader``);
* ``lz4.frame`` (liblz4's frame encoder: header checksum, block/content checksums, block sizes);
* liblz4's XXH32, read back as the content checksum of an ``lz4.frame`` frame
  (:func:`xxh32_by_lz4`), and xxHash's published sanity vectors;
* a real ``java.util.zip`` when a JDK is on PATH (gzip header and concatenated members).

kafka-python's magic-0 LZ4 functions need the ``xxhash`` package, which is not a test dependency:
:class:`Lz4Xxhash` stands in for it, hashing with liblz4's XXH32 (never with seglog's).
"""

from __future__ import annotations

import gzip
import random
import shutil
import struct
import subprocess
import zlib
from functools import lru_cache

import cramjam
import kafka.codec as kafka_codec
import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog_cli.storage.log.codecs import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    DecompressionError,
    compress,
    decompress,
    xxh32,
)

KIB = 1024
XERIAL_HEADER = bytes.fromhex("82534e41505059000000000100000001")  # magic, version 1, compat 1
LZ4_MAGIC = bytes.fromhex("04224d18")  # 0x184D2204 little-endian
JAVA_GZIP_HEADER = bytes.fromhex("1f8b08000000000000ff")  # GZIPOutputStream.writeHeader, JDK 16+

# codec -> the magics it may appear under (zstd is v2-only, §5.4)
CODEC_MAGICS = [(GZIP, 0), (GZIP, 1), (GZIP, 2), (SNAPPY, 0), (SNAPPY, 1), (SNAPPY, 2),
                (LZ4, 0), (LZ4, 1), (LZ4, 2), (ZSTD, 2)]
CODEC_IDS = {GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

requires_kafka_python_snappy = pytest.mark.skipif(
    not kafka_codec.has_snappy(), reason="kafka-python's snappy functions need python-snappy")


def _codec_id(pair) -> str:
    codec, magic = pair
    return f"{CODEC_IDS[codec]}-v{magic}"


@lru_cache(maxsize=256)
def payload(size: int, seed: int = 0, kind: str = "text") -> bytes:
    """Deterministic test data: ``text`` compresses well, ``random`` not at all, ``mixed`` both."""
    rng = random.Random(seed * 7919 + size)
    if kind == "random":
        return rng.randbytes(size)
    if kind == "mixed":
        half = size // 2
        return (rng.randbytes(half) + payload(size - half, seed, "text"))[:size]
    words = [b"kafka", b"segment", b"offset", b"\x00\x01", b"batch", b"record", b"lz4", b" "]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words)
    return bytes(out[:size])


# Sizes on both sides of the chunk sizes Kafka's writers use: 32 KiB xerial snappy chunks,
# 64 KiB LZ4 blocks.
BOUNDARY_SIZES = [0, 1, 15, 16, 17, 32 * KIB - 1, 32 * KIB, 32 * KIB + 1, 64 * KIB - 1, 64 * KIB,
                  64 * KIB + 1, 3 * 64 * KIB + 5]


def xxh32_by_lz4(data: bytes) -> int:
    """liblz4's XXH32 (seed 0) of ``data``: the content checksum of an LZ4 frame holding it."""
    frame = lz4.frame.compress(data, content_checksum=True, store_size=False, block_linked=False)
    return struct.unpack("<I", frame[-4:])[0]


class Lz4Xxhash:
    """The slice of the ``xxhash`` module kafka-python's magic-0 LZ4 functions use
    (``xxhash.xxh32(data).digest()``, big-endian), computed by liblz4."""

    class xxh32:  # noqa: N801 - mirrors xxhash.xxh32
        def __init__(self, data):
            self._value = xxh32_by_lz4(bytes(data))

        def digest(self) -> bytes:
            return struct.pack(">I", self._value)


@pytest.fixture
def old_kafka_lz4(monkeypatch):
    """Make kafka-python's ``lz4_encode_old_kafka``/``lz4_decode_old_kafka`` usable."""
    if kafka_codec.xxhash is None:
        monkeypatch.setattr(kafka_codec, "xxhash", Lz4Xxhash)
    return kafka_codec


def lz4_blocks(frame: bytes) -> list[tuple[int, bool]]:
    """(stored size, compressed?) of each data block of a frame without optional fields."""
    assert frame[:4] == LZ4_MAGIC and frame[4] & 0x1C == 0
    pos, blocks = 7, []
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word == 0:
            assert pos == len(frame)
            return blocks
        size = word & 0x7FFFFFFF
        blocks.append((size, not word & 0x80000000))
        pos += size


def xerial_chunks(stream: bytes) -> list[bytes]:
    assert stream[:16] == XERIAL_HEADER
    pos, chunks = 16, []
    while pos < len(stream):
        (size,) = struct.unpack_from(">i", stream, pos)
        chunks.append(stream[pos + 4:pos + 4 + size])
        pos += 4 + size
    return chunks


# -- our compress -> our decompress ----------------------------------------------------------

@pytest.mark.parametrize("codec_magic", CODEC_MAGICS, ids=_codec_id)
@pytest.mark.parametrize("size", BOUNDARY_SIZES)
def test_round_trip_at_block_boundaries(codec_magic, size):
    codec, magic = codec_magic
    for kind in ("text", "random"):
        data = payload(size, 1, kind)
        assert decompress(codec, compress(codec, data, magic), magic) == data


def _large(seed: int, size: int, kind: str) -> bytes:
    return payload.__wrapped__(size, seed, kind)  # not cached: every example is new


LARGE = st.builds(_large, st.integers(0, 2**32), st.integers(30 * KIB, 200 * KIB),
                  st.sampled_from(["text", "random", "mixed"]))


@pytest.mark.parametrize("codec_magic", CODEC_MAGICS, ids=_codec_id)
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.one_of(st.binary(max_size=3000), LARGE))
def test_round_trip_property(codec_magic, data):
    codec, magic = codec_magic
    assert decompress(codec, compress(codec, data, magic), magic) == data


def test_none_is_identity_and_unknown_ids_are_rejected():
    assert compress(NONE, b"abc") == b"abc" and decompress(NONE, memoryview(b"abc"), 2) == b"abc"
    for codec in (5, 6, 7):
        with pytest.raises(DecompressionError, match=f"Unknown compression type id: {codec}"):
            decompress(codec, b"x", 2)


# -- the exact framing Kafka writes ----------------------------------------------------------

def test_gzip_header_is_gzip_output_stream_header():
    stream = compress(GZIP, payload(1000))
    assert stream[:10] == JAVA_GZIP_HEADER
    assert struct.unpack("<II", stream[-8:]) == (zlib.crc32(payload(1000)), 1000)


def test_xerial_snappy_framing_uses_32_kib_chunks():
    data = payload(100 * KIB, 2, "mixed")
    stream = compress(SNAPPY, data)
    assert stream[:16] == XERIAL_HEADER
    sizes = [len(cramjam.snappy.decompress_raw(chunk)) for chunk in xerial_chunks(stream)]
    assert sizes == [32 * KIB, 32 * KIB, 32 * KIB, 4 * KIB]
    assert compress(SNAPPY, b"") == XERIAL_HEADER


@pytest.mark.parametrize("magic", [1, 2])
def test_lz4_header_equals_liblz4_for_kafkas_flags(magic):
    """FLG 0x60 (v01, independent blocks), BD 0x40 (64 KiB) and the HC byte liblz4 computes."""
    data = payload(10 * KIB)
    reference = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                   store_size=False, content_checksum=False)
    assert reference[:6] == LZ4_MAGIC + bytes.fromhex("6040")
    assert compress(LZ4, data, magic)[:7] == reference[:7]


def test_lz4_magic0_header_checksum_covers_the_frame_magic():
    """KIP-57: magic-0 wrappers hash magic+FLG+BD (6 bytes) instead of FLG+BD."""
    header = compress(LZ4, payload(100), 0)[:7]
    broken = (xxh32_by_lz4(LZ4_MAGIC + b"\x60\x40") >> 8) & 0xFF
    correct = (xxh32_by_lz4(b"\x60\x40") >> 8) & 0xFF
    assert broken != correct
    assert header == LZ4_MAGIC + bytes((0x60, 0x40, broken))


def test_lz4_magic0_header_equals_kafka_pythons_old_kafka_header(old_kafka_lz4):
    data = payload(5000)
    assert compress(LZ4, data, 0)[:7] == old_kafka_lz4.lz4_encode_old_kafka(data)[:7]


@pytest.mark.parametrize("magic", [0, 2])
def test_lz4_blocks_are_at_most_64_kib_and_incompressible_ones_are_stored(magic):
    text, noise = payload(128 * KIB, 3), payload(92 * KIB, 3, "random")
    blocks = lz4_blocks(compress(LZ4, text + noise, magic))
    # 220 KiB of input: two 64 KiB blocks of text, then 64 KiB and 28 KiB of noise, stored raw.
    assert len(blocks) == 4
    assert all(size <= 64 * KIB for size, _ in blocks)
    assert [compressed for _, compressed in blocks] == [True, True, False, False]
    assert [size for size, compressed in blocks if not compressed] == [64 * KIB, 28 * KIB]


def test_zstd_frame_has_no_content_size_and_no_checksum():
    params = zstandard.get_frame_parameters(compress(ZSTD, payload(50 * KIB)))
    assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert not params.has_checksum


# -- kafka-python's encoders -> our decoder, our encoders -> kafka-python's decoders ---------

CROSS_DATA = [b"", b"x", payload(40 * KIB, 4), payload(200 * KIB, 5, "mixed"), payload(70 * KIB, 6, "random")]
CROSS_IDS = ["empty", "1B", "40KiB-text", "200KiB-mixed", "70KiB-random"]


@pytest.mark.parametrize("data", CROSS_DATA, ids=CROSS_IDS)
def test_kafka_python_gzip_both_ways(data):
    assert decompress(GZIP, kafka_codec.gzip_encode(data), 2) == data
    assert kafka_codec.gzip_decode(compress(GZIP, data)) == data


@requires_kafka_python_snappy
@pytest.mark.parametrize("data", CROSS_DATA, ids=CROSS_IDS)
def test_kafka_python_xerial_snappy_both_ways(data):
    for magic in (0, 1, 2):
        assert decompress(SNAPPY, kafka_codec.snappy_encode(data), magic) == data
    assert decompress(SNAPPY, kafka_codec.snappy_encode(data, xerial_blocksize=1000), 2) == data
    ours = compress(SNAPPY, data)
    if data:
        assert kafka_codec.snappy_decode(ours) == data
    else:
        # Known kafka-python difference: a header-only xerial stream (what SnappyOutputStream
        # writes for no input) is not "> 16 bytes", so kafka-python feeds it to raw snappy and
        # fails; snappy-java's SnappyInputStream reads it as an empty stream (§5.2), as we do.
        assert decompress(SNAPPY, ours, 2) == b""
        with pytest.raises(kafka_codec.snappy.UncompressError):
            kafka_codec.snappy_decode(ours)


@requires_kafka_python_snappy
@pytest.mark.parametrize("data", [d for d in CROSS_DATA if d], ids=CROSS_IDS[1:])
def test_kafka_python_raw_snappy_is_read_by_the_compatibility_path(data):
    raw = kafka_codec.snappy_encode(data, xerial_compatible=False)
    assert raw[:8] != XERIAL_HEADER[:8]
    assert decompress(SNAPPY, raw, 2) == data


@pytest.mark.parametrize("data", CROSS_DATA, ids=CROSS_IDS)
def test_kafka_python_lz4_magic_1_and_2_both_ways(data):
    framed = kafka_codec.lz4_encode(data)  # liblz4 frame, with a content size (FLG bit 3) if any
    assert bool(framed[4] & 0x08) == bool(data)
    for magic in (1, 2):
        assert decompress(LZ4, framed, magic) == data
        assert kafka_codec.lz4_decode(compress(LZ4, data, magic)) == data


@pytest.mark.parametrize("data", CROSS_DATA, ids=CROSS_IDS)
def test_kafka_python_lz4_magic0_both_ways(data, old_kafka_lz4):
    old = old_kafka_lz4.lz4_encode_old_kafka(data)
    assert decompress(LZ4, old, 0) == data
    # the broken HC is what makes it magic-0 only: the v1/v2 reader and liblz4 reject it
    with pytest.raises(DecompressionError, match="Stream frame descriptor corrupted"):
        decompress(LZ4, old, 1)
    ours = compress(LZ4, data, 0)
    assert old_kafka_lz4.lz4_decode_old_kafka(ours) == data
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(ours)


@pytest.mark.parametrize("data", CROSS_DATA, ids=CROSS_IDS)
def test_kafka_python_zstd_both_ways(data):
    one_shot = kafka_codec.zstd_encode(data)  # frame with a content size
    assert decompress(ZSTD, one_shot, 2) == data
    assert kafka_codec.zstd_decode(compress(ZSTD, data)) == data


# -- LZ4 frames written by liblz4 with the optional fields Kafka never writes -------------

LZ4_FLAG_CASES = [
    dict(store_size=True),
    dict(block_checksum=True),
    dict(content_checksum=True),
    dict(store_size=True, block_checksum=True, content_checksum=True),
    dict(block_size=lz4.frame.BLOCKSIZE_MAX256KB, block_checksum=True),
    dict(block_size=lz4.frame.BLOCKSIZE_MAX1MB, content_checksum=True),
    dict(block_size=lz4.frame.BLOCKSIZE_MAX4MB, store_size=True),
]


@pytest.mark.parametrize("flags", LZ4_FLAG_CASES, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()))
@pytest.mark.parametrize("magic", [0, 2])
def test_lz4_optional_frame_fields_are_decoded(flags, magic):
    data = payload(300 * KIB, 7, "mixed")
    options = dict(store_size=False, block_linked=False)
    options.update(flags)
    assert decompress(LZ4, lz4.frame.compress(data, **options), magic) == data


def test_lz4_block_checksum_is_verified():
    data = payload(100 * KIB, 8)
    frame = bytearray(lz4.frame.compress(data, block_checksum=True, store_size=False, block_linked=False))
    (first,) = struct.unpack_from("<I", frame, 7)
    checksum_at = 7 + 4 + (first & 0x7FFFFFFF)
    assert struct.unpack_from("<I", frame, checksum_at)[0] == xxh32_by_lz4(bytes(frame[11:checksum_at]))
    frame[checksum_at] ^= 0x01
    with pytest.raises(DecompressionError, match="Block checksum mismatch"):
        decompress(LZ4, bytes(frame), 2)


def test_lz4_content_checksum_is_not_verified_like_kafka():
    data = payload(20 * KIB, 9)
    frame = bytearray(lz4.frame.compress(data, content_checksum=True, store_size=False, block_linked=False))
    frame[-1] ^= 0xFF
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(bytes(frame))  # liblz4 checks it ...
    assert decompress(LZ4, bytes(frame), 2) == data  # ... Lz4BlockInputStream does not ("TODO")


# -- concatenation -----------------------------------------------------------------------------

def test_concatenated_gzip_members():
    a, b, c = payload(1000, 10), payload(70 * KIB, 11, "mixed"), b""
    stream = gzip.compress(a) + kafka_codec.gzip_encode(b) + compress(GZIP, c) + compress(GZIP, a)
    assert decompress(GZIP, stream, 2) == a + b + c + a


def test_gzip_bytes_after_the_last_member_that_are_no_gzip_header_are_ignored():
    # GZIPInputStream.readTrailer: a malformed next header ends the stream silently.
    a = payload(500, 12)
    assert decompress(GZIP, compress(GZIP, a) + b"not a gzip member at all", 1) == a
    assert decompress(GZIP, compress(GZIP, a) + b"\x1f\x8b", 1) == a


# Where java.util.zip.GZIPInputStream (JDK 17) is more lenient than zlib. After a member,
# readTrailer looks for a further member only when more than 26 bytes (the 8-byte trailer
# included) are left or the underlying stream has more, and a header it cannot read (readHeader:
# magic, method 8) ends the stream quietly. readHeader never checks the reserved FLG bits.
# Inputs are small, so everything sits in the 8 KiB input buffer, as in Kafka. The expected
# values are checked against a JVM by test_gzip_leniency_in_java.
def _gzip_member_with_reserved_flags(data: bytes) -> bytes:
    member = bytearray(compress(GZIP, data))
    member[3] = 0xE0  # FLG bits 5-7: reserved
    return bytes(member)


GZIP_TEXT = b"tail test " * 100
GZIP_MEMBER = compress(GZIP, GZIP_TEXT)
GZIP_JAVA_CASES = {
    "tail: magic, bad method, 30 zeros": GZIP_MEMBER + b"\x1f\x8b\x09" + bytes(30),
    "tail: magic and 12 zeros": GZIP_MEMBER + b"\x1f\x8b" + bytes(12),
    "tail: a 10-byte header alone": GZIP_MEMBER + b"\x1f\x8b\x08" + bytes(7),
    "second member with reserved FLG bits": GZIP_MEMBER + _gzip_member_with_reserved_flags(GZIP_TEXT),
    "only member with reserved FLG bits": _gzip_member_with_reserved_flags(GZIP_TEXT + GZIP_TEXT),
}


@pytest.mark.parametrize("name", list(GZIP_JAVA_CASES))
def test_gzip_leniency_like_gzip_input_stream(name):
    expected = GZIP_TEXT * 2 if "FLG" in name else GZIP_TEXT
    assert decompress(GZIP, GZIP_JAVA_CASES[name], 2) == expected


def test_concatenated_zstd_frames():
    a, b = payload(1000, 13), payload(150 * KIB, 14, "mixed")
    with_size = zstandard.ZstdCompressor(write_content_size=True, write_checksum=True)
    stream = compress(ZSTD, a) + with_size.compress(b) + compress(ZSTD, b"") + compress(ZSTD, a)
    assert decompress(ZSTD, stream, 2) == a + b + a


def test_concatenated_xerial_streams():
    """snappy-java's SnappyInputStream reads a stream header found where a chunk size would be
    (a concatenation of SnappyOutputStream outputs) and carries on."""
    a, b = payload(40 * KIB, 15), payload(1000, 16)
    assert decompress(SNAPPY, compress(SNAPPY, a) + compress(SNAPPY, b) + compress(SNAPPY, b""), 2) == a + b


@requires_kafka_python_snappy
def test_kafka_python_cannot_read_concatenated_xerial_streams():  # not a seglog concern
    """Known kafka-python limitation: it reads the second header's magic as a chunk size."""
    stream = compress(SNAPPY, b"first") + compress(SNAPPY, b"second")
    assert decompress(SNAPPY, stream, 2) == b"firstsecond"
    with pytest.raises(kafka_codec.snappy.UncompressError):
        kafka_codec.snappy_decode(stream)


def test_lz4_stream_ends_at_the_first_end_mark():
    """Lz4BlockInputStream sets finished at the end mark and never looks further: bytes after it,
    even a whole second frame, are ignored."""
    a, b = payload(3000, 30), payload(2000, 31)
    for magic in (0, 2):
        assert decompress(LZ4, compress(LZ4, a, magic) + compress(LZ4, b, magic), magic) == a
        assert decompress(LZ4, compress(LZ4, a, magic) + b"trailing junk", magic) == a


def test_xerial_header_magic_without_the_rest_of_the_magic_ends_the_stream():
    a = payload(3000, 17)
    bogus_header = XERIAL_HEADER[:4] + b"NOTSNAPPY..."  # 16 bytes, first 4 look like a header
    assert len(bogus_header) == 16
    assert decompress(SNAPPY, compress(SNAPPY, a) + bogus_header + b"ignored", 2) == a


def test_xerial_truncated_second_header_is_an_error():
    with pytest.raises(DecompressionError):
        decompress(SNAPPY, compress(SNAPPY, b"abc") + XERIAL_HEADER[:10], 2)


# -- Kafka's error messages --------------------------------------------------------------------

def _lz4_frame(magic: int = 2, size: int = 5000) -> bytes:
    return compress(LZ4, payload(size, 18), magic)


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_lz4_bad_magic(magic):
    frame = bytearray(_lz4_frame(magic))
    frame[0] ^= 0xFF
    with pytest.raises(DecompressionError, match=r"^Stream unsupported \(invalid magic bytes\)$"):
        decompress(LZ4, bytes(frame), magic)


@pytest.mark.parametrize("magic", [1, 2])
def test_lz4_corrupted_header_checksum_is_rejected_for_magic_1_and_2(magic):
    frame = bytearray(_lz4_frame(magic))
    frame[6] ^= 0x5A
    with pytest.raises(DecompressionError, match="^Stream frame descriptor corrupted$"):
        decompress(LZ4, bytes(frame), magic)


def test_lz4_header_checksum_is_not_checked_for_magic_0():
    for hc in (0x00, 0xFF, _lz4_frame(2)[6]):
        frame = bytearray(_lz4_frame(0))
        frame[6] = hc
        assert decompress(LZ4, bytes(frame), 0) == payload(5000, 18)


def test_lz4_dependent_blocks_are_unsupported():
    linked = lz4.frame.compress(payload(200 * KIB, 19), block_linked=True, store_size=False)
    assert not linked[4] & 0x20  # multi-block: liblz4 really wrote a linked-block frame
    for magic in (0, 2):
        with pytest.raises(DecompressionError, match="^Dependent block stream is unsupported$"):
            decompress(LZ4, linked, magic)


def _with_descriptor(flg: int, bd: int, magic: int = 0) -> bytes:
    """A Kafka frame with FLG/BD replaced (magic 0 so the stale HC does not matter)."""
    frame = bytearray(_lz4_frame(magic))
    frame[4], frame[5] = flg, bd
    return bytes(frame)


@pytest.mark.parametrize("flg,bd,message", [
    (0x61, 0x40, "Reserved bits must be 0"),
    (0x62, 0x40, "Reserved bits must be 0"),
    (0x40, 0x40, "Dependent block stream is unsupported"),
    (0x20, 0x40, "Version 0 is unsupported"),
    (0xA0, 0x40, "Version 2 is unsupported"),
    (0x60, 0x30, "Block size value must be between 4 and 7"),
    (0x60, 0x00, "Block size value must be between 4 and 7"),
])
def test_lz4_descriptor_errors(flg, bd, message):
    with pytest.raises(DecompressionError, match=f"^{message}$"):
        decompress(LZ4, _with_descriptor(flg, bd), 0)


# Kafka's Lz4BlockOutputStream.BD.fromByte: reserved2 = bd & 0x0F, reserved3 = bd >>> 7, checked
# in that order after the block size (validate(): reserved2, blockSizeValue, reserved3).
@pytest.mark.parametrize("bd,message", [
    (0x41, "Reserved2 field must be 0"),
    (0xC0, "Reserved3 field must be 0"),
])
def test_lz4_block_descriptor_reserved_bits_use_kafkas_messages(bd, message):
    with pytest.raises(DecompressionError, match=f"^{message}$"):
        decompress(LZ4, _with_descriptor(0x60, bd), 0)


def test_lz4_block_descriptor_reserved_bits_are_rejected():
    for bd in (0x41, 0x48, 0xC0, 0xC1):
        with pytest.raises(DecompressionError, match="field must be 0"):
            decompress(LZ4, _with_descriptor(0x60, bd), 0)


def test_lz4_block_larger_than_the_maximum():
    block = payload(64 * KIB + 1, 20, "random")
    frame = LZ4_MAGIC + bytes((0x60, 0x40, 0)) + struct.pack("<I", len(block) | 0x80000000) + block + bytes(4)
    with pytest.raises(DecompressionError, match=r"^Block size 65537 exceeded max: 65536$"):
        decompress(LZ4, frame, 0)


@lru_cache(maxsize=1)
def _truncations():
    frame = _lz4_frame(2, 100 * KIB)
    (first,) = struct.unpack_from("<I", frame, 7)
    sized = lz4.frame.compress(b"abc", store_size=True, block_linked=False)
    return {
        "5 bytes": frame[:5],
        "inside the content size": sized[:10],
        "no block size": frame[:7],
        "half a block size": frame[:9],
        "inside a block": frame[:11 + (first & 0x7FFFFFFF) // 2],
        "no end mark": frame[:-4],
        "half an end mark": frame[:-2],
    }


@pytest.mark.parametrize("name", list(_truncations()))
@pytest.mark.parametrize("magic", [0, 2])
def test_lz4_truncated_streams(name, magic):
    with pytest.raises(DecompressionError, match="^Stream ended prematurely$"):
        decompress(LZ4, _truncations()[name], magic)


def test_lz4_missing_header_checksum_byte_is_an_error():
    # Kafka throws java.nio.BufferUnderflowException (magic 1/2) or IllegalArgumentException
    # (magic 0) here rather than an IOException; any DecompressionError will do.
    for magic in (0, 2):
        with pytest.raises(DecompressionError):
            decompress(LZ4, _lz4_frame(magic)[:6], magic)


def test_xerial_empty_stream():
    for magic in (0, 1, 2):
        with pytest.raises(DecompressionError, match="^Cannot decompress empty stream$"):
            decompress(SNAPPY, b"", magic)


def test_xerial_short_chunk_is_failed_to_read_chunk():
    stream = compress(SNAPPY, payload(10 * KIB, 21))
    with pytest.raises(DecompressionError, match="failed to read chunk"):
        decompress(SNAPPY, stream[:-1], 2)


@pytest.mark.parametrize("size", [-5, 512 * 1024 * 1024 + 1])
def test_xerial_negative_or_huge_chunk_size_is_an_error(size):
    with pytest.raises(DecompressionError):
        decompress(SNAPPY, XERIAL_HEADER + struct.pack(">i", size) + b"abcde", 2)


@pytest.mark.parametrize("tail", [b"", b"\x00", b"\x00\x00\x00"])
def test_xerial_fewer_than_4_bytes_after_a_chunk_end_the_stream(tail):
    data = payload(5000, 22)
    assert decompress(SNAPPY, compress(SNAPPY, data) + tail, 2) == data


def test_raw_snappy_fallback_for_short_or_headerless_input():
    for data in (b"abc", payload(100, 23), payload(50 * KIB, 24)):
        raw = bytes(cramjam.snappy.compress_raw(data))
        assert decompress(SNAPPY, raw, 1) == data


def test_gzip_truncated_and_empty_streams():
    stream = compress(GZIP, payload(5000, 25))
    with pytest.raises(DecompressionError, match="EOFException"):  # GZIPInputStream.readHeader
        decompress(GZIP, stream[:5], 2)
    for cut in (len(stream) // 2, len(stream) - 8):
        with pytest.raises(DecompressionError, match="Unexpected end of ZLIB input stream"):
            decompress(GZIP, stream[:cut], 2)
    with pytest.raises(DecompressionError):
        decompress(GZIP, b"", 2)


def test_zstd_empty_input_is_an_empty_stream():
    # zstd-jni's ZstdInputStreamNoFinalizer starts with frameFinished = true: no input, no error.
    assert decompress(ZSTD, b"", 2) == b""


@pytest.mark.parametrize("cut", [1, 4, 100])
def test_zstd_truncated_frame_is_an_error(cut):
    stream = compress(ZSTD, payload(50 * KIB, 26, "mixed"))
    with pytest.raises(DecompressionError):
        decompress(ZSTD, stream[:-cut], 2)


def test_zstd_garbage_after_a_frame_is_an_error():
    with pytest.raises(DecompressionError):
        decompress(ZSTD, compress(ZSTD, b"abc") + b"garbage!", 2)


# -- the output cap ------------------------------------------------------------------------

BOMB = bytes(4 * 1024 * KIB)  # 4 MiB of zeros: at most 200 KiB compressed
CAP = 1024 * KIB


@lru_cache(maxsize=1)
def _bombs():
    return {
        "gzip": (GZIP, 2, compress(GZIP, BOMB)),
        "gzip-members": (GZIP, 2, compress(GZIP, BOMB[:CAP]) + compress(GZIP, b"\x00")),
        "snappy-xerial": (SNAPPY, 2, compress(SNAPPY, BOMB)),
        "snappy-raw": (SNAPPY, 2, bytes(cramjam.snappy.compress_raw(BOMB))),
        "lz4": (LZ4, 2, compress(LZ4, BOMB, 2)),
        "lz4-magic0": (LZ4, 0, compress(LZ4, BOMB, 0)),
        "lz4-4MiB-blocks": (LZ4, 2, lz4.frame.compress(BOMB, block_size=lz4.frame.BLOCKSIZE_MAX4MB,
                                                       store_size=False, block_linked=False)),
        "zstd": (ZSTD, 2, compress(ZSTD, BOMB)),
    }


@pytest.mark.parametrize("name", list(_bombs()))
def test_output_cap_stops_bombs(name):
    codec, magic, stream = _bombs()[name]
    assert len(stream) * 20 < len(BOMB)
    with pytest.raises(DecompressionError, match="exceeds"):
        decompress(codec, stream, magic, max_output=CAP)


@pytest.mark.parametrize("codec_magic", CODEC_MAGICS, ids=_codec_id)
def test_output_cap_is_inclusive(codec_magic):
    codec, magic = codec_magic
    data = payload(100 * KIB, 27)
    stream = compress(codec, data, magic)
    assert decompress(codec, stream, magic, max_output=len(data)) == data
    with pytest.raises(DecompressionError):
        decompress(codec, stream, magic, max_output=len(data) - 1)


# -- xxh32 ------------------------------------------------------------------------------------

PRIME32 = 2654435761


def _sanity_buffer(size: int = 2243) -> bytes:
    """xxHash's cli/xsum_sanity_check.c test buffer."""
    out, gen = bytearray(), PRIME32
    for _ in range(size):
        out.append(gen >> 56)
        gen = (gen * 11400714785074694797) & 0xFFFFFFFFFFFFFFFF
    return bytes(out)


@pytest.mark.parametrize("length,seed,expected", [
    (0, 0, 0x02CC5D05), (0, PRIME32, 0x36B78AE7), (1, 0, 0xCF65B03E), (1, PRIME32, 0xB4545AA4),
    (14, 0, 0x1208E7E2), (14, PRIME32, 0x6AF1D1FE), (222, 0, 0x5BD11DBD), (222, PRIME32, 0x58803C5F),
])
def test_xxh32_sanity_vectors(length, seed, expected):
    assert xxh32(_sanity_buffer()[:length], seed) == expected


def test_xxh32_text_vector():
    assert xxh32(b"abc") == 0x32D153FF == xxh32_by_lz4(b"abc")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_xxh32_matches_liblz4(data):
    assert xxh32(data) == xxh32_by_lz4(data)


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=100), st.integers(0, 2**32 - 1))
def test_xxh32_matches_the_xxhash_package(data, seed):
    xxhash = pytest.importorskip("xxhash", reason="the xxhash package is not installed")
    assert xxh32(data, seed) == xxhash.xxh32_intdigest(data, seed)


# -- a real JVM: java.util.zip -----------------------------------------------------------------

JAVA_GZIP = r"""
import java.io.*;
import java.util.zip.*;

public class GzipTool {
    public static void main(String[] args) throws IOException {
        byte[] input = System.in.readAllBytes();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        if (args[0].equals("compress")) {
            for (int i = 1; i < args.length; i++) {   // one member per argument: "from:to"
                String[] range = args[i].split(":");
                int from = Integer.parseInt(range[0]), to = Integer.parseInt(range[1]);
                try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
                    gz.write(input, from, to - from);
                }
                out.flush();
            }
        } else {
            // as Kafka's GzipCompression.wrapForInput: an 8 KiB input buffer
            try (InputStream gz = new GZIPInputStream(new ByteArrayInputStream(input), 8 * 1024)) {
                gz.transferTo(out);
            }
        }
        System.out.write(out.toByteArray());
        System.out.flush();
    }
}
"""


@pytest.fixture(scope="module")
def java_gzip(tmp_path_factory):
    if not (shutil.which("java") and shutil.which("javac")):
        pytest.skip("no JDK (java and javac) on PATH")
    work = tmp_path_factory.mktemp("java-gzip")
    (work / "GzipTool.java").write_text(JAVA_GZIP)
    subprocess.run(["javac", "-d", str(work), str(work / "GzipTool.java")], check=True, capture_output=True)

    def run(data: bytes, *args: str) -> bytes:
        done = subprocess.run(["java", "-cp", str(work), "GzipTool", *args], input=data,
                              capture_output=True, check=True, timeout=60)
        return done.stdout

    return run


def test_java_gzip_members_are_read(java_gzip):
    data = payload(100 * KIB, 28, "mixed")
    cut = 40 * KIB
    members = java_gzip(data, "compress", f"0:{cut}", f"{cut}:{cut}", f"{cut}:{len(data)}")
    assert members.count(members[:9]) >= 3  # three headers
    assert decompress(GZIP, members, 2) == data


def test_java_reads_our_gzip(java_gzip):
    data = payload(100 * KIB, 29, "mixed")
    assert java_gzip(compress(GZIP, data), "decompress") == data
    assert java_gzip(compress(GZIP, data[:10]) + compress(GZIP, data[10:]), "decompress") == data


def test_gzip_header_against_the_local_jdk(java_gzip):
    """GZIPOutputStream's header is 1f8b08 00 00000000 00 then the OS byte: 00 up to JDK 15,
    ff (unknown) from JDK 16 on. Kafka 4.x brokers run on JDK 17+, so the gzip batches of the
    kafka-4.2.0 corpus start 1f8b08000000000000ff; seglog writes that header too."""
    java = java_gzip(b"kafka", "compress", "0:5")
    ours = compress(GZIP, b"kafka")
    assert ours[:9] == java[:9] == JAVA_GZIP_HEADER[:9]
    assert java[9] in (0x00, 0xFF) and ours[9] == 0xFF


@pytest.mark.parametrize("name", list(GZIP_JAVA_CASES))
def test_gzip_leniency_in_java(java_gzip, name):
    """The evidence for test_gzip_leniency_like_gzip_input_stream."""
    expected = GZIP_TEXT * 2 if "FLG" in name else GZIP_TEXT
    assert java_gzip(GZIP_JAVA_CASES[name], "decompress") == expected
