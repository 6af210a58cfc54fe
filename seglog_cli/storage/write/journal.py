"""One write protocol for every command that changes a log dir: locked, journaled, resumable.

A writing command (recover, rebuild-index, append, simulate-retention --apply, undo) runs as

1. :class:`WriteSession` takes every log dir's ``.lock`` (:class:`~seglog_cli.storage.write.safety.LogDirLock`)
   and first finishes whatever an interrupted seglog run left there (:func:`recover_pending`);
2. the command plans under the lock, as a list of :class:`FileStep` (paths anywhere in the log
   dir: its own files and its partition directories');
3. :meth:`WriteSession.apply` orders the steps so that Kafka loads the directory at every
   instant (:mod:`seglog_cli.storage.kafka_order`), then :class:`Journal`:

   * copies every byte a step destroys into a new backup directory, records every step with the
     size and sha256 of the file before and after it in ``manifest.json`` there, fsynced;
   * publishes the journal: ``<log dir>/.seglog-journal`` names the backup directory (Kafka
     ignores files in a log dir's root);
   * carries out the steps (new content through a temp file created ``O_EXCL | O_NOFOLLOW``
     beside the target, then an atomic rename; appends, truncations, removals, renames);
   * records the final identity of every file it touched (size, sha256, inode, mtime), marks the
     manifest complete and removes ``.seglog-journal``.

A run killed at any point leaves ``.seglog-journal``: a run is committed only when that file is
gone (a run stopped after its last step but before it could report success counts as
interrupted). The next writing command on that log dir (or ``seglog undo``) rolls the run back
before anything else: it works out, step by step from
the last, whether each file is as the step left it (then the step is inverted from the
backup), as it found it (nothing to do) or something else (then nothing is touched and the
command stops with a one-line reason: something other than seglog changed the directory). The
rollback is planned from the files themselves, so a rollback killed half-way is simply planned
and carried out again. The manifest stays, as the backup of a rolled-back run.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
from pathlib import Path

from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.write.durable import (CannotWriteError, Tree, describe_os_error, fault_point, read_chunks,
                                              write_sparse)
from seglog_cli.storage.write.file_steps import FileStep, slice_chunks, source_chunks, step_size, write_backup
from seglog_cli.storage.write.manifest import (COMPLETE, MANIFEST_VERSION, PREPARED, Content, Final, StepList,
                                               canonical, fsync_directory, write_manifest_file)
from seglog_cli.storage.write.safety import relative_to_log_dir

POINTER = ".seglog-journal"


class JournalError(SeglogError):
    """An interrupted run's journal cannot be rolled back as it is (nothing was changed)."""


def _digest(chunks) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    for chunk in chunks:
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def _content_of(tree: Tree, relative: str, length: int | None = None) -> Content | None:
    """The content of a file of the tree (its first ``length`` bytes), None when absent."""
    info = tree.regular(relative)
    if info is None:
        return None
    fd = tree.open_read(relative)
    try:
        size, sha = _digest(read_chunks(fd, 0, length))
    finally:
        os.close(fd)
    return Content(size, sha)


# -- preparing: what each step finds and leaves ------------------------------------------------------

class _Model:
    """The files a run touches, as they will be after each step (contents by digest; the bytes
    of a disk file stay on disk until a step needs a backup of them)."""

    def __init__(self, tree: Tree):
        self.tree = tree
        self.state: dict[str, tuple[Content | None, tuple]] = {}  # path -> (content, origin)

    def get(self, relative: str) -> tuple[Content | None, tuple]:
        if relative not in self.state:
            info = self.tree.regular(relative)
            if info is None:
                self.state[relative] = (None, ("none",))
            else:
                self.state[relative] = (_content_of(self.tree, relative), ("disk", relative, info.st_size))
        return self.state[relative]

    def set(self, relative: str, content: Content | None, origin: tuple) -> None:
        self.state[relative] = (content, origin)


