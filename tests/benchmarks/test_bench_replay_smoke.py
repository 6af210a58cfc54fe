"""bench_replay still runs: a tiny log dir sent three ways to the test broker. No timing is
asserted; every way must deliver every record (the bench checks the acknowledgements)."""

from __future__ import annotations

from tests.benchmarks import bench_replay


def test_bench_replay_runs(tmp_path, capsys):
    summary = bench_replay.main(["--partitions", "2", "--size-mb", "0.2", "--repeat", "1", "--no-compile",
                                 "--json", str(tmp_path / "out.json")])
    assert summary["records"] > 100 and set(summary["ratios"]) == {"client", "client (keywords)",
                                                                    "replay (in process)", "replay (process)"}
    assert "goal: replay within 1.3x" in capsys.readouterr().out
    assert (tmp_path / "out.json").is_file()
