"""bench_spark.py keeps working: its plain steps, and the pass-through step's IPC files and
reader, on a tiny log dir (the Spark steps need a JVM and minutes; the data source itself is
tested in tests/spark). No timing is asserted; Spark is never started."""

from __future__ import annotations

import pytest

from tests.benchmarks import bench_spark


def test_plain_steps_read_the_same_records(tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'seglog[spark]')")
    log_dir = bench_spark.prepare(tmp_path, 1)
    engine = bench_spark.run_step(["--step", "engine", str(log_dir)])
    reader = bench_spark.run_step(["--step", "reader", str(log_dir)])
    assert engine["records"] == reader["records"] > 1000
    assert reader["splits"] == 1 and engine["cpu"] > 0 and reader["cpu"] > 0
    assert bench_spark.per_million(engine) > 0


def test_passthrough_files_and_reader_hand_on_the_readers_batches(tmp_path):
    """The passthrough[N] step's IPC files hold exactly the ``seglog`` reader's batches, and the
    pass-through source's ``read()`` (called directly, no Spark) yields them unchanged."""
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'seglog[spark]')")
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'seglog[spark]')")
    from seglog_cli.spark.columns import RECORD_SCHEMA, record_batches
    from seglog_cli.spark.plan import ScanOptions, plan_splits
    from tests.benchmarks.passthrough_source import PassthroughDataSource

    log_dir = str(bench_spark.prepare(tmp_path, 1))
    options = ScanOptions()
    expected = [list(record_batches(split, options)) for split in plan_splits([log_dir], options)]
    records = sum(batch.num_rows for batches in expected for batch in batches)
    ipc_dir = tmp_path / "ipc"
    ipc_dir.mkdir()

    written = bench_spark.write_passthrough_files(log_dir, str(ipc_dir))

    assert written == {"files": len(expected), "records": records} and records > 1000
    files = sorted(ipc_dir.glob("*.arrow"))
    assert len(files) == len(expected)
    for path, batches in zip(files, expected):
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        assert table.schema == RECORD_SCHEMA
        assert table.equals(pa.Table.from_batches(batches, schema=RECORD_SCHEMA))

    reader = PassthroughDataSource({"path": str(ipc_dir)}).reader(None)
    partitions = reader.partitions()
    assert [partition.path for partition in partitions] == [str(path) for path in files]
    for partition, batches in zip(partitions, expected):
        read = list(reader.read(partition))
        assert [batch.num_rows for batch in read] == [batch.num_rows for batch in batches]
        assert all(got.schema == RECORD_SCHEMA and got.equals(want) for got, want in zip(read, batches))
    assert list(reader.read(None)) == []  # no file planned: nothing read
