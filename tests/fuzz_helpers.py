"""Shared pieces of the fuzz tests: valid batches to start from, hypothesis mutations that
damage them, CRC fix-ups, and drivers that push one file through every parser of the dump path
and let only seglog errors escape.

Valid input comes from kafka-python's builders (an independent implementation of the formats),
so a mutation starts from bytes seglog did not write itself. ``fix_crc`` recomputes the stored
CRC after a mutation so the damage reaches the record decoder instead of stopping at the CRC.
"""

from __future__ import annotations

import os
import struct
import zlib
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from crc32c import crc32c
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record import legacy_records
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from seglog_cli.render.jsonl import batch_object
from seglog_cli.render.text import batch_line
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.control import parse_control_record
from seglog_cli.storage.dump.dump import DumpOptions, dump
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.indexes import OffsetIndex, TimeIndex, TransactionIndex
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.log.snapshots import read_snapshot

SEGMENT = "00000000000000000000"
NAMES = {
    "log": f"{SEGMENT}.log",
    "index": f"{SEGMENT}.index",
    "timeindex": f"{SEGMENT}.timeindex",
    "txnindex": f"{SEGMENT}.txnindex",
    "snapshot": f"{SEGMENT}.snapshot",
    "checkpoint": f"{SEGMENT}-0000000000.checkpoint",
}
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

# SEGLOG_FUZZ_SCALE=50 pytest tests/storage/log/test_fuzz_parsers.py: a long fuzzing session.
FUZZ_SCALE = float(os.environ.get("SEGLOG_FUZZ_SCALE", "1"))


def examples(count: int) -> int:
    """``count`` hypothesis examples, scaled by SEGLOG_FUZZ_SCALE."""
    return max(1, int(count * FUZZ_SCALE))

# Byte positions inside a v2 batch (spec §2.1) and a legacy entry (§6.1).
V2_LENGTH, V2_MAGIC, V2_CRC, V2_ATTRIBUTES, V2_COUNT, V2_HEADER = 8, 16, 17, 21, 57, 61
LEGACY_LENGTH, LEGACY_CRC, LEGACY_MAGIC, LEGACY_ATTRIBUTES = 8, 12, 16, 17

# -- building valid input ------------------------------------------------------------------------

def sample_records(count: int = 4, value_size: int = 40):
    """Compressible (key, value, headers) triples so every codec really compresses."""
    return [(b"key-%d" % i if i % 3 else None, (b"value-%d-" % i) * (value_size // 8 + 1),
             [("h%d" % i, b"x" * i)] if i % 2 else []) for i in range(count)]


def v2_batch(codec: int = 0, records=None, *, base_offset: int = 0, producer_id: int = -1,
             transactional: bool = False, timestamp: int = 1_700_000_000_000) -> bytearray:
    """A magic-2 batch as a producer writes it, with a broker-assigned ``base_offset``."""
    builder = DefaultRecordBatchBuilder(2, codec, transactional, producer_id,
                                        0 if producer_id >= 0 else -1,
                                        0 if producer_id >= 0 else -1, 1 << 24)
    for delta, (key, value, headers) in enumerate(records or sample_records()):
        builder.append(delta, timestamp + delta, key, value, headers)
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base_offset)
    return buf


def control_batch(type_id: int, value: bytes | None, *, base_offset: int = 0, key_version: int = 0,
                  key: bytes | None = None) -> bytearray:
    """A control batch (transaction marker or KRaft control record) with one record."""
    key = struct.pack(">hh", key_version, type_id) if key is None else key
    buf = v2_batch(0, [(key, value, [])], base_offset=base_offset, producer_id=7,
                   transactional=type_id in (0, 1))
    buf[V2_ATTRIBUTES + 1] |= 0x20
    return fix_crc(buf)


def legacy_entry(magic: int, codec: int = 0, records=None, *, offset: int = 0) -> bytearray:
    """A magic 0/1 log entry: one message, or a compressed wrapper of several (kafka-python
    gives wrappers offset 0; the broker gives them the last inner offset)."""
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 24)
    records = records or sample_records()
    with _plain_lz4_frame_for_v0():
        for n, (key, value, _) in enumerate(records):
            builder.append(n, 1_700_000_000_000 + n, key, value)
        buf = bytearray(builder.build())
    if codec:
        struct.pack_into(">q", buf, 0, offset + len(records) - 1)
    else:
        buf = buf[:_legacy_size(buf, 0)]  # the first message only
        struct.pack_into(">q", buf, 0, offset)
    return fix_crc(buf)


