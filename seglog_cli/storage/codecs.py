"""Decompression of batch record sections and legacy wrapper values, in Kafka's flavours (§5).

Bindings were chosen by measurement (``tests/benchmarks/bench_codecs.py``):

* gzip: stdlib ``zlib`` (faster than cramjam on batch-sized inputs); concatenated members are
  accepted like ``java.util.zip.GZIPInputStream``.
* snappy: xerial ``SnappyOutputStream`` framing parsed here, each chunk through
  ``cramjam.snappy.decompress_raw``; a stream without the xerial header is read as one raw
  snappy block (snappy-java's compatibility path).
* lz4: the LZ4 frame parsed here with Kafka's ``Lz4BlockInputStream`` rules (including the
  magic-0 header-checksum quirk, KIP-57), each block through ``lz4.block``.
* zstd: ``zstandard`` streaming decompression object (Java producers write frames without a
  content size; concatenated frames are accepted).

Every decompressor checks its output against ``max_output`` bytes (gzip, snappy and lz4 before
allocating it) so a hostile batch cannot exhaust memory; exceeding it is reported like any
other decompression failure.
"""

from __future__ import annotations

import struct
import zlib
from functools import lru_cache

import cramjam
import lz4.block
import lz4.frame
import zstandard

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
DEFAULT_MAX_OUTPUT = 256 * 1024 * 1024


class DecompressionError(Exception):
    """The compressed stream cannot be decoded; the message says why, in Kafka's words where
    Kafka has some."""


def codec_name(codec: int) -> str:
    """Kafka's ``CompressionType.name`` for a codec id; raises for ids 5-7 like Kafka does."""
    try:
        return CODEC_NAMES[codec]
    except KeyError:
        raise DecompressionError(f"Unknown compression type id: {codec}") from None


def decompress(codec: int, data, magic: int, max_output: int = DEFAULT_MAX_OUTPUT) -> bytes:
    """Decompress one batch records section (magic 2) or legacy wrapper value (magic 0/1)."""
    if codec == GZIP:
        return _gunzip(data, max_output)
    if codec == SNAPPY:
        return _xerial_snappy(data, max_output)
    if codec == LZ4:
        return _lz4_frame(data, ignore_header_checksum=magic == 0, max_output=max_output)
    if codec == ZSTD:
        return _zstd(data, max_output)
    if codec == NONE:
        return bytes(data)
    raise DecompressionError(f"Unknown compression type id: {codec}")


# -- gzip ------------------------------------------------------------------------------------

_GZIP_MAGIC = b"\x1f\x8b"


_GZIP_BUFFER = 8 * 1024  # Kafka builds GZIPInputStream(in, 8 * 1024)


def _gunzip(data, max_output: int) -> bytes:
    """``java.util.zip.GZIPInputStream`` over the whole input, as Kafka reads a gzip batch.

    Members follow each other; reserved header flag bits are ignored. After a member Java looks
    for another one only when its 8 KiB input buffer holds more than 26 bytes past the deflate
    data or the underlying stream has unread bytes, and a tail that is not a valid member header
    ends the stream quietly. The buffer is modelled exactly so the same inputs succeed or fail.
    """
    data = bytes(data)
    end = len(data)
    if not end:
        raise DecompressionError("java.io.EOFException")
    in_pos = _gzip_header_end(data, 0)  # readHeader reads straight from the stream
    buffered = (in_pos, in_pos)  # bytes handed to the Inflater but not read from it yet
    out = []
    total = 0
    while True:
        start = buffered[0] if buffered[0] < buffered[1] else in_pos
        chunk, deflate_end = _inflate_member(data, start, max_output - total, max_output)
        total += len(chunk)
        out.append(chunk)
        buffer_end = _gzip_buffer_end(buffered, in_pos, deflate_end, end)
        remaining = buffer_end - deflate_end  # Inflater.getRemaining() when the member ends
        if end - deflate_end < 8:
            raise DecompressionError("java.io.EOFException: Unexpected end of ZLIB input stream")
        crc, size = struct.unpack_from("<II", data, deflate_end)
        if crc != zlib.crc32(chunk) or size != len(chunk) & 0xFFFFFFFF:
            raise DecompressionError("java.util.zip.ZipException: Corrupt GZIP trailer")
        in_pos = max(buffer_end, deflate_end + 8)
        if not (end - in_pos > 0 or remaining > 26):
            return b"".join(out)
        try:
            header_end = _gzip_header_end(data, deflate_end + 8)
        except DecompressionError:
            return b"".join(out)  # "ignore any malformed, do nothing"
        in_pos = max(in_pos, header_end)
        buffered = (header_end, buffer_end)


