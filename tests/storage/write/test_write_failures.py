"""Writes the file system refuses: a read-only file system, a full disk. Exit status 6, a line
that says what failed and whether anything changed, and the log dir as it was.

Real file systems: a small tmpfs mounted for the test (root only; skipped where mounting is not
allowed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_seglog

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "logdir"
CANNOT_WRITE = 6


@pytest.fixture
def tmpfs(tmp_path):
    """A 160 KiB tmpfs at ``tmp_path / "fs"`` (the example log dir takes about 60 KiB)."""
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not root'})")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def _log_dir(mount: Path) -> Path:
    """The example's orders topic and log-dir files (its payments and __consumer_offsets partitions
    left out: the disk is sized for the rest)."""
    log_dir = mount / "data"
    shutil.copytree(EXAMPLE, log_dir, ignore=lambda _, names: [n for n in names if n.startswith(("payments-", "__"))])
    return log_dir


def test_a_read_only_file_system_is_exit_6_and_nothing_changes(tmpfs):
    log_dir = _log_dir(tmpfs)
    (log_dir / ".kafka_cleanshutdown").unlink()
    active = sorted((log_dir / "orders-0").glob("*.log"))[-1]
    with open(active, "ab") as handle:
        handle.write(b"\xff" * 40)  # a torn tail recover would cut
    (log_dir / ".lock").touch()
    before = _files(log_dir)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    for argv in (["recover", "--apply", str(log_dir)], ["append", "--apply", "--value", "x", str(log_dir / "orders-0")],
                 ["append", "--apply", "--create", "--value", "x", str(log_dir / "new-0")]):
        result = run_seglog(*argv)
        assert result.exit_code == CANNOT_WRITE, (argv, result.err)
        assert "read-only file system" in result.err and "nothing was changed" in result.err
        assert "internal error" not in result.err
    assert _files(log_dir) == before


@pytest.mark.parametrize("backups_on", ["the full disk", "another disk"])
def test_a_full_disk_is_exit_6_and_what_was_done_is_rolled_back(tmpfs, tmp_path, backups_on):
    """Backups on the full disk: the backup fails first, nothing changed. Backups elsewhere: the
    log dir's own write fails half-way (the marker and the recovery point already changed), and
    the run puts everything back at once and says so."""
    log_dir = _log_dir(tmpfs)
    before = _files(log_dir)
    backups = tmpfs / "backups" if backups_on == "the full disk" else tmp_path / "backups"
    big = "v" * 30_000
    result = run_seglog("append", "--apply", *(["--value", big] * 4), "--backup-dir", str(backups),
                        str(log_dir / "orders-0"))
    assert result.exit_code == CANNOT_WRITE, result.err
    assert "disk full" in result.err and "nothing was changed" in result.err
    if backups_on == "another disk":
        assert "were rolled back" in result.err
    assert _files(log_dir) == before  # no temporary file left either
    assert not (log_dir / ".seglog-journal").exists()


def test_a_shown_only_plan_refuses_to_be_written():
    """A :class:`Tally` keeps only the count of a plan's bytes (a plan that is only shown): asked
    for its bytes it raises seglog's own error (one line at the CLI), not a NameError."""
    from seglog_cli.storage.log.errors import SeglogError
    from seglog_cli.storage.write.durable import Tally

    tally = Tally()
    tally.write(b"abc")
    assert len(tally) == 3 and len(tally.range(0, 2)) == 2
    with pytest.raises(SeglogError, match="cannot be written"):
        list(tally.chunks())
