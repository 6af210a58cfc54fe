"""``seglog undo`` run again: a backup already undone names the undo that did it and changes
nothing (exit 0), along a chain of undos of undos (redos); a file written after the undo still
makes it refuse (exit 3)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_seglog

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "logdir"
OK, REFUSED = 0, 3
INDEX = "orders-0/00000000000000000120.index"


@pytest.fixture
def log_dir(tmp_path) -> Path:
    """The example log dir with one index rebuilt by ``rebuild-index --apply`` (the run undone)."""
    target = tmp_path / "logdir"
    shutil.copytree(EXAMPLE, target)
    (target / INDEX).unlink()
    result = run_seglog("rebuild-index", "--apply", str(target / "orders-0"))
    assert result.exit_code == OK, result.out + result.err
    return target


def files(log_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(log_dir).as_posix(): p.read_bytes() for p in sorted(log_dir.rglob("*")) if p.is_file()}


def backups(log_dir: Path, command: str) -> list[Path]:
    """The backup directories of ``command`` beside the log dir."""
    return sorted((log_dir.parent / "seglog-backups").glob(f"*-{command}-*"))


def undo(backup: Path, *options: str):
    result = run_seglog("undo", *options, str(backup))
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    return result


def only_new(before: set[Path], log_dir: Path) -> Path:
    (made,) = set(backups(log_dir, "undo")) - before
    return made


def real(path: Path) -> str:
    return os.path.realpath(path)


def test_undo_run_again_names_the_undo_and_changes_nothing(log_dir):
    (run,) = backups(log_dir, "rebuild-index")
    assert undo(run, "--apply").exit_code == OK
    (first,) = backups(log_dir, "undo")
    assert not (log_dir / INDEX).exists()
    undone = files(log_dir)
    for options in ((), ("--apply",)):
        again = undo(run, *options)
        assert again.exit_code == OK, again.out + again.err
        assert again.err == ""
        assert again.out.endswith(f" steps): already undone by {real(first)}: nothing to do\n"), again.out
        assert again.out.startswith("rebuild-index of ") and again.out.count("\n") == 1
        assert files(log_dir) == undone
        assert backups(log_dir, "undo") == [first]  # no backup of its own: nothing was written
    forced = undo(run, "--apply", "--force")  # forced, nothing is left to undo either: the same answer
    assert forced.exit_code == OK and f"already undone by {real(first)}: nothing to do" in forced.out
    assert files(log_dir) == undone and backups(log_dir, "undo") == [first]


def test_the_backup_dir_given_is_searched_too(log_dir, tmp_path):
    (run,) = backups(log_dir, "rebuild-index")
    elsewhere = tmp_path / "elsewhere"
    assert undo(run, "--apply", "--backup-dir", str(elsewhere)).exit_code == OK
    (first,) = elsewhere.iterdir()
    again = undo(run, "--apply", "--backup-dir", str(elsewhere))
    assert again.exit_code == OK and f"already undone by {real(first)}: nothing to do" in again.out
    not_told = undo(run, "--apply")  # neither beside the backup nor beside the log dir: not found
    assert not_told.exit_code == REFUSED and "already undone" not in not_told.out


def test_a_redo_run_again_names_it_and_the_chain_names_the_latest(log_dir):
    (run,) = backups(log_dir, "rebuild-index")
    rebuilt = files(log_dir)
    assert undo(run, "--apply").exit_code == OK
    (u1,) = backups(log_dir, "undo")
    undone = files(log_dir)
    assert undo(u1, "--apply").exit_code == OK  # an undo of the undo: a redo
    u2 = only_new({u1}, log_dir)
    assert files(log_dir) == rebuilt
    again = undo(u2.parent / u1.name, "--apply")
    assert again.exit_code == OK, again.out + again.err
    assert f"already undone by {real(u2)}, which redid the `rebuild-index` run of " in again.out
    assert again.out.endswith(": nothing to do\n") and files(log_dir) == rebuilt
    # the run is in place again (redone): undoing it works, and its rerun names the new undo
    assert undo(run, "--apply").exit_code == OK
    u1b = only_new({u1, u2}, log_dir)
    assert files(log_dir) == undone
    assert f"already undone by {real(u1b)}: nothing to do" in undo(run, "--apply").out


def test_an_undo_of_a_redo_leaves_the_run_undone_and_is_named(log_dir):
    (run,) = backups(log_dir, "rebuild-index")
    undo(run, "--apply")
    (u1,) = backups(log_dir, "undo")
    undone = files(log_dir)
    undo(u1, "--apply")
    u2 = only_new({u1}, log_dir)
    assert undo(u2, "--apply").exit_code == OK  # undoes the redo: the run is undone again
    u3 = only_new({u1, u2}, log_dir)
    assert files(log_dir) == undone
    for target in (u2, run):  # the redo's undo and the run's: both done by u3, the latest
        again = undo(target, "--apply")
        assert again.exit_code == OK and f"already undone by {real(u3)}" in again.out, again.out + again.err
    assert files(log_dir) == undone


def test_a_write_after_the_undo_is_still_refused(log_dir):
    (run,) = backups(log_dir, "rebuild-index")
    undo(run, "--apply")
    appended = run_seglog("append", "--value", "later", "--apply", str(log_dir / "orders-0"))
    assert appended.exit_code == OK, appended.out + appended.err
    after = files(log_dir)
    refused = undo(run, "--apply")
    assert refused.exit_code == REFUSED, refused.out + refused.err
    assert "already undone" not in refused.out + refused.err
    assert "seglog: refused: " in refused.err and "undo --force undoes anyway" in refused.err
    assert files(log_dir) == after
