"""Fuzzing the read path: any file, any byte, and only seglog errors come out.

Every parser behind ``seglog dump`` (the ``.log`` scan with and without resync, the record
decoder of every magic and codec, control records, the three indexes, producer snapshots and the
whole ``storage.dump`` event stream) is fed

* arbitrary bytes under every file name the dump dispatches on;
* valid batches built by kafka-python (magic 0/1/2, codecs none/gzip/snappy/lz4/zstd, control
  batches of every type) and then damaged at hypothesis-chosen places: flipped, inserted and
  deleted bytes, truncation, lying size fields, magic 3..255, codec ids 5-7, absurd record
  counts; the CRC is recomputed afterwards (mostly) so the damage reaches the record decoder
  instead of stopping at the CRC check;
* damaged *uncompressed* record streams recompressed into a valid batch, and damaged compressed
  payloads with a fixed CRC, so the decompressors and the decoder behind them see hostile input;
* decompression bombs, which must hit the 256 MiB output cap instead of exhausting memory;
* inputs that once made a parser quadratic (resync candidates everywhere, thousands of tiny
  gzip members, a time index without its offset index), with a time limit.

The oracle is the same everywhere: parsing succeeds, or raises a
:class:`~seglog_cli.storage.log.errors.SeglogError` whose text is one line naming the file. Any other
exception (IndexError, struct.error, ValueError, MemoryError, RecursionError, ...) escapes and
fails the test; a parse that takes longer than the hypothesis deadline fails it as a hang.
"""

from __future__ import annotations

import random
import resource
import struct
import tempfile
import time
import zlib
from pathlib import Path

import lz4.block
import pytest
import zstandard
from kafka.codec import snappy_encode
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.codecs import DEFAULT_MAX_OUTPUT, DecompressionError, decompress, xxh32
from seglog_cli.storage.log.control import parse_control_record
from seglog_cli.storage.dump.dump import DumpOptions, expand_paths
from seglog_cli.storage.dump.dump_events import KIND_NAMES, FileStart, Problem
from seglog_cli.storage.log.errors import DecodeError, SeglogError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.records import read_records
from tests.conftest import CORPUS, requires_corpus
from tests.fuzz_helpers import (
    CODECS,
    DUMP_OPTION_SETS,
    INTERESTING_INT32,
    MUTATION,
    NAMES,
    SEED_NAMES,
    SEEDS,
    V2_ATTRIBUTES,
    V2_HEADER,
    V2_LENGTH,
    V2_MAGIC,
    check_error,
    control_batch,
    damaged_logs,
    drive_dump,
    drive_log,
    drive_offset_index,
    drive_snapshot,
    drive_time_index,
    drive_txn_index,
    entry_positions,
    examples,
    fix_crc,
    fix_snapshot_crc,
    inner_message_set,
    legacy_wrapper,
    mutate,
    offset_index_for,
    records_section,
    snapshot_file,
    time_index_for,
    v2_batch,
    v2_with_section,
)

