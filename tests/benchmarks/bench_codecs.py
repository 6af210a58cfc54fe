"""Decompression speed of each candidate binding, per codec, at typical batch sizes.

Justifies the bindings chosen in ``seglog_cli/storage/log/codecs.py``. The input is realistic
record-section bytes (records from ``make_segment``, encoded as in a v2 batch) cut to 200 B,
16 KiB and 1 MiB, compressed in the framing Kafka's producers write:

* gzip: one gzip member; stdlib ``zlib`` (decompressobj, as seglog, and one-shot), stdlib
  ``gzip.decompress``, ``cramjam.gzip``;
* snappy: xerial chunks of 32 KiB, each a raw snappy block; ``cramjam.snappy.decompress_raw``
  vs python-snappy's ``snappy.uncompress`` (when installed), per chunk;
* lz4: Kafka's LZ4 frame (64 KiB independent blocks); ``lz4.frame`` vs ``cramjam.lz4`` on the
  whole frame, and ``lz4.block`` vs ``cramjam.lz4.decompress_block`` on its blocks (cramjam's
  is given each block's exact size, which a real frame does not record: it returns a buffer of
  ``output_len`` bytes, so it cannot take an upper bound as ``lz4.block`` does);
* zstd: a frame without content size (as Java writes it); ``zstandard`` decompressobj over one
  reused context (as seglog), ``stream_reader`` (as kafka-python), one-shot with
  ``max_output_size``, ``cramjam.zstd``, and ``pyzstd`` when installed;
* gzip, when installed: ``isal`` (ISA-L, seglog's choice), ``zlib-ng``, ``deflate``
  (libdeflate).

``seglog`` rows time ``codecs.decompress`` (binding plus framing), the path the dump takes.
cramjam returns a ``cramjam.Buffer``; the ``bytes(...)`` rows include the copy seglog makes.

Usage::

    python tests/benchmarks/bench_codecs.py [--sizes 200,16384,1048576] [--json codecs.json]
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import struct
import sys
import time
import zlib
from pathlib import Path

import cramjam
import lz4.block
import lz4.frame
import zstandard

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from seglog_cli.storage.log import codecs  # noqa: E402
from seglog_cli.storage.write.builder import encode_record  # noqa: E402
from tests.benchmarks.make_segment import random_record  # noqa: E402

try:
    import snappy as python_snappy
except ImportError:  # python-snappy is optional
    python_snappy = None

DEFAULT_SIZES = (200, 16 * 1024, 1024 * 1024)
XERIAL_CHUNK = 32 * 1024
LZ4_BLOCK = 64 * 1024


def sample(size: int, seed: int = 7) -> bytes:
    """``size`` bytes of encoded v2 records, as a batch's records section holds them."""
    rng = random.Random(seed)
    parts, total, delta = [], 0, 0
    while total < size:
        encoded = encode_record(random_record(rng, 0), delta, delta)
        parts.append(encoded)
        total += len(encoded)
        delta += 1
    return b"".join(parts)[:size]


def _xerial_chunks(stream: bytes) -> list[bytes]:
    chunks, pos = [], 16
    while pos < len(stream):
        (size,) = struct.unpack_from(">i", stream, pos)
        chunks.append(stream[pos + 4:pos + 4 + size])
        pos += 4 + size
    return chunks


def _lz4_blocks(frame: bytes) -> list[tuple[bytes, bool]]:
    """(block, compressed?) of a frame written by ``codecs.compress`` (no content size)."""
    blocks, pos = [], 7
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        size = word & 0x7FFFFFFF
        if size == 0:
            return blocks
        blocks.append((frame[pos:pos + size], not word & 0x80000000))
        pos += size


