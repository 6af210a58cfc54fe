"""Decompression of batch record sections and legacy wrapper values, in Kafka's flavours (§5).

Bindings were chosen by measurement (``tests/benchmarks/bench_codecs.py``):

* gzip: a member that ends the batch (the usual case) through ``isal`` (ISA-L) when installed,
  its trailer's CRC checked; everything else through stdlib ``zlib`` with
  ``java.util.zip.GZIPInputStream``'s rules modelled exactly (concatenated members, its 8 KiB
  buffer), which also gives every error text.
* snappy: xerial ``SnappyOutputStream`` framing parsed here, each chunk through
  ``cramjam.snappy.decompress_raw``; a stream without the xerial header is read as one raw
  snappy block (snappy-java's compatibility path).
* lz4: the LZ4 frame read with Kafka's ``Lz4BlockInputStream`` rules (including the magic-0
  header-checksum quirk, KIP-57): see ``lz4_frame.py``.
* zstd: ``zstandard`` streaming decompression object over one reused context per thread (Java
  producers write frames without a content size; concatenated frames are accepted).

The bindings are imported when a batch of their codec is first met: a command on uncompressed
data (and every command's start) loads none of them.

Every decompressor checks its output against ``max_output`` bytes (gzip, snappy and lz4 before
allocating it) so a hostile batch cannot exhaust memory; exceeding it is reported like any
other decompression failure.
"""

from __future__ import annotations

import struct
import threading
import zlib
from functools import lru_cache

from seglog_cli.storage.log.errors import DecompressionError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
DEFAULT_MAX_OUTPUT = 256 * 1024 * 1024


def codec_label(codec: int) -> str:
    """The name DumpLogSegments prints for a codec id: Kafka's, or ``unknown(id)`` for 5-7."""
    return CODEC_NAMES.get(codec, f"unknown({codec})")


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
        from seglog_cli.storage.log import lz4_frame

        return lz4_frame.decompress(data, ignore_header_checksum=magic == 0, max_output=max_output)
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
    whole = _gunzip_one_member(data, in_pos, max_output)
    if whole is not None:
        return whole
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


def _gunzip_one_member(data: bytes, start: int, max_output: int) -> bytes | None:
    """The usual batch, fast: one member whose 8-byte trailer ends the input and matches (then
    Java reads no further, see :func:`_gunzip`), inflated by the fastest inflater there is
    (:func:`_fast_inflater`). None for anything else, which the exact model reads again with the
    standard library's zlib (whose error texts are the ones seglog reports)."""
    module = _fast_inflater()
    try:
        inflater = module.decompressobj(-15)
        out = inflater.decompress(memoryview(data)[start:], max_output + 1)
    except module.error:
        return None
    if not inflater.eof or len(inflater.unused_data) != 8 or len(out) > max_output:
        return None
    crc, size = struct.unpack_from("<II", data, len(data) - 8)
    if crc != module.crc32(out) or size != len(out) & 0xFFFFFFFF:
        return None
    return out


@lru_cache(maxsize=None)
def _fast_inflater():
    """``isal.isal_zlib`` (Intel ISA-L: inflates about 1.8x as fast as zlib on batch-sized
    members, ``tests/benchmarks/bench_codecs.py``) when installed, else the standard zlib: the
    same DEFLATE, and the same ``decompressobj``/``crc32``/``error`` interface."""
    try:
        from isal import isal_zlib

        return isal_zlib
    except ImportError:
        return zlib


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
    import cramjam

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


def _xerial_one_chunk(data) -> bool:
    """A xerial stream of exactly one chunk after its header, which the loop of
    :func:`_xerial_snappy` would read as the chunk alone."""
    end = len(data)
    if end <= 20 or data[:8] != _XERIAL_MAGIC:
        return False
    (size,) = struct.unpack_from(">i", data, 16)
    return size == end - 20 and size <= _MAX_SNAPPY_CHUNK and data[16:20] != _XERIAL_MAGIC[:4]