# deadline: a single example taking 2 s means a hang (they take milliseconds).
FUZZ = settings(max_examples=examples(120), deadline=2000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FUZZ_FEW = settings(FUZZ, max_examples=examples(40))


# -- the starting points ---------------------------------------------------------------------

def test_seeds_are_valid(tmp_path):
    """The starting points decode cleanly, so the fuzz tests below start from good data."""
    for name, data in SEEDS.items():
        path = tmp_path / NAMES["log"]
        path.write_bytes(data)
        with MappedFile(path) as mapped:
            scan = LogScan(mapped)
            (batch,) = list(scan)
            assert batch.is_valid and not scan.findings, name
            records = list(read_records(mapped.buffer, batch, str(path)))
            assert records, name
            if batch.is_control:
                control = parse_control_record(records[0], str(path), 0)
                assert control.type_id == 77 or control.type_name != "UNKNOWN", name


def test_every_codec_really_compresses():
    """kafka-python falls back to no compression when it does not pay; the seeds must not."""
    for name, codec in CODECS.items():
        assert SEEDS[f"v2-{name}"][V2_ATTRIBUTES + 1] & 7 == codec, name
    for magic in (0, 1):
        for name in ("gzip", "snappy", "lz4"):
            assert SEEDS[f"v{magic}-{name}"][17] & 7 == CODECS[name]


def _write(directory: Path, kind: str, data: bytes) -> Path:
    path = directory / NAMES[kind]
    path.write_bytes(data)
    return path


# -- 1. arbitrary bytes under every name -----------------------------------------------------------

# Random bytes, plus bytes that start like an entry so the scan gets past the size check.
FRAMED_GARBAGE = st.builds(
    lambda offset, size, magic, rest: struct.pack(">qiib", offset, size, -1, magic) + rest,
    st.integers(-2**63, 2**63 - 1) | st.just(0),
    st.sampled_from(INTERESTING_INT32) | st.integers(14, 400),
    st.integers(-128, 127) | st.sampled_from([0, 1, 2]),
    st.binary(max_size=400),
)
ANY_BYTES = st.binary(max_size=1500) | FRAMED_GARBAGE


@FUZZ
@given(data=ANY_BYTES)
def test_log_scan_and_records_accept_any_bytes(data):
    for kind in ("log", "checkpoint"):
        with tempfile.TemporaryDirectory() as tmp:
            path = _write(Path(tmp), kind, data)
            drive_log(path)
            drive_dump([path], DumpOptions(deep_iteration=True))


@FUZZ
@given(data=ANY_BYTES, start=st.integers(0, 2000), end=st.integers(0, 2000), resync=st.booleans(),
       bounded=st.booleans(), check_crc=st.booleans())
def test_log_scan_from_any_position(data, start, end, resync, bounded, check_crc):
    """Index entries send the scan to arbitrary positions and windows."""
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "log", data)
        with MappedFile(path) as mapped:
            scan = LogScan(mapped, min(start, mapped.size), end, resync=resync, bounded=bounded,
                           check_crc=check_crc)
            for batch in scan:
                assert start <= batch.position < batch.end_position <= mapped.size
                try:
                    list(read_records(mapped.buffer, batch, str(path)))
                except SeglogError as exc:
                    check_error(exc, path)


@FUZZ
@given(data=st.binary(max_size=600), log=st.sampled_from(["none", "valid", "garbage"]),
       index_entries=st.lists(st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1)),
                              max_size=20))
def test_offset_and_time_indexes_accept_any_bytes(data, log, index_entries):
    structured = b"".join(struct.pack(">ii", rel, pos) for rel, pos in index_entries)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        if log == "valid":
            _write(directory, "log", SEEDS["v2-none"] + SEEDS["v2-gzip"])
        elif log == "garbage":
            _write(directory, "log", data[::-1])
        for kind, drive in (("index", drive_offset_index), ("timeindex", drive_time_index)):
            for content in (data, structured):
                path = _write(directory, kind, content)
                drive(path)
                for options in DUMP_OPTION_SETS[:5]:
                    drive_dump([path], options)


@FUZZ
@given(data=st.binary(max_size=400) | st.lists(
    st.tuples(st.integers(-128, 127), st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1)),
    max_size=8).map(lambda rows: b"".join(struct.pack(">bxqqqq", v, pid, first, first, first)
                                          for v, pid, first in rows)))
def test_txn_index_accepts_any_bytes(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "txnindex", data)
        drive_txn_index(path)
        drive_dump([path])


SNAPSHOT_ENTRY = st.tuples(st.integers(-2**63, 2**63 - 1), st.integers(-2**15, 2**15 - 1),
                           st.sampled_from(INTERESTING_INT32), st.integers(-2**63, 2**63 - 1),
                           st.sampled_from(INTERESTING_INT32), st.integers(-2**63, 2**63 - 1),
                           st.sampled_from(INTERESTING_INT32), st.integers(-2**63, 2**63 - 1))


@FUZZ
@given(data=st.binary(max_size=300), entries=st.lists(SNAPSHOT_ENTRY, max_size=4),
       mutations=st.lists(MUTATION, max_size=3), fix=st.booleans(),
       version=st.sampled_from([1, 1, 0, 2, -1]))
def test_snapshots_accept_any_bytes(data, entries, mutations, fix, version):
    built = mutate(snapshot_file(entries, version), mutations)
    if fix:
        fix_snapshot_crc(built)
    with tempfile.TemporaryDirectory() as tmp:
        for content in (data, bytes(built)):
            path = _write(Path(tmp), "snapshot", content)
            drive_snapshot(path)
            drive_dump([path])


