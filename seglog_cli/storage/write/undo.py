"""``seglog undo``: put back what a finished seglog run changed, as a journaled run of its own.

:func:`plan_undo` reads the run's manifest (checked: version, checksum, paths inside its log
dir) and, under the log dir's lock, works out the inverse of every step from the files as they
are now (:func:`~seglog_cli.storage.write.rollback.inverse_steps`). It refuses, with one line per file,
when a file is no longer as the run left it, or when a partition the run touched has files it
did not leave there (something wrote since): undoing would then throw later writes away.
``force`` undoes all the same; nothing is lost even then, because the undo is a run like any
other: every byte it replaces or removes goes to its own backup directory first (and can itself
be undone). File modification times come back with the contents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.write.durable import Tree
from seglog_cli.storage.write.journal import PREPARED, ROLLED_BACK, FileStep, read_manifest
from seglog_cli.storage.write.rollback import ConflictError, inverse_steps
from seglog_cli.storage.write.safety import BackupError, resolve_log_dir
from seglog_cli.storage.write.write_session import WriteSession


@dataclass
class UndoPlan:
    backup_dir: Path
    manifest: dict
    log_dir: Path
    steps: list[FileStep] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    note: str | None = None  # nothing to undo, and why

    def lines(self) -> list[str]:
        return [f"{step.op} {step.path}" + (f" -> {step.target}" if step.target else "") +
                (f" ({step.size} bytes)" if step.size is not None else "") for step in self.steps]


def manifest_log_dir(backup_dir: str | Path) -> tuple[dict, Path]:
    """The checked manifest and the real log dir it names (which must still be a directory)."""
    manifest = read_manifest(backup_dir)
    log_dir = Path(manifest["logDir"])
    if not log_dir.is_absolute() or resolve_log_dir(log_dir) != log_dir or not log_dir.is_dir():
        raise BackupError(f"the log dir the manifest names ({log_dir}) is not a directory (or not a real path): "
                          "refused", Path(backup_dir) / "manifest.json")
    return manifest, log_dir


def plan_undo(backup_dir: str | Path, force: bool = False) -> UndoPlan:
    """The steps that undo the run (call under the log dir's lock: see :func:`undo`)."""
    backup_dir = Path(backup_dir).absolute()
    manifest, log_dir = manifest_log_dir(backup_dir)
    plan = UndoPlan(backup_dir, manifest, log_dir)
    if manifest["state"] == ROLLED_BACK:
        plan.note = "that run was interrupted and has been rolled back: nothing to undo"
        return plan
    if manifest["state"] == PREPARED:
        plan.note = "that run was interrupted before it changed anything: nothing to undo"
        return plan
    with Tree(log_dir) as tree:
        try:
            plan.steps = inverse_steps(tree, manifest, backup_dir, expect_final=True, force=force)
        except ConflictError as exc:
            plan.conflicts = exc.conflicts
            return plan
    if not plan.steps:
        plan.note = "every file is already as it was before that run: nothing to undo"
    return plan


def undo(backup_dir: str | Path, force: bool = False, dry_run: bool = False,
         backup_root: str | Path | None = None) -> tuple[UndoPlan, Path | None, list[str]]:
    """Plan under the log dir's lock, then (unless ``dry_run``) carry the undo out as a journaled
    run. Returns the plan, the undo's own backup directory, and what was finished on the way in
    (an interrupted run in that log dir is rolled back first). When files changed since (and
    ``force`` is not given) nothing is done and ``plan.conflicts`` says why, one line per file."""
    _manifest, log_dir = manifest_log_dir(backup_dir)
    if dry_run:
        return plan_undo(backup_dir, force), None, []
    with WriteSession([log_dir], "undo", backup_root or Path(backup_dir).absolute().parent) as session:
        plan = plan_undo(backup_dir, force)
        if plan.conflicts:
            return plan, None, session.notes
        done = session.apply(plan.steps, extra={"undoes": str(plan.backup_dir)}) if plan.steps else None
        return plan, done, session.notes


__all__ = ["UndoPlan", "manifest_log_dir", "plan_undo", "undo"]
