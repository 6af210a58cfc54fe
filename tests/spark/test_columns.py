"""The reader behind the data sources, without a JVM: its Arrow rows equal ``seglog dump
--format jsonl`` record for record (real broker files and generated data, whole segments and
split ones), and damage is handled as the dump handles it."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'seglog[spark]')")
pc = pytest.importorskip("pyarrow.compute")

from seglog_cli.spark.columns import BATCH_SCHEMA, RECORD_SCHEMA, batch_batches, record_batches  # noqa: E402
from seglog_cli.spark.plan import ScanOptions, plan_splits  # noqa: E402
from seglog_cli.storage.log.errors import SeglogError  # noqa: E402
from tests.conftest import requires_corpus  # noqa: E402
from tests.spark.conftest import (  # noqa: E402
    arrow_batches,
    arrow_records,
    dump_batches,
    dump_records,
    log_partition_dirs,
    make_partition,
)


def read_table(paths, options: ScanOptions, reader=record_batches, schema=RECORD_SCHEMA):
    batches = [b for split in plan_splits([str(p) for p in paths], options) for b in reader(split, options)]
    for batch in batches:
        assert batch.schema.equals(schema)
        assert batch.num_rows <= options.max_records_per_batch
    return pa.Table.from_batches(batches, schema=schema)


def corpus_dirs(corpus) -> list[Path]:
    return [d for d in log_partition_dirs(corpus) if "golden" not in str(d.relative_to(corpus))]


@requires_corpus
@pytest.mark.parametrize("split_bytes", [128 * 1024 * 1024, 64 * 1024])
def test_corpus_records_equal_jsonl(corpus, split_bytes):
    dirs = corpus_dirs(corpus)
    expected = dump_records(dirs)
    assert len(expected) > 50_000
    got = arrow_records(read_table(dirs, ScanOptions(split_bytes=split_bytes, max_records_per_batch=3000)))
    assert got == expected


@requires_corpus
def test_corpus_batches_equal_jsonl(corpus):
    dirs = corpus_dirs(corpus)
    expected = dump_batches(dirs)
    got = arrow_batches(read_table(dirs, ScanOptions(split_bytes=64 * 1024), batch_batches, BATCH_SCHEMA))
    assert got == expected


@requires_corpus
def test_corpus_covers_legacy_control_and_every_codec(corpus):
    table = read_table(corpus_dirs(corpus), ScanOptions())
    assert set(table.column("compression").to_pylist()) >= {"none", "gzip", "snappy", "lz4", "zstd"}
    assert table.filter(pc.field("baseOffset").is_null()).num_rows > 0  # v0/v1 messages
    assert table.filter(pc.field("isControl")).num_rows > 0
    assert set(table.column("timestampType").to_pylist()) >= {-1, 0, 1}


@pytest.mark.parametrize("compression, one_record", [("none", False), ("lz4", False), ("zstd", True)])
def test_generated_split_segments_equal_jsonl(tmp_path, compression, one_record):
    make_partition(tmp_path / "logdir" / "gen-0", 3, compression, one_record)
    expected = dump_records([tmp_path / "logdir"])
    options = ScanOptions(split_bytes=512 * 1024)
    assert len(plan_splits([str(tmp_path / "logdir")], options)) >= 4
    assert arrow_records(read_table([tmp_path / "logdir"], options)) == expected


def test_offset_and_time_ranges_equal_dump_ranges(tmp_path):
    from tests.conftest import run_seglog

    make_partition(tmp_path / "logdir" / "gen-0", 2)
    plain = dump_records([tmp_path / "logdir"])
    low, high = plain[1000][4], plain[2500][4]
    options = ScanOptions(from_offset=low, to_offset=high, split_bytes=256 * 1024)
    got = arrow_records(read_table([tmp_path / "logdir"], options))
    assert got == [r for r in plain if low <= r[4] <= high]
    t0, t1 = plain[700][5], plain[900][5]
    got = arrow_records(read_table([tmp_path / "logdir"], ScanOptions(from_timestamp=t0, to_timestamp=t1)))
    result = run_seglog("dump", "--deep-iteration", "--format", "jsonl", "--from-timestamp", str(t0),
                        "--to-timestamp", str(t1), str(tmp_path / "logdir"))
    assert len(got) == result.out.count('"type":"record"') > 0
    assert got[0][5] >= t0


def _damaged_copy(corpus, tmp_path) -> tuple[Path, int]:
    """plain-0 with one byte flipped inside a batch's records (its CRC fails) and 300 bytes of
    garbage written over the start of a later batch (a corrupt region)."""
    target = tmp_path / "data" / "plain-0"
    shutil.copytree(corpus / "kafka-4.2.0" / "data" / "plain-0", target)
    log = sorted(target.glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    positions, pos = [], 0
    while pos + 12 <= len(data):
        positions.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    bad_crc = positions[10]
    data[bad_crc + 70] ^= 0xFF
    data[positions[40]:positions[40] + 300] = b"\x7f" * 300
    log.write_bytes(bytes(data))
    return target, bad_crc


@requires_corpus
def test_damage_is_handled_as_the_dump_handles_it(corpus, tmp_path):
    partition, bad_crc = _damaged_copy(corpus, tmp_path)
    expected = dump_records([partition])
    got = arrow_records(read_table([partition], ScanOptions(split_bytes=64 * 1024)))
    assert got == expected
    assert any(r[3] == bad_crc and r[16] is False for r in got)  # kept, flagged
    skipped = arrow_records(read_table([partition], ScanOptions(on_crc_mismatch="skip")))
    assert skipped == [r for r in expected if r[3] != bad_crc]
    with pytest.raises(SeglogError, match="CRC"):
        read_table([partition], ScanOptions(on_crc_mismatch="fail"))
    with pytest.raises(SeglogError, match=f"position {bad_crc}: .*batch fails its CRC"):
        read_table([partition], ScanOptions(fail_on_damage=True))  # the first damage met: the CRC failure
    with pytest.raises(SeglogError, match="CORRUPT_REGION"):  # CRC failures skipped; the framing damage still fails
        read_table([partition], ScanOptions(fail_on_damage=True, on_crc_mismatch="skip"))
    unchecked = arrow_records(read_table([partition], ScanOptions(check_crc=False)))
    assert [r[:16] for r in unchecked] == [r[:16] for r in expected] and {r[16] for r in unchecked} == {None}


def test_a_size_field_spanning_a_cut(tmp_path):
    """The documented difference: a damaged size field that reaches past a cut hides batches
    from a single scan (the dump resynchronises after them) but not from the split after the
    cut; with splitBytes=0 the rows are the dump's."""
    make_partition(tmp_path / "logdir" / "gen-0", 2)
    options = ScanOptions(split_bytes=512 * 1024)
    cut = plan_splits([str(tmp_path / "logdir")], options)[1].start
    log = tmp_path / "logdir" / "gen-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    positions, pos = [], 0
    while pos < len(data):
        positions.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    before = positions[positions.index(cut) - 1]
    landing = positions[positions.index(cut) + 3] + 7  # inside the fourth batch after the cut
    struct.pack_into(">i", data, before + 8, landing - before - 12)
    log.write_bytes(bytes(data))
    expected = dump_records([tmp_path / "logdir"])
    assert arrow_records(read_table([tmp_path / "logdir"], ScanOptions(split_bytes=0))) == expected
    split_rows = arrow_records(read_table([tmp_path / "logdir"], options))
    dumped = set(expected)
    hidden = [r for r in split_rows if r not in dumped]
    assert hidden and min(r[3] for r in hidden) == cut  # from the cut on, inside the misframed extent
    assert set(positions[positions.index(cut):positions.index(cut) + 4]) <= {r[3] for r in hidden}
    assert all(r[16] for r in hidden)  # every batch the dump skipped passes its CRC
    assert [r for r in split_rows if r in dumped] == expected