# -- 2. structure-aware: valid batches, damaged ----------------------------------------------------

@settings(FUZZ, max_examples=examples(300))
@given(data=damaged_logs())
def test_damaged_batches_give_only_seglog_errors(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "log", data)
        drive_log(path)
        for options in DUMP_OPTION_SETS[1:3]:
            drive_dump([path], options)


@FUZZ
@given(data=damaged_logs(max_entries=2), every=st.integers(1, 2), index_damage=st.lists(MUTATION, max_size=3))
def test_damaged_segment_with_its_indexes(data, every, index_damage):
    """A damaged log with the indexes a broker wrote for it (themselves possibly damaged)."""
    clean = b"".join(SEEDS[name] for name in ("v2-none", "v2-zstd", "v1-gzip"))
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        _write(directory, "log", data)
        index = mutate(bytearray(offset_index_for(clean, every)), index_damage)
        paths = [_write(directory, "index", bytes(index)),
                 _write(directory, "timeindex", time_index_for(clean))]
        for options in DUMP_OPTION_SETS:
            drive_dump(paths, options)


@FUZZ
@given(codec=st.sampled_from(["gzip", "snappy", "lz4", "zstd"]), mutations=st.lists(MUTATION, min_size=1, max_size=4),
       count=st.sampled_from([4, 4, 0, 1, 5, -1, 2**31 - 1]))
def test_damaged_record_stream_behind_a_working_decompressor(codec, mutations, count):
    """The uncompressed records are damaged, then compressed into a batch with a valid CRC, so
    every byte of damage reaches the record decoder."""
    section = mutate(bytearray(records_section()), mutations)
    data = v2_with_section(CODECS[codec], bytes(section), count=count)
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "log", bytes(data))
        drive_log(path)
        drive_dump([path], DumpOptions(deep_iteration=True))


@FUZZ
@given(magic=st.integers(0, 1), codec=st.sampled_from(["gzip", "snappy", "lz4"]),
       mutations=st.lists(MUTATION, min_size=1, max_size=4), offset=st.sampled_from([0, 3, 2, 2**40]))
def test_damaged_inner_messages_behind_a_working_decompressor(magic, codec, mutations, offset):
    inner = mutate(bytearray(inner_message_set(magic)), mutations)
    data = legacy_wrapper(magic, CODECS[codec], bytes(inner), offset=offset)
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "log", bytes(data))
        drive_log(path)


@FUZZ
@given(name=st.sampled_from([n for n in SEED_NAMES if "none" not in n and not n.startswith(("commit", "abort"))]),
       flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6))
def test_damaged_compressed_payload_with_fixed_crc(name, flips):
    """Bytes of the compressed payload flipped, CRC recomputed: the decompressors see it all."""
    data = bytearray(SEEDS[name])
    payload_start = V2_HEADER if data[V2_MAGIC] >= 2 else 26
    assume(len(data) > payload_start)
    for at, value in flips:
        data[payload_start + at % (len(data) - payload_start)] = value
    fix_crc(data)
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "log", bytes(data))
        drive_log(path)


@FUZZ_FEW
@given(value=st.binary(max_size=80) | st.none(), type_id=st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, -1, 32767]),
       key_version=st.sampled_from([0, 1, -1]), key_tail=st.binary(max_size=3), short_key=st.booleans())
def test_control_records_with_any_value(value, type_id, key_version, key_tail, short_key):
    key = struct.pack(">hh", key_version, type_id) + key_tail
    data = control_batch(type_id, value, key=key[:len(key_tail)] if short_key else key)
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "log", bytes(data))
        drive_log(path)


# -- 3. the whole dump over a directory of damaged files --------------------------------------------

@FUZZ_FEW
@given(files=st.fixed_dictionaries({kind: st.one_of(st.none(), st.binary(max_size=300), damaged_logs())
                                    for kind in NAMES}),
       options=st.builds(DumpOptions, deep_iteration=st.booleans(), resync=st.booleans(),
                         from_offset=st.none() | st.integers(-5, 100),
                         to_offset=st.none() | st.integers(-5, 100),
                         from_timestamp=st.none() | st.sampled_from([0, 1_700_000_000_002, 2**62]),
                         to_timestamp=st.none() | st.sampled_from([-1, 1_700_000_000_001])))
