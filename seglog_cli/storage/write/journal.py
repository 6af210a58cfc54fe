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
import re
import stat
import tempfile
import time
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.write.durable import (CannotWriteError, SpoolRange, Tree, describe_os_error, fault_point,
                                       read_chunks, write_sparse)
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.write.safety import BackupError, relative_to_log_dir

POINTER = ".seglog-journal"
MANIFEST = "manifest.json"
MANIFEST_VERSION = 2
PREPARED, COMPLETE, ROLLED_BACK = "prepared", "complete", "rolled-back"


class JournalError(SeglogError):
    """An interrupted run's journal cannot be rolled back as it is (nothing was changed)."""


@dataclass(slots=True)
class FileStep:
    """One change to a file of a log dir. ``op``: ``write`` (the whole file: ``data``, bytes or
    a :class:`~seglog_cli.storage.write.durable.SpoolRange`, or the bytes of the file ``source``),
    ``append`` (``data`` or ``source``), ``truncate`` (to
    ``size``), ``remove``, ``rename`` (to ``target``), ``mkdir``, ``rmdir``.

    ``ranges`` (with ``source``): only these ``[start, end)`` byte ranges of ``source``, in
    order. ``source`` may then be the very file the step rewrites (salvage keeps the valid
    batches of a ``.log`` without ever holding them in memory): it is read while the step's
    temp file is written, before the rename replaces it, and no earlier step of the run may
    change it."""

    op: str
    path: Path
    why: str = ""
    data: bytes | SpoolRange | None = None
    source: Path | None = None
    size: int | None = None
    target: Path | None = None
    offsets: tuple | None = None  # [first, last] offsets the removed bytes held, when known
    mtime_ns: int | None = None  # write: the modification time to give the file (undo)
    ranges: tuple | None = None  # [start, end) ranges of ``source`` making the new bytes


# -- contents ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Content:
    """What a path holds at one point of a run: its size and sha256 (None: no file)."""

    size: int
    sha256: str

    def as_dict(self) -> dict:
        return {"size": self.size, "sha256": self.sha256}


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


def _source_chunks(step: FileStep):
    if step.source is None:
        data = step.data or b""
        return data.chunks() if isinstance(data, SpoolRange) else [data]
    if step.ranges is not None:
        return _range_chunks(step.source, step.ranges)
    return backup_chunks(step.source)