@contextmanager
def _plain_lz4_frame_for_v0():
    """kafka-python needs xxhash for Kafka 0.8's broken lz4 header checksum; seglog ignores that
    checksum for magic 0 (KIP-57), so a standard frame stands in for it."""
    with mock.patch.object(legacy_records, "lz4_encode_old_kafka", legacy_records.lz4_encode):
        yield


def _legacy_size(buf, position: int) -> int:
    return 12 + struct.unpack_from(">i", buf, position + LEGACY_LENGTH)[0]


def fix_crc(buf: bytearray, position: int = 0) -> bytearray:
    """Recompute the CRC of the entry at ``position`` as the writer would have (clamped to the
    buffer when the size field lies); returns ``buf``."""
    if len(buf) - position < 17:
        return buf
    size = struct.unpack_from(">i", buf, position + V2_LENGTH)[0]
    end = min(len(buf), max(position + 17, position + 12 + size))
    if buf[position + V2_MAGIC] >= 2 and end - position >= V2_HEADER - 40:
        struct.pack_into(">I", buf, position + V2_CRC, crc32c(bytes(buf[position + V2_ATTRIBUTES:end])))
    elif end - position >= 16:
        struct.pack_into(">I", buf, position + LEGACY_CRC, zlib.crc32(bytes(buf[position + LEGACY_MAGIC:end])))
    return buf


ENCODERS = {1: kafka_codec.gzip_encode, 2: kafka_codec.snappy_encode, 3: kafka_codec.lz4_encode,
            4: kafka_codec.zstd_encode}


def records_section(records=None) -> bytes:
    """The uncompressed records section (the bytes after the 61-byte header) of a v2 batch."""
    return bytes(v2_batch(0, records)[V2_HEADER:])


def v2_with_section(codec: int, section: bytes, *, count: int = 4, base_offset: int = 0) -> bytearray:
    """A v2 batch whose records section is ``section`` compressed with ``codec`` as is, length
    and CRC fixed: the way to put arbitrary bytes behind a working decompressor."""
    header = v2_batch(0, [(None, b"", [])] * max(1, min(count, 4)), base_offset=base_offset)[:V2_HEADER]
    payload = ENCODERS[codec](section) if codec else section
    buf = bytearray(header) + payload
    buf[V2_ATTRIBUTES + 1] = (buf[V2_ATTRIBUTES + 1] & ~0x07) | codec
    struct.pack_into(">i", buf, V2_LENGTH, len(buf) - 12)
    struct.pack_into(">i", buf, V2_COUNT, count)
    return fix_crc(buf)


def inner_message_set(magic: int, records=None) -> bytes:
    """Uncompressed legacy messages with relative offsets 0..n-1: a wrapper's inner set."""
    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 24)
    for n, (key, value, _) in enumerate(records or sample_records()):
        builder.append(n, 1_700_000_000_000 + n, key, value)
    return bytes(builder.build())


def legacy_wrapper(magic: int, codec: int, value: bytes | None, *, offset: int = 3,
                   compress: bool = True) -> bytearray:
    """A compressed legacy wrapper message whose value is ``value`` (compressed with ``codec``
    unless ``compress`` is False); CRC fixed."""
    if compress and value is not None:
        with _plain_lz4_frame_for_v0():
            value = ENCODERS[codec](value)
    body = struct.pack(">Ibb", 0, magic, codec)
    if magic >= 1:
        body += struct.pack(">q", 1_700_000_000_000)
    body += struct.pack(">i", -1)
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    buf = bytearray(struct.pack(">qi", offset, len(body)) + body)
    return fix_crc(buf)


def snapshot_file(entries, version: int = 1) -> bytearray:
    """A producer snapshot (§12.2) with a valid CRC; ``entries`` are 8-tuples in file order."""
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return bytearray(struct.pack(">hI", version, crc32c(body)) + body)


def fix_snapshot_crc(buf: bytearray) -> bytearray:
    if len(buf) >= 6:
        struct.pack_into(">I", buf, 2, crc32c(bytes(buf[6:])))
    return buf


def offset_index_for(log: bytes, every: int = 1) -> bytes:
    """The .index a broker would write for ``log`` (one entry per ``every`` entries)."""
    out = bytearray()
    for n, pos in enumerate(entry_positions(log)):
        if n % every == 0:
            last = struct.unpack_from(">q", log, pos)[0] + (
                struct.unpack_from(">i", log, pos + 23)[0] if log[pos + 16] >= 2 else 0)
            out += struct.pack(">ii", last, pos)
    return bytes(out)


def time_index_for(log: bytes) -> bytes:
    out = bytearray()
    for pos in entry_positions(log):
        if log[pos + 16] >= 2:
            last = struct.unpack_from(">q", log, pos)[0] + struct.unpack_from(">i", log, pos + 23)[0]
            out += struct.pack(">qi", struct.unpack_from(">q", log, pos + 35)[0], last)
    return bytes(out)