def _inflate_member(data: bytes, start: int, room: int, max_output: int) -> tuple[bytes, int]:
    """Inflate the raw deflate data at ``data[start:]``: (output, where the deflate data ends).

    The input goes in pieces that double in size, so the bytes after a member are not copied
    once per member (thousands of tiny members made a batch quadratic to read).
    """
    inflater = zlib.decompressobj(wbits=-15)
    view = memoryview(data)
    out = []
    pos, step, end = start, 256, len(data)
    while not inflater.eof:
        if pos >= end:
            raise DecompressionError("java.io.EOFException: Unexpected end of ZLIB input stream")
        piece = view[pos:pos + step]
        try:
            chunk = inflater.decompress(piece, room + 1)
        except zlib.error as exc:
            raise DecompressionError(f"java.util.zip.ZipException: {exc}") from None
        room -= len(chunk)
        if room < 0:
            raise DecompressionError(f"gzip: output exceeds {max_output} bytes")
        out.append(chunk)
        pos += len(piece)
        step = min(step * 2, 1 << 20)
    return b"".join(out), pos - len(inflater.unused_data)


def _gzip_buffer_end(buffered: tuple[int, int], in_pos: int, deflate_end: int, end: int) -> int:
    """End of the Inflater's input buffer at the moment the deflate data ends at ``deflate_end``:
    the leftover carried from the previous member, then 8 KiB fills from the stream."""
    if buffered[0] < buffered[1] and deflate_end <= buffered[1]:
        return buffered[1]
    fills = max(1, -(-(deflate_end - in_pos) // _GZIP_BUFFER))
    return min(end, in_pos + fills * _GZIP_BUFFER)


_FEXTRA, _FNAME, _FCOMMENT, _FHCRC = 4, 8, 16, 2


def _gzip_header_end(data: bytes, start: int) -> int:
    """``GZIPInputStream.readHeader``: position after the member header at ``start``."""
    end = len(data)
    if end - start < 10:
        raise DecompressionError("java.io.EOFException")
    if data[start:start + 2] != _GZIP_MAGIC:
        raise DecompressionError("java.util.zip.ZipException: Not in GZIP format")
    if data[start + 2] != 8:
        raise DecompressionError("java.util.zip.ZipException: Unsupported compression method")
    flags = data[start + 3]
    pos = start + 10
    if flags & _FEXTRA:
        if end - pos < 2:
            raise DecompressionError("java.io.EOFException")
        pos += 2 + struct.unpack_from("<H", data, pos)[0]
    for flag in (_FNAME, _FCOMMENT):
        if flags & flag:
            zero = data.find(b"\x00", pos)
            if zero < 0:
                raise DecompressionError("java.io.EOFException")
            pos = zero + 1
    if flags & _FHCRC:
        if pos + 2 > end or struct.unpack_from("<H", data, pos)[0] != zlib.crc32(data[start:pos]) & 0xFFFF:
            raise DecompressionError("java.util.zip.ZipException: Corrupt GZIP header")
        pos += 2
    if pos > end:
        raise DecompressionError("java.io.EOFException")
    return pos


# -- snappy (xerial framing) -----------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16
_MAX_SNAPPY_CHUNK = 512 * 1024 * 1024


def _raw_snappy(chunk, max_output: int) -> bytes:
    try:
        size = _uvarint_prefix(chunk)
        if size > max_output:
            raise DecompressionError(f"snappy: output exceeds {max_output} bytes")
        return bytes(cramjam.snappy.decompress_raw(bytes(chunk)))
    except cramjam.DecompressionError as exc:
        raise DecompressionError(f"snappy: {exc}") from None


def _uvarint_prefix(data) -> int:
    value = shift = 0
    for i in range(min(5, len(data))):
        byte = data[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    raise DecompressionError("snappy: invalid uncompressed length")


def _xerial_snappy(data, max_output: int) -> bytes:
    data = memoryview(bytes(data))
    if len(data) == 0:
        raise DecompressionError("Cannot decompress empty stream")
    if len(data) < _XERIAL_HEADER_SIZE or bytes(data[:8]) != _XERIAL_MAGIC:
        return _raw_snappy(data, max_output)
    out = []
    total = 0
    pos = _XERIAL_HEADER_SIZE
    end = len(data)
    while end - pos >= 4:
        (size,) = struct.unpack_from(">i", data, pos)
        if bytes(data[pos:pos + 4]) == _XERIAL_MAGIC[:4]:
            # A concatenated stream header: continue if it is whole and valid, else stop.
            if end - pos < _XERIAL_HEADER_SIZE:
                raise DecompressionError("snappy: truncated stream header")
            if bytes(data[pos:pos + 8]) != _XERIAL_MAGIC:
                break
            pos += _XERIAL_HEADER_SIZE
            continue
        pos += 4
        if size < 0:
            raise DecompressionError(f"snappy: invalid chunk size {size}")
        if size > _MAX_SNAPPY_CHUNK:
            raise DecompressionError(f"snappy: chunk size {size} exceeds the 512 MiB limit")
        if end - pos < size:
            raise DecompressionError("failed to read chunk")
        chunk = _raw_snappy(data[pos:pos + size], max_output - total)
        total += len(chunk)
        out.append(chunk)
        pos += size
    return b"".join(out)


# -- lz4 frame -------------------------------------------------------------------------------

_LZ4_MAGIC = 0x184D2204
_LZ4_MAX_RATIO = 255
_LZ4_INCOMPRESSIBLE = 0x80000000


_LZ4_MAGIC_BYTES = b"\x04\x22\x4d\x18"


def _lz4_frame(data, ignore_header_checksum: bool, max_output: int) -> bytes:
    data = bytes(data)
    end = len(data)
    if (not ignore_header_checksum and end >= 7 and end * _LZ4_MAX_RATIO <= max_output
            and data[4] & 0xE3 == 0x60 and data[5] & 0x8F == 0 and data[5] >= 0x40
            and data[:4] == _LZ4_MAGIC_BYTES):
        # Kafka's descriptor rules hold (version 01, independent blocks, no reserved bits,
        # 64 KiB-4 MiB blocks): liblz4 reads the frame in one call, checking the header and
        # block checksums as Kafka does and stopping at the end mark like Kafka. What liblz4
        # refuses and Kafka accepts (a wrong content checksum or content size) falls through.
        try:
            return lz4.frame.decompress(data)
        except RuntimeError:
            pass
    if end < 6:
        raise DecompressionError("Stream ended prematurely")
    if struct.unpack_from("<I", data, 0)[0] != _LZ4_MAGIC:
        raise DecompressionError("Stream unsupported (invalid magic bytes)")
    flg, bd = data[4], data[5]
    _check_lz4_descriptor(flg, bd)
    max_block = 1 << (2 * ((bd >> 4) & 0x07) + 8)
    pos = 6
    if flg & 0x08:  # content size present: skipped
        if end - pos < 8:
            raise DecompressionError("Stream ended prematurely")
        pos += 8
    if pos >= end:
        raise DecompressionError("Stream ended prematurely")
    checksum = _lz4_header_checksum(data[4:pos])
    if not ignore_header_checksum and data[pos] != checksum:
        raise DecompressionError("Stream frame descriptor corrupted")
    if ignore_header_checksum and data[pos] != checksum:  # magic 0: give liblz4 a valid HC
        data = data[:pos] + bytes((checksum,)) + data[pos + 1:]
    fast = _lz4_liblz4(data, max_output)
    if fast is not None:
        return fast
    pos += 1
    out = []
    total = 0
    while True:
        if end - pos < 4:
            raise DecompressionError("Stream ended prematurely")
        (word,) = struct.unpack_from("<I", data, pos)
        pos += 4
        size = word & ~_LZ4_INCOMPRESSIBLE
        if size == 0:
            return b"".join(out)  # end mark; a content checksum is not verified, like Kafka
        if size > max_block:
            raise DecompressionError(f"Block size {size} exceeded max: {max_block}")
        if end - pos < size:
            raise DecompressionError("Stream ended prematurely")
        block = data[pos:pos + size]
        if word & _LZ4_INCOMPRESSIBLE:
            chunk = block
        else:
            try:
                chunk = lz4.block.decompress(block, uncompressed_size=max_block)
            except lz4.block.LZ4BlockError as exc:
                raise DecompressionError(f"net.jpountz.lz4.LZ4Exception: {exc}") from None
        pos += size
        if flg & 0x10:  # block checksum
            if end - pos < 4 or struct.unpack_from("<I", data, pos)[0] != xxh32(block):
                raise DecompressionError("Block checksum mismatch")
            pos += 4
        total += len(chunk)
        if total > max_output:
            raise DecompressionError(f"lz4: output exceeds {max_output} bytes")
        out.append(chunk)


def _lz4_liblz4(data: bytes, max_output: int) -> bytes | None:
    """The frame through liblz4 once Kafka's descriptor checks passed; None when liblz4 refuses
    it (then the block loop above reports Kafka's own error, or accepts what Kafka accepts,
    such as a wrong content checksum, which Kafka never verifies)."""
    inflater = lz4.frame.LZ4FrameDecompressor()
    # LZ4 inflates at most 255x; only a frame that could pass the cap needs a bounded call (a
    # bounded call makes the binding allocate the whole bound up front)
    bound = -1 if len(data) * _LZ4_MAX_RATIO <= max_output else max_output + 1
    try:
        out = inflater.decompress(data, bound)
    except RuntimeError:
        return None
    return out if inflater.eof and len(out) <= max_output else None


def _check_lz4_descriptor(flg: int, bd: int) -> None:
    if flg & 0x03:
        raise DecompressionError("Reserved bits must be 0")
    if not flg & 0x20:
        raise DecompressionError("Dependent block stream is unsupported")
    if flg >> 6 != 1:
        raise DecompressionError(f"Version {flg >> 6} is unsupported")
    # Kafka's Lz4BlockOutputStream.BD: "reserved2" is the low nibble, "reserved3" bit 7.
    if bd & 0x0F:
        raise DecompressionError("Reserved2 field must be 0")
    if not 4 <= (bd >> 4) & 0x07 <= 7:
        raise DecompressionError("Block size value must be between 4 and 7")
    if bd & 0x80:
        raise DecompressionError("Reserved3 field must be 0")


@lru_cache(maxsize=64)
def _lz4_header_checksum(descriptor: bytes) -> int:
    return (xxh32(descriptor) >> 8) & 0xFF


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 (used by the LZ4 frame format for its header and block checksums)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while pos <= n - 16:
            a, b, c, d = struct.unpack_from("<4I", data, pos)
            v1 = (_rotl((v1 + a * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + b * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + c * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + d * _P2) & _M32, 13) * _P1) & _M32
            pos += 16
        acc = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        acc = (seed + _P5) & _M32
    acc = (acc + n) & _M32
    while pos <= n - 4:
        (word,) = struct.unpack_from("<I", data, pos)
        acc = (_rotl((acc + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        acc = (_rotl((acc + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    acc ^= acc >> 15
    acc = (acc * _P2) & _M32
    acc ^= acc >> 13
    acc = (acc * _P3) & _M32
    acc ^= acc >> 16
    return acc


# -- zstd ------------------------------------------------------------------------------------

_ZSTD = zstandard.ZstdDecompressor()
_ZSTD_MAX_RATIO = 32 * 1024  # a zstd block decodes to at most 128 KiB and takes at least 4 bytes
_ZSTD_MIN_STEP = 1024


def _zstd(data, max_output: int) -> bytes:
    """Frame after frame, like zstd-jni's stream: empty input is an empty stream, an unfinished
    frame is an error ("Truncated source"), garbage after a frame is an error.

    decompressobj is several times faster than stream_reader on batch-sized frames. Input is
    fed in pieces that cannot decode to much more than the room left under ``max_output``, so a
    bomb (1 GiB of zeros fits in 32 KiB) hits the cap before it is inflated.
    """
    data = bytes(data)
    end = len(data)
    out = []
    total = pos = 0
    try:
        while pos < end:
            inflater = _ZSTD.decompressobj()
            while not inflater.eof:
                if pos >= end:
                    raise DecompressionError("zstd: Truncated source")
                step = max(_ZSTD_MIN_STEP, (max_output - total) // _ZSTD_MAX_RATIO)
                chunk = inflater.decompress(data[pos:pos + step])
                pos = min(pos + step, end)
                total += len(chunk)
                if total > max_output:
                    raise DecompressionError(f"zstd: output exceeds {max_output} bytes")
                out.append(chunk)
            pos -= len(inflater.unused_data)
    except zstandard.ZstdError as exc:
        raise DecompressionError(f"zstd: {exc}") from None
    return b"".join(out)


# -- compression (what Kafka's producers and brokers write) ---------------------------------

# java.util.zip.GZIPOutputStream's header on JDK 16+ (OS byte 255), which Kafka 4 brokers run on
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_LZ4_BLOCK = 64 * 1024
_ZSTD_LEVEL = 3


def compress(codec: int, data: bytes, magic: int = 2) -> bytes:
    """Compress a records section (or legacy wrapper value) in the framing Kafka writes."""
    if codec == GZIP:
        return _gzip(data)
    if codec == SNAPPY:
        return _XERIAL_HEADER + b"".join(
            _xerial_chunk(data[i:i + _XERIAL_BLOCK]) for i in range(0, len(data), _XERIAL_BLOCK))
    if codec == LZ4:
        return _lz4_frame_compress(data, broken_header_checksum=magic == 0)
    if codec == ZSTD:
        return zstandard.ZstdCompressor(level=_ZSTD_LEVEL, write_content_size=False).compress(data)
    if codec == NONE:
        return bytes(data)
    raise DecompressionError(f"Unknown compression type id: {codec}")


def _gzip(data: bytes) -> bytes:
    deflater = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    body = deflater.compress(data) + deflater.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def _xerial_chunk(chunk: bytes) -> bytes:
    compressed = bytes(cramjam.snappy.compress_raw(chunk))
    return struct.pack(">i", len(compressed)) + compressed


def _lz4_frame_compress(data: bytes, broken_header_checksum: bool) -> bytes:
    descriptor = bytes((0x60, 0x40))  # version 01, independent blocks; 64 KiB max block
    checked = struct.pack("<I", _LZ4_MAGIC) + descriptor if broken_header_checksum else descriptor
    out = [struct.pack("<I", _LZ4_MAGIC), descriptor, bytes((_lz4_header_checksum(checked),))]
    for i in range(0, len(data), _LZ4_BLOCK):
        block = data[i:i + _LZ4_BLOCK]
        packed = lz4.block.compress(block, store_size=False)
        if len(packed) >= len(block):
            out.append(struct.pack("<I", len(block) | _LZ4_INCOMPRESSIBLE) + block)
        else:
            out.append(struct.pack("<I", len(packed)) + packed)
    out.append(b"\x00\x00\x00\x00")
    return b"".join(out)