def candidates(data: bytes) -> dict[str, dict]:
    """codec -> {binding name: zero-argument function returning the decompressed bytes}."""
    gz = codecs.compress(codecs.GZIP, data)
    xerial = codecs.compress(codecs.SNAPPY, data)
    chunks = _xerial_chunks(xerial)
    kafka_lz4 = codecs.compress(codecs.LZ4, data)
    std_lz4 = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, content_checksum=False)
    blocks = _lz4_blocks(kafka_lz4)
    sized_blocks = [(block, min(LZ4_BLOCK, len(data) - i * LZ4_BLOCK)) for i, block in enumerate(blocks)]
    zst = codecs.compress(codecs.ZSTD, data)
    zstd_decompressor = zstandard.ZstdDecompressor()
    out = {
        "gzip": {
            "zlib.decompressobj": lambda: zlib.decompressobj(wbits=31).decompress(gz),
            "zlib.decompress": lambda: zlib.decompress(gz, wbits=31),
            "gzip.decompress": lambda: gzip.decompress(gz),
            "cramjam.gzip": lambda: cramjam.gzip.decompress(gz),
            "bytes(cramjam.gzip)": lambda: bytes(cramjam.gzip.decompress(gz)),
            "seglog codecs.decompress": lambda: codecs.decompress(codecs.GZIP, gz, 2),
        },
        "snappy": {
            "cramjam.snappy.decompress_raw": lambda: b"".join(
                [cramjam.snappy.decompress_raw(c) for c in chunks]),
            "bytes(cramjam...decompress_raw)": lambda: b"".join(
                [bytes(cramjam.snappy.decompress_raw(c)) for c in chunks]),
            "seglog codecs.decompress": lambda: codecs.decompress(codecs.SNAPPY, xerial, 2),
        },
        "lz4": {
            "lz4.frame.decompress": lambda: lz4.frame.decompress(std_lz4),
            "cramjam.lz4.decompress": lambda: cramjam.lz4.decompress(std_lz4),
            "lz4.block (per block)": lambda: b"".join(
                [lz4.block.decompress(b, uncompressed_size=LZ4_BLOCK) if c else b for b, c in blocks]),
            # cramjam returns output_len bytes, zero-padded: it needs each block's exact size,
            # which a Kafka LZ4 frame does not record (only lz4.block can take an upper bound).
            "cramjam.lz4.decompress_block(exact size)": lambda: b"".join(
                [cramjam.lz4.decompress_block(b, output_len=n) if c else b for (b, c), n in sized_blocks]),
            "seglog codecs.decompress": lambda: codecs.decompress(codecs.LZ4, kafka_lz4, 2),
        },
        "zstd": {
            "zstandard.decompressobj": lambda: zstd_decompressor.decompressobj().decompress(zst),
            "zstandard.stream_reader": lambda: _zstd_stream_reader(zstd_decompressor, zst),
            "zstandard.decompress(max_output_size)": lambda: zstd_decompressor.decompress(
                zst, max_output_size=len(data) * 2 + 1024),
            "cramjam.zstd": lambda: cramjam.zstd.decompress(zst),
            "bytes(cramjam.zstd)": lambda: bytes(cramjam.zstd.decompress(zst)),
            "seglog codecs.decompress": lambda: codecs.decompress(codecs.ZSTD, zst, 2),
        },
    }
    if python_snappy is not None:
        out["snappy"]["python-snappy uncompress"] = lambda: b"".join(
            [python_snappy.uncompress(c) for c in chunks])
    _optional_candidates(out, gz, zst, len(data))
    ratios = {"gzip": len(gz), "snappy": len(xerial), "lz4": len(kafka_lz4), "zstd": len(zst)}
    return {codec: {"functions": functions, "compressed_bytes": ratios[codec]}
            for codec, functions in out.items()}


def _optional_candidates(out: dict, gz: bytes, zst: bytes, size: int) -> None:
    """The faster decompressors on PyPI, each when installed (``pip install isal zlib-ng
    deflate pyzstd``): ISA-L, zlib-ng and libdeflate for gzip; pyzstd for zstd. The gzip rows
    inflate raw deflate after the 10-byte header, as seglog's one-member path does."""
    try:
        from isal import isal_zlib

        out["gzip"]["isal decompressobj(-15)"] = lambda: isal_zlib.decompressobj(-15).decompress(gz[10:])
        out["gzip"]["isal.decompress(wbits=31)"] = lambda: isal_zlib.decompress(gz, 31)
    except ImportError:
        pass
    try:
        from zlib_ng import zlib_ng

        out["gzip"]["zlib-ng decompressobj(-15)"] = lambda: zlib_ng.decompressobj(-15).decompress(gz[10:])
    except ImportError:
        pass
    try:
        import deflate

        out["gzip"]["deflate.gzip_decompress (libdeflate)"] = lambda: deflate.gzip_decompress(gz)
    except ImportError:
        pass
    try:
        import pyzstd

        out["zstd"]["pyzstd.decompress"] = lambda: pyzstd.decompress(zst)
        context = pyzstd.ZstdDecompressor  # one per frame: a decompressor object ends with its frame
        out["zstd"]["pyzstd.ZstdDecompressor"] = lambda: context().decompress(zst)
    except ImportError:
        pass