def entry_positions(buf) -> list[int]:
    """Start of every entry of a well-formed log."""
    positions, pos = [], 0
    while len(buf) - pos >= 17:
        positions.append(pos)
        pos += 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    return positions


# -- driving the parsers -------------------------------------------------------------------------

def check_error(exc: BaseException, path: str | Path) -> None:
    """A seglog error, rendering as one line that names the file."""
    assert isinstance(exc, SeglogError), f"{type(exc).__name__} escaped: {exc!r}"
    text = str(exc)
    assert "\n" not in text and "\r" not in text, f"multi-line error: {text!r}"
    assert Path(exc.path or "").name == Path(path).name, f"error does not name {path}: {text!r}"
    assert "\n" not in exc.kafka_line()


def drive_log(path: str | Path) -> int:
    """Every way the dump path reads a ``.log``: shallow scans with and without resync, deep
    records of every batch, control records of control batches, renderer fields. Returns the
    number of records decoded."""
    path = str(path)
    decoded = 0
    with MappedFile(path) as mapped:
        for resync in (True, False):
            scan = LogScan(mapped, resync=resync)
            for batch in scan:
                batch_line(batch)
                batch_object(batch, path)
                try:
                    for record in read_records(mapped.buffer, batch, path):
                        decoded += 1
                        if batch.is_control:
                            parse_control_record(record, path, batch.position)
                except SeglogError as exc:
                    check_error(exc, path)
            for finding in scan.findings:
                assert "\n" not in str(finding) and finding.path == path
            if scan.kafka_error is not None:
                check_error(scan.kafka_error, path)
    return decoded


def drive_offset_index(path: str | Path, targets=(0, 1, 5, 100, 2**31, -1)) -> None:
    with OffsetIndex(path, 0) as index:
        for target in targets:
            index.lookup(target)
        index.last_entry
        index.is_full
        list(index.iter_entries(index.dump_entry_count()))
        try:
            index.sanity_check()
        except SeglogError as exc:
            check_error(exc, path)


def drive_time_index(path: str | Path, targets=(0, 1, 1_700_000_000_000, 2**62, -1)) -> None:
    with TimeIndex(path, 0) as index:
        for target in targets:
            index.lookup(target)
        index.last_entry
        index.is_full
        list(index.iter_entries(index.dump_entry_count()))
        try:
            index.sanity_check()
        except SeglogError as exc:
            check_error(exc, path)


def drive_txn_index(path: str | Path) -> None:
    index = TransactionIndex(path, 0)
    try:
        list(index.aborted_txns())
        index.sanity_check()
    except SeglogError as exc:
        check_error(exc, path)


def drive_snapshot(path: str | Path) -> None:
    try:
        read_snapshot(path)
    except SeglogError as exc:
        check_error(exc, path)


DUMP_OPTION_SETS = (
    DumpOptions(),
    DumpOptions(deep_iteration=True),
    DumpOptions(deep_iteration=True, resync=False),
    DumpOptions(index_sanity_check=True),
    DumpOptions(verify_index_only=True, max_message_size=64),
    DumpOptions(deep_iteration=True, max_bytes=100),
)


def drive_dump(paths, options: DumpOptions = DumpOptions()) -> list:
    """The whole event stream of ``storage.dump.dump``; every error it carries is one line."""
    events = list(dump([str(p) for p in paths], options))
    for event in events:
        error = getattr(event, "error", None)
        if error is not None:
            assert "\n" not in str(error), f"multi-line error: {error}"
            assert error.path is not None, f"error names no file: {error}"
        text = getattr(event, "text", None)
        if text is not None:
            assert "\n" not in text, f"multi-line message: {text!r}"
    return events


# -- valid input to start from, and ways to damage it --------------------------------------------

INTERESTING_INT32 = [-2**31, -1, 0, 1, 13, 14, 48, 49, 60, 61, 2**15, 2**31 - 1]


