"""Examples are tests: the example log dir is what make_example.py writes, byte for byte, and
reads back clean."""

from __future__ import annotations

import runpy
from pathlib import Path

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.partition_log import LogDir
from seglog_cli.storage.log.records import read_records
from tests.conftest import REPO, run_seglog

EXAMPLES = REPO / "examples"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_make_example_reproduces_the_committed_log_dir(tmp_path):
    module = runpy.run_path(str(EXAMPLES / "make_example.py"), run_name="example")
    module["make"](tmp_path / "logdir")
    module["make_tiered"](tmp_path / "logdir", tmp_path / "tiered")
    assert _tree(tmp_path / "logdir") == _tree(EXAMPLES / "logdir")
    assert _tree(tmp_path / "tiered") == _tree(EXAMPLES / "tiered")


def test_example_log_dir_reads_back_every_record():
    counts = {}
    for partition in LogDir(EXAMPLES / "logdir").partitions():
        total = 0
        for segment in partition.segments:
            for batch in LogScan(segment.log):
                assert batch.is_valid
                total += sum(1 for _ in read_records(segment.log.buffer, batch))
        counts[partition.path.name] = total
        partition.close()
    assert counts == {"orders-0": 300, "orders-1": 160, "payments-0": 6, "__consumer_offsets-0": 3}  # markers too


def test_readme_example_command_runs():
    result = run_seglog("dump", "--deep-iteration", "--print-data-log", str(EXAMPLES / "logdir" / "orders-0"))
    assert result.exit_code == 0 and result.stderr == b""
    assert result.out.count("| offset:") == 300
