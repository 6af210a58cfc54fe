"""The benchmark scripts keep working: each runs on a tiny segment. No timing is asserted."""

from __future__ import annotations

import json
import subprocess

import pytest

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.files import MappedFile
from tests.benchmarks import bench_codecs, bench_dump, make_segment

TINY = 300 * 1024


@pytest.mark.parametrize("shape", [{}, {"one_record": True}, {"compression": "lz4"}])
def test_make_segment_is_deterministic_and_valid(tmp_path, shape):
    first = make_segment.write_segment(tmp_path / "a" / "00000000000000000000.log", TINY, **shape)
    second = make_segment.write_segment(tmp_path / "b" / "00000000000000000000.log", TINY, **shape)
    data = (tmp_path / "a" / "00000000000000000000.log").read_bytes()
    assert data == (tmp_path / "b" / "00000000000000000000.log").read_bytes()
    assert first["size_bytes"] == len(data) <= TINY
    assert TINY - len(data) < 10_000  # filled up to the last batch that fits
    with MappedFile(first["path"]) as mapped:
        scan = LogScan(mapped)
        batches = list(scan)
        assert scan.findings == [] and scan.valid_bytes == len(data)
    assert all(batch.is_valid for batch in batches)
    assert [b.base_offset for b in batches[1:]] == [b.next_offset for b in batches[:-1]]
    assert all(b.max_timestamp >= b.base_timestamp for b in batches)
    assert all(later.base_timestamp > earlier.max_timestamp for earlier, later in zip(batches, batches[1:]))
    assert len(batches) == first["batches"] == second["batches"]
    assert sum(b.records_count for b in batches) == first["records"]
    assert batches[-1].next_offset == first["next_offset"]
    if shape.get("one_record"):
        assert first["records"] == first["batches"]
    else:
        assert first["records"] > first["batches"]


def test_benchmark_readers_see_every_record(tmp_path):
    pytest.importorskip("kafka")
    meta = make_segment.write_segment(tmp_path / "00000000000000000000.log", TINY, compression="lz4")
    engine = bench_dump.step_engine_decode(meta["path"])
    kafka = bench_dump.step_kafka_python(meta["path"], window=16 * 1024)  # several windows
    assert engine["records"] == kafka["records"] == meta["records"]
    assert engine["payload_bytes"] == kafka["payload_bytes"] > 0
    assert kafka["batches"] == meta["batches"] and kafka["crc_ok"]
    scan = bench_dump.step_header_scan(meta["path"])
    assert scan["batches"] == meta["batches"] and scan["valid_bytes"] == meta["size_bytes"]


