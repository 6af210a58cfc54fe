"""Where seglog may write, and the broker's lock that says when.

* :class:`LogDirLock` takes ``<log dir>/.lock`` with ``fcntl.lockf`` (a POSIX record lock, the
  kind Java's ``FileChannel.tryLock`` takes on Linux) exactly where a broker takes it: the log
  dir is first resolved to its real path (symlinks, ``.``, relative paths), so a partition
  given through a symlink or as ``.`` locks the same file the broker locks. A missing ``.lock``
  is created, as Kafka creates it. The lock is taken *before* a command plans, and held until
  it has written.
* :func:`relative_to_log_dir` accepts only paths inside the real log dir: the log dir's own
  files and the files of real (not symlinked) ``topic-partition`` directories directly below it.
* :func:`check_backup_root` refuses a backup directory inside a log dir (Kafka takes a log dir
  offline when it finds a directory it cannot parse as a partition).

The write protocol itself (journal, backups, rollback) is in :mod:`seglog_cli.storage.write.journal`.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from seglog_cli.storage.write.durable import CannotWriteError, describe_os_error
from seglog_cli.storage.log.errors import LogDirLockedError, SeglogError
from seglog_cli.storage.log.naming import parse_partition_dir_name

LOCK_FILE = ".lock"
BACKUP_DIR_NAME = "seglog-backups"


class BackupError(SeglogError):
    """A backup directory or its manifest cannot be used (nothing was changed)."""


class PlanOutdatedError(SeglogError):
    """The files changed between planning and applying: nothing was written."""


def resolve_log_dir(path: str | Path) -> Path:
    """The real path of a log dir (symlinks, ``.`` and ``..`` resolved)."""
    return Path(os.path.realpath(path))


def log_dir_of(partition_dir: str | Path) -> Path:
    """The real log dir holding a partition directory."""
    return resolve_log_dir(partition_dir).parent


# -- the broker's lock ----------------------------------------------------------------------------

class LogDirLock:
    """``<log dir>/.lock`` held with ``fcntl.lockf``. POSIX locks belong to the process and go
    when *any* descriptor of the file is closed, so one process keeps one descriptor per log
    dir: taking the same log dir twice (nested) shares it."""

    _held: dict[Path, list] = {}  # real log dir -> [fd, holders]

    def __init__(self, log_dir: str | Path):
        self.log_dir = resolve_log_dir(log_dir)
        self.path = self.log_dir / LOCK_FILE
        self.taken = False

    def acquire(self) -> "LogDirLock":
        held = self._held.get(self.log_dir)
        if held is not None:
            held[1] += 1
            self.taken = True
            return self
        if not self.log_dir.is_dir():
            raise CannotWriteError("no such log dir", self.log_dir)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise CannotWriteError(f"cannot open the log dir lock to take it: {describe_os_error(exc)}; nothing "
                                   "was changed", self.path) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise CannotWriteError("is not a regular file; nothing was changed", self.path)
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                raise LogDirLockedError("the log dir is locked: a broker (or another seglog) is running on it; stop "
                                        "it first, nothing was changed", self.path) from None
            raise CannotWriteError(f"cannot lock the log dir: {describe_os_error(exc)}; nothing was changed",
                                   self.path) from None
        except CannotWriteError:
            os.close(fd)
            raise
        self._held[self.log_dir] = [fd, 1]
        self.taken = True
        return self

    def release(self) -> None:
        if not self.taken:
            return
        self.taken = False
        held = self._held[self.log_dir]
        held[1] -= 1
        if held[1] == 0:
            del self._held[self.log_dir]
            os.close(held[0])  # closing releases the lock

    def __enter__(self) -> "LogDirLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


@contextmanager
def held_log_dir(log_dir: str | Path) -> Iterator[Path]:
    """Hold the log dir's ``.lock`` for the block (see :class:`LogDirLock`); yields the lock file."""
    with LogDirLock(log_dir) as lock:
        yield lock.path


def is_locked(log_dir: str | Path) -> bool:
    """Whether another process holds ``log_dir/.lock`` right now (only asked, never taken:
    ``F_GETLK``-style, so a lock this process holds is not dropped)."""
    path = resolve_log_dir(log_dir) / LOCK_FILE
    if resolve_log_dir(log_dir) in LogDirLock._held:
        return False
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


# -- where writes may go ----------------------------------------------------------------------------

def relative_to_log_dir(log_dir: Path, path: str | Path) -> str:
    """``path`` as ``name`` or ``topic-partition/name`` below the real ``log_dir``, or a refusal.

    The partition directory must be a real directory (not a symlink) named like a partition;
    its real path must be directly below the log dir."""
    path = Path(path)
    if os.path.islink(path.parent):
        raise CannotWriteError("the partition directory is a symlink: seglog only writes into real partition "
                               "directories; nothing was changed", path.parent)
    parent = Path(os.path.realpath(path.parent))
    if parent == log_dir:
        return path.name
    name = parse_partition_dir_name(parent.name)
    if name is not None and name.kind == "remote":
        raise CannotWriteError("is in tiered storage (a remote partition directory in LocalTieredStorage's layout): "
                               "seglog reads remote storage and never writes it; nothing was changed", path)
    if parent.parent != log_dir or name is None:
        raise CannotWriteError(f"is not inside the log dir {log_dir} (or not in a topic-partition directory of it); "
                               "nothing was changed", path)
    entry = log_dir / parent.name
    try:
        if stat.S_ISLNK(os.lstat(entry).st_mode):
            raise CannotWriteError("the partition directory is a symlink: seglog only writes into real partition "
                                   "directories; nothing was changed", entry)
    except FileNotFoundError:
        pass  # a partition being created
    return f"{parent.name}/{path.name}"


def refuse_tiered_storage(log_dir: Path) -> None:
    """Remote storage is read only: a directory holding remote partition directories
    (LocalTieredStorage's ``kafka-tiered-storage``) is never locked, backed up or written."""
    try:
        remote = next((entry for entry in log_dir.iterdir() if entry.is_dir()
                       and (name := parse_partition_dir_name(entry.name)) is not None and name.kind == "remote"), None)
    except OSError:
        return  # the lock reports an unreadable log dir
    if remote is not None:
        raise CannotWriteError("is tiered storage (it holds remote partition directories in LocalTieredStorage's "
                               "layout): seglog reads remote storage and never writes it; nothing was changed", log_dir)


def default_backup_root(log_dir: str | Path) -> Path:
    return resolve_log_dir(log_dir).parent / BACKUP_DIR_NAME


def check_backup_root(root: str | Path, log_dirs: list[Path]) -> Path:
    """The real backup root, refused when it lies inside one of ``log_dirs``."""
    real = Path(os.path.realpath(root))
    for log_dir in log_dirs:
        if real == log_dir or log_dir in real.parents:
            raise CannotWriteError(f"the backup directory is inside the log dir {log_dir}: Kafka would take the log "
                                   "dir offline for a directory it cannot parse; choose one outside (--backup-dir); "
                                   "nothing was changed", root)
    return real


__all__ = ["BACKUP_DIR_NAME", "BackupError", "CannotWriteError", "LOCK_FILE", "LogDirLock", "LogDirLockedError",
           "PlanOutdatedError", "check_backup_root", "default_backup_root", "held_log_dir", "is_locked", "log_dir_of",
           "relative_to_log_dir", "resolve_log_dir"]