def _seeds() -> dict[str, bytes]:
    seeds = {}
    for name, codec in CODECS.items():
        seeds[f"v2-{name}"] = bytes(v2_batch(codec))
        seeds[f"v2-{name}-single"] = bytes(v2_batch(codec, [(b"k", b"v" * 200, [])]))
    seeds["v2-transactional"] = bytes(v2_batch(0, producer_id=42, transactional=True))
    seeds["v2-empty-values"] = bytes(v2_batch(0, [(None, None, []), (b"", b"", [("", None)])]))
    for magic in (0, 1):
        seeds[f"v{magic}-none"] = bytes(legacy_entry(magic, 0))
        for name in ("gzip", "snappy", "lz4"):
            seeds[f"v{magic}-{name}"] = bytes(legacy_entry(magic, CODECS[name], offset=10))
    seeds["commit"] = bytes(control_batch(1, struct.pack(">hi", 0, 3)))
    seeds["abort"] = bytes(control_batch(0, struct.pack(">hi", 0, 3)))
    # LeaderChangeMessage v0: version, leader 1, voters [1], granting voters [1], no tagged fields
    seeds["leader-change"] = bytes(control_batch(2, bytes.fromhex("0000" "00000001" "02" "00000001" "00"
                                                                  "02" "00000001" "00" "00")))
    seeds["snapshot-header"] = bytes(control_batch(3, struct.pack(">hq", 0, 1_700_000_000_000) + b"\0"))
    seeds["snapshot-footer"] = bytes(control_batch(4, b"\0\0\0"))
    seeds["kraft-version"] = bytes(control_batch(5, b"\0\0\0\1\0"))
    seeds["kraft-voters"] = bytes(control_batch(
        6, b"\0\0" + b"\x02" + struct.pack(">i", 1) + bytes(16) + b"\x02\x05CTRL\x0alocalhost"
        + struct.pack(">H", 9093) + b"\0" + b"\0\0\0\1\0" + b"\0" + b"\0"))
    seeds["unknown-control"] = bytes(control_batch(77, b"whatever"))
    return seeds


SEEDS = _seeds()
SEED_NAMES = sorted(SEEDS)


def _field(offset: int, fmt: str, values):
    return st.tuples(st.just("field"), st.just(offset), st.just(fmt), values)


MUTATION = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(0, 255)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=9)),
    st.tuples(st.just("delete"), st.integers(0, 10**6), st.integers(1, 9)),
    _field(V2_LENGTH, ">i", st.sampled_from(INTERESTING_INT32) | st.integers(-2**31, 2**31 - 1)),
    _field(V2_MAGIC, ">B", st.integers(0, 255)),
    st.tuples(st.just("codec"), st.integers(0, 7)),
    st.tuples(st.just("attributes"), st.integers(0, 255)),
    _field(V2_COUNT, ">i", st.sampled_from(INTERESTING_INT32 + [10**6]) | st.integers(-2**31, 2**31 - 1)),
    _field(23, ">i", st.sampled_from(INTERESTING_INT32)),  # last_offset_delta
    _field(0, ">q", st.sampled_from([-1, 0, 2**31, 2**62, -2**63])),  # base offset
    _field(27, ">q", st.sampled_from([-1, 0, 2**63 - 1, -2**63])),  # base timestamp
    _field(53, ">i", st.sampled_from(INTERESTING_INT32)),  # base sequence
)


def mutate(buf: bytearray, mutations) -> bytearray:
    for mutation in mutations:
        kind = mutation[0]
        if kind == "flip" and buf:
            buf[mutation[1] % len(buf)] = mutation[2]
        elif kind == "truncate":
            del buf[mutation[1] % (len(buf) + 1):]
        elif kind == "insert":
            at = mutation[1] % (len(buf) + 1)
            buf[at:at] = mutation[2]
        elif kind == "delete" and buf:
            at = mutation[1] % len(buf)
            del buf[at:at + mutation[2]]
        elif kind == "field":
            _, at, fmt, value = mutation
            if at + struct.calcsize(fmt) <= len(buf):
                struct.pack_into(fmt, buf, at, value)
        elif kind == "codec" and len(buf) > 22:
            attributes_at = 22 if buf[V2_MAGIC] >= 2 else 17
            buf[attributes_at] = (buf[attributes_at] & ~7) | mutation[1]
        elif kind == "attributes" and len(buf) > 22:
            buf[22 if buf[V2_MAGIC] >= 2 else 17] = mutation[1]
    return buf


@st.composite
def damaged_logs(draw, max_entries: int = 3):
    """A log of 1-3 valid entries with increasing offsets, one of them damaged."""
    names = draw(st.lists(st.sampled_from(SEED_NAMES), min_size=1, max_size=max_entries))
    entries = []
    offset = 0
    for name in names:
        entry = bytearray(SEEDS[name])
        struct.pack_into(">q", entry, 0, offset + (struct.unpack_from(">q", entry, 0)[0] if entry[16] < 2 else 0))
        offset += 20
        entries.append(entry)
    target = draw(st.integers(0, len(entries) - 1))
    mutate(entries[target], draw(st.lists(MUTATION, min_size=1, max_size=4)))
    position = sum(len(e) for e in entries[:target])
    data = bytearray(b"".join(entries))
    if draw(st.integers(0, 9)) < 8:  # mostly: let the damage through the CRC check
        fix_crc(data, position)
    return bytes(data)
