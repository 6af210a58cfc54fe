"""The write protocol: the broker's lock (through symlinks and ``.``), planning under it, stale
plans, two writers, symlink escapes, backup directories, manifests undo refuses, interrupted
runs rolled back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seglog_cli.storage.write.durable import CannotWriteError
from seglog_cli.storage.write.file_steps import FileStep
from seglog_cli.storage.write.journal import POINTER
from seglog_cli.storage.write.manifest import read_manifest
from seglog_cli.storage.log.partition_log import LogDir
from seglog_cli.storage.write.safety import BackupError, PlanOutdatedError, held_log_dir, is_locked
from seglog_cli.storage.write.write_session import WriteSession
from tests.conftest import run_seglog

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "logdir"
HOLDER = textwrap.dedent("""
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked", flush=True)
    sys.stdin.read()
""")
LOCKED, CANNOT_WRITE = 5, 6


@pytest.fixture
def log_dir(tmp_path):
    target = tmp_path / "data"
    shutil.copytree(EXAMPLE, target)
    return target


@pytest.fixture
def holder(log_dir):
    """Another process holding ``.lock`` as a running broker does."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(log_dir / ".lock")], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "locked"
    yield process
    process.stdin.close()
    process.wait(timeout=10)


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and p.name != ".lock"}


# -- the lock -----------------------------------------------------------------------------------------

def test_a_missing_lock_file_is_created_and_taken(log_dir):
    assert not (log_dir / ".lock").exists()
    with held_log_dir(log_dir) as lock:
        assert lock == log_dir / ".lock" and lock.is_file()
        probe = subprocess.run([sys.executable, "-c", HOLDER, str(lock)], input="", capture_output=True, text=True)
        assert probe.returncode != 0 and "locked" not in probe.stdout  # another process cannot take it


@pytest.mark.parametrize("how", ["symlink", "dot", "relative"])
def test_every_writer_locks_the_real_log_dir(log_dir, holder, tmp_path, how):
    """Through a symlinked log dir, ``cd partition; seglog ... .`` or a relative path: the lock the
    broker holds is the one found, and nothing is written."""
    link = tmp_path / "link"
    link.symlink_to(log_dir)
    partition = {"symlink": link / "orders-0", "dot": Path("."), "relative": Path("orders-0")}[how]
    cwd = {"symlink": tmp_path, "dot": log_dir / "orders-0", "relative": log_dir}[how]
    before = _files(log_dir)
    commands = [["append", "--apply", "--value", "x", str(partition)],
                ["rebuild-index", "--apply", str(partition)],
                ["recover", "--apply", str(partition)],
                ["simulate-retention", "--apply", "--now", "2099-01-01", str(partition)]]
    for argv in commands:
        result = subprocess.run([sys.executable, "-m", "seglog_cli", *argv], cwd=cwd, capture_output=True, text=True)
        assert result.returncode == LOCKED, (argv, result.stderr)
        assert "locked" in result.stderr
    assert _files(log_dir) == before
    assert not (tmp_path / "seglog-backups").exists() and not list(log_dir.rglob("seglog-backups"))


def test_is_locked_asks_without_dropping_a_lock_this_process_holds(log_dir):
    with held_log_dir(log_dir):
        assert not is_locked(log_dir)
        probe = subprocess.run([sys.executable, "-c", HOLDER, str(log_dir / ".lock")], input="", capture_output=True,
                               text=True)
        assert probe.returncode != 0  # still held after the question