def test_deep_dump_prints_a_line_per_batch_and_record(tmp_path):
    meta = make_segment.write_segment(tmp_path / "00000000000000000000.log", TINY, one_record=False)
    out = subprocess.run(bench_dump.seglog_command() + ["dump", *bench_dump.CLI_STEPS["dump_deep"], meta["path"]],
                         capture_output=True, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == 2 + meta["batches"] + meta["records"]  # "Dumping", "Log starting offset"
    assert sum(line.startswith(b"| offset: ") for line in lines) == meta["records"]


def test_bench_dump_main_on_a_tiny_segment(tmp_path):
    pytest.importorskip("kafka")
    report = bench_dump.main(["--sizes", "0.3", "--allow-small", "--repeat", "1", "--quiet",
                              "--variants", "one-none,multi-lz4", "--cache-dir", str(tmp_path / "cache"),
                              "--json", str(tmp_path / "out.json")])
    assert (tmp_path / "out.json").is_file()
    assert set(report) >= {"machine", "settings", "startup", "results", "goals"}
    assert len(report["results"]) == 2
    for result in report["results"]:
        assert result["problems"] == []
        steps = result["steps"]
        assert set(steps) >= {"startup", "read", "mmap_touch", "crc_all", "header_scan", "header_scan_nocrc",
                              "engine_decode", "kafka_python", "dump_batches", "dump_deep"}
        for step in steps.values():
            assert step["seconds"] > 0 and step["wall"] > 0 and step["peak_rss_mb"] > 0
        ratios = result["ratios"]
        for key in ("header_scan_batches_per_s", "dump_batches_batches_per_s", "dump_deep_records_per_s",
                    "kafka_python_records_per_s", "engine_decode_records_per_s", "deep_dump_vs_kafka_python",
                    "dump_batches_time_vs_read", "read_mb_per_s", "seglog_peak_rss_mb"):
            assert ratios[key] > 0, key
    assert set(report["goals"]) == {"deep_dump_vs_kafka_python", "header_scan_batches_per_s_one_record",
                                    "peak_rss_mb"}
    assert all(goal["worst"] > 0 for goal in report["goals"].values())


def test_bench_dump_refuses_small_segments_without_the_flag():
    with pytest.raises(SystemExit):
        bench_dump.parse_args(["--sizes", "1"])


def test_bench_codecs_main_runs_quickly():
    report = bench_codecs.main(["--quick", "--quiet", "--sizes", "200,16384"])
    rows = report["results"]
    assert {row["codec"] for row in rows} == {"gzip", "snappy", "lz4", "zstd"}
    assert {row["size"] for row in rows} == {200, 16384}
    assert all(row["us_per_call"] > 0 and row["mb_per_s"] > 0 for row in rows)
    assert set(report["fastest"]) == {"gzip", "snappy", "lz4", "zstd"}
    assert all(set(by_size) == {"200", "16384"} for by_size in report["fastest"].values())


def test_bench_verify_main_on_a_tiny_segment(tmp_path):
    pytest.importorskip("kafka")
    from tests.benchmarks import bench_verify

    report = bench_verify.main(["--sizes", "0.3", "--allow-small", "--repeat", "1", "--quiet",
                                "--variants", "multi-none,one-none", "--cache-dir", str(tmp_path / "cache"),
                                "--json", str(tmp_path / "out.json")])
    assert (tmp_path / "out.json").is_file() and len(report["results"]) == 2
    for result in report["results"]:
        assert result["problems"] == []  # every step saw every batch (and record), status clean
        assert set(result["steps"]) == set(bench_verify.ALL_STEPS)
        ratios = result["ratios"]
        for key in ("shallow_vs_crc", "shallow_vs_kafka_python_crc", "deep_vs_kafka_python", "jobs2_speedup_shallow",
                    "jobs2_speedup_deep", "verify_peak_rss_mb"):
            assert ratios[key] > 0, key
    assert set(report["goals"]) == {"shallow_vs_crc_3kb_batches", "shallow_vs_kafka_python_crc_one_record",
                                    "deep_vs_kafka_python", "jobs2_speedup_shallow", "jobs2_speedup_deep",
                                    "peak_rss_mb", "rss_growth_mb"}


def test_bench_append_main_on_a_tiny_input(tmp_path):
    from tests.benchmarks import bench_append

    report = bench_append.main(["--mb", "0.05", "--repeat", "1", "--quiet", "--value-sizes", "100,1000",
                                "--codecs", "none,lz4", "--cache-dir", str(tmp_path / "cache"),
                                "--json", str(tmp_path / "out.json")])
    assert (tmp_path / "out.json").is_file() and len(report["results"]) == 4
    for result in report["results"]:
        assert result["problems"] == []  # build, plain write, engine and CLI wrote the same .log bytes
        assert set(result["steps"]) == set(bench_append.ALL_STEPS)
        for step in result["steps"].values():
            assert step["seconds"] > 0 and step["peak_rss_mb"] > 0
        for key in ("build_records_per_s", "engine_records_per_s", "cli_records_per_s", "write_fsync_mb_per_s",
                    "engine_vs_build", "engine_vs_write_fsync", "cli_vs_engine", "engine_plan_share"):
            assert result["ratios"][key] > 0, key
    assert set(report["goals"]) == {"engine_vs_build", "cli_vs_engine"}
    assert not (tmp_path / "cache" / "append-work").exists()


def test_bench_append_batches_like_the_cli():
    from seglog_cli.storage.write.builder import BATCH_OVERHEAD, record_size
    from tests.benchmarks import bench_append

    variant = {"value_size": 1000, "codec": "none", "records": 100, "seed": 1}
    records = bench_append.variant_records(variant)
    assert all(len(r.value) == 1000 for r in records)
    batches = bench_append.variant_batches(variant)
    assert sum(map(len, batches)) == 100 and len(batches) > 1
    for batch in batches:
        assert BATCH_OVERHEAD + sum(record_size(r, i, r.timestamp - batch[0].timestamp)
                                    for i, r in enumerate(batch)) <= bench_append.BATCH_SIZE


def test_bench_rebuild_index_main_on_a_tiny_segment(tmp_path):
    from tests.benchmarks import bench_rebuild_index

    report = bench_rebuild_index.main(["--sizes", "0.3", "--allow-small", "--repeat", "1", "--quiet", "--profile",
                                       "--variants", "one-none,multi-none", "--cache-dir", str(tmp_path / "cache"),
                                       "--json", str(tmp_path / "out.json")])
    assert (tmp_path / "out.json").is_file() and len(report["results"]) == 2
    for result in report["results"]:
        assert result["problems"] == []  # every step saw every batch; the plans change nothing
        assert set(result["steps"]) == set(bench_rebuild_index.ALL_STEPS)
        for key in ("scan_crc_batches_per_s", "walk_batches_per_s", "plan_batches_per_s", "walk_vs_scan_crc",
                    "walk_vs_scan_nocrc", "plan_vs_scan_crc", "seglog_peak_rss_mb"):
            assert result["ratios"][key] > 0, key
        profile = result["profile"]
        assert profile["total_seconds"] > 0 and profile["top_own"] and "plan_rebuild" in profile["cumulative_text"]
    assert set(report["goals"]) == {"walk_batches_per_s_one_record", "plan_batches_per_s_one_record"}


def test_bench_rebuild_index_refuses_small_segments_without_the_flag():
    from tests.benchmarks import bench_rebuild_index

    with pytest.raises(SystemExit):
        bench_rebuild_index.parse_args(["--sizes", "1"])


def test_bench_recover_main_on_a_tiny_log_dir(tmp_path):
    from tests.benchmarks import bench_recover

    report = bench_recover.main(["--partitions", "2", "--segments", "2", "--segment-mb", "0.2", "--repeat", "1",
                                 "--quiet", "--variants", "one-none", "--cache-dir", str(tmp_path / "cache"),
                                 "--json", str(tmp_path / "out.json")])
    assert (tmp_path / "out.json").is_file() and len(report["results"]) == 1
    (result,) = report["results"]
    assert result["problems"] == []  # verify saw every batch, recover recovered all 4 segments, truncated nothing
    assert set(result["steps"]) == set(bench_recover.ALL_STEPS)
    for key in ("verify_mb_per_s", "recover_mb_per_s", "recover_vs_verify", "cli_recover_vs_cli_verify"):
        assert result["ratios"][key] > 0, key
    assert set(report["goals"]) == {"recover_vs_shallow_verify"}


def test_bench_startup_main_with_two_rounds(tmp_path):
    from tests.benchmarks import bench_startup

    report = bench_startup.main(["--runs", "2", "--quiet", "--no-compile", "--json", str(tmp_path / "out.json")])
    assert json.loads((tmp_path / "out.json").read_text())["goal"] == report["goal"]
    steps = report["steps"]
    assert list(steps) == list(bench_startup.STEPS)
    for name, step in steps.items():
        assert step["runs"] == 2 and 0 < step["min"] <= step["median"] <= step["max"]
        assert step["ratio"] > 0 and isinstance(step["within_goal"], bool)
        assert (step["stdout_bytes"] > 0) == (name != bench_startup.BASELINE)  # each command printed its output
    assert steps["python_pass"]["ratio"] == 1.0
    goal = report["goal"]
    assert goal["goal_ratio"] == 5.0 and goal["worst_step"] in steps and goal["worst_step"] != "python_pass"
    assert goal["met"] == all(step["ratio"] <= 5.0 for step in steps.values())


def test_bench_diff_main_on_tiny_replicas(tmp_path):
    from tests.benchmarks import bench_diff

    result = bench_diff.main(["--size-mb", "0.5", "--repeat", "1", "--dir", str(tmp_path / "replicas"),
                              "--json", str(tmp_path / "out.json")])
    assert result["diff"]["exit"] == 0 and result["floor"]["exit"] == 0  # two identical replicas agree
    assert result["batches_per_replica"] > 100 and result["ratio"] > 0


def test_bench_memory_main_reports_every_command(tmp_path):
    from tests.benchmarks import bench_memory

    report = bench_memory.main(["--sizes", "0.3", "--codecs", "none,zstd", "--append-records", "300", "--quiet",
                                "--work-dir", str(tmp_path / "work"), "--json", str(tmp_path / "out.json")])
    assert json.loads((tmp_path / "out.json").read_text())["results"] == report["results"]
    assert report["problems"] == []  # exit statuses as expected, salvage cut, kafka truncated, inputs untouched
    rows = {(row["command"], row["codec"]): row for row in report["results"]}
    assert set(rows) == {(command, codec) for command in bench_memory.COMMANDS for codec in ("none", "zstd")}
    baseline = report["baseline"]["peak_rss_mb"]
    assert 0 < baseline < 100
    for row in rows.values():
        assert row["peak_rss_mb"] > baseline  # a seglog process imports more than a bare interpreter
        assert row["below_goal"] == (row["peak_rss_mb"] < bench_memory.GOAL_MB)
    assert rows[("recover_salvage_apply", "none")]["log_bytes_after"] < rows[("dump_deep", "none")]["input_bytes"]
    assert report["goals"]["peak_rss_mb"]["worst"] == max(row["peak_rss_mb"] for row in rows.values())
    assert not (tmp_path / "work" / "runs").exists() and list((tmp_path / "work").iterdir()) == []
