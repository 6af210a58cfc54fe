"""The file operations every seglog write goes through: relative to directory descriptors,
never through a symlink, each one durable and each one a numbered fault point.

A writing command changes files only through :class:`Tree`, which opens the log dir and its
partition directories once (``O_DIRECTORY | O_NOFOLLOW``, component by component) and then
works with ``openat``-style calls on those descriptors: a symlink planted as a file, a temp
file or a partition directory is never followed (``ELOOP`` becomes a one-line refusal), and a
path swapped for a symlink after it was checked is not followed either. New files are created
with ``O_CREAT | O_EXCL | O_NOFOLLOW``.

Fault injection (tests): before each state-changing system call (create, write, truncate,
rename, unlink, mkdir, rmdir, utime) :func:`fault_point` counts one step.
``SEGLOG_FAULT_AT=N`` ends the process with ``os._exit(137)`` (as ``kill -9``: no cleanup)
just before step N; ``SEGLOG_FAULT_TRACE=FILE`` appends ``N<TAB>what`` for every step, so a
test can enumerate every point of a run.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

from seglog_cli.storage.log.errors import CannotWriteError, SeglogError  # defined there, so status.py need not import this module

FAULT_ENV = "SEGLOG_FAULT_AT"
TRACE_ENV = "SEGLOG_FAULT_TRACE"
FAULT_EXIT_STATUS = 137  # what a shell reports for a process killed by SIGKILL
COPY_CHUNK = 1 << 20
OPEN_DIRECTORIES = 256  # directory descriptors a Tree keeps open at most (see Tree.dir_fd)
_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class MissingDirectoryError(CannotWriteError):
    """A directory below the log dir does not exist (yet)."""


# -- fault points -------------------------------------------------------------------------------

class _FaultPoints:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, what: str) -> None:
        self.count += 1
        trace = os.environ.get(TRACE_ENV)
        if trace:
            with open(trace, "a") as handle:
                handle.write(f"{self.count}\t{what}\n")
        target = os.environ.get(FAULT_ENV)
        if target and target.isdigit() and int(target) == self.count:
            sys.stderr.write(f"seglog: fault injected before write step {self.count} ({what})\n")
            sys.stderr.flush()
            os._exit(FAULT_EXIT_STATUS)


fault_point = _FaultPoints()


def describe_os_error(exc: OSError) -> str:
    """What an operator should read for a failed write."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ELOOP:
        return "is a symlink: seglog never writes through one"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"disk full ({reason})"
    if exc.errno == errno.EROFS:
        return "read-only file system"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied ({reason})"
    return reason


# -- a directory tree held open -------------------------------------------------------------------

