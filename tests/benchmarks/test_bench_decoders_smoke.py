"""bench_decoders.py keeps working: its generated __consumer_offsets segment decodes cleanly and
the script runs on a few thousand records. No timing is asserted."""

from __future__ import annotations

import json
import subprocess

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.files import MappedFile
from tests.benchmarks import bench_decoders, bench_dump


def test_generated_segment_is_valid_and_every_record_decodes(tmp_path):
    meta = bench_decoders.write_offsets_segment(tmp_path / "__consumer_offsets-0" / "00000000000000000000.log", 3000)
    again = bench_decoders.write_offsets_segment(tmp_path / "again" / "00000000000000000000.log", 3000)
    assert (tmp_path / "again" / "00000000000000000000.log").read_bytes() == open(meta["path"], "rb").read()
    assert again["records"] == meta["records"] >= 3000
    with MappedFile(meta["path"]) as mapped:
        scan = LogScan(mapped)
        batches = list(scan)
    assert scan.findings == [] and len(batches) == meta["batches"]
    assert sum(b.records_count for b in batches) == meta["records"]
    out = subprocess.run(bench_dump.seglog_command() + ["dump", "--offsets-decoder", meta["path"]],
                         capture_output=True, check=True, text=True).stdout
    records = [line for line in out.splitlines() if line.startswith("| offset: ")]
    assert len(records) == meta["records"]
    assert not [line for line in records if "Error at offset" in line or "Unknown record type" in line]
    for record_type in ('"type":"0"', '"type":"1"', '"type":"2"'):  # legacy, commits, group metadata
        assert any(record_type in line for line in records)
    assert any(line.endswith("payload: <DELETE>") for line in records)


def test_benchmark_runs_and_both_parsers_agree(tmp_path):
    report = bench_decoders.main(["--records", "2000", "--parser-records", "500", "--repeat", "1", "--quiet",
                                  "--cache-dir", str(tmp_path), "--json", str(tmp_path / "out.json")])
    assert report["steps"]["lines_differing"] == 0
    assert report["steps"]["parser"]["records"] == 500
    assert set(report["steps"]) >= {"parser", "parser_schema", "dump_offsets", "dump_deep"}
    assert report["ratios"]["parser_vs_schema"] > 0
    assert json.loads((tmp_path / "out.json").read_text())["segment"]["records"] == report["segment"]["records"]
