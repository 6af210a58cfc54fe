"""``seglog verify`` from the command line: what a runbook sees.

Exit statuses (README): 0 clean, 1 warnings only, 2 usage error, 3 damage, 4 unreadable input.
Reports: text lines, one JSON document (``seglogVerifyReport: 1``), JSON Lines, a rich table.
Real broker-written data from ../shared/corpus; damaged copies made here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, restore_preallocated, run_seglog

CLEAN, WARNINGS, USAGE, DAMAGE, UNREADABLE = 0, 1, 2, 3, 4
FINDING_KEYS = {"code", "severity", "path", "position", "length", "offset", "message"}


def verify(*args):
    result = run_seglog("verify", *map(str, args))
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    return result


def report(*args) -> dict:
    result = verify("--format", "json", *args)
    document = json.loads(result.out)
    assert document["seglogVerifyReport"] == 1
    return document | {"exit_code": result.exit_code}


def codes(document: dict, severities=("error", "warning")) -> set[str]:
    findings = list(document["findings"])
    for partition in document["partitions"]:
        findings.extend(partition["findings"])
    return {f["code"] for f in findings if f["severity"] in severities}


def copy(corpus: Path, relative: str, target: Path) -> Path:
    shutil.copytree(corpus / relative, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    return target


@pytest.fixture(scope="module")
def data_dir(corpus) -> Path:
    return corpus / "kafka-4.2.0" / "data"


def test_broker_written_log_dir_is_clean_at_both_levels(data_dir):
    for level in ("shallow", "deep"):
        document = report("--level", level, data_dir)
        assert document["exit_code"] == CLEAN and document["status"] == "clean"
        assert codes(document) == set()
        summary = document["summary"]
        assert summary["partitions"] == 110 and summary["errors"] == summary["warnings"] == 0
        assert summary["batches"] > 1500
        assert (summary["records"] is None) == (level == "shallow")
        # the .deleted leftovers of the cleaner are reported as what they are
        infos = {f["code"] for p in document["partitions"] for f in p["findings"]}
        assert "STRAY_TEMP_FILE" in infos


def test_second_lifecycle_and_live_copy_are_clean(corpus, live_copy):
    assert report("--level", "deep", corpus / "kafka-4.2.0" / "data-extra")["exit_code"] == CLEAN
    document = report("--level", "deep", *sorted(live_copy.iterdir()))
    assert document["exit_code"] == CLEAN
    preallocated = [f for p in document["partitions"] for f in p["findings"] if f["code"] == "INDEX_PREALLOCATED"]
    assert len(preallocated) == 6 and all(f["severity"] == "info" for f in preallocated)


@pytest.mark.parametrize("case, code", [("a-append-garbage-active-log", "TRAILING_GARBAGE"),
                                        ("c-delete-oldest-index", "INDEX_MISSING"),
                                        ("c2-delete-active-index", "INDEX_MISSING")])
def test_recovery_cases_are_warnings_a_broker_repairs(corpus, tmp_path, case, code):
    before = copy(corpus, f"kafka-4.2.0/recovery-cases/{case}/before", tmp_path / "before")
    restore_preallocated(before, f"kafka-4.2.0/recovery-cases/{case}/before")
    document = report(before)
    assert document["exit_code"] == WARNINGS and document["status"] == "warnings"
    assert codes(document) == {code}
    after = copy(corpus, f"kafka-4.2.0/recovery-cases/{case}/after", tmp_path / "after")
    assert report(after / "plain-0")["exit_code"] == CLEAN


def test_damage_exits_3_and_names_file_position_and_offset(data_dir, tmp_path):
    partition = copy(data_dir.parent, "data/plain-0", tmp_path / "plain-0")
    log = partition / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[14911 + 100] ^= 0x40  # a body byte of the batch at position 14911 (offsets 30..43)
    log.write_bytes(bytes(data))
    result = verify("--format", "text", partition)
    assert result.exit_code == DAMAGE
    lines = [line for line in result.out.splitlines() if line.startswith("ERROR")]
    assert lines == [f"ERROR {log}: position 14911 (offset 30): BATCH_CRC_MISMATCH: "
                     f"stored CRC 1721702108 but the bytes give {lines[0].rsplit(' ', 1)[1]}"]
    assert result.out.splitlines()[-1].startswith("seglog verify: damage: 1 error,")
    events = [json.loads(line) for line in verify("--format", "jsonl", partition).out.splitlines()]
    [crc] = [e for e in events if e["code"] == "BATCH_CRC_MISMATCH"]
    assert set(crc) == FINDING_KEYS | {"topic", "partition"}
    assert (crc["topic"], crc["partition"], crc["position"], crc["offset"]) == ("plain", 0, 14911, 30)


def test_damage_wins_over_unreadable_and_unreadable_over_warnings(data_dir, tmp_path):
    missing = tmp_path / "nope"
    assert verify(missing).exit_code == UNREADABLE
    assert verify(REPO / "pyproject.toml").exit_code == UNREADABLE
    assert verify(tmp_path).exit_code == UNREADABLE  # no Kafka directory in there
    partition = copy(data_dir.parent, "data/plain-0", tmp_path / "plain-0")
    (partition / "00000000000000000000.index").unlink()
    assert verify(partition, missing).exit_code == UNREADABLE
    assert verify(partition).exit_code == WARNINGS
    log = partition / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[30] ^= 1
    log.write_bytes(bytes(data))
    assert verify(partition, missing).exit_code == DAMAGE


@pytest.mark.parametrize("options", [[], ["--level", "fast"], ["--format", "xml"], ["--jobs", "0"],
                                     ["--show", "debug"]])
def test_usage_errors_exit_2_in_one_line(data_dir, options):
    result = verify(*options) if not options else verify(*options, data_dir)
    assert result.exit_code == USAGE
    if options:
        assert result.err.startswith("seglog: usage error:") and result.err.count("\n") == 1


def test_jobs_give_the_same_report(data_dir):
    one, two = report(data_dir), report("--jobs", "2", data_dir)
    assert one == two


def test_several_paths_globs_and_single_files(data_dir):
    document = report(data_dir / "plain-*", data_dir / "txn-0" / "00000000000000000000.txnindex",
                      data_dir / "idem-0" / "00000000000000002494.snapshot", data_dir / "meta.properties",
                      data_dir / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint")
    assert document["exit_code"] == CLEAN
    assert [p["partition"] for p in document["partitions"]] == [0, 1]
    assert document["summary"]["segments"] > 4  # the partitions' and the txn segment given alone


def test_a_tree_of_log_dirs(corpus):
    """A directory above log dirs (a copied disk): every log dir and partition under it."""
    document = report(corpus / "public" / "pinterest__tiered-storage")
    assert document["summary"]["partitions"] == 5
    assert document["exit_code"] == WARNINGS  # indexes the repository did not keep


def test_broken_checkpoint_and_unexpected_directory(data_dir, tmp_path):
    log_dir = copy(data_dir.parent, "data", tmp_path / "data")
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n2\nplain 0 10\n")
    (log_dir / "lost+found").mkdir()
    document = report(log_dir)
    assert document["exit_code"] == DAMAGE
    by_code = {f["code"]: f for f in document["findings"]}
    assert by_code["CHECKPOINT_UNREADABLE"]["path"].endswith("recovery-point-offset-checkpoint")
    assert by_code["UNEXPECTED_DIRECTORY"]["path"].endswith("lost+found")


def test_table_and_show_levels(data_dir):
    table = verify("--format", "table", "--show", "info", data_dir / "compacted-retain-0")
    assert table.exit_code == CLEAN
    assert "compacted-retain-0" in table.out and "STRAY_TEMP_FILE" in table.out and "clean" in table.out
    quiet = verify("--format", "text", data_dir / "compacted-retain-0")
    assert quiet.out.splitlines() == [quiet.out.splitlines()[-1]]  # infos hidden by default
    loud = verify("--format", "text", "--show", "info", data_dir / "compacted-retain-0")
    assert any(line.startswith("INFO ") and "STRAY_TEMP_FILE" in line for line in loud.out.splitlines())


def test_progress_goes_to_stderr_only(data_dir):
    with_progress = verify("--progress", "--format", "json", data_dir / "plain-0")
    without = verify("--no-progress", "--format", "json", data_dir / "plain-0")
    assert json.loads(with_progress.out) == json.loads(without.out)


def test_process_exit_status_and_no_traceback(data_dir, tmp_path):
    garbage = tmp_path / "orders-0"
    garbage.mkdir()
    (garbage / "00000000000000000000.log").write_bytes(b"\x00\x00\x00\x00\x00\x00\x00\x00\xff" * 50)
    (garbage / "00000000000000000000.index").write_bytes(b"\x01" * 13)
    run = subprocess.run([sys.executable, "-m", "seglog_cli", "verify", "--level", "deep", str(garbage)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == DAMAGE, run.stderr
    assert "Traceback" not in run.stderr
    assert "INDEX_SANITY_FAILED" in run.stdout
