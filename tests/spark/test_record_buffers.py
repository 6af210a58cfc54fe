"""The compiled column buffers (``columns_run``) against the general decoder they stand in for.

The reader takes clean v2 data batches through ``RecordBuffers``; switched off, every batch
goes through ``read_records``. Both must give the same Arrow table, column for column, on the
broker's files and on generated data with every codec, null keys and values, headers with null
values, header keys that are not UTF-8 (those batches go to the general decoder, which decodes
them as Java does), LogAppendTime, control batches and damage in between.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'seglog[spark]')")

from seglog_cli.spark import columns, record_buffers  # noqa: E402
from seglog_cli.spark.plan import ScanOptions, plan_splits  # noqa: E402
from seglog_cli.storage.log import native  # noqa: E402
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker  # noqa: E402
from seglog_cli.storage.log.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD  # noqa: E402
from tests.conftest import requires_corpus  # noqa: E402
from tests.spark.conftest import log_partition_dirs  # noqa: E402

pytestmark = pytest.mark.skipif(record_buffers.compiled_columns() is None, reason="the compiled module is not built")


def _table(paths, options: ScanOptions, monkeypatch, compiled: bool) -> pa.Table:
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(columns, "compiled_columns", lambda: None)
        batches = [b for split in plan_splits([str(p) for p in paths], options)
                   for b in columns.record_batches(split, options)]
    return pa.Table.from_batches(batches, schema=columns.RECORD_SCHEMA)


def _same(paths, options, monkeypatch) -> pa.Table:
    taken = {"fast": 0, "general": 0}
    run, decoded = record_buffers.RecordBuffers.run, columns._decoded

    def counting_run(self, buf, chunk, index, split_end):
        before = len(self)
        out = run(self, buf, chunk, index, split_end)
        taken["fast"] += len(self) - before
        return out

    def counting_decoded(*args):
        taken["general"] += 1  # batches handed to the general decoder
        return decoded(*args)

    with monkeypatch.context() as patch:
        patch.setattr(record_buffers.RecordBuffers, "run", counting_run)
        patch.setattr(columns, "_decoded", counting_decoded)
        fast = _table(paths, options, monkeypatch, True)
    assert taken["fast"] and taken["general"]  # both paths were used
    general = _table(paths, options, monkeypatch, False)
    assert fast.num_rows == general.num_rows
    for name in columns.RECORD_SCHEMA.names:
        assert fast.column(name).to_pylist() == general.column(name).to_pylist(), name
    return fast


@requires_corpus
def test_broker_files(corpus, monkeypatch):
    dirs = [d for d in log_partition_dirs(corpus) if "golden" not in str(d.relative_to(corpus))]
    table = _same(dirs, ScanOptions(split_bytes=64 * 1024, max_records_per_batch=777), monkeypatch)
    assert table.num_rows > 50_000


def _generated(directory: Path, seed: int) -> None:
    rng = random.Random(seed)
    directory.mkdir(parents=True)
    out, offset = [], 0
    for i in range(300):
        kind = rng.random()
        if kind < 0.05:
            out.append(build_end_txn_marker(commit=True, base_offset=offset, producer_id=3, producer_epoch=0,
                                            timestamp=1_700_000_000_000 + i))
            offset += 1
            continue
        if kind < 0.08:
            out.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 90))))  # garbage between batches
            continue
        records = []
        for j in range(rng.randint(1, 6)):
            key = None if rng.random() < 0.2 else bytes(rng.randrange(256) for _ in range(rng.randint(0, 12)))
            value = None if rng.random() < 0.2 else bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
            headers = tuple(
                (rng.choice([b"h", b"trace-id", "ключ".encode(), b"\xff\xfebad", b""]),
                 None if rng.random() < 0.3 else bytes(rng.randrange(256) for _ in range(rng.randint(0, 9))))
                for _ in range(rng.choice([0, 0, 1, 3])))
            records.append(NewRecord(key, value, headers=headers, timestamp=1_700_000_000_000 + i * 10 + j))
        out.append(build_batch(records, base_offset=offset, compression=rng.choice([NONE, GZIP, SNAPPY, LZ4, ZSTD]),
                               timestamp_type=rng.choice([0, 0, 1]), log_append_time=1_700_000_999_000))
        offset += len(records)
    (directory / "00000000000000000000.log").write_bytes(b"".join(out))


@pytest.mark.parametrize("seed", range(4))
def test_generated_logs(tmp_path, monkeypatch, seed):
    _generated(tmp_path / "gen-0", seed)
    table = _same([tmp_path / "gen-0"], ScanOptions(max_records_per_batch=50), monkeypatch)
    assert table.num_rows > 300
    assert None in table.column("key").to_pylist() and None in table.column("value").to_pylist()


def test_pure_python_engine_agrees(tmp_path, monkeypatch):
    """With the compiled module off, the general decoder alone gives the same table."""
    _generated(tmp_path / "gen-0", 99)
    fast = _table([tmp_path / "gen-0"], ScanOptions(), monkeypatch, True)
    native.set_enabled(False)
    try:
        pure = _table([tmp_path / "gen-0"], ScanOptions(), monkeypatch, True)
    finally:
        native.set_enabled(True)
    assert fast.to_pylist() == pure.to_pylist()


def test_a_batch_that_does_not_decompress_goes_to_the_general_decoder(tmp_path, monkeypatch):
    """lz4 bytes under a gzip codec (CRC recomputed, so only the decompression fails): no
    exception from the compiled path, and the same rows as the general decoder (none for it)."""
    import struct

    from crc32c import crc32c

    good = build_batch([NewRecord(b"k", b"v" * 40, timestamp=1_700_000_000_000)], base_offset=0)
    bad = bytearray(build_batch([NewRecord(b"k", b"v" * 40, timestamp=1_700_000_000_001)], base_offset=1,
                                compression=LZ4))
    struct.pack_into(">h", bad, 21, (struct.unpack_from(">h", bad, 21)[0] & ~7) | GZIP)
    struct.pack_into(">I", bad, 17, crc32c(bytes(bad[21:])))
    after = build_batch([NewRecord(b"k2", b"w", timestamp=1_700_000_000_002)], base_offset=2)
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "00000000000000000000.log").write_bytes(good + bytes(bad) + after)
    table = _same([tmp_path / "t-0"], ScanOptions(), monkeypatch)
    assert table.column("offset").to_pylist() == [0, 2]


@pytest.mark.parametrize("compiled", [True, False])
def test_arrow_batches_are_full_and_never_past_the_limit(tmp_path, monkeypatch, compiled):
    """An Arrow batch is closed before the Kafka batch that would overshoot it, whichever
    decoder read it: every one but the last holds more than limit - 6 rows (Kafka batches of
    1-6 records) and none more than the limit; a Kafka batch bigger than the limit alone is
    sliced."""
    _generated(tmp_path / "gen-0", 7)
    limit = 40
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(columns, "compiled_columns", lambda: None)
        options = ScanOptions(max_records_per_batch=limit)
        (split,) = plan_splits([str(tmp_path / "gen-0")], options)
        sizes = [b.num_rows for b in columns.record_batches(split, options)]
    # control batches, legacy-free garbage and non-UTF-8 header keys go through the general
    # decoder, the rest through the compiled path: both fill the same buffers
    assert max(sizes) <= limit and sum(sizes) > 300
    assert all(n > limit - 6 for n in sizes[:-1]), sizes

    big = build_batch([NewRecord(b"k", b"v", timestamp=1_700_000_000_000 + i) for i in range(100)], base_offset=0)
    (tmp_path / "big-0").mkdir()
    (tmp_path / "big-0" / "00000000000000000000.log").write_bytes(big)
    options = ScanOptions(max_records_per_batch=limit)
    (split,) = plan_splits([str(tmp_path / "big-0")], options)
    assert [b.num_rows for b in columns.record_batches(split, options)] == [40, 40, 20]