def test_a_symlinked_lock_file_is_refused(log_dir, tmp_path):
    (tmp_path / "elsewhere").write_text("keep")
    (log_dir / ".lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(CannotWriteError):
        with held_log_dir(log_dir):
            pass
    assert (tmp_path / "elsewhere").read_text() == "keep"


# -- planning under the lock: two writers, stale plans ------------------------------------------------

def test_a_plan_made_before_another_write_is_refused(log_dir):
    """A library caller that planned without the lock: applying re-validates every directory the
    plan read, and refuses when anything changed (here: an append landed in between)."""
    from seglog_cli.storage.recovery.recover import apply_recover, plan_recover

    (log_dir / ".kafka_cleanshutdown").unlink()
    active = sorted((log_dir / "orders-0").glob("*.log"))[-1]
    with open(active, "ab") as handle:
        handle.write(b"\xff" * 50)  # garbage recover would truncate
    damaged = active.read_bytes()
    plan = plan_recover([log_dir / "orders-0"])
    assert plan.steps
    (log_dir / "orders-1" / "extra.txt").write_text("a later write")
    with pytest.raises(PlanOutdatedError):
        apply_recover(plan)
    assert active.read_bytes() == damaged  # not truncated: nothing was written


def test_two_appends_at_once_never_write_the_same_offsets(log_dir):
    """Two writers started together: the second finds the lock held (exit 5) or runs after the
    first and plans from its result; never duplicate offsets."""
    partition = log_dir / "orders-0"
    procs = [subprocess.Popen([sys.executable, "-m", "seglog_cli", "append", "--apply", "--value", f"w{i}",
                               "--backup-dir", str(log_dir.parent / "b"), str(partition)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert codes in ([0, 0], [0, LOCKED])
    dumped = run_seglog("dump", "--deep-iteration", "--format", "jsonl", str(partition))
    offsets = [json.loads(line)["offset"] for line in dumped.out.splitlines() if '"type":"record"' in line.replace(" ", "")]
    assert len(offsets) == len(set(offsets)) and offsets == sorted(offsets)
    assert len(offsets) == 300 + codes.count(0)


# -- symlinks and paths -----------------------------------------------------------------------------

def test_a_planted_temp_symlink_is_never_followed(log_dir, tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("precious")
    index = sorted((log_dir / "orders-0").glob("*.index"))[0]
    for name in (index.name + ".tmp", "recovery-point-offset-checkpoint.tmp"):
        target = (log_dir / "orders-0" / name) if name.endswith(".index.tmp") else (log_dir / name)
        target.symlink_to(outside)
    index.write_bytes(b"")  # something to rebuild
    result = run_seglog("rebuild-index", "--apply", "--backup-dir", str(tmp_path / "b"), str(log_dir / "orders-0"))
    assert result.exit_code == 0, result.err
    assert outside.read_text() == "precious"
    assert index.stat().st_size > 0


def test_a_symlinked_segment_is_refused_for_writing(log_dir, tmp_path):
    (log_dir / ".kafka_cleanshutdown").unlink()
    active = sorted((log_dir / "orders-0").glob("*.log"))[-1]
    outside = tmp_path / active.name
    outside.write_bytes(active.read_bytes() + b"\xff" * 30)
    active.unlink()
    active.symlink_to(outside)
    before = outside.read_bytes()
    result = run_seglog("recover", "--apply", "--backup-dir", str(tmp_path / "b"), str(log_dir))
    assert result.exit_code == CANNOT_WRITE, result.err
    assert "symlink" in result.err and "nothing was changed" in result.err
    assert outside.read_bytes() == before and active.is_symlink()


@pytest.mark.parametrize("name", ["data", "kafka-1"])  # a log dir may itself be named like a partition
def test_a_symlinked_partition_directory_is_no_partition(tmp_path, name):
    log_dir = tmp_path / name
    shutil.copytree(EXAMPLE, log_dir)
    (log_dir / "loop-0").symlink_to(".")
    before = _files(log_dir)
    for argv in (["append", "--apply", "--value", "x", str(log_dir / "loop-0")],
                 ["append", "--apply", "--create", "--value", "x", str(log_dir / "loop-0")]):
        result = run_seglog(*argv)
        assert result.exit_code in (3, 4, CANNOT_WRITE), result.err
    assert _files(log_dir) == before
    assert not list(log_dir.glob("*.log")) and not list(log_dir.glob("*.index"))
    assert "loop-0" not in {p.name for p in LogDir(log_dir).partition_dirs()}


def test_a_backup_dir_inside_the_log_dir_is_refused(log_dir):
    before = _files(log_dir)
    result = run_seglog("append", "--apply", "--value", "x", "--backup-dir", str(log_dir / "backups"),
                        str(log_dir / "orders-0"))
    assert result.exit_code == CANNOT_WRITE and "inside the log dir" in result.err
    assert _files(log_dir) == before and not (log_dir / "backups").exists()


# -- manifests undo trusts, and what it refuses ------------------------------------------------------

def _appended(log_dir: Path, tmp_path: Path) -> Path:
    assert run_seglog("append", "--apply", "--value", "x", "--backup-dir", str(tmp_path / "b"),
                      str(log_dir / "orders-0")).exit_code == 0
    (backup,) = (tmp_path / "b").iterdir()
    return backup


def test_an_edited_manifest_is_refused(log_dir, tmp_path):
    backup = _appended(log_dir, tmp_path)
    document = json.loads((backup / "manifest.json").read_text())
    (tmp_path / "victim").write_text("keep")
    document["steps"][0]["path"] = "../victim"
    (backup / "manifest.json").write_text(json.dumps(document))
    with pytest.raises(BackupError, match="checksum"):
        read_manifest(backup)
    assert run_seglog("undo", "--apply", str(backup)).exit_code == 3
    assert (tmp_path / "victim").read_text() == "keep"


def test_a_manifest_naming_paths_outside_its_log_dir_is_refused_even_with_a_good_checksum(log_dir, tmp_path):
    from seglog_cli.storage.write.manifest import manifest_checksum

    backup = _appended(log_dir, tmp_path)
    document = json.loads((backup / "manifest.json").read_text())
    document["steps"].append({"op": "write", "path": "../../victim", "before": None, "after": None, "temp": "x"})
    document["checksum"] = manifest_checksum(document)
    (backup / "manifest.json").write_text(json.dumps(document))
    with pytest.raises(BackupError, match="outside its log dir"):
        read_manifest(backup)


def test_undo_refuses_files_changed_since_and_force_keeps_them(log_dir, tmp_path):
    backup = _appended(log_dir, tmp_path)
    assert run_seglog("append", "--apply", "--value", "later", "--backup-dir", str(tmp_path / "b2"),
                      str(log_dir / "orders-0")).exit_code == 0
    later = _files(log_dir)
    refused = run_seglog("undo", "--apply", str(backup))
    assert refused.exit_code == 3 and "nothing was changed" in refused.err
    assert _files(log_dir) == later


# -- interrupted runs ---------------------------------------------------------------------------------

def test_the_next_writer_rolls_an_interrupted_run_back_first(log_dir, tmp_path):
    original = _files(log_dir)
    env = dict(os.environ, SEGLOG_FAULT_AT="14")
    killed = subprocess.run([sys.executable, "-m", "seglog_cli", "append", "--apply", "--value", "x", "--backup-dir",
                             str(tmp_path / "b"), str(log_dir / "orders-0")], env=env, capture_output=True, text=True)
    assert killed.returncode == 137, killed.stderr
    assert (log_dir / POINTER).exists()
    planned = run_seglog("recover", str(log_dir))  # a plan only: says the pending run changes the picture
    assert "interrupted seglog run is pending" in planned.err and (log_dir / POINTER).exists()
    verified = run_seglog("verify", "--format", "json", str(log_dir))
    assert any(f["code"] == "INTERRUPTED_SEGLOG_RUN" and f["severity"] == "warning"
               for f in json.loads(verified.out)["findings"])
    with WriteSession([log_dir], "test", tmp_path / "b2") as session:
        assert any("rolled back" in note for note in session.notes)
    assert not (log_dir / POINTER).exists()
    assert {k: v for k, v in _files(log_dir).items() if not k.endswith(".tmp")} == original


def test_a_failed_write_rolls_back_and_says_so(log_dir, tmp_path):
    (log_dir / "orders-0" / "00000000000000000240.index").chmod(0o644)
    steps = [FileStep("write", log_dir / "orders-0" / "00000000000000000240.index", "test", data=b""),
             FileStep("rename", log_dir / "orders-0" / "missing.log", "test", target=log_dir / "orders-0" / "x.log")]
    before = _files(log_dir)
    with WriteSession([log_dir], "test", tmp_path / "b") as session:
        with pytest.raises(Exception):
            session.apply(steps)
    assert {k: v for k, v in _files(log_dir).items() if not k.endswith(".tmp")} == before


def test_undo_restores_contents_and_modification_times(log_dir, tmp_path):
    """A segment without a .timeindex is dated by its mtime for time retention: undo gives the
    times back with the bytes (the appended-to .log, the rewritten indexes and checkpoints)."""
    os.utime(log_dir / "orders-0", ns=(10**18, 10**18))
    for path in (log_dir / "orders-0").iterdir():
        os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    times = {p.name: p.stat().st_mtime_ns for p in (log_dir / "orders-0").iterdir()}
    before = _files(log_dir)
    backup = _appended(log_dir, tmp_path)
    assert _files(log_dir) != before
    done = run_seglog("undo", "--apply", str(backup))
    assert done.exit_code == 0, done.err
    assert _files(log_dir) == before
    assert {p.name: p.stat().st_mtime_ns for p in (log_dir / "orders-0").iterdir()} == times


def test_recover_and_append_racing_never_lose_the_appended_records(tmp_path):
    """The audit's race: recover --apply and append --apply started together, staggered by
    0-300 ms. Whatever order the lock gives them, records an append reported written (exit 0)
    are in the log afterwards, and a refused writer (exit 5) wrote nothing."""
    import random

    rng = random.Random(15)
    for attempt in range(8):
        log_dir = tmp_path / f"run{attempt}" / "data"
        shutil.copytree(EXAMPLE, log_dir)
        (log_dir / ".kafka_cleanshutdown").unlink()  # recover has work; append is refused until recover ran
        base = [sys.executable, "-m", "seglog_cli"]
        recover = subprocess.Popen(base + ["recover", "--apply", "--backup-dir", str(tmp_path / "b"), str(log_dir)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        subprocess.run(["sleep", f"{rng.uniform(0, 0.3):.3f}"])
        append = subprocess.run(base + ["append", "--apply", "--value", f"kept{attempt}", "--backup-dir",
                                        str(tmp_path / "b"), str(log_dir / "orders-0")], capture_output=True, text=True)
        assert recover.wait(timeout=60) in (0, LOCKED), recover.stderr.read()
        assert append.returncode in (0, 3, LOCKED), append.stderr
        values = [json.loads(line).get("value") for line in run_seglog(
            "dump", "--deep-iteration", "--print-data-log", "--format", "jsonl", str(log_dir / "orders-0")).out.splitlines()]
        assert (f"kept{attempt}" in values) == (append.returncode == 0)
