"""Inverting a journaled run: the rollback of an interrupted one and ``seglog undo`` of a finished one.

:func:`inverse_steps` walks a manifest's steps from the last to the first and decides, from
the files as they are now, what puts each back: a file as the step left it is inverted (from
the backup), a file as the step found it needs nothing, and anything else is a conflict (some
other process changed it): then nothing at all is done. The walk keeps a virtual view of the
files, so a file changed by several steps is judged at each step as the later inversions will
have left it. Because it is planned from the files, it is idempotent: a rollback killed
half-way is planned again and finishes.

:func:`recover_pending` is what every writing command does first under the lock: the run named
by ``<log dir>/.seglog-journal`` is rolled back (or, if it had finished, its pointer removed).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from seglog_cli.storage.write.durable import CannotWriteError, Tree, read_chunks
from seglog_cli.storage.write.file_steps import FileStep, backup_chunks
from seglog_cli.storage.write.journal import POINTER, Journal, JournalError
from seglog_cli.storage.write.manifest import ROLLED_BACK, read_manifest
from seglog_cli.storage.write.safety import BackupError


class _Files:
    """The files of a tree as the inversions planned so far will leave them."""

    def __init__(self, tree: Tree):
        self.tree = tree
        self.virtual: dict[str, dict | None] = {}
        self._sha: dict[tuple[str, int], str] = {}

    def info(self, relative: str) -> os.stat_result | None:
        info = self.tree.lstat(relative)
        if info is not None and not stat.S_ISREG(info.st_mode) and not stat.S_ISDIR(info.st_mode):
            return info  # a symlink or special file: matches nothing
        return info

    def size(self, relative: str) -> int | None:
        if relative in self.virtual:
            content = self.virtual[relative]
            return None if content is None else content["size"]
        info = self.info(relative)
        return None if info is None or not stat.S_ISREG(info.st_mode) else info.st_size

    def sha(self, relative: str, length: int) -> str:
        key = (relative, length)
        if key not in self._sha:
            fd = self.tree.open_read(relative)
            try:
                digest = hashlib.sha256()
                for chunk in read_chunks(fd, 0, length):
                    digest.update(chunk)
            finally:
                os.close(fd)
            self._sha[key] = digest.hexdigest()
        return self._sha[key]

    def matches(self, relative: str, content: dict | None) -> bool:
        if relative in self.virtual:
            mine = self.virtual[relative]
            return (mine is None and content is None) or (mine is not None and content is not None and
                                                          mine["size"] == content["size"] and
                                                          mine["sha256"] == content["sha256"])
        info = self.info(relative)
        if content is None:
            return info is None
        if info is None or not stat.S_ISREG(info.st_mode) or info.st_size != content["size"]:
            return False
        return self.sha(relative, content["size"]) == content["sha256"]

    def has_prefix(self, relative: str, content: dict) -> bool:
        """The file (not virtually changed) starts with ``content`` and is longer."""
        if relative in self.virtual:
            return False
        size = self.size(relative)
        return size is not None and size > content["size"] and self.sha(relative, content["size"]) == content["sha256"]

    def set(self, relative: str, content: dict | None) -> None:
        self.virtual[relative] = content


class ConflictError(JournalError):
    """Files are no longer as the run left them; ``conflicts`` has one line per file."""

    def __init__(self, conflicts: list[str], path):
        shown = "; ".join(conflicts[:3]) + ("; ..." if len(conflicts) > 3 else "")
        super().__init__(f"{len(conflicts)} file(s) are no longer as seglog left them ({shown}); nothing was changed",
                         path)
        self.conflicts = conflicts


def inverse_steps(tree: Tree, document: dict, backup_dir: Path, expect_final: bool = False,
                  force: bool = False) -> list[FileStep]:
    """The steps that put the files back as the run found them (see the module doc).

    The run carried its steps out in order, so each file went through the states its steps
    left it in; the file as it is now says how far the run got with it (the latest state it
    matches; a file cut short by a kill in the middle of an append matches the step it was in).
    The steps that were carried out are inverted, last first, each from its own backup. A file
    in none of its states is a conflict. With ``expect_final`` (undo), every file must be in
    its final state and no new file may have appeared beside them; ``force`` (undo) treats a
    file changed since as fully changed by the run (a whole-file restore or a removal then
    replaces it; files only appended to or truncated cannot be forced)."""
    files = _Files(tree)
    root = tree.root
    entries = document["steps"]
    if expect_final and not force:
        conflicts = _changed_since(files, document)
        if conflicts:
            raise ConflictError(conflicts, document.get("logDir"))
    done, conflicts = _carried_out(files, entries, force)
    if conflicts:
        raise ConflictError(list(dict.fromkeys(conflicts)), document.get("logDir"))
    out: list[FileStep] = []
    paths = _Paths(root, backup_dir)
    for index in reversed(range(len(entries))):
        entry = entries[index]
        if entry["op"] == "write" and tree.lstat(entry["temp"]) is not None:
            out.append(FileStep("remove", root / entry["temp"], "a temporary file of the interrupted run"))
        if done[index]:
            out.extend(_invert(entry, paths, done[index] == PARTIAL))
    return out


class _Paths:
    """The paths of inverse steps, made from one shared :class:`Path` per directory (a run of
    10^5 steps makes 10^5 of each), and their reasons, each text once."""

    def __init__(self, root: Path, backup_dir: Path):
        self.root = root
        self.backup_dir = backup_dir
        self._dirs: dict[tuple[Path, str], Path] = {}
        self._whys: dict[str, str] = {}

    def of(self, base: Path, relative: str) -> Path:
        directory, _, name = relative.rpartition("/")
        if not directory:
            return base / name
        parent = self._dirs.get((base, directory))
        if parent is None:
            parent = self._dirs[(base, directory)] = base / directory
        return parent / name

    def file(self, relative: str) -> Path:
        return self.of(self.root, relative)

    def backup(self, name: str) -> Path:
        return self.of(self.backup_dir, name)

    def why(self, text: str) -> str:
        return self._whys.setdefault(text, text)


def _describe(files: _Files, relative: str) -> str:
    size = files.size(relative)
    return f"{relative} ({'missing' if size is None else f'{size} bytes'})"


NOT_DONE, DONE, PARTIAL = 0, 1, 2


def _states(entries) -> dict[str, int | list[int]]:
    """For each file the steps that changed it, in order, as ``2 * index + 1`` when the file is
    the target of a rename, else ``2 * index`` (one int for a file one step changed, a list for
    more). The contents before and after each are read back when needed (:func:`_sequence`): a
    run of 10^5 steps keeps only these."""
    per_path: dict[str, int | list[int]] = {}

    def add(relative: str, code: int) -> None:
        found = per_path.get(relative)
        if found is None:
            per_path[relative] = code
        elif isinstance(found, int):
            per_path[relative] = [found, code]
        else:
            found.append(code)

    for index, entry in enumerate(entries):
        op = entry["op"]
        if op in ("mkdir", "rmdir"):
            continue
        add(entry["path"], 2 * index)
        if op == "rename":
            add(entry["target"], 2 * index + 1)
    return per_path


def _sequence(entries, codes: list[int]) -> list[tuple[int, dict | None, dict | None, str]]:
    """(step index, content before, content after, op) of a file's steps."""
    out = []
    for code in codes:
        index, is_target = divmod(code, 2)
        entry = entries[index]
        if is_target:
            out.append((index, entry.get("targetBefore"), entry.get("before"), entry["op"]))
        else:
            out.append((index, entry.get("before"), entry.get("after"), entry["op"]))
    return out


