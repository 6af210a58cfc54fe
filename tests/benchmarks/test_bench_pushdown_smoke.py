"""bench_pushdown.py keeps working on two 4 MiB partitions, without Spark (its timed step needs
a JVM and minutes; pushdown itself is tested in tests/spark): the query's bounds come from the
index, the pushed filters plan only partition 1's splits, and reading those gives exactly the
rows the where() selects from a full read. No timing is asserted."""

from __future__ import annotations

import pytest

from tests.benchmarks import bench_pushdown


def test_pushed_query_plans_one_partition_and_reads_its_rows(tmp_path):
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'seglog[spark]')")
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'seglog[spark]')")
    from seglog_cli.spark.columns import record_batches

    log_dir = str(bench_pushdown.big_segments(tmp_path, 2, 4))
    low, high = bench_pushdown.query_bounds(log_dir, 300)
    assert low > 0 and high == low + 299
    planned = bench_pushdown.planned_splits(log_dir, low, high)
    assert planned["remaining"] == []  # every filter became a seek
    assert {(s.topic, s.partition) for s in planned["all"]} == {("big", 0), ("big", 1)}
    assert {(s.topic, s.partition) for s in planned["pushed"]} == {("big", 1)}
    assert len(planned["pushed"]) < len(planned["all"])

    def offsets(splits, options):
        return [(s.partition, offset) for s in splits for batch in record_batches(s, options)
                for offset in batch.column("offset").to_pylist()]

    from seglog_cli.spark.plan import ScanOptions

    full = [(p, o) for p, o in offsets(planned["all"], ScanOptions()) if p == 1 and low <= o <= high]
    assert offsets(planned["pushed"], planned["options"]) == full == [(1, o) for o in range(low, high + 1)]
    assert "offset between" in bench_pushdown.where_clause(low, high)
