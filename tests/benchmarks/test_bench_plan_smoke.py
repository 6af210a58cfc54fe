"""bench_plan.py keeps working on a few small segments and two 4 MiB ones: it plans them,
the walk it compares with gives the same splits, and every ratio is a number. No timing is
asserted."""

from __future__ import annotations

from tests.benchmarks import bench_plan


def test_bench_plan_runs_on_small_data(tmp_path):
    out = bench_plan.main(["--small", "20", "--big", "2", "--big-mb", "4", "--repeat", "1", "--quiet",
                           "--cache-dir", str(tmp_path), "--json", str(tmp_path / "plan.json")])
    small, big = out["results"]
    assert small["segments"] >= 20 and small["splits"] == small["segments"]
    assert big["segments"] == 2 and big["splits"] == 2  # 4 MiB: below splitBytes, one split each
    for result in (small, big):
        assert result["same_splits_as_walk"] is True
        assert result["plan_ms_per_segment"] > 0 and result["index_read_ms_per_segment"] > 0
        assert result["plan_over_index_read"] > 0
    assert (tmp_path / "plan.json").is_file()
