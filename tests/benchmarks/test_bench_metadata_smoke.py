"""bench_metadata.py keeps working on a tiny generated log: every figure is a number, the
processes exit 0 under the RSS goal. No timing is asserted."""

from __future__ import annotations

from tests.benchmarks import bench_metadata


def test_bench_metadata_runs_on_a_tiny_log(tmp_path):
    out = bench_metadata.main(["--records", "3000", "--cache-dir", str(tmp_path), "--quiet",
                               "--json", str(tmp_path / "metadata.json")])
    assert out["records"] >= 3000 and out["partitions"] == 290  # 30 topics of 10, one removed
    for key in ("load_end", "load_at_offset", "leader_elections"):
        assert out[key]["records_per_s"] > 0
    assert out["leader_elections"]["elections"] >= 1
    for key in ("process_end", "process_at_offset", "process_history"):
        assert out[key]["exit"] == 0, out[key]["stderr"]
    assert out["rss_goal_met"] is True
    assert (tmp_path / "metadata.json").is_file()
    assert bench_metadata.report(out)[0].startswith(f"{out['records']:,} records")
