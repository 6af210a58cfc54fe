"""bench_parallel_decode still runs: every step on a tiny segment of two codecs. No timing is
asserted; the outputs of the dumps must be identical."""

from __future__ import annotations

from tests.benchmarks import bench_parallel_decode


def test_bench_parallel_decode_runs(tmp_path, capsys):
    results = bench_parallel_decode.main(["--size-mb", "0.3", "--codecs", "zstd,gzip", "--repeat", "1",
                                          "--jobs", "2", "--cache-dir", str(tmp_path), "--json",
                                          str(tmp_path / "out.json")])
    assert [r["codec"] for r in results] == ["zstd", "gzip"]
    for result in results:
        assert result["output_identical"]
        assert set(result["steps"]) == set(bench_parallel_decode.STEPS)
        assert result["steps"]["decompress"]["seconds"] > 0 and result["floor_seconds"] > 0
    assert "dump/floor" in capsys.readouterr().out
    assert (tmp_path / "out.json").is_file()