class Tree:
    """A log dir (already resolved to its real path) and the directories below it, opened
    without following symlinks. Paths are relative to the log dir (``"orders-0/x.log"``)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._fds: dict[str, int] = {}
        try:
            self._fds[""] = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
        except OSError as exc:
            raise CannotWriteError(f"cannot open the log dir: {describe_os_error(exc)}", self.root) from None

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> "Tree":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- resolving ------------------------------------------------------------------------

    def dir_fd(self, relative_dir: str) -> int:
        """The descriptor of a directory below the root (no symlink followed). At most
        ``OPEN_DIRECTORIES`` stay open, the least recently used closed first (a run over 10,000
        partition directories must not exhaust the process's descriptors; one closed is opened
        again, component by component, when it is next needed); the root's stays open."""
        fd = self._fds.get(relative_dir)
        if fd is not None:
            if relative_dir:
                self._fds[relative_dir] = self._fds.pop(relative_dir)  # now the most recently used
            return fd
        if len(self._fds) > OPEN_DIRECTORIES:
            oldest = next(key for key in self._fds if key)
            os.close(self._fds.pop(oldest))
        parent, _, name = relative_dir.rpartition("/")
        parent_fd = self.dir_fd(parent)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=parent_fd)
        except FileNotFoundError:
            raise MissingDirectoryError("no such directory", self.root / relative_dir) from None
        except OSError as exc:
            raise CannotWriteError(f"cannot open the directory: {describe_os_error(exc)}", self.root / relative_dir) from None
        self._fds[relative_dir] = fd
        return fd

    def split(self, relative: str) -> tuple[int, str]:
        directory, _, name = relative.rpartition("/")
        return self.dir_fd(directory), name

    def lstat(self, relative: str) -> os.stat_result | None:
        """The entry itself (never followed), or None when it does not exist."""
        try:
            fd, name = self.split(relative)
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, MissingDirectoryError):
            return None

    def regular(self, relative: str) -> os.stat_result | None:
        """lstat, refusing anything but a regular file (None when absent)."""
        info = self.lstat(relative)
        if info is not None and not stat.S_ISREG(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
            raise CannotWriteError(f"is {kind}: seglog only writes regular files in a log dir; nothing was changed",
                                   self.root / relative)
        return info

    def open_read(self, relative: str) -> int:
        fd, name = self.split(relative)
        try:
            handle = os.open(name, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        except OSError as exc:
            raise CannotWriteError(f"cannot read: {describe_os_error(exc)}", self.root / relative) from None
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            os.close(handle)
            raise CannotWriteError("is not a regular file", self.root / relative)
        return handle

    # -- changing -------------------------------------------------------------------------

    def _fail(self, exc: OSError, relative: str, action: str) -> CannotWriteError:
        return CannotWriteError(f"cannot {action}: {describe_os_error(exc)}", self.root / relative)

    def create(self, relative: str, chunks, mode: int = 0o644) -> None:
        """A new file (``O_EXCL``: never over an existing name or through a symlink) holding the
        bytes of ``chunks`` (an iterable of bytes-like), fsynced."""
        fd_dir, name = self.split(relative)
        fault_point(f"create {relative}")
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode, dir_fd=fd_dir)
        except OSError as exc:
            raise self._fail(exc, relative, "create") from None
        try:
            fault_point(f"write {relative}")
            write_sparse(fd, chunks)
            os.fsync(fd)
        except OSError as exc:
            raise self._fail(exc, relative, "write") from None
        finally:
            os.close(fd)

    def append(self, relative: str, chunks) -> None:
        """Append the bytes of ``chunks`` (an iterable of bytes-like) to an existing file, fsynced."""
        self._change(relative, os.O_WRONLY | os.O_APPEND, "append", lambda fd: [_write_all(fd, c) for c in chunks])

    def truncate(self, relative: str, size: int) -> None:
        self._change(relative, os.O_WRONLY, "truncate", lambda fd: os.ftruncate(fd, size))

    def _change(self, relative: str, flags: int, verb: str, work) -> None:
        """Open an existing file (never through a symlink), ``work(fd)``, fsync."""
        fd_dir, name = self.split(relative)
        try:
            fd = os.open(name, flags | _NOFOLLOW, dir_fd=fd_dir)
        except OSError as exc:
            raise self._fail(exc, relative, verb) from None
        try:
            fault_point(f"{verb} {relative}")
            work(fd)
            os.fsync(fd)
        except OSError as exc:
            raise self._fail(exc, relative, verb) from None
        finally:
            os.close(fd)

    def rename(self, relative: str, target: str) -> None:
        """Rename within the tree (replacing ``target`` atomically when it exists)."""
        src_fd, src = self.split(relative)
        dst_fd, dst = self.split(target)
        fault_point(f"rename {relative} -> {target}")
        try:
            os.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        except OSError as exc:
            raise self._fail(exc, relative, "rename") from None
        self.sync_dir(target)
        if src_fd != dst_fd:
            self.sync_dir(relative)

    def unlink(self, relative: str) -> None:
        self._entry(relative, os.unlink, "unlink", "remove")

    def mkdir(self, relative: str) -> None:
        self._entry(relative, lambda name, dir_fd: os.mkdir(name, 0o755, dir_fd=dir_fd), "mkdir",
                    "create the directory", missing_ok=False)

    def rmdir(self, relative: str) -> None:
        held = self._fds.pop(relative, None)
        if held is not None:
            os.close(held)
        self._entry(relative, os.rmdir, "rmdir", "remove the directory")

    def _entry(self, relative: str, call, point: str, verb: str, missing_ok: bool = True) -> None:
        """A directory entry made or removed (``call(name, dir_fd=...)``), then the directory fsynced."""
        fd_dir, name = self.split(relative)
        fault_point(f"{point} {relative}")
        try:
            call(name, dir_fd=fd_dir)
        except FileNotFoundError as exc:
            if not missing_ok:
                raise self._fail(exc, relative, verb) from None
            return
        except OSError as exc:
            raise self._fail(exc, relative, verb) from None
        self.sync_dir(relative)

    def set_mtime(self, relative: str, mtime_ns: int) -> None:
        fd_dir, name = self.split(relative)
        fault_point(f"utime {relative}")
        try:
            os.utime(name, ns=(mtime_ns, mtime_ns), dir_fd=fd_dir, follow_symlinks=False)
        except OSError as exc:
            raise self._fail(exc, relative, "set the modification time of") from None

    def sync_dir(self, relative: str) -> None:
        """fsync the directory holding ``relative``."""
        directory = relative.rpartition("/")[0]
        try:
            os.fsync(self.dir_fd(directory))
        except OSError:
            pass  # some file systems refuse fsync on a directory; the rename itself is done


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class Spool:
    """Bytes too many to hold in memory, kept in an unnamed scratch file of ``directory`` until
    steps write them out: ``O_TMPFILE`` (or a file unlinked as soon as it is made), so nothing
    is left behind whenever the process ends, killed or not. Written once, in order
    (:meth:`write`); :meth:`range` is a part of it that a
    :class:`~seglog_cli.storage.write.journal.FileStep` takes as its ``data``. The file is made only
    when more than ``BUFFER`` bytes come."""

    BUFFER = 4 << 20

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self._size = 0
        self._buffer = bytearray()
        self._fd: int | None = None

    def write(self, data) -> None:
        self._buffer += data
        self._size += len(data)
        if len(self._buffer) >= self.BUFFER:
            self._flush()

    def _flush(self) -> None:
        try:
            if self._fd is None:
                self._fd = _unnamed_file(self.directory)
            _write_all(self._fd, self._buffer)
        except OSError as exc:
            raise CannotWriteError(f"cannot write a scratch file: {describe_os_error(exc)}; nothing was changed "
                                   "(choose another place with --backup-dir)", self.directory) from None
        self._buffer.clear()

    def __len__(self) -> int:
        return self._size

    def range(self, start: int, end: int) -> "SpoolRange":
        return SpoolRange(self, start, end)

    def chunks(self, start: int = 0, end: int | None = None):
        """Bytes ``[start, end)`` of what was written, in chunks."""
        end = self._size if end is None else end
        if self._buffer:
            self._flush()
        if start < end:
            yield from read_chunks(self._fd, start, end)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


class SpoolRange:
    """``[start, end)`` of a :class:`Spool`: ``len()`` and :meth:`chunks`."""

    __slots__ = ("spool", "start", "end")

    def __init__(self, spool, start: int, end: int):
        self.spool, self.start, self.end = spool, start, end

    def __len__(self) -> int:
        return self.end - self.start

    def chunks(self):
        return self.spool.chunks(self.start, self.end)


class Tally:
    """A :class:`Spool` that keeps only the count of its bytes: for a plan that is only shown."""

    def __init__(self) -> None:
        self._size = 0

    def write(self, data) -> None:
        self._size += len(data)

    def __len__(self) -> int:
        return self._size

    def range(self, start: int, end: int) -> SpoolRange:
        return SpoolRange(self, start, end)

    def chunks(self, start: int = 0, end: int | None = None):
        raise SeglogError("internal: a plan made to be shown only (its bytes were not kept) cannot be written")


def _unnamed_file(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    if hasattr(os, "O_TMPFILE"):
        try:
            return os.open(directory, os.O_TMPFILE | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), 0o600)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
                raise
    import tempfile

    fd, name = tempfile.mkstemp(prefix=".seglog-spool-", dir=directory)
    os.unlink(name)
    return fd


class Hole(bytes):
    """Zeros that a file holds as a hole (no data on disk there: a preallocated index's tail):
    real zero bytes to whoever reads them, but the writers here seek over them instead of
    writing, so a copy of a sparse file stays sparse (a killed broker's 10 MiB ``.index`` and
    ``.timeindex`` per partition would otherwise fill the disk with backups of zeros)."""

    __slots__ = ()


_WHOLE_HOLE = Hole(COPY_CHUNK)


def read_chunks(fd: int, start: int = 0, end: int | None = None):
    """The bytes of an open file from ``start`` to ``end`` (default: its end), in chunks; the
    parts that are holes come as :class:`Hole` chunks, read from nowhere."""
    stop = os.fstat(fd).st_size if end is None else min(end, os.fstat(fd).st_size)
    position = start
    while position < stop:
        data = _seek(fd, position, stop, os.SEEK_DATA)
        while position < data:
            size = min(COPY_CHUNK, data - position)
            yield _WHOLE_HOLE if size == COPY_CHUNK else Hole(size)
            position += size
        hole = _seek(fd, position, stop, os.SEEK_HOLE) if position < stop else stop
        while position < hole:
            chunk = os.pread(fd, min(COPY_CHUNK, hole - position), position)
            if not chunk:
                return
            yield chunk
            position += len(chunk)


def _seek(fd: int, position: int, stop: int, whence: int) -> int:
    """Where the next data (``SEEK_DATA``) or hole (``SEEK_HOLE``) starts, at most ``stop``; a
    file system that cannot tell has data everywhere."""
    try:
        return min(os.lseek(fd, position, whence), stop)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # no data at or after position: a hole to the end
            return stop
        return position if whence == os.SEEK_DATA else stop


def write_sparse(fd: int, chunks, write=None) -> None:
    """Write ``chunks`` at the descriptor's offset (not ``O_APPEND``): a :class:`Hole` is a
    seek, and the file is extended over a hole at its end."""
    for chunk in chunks:
        if type(chunk) is Hole:
            os.lseek(fd, len(chunk), os.SEEK_CUR)
        else:
            (write or _write_all)(fd, chunk)
    end = os.lseek(fd, 0, os.SEEK_CUR)
    if os.fstat(fd).st_size < end:
        os.ftruncate(fd, end)


__all__ = ["CannotWriteError", "MissingDirectoryError", "FAULT_ENV", "FAULT_EXIT_STATUS", "Spool", "SpoolRange", "Tally", "TRACE_ENV",
           "Tree", "describe_os_error", "fault_point", "read_chunks", "Hole", "write_sparse"]
