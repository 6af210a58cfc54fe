"""Writing into a log dir without losing a byte: the broker's lock, backups, a manifest, undo.

Every command that changes files (rebuild-index, append, recover, retention apply) goes
through one :class:`ChangeSet`:

* :func:`held_log_dir` takes the log dir's ``.lock`` with ``fcntl.lockf`` (a POSIX record
  lock, the kind Java's ``FileChannel.tryLock`` takes on Linux), so seglog refuses to write
  while a broker runs on the dir, and a broker cannot start while seglog writes;
* before a file is replaced, truncated, appended to or removed, its original bytes (or, for an
  append, its original size) go to the backup directory and the intent is recorded in
  ``manifest.json`` there, fsynced, *before* the file is touched;
* replacements go through a temporary file, fsync, an atomic rename and a directory fsync;
* :func:`undo` replays a manifest backwards and puts every file back as it was.

Backups live outside the log dir (a directory Kafka does not recognise inside a log dir takes
the whole dir offline at start-up): by default ``<parent of the log dir>/seglog-backups/``.

A crash at any moment leaves each file either as it was or as it is meant to be; the only
leftovers are ``*.tmp`` files, which Kafka ignores and verify reports as info. For tests,
``SEGLOG_FAULT_AT=N`` ends the process (as ``kill -9`` would) just before the N-th write step.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from seglog_cli.storage.errors import SeglogError, WriteError
from seglog_cli.storage.files import fsync_dir, write_atomically, write_temp

LOCK_FILE = ".lock"
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
BACKUP_DIR_NAME = "seglog-backups"
FAULT_ENV = "SEGLOG_FAULT_AT"
FAULT_EXIT_STATUS = 137  # what a shell reports for a process killed by SIGKILL


class LogDirLockedError(SeglogError):
    """A broker (or another seglog) holds the log dir's ``.lock``: nothing was written."""


class BackupError(SeglogError):
    """The backup directory cannot be created or written: nothing was changed."""


# -- the broker's lock ----------------------------------------------------------------------

@contextmanager
def held_log_dir(log_dir: str | Path) -> Iterator[Path | None]:
    """Hold ``log_dir/.lock`` for the duration of a write, or raise :class:`LogDirLockedError`.

    A log dir without a ``.lock`` has never been opened by a broker (or was copied without it):
    there is nothing to lock and seglog does not create one. Yields the lock file, or None.
    """
    lock_path = Path(log_dir) / LOCK_FILE
    try:
        fd = os.open(lock_path, os.O_RDWR)
    except FileNotFoundError:
        yield None
        return
    except OSError as exc:
        raise LogDirLockedError(f"cannot open the log dir lock to take it: {exc.strerror}", lock_path) from None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                raise LogDirLockedError(
                    "the log dir is locked: a broker (or another seglog) is running on it; stop it "
                    "first, nothing was written", lock_path) from None
            raise LogDirLockedError(f"cannot lock the log dir: {exc.strerror}", lock_path) from None
        yield lock_path
    finally:
        os.close(fd)  # closing releases the lock


def is_locked(log_dir: str | Path) -> bool:
    """Whether another process holds ``log_dir/.lock`` right now (nothing is changed)."""
    try:
        with held_log_dir(log_dir):
            return False
    except LogDirLockedError:
        return True


# -- fault injection --------------------------------------------------------------------------

