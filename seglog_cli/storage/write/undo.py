"""``seglog undo``: put back what a finished seglog run changed, as a journaled run of its own.

:func:`plan_undo` reads the run's manifest (checked: version, checksum, paths inside its log
dir) and, under the log dir's lock, works out the inverse of every step from the files as they
are now (:func:`~seglog_cli.storage.write.rollback.inverse_steps`). It refuses, with one line per file,
when a file is no longer as the run left it, or when a partition the run touched has files it
did not leave there (something wrote since): undoing would then throw later writes away.
``force`` undoes all the same; nothing is lost even then, because the undo is a run like any
other: every byte it replaces or removes goes to its own backup directory first (and can itself
be undone). File modification times come back with the contents.

Run again after it finished, an undo finds the files as they were before the run: it then names
the undo that did it (:func:`undone_by`: a finished undo of this backup, found under the backup
roots, whose files are still as it left them) and has nothing to do. Undoing an undo is a redo;
the chain (a run, its undo, the undo of that undo, ...) is followed, and the latest run that left
this one undone is named. A file written after that undo still makes the undo refuse.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.write.durable import Tree
from seglog_cli.storage.write.file_steps import FileStep
from seglog_cli.storage.write.manifest import COMPLETE, PREPARED, ROLLED_BACK, read_manifest
from seglog_cli.storage.write.rollback import ConflictError, inverse_steps, undo_in_place
from seglog_cli.storage.write.safety import BackupError, default_backup_root, resolve_log_dir
from seglog_cli.storage.write.write_session import WriteSession


@dataclass
class UndoPlan:
    backup_dir: Path
    manifest: dict
    log_dir: Path
    steps: list[FileStep] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    note: str | None = None  # nothing to undo, and why
    undone_by: Path | None = None  # the finished undo whose files are in place (nothing to undo)

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


def plan_undo(backup_dir: str | Path, force: bool = False, backup_root: str | Path | None = None) -> UndoPlan:
    """The steps that undo the run (call under the log dir's lock: see :func:`undo`). When the
    files say the run was already undone (refused as changed since, nothing left to undo, or
    ``force``), the undo that did it is looked for under the backup roots (``backup_root``
    among them)."""
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
        if plan.conflicts or not plan.steps or force:  # forced, a file as it was before may still get a step
            plan.undone_by = undone_by(tree, backup_dir, manifest, _backup_roots(backup_dir, log_dir, backup_root))
    if plan.undone_by is not None:
        plan.steps, plan.conflicts = [], []
        plan.note = f"already undone by {plan.undone_by}{_redo_of(manifest)}: nothing to do"
    elif not plan.steps and not plan.conflicts:
        plan.note = "every file is already as it was before that run: nothing to undo"
    return plan


# -- was it undone already? -------------------------------------------------------------------------

def undone_by(tree: Tree, backup_dir: Path, manifest: dict, roots: list[Path]) -> Path | None:
    """The backup directory of the finished run that left the run of ``backup_dir`` undone and
    whose files are still in place (None: none is). Undos of undos are followed: a run an odd
    number of undos away undid it (one an even number away redid it); the latest in place wins."""
    undos = _finished_undos(roots)
    found: list[tuple[str, int, str, Path, dict]] = []
    seen = {_identity(backup_dir)}
    level, depth = [backup_dir], 0
    while level:
        depth += 1
        following = []
        for target in level:
            for directory, document in undos.get(_identity(target), []):
                if _identity(directory) in seen:
                    continue
                seen.add(_identity(directory))
                following.append(directory)
                if depth % 2:
                    found.append((document["started"], depth, directory.name, directory, document))
        level = following
    for *_order, directory, document in sorted(found, key=lambda item: item[:3], reverse=True):
        if undo_in_place(tree, manifest, document):
            return directory
    return None


def _backup_roots(backup_dir: Path, log_dir: Path, backup_root: str | Path | None) -> list[Path]:
    """Where undos of a run are: beside its backup, ``--backup-dir``, seglog-backups/ beside the log dir."""
    roots = [backup_dir.parent, default_backup_root(log_dir)]
    if backup_root is not None:
        roots.insert(1, Path(backup_root))
    return list(dict.fromkeys(Path(os.path.realpath(root)) for root in roots))


def _finished_undos(roots: list[Path]) -> dict[tuple, list[tuple[Path, dict]]]:
    """The finished undos under ``roots``, by the identity of the backup directory each undid."""
    out: dict[tuple, list[tuple[Path, dict]]] = {}
    for root in roots:
        try:
            names = sorted(os.listdir(root))
        except OSError:
            continue
        for name in names:
            if name.startswith(".") or "-undo-" not in name:
                continue
            try:
                document = read_manifest(root / name)
            except BackupError:
                continue
            undoes = document.get("undoes")
            if document.get("state") == COMPLETE and isinstance(undoes, str) and document.get("command") == "undo":
                key = _identity(Path(undoes))
                if key is not None:
                    out.setdefault(key, []).append((root / name, document))
    return out


def _identity(directory: Path) -> tuple | None:
    """A directory as the file system knows it (symlinks and other spellings of it alike)."""
    try:
        info = os.stat(directory)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _redo_of(manifest: dict) -> str:
    """For an undo undone (a redo): which run the redo put back."""
    if "undoes" not in manifest:
        return ""
    try:
        origin = read_manifest(manifest["undoes"])
    except BackupError:
        return ", which redid what it undid"
    return f", which redid the `{origin['command']}` run of {origin['started']}"


def undo(backup_dir: str | Path, force: bool = False, dry_run: bool = False,
         backup_root: str | Path | None = None) -> tuple[UndoPlan, Path | None, list[str]]:
    """Plan under the log dir's lock, then (unless ``dry_run``) carry the undo out as a journaled
    run. Returns the plan, the undo's own backup directory, and what was finished on the way in
    (an interrupted run in that log dir is rolled back first). When files changed since (and
    ``force`` is not given) nothing is done and ``plan.conflicts`` says why, one line per file."""
    _manifest, log_dir = manifest_log_dir(backup_dir)
    if dry_run:
        return plan_undo(backup_dir, force, backup_root), None, []
    with WriteSession([log_dir], "undo", backup_root or Path(backup_dir).absolute().parent) as session:
        plan = plan_undo(backup_dir, force, backup_root)
        if plan.conflicts:
            return plan, None, session.notes
        done = session.apply(plan.steps, extra={"undoes": str(plan.backup_dir)}) if plan.steps else None
        return plan, done, session.notes


__all__ = ["UndoPlan", "manifest_log_dir", "plan_undo", "undo", "undone_by"]