def _carried_out(files: _Files, entries, force: bool) -> tuple[bytearray, list[str]]:
    """For each step whether the files show it was carried out (``DONE``, ``PARTIAL`` when cut
    short), and the conflicts."""
    done = bytearray(len(entries))
    conflicts: list[str] = []
    renames: dict[int, list[bool]] = {}
    for relative, codes in _states(entries).items():
        sequence = _sequence(entries, [codes] if isinstance(codes, int) else codes)
        reached = _reached(files, relative, sequence)
        if reached is None and force and all(op in ("write", "remove") for *_rest, op in sequence):
            reached = (len(sequence), False)
        if reached is None:
            conflicts.append(_describe(files, relative))
            continue
        count, partial = reached
        for position, (index, _before, _after, op) in enumerate(sequence):
            executed = position < count
            if op == "rename":
                renames.setdefault(index, []).append(executed)
            elif executed:
                done[index] = PARTIAL if partial and position == count - 1 else DONE
    for index, votes in renames.items():
        if all(votes):
            done[index] = DONE
        elif any(votes):
            entry = entries[index]
            conflicts.append(f"{entry['path']} -> {entry['target']} (renamed half-way)")
    for index, entry in enumerate(entries):
        if entry["op"] in ("mkdir", "rmdir"):
            info = files.tree.lstat(entry["path"])
            if (info is not None) == (entry["op"] == "mkdir"):
                done[index] = DONE
    return done, conflicts


