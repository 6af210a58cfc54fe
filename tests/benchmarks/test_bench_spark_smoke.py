"""bench_spark.py keeps working: its plain steps on a tiny log dir (the Spark steps need a JVM
and minutes; the data source itself is tested in tests/spark). No timing is asserted."""

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
