"""``seglog rebuild-index`` from the command line: plan, apply, exit statuses, JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_seglog

OK, PLANNED, USAGE, REFUSED, UNREADABLE, LOCKED = 0, 1, 2, 3, 4, 5
CASE_C = "kafka-4.2.0/recovery-cases/c-delete-oldest-index"


def rebuild(*args):
    result = run_seglog("rebuild-index", *map(str, args))
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    return result


@pytest.fixture
def data(corpus, tmp_path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(corpus / CASE_C / "before", target)
    for root, dirs, files in os.walk(target):
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    return target


def test_plan_then_apply_then_nothing_to_do(corpus, data, tmp_path):
    plan = rebuild(data / "plain-0")
    assert plan.exit_code == PLANNED
    assert "create   plain-0/00000000000000000000.index: missing; recovery writes 83 entries" in plan.out
    assert "run again with --apply" in plan.out
    assert not (data / "plain-0" / "00000000000000000000.index").exists()
    applied = rebuild("--apply", "--backup-dir", tmp_path / "backups", data / "plain-0")
    assert applied.exit_code == OK, applied.out + applied.err
    assert "wrote 3" in applied.out and str(tmp_path / "backups") in applied.out
    after = corpus / CASE_C / "after" / "plain-0" / "00000000000000000000.index"
    assert (data / "plain-0" / "00000000000000000000.index").read_bytes() == after.read_bytes()
    (manifest,) = (tmp_path / "backups").glob("*/manifest.json")
    document = json.loads(manifest.read_text())
    assert document["state"] == "complete" and document["command"] == "rebuild-index"
    assert {Path(c["path"]).name for c in document["steps"] if c["path"].startswith("plain-0/")} == {
        "00000000000000000000.index", "00000000000000006225.index", "00000000000000006225.timeindex"}
    again = rebuild("--apply", data)
    assert again.exit_code == OK and "0 index file(s) to write" in again.out


def test_default_backups_go_beside_the_log_dir(data):
    assert rebuild("--apply", data / "plain-0" / "00000000000000000000.log").exit_code == OK
    assert list((data.parent / "seglog-backups").glob("*-rebuild-index-*/manifest.json"))
    assert not list(data.glob("seglog-backups*"))  # never inside the log dir


def test_json_document(data):
    result = rebuild("--format", "json", data)
    assert result.exit_code == PLANNED
    document = json.loads(result.out)
    assert document["version"] == 1 and document["indexIntervalBytes"] == 4096
    assert document["summary"] == {"segments": 5, "filesToWrite": 3, "refused": 0}
    assert document["applied"] is None
    (segment,) = [s for s in document["segments"] if s["baseOffset"] == 0]
    assert segment["files"][0] == {"path": str(data / "plain-0" / "00000000000000000000.index"), "kind": "offset",
                                   "action": "create", "detail": "missing; recovery writes 83 entries",
                                   "existingBytes": None, "rebuiltBytes": 664, "rebuiltEntries": 83}


def test_index_interval_from_config(data, tmp_path):
    result = rebuild("--format", "json", "--config", "index.interval.bytes=0", data / "plain-0")
    document = json.loads(result.out)
    first = document["segments"][0]
    assert first["files"][0]["rebuiltEntries"] == first["batches"] - 1  # every batch but the first
    (tmp_path / "topic.properties").write_text("index.interval.bytes = 1048576\n")
    document = json.loads(rebuild("--format", "json", "--config-file", tmp_path / "topic.properties", data).out)
    assert all(f["rebuiltEntries"] <= 1 for s in document["segments"] for f in s["files"])


@pytest.mark.parametrize("config", ["index.interval.bytes=-1", "index.interval.bytes=x", "segment.index.bytes=3",
                                    "no.such.config=1", "index.interval.bytes"])
def test_bad_configs_are_usage_errors(data, config):
    result = rebuild("--config", config, data)
    assert result.exit_code == USAGE and result.err.startswith("seglog: usage error:"), result.err


def test_torn_tail_refused(data):
    active = data / "plain-0" / "00000000000000008203.log"
    with open(active, "ab") as handle:
        handle.write(active.read_bytes()[:70])
    result = rebuild("--apply", data)
    assert result.exit_code == REFUSED
    assert "refused  plain-0/00000000000000008203.log" in result.out and "seglog recover" in result.out
    assert not (data / "plain-0" / "00000000000000000000.index").exists()


def test_missing_path_is_unreadable(tmp_path):
    result = rebuild(tmp_path / "nope")
    assert result.exit_code == UNREADABLE and "no such file" in result.out


def test_locked_log_dir_exit_5(data):
    (data / ".lock").touch()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
                               "fcntl.lockf(fd, fcntl.LOCK_EX); print('ok', flush=True); sys.stdin.read()",
                               str(data / ".lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        result = rebuild("--apply", data)
        assert result.exit_code == LOCKED
        assert "locked" in result.err and str(data / ".lock") in result.err
        assert not (data / "plain-0" / "00000000000000000000.index").exists()
        assert rebuild(data).exit_code == PLANNED  # planning only reads: allowed
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


def test_undo_puts_everything_back(corpus, data, tmp_path):
    before = {p.name: p.read_bytes() for p in (data / "plain-0").iterdir()}
    assert rebuild("--apply", "--backup-dir", tmp_path / "b", data).exit_code == OK
    (backup,) = (tmp_path / "b").iterdir()
    listed = run_seglog("undo", str(backup))
    assert listed.exit_code == PLANNED and "would remove" in listed.out and "would write" in listed.out
    assert (data / "plain-0" / "00000000000000000000.index").exists()
    done = run_seglog("undo", "--apply", str(backup))
    assert done.exit_code == OK, done.err
    assert {p.name: p.read_bytes() for p in (data / "plain-0").iterdir()} == before


def test_undo_of_a_non_backup_is_refused(tmp_path):
    result = run_seglog("undo", str(tmp_path))
    assert result.exit_code == REFUSED and "manifest" in result.err


def test_the_command_keeps_a_lean_plan_and_still_lists_every_segment(data, tmp_path):
    """The command's plan counts the segments that change nothing (their bytes not kept); the
    text lists only what changes (every file with -v) and the JSON every segment."""
    from seglog_cli.storage.write.durable import Tally
    from seglog_cli.storage.write.rebuild_index import RebuildError, apply_rebuild, plan_rebuild

    lean = plan_rebuild([str(data)], fingerprint=False, spool=Tally())
    full = plan_rebuild([str(data)])
    assert lean.segment_count == len(full.segments) == 5 and len(lean.segments) == 2  # two segments change
    assert lean.as_dict()["summary"] == full.as_dict()["summary"] and lean.fingerprint == {}
    assert all(f.rebuilt is None for s in lean.segments for f in s.files if not f.changes)
    with pytest.raises(RebuildError, match="shown only"):
        apply_rebuild(lean, backup_root=tmp_path / "b")
    shown = json.loads(rebuild("--format", "json", data).out)
    assert len(shown["segments"]) == 5 and shown["summary"]["segments"] == 5
    assert [s["log"] for s in shown["segments"]] == [s["log"] for s in full.as_dict()["segments"]]
    every = rebuild("-v", data).out
    assert every.count("ok       plain-0/") == sum(1 for s in full.segments for f in s.files if not f.changes)


def test_apply_run_again_has_nothing_to_do(data, tmp_path):
    """A rebuild run again (a runbook step repeated): nothing to write, said in its last line, exit 0,
    not a byte changed and no backup made."""
    assert rebuild("--apply", "--backup-dir", tmp_path / "b1", data).exit_code == OK
    rebuilt = {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()}
    again = rebuild("--apply", "--backup-dir", tmp_path / "b2", data)
    assert again.exit_code == OK, again.out + again.err
    assert again.out.splitlines()[-1].endswith("0 index file(s) to write, 0 segment(s) refused; nothing to do")
    assert {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()} == rebuilt
    assert not (tmp_path / "b2").exists()