def _range_chunks(path: Path, ranges):
    """The bytes of ``ranges`` of the regular file ``path``, in chunks (never through a
    symlink); a file shorter than the ranges is an error, not a short copy."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise CannotWriteError(f"cannot read: {describe_os_error(exc)}", path) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CannotWriteError("is not a regular file", path)
        for start, end in ranges:
            position = start
            for chunk in read_chunks(fd, start, end):
                position += len(chunk)
                yield chunk
            if position != end:
                raise CannotWriteError(f"ends at {position}, before byte {end} that the step copies", path)
    finally:
        os.close(fd)


def _slice_chunks(chunks, start: int, end: int):
    """Bytes ``[start, end)`` of the stream ``chunks``, without joining it."""
    position = 0
    for chunk in chunks:
        low, high = max(start - position, 0), min(end - position, len(chunk))
        if low < high:
            yield chunk[low:high]
        position += len(chunk)
        if position >= end:
            return


def backup_chunks(path: Path):
    """The bytes of a backup file, in chunks (never through a symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise BackupError(f"cannot read the backup: {exc.strerror}", path) from None
    try:
        yield from read_chunks(fd)
    finally:
        os.close(fd)


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
            journal._entries.write(_canonical(journal._record(model, index, step)).encode() + b"\n")
        document["expected"] = {relative: content for relative, (content, _origin) in model.state.items()}
        del model
        journal.write_manifest()
        fault_point(f"rename {partial.name} -> {final.name}")
        try:
            os.rename(partial, final)
            _fsync_path(backup_root)
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
        return (_canonical(entry) for entry in steps)

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
            after = Content(*_digest(_source_chunks(step)))
            entry["temp"] = f"{relative}.seglog-{self.document['id']}-{index}.tmp"
            if before is not None:
                entry["backup"] = self._backup(index, relative, origin, before.size)
            model.set(relative, after, ("step", index))
        elif op == "append":
            digest = self._prefix_digest(origin, before.size)
            for chunk in _source_chunks(step):
                digest.update(chunk)
            after = Content(before.size + _size_of(step), digest.hexdigest())
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
            yield from _slice_chunks(_source_chunks(self.steps[origin[1]]), start, end)
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
            write_sparse(fd, self._origin_chunks(origin, start, end), lambda fd, chunk: _write(fd, chunk, target))
            os.fsync(fd)
        except OSError as exc:
            raise CannotWriteError(f"cannot write the backup: {describe_os_error(exc)}; nothing was changed",
                                   target) from None
        finally:
            os.close(fd)
        return name

    def write_manifest(self) -> None:
        """The manifest, written whole (temporary file, fsync, rename) and streamed: one line per
        step and per entry of ``expected``, ``final`` and ``listing`` (see :func:`_fragments`),
        the checksum last; nothing of it is held in memory at once."""
        temp = self.directory / f"{MANIFEST}.{os.getpid()}.tmp"
        fault_point(f"write the manifest of {self.directory.name}")
        try:
            if temp.is_symlink() or temp.exists():
                temp.unlink()
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                body = {key: value for key, value in self.document.items() if key not in ("steps", "checksum")}
                digest, buffer = hashlib.sha256(), bytearray()
                for fragment in _fragments(body, self._entry_lines()):
                    data = fragment.encode()
                    digest.update(data)
                    buffer += data + b"\n"
                    if len(buffer) >= 1 << 20:
                        _write(fd, buffer, temp)
                        buffer.clear()
                digest.update(b"}")
                checksum = digest.hexdigest()
                buffer += f',"checksum":"{checksum}"}}\n'.encode()
                _write(fd, buffer, temp)
                os.fsync(fd)
            finally:
                os.close(fd)
            fault_point(f"rename the manifest of {self.directory.name}")
            os.replace(temp, self.directory / MANIFEST)
            _fsync_path(self.directory)
        except OSError as exc:
            raise CannotWriteError(f"cannot write the manifest: {describe_os_error(exc)}; nothing was changed",
                                   temp) from None
        self.document["checksum"] = checksum

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
                tree.create(entry["temp"], _source_chunks(step), mode=(entry["before"] or {}).get("mode", 0o644))
                if step.mtime_ns is not None:
                    tree.set_mtime(entry["temp"], step.mtime_ns)
                tree.rename(entry["temp"], relative)
            elif op == "append":
                tree.append(relative, _source_chunks(step))
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
            final[relative] = None if info is None else _Final(content.size, content.sha256, info.st_ino,
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


def _size_of(step: FileStep) -> int:
    if step.source is None:
        return len(step.data or b"")
    if step.ranges is not None:
        return sum(end - start for start, end in step.ranges)
    return os.stat(step.source).st_size


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


def _write(fd: int, data, path: Path) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise CannotWriteError(f"cannot write the backup: {describe_os_error(exc)}; nothing was changed",
                               path) from None


def _fsync_path(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


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


# -- the manifest -----------------------------------------------------------------------------------
#
# manifest.json is one JSON document, written in the key order and the text of its canonical form
# (json.dumps(body, sort_keys=True, separators=(",", ":"))) cut into lines at its steps and at the
# entries of its per-file maps: a reader takes the steps one line at a time, and the checksum,
# the sha256 of that canonical text, is computed as the lines are written (it comes last). Any
# other layout of the same document (a manifest edited by hand) is read whole and checked the
# same way.

_LINE_MAPS = ("expected", "final", "listing")  # maps with one entry per file: a line each
_CHECKSUM_LINE = re.compile(rb',"checksum":"([0-9a-f]{64})"\}\n?')
WHOLE_READ_LIMIT = 64 << 20  # a manifest not in the line layout is read whole up to this size


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _fragments(body: dict, entry_lines):
    """The canonical text of ``body`` with ``steps`` the entries of ``entry_lines`` (each its
    canonical text), in pieces: one per key, and for ``steps`` and the per-file maps one per
    item. Their concatenation, then ``}``, is ``_canonical(body with its steps)``."""
    keys = sorted(set(body) | {"steps"})
    for n, key in enumerate(keys):
        lead = "{" if n == 0 else ","
        name = json.dumps(key)
        if key == "steps":
            yield f"{lead}{name}:["
            for i, line in enumerate(entry_lines):
                yield line if i == 0 else "," + line
            yield "]"
        elif key in _LINE_MAPS and isinstance(body[key], LineMap) and len(body[key]):
            yield f"{lead}{name}:{{"
            for i, line in enumerate(body[key].lines()):
                yield line if i == 0 else "," + line
            yield "}"
        elif key in _LINE_MAPS and isinstance(body[key], dict) and body[key]:
            yield f"{lead}{name}:{{"
            for i, item in enumerate(sorted(body[key])):
                yield ("" if i == 0 else ",") + json.dumps(item) + ":" + _canonical(_plain(body[key][item]))
            yield "}"
        else:
            yield f"{lead}{name}:{_canonical(body[key])}"


class _Final(tuple):
    """A file as the run left it (``final``): size, sha256, inode, mtime."""

    def __new__(cls, size: int, sha256: str, ino: int, mtime_ns: int):
        return tuple.__new__(cls, (size, sha256, ino, mtime_ns))

    def as_dict(self) -> dict:
        return {"size": self[0], "sha256": self[1], "ino": self[2], "mtimeNs": self[3]}


def _plain(value):
    """A map's value as JSON has it (the run keeps them as small objects)."""
    return value.as_dict() if isinstance(value, (Content, _Final)) else value


class _ManifestLines:
    """Entries of a manifest read from its file as they are asked for: only the file offset of
    each is kept (8 bytes an entry). The file stays open, as it was checked."""

    def __init__(self, handle, offsets: array):
        self._handle = handle
        self._offsets = offsets

    def __len__(self) -> int:
        return len(self._offsets)

    def _line(self, index: int) -> bytes:
        self._handle.seek(self._offsets[index])
        line = self._handle.readline().rstrip(b"\n")
        return line[1:] if line.startswith(b",") else line

    def lines(self):
        """Each entry's canonical text, in order."""
        for index in range(len(self)):
            yield self._line(index).decode()


class LineMap(_ManifestLines, Mapping):
    """A manifest's per-file map (``expected``, ``final``, ``listing``) read from its file as it
    is walked."""

    def __init__(self, handle, offsets: array):
        super().__init__(handle, offsets)
        self._index: dict[str, int] | None = None

    def _item(self, index: int):
        (key, value), = json.loads(b"{" + self._line(index) + b"}").items()
        return key, value

    def items(self):
        return (self._item(index) for index in range(len(self)))

    def __iter__(self):
        return (key for key, _value in self.items())

    def __getitem__(self, key: str):
        if self._index is None:
            self._index = {k: index for index, k in enumerate(self)}
        return self._item(self._index[key])[1]


def manifest_checksum(document: dict) -> str:
    body = {key: value for key, value in document.items() if key != "checksum"}
    if isinstance(body.get("steps"), StepList) or any(isinstance(v, LineMap) for v in body.values()):
        digest = hashlib.sha256()
        steps = body.get("steps", [])
        lines = steps.lines() if isinstance(steps, StepList) else (_canonical(entry) for entry in steps)
        for fragment in _fragments({k: v for k, v in body.items() if k != "steps"}, lines):
            digest.update(fragment.encode())
        digest.update(b"}")
        return digest.hexdigest()
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class StepList(_ManifestLines, Sequence):
    """A manifest's step entries, read from its file as they are asked for."""

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return json.loads(self._line(index))

    def __iter__(self):
        for line in self.lines():
            yield json.loads(line)

    def close(self) -> None:
        self._handle.close()


def read_manifest(backup_dir: str | Path) -> dict:
    """A backup directory's manifest, checked (version, checksum, paths inside its log dir); its
    ``steps`` a :class:`StepList` when the file has seglog's line layout (a list otherwise)."""
    path = Path(backup_dir) / MANIFEST
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise BackupError("not a regular file", path)
        handle = os.fdopen(fd, "rb")
        document = _read_lines(handle)
        if document is None:
            handle.seek(0)
            data = handle.read(WHOLE_READ_LIMIT)
            handle.close()
            document = json.loads(data)
    except (OSError, ValueError) as exc:
        raise BackupError(f"not a seglog backup manifest: {getattr(exc, 'strerror', None) or exc}", path) from None
    if not isinstance(document, dict) or document.get("version") != MANIFEST_VERSION:
        version = document.get("version") if isinstance(document, dict) else None
        raise BackupError(f"unsupported manifest version {version!r} (this seglog reads version {MANIFEST_VERSION})",
                          path)
    if document.get("checksum") != manifest_checksum(document):
        raise BackupError("the manifest's checksum does not match its contents (edited or damaged): refused", path)
    for entry in document.get("steps", []):
        for relative in filter(None, (entry.get("path"), entry.get("target"))):
            parts = relative.split("/")
            if relative.startswith("/") or ".." in parts or len(parts) > 2 or "" in parts:
                raise BackupError(f"names a path outside its log dir ({relative!r}): refused", path)
    return document


def _read_lines(handle) -> dict | None:
    """A manifest in seglog's line layout: the document with its steps as a :class:`StepList`,
    the checksum as the file states it (checked by the caller); None for any other layout."""
    first = handle.readline()
    if not first.startswith(b'{"') or not first.endswith(b"\n"):
        return None
    head, offsets, maps = [], array("q"), {}
    in_steps, in_map, position, line = False, None, 0, first
    while True:
        following = handle.readline()
        if not following:  # ``line`` is the last one: the checksum
            match = _CHECKSUM_LINE.fullmatch(line)
            if match is None or in_steps:
                return None
            if match is None or in_map is not None:
                return None
            head.append(b"}")
            document = json.loads(b"".join(head))
            document["checksum"] = match.group(1).decode()
            document["steps"] = StepList(handle, offsets)
            for key, map_offsets in maps.items():
                document[key] = LineMap(handle, map_offsets)
            return document
        if not line.endswith(b"\n"):
            return None
        text = line[:-1]
        if in_steps and text != b"]":
            offsets.append(position)
        elif in_map is not None and text != b"}":
            maps[in_map].append(position)
        else:
            head.append(text)
            if text == b"]":
                in_steps = False
            elif text == b"}":
                in_map = None
            elif text.endswith(b'"steps":[') and text[:1] in (b"{", b","):
                in_steps = True
            elif text[:1] in (b"{", b",") and text.endswith(b":{") and text[2:-3].decode() in _LINE_MAPS \
                    and text[1:2] == b'"':
                in_map = text[2:-3].decode()
                maps[in_map] = array("q")
        position += len(line)
        line = following


__all__ = ["COMPLETE", "Content", "FileStep", "Journal", "JournalError", "MANIFEST", "POINTER", "PREPARED",
           "ROLLED_BACK", "StepList", "manifest_checksum", "read_manifest"]