class Journal:
    """One run's backup directory, manifest and steps (see the module doc).

    ``document`` holds the manifest's keys but its steps: a run being made keeps its entries in
    an unnamed scratch file of its backup directory, one line each (never a list in memory: a
    run may change 10^5 files); a manifest read back from disk has them as a :class:`StepList`."""

    def __init__(self, tree: Tree, directory: Path, document: dict):
        self.tree = tree
        self.directory = directory
        self.document = document
        self.steps: list[FileStep] | None = None
        self._entries = None  # the run's entries, one canonical JSON line each (a scratch file)

    # -- creating ---------------------------------------------------------------------------------

    @classmethod
    def prepare(cls, tree: Tree, command: str, steps: list[FileStep], backup_root: Path,
                argv: list[str], extra: dict | None = None) -> "Journal":
        """Back up what the steps destroy and write the manifest (nothing in the log dir changes)."""
        final, partial = _new_backup_dir(backup_root, command)
        document = {"version": MANIFEST_VERSION, "command": command, "argv": argv,
                    "started": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()), "logDir": str(tree.root),
                    "id": final.name, "state": PREPARED, **(extra or {})}
        journal = cls(tree, partial, document)
        journal.steps = steps
        journal._entries = tempfile.TemporaryFile(dir=partial)
        model = _Model(tree)
        for index, step in enumerate(steps):
            journal._entries.write(canonical(journal._record(model, index, step)).encode() + b"\n")
        document["expected"] = {relative: content for relative, (content, _origin) in model.state.items()}
        del model
        journal.write_manifest()
        fault_point(f"rename {partial.name} -> {final.name}")
        try:
            os.rename(partial, final)
            fsync_directory(backup_root)
        except OSError as exc:
            raise CannotWriteError(f"cannot name the backup directory: {describe_os_error(exc)}; nothing was changed",
                                   partial) from None
        journal.directory = final
        return journal

    def entries(self):
        """The run's step entries, in order (dicts, read one at a time)."""
        if self._entries is not None:
            self._entries.seek(0)
            return (json.loads(line) for line in self._entries)
        return iter(self.document.get("steps", []))

    def _entry_lines(self):
        """The canonical JSON text of each entry, in order (what the manifest holds and its
        checksum covers)."""
        if self._entries is not None:
            self._entries.seek(0)
            return (line.rstrip(b"\n").decode() for line in self._entries)
        steps = self.document.get("steps", [])
        if isinstance(steps, StepList):
            return steps.lines()
        return (canonical(entry) for entry in steps)

    def _record(self, model: _Model, index: int, step: FileStep) -> dict:
        relative = relative_to_log_dir(self.tree.root, step.path)
        entry = {"op": step.op, "path": relative, "why": step.why}
        if step.offsets is not None:
            entry["offsets"] = list(step.offsets)
        before, origin = model.get(relative) if step.op not in ("mkdir", "rmdir") else (None, ("none",))
        entry["before"] = None if before is None else before.as_dict()
        if before is not None and origin[0] == "disk":
            info = self.tree.lstat(relative)
            entry["before"].update(mtimeNs=info.st_mtime_ns, mode=stat.S_IMODE(info.st_mode))
        op = step.op
        if op == "append" and before is None:  # appending to a file that is not there creates it
            op = entry["op"] = "write"
        if step.ranges is not None:
            self._check_ranges_source(model, step)
        if op == "write":
            after = Content(*_digest(source_chunks(step)))
            entry["temp"] = f"{relative}.seglog-{self.document['id']}-{index}.tmp"
            if before is not None:
                entry["backup"] = self._backup(index, relative, origin, before.size)
            model.set(relative, after, ("step", index))
        elif op == "append":
            digest = self._prefix_digest(origin, before.size)
            for chunk in source_chunks(step):
                digest.update(chunk)
            after = Content(before.size + step_size(step), digest.hexdigest())
            model.set(relative, after, ("appended", index))
        elif op == "truncate":
            if before is None or step.size > before.size:
                raise SeglogError(f"cannot truncate to {step.size} bytes", step.path)
            entry["backup"] = self._backup(index, relative, origin, before.size, start=step.size)
            entry["backupStart"] = step.size
            after = Content(step.size, self._prefix_digest(origin, step.size).hexdigest())
            model.set(relative, after, origin if origin[0] == "disk" else ("truncated", index))
        elif op == "remove":
            if before is not None:
                entry["backup"] = self._backup(index, relative, origin, before.size)
            model.set(relative, None, ("none",))
            after = None
        elif op == "rename":
            target = relative_to_log_dir(self.tree.root, step.target)
            entry["target"] = target
            if before is None:
                raise SeglogError(f"cannot rename a file that does not exist to {step.target}", step.path)
            replaced, replaced_origin = model.get(target)
            if replaced is not None:
                entry["targetBefore"] = replaced.as_dict()
                entry["targetBackup"] = self._backup(index, target, replaced_origin, replaced.size, suffix=".target")
            model.set(target, before, origin)
            model.set(relative, None, ("none",))
            after = None
        elif op in ("mkdir", "rmdir"):
            after = None
        else:
            raise SeglogError(f"unknown file step {op!r}", step.path)
        entry["after"] = None if after is None else after.as_dict()
        return entry

    def _check_ranges_source(self, model: _Model, step: FileStep) -> None:
        """A step copying ranges of a file of this log dir reads it from disk when it runs: the
        file must still be as the run found it then (no earlier step changed it)."""
        try:
            relative = relative_to_log_dir(self.tree.root, step.source)
        except SeglogError:
            return  # outside the log dir: nothing of this run changes it
        if relative in model.state and model.state[relative][1][0] != "disk":
            raise SeglogError("internal: a step copies from a file an earlier step of the same run changed",
                              step.source)

    def _prefix_digest(self, origin: tuple, length: int):
        digest = hashlib.sha256()
        for chunk in self._origin_chunks(origin, 0, length):
            digest.update(chunk)
        return digest

    def _origin_chunks(self, origin: tuple, start: int, end: int):
        if origin[0] == "disk":
            fd = self.tree.open_read(origin[1])
            try:
                yield from read_chunks(fd, start, end)
            finally:
                os.close(fd)
        elif origin[0] == "step":
            yield from slice_chunks(source_chunks(self.steps[origin[1]]), start, end)
        elif origin[0] != "none":
            raise SeglogError("a run that changes one file in two ways before writing it whole is not supported")

    def _backup(self, index: int, relative: str, origin: tuple, end: int, start: int = 0, suffix: str = "") -> str:
        """Copy bytes [start, end) of what ``relative`` holds into the backup; the backup's name."""
        name = f"files/{index:04d}-{relative.replace('/', '~')}{suffix}" + (".tail" if start else "")
        target = self.directory / name
        fault_point(f"back up {relative}")
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise CannotWriteError(f"cannot write the backup: {describe_os_error(exc)}; nothing was changed",
                                   target) from None
        try:
            write_sparse(fd, self._origin_chunks(origin, start, end), lambda fd, chunk: write_backup(fd, chunk, target))
            os.fsync(fd)
        except OSError as exc:
            raise CannotWriteError(f"cannot write the backup: {describe_os_error(exc)}; nothing was changed",
                                   target) from None
        finally:
            os.close(fd)
        return name

    def write_manifest(self) -> None:
        """The manifest, written whole and streamed (:func:`~seglog_cli.storage.write.manifest.write_manifest_file`)."""
        self.document["checksum"] = write_manifest_file(self.directory, self.document, self._entry_lines())

    # -- carrying out ---------------------------------------------------------------------------

    def publish(self) -> None:
        """``<log dir>/.seglog-journal``: from here on a kill is rolled back by the next run."""
        line = json.dumps({"backupDir": str(self.directory), "command": self.document["command"]}) + "\n"
        self.tree.create(POINTER, [line.encode()])
        self.tree.sync_dir(POINTER)

    def execute(self) -> None:
        tree = self.tree
        for step, entry in zip(self.steps, self.entries()):
            op, relative = entry["op"], entry["path"]
            if op == "write":
                if tree.lstat(entry["temp"]) is not None:
                    tree.unlink(entry["temp"])
                tree.create(entry["temp"], source_chunks(step), mode=(entry["before"] or {}).get("mode", 0o644))
                if step.mtime_ns is not None:
                    tree.set_mtime(entry["temp"], step.mtime_ns)
                tree.rename(entry["temp"], relative)
            elif op == "append":
                tree.append(relative, source_chunks(step))
            elif op == "truncate":
                tree.truncate(relative, step.size)
            if op in ("append", "truncate") and step.mtime_ns is not None:
                tree.set_mtime(relative, step.mtime_ns)
            elif op == "remove":
                tree.unlink(relative)
            elif op == "rename":
                tree.rename(relative, entry["target"])
            elif op == "mkdir":
                tree.mkdir(relative)
            elif op == "rmdir":
                tree.rmdir(relative)

    def complete(self) -> None:
        """The final identity of every file touched, the manifest marked complete, the pointer gone."""
        final = {}
        for relative, content in self.document["expected"].items():
            info = self.tree.lstat(relative) if content is not None else None
            final[relative] = None if info is None else Final(content.size, content.sha256, info.st_ino,
                                                               info.st_mtime_ns)
        self.document["final"] = final
        self.document["listing"] = _listings(self.tree, final)
        self.document["state"] = COMPLETE
        self.write_manifest()
        self.tree.unlink(POINTER)
        self.close()

    def close(self) -> None:
        if self._entries is not None:
            self._entries.close()
            self._entries = None