def test_dump_of_a_damaged_partition(files, options):
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "orders-0"
        directory.mkdir()
        for kind, content in files.items():
            if content is not None:
                _write(directory, kind, content)
        paths = list(expand_paths([str(directory)], KIND_NAMES, options))
        events = drive_dump(paths, options)
        if not paths:
            return
        starts = [event for event in events if type(event) is FileStart]
        assert len(starts) == len(paths)
        for problem in (event for event in events if type(event) is Problem):
            assert problem.error is None or isinstance(problem.error, SeglogError)


# -- decompression bombs -----------------------------------------------------------------------------

def _gzip_bomb(total: int) -> bytes:
    member = zlib.compressobj(9, zlib.DEFLATED, 31)
    one = member.compress(bytes(16 << 20)) + member.flush()
    return one * (total // (16 << 20) + 1)  # concatenated gzip members, like GZIPInputStream reads


def _lz4_bomb(total: int) -> bytes:
    block = lz4.block.compress(bytes(4 << 20), store_size=False)
    header = struct.pack("<I", 0x184D2204) + bytes([0x60, 0x70])
    header += bytes([(xxh32(header[4:]) >> 8) & 0xFF])
    blocks = (struct.pack("<I", len(block)) + block) * (total // (4 << 20) + 1)
    return header + blocks + bytes(4)


def _zstd_bomb(total: int) -> bytes:
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(64 << 20))
    return frame * (total // (64 << 20) + 1)  # concatenated frames, as Java producers may write


def _snappy_bomb(total: int) -> bytes:
    return snappy_encode(bytes(total))


@pytest.mark.parametrize("codec,bomb", [("gzip", _gzip_bomb), ("snappy", _snappy_bomb),
                                        ("lz4", _lz4_bomb), ("zstd", _zstd_bomb)])
def test_bombs_hit_the_output_cap(codec, bomb):
    data = bomb(4 << 20)
    assert len(data) < 1 << 20
    assert len(decompress(CODECS[codec], data, 2)) >= 4 << 20
    with pytest.raises(DecompressionError, match="exceeds"):
        decompress(CODECS[codec], data, 2, max_output=1 << 20)


@pytest.mark.parametrize("codec,bomb", [("gzip", _gzip_bomb), ("lz4", _lz4_bomb), ("zstd", _zstd_bomb)])
def test_bomb_in_a_batch_stops_at_256_mib_without_inflating_it(codec, bomb, tmp_path):
    """1 GiB of zeros behind a valid CRC: a DecodeError, and no gigabyte of memory."""
    total = 1 << 30 if codec == "zstd" else DEFAULT_MAX_OUTPUT + (32 << 20)
    data = bomb(total)
    batch = bytearray(v2_batch(0, [(None, b"x", [])]))[:V2_HEADER] + data
    batch[V2_ATTRIBUTES + 1] = CODECS[codec]
    struct.pack_into(">i", batch, V2_LENGTH, len(batch) - 12)
    fix_crc(batch)
    path = _write(tmp_path, "log", bytes(batch))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with MappedFile(path) as mapped:
        (header,) = list(LogScan(mapped))
        assert header.is_valid
        with pytest.raises(DecodeError, match="exceeds") as caught:
            read_records(mapped.buffer, header, str(path))
    check_error(caught.value, path)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 2 * DEFAULT_MAX_OUTPUT / (1 << 20) + 64  # the cap, not the bomb


# -- hangs: inputs that made a parser quadratic ------------------------------------------------------

def test_resync_over_candidates_everywhere_is_bounded(tmp_path):
    """8 MiB where every 16th position frames a 1 MiB entry: resync must not checksum each one
    (quadratic: ~4 TB of CRC); it gives up after its budget and says so."""
    unit = struct.pack(">qi", 0, 1 << 20) + bytes(4)
    data = bytearray(unit * ((8 << 20) // 16))
    data[8:12] = bytes(4)  # size 0 at position 0: damage, resync starts
    path = _write(tmp_path, "log", bytes(data))
    started = time.monotonic()
    with MappedFile(path) as mapped:
        scan = LogScan(mapped)
        assert list(scan) == []
    assert time.monotonic() - started < 20
    assert [f.code for f in scan.findings] == ["TRAILING_GARBAGE"]
    assert "resync gave up" in scan.findings[0].message


def test_resync_skips_random_payload_candidates(tmp_path):
    """Zeroed bytes in the middle of random payloads: resync finds the next batch quickly."""
    rng = random.Random(7)
    batches = [v2_batch(0, [(None, rng.randbytes(20000), []) for _ in range(10)], base_offset=10 * n)
               for n in range(40)]
    data = bytearray(b"".join(batches))
    damage = len(batches[0]) * 20 + 100
    data[damage - 100:damage + 4000] = bytes(4100)
    path = _write(tmp_path, "log", bytes(data))
    with MappedFile(path) as mapped:
        scan = LogScan(mapped)
        found = list(scan)
    assert len(found) == 39  # all but the damaged one
    assert [f.code for f in scan.findings] == ["CORRUPT_REGION"]


def test_many_tiny_gzip_members_are_linear(tmp_path):
    """1 MB of empty gzip members behind a valid CRC took 5 s (each member copied the rest of
    the input): a 64 MB batch would have taken hours."""
    member = zlib.compressobj(6, zlib.DEFLATED, 31)
    member = member.compress(b"") + member.flush()
    batch = bytearray(v2_batch(0, [(None, b"x", [])]))[:V2_HEADER] + member * (1_000_000 // len(member))
    batch[V2_ATTRIBUTES + 1] = CODECS["gzip"]
    struct.pack_into(">i", batch, V2_LENGTH, len(batch) - 12)
    path = _write(tmp_path, "log", bytes(fix_crc(batch)))
    started = time.monotonic()
    drive_log(path)
    assert time.monotonic() - started < 2.5


def test_time_index_without_offset_index_is_linear(tmp_path):
    """Without a ``.index`` every time index entry's search starts at position 0; 3000 entries
    over 12000 batches took 40 s when each search walked from there (now: well under 1 s)."""
    batch = bytearray(v2_batch(0, [(b"k", b"v" * 900, [])]))
    log, time_index = bytearray(), bytearray()
    for n in range(12000):
        struct.pack_into(">q", batch, 0, n)
        log += batch
        if n % 4 == 0:
            time_index += struct.pack(">qi", 1_700_000_000_000, n)
    _write(tmp_path, "log", bytes(log))
    path = _write(tmp_path, "timeindex", bytes(time_index))
    started = time.monotonic()
    events = drive_dump([path], DumpOptions(verify_index_only=True))
    assert time.monotonic() - started < 10
    report = events[-1]
    assert not report.time_index.mismatches and not report.time_index.shallow_offset_not_found
    assert len(next(iter(report.time_index.out_of_order.values()))) == 2999  # equal timestamps


# -- real broker files, damaged ----------------------------------------------------------------

def _corpus_logs() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    root = CORPUS / "kafka-4.2.0" / "data"
    picks = ["codecs-0", "txn-0", "logappend-0", "compacted-0", "__cluster_metadata-0"]
    logs = []
    for name in picks:
        logs += sorted((root / name).glob("*.log"))[:1]
    public = CORPUS / "public" / "asayers__kafkalite"
    logs += sorted(public.rglob("*.log"))[:2]
    return [log for log in logs if 0 < log.stat().st_size <= 4 << 20]


@requires_corpus
@FUZZ_FEW
@given(data=st.data())
def test_damaged_real_segments(data):
    logs = _corpus_logs()
    assume(logs)
    source = data.draw(st.sampled_from(logs), label="segment")
    content = bytearray(source.read_bytes())
    positions = entry_positions(content)
    start = data.draw(st.sampled_from(positions), label="batch") if positions else 0
    end = start + 12 + struct.unpack_from(">i", content, start + 8)[0] if positions else len(content)
    entry = mutate(bytearray(content[start:end]), data.draw(st.lists(MUTATION, min_size=1, max_size=3)))
    if data.draw(st.booleans()):
        fix_crc(entry)
    content[start:end] = entry
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / source.name
        path.write_bytes(bytes(content))
        drive_log(path)
        drive_dump([path], DumpOptions(deep_iteration=True))
