"""The LZ4 frame format as Kafka reads and writes it (§5.3).

Kafka's ``Lz4BlockOutputStream`` writes one frame: magic ``04 22 4D 18``, FLG 0x60 (version 01,
independent blocks), BD 0x40 (64 KiB blocks), the header checksum byte, 64 KiB blocks (stored
uncompressed when compression does not help) and an end mark; no block or content checksum.
For magic 0 the header checksum covers the magic too, a bug of pre-0.10 clients kept for
compatibility (KIP-57), and the reader does not check it.

``Lz4BlockInputStream`` accepts only that shape's variants: version 01, independent blocks, no
reserved bits, 64 KiB to 4 MiB blocks; it skips a content size, verifies block checksums, does
not verify a content checksum, and stops at the first end mark.
"""

from __future__ import annotations

import struct
from functools import lru_cache

import lz4.block
import lz4.frame

from seglog_cli.storage.log.errors import DecompressionError

_LZ4_BLOCK = 64 * 1024

_LZ4_MAGIC = 0x184D2204
_LZ4_MAX_RATIO = 255
_LZ4_INCOMPRESSIBLE = 0x80000000


_LZ4_MAGIC_BYTES = b"\x04\x22\x4d\x18"


def decompress(data, ignore_header_checksum: bool, max_output: int) -> bytes:
    """One LZ4 frame, as ``Lz4BlockInputStream`` reads it (bytes after the end mark ignored)."""
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
    fast = _liblz4(data, max_output)
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


def _liblz4(data: bytes, max_output: int) -> bytes | None:
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


def compress(data: bytes, broken_header_checksum: bool) -> bytes:
    """``Lz4BlockOutputStream``: one frame of independent 64 KiB blocks, no checksums but the
    header's (the broken one of pre-0.10 clients for magic 0)."""
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