def _reached(files: _Files, relative: str, sequence: list) -> tuple[int, bool] | None:
    """How many of the file's steps it shows carried out (the latest state it matches), and
    whether the last of them was cut short; None when it matches no state."""
    states = [sequence[0][1]] + [after for _i, _b, after, _op in sequence]
    for count in range(len(states) - 1, -1, -1):
        if files.matches(relative, states[count]):
            return count, False
    for count in range(len(sequence), 0, -1):  # a kill in the middle of an append (or of its undoing)
        before, after = sequence[count - 1][1], sequence[count - 1][2]
        low, high = (before, after) if _grows(before, after) else (after, before)
        if low is not None and high is not None and files.has_prefix(relative, low) \
                and (files.size(relative) or 0) < high["size"]:
            return count, True
    return None


def _grows(before: dict | None, after: dict | None) -> bool:
    return before is not None and after is not None and after["size"] > before["size"]


def _invert(entry: dict, paths: _Paths, partial: bool) -> list[FileStep]:
    op, path = entry["op"], paths.file(entry["path"])
    before = entry.get("before")
    why = paths.why(f"undoing `{op}` ({entry.get('why') or 'no reason recorded'})")
    mtime = (before or {}).get("mtimeNs")
    if op == "write":
        if before is None:
            return [FileStep("remove", path, why)]
        return [FileStep("write", path, why, source=paths.backup(entry["backup"]), mtime_ns=mtime)]
    if op == "append":
        return [FileStep("truncate", path, why, size=before["size"], mtime_ns=mtime)]
    if op == "truncate":
        cut = [FileStep("truncate", path, why + ": a partial restore cut back", size=entry["after"]["size"])]
        return (cut if partial else []) + [FileStep("append", path, why, source=paths.backup(entry["backup"]),
                                                    mtime_ns=mtime)]
    if op == "remove":
        if before is None:
            return []
        return [FileStep("write", path, why, source=paths.backup(entry["backup"]), mtime_ns=mtime)]
    if op == "rename":
        target = paths.file(entry["target"])
        steps = [FileStep("rename", target, why, target=path)]
        if entry.get("targetBefore") is not None:
            steps.append(FileStep("write", target, why, source=paths.backup(entry["targetBackup"]),
                                  mtime_ns=entry["targetBefore"].get("mtimeNs")))
        return steps
    if op == "mkdir":
        return [FileStep("rmdir", path, why)]
    if op == "rmdir":
        return [FileStep("mkdir", path, why)]
    return []


def _changed_since(files: _Files, document: dict) -> list[str]:
    """Undo: the files the run left that are no longer as it left them, and partitions that
    have new files since."""
    conflicts = []
    for relative, final in (document.get("final") or {}).items():
        content = None if final is None else {"size": final["size"], "sha256": final["sha256"]}
        if not files.matches(relative, content):
            conflicts.append(f"{_describe(files, relative)} changed since the command")
    for directory, names in (document.get("listing") or {}).items():
        if names is None:
            continue
        try:
            now = set(os.listdir(files.tree.dir_fd(directory)))
        except (OSError, CannotWriteError):
            continue
        for name in sorted(now - set(names) - {".seglog-journal"}):
            conflicts.append(f"{directory}/{name} was written since the command")
    return conflicts


def undo_in_place(tree: Tree, undone: dict, undo: dict) -> bool:
    """Whether the finished ``undo`` of the run ``undone`` is still what the files show: every
    file as the undo left it, no new file beside them since, and every file the run changed as
    the run found it (so undoing the run again would do nothing)."""
    files = _Files(tree)
    if _changed_since(files, undo):
        return False
    entries = undone["steps"]
    for relative, codes in _states(entries).items():
        (_index, found, _after, _op), = _sequence(entries, [codes if isinstance(codes, int) else codes[0]])
        if not files.matches(relative, found):
            return False
    for entry in entries:
        if entry["op"] in ("mkdir", "rmdir") and (tree.lstat(entry["path"]) is None) != (entry["op"] == "mkdir"):
            return False
    return True