def _zstd_stream_reader(decompressor, data: bytes) -> bytes:
    with decompressor.stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
        return reader.read()


def calls_per_round(function, min_seconds: float) -> int:
    """How many calls last about ``min_seconds``."""
    number = 1
    while True:
        started = time.perf_counter()
        for _ in range(number):
            function()
        elapsed = time.perf_counter() - started
        if elapsed >= min_seconds / 4 or number >= 1 << 20:
            return max(1, int(number * min_seconds / max(elapsed, 1e-9)))
        number *= 4


def bench(sizes, min_seconds: float, rounds: int) -> list[dict]:
    """Rounds interleave the bindings of one codec and size, so a busy machine slows them all
    alike; each keeps its best round."""
    rows = []
    for size in sizes:
        data = sample(size)
        for codec, entry in candidates(data).items():
            functions = entry["functions"]
            for name, function in functions.items():
                if bytes(function()) != data:
                    raise AssertionError(f"{codec} {name} does not round-trip at {size} bytes")
            numbers = {name: calls_per_round(function, min_seconds) for name, function in functions.items()}
            best = dict.fromkeys(functions, float("inf"))
            for _ in range(rounds):
                for name, function in functions.items():
                    number = numbers[name]
                    started = time.perf_counter()
                    for _ in range(number):
                        function()
                    best[name] = min(best[name], (time.perf_counter() - started) / number)
            rows += [{"codec": codec, "size": size, "binding": name,
                      "compressed_bytes": entry["compressed_bytes"], "us_per_call": seconds * 1e6,
                      "mb_per_s": size / seconds / 1e6} for name, seconds in best.items()]
    return rows


def fastest(rows: list[dict]) -> dict:
    """codec -> size -> the fastest binding (seglog's own rows excluded: they are a path)."""
    best: dict = {}
    for row in rows:
        if row["binding"].startswith("seglog"):
            continue
        current = best.setdefault(row["codec"], {}).get(str(row["size"]))
        if current is None or row["us_per_call"] < current["us_per_call"]:
            best[row["codec"]][str(row["size"])] = row
    return {codec: {size: row["binding"] for size, row in by_size.items()} for codec, by_size in best.items()}


def print_table(rows: list[dict], winners: dict, file=sys.stdout) -> None:
    print(f"{'codec':<7} {'size':>8} {'binding':<38} {'us/call':>10} {'MB/s':>8} {'vs best':>8}", file=file)
    for row in rows:
        best = min(r["us_per_call"] for r in rows if r["codec"] == row["codec"] and r["size"] == row["size"]
                   and not r["binding"].startswith("seglog"))
        mark = " *" if winners[row["codec"]][str(row["size"])] == row["binding"] else ""
        print(f"{row['codec']:<7} {row['size']:>8} {row['binding']:<38} {row['us_per_call']:>10.2f} "
              f"{row['mb_per_s']:>8.0f} {row['us_per_call'] / best:>7.2f}x{mark}", file=file)
    print("* fastest binding for the codec and size (MB/s of decompressed output)", file=file)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                        help="uncompressed sizes in bytes (default %(default)s)")
    parser.add_argument("--min-seconds", type=float, default=0.05, help="time per binding and round (default 0.05)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds; the best is kept (default 5)")
    parser.add_argument("--quick", action="store_true", help="short rounds (smoke tests)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.quick:
        args.min_seconds, args.rounds = 0.005, 1
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    rows = bench(args.sizes, args.min_seconds, args.rounds)
    winners = fastest(rows)
    report = {"load_average": os.getloadavg(), "versions": {"cramjam": cramjam.__version__, "lz4": lz4.VERSION,
                           "zstandard": zstandard.__version__, "zlib": zlib.ZLIB_RUNTIME_VERSION,
                           "python-snappy": getattr(python_snappy, "__version__", None)},
              "results": rows, "fastest": winners}
    if not args.quiet:
        print_table(rows, winners)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