class _Steps:
    """Counts write steps; with ``SEGLOG_FAULT_AT=N`` the process dies before step N."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, what: str) -> None:
        self.count += 1
        target = os.environ.get(FAULT_ENV)
        if target and target.isdigit() and int(target) == self.count:
            sys.stderr.write(f"seglog: fault injected before write step {self.count} ({what})\n")
            sys.stderr.flush()
            os._exit(FAULT_EXIT_STATUS)


write_step = _Steps()


# -- the change set -------------------------------------------------------------------------

@dataclass
class Change:
    """One file operation, as the manifest records it."""

    op: str  # "replace", "create", "append", "truncate", "remove", "rename"
    path: str  # absolute
    backup: str | None = None  # relative to the backup dir: the original bytes
    size_before: int | None = None
    size_after: int | None = None
    sha256_before: str | None = None
    target: str | None = None  # for "rename": the new absolute path
    offsets: list | None = None  # [first, last] offsets the removed bytes held (a .log), when known

    def as_dict(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if value is not None}


def default_backup_root(log_dir: str | Path) -> Path:
    return Path(log_dir).absolute().parent / BACKUP_DIR_NAME


@dataclass
class ChangeSet:
    """The files one command changes under ``log_dir``, each backed up first.

    Use as a context manager *inside* :func:`held_log_dir`; the manifest is marked complete
    when the block ends without an exception.
    """

    log_dir: Path
    command: str
    backup_root: Path | None = None
    argv: list[str] = field(default_factory=lambda: list(sys.argv))
    changes: list[Change] = field(default_factory=list)
    backup_dir: Path | None = None
    complete: bool = False

    def __post_init__(self) -> None:
        self.log_dir = Path(self.log_dir).absolute()
        self.backup_root = Path(self.backup_root) if self.backup_root else default_backup_root(self.log_dir)
        self.started = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())

    def __enter__(self) -> "ChangeSet":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None and self.backup_dir is not None:
            self.complete = True
            self._write_manifest()

    # -- operations -------------------------------------------------------------------------

    def replace(self, path: str | Path, data: bytes, offsets: tuple[int, int | None] | None = None) -> None:
        """Write ``data`` as ``path`` (temp file, fsync, rename), the original backed up."""
        path = Path(path).absolute()
        if path.exists():
            change = self._record(Change("replace", str(path)), path, keep_bytes=True)
        else:
            change = self._record(Change("create", str(path)), None)
        change.size_after = len(data)
        change.offsets = list(offsets) if offsets else None
        self._write_manifest()
        write_step(f"write {path.name}")
        write_atomically(path, data)

    def stage(self, path: str | Path, data: bytes) -> Path:
        """Write ``data`` to ``<path>.tmp`` (fsynced) for a later :meth:`commit`: a new file
        can then be prepared before the files that must exist first, and appear whole."""
        path = Path(path).absolute()
        if path.exists():
            raise WriteError("will only stage a file that does not exist yet", path)
        change = self._record(Change("create", str(path)), None)
        change.size_after = len(data)
        self._write_manifest()
        write_step(f"stage {path.name}")
        tmp = write_temp(path, data)
        fsync_dir(path.parent)
        return tmp

    def commit(self, path: str | Path) -> None:
        """Rename a staged ``<path>.tmp`` to ``path``."""
        path = Path(path).absolute()
        write_step(f"commit {path.name}")
        try:
            os.replace(path.with_name(path.name + ".tmp"), path)
            fsync_dir(path.parent)
        except OSError as exc:
            raise WriteError(f"cannot rename into place: {exc.strerror}", path) from None

    def append(self, path: str | Path, data: bytes) -> None:
        """Append ``data`` to ``path`` (one write, fsync); undo truncates back to the old size."""
        path = Path(path).absolute()
        created = not path.exists()
        change = self._record(Change("create" if created else "append", str(path)), None if created else path,
                              keep_bytes=False)
        change.size_after = (change.size_before or 0) + len(data)
        self._write_manifest()
        write_step(f"append to {path.name}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                fsync_dir(path.parent)
        except OSError as exc:
            raise WriteError(f"cannot append: {exc.strerror}", path) from None

    def truncate(self, path: str | Path, size: int, offsets: tuple[int, int | None] | None = None) -> None:
        """Cut ``path`` to ``size`` bytes; the bytes removed are kept in the backup."""
        path = Path(path).absolute()
        change = self._record(Change("truncate", str(path)), path, keep_bytes=True)
        change.size_after = size
        change.offsets = list(offsets) if offsets else None
        self._write_manifest()
        write_step(f"truncate {path.name}")
        try:
            with open(path, "r+b") as handle:
                handle.truncate(size)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise WriteError(f"cannot truncate: {exc.strerror}", path) from None

    def remove(self, path: str | Path, offsets: tuple[int, int | None] | None = None) -> None:
        """Remove ``path``, its bytes kept in the backup."""
        path = Path(path).absolute()
        change = self._record(Change("remove", str(path)), path, keep_bytes=True)
        change.offsets = list(offsets) if offsets else None
        self._write_manifest()
        write_step(f"remove {path.name}")
        try:
            path.unlink()
            fsync_dir(path.parent)
        except OSError as exc:
            raise WriteError(f"cannot remove: {exc.strerror}", path) from None

    def rename(self, path: str | Path, target: str | Path) -> None:
        """Rename ``path`` to ``target`` (which must not exist), atomically."""
        path, target = Path(path).absolute(), Path(target).absolute()
        if target.exists():
            raise WriteError(f"will not rename over an existing file {target}", path)
        self._record(Change("rename", str(path), target=str(target)), None)
        self._write_manifest()
        write_step(f"rename {path.name}")
        try:
            os.rename(path, target)
            fsync_dir(target.parent)
        except OSError as exc:
            raise WriteError(f"cannot rename: {exc.strerror}", path) from None

    # -- the backup -------------------------------------------------------------------------

    def _ensure_backup_dir(self) -> Path:
        if self.backup_dir is None:
            name = f"{self.started}-{self.command}-{os.getpid()}"
            try:
                self.backup_root.mkdir(parents=True, exist_ok=True)
                for attempt in range(1, 1000):  # two runs in the same second of one process
                    directory = self.backup_root / (name if attempt == 1 else f"{name}-{attempt}")
                    try:
                        directory.mkdir()
                        break
                    except FileExistsError:
                        continue
                fsync_dir(self.backup_root)
            except OSError as exc:
                raise BackupError(f"cannot create the backup directory ({exc.strerror}); nothing was changed "
                                  "(choose another place with --backup-dir)", self.backup_root) from None
            self.backup_dir = directory
        return self.backup_dir

    def _record(self, change: Change, original: Path | None, keep_bytes: bool = True) -> Change:
        directory = self._ensure_backup_dir()
        if original is not None:
            try:
                change.size_before = original.stat().st_size
                if keep_bytes:
                    relative = Path("files") / f"{len(self.changes):04d}-{original.name}"
                    target = directory / relative
                    target.parent.mkdir(exist_ok=True)
                    write_step(f"back up {original.name}")
                    change.sha256_before = _copy_and_hash(original, target)
                    change.backup = str(relative)
            except OSError as exc:
                raise BackupError(f"cannot back up: {exc.strerror}; nothing was changed", original) from None
        self.changes.append(change)
        return change

    def _write_manifest(self) -> None:
        document = {
            "version": MANIFEST_VERSION,
            "command": self.command,
            "argv": self.argv,
            "started": self.started,
            "logDir": str(self.log_dir),
            "complete": self.complete,
            "changes": [change.as_dict() for change in self.changes],
        }
        write_step("write the manifest")
        write_atomically(self._ensure_backup_dir() / MANIFEST,
                         (json.dumps(document, indent=1) + "\n").encode(), error=BackupError)


def _copy_and_hash(source: Path, target: Path) -> str:
    digest = hashlib.sha256()
    with open(source, "rb") as src, open(target, "xb") as dst:
        while chunk := src.read(1 << 20):
            digest.update(chunk)
            dst.write(chunk)
        dst.flush()
        os.fsync(dst.fileno())
    fsync_dir(target.parent)
    return digest.hexdigest()


# -- undo -------------------------------------------------------------------------------------

def read_manifest(backup_dir: str | Path) -> dict:
    path = Path(backup_dir) / MANIFEST
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BackupError(f"not a seglog backup manifest: {exc}", path) from None
    if not isinstance(document, dict) or document.get("version") != MANIFEST_VERSION:
        raise BackupError(f"unsupported manifest version {document.get('version')!r}", path)
    return document


def undo(backup_dir: str | Path, dry_run: bool = False) -> list[str]:
    """Put every file the manifest names back as it was, newest change first.

    Safe after a crash in the middle of the change set: each step's intent was recorded before
    the step, and undoing a step that never happened is a no-op. Returns one line per action
    (with ``dry_run``, what would be done; nothing is touched). The caller holds the log dir's
    lock (:func:`undo_under_lock` does both).
    """
    backup_dir = Path(backup_dir)
    document = read_manifest(backup_dir)
    done = []
    for change in reversed(document["changes"]):
        path = Path(change["path"])
        op = change["op"]
        if op == "create":
            for created in (path, path.with_name(path.name + ".tmp")):  # staged files too
                if created.exists():
                    done.append(f"remove {created} (created)")
                    if not dry_run:
                        created.unlink()
        elif op == "append":
            if path.exists() and path.stat().st_size > change["size_before"]:
                done.append(f"truncate {path} to {change['size_before']} bytes (appended to)")
                if not dry_run:
                    with open(path, "r+b") as handle:
                        handle.truncate(change["size_before"])
                        os.fsync(handle.fileno())
        elif op == "rename":
            target = Path(change["target"])
            if target.exists() and not path.exists():
                done.append(f"rename {target} back to {path.name}")
                if not dry_run:
                    os.rename(target, path)
        else:  # replace, truncate, remove: the original bytes are in the backup
            source = backup_dir / change["backup"]
            if not source.is_file():
                raise BackupError(f"the backup of {path} is missing", source)
            done.append(f"restore {path} ({change['size_before']} bytes, {op}d)")
            if not dry_run:
                tmp = path.with_name(path.name + ".tmp")
                shutil.copyfile(source, tmp)
                with open(tmp, "rb+") as handle:
                    os.fsync(handle.fileno())
                os.replace(tmp, path)
        if not dry_run and path.parent.is_dir():
            fsync_dir(path.parent)
    return done


def undo_under_lock(backup_dir: str | Path, dry_run: bool = False) -> list[str]:
    """:func:`undo` while holding the lock of the log dir the manifest names."""
    document = read_manifest(backup_dir)
    if dry_run:
        return undo(backup_dir, dry_run=True)
    with held_log_dir(document["logDir"]):
        return undo(backup_dir)

__all__ = ["BACKUP_DIR_NAME", "BackupError", "Change", "ChangeSet", "FAULT_ENV", "LogDirLockedError",
           "default_backup_root", "held_log_dir", "is_locked", "read_manifest", "undo", "undo_under_lock", "write_step"]