# -- carrying out a rollback --------------------------------------------------------------------------

def carry_out(tree: Tree, steps: list[FileStep], temp_tag: str) -> None:
    """Inverse steps, directly (a rollback is re-planned from the files if it is interrupted)."""
    for step in steps:
        relative = str(step.path.relative_to(tree.root))
        if step.op == "remove":
            tree.unlink(relative)
        elif step.op == "write":
            temp = f"{relative}.seglog-{temp_tag}.tmp"
            if tree.lstat(temp) is not None:
                tree.unlink(temp)
            tree.create(temp, backup_chunks(step.source))
            if step.mtime_ns is not None:
                tree.set_mtime(temp, step.mtime_ns)
            tree.rename(temp, relative)
        elif step.op == "truncate":
            tree.truncate(relative, step.size)
        elif step.op == "append":
            tree.append(relative, backup_chunks(step.source))
        if step.op in ("truncate", "append") and step.mtime_ns is not None:
            tree.set_mtime(relative, step.mtime_ns)
        elif step.op == "rename":
            tree.rename(relative, str(step.target.relative_to(tree.root)))
        elif step.op == "rmdir":
            tree.rmdir(relative)
        elif step.op == "mkdir":
            tree.mkdir(relative)


def roll_back(journal: Journal) -> list[FileStep]:
    """Put back what a journaled run changed, mark its manifest rolled back and remove the
    pointer; the inverse steps carried out."""
    document = journal.document if "steps" in journal.document else read_manifest(journal.directory)
    steps = inverse_steps(journal.tree, document, journal.directory)
    carry_out(journal.tree, steps, f"{journal.document['id']}-rollback")
    journal.document["state"] = ROLLED_BACK
    journal.write_manifest()
    journal.tree.unlink(POINTER)
    return steps


def recover_pending(tree: Tree) -> list[str]:
    """Finish what an interrupted seglog run left in this log dir (see the module doc); one
    line per thing done, for the operator."""
    info = tree.lstat(POINTER)
    if info is None:
        return []
    if not stat.S_ISREG(info.st_mode):
        raise JournalError(f"{POINTER} is not a regular file; move it away by hand", tree.root / POINTER)
    fd = tree.open_read(POINTER)
    try:
        raw = b"".join(read_chunks(fd, 0, 1 << 16))
    finally:
        os.close(fd)
    try:
        pointer = json.loads(raw) if raw.endswith(b"\n") else None
    except ValueError:
        pointer = None
    if not isinstance(pointer, dict) or not isinstance(pointer.get("backupDir"), str):
        tree.unlink(POINTER)  # written only before the first change: that run changed nothing
        return [f"removed an incomplete {POINTER} (the run that wrote it changed nothing)"]
    backup_dir = Path(pointer["backupDir"])
    try:
        document = read_manifest(backup_dir)
    except BackupError as exc:
        raise JournalError(f"an interrupted seglog run left {POINTER}, but its journal cannot be read ({exc}); "
                           "nothing was changed", tree.root / POINTER) from None
    if Path(document["logDir"]) != tree.root:
        raise JournalError(f"{POINTER} names a journal of another log dir ({document['logDir']}); nothing was changed",
                           tree.root / POINTER)
    if document["state"] == ROLLED_BACK:
        tree.unlink(POINTER)
        return [f"finished rolling back the `{document['command']}` run of {document['started']}"]
    # a run is committed when its pointer is gone: one stopped before that never reported success
    # (even with every step done), so it is rolled back and a rerun does the whole of it once
    steps = roll_back(Journal(tree, backup_dir, document))
    return [f"rolled back the interrupted `{document['command']}` run of {document['started']} ({len(steps)} "
            f"action{'' if len(steps) == 1 else 's'}; its backup and manifest stay in {backup_dir})"]


__all__ = ["ConflictError", "carry_out", "inverse_steps", "recover_pending", "roll_back", "undo_in_place"]
