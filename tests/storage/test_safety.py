"""The write-safety layer: the broker's lock, backups with a manifest, undo, fault injection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seglog_cli.storage.safety import (BackupError, ChangeSet, LogDirLockedError, held_log_dir, is_locked,
                                       read_manifest, undo)

HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked", flush=True)
    sys.stdin.read()
""")


@pytest.fixture
def locked_log_dir(tmp_path):
    """A log dir whose ``.lock`` another process holds, as a running broker would."""
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(log_dir / ".lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    yield log_dir
    holder.stdin.close()
    holder.wait(timeout=10)


def test_a_lock_held_by_another_process_refuses(locked_log_dir):
    assert is_locked(locked_log_dir)
    with pytest.raises(LogDirLockedError) as raised:
        with held_log_dir(locked_log_dir):
            pass
    assert str(locked_log_dir / ".lock") in str(raised.value)


def test_a_free_lock_is_taken_and_released(tmp_path):
    (tmp_path / ".lock").touch()
    assert not is_locked(tmp_path)
    with held_log_dir(tmp_path) as lock:
        assert lock == tmp_path / ".lock"
        # another process cannot take it meanwhile
        probe = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            import fcntl, os
            fd = os.open({str(lock)!r}, os.O_RDWR)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                print("taken")
            except OSError:
                print("held")
        """)], capture_output=True, text=True, check=True)
        assert probe.stdout.strip() == "held"
    assert not is_locked(tmp_path)


def test_no_lock_file_is_not_created(tmp_path):
    with held_log_dir(tmp_path) as lock:
        assert lock is None
    assert not (tmp_path / ".lock").exists()


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_operation_is_undone(tmp_path):
    log_dir = tmp_path / "logs"
    part = log_dir / "t-0"
    part.mkdir(parents=True)
    (part / "a.index").write_bytes(b"old index")
    (part / "b.log").write_bytes(b"0123456789")
    (part / "c.log").write_bytes(b"tail")
    (part / "d.snapshot").write_bytes(b"snap")
    (part / "e.log").write_bytes(b"swap me")
    before = _tree(log_dir)
    with ChangeSet(log_dir, "test") as changes:
        changes.replace(part / "a.index", b"new index")
        changes.replace(part / "new.timeindex", b"created")
        changes.append(part / "b.log", b"abc")
        changes.truncate(part / "c.log", 1)
        changes.remove(part / "d.snapshot")
        changes.rename(part / "e.log", part / "e.log.deleted")
    assert (part / "a.index").read_bytes() == b"new index"
    assert (part / "b.log").read_bytes() == b"0123456789abc"
    assert (part / "c.log").read_bytes() == b"t"
    assert not (part / "d.snapshot").exists()
    manifest = read_manifest(changes.backup_dir)
    assert manifest["complete"] is True
    assert [c["op"] for c in manifest["changes"]] == ["replace", "create", "append", "truncate", "remove", "rename"]
    assert changes.backup_dir.parent == tmp_path / "seglog-backups"  # outside the log dir
    lines = undo(changes.backup_dir)
    assert len(lines) == 6
    assert _tree(log_dir) == before


def test_no_backup_dir_no_change(tmp_path):
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    (log_dir / "x.index").write_bytes(b"keep")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(BackupError):
        with ChangeSet(log_dir, "test", backup_root=blocker / "sub") as changes:
            changes.replace(log_dir / "x.index", b"lost?")
    assert (log_dir / "x.index").read_bytes() == b"keep"


SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from seglog_cli.storage.safety import ChangeSet
    log_dir = Path(sys.argv[1])
    with ChangeSet(log_dir, "test", backup_root=Path(sys.argv[2])) as changes:
        changes.replace(log_dir / "a.index", b"new index")
        changes.append(log_dir / "b.log", b"more")
        changes.truncate(log_dir / "c.log", 2)
        changes.remove(log_dir / "d.snapshot")
""")


def test_a_kill_before_any_write_step_is_undone(tmp_path):
    """Kill the process before each write step in turn: every file is old or new, never torn,
    and undo always brings back the original tree."""
    step = 1
    while True:
        log_dir = tmp_path / f"run{step}" / "logs"
        log_dir.mkdir(parents=True)
        (log_dir / "a.index").write_bytes(b"old index")
        (log_dir / "b.log").write_bytes(b"0123")
        (log_dir / "c.log").write_bytes(b"cutcut")
        (log_dir / "d.snapshot").write_bytes(b"snap")
        before = _tree(log_dir)
        backups = tmp_path / f"run{step}" / "backups"
        env = dict(os.environ, SEGLOG_FAULT_AT=str(step))
        result = subprocess.run([sys.executable, "-c", SCRIPT, str(log_dir), str(backups)], env=env,
                                capture_output=True, text=True)
        after = {k: v for k, v in _tree(log_dir).items() if not k.endswith(".tmp")}
        assert after["a.index"] in (b"old index", b"new index")
        assert after["b.log"] in (b"0123", b"0123more")
        assert after["c.log"] in (b"cutcut", b"cu")
        assert after.get("d.snapshot", b"snap") == b"snap"
        manifests = list(backups.glob("*/manifest.json"))
        if manifests:
            undo(manifests[0].parent)
        elif result.returncode != 0:
            assert after == before  # killed before the manifest existed: nothing was touched
        assert {k: v for k, v in _tree(log_dir).items() if not k.endswith(".tmp")} == before
        if result.returncode == 0:
            assert json.loads(manifests[0].read_text())["complete"] is True
            break
        assert result.returncode == 137, result.stderr
        step += 1
    assert step > 8  # backups, manifest writes and the four changes were all interrupted once
