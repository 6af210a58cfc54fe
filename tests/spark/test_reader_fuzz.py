"""The data source's reader and option parser on arbitrary input: never an exception other than
seglog's own, and on damaged logs the rows are still those of ``seglog dump --format jsonl``,
whole or cut into splits at any entry."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'seglog[spark]')")

from seglog_cli.spark.columns import batch_batches, record_batches  # noqa: E402
from seglog_cli.spark.plan import OptionError, ScanOptions, Split, parse_options  # noqa: E402
from seglog_cli.storage.log.errors import SeglogError  # noqa: E402
from seglog_cli.spark.plan import _frames_valid_batch  # noqa: E402
from seglog_cli.storage.log.batches import LogScan  # noqa: E402
from seglog_cli.storage.log.files import MappedFile  # noqa: E402
from tests.fuzz_helpers import damaged_logs, examples  # noqa: E402
from tests.spark.conftest import arrow_records, dump_records  # noqa: E402

FUZZ = settings(max_examples=examples(60), deadline=10000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
OPTION_NAMES = ("checkCrc", "onCrcMismatch", "failOnDamage", "fromOffset", "toOffset", "fromTimestamp",
                "toTimestamp", "topics", "topicPattern", "splitBytes", "maxRecordsPerBatch", "other")


@FUZZ
@given(options=st.dictionaries(st.sampled_from(OPTION_NAMES), st.text(max_size=12)))
def test_options_are_parsed_or_refused_by_name(options):
    try:
        parse_options(options)
    except OptionError as exc:
        assert str(exc)


def _table(splits, options):
    import pyarrow as pa

    from seglog_cli.spark.columns import RECORD_SCHEMA

    return pa.Table.from_batches([b for s in splits for b in record_batches(s, options)], schema=RECORD_SCHEMA)


@FUZZ
@given(data=damaged_logs(max_entries=4), cut=st.integers(0, 3), check_crc=st.booleans())
def test_damaged_logs_read_as_the_dump_reads_them(data, cut, check_crc):
    with tempfile.TemporaryDirectory() as tmp:
        partition = Path(tmp) / "fuzz-0"
        partition.mkdir()
        log = partition / "00000000000000000000.log"
        log.write_bytes(data)
        expected = dump_records([partition])
        bounds = [0, len(data)]
        with MappedFile(log) as mapped:  # cuts where the planner may make one: a valid batch starts
            positions = [b.position for b in LogScan(mapped) if b.position > 0 and _frames_valid_batch(mapped, b.position)]
        if positions:
            bounds = [0, positions[cut % len(positions)], len(data)]
        splits = [Split(str(log), "fuzz", 0, 0, lo, hi, segment=log.name) for lo, hi in zip(bounds, bounds[1:])]
        got = arrow_records(_table(splits, ScanOptions(check_crc=check_crc)))
        if check_crc:
            assert got == expected
        else:  # without the CRC, isValid is null
            assert [r[:16] for r in got] == [r[:16] for r in expected] and {r[16] for r in got} <= {None}
        for strict in (ScanOptions(fail_on_damage=True, on_crc_mismatch="fail"),):
            try:
                _table(splits, strict)
                list(b for s in splits for b in batch_batches(s, strict))
            except SeglogError as exc:
                assert exc.path == str(log)