def _xerial_snappy(data, max_output: int) -> bytes:
    if _xerial_one_chunk(data):  # the usual batch: one chunk (up to 32 KiB of records)
        return _raw_snappy(data[20:], max_output)  # the same checks as the loop below makes
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


# -- zstd ------------------------------------------------------------------------------------

_ZSTD_MAX_RATIO = 32 * 1024  # a zstd block decodes to at most 128 KiB and takes at least 4 bytes
_ZSTD_MIN_STEP = 1024


def _zstd(data, max_output: int) -> bytes:
    """Frame after frame, like zstd-jni's stream: empty input is an empty stream, an unfinished
    frame is an error ("Truncated source"), garbage after a frame is an error.

    decompressobj is several times faster than stream_reader on batch-sized frames. Input is
    fed in pieces that cannot decode to much more than the room left under ``max_output``, so a
    bomb (1 GiB of zeros fits in 32 KiB) hits the cap before it is inflated.
    """
    import zstandard

    data = bytes(data)
    end = len(data)
    whole = _zstd_one_frame(data, max_output)
    if whole is not None:
        return whole
    out = []
    total = pos = 0
    try:
        while pos < end:
            inflater = _zstd_decompressor().decompressobj()
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


def _zstd_one_frame(data: bytes, max_output: int) -> bytes | None:
    """The usual batch: one frame, fed whole when it cannot decode past the cap. None for
    anything else (more frames, a truncated one, an error): :func:`_zstd` reads it again."""
    import zstandard

    if not 0 < len(data) <= max(_ZSTD_MIN_STEP, max_output // _ZSTD_MAX_RATIO):
        return None
    try:
        inflater = _zstd_decompressor().decompressobj()
        chunk = inflater.decompress(data)
    except zstandard.ZstdError:
        return None
    if inflater.eof and not inflater.unused_data and len(chunk) <= max_output:
        return chunk
    return None


_PER_THREAD = threading.local()


def _zstd_decompressor():
    """This thread's ``ZstdDecompressor``: one context reused batch after batch, never shared
    (a context used by two threads at once corrupts its output, or crashes)."""
    decompressor = getattr(_PER_THREAD, "zstd", None)
    if decompressor is None:
        import zstandard

        decompressor = _PER_THREAD.zstd = zstandard.ZstdDecompressor()
    return decompressor


# -- compression (what Kafka's producers and brokers write) ---------------------------------

# java.util.zip.GZIPOutputStream's header on JDK 16+ (OS byte 255), which Kafka 4 brokers run on
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_ZSTD_LEVEL = 3


def compress(codec: int, data: bytes, magic: int = 2) -> bytes:
    """Compress a records section (or legacy wrapper value) in the framing Kafka writes."""
    if codec == GZIP:
        return _gzip(data)
    if codec == SNAPPY:
        return _XERIAL_HEADER + b"".join(
            _xerial_chunk(data[i:i + _XERIAL_BLOCK]) for i in range(0, len(data), _XERIAL_BLOCK))
    if codec == LZ4:
        from seglog_cli.storage.log import lz4_frame

        return lz4_frame.compress(data, broken_header_checksum=magic == 0)
    if codec == ZSTD:
        import zstandard

        return zstandard.ZstdCompressor(level=_ZSTD_LEVEL, write_content_size=False).compress(data)
    if codec == NONE:
        return bytes(data)
    raise DecompressionError(f"Unknown compression type id: {codec}")


def _gzip(data: bytes) -> bytes:
    deflater = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    body = deflater.compress(data) + deflater.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


def _xerial_chunk(chunk: bytes) -> bytes:
    import cramjam

    compressed = bytes(cramjam.snappy.compress_raw(chunk))
    return struct.pack(">i", len(compressed)) + compressed


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 as the LZ4 frame uses it (``lz4_frame.xxh32``)."""
    from seglog_cli.storage.log import lz4_frame

    return lz4_frame.xxh32(data, seed)