@requires_corpus
def test_live_copy_with_preallocated_indexes(live_copy):
    """Active segments as a running broker left them (10 MiB zero-filled .index tails): cuts come
    only from the written entries, and the rows are the dump's."""
    options = ScanOptions(split_bytes=64 * 1024)
    splits = plan_splits([str(live_copy)], options)
    assert len(splits) > len({s.path for s in splits})
    assert arrow_records(read_table([live_copy], options)) == dump_records([live_copy])


@requires_corpus
def test_reading_records_does_not_import_pandas_nor_unused_engine_modules(corpus):
    """A Spark Python worker reading a split does not import pandas (pyarrow imports it for any
    scalar or array made from Python values: a fixed 0.2-0.5 CPU-s per worker, more than the
    records of a small split cost); checked in a fresh interpreter over the corpus's topics,
    control records and legacy batches included."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    code = ("import sys\n"
            "from seglog_cli.spark.plan import ScanOptions, plan_splits\n"
            "from seglog_cli.spark.columns import record_batches\n"
            "options = ScanOptions()\n"
            "rows = sum(b.num_rows for s in plan_splits(sys.argv[1:], options) for b in record_batches(s, options))\n"
            "heavy = ('pandas', 'seglog_cli.storage.dump.dump', 'seglog_cli.storage.verify.verify_segment')\n"
            "print(rows, ','.join(m for m in heavy if m in sys.modules) or 'none')\n")
    paths = [str(corpus / "kafka-4.2.0" / "data"), str(corpus / "public")]
    done = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    rows, imported = done.stdout.split()
    assert int(rows) > 200_000 and imported == "none"  # nor the dump's and verify's modules: planner and
    # worker processes start with what they use (a range option or failOnDamage imports those)
