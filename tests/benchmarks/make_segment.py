"""Write a realistic, deterministic ``.log`` segment of a given size, fast and in flat memory.

Records look like an application topic: keys of 10-20 bytes (``user-00012345``,
``order-2024-0012345``, 2 % null), JSON text values of mixed sizes (55 % small 40-200 B, 35 %
medium 200-1200 B, 10 % large 1.2-6 KB, built from a word list so they compress like text), a
W3C ``traceparent`` header on 20 % of records, millisecond timestamps that only go up, one
idempotent producer (producer id 4242, epoch 0, sequences following the offsets).

Speed: only a handful of distinct batches are encoded with ``build_batch`` (``--templates``,
default 256); the segment is those templates written round-robin, each copy re-stamped. The v2
header (Kafka ``DefaultRecordBatch``) is::

    0  base_offset        int64   not covered by the CRC
    8  length             int32
    12 partition_leader_epoch int32
    16 magic              int8
    17 crc                uint32  CRC-32C of bytes 21..end
    21 attributes         int16
    23 last_offset_delta  int32
    27 base_timestamp     int64   re-stamped
    35 max_timestamp      int64   re-stamped
    43 producer_id        int64
    51 producer_epoch     int16
    53 base_sequence      int32   re-stamped
    57 records_count      int32

so each copy gets a new base offset, base/max timestamps and base sequence, and its CRC is
recomputed with ``crc32c`` over the copied bytes (record timestamps are deltas from the base
timestamp, offsets deltas from the base offset, so the records stay valid). Output goes through
a 4 MiB buffer: memory stays flat whatever the size.

Usage::

    python tests/benchmarks/make_segment.py /tmp/seg/00000000000000000000.log --size-mb 256
    python tests/benchmarks/make_segment.py OUT --one-record --compression lz4
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys
import time
from pathlib import Path

from crc32c import crc32c

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from seglog_cli.storage.write.builder import NewRecord, build_batch  # noqa: E402
from seglog_cli.storage.log.codecs import CODEC_NAMES  # noqa: E402

GENERATOR_VERSION = 2
CODECS = {name: codec for codec, name in CODEC_NAMES.items()}
PRODUCER_ID = 4242
START_TIMESTAMP = 1_735_689_600_000  # 2025-01-01T00:00:00Z
FLUSH_BYTES = 4 * 1024 * 1024

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_BASE_OFFSET_AT, _CRC_AT, _CRC_FROM = 0, 17, 21
_LAST_OFFSET_DELTA_AT, _BASE_TS_AT, _MAX_TS_AT, _BASE_SEQUENCE_AT, _COUNT_AT = 23, 27, 35, 53, 57

_WORDS = ("order payment shipped cart checkout user session click view product price quantity "
          "currency status pending completed failed retry warehouse region eu-west-1 us-east-1 "
          "latency error timeout success mobile desktop browser android ios campaign coupon "
          "discount inventory restock delivery address city country postal email verified "
          "the a of and to in for with on from by at is was new old first last").split()
_EVENTS = ("page_view", "add_to_cart", "checkout_started", "payment_authorized", "order_shipped",
           "login", "logout", "search", "review_posted", "refund_requested")
_KEY_FORMATS = ("user-{:08d}", "order-2024-{:07d}", "sess-{:012x}", "device-{:06d}", "sku-{:09d}")


def random_key(rng: random.Random) -> bytes | None:
    if rng.random() < 0.02:
        return None
    return rng.choice(_KEY_FORMATS).format(rng.randrange(10**6, 10**7)).encode()


def random_value(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.55:
        target = rng.randint(40, 200)
    elif roll < 0.90:
        target = rng.randint(200, 1200)
    else:
        target = rng.randint(1200, 6000)
    head = (f'{{"event":"{rng.choice(_EVENTS)}","id":{rng.randrange(10**9)},'
            f'"user":"user-{rng.randrange(10**7):08d}","amount":{rng.randrange(100000) / 100},'
            f'"note":"')
    words = []
    size = len(head) + 2
    while size < target:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    return (head + " ".join(words))[:max(target - 2, 1)].encode() + b'"}'


def random_headers(rng: random.Random) -> tuple:
    if rng.random() >= 0.20:
        return ()
    trace = f"00-{rng.getrandbits(128):032x}-{rng.getrandbits(64):016x}-01"
    return (("traceparent", trace.encode()),)


def random_record(rng: random.Random, timestamp: int) -> NewRecord:
    return NewRecord(key=random_key(rng), value=random_value(rng), headers=random_headers(rng),
                     timestamp=timestamp)


def make_templates(count: int, batch_bytes: int, one_record: bool, compression: int,
                   seed: int) -> list[bytes]:
    """``count`` distinct batches at offset 0. A multi-record batch takes records while their
    encoded size stays within ``batch_bytes`` (uncompressed), as the producer fills
    ``batch.size``; a larger record gets a batch of its own."""
    rng = random.Random(seed)
    templates = []
    pending = None
    for _ in range(count):
        timestamp = START_TIMESTAMP
        records = []
        size = 0
        while True:
            record = pending or random_record(rng, timestamp)
            pending = None
            record_size = 20 + len(record.key or b"") + len(record.value) + (70 if record.headers else 0)
            if records and (one_record or size + record_size > batch_bytes):
                pending = record  # like the producer: a record that does not fit opens the next batch
                break
            records.append(NewRecord(record.key, record.value, record.headers, timestamp))
            size += record_size
            timestamp += rng.randint(0, 3)
        templates.append(build_batch(records, base_offset=0, compression=compression,
                                     producer_id=PRODUCER_ID, producer_epoch=0, base_sequence=0,
                                     partition_leader_epoch=0))
    return templates


def write_segment(path: str | Path, size_bytes: int, *, batch_bytes: int = 3000,
                  one_record: bool = False, compression: str = "none", seed: int = 20250101,
                  templates: int = 256, base_offset: int = 0) -> dict:
    """Write the segment; returns its metadata (batches, records, bytes, last offset, ...)."""
    started = time.perf_counter()
    batches = make_templates(templates, batch_bytes, one_record, CODECS[compression], seed)
    spans = [_INT64.unpack_from(b, _MAX_TS_AT)[0] - _INT64.unpack_from(b, _BASE_TS_AT)[0]
             for b in batches]
    rng = random.Random(seed + 1)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    offset, timestamp, written, batch_count, record_count = base_offset, START_TIMESTAMP, 0, 0, 0
    buffer = bytearray()
    with open(path, "wb") as out:
        index = 0
        while True:
            template = batches[index % len(batches)]
            index += 1
            size = len(template)
            if written + size > size_bytes:
                break
            at = len(buffer)
            buffer += template
            _INT64.pack_into(buffer, at + _BASE_OFFSET_AT, offset)
            _INT64.pack_into(buffer, at + _BASE_TS_AT, timestamp)
            _INT64.pack_into(buffer, at + _MAX_TS_AT, timestamp + spans[(index - 1) % len(batches)])
            _INT32.pack_into(buffer, at + _BASE_SEQUENCE_AT, (offset - base_offset) % 2**31)
            with memoryview(buffer) as view:
                _UINT32.pack_into(buffer, at + _CRC_AT, crc32c(view[at + _CRC_FROM:at + size]))
            offset += _INT32.unpack_from(template, _LAST_OFFSET_DELTA_AT)[0] + 1
            record_count += _INT32.unpack_from(template, _COUNT_AT)[0]
            timestamp += spans[(index - 1) % len(batches)] + rng.randint(1, 5)
            batch_count += 1
            written += size
            if len(buffer) >= FLUSH_BYTES:
                out.write(buffer)
                buffer.clear()
        out.write(buffer)
    return {
        "path": str(path), "generator_version": GENERATOR_VERSION, "size_bytes": written,
        "target_bytes": size_bytes, "shape": "one-record" if one_record else "multi",
        "batch_bytes": None if one_record else batch_bytes, "compression": compression,
        "seed": seed, "templates": templates, "batches": batch_count, "records": record_count,
        "base_offset": base_offset, "next_offset": offset,
        "mean_batch_bytes": written / batch_count if batch_count else 0,
        "seconds": time.perf_counter() - started,
    }


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", help="output .log file (parent directories are created)")
    parser.add_argument("--size-mb", type=float, default=256.0, help="target size in MiB (default 256)")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--batch-bytes", type=int, default=3000,
                       help="multi-record batches of about this many uncompressed bytes (default 3000)")
    shape.add_argument("--one-record", action="store_true", help="one record per batch")
    parser.add_argument("--compression", choices=sorted(CODECS), default="none")
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--templates", type=int, default=256, help="distinct batches to cycle through")
    parser.add_argument("--base-offset", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    meta = write_segment(args.path, int(args.size_mb * 1024 * 1024), batch_bytes=args.batch_bytes,
                         one_record=args.one_record, compression=args.compression, seed=args.seed,
                         templates=args.templates, base_offset=args.base_offset)
    print(json.dumps(meta, indent=2))
    return meta


if __name__ == "__main__":
    main()