def _listings(tree: Tree, final: dict) -> dict:
    """The names in each partition directory the run touched, as the run left them."""
    out = {}
    for relative in final:
        directory = relative.rpartition("/")[0]
        if directory and directory not in out:
            try:
                out[directory] = sorted(os.listdir(tree.dir_fd(directory)))
            except (OSError, CannotWriteError):
                out[directory] = None
    return out


def _new_backup_dir(root: Path, command: str) -> tuple[Path, Path]:
    """(final name, the hidden directory it is prepared in): a backup directory appears under
    its name only with its manifest in it, so ``seglog undo`` never meets a half-made one (a
    kill leaves at most a hidden ``.<name>.partial``, while nothing in the log dir has changed)."""
    name = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{command}-{os.getpid()}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, 1000):
            final = root / (name if attempt == 1 else f"{name}-{attempt}")
            partial = root / f".{final.name}.partial"
            if final.exists() or partial.exists():
                continue
            fault_point(f"mkdir {partial.name}")
            try:
                partial.mkdir()
                break
            except FileExistsError:
                continue
        fault_point(f"mkdir {partial.name}/files")
        (partial / "files").mkdir()
    except OSError as exc:
        raise CannotWriteError(f"cannot create the backup directory: {describe_os_error(exc)}; nothing was changed "
                               "(choose another place with --backup-dir)", root) from None
    return final, partial


__all__ = ["Journal", "JournalError", "POINTER"]
