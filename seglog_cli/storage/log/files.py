"""Read-only memory-mapped files.

Every binary file the engine reads goes through :class:`MappedFile`: one ``mmap`` of the whole
file (an empty file maps to ``b""``; a file of up to ``READ_WHOLE_BYTES`` is read into memory
instead, which costs less than mapping it and faulting its pages in), a ``memoryview`` over it
for zero-copy slices, and ``release_behind`` to drop already-scanned pages from this process's resident set so a scan
of a 2 GiB segment keeps a flat memory footprint (the pages stay in the kernel page cache).

A file of a remote log dir (``s3://``, ``gs://``, ...) is a sparse *placeholder* of the remote
size in a local view of the tree (:mod:`seglog_cli.storage.objectstore.remote_files`); ``MappedFile`` on a
placeholder is that module's remote-backed mapping. ``buffer`` and ``view`` of it fetch the whole
file first; ``data``/``data_view`` do not, and are read only after :meth:`MappedFile.ensure` (or
:meth:`MappedFile.scan_window`) made the range present: the batch scan, the record decode of the
batches it yielded and :meth:`MappedFile.find_non_zero`. Every other read (``read_small_file``,
``open_regular``) fetches the whole file.
"""

from __future__ import annotations

import bisect
import errno
import mmap
import os
import re
import stat as stat_module
from pathlib import Path

from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError, WriteError

_PAGE = mmap.PAGESIZE
RELEASE_STEP = 16 * 1024 * 1024  # drop resident pages every 16 MiB of progress
ZERO_CHUNK = 4 * 1024 * 1024  # find_non_zero compares this many bytes at a time
_ZEROS = bytes(ZERO_CHUNK)
_NON_ZERO = re.compile(rb"[^\x00]")
READ_WHOLE_BYTES = 256 * 1024  # files up to this size are read into memory, not mapped
SPARSE_CHECK_BYTES = 1 << 20  # files from this size on have their holes listed at open
MAX_EXTENTS = 4096

# placeholder path (absolute) -> its remote file (remote_files.RemoteFile); empty unless a remote
# URL is being read, so a local run pays one dict test per open
PLACEHOLDERS: dict = {}


VIEW_MARK = "/seglog-view-"  # in every placeholder's path (remote_view.VIEW_PREFIX)


def remote_file_of(path) -> object | None:
    """The remote file a placeholder stands for, or None for an ordinary local file. A
    placeholder of a view this process did not make (another process's, handed over by path)
    would read as zeros where nothing was fetched: it is refused."""
    if not PLACEHOLDERS and VIEW_MARK not in str(path):
        return None
    remote = PLACEHOLDERS.get(os.path.abspath(path))
    if remote is None and VIEW_MARK in str(path):
        _refuse_foreign_placeholder(path)
    return remote


def _refuse_foreign_placeholder(path) -> None:
    """``<tmp>/seglog-view-<pid>-<x>/<n>/...`` is a view's file: not one of this process."""
    parts = os.path.abspath(path).split(os.sep)
    inside = next((i for i, part in enumerate(parts) if part.startswith(VIEW_MARK.strip("/"))), None)
    if inside is not None and inside + 2 < len(parts) and parts[inside + 1].isdigit():
        raise UnreadableInputError("is a placeholder of another process's view of a remote log dir (its bytes are "
                                   "fetched only by the seglog process that listed it); give the URL instead", path)


class MappedFile:
    """A whole file mapped read-only. Use as a context manager or call :meth:`close`."""

    __slots__ = ("path", "size", "buffer", "view", "data", "data_view", "_mmap", "_released_to", "_extents")

    def __new__(cls, path: str | Path):
        remote = remote_file_of(path) if cls is MappedFile else None
        return object.__new__(cls if remote is None else remote.mapping_class)

    def __init__(self, path: str | Path):
        self.path = str(path)
        self._mmap = None
        self._released_to = 0
        fd, stat = open_regular(self.path, whole=False)  # no placeholder: __new__ chose this class
        try:
            self.size = stat.st_size
            self._extents = _data_extents(fd, self.size)
            if self.size <= READ_WHOLE_BYTES:  # copying a small file costs less than mapping it
                self.buffer = _read_exactly(fd, self.size, self.path) if self.size else b""
                self.size = len(self.buffer)
            else:
                self._mmap = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                if hasattr(mmap, "MADV_SEQUENTIAL"):
                    self._mmap.madvise(mmap.MADV_SEQUENTIAL)
                self.buffer = self._mmap
        except (OSError, ValueError) as exc:
            raise UnreadableInputError(f"cannot map: {exc}", self.path) from None
        finally:
            os.close(fd)
        self.view = memoryview(self.buffer)
        self.data, self.data_view = self.buffer, self.view

    # every byte of ``data`` is readable at any time (a remote file's only inside its window):
    # threads may read batches anywhere in it at once
    is_local = True

    def ensure(self, start: int, end: int) -> None:
        """Make ``[start, end)`` readable through ``data``: a no-op for a local file."""

    def scan_window(self, position: int, end: int, ahead: bool = True) -> int:
        """How far a sequential scan at ``position`` may read ``data`` before calling again
        (``end`` for a local file; the end of the fetched window for a remote one, whose next
        window is fetched in the background when ``ahead``)."""
        return end

    def release_behind(self, position: int) -> None:
        """Tell the kernel the pages before ``position`` are no longer needed by this process."""
        position = min(position, self.size)  # a position read from a damaged index may point past the end
        if self._mmap is None or position - self._released_to < RELEASE_STEP:
            return
        end = position - position % _PAGE
        if end > self._released_to and hasattr(mmap, "MADV_DONTNEED"):
            self._mmap.madvise(mmap.MADV_DONTNEED, self._released_to, end - self._released_to)
            self._released_to = end

    def release(self, start: int, end: int) -> None:
        """Drop the pages of ``[start, end)`` from this process's resident set after a read out
        of sequence: the kernel maps a whole folio of the page cache on a fault (on current
        kernels often 1-2 MB of a big file), so a few hundred scattered reads would otherwise
        keep hundreds of MB resident."""
        if self._mmap is None or end <= start or not hasattr(mmap, "MADV_DONTNEED"):
            return
        low = start - start % _PAGE
        high = min(self.size, end)
        if high > low:
            self._mmap.madvise(mmap.MADV_DONTNEED, low, high - low)

    def find_non_zero(self, start: int, end: int | None = None) -> int | None:
        """Position of the first non-zero byte in ``[start, end)``, or None: holes of a sparse
        file are skipped with ``SEEK_DATA`` without reading them, written zeros are compared a
        chunk at a time, and the pages behind are dropped as the search goes, so a 2 GiB run
        of zeros costs a few seconds at most and no memory."""
        end = self.size if end is None else min(end, self.size)
        view, pos = self.data_view, max(0, start)
        while pos < end:
            pos = self._next_data(pos)
            if pos >= end:
                return None
            stop = min(end, pos + ZERO_CHUNK)
            self.ensure(pos, stop)
            if view[pos:stop] != _ZEROS[:stop - pos]:
                return _NON_ZERO.search(self.data, pos, stop).start()
            pos = stop
            self.release_behind(pos)
        return None

    def _next_data(self, position: int) -> int:
        """The first position at or after ``position`` that is not in a hole (the size when only
        a hole is left); ``position`` when the holes are not known."""
        if self._extents is None:
            return position
        at = bisect.bisect_right(self._extents, (position, self.size + 1)) - 1
        if at >= 0 and position < self._extents[at][1]:
            return position
        return self._extents[at + 1][0] if at + 1 < len(self._extents) else self.size

    def close(self) -> None:
        try:
            self.data_view.release()
        except BufferError:
            pass
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:
                pass  # a caller still holds a slice; the mapping goes when it is collected
            self._mmap = None

    def __enter__(self) -> "MappedFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_exactly(fd: int, size: int, path: str) -> bytes:
    """The first ``size`` bytes of ``fd`` (fewer if the file shrank since its ``fstat``)."""
    try:
        data = os.read(fd, size)
        if 0 < len(data) < size:  # a short read: read on
            chunks, got = [data], len(data)
            while got < size:
                chunk = os.read(fd, size - got)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            data = b"".join(chunks)
    except OSError as exc:
        raise UnreadableInputError(f"cannot read: {_reason(exc)}", path) from None
    return data


def _data_extents(fd: int, size: int) -> list[tuple[int, int]] | None:
    """The ``(start, end)`` runs of a file that are not holes (``SEEK_DATA``/``SEEK_HOLE``),
    taken once at open so no descriptor is kept; None for small files, when the file system
    cannot tell, or past ``MAX_EXTENTS`` runs (the rest is then taken as data)."""
    if size < SPARSE_CHECK_BYTES or not hasattr(os, "SEEK_DATA"):
        return None
    extents, position = [], 0
    while position < size and len(extents) < MAX_EXTENTS:
        try:
            start = os.lseek(fd, position, os.SEEK_DATA)
            end = os.lseek(fd, start, os.SEEK_HOLE)
        except OSError as exc:  # ENXIO: a hole up to the end; anything else: not supported
            return extents if exc.errno == errno.ENXIO else None
        extents.append((start, end))
        position = end
    if position < size:
        extents.append((position, size))
    return extents


def read_small_file(path: str | Path, limit: int = 64 * 1024 * 1024) -> bytes:
    """Read a small file (snapshot, txn index, text file) whole, with a one-line error."""
    if not PLACEHOLDERS and type(path) is str and VIEW_MARK not in path:  # the common case in one go
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                stat = os.fstat(fd)
                if stat_module.S_ISREG(stat.st_mode) and stat.st_size <= limit:
                    data = os.read(fd, stat.st_size + 1)
                    if len(data) == stat.st_size:
                        return data
            except OSError:
                pass  # the path below says why
            finally:
                os.close(fd)
    fd, stat = open_regular(path)
    try:
        if stat.st_size > limit:
            raise UnreadableInputError(f"larger than {limit} bytes", path)
        data = _read_all(fd, stat.st_size, limit)
    except OSError as exc:
        raise UnreadableInputError(f"cannot read: {_reason(exc)}", path) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UnreadableInputError(f"larger than {limit} bytes", path)
    return data


def _read_all(fd: int, size: int, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of ``fd``: one ``read`` of the size ``fstat`` gave (plus one
    byte, to see a file that grew); more only after a short read or while the file keeps
    giving bytes (a file that grew, a ``/proc``-like file of size 0)."""
    data = os.read(fd, min(size, limit) + 1)
    if len(data) == size:
        return data
    chunks = [data]
    total = len(data)
    while total <= limit and chunks[-1]:
        chunk = os.read(fd, min(limit + 1 - total, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


_KINDS = ((stat_module.S_ISFIFO, "a FIFO"), (stat_module.S_ISCHR, "a character device"),
          (stat_module.S_ISBLK, "a block device"), (stat_module.S_ISSOCK, "a socket"),
          (stat_module.S_ISDIR, "a directory"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


def open_regular(path: str | Path, whole: bool = True) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only if it is a regular file (after symlinks): the descriptor and its
    ``fstat``. Anything else (a FIFO, a device such as ``/dev/zero``, a socket, a directory, a
    symlink loop, a missing file, permission denied) raises a one-line
    :class:`UnreadableInputError` at once: ``O_NONBLOCK`` keeps a FIFO without a writer from
    blocking the open, and the ``fstat`` decides before a byte is read. A remote file's
    placeholder is fetched whole first (unless ``whole=False``: the remote mapping fetches its
    own ranges)."""
    remote = remote_file_of(path) if whole else None
    if remote is not None:
        remote.fetch_all()
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        dangling = os.path.islink(path)
        raise UnreadableInputError("dangling symbolic link" if dangling else "no such file", path) from None
    except IsADirectoryError:
        raise UnreadableInputError("is a directory, not a file", path) from None
    except OSError as exc:
        raise UnreadableInputError(_not_regular(path) or f"cannot open: {_reason(exc)}", path) from None
    try:
        stat = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise UnreadableInputError(f"cannot open: {_reason(exc)}", path) from None
    if not stat_module.S_ISREG(stat.st_mode):
        os.close(fd)
        raise UnreadableInputError(f"not a regular file: {_kind(stat.st_mode)}", path)
    return fd, stat


def _not_regular(path) -> str | None:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat_module.S_ISREG(mode) else f"not a regular file: {_kind(mode)}"


NOT_A_FILE_DIRECTORY = "not a regular file: a directory"


def regular_file_problem(path: str | Path) -> str | None:
    """None when ``path`` is (a symlink to) a regular file, else why it is not one, without
    opening it: ``not a regular file: a FIFO``, ``dangling symbolic link``, the ``stat`` error
    (a symlink loop, permission denied)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "dangling symbolic link" if os.path.islink(path) else "no such file"
    except OSError as exc:
        return f"cannot open: {_reason(exc)}"
    return None if stat_module.S_ISREG(mode) else f"not a regular file: {_kind(mode)}"


def is_present(path: str | Path) -> bool:
    """True when something (a regular file or not, even a dangling symlink) is named ``path``:
    the test before :func:`open_regular` where absence means "not there" and anything else must
    be read or reported."""
    return os.path.lexists(path)


def has_contents(path: str | Path, data: bytes) -> bool:
    """Whether the regular file at ``path`` holds exactly ``data`` (compared through a mapping,
    never read whole; False for anything unreadable)."""
    try:
        with MappedFile(path) as mapped:
            return mapped.size == len(data) and mapped.view == data
    except UnreadableInputError:
        return False


def write_temp(path: str | Path, data: bytes, error: type[SeglogError] = WriteError) -> Path:
    """Write ``data`` to ``<path>.tmp`` and fsync it; the temporary file's path. Failures
    raise ``error`` and remove the ``.tmp``."""
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        _discard(tmp)
        raise error(f"cannot write: {exc.strerror or exc}", path) from None
    return tmp


def write_atomically(path: str | Path, data: bytes, error: type[SeglogError] = WriteError) -> None:
    """Write ``<path>.tmp``, fsync it, rename it over ``path``, fsync the directory.

    A crash at any moment leaves either the old file or the new one (plus perhaps a harmless
    ``.tmp``, which Kafka ignores too). Failures raise ``error`` and remove the ``.tmp``.
    """
    path = Path(path)
    tmp = write_temp(path, data, error)
    try:
        os.replace(tmp, path)
        fsync_dir(path.absolute().parent)
    except OSError as exc:
        _discard(tmp)
        raise error(f"cannot write: {exc.strerror or exc}", path) from None


def _discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def fsync_dir(directory: str | Path) -> None:
    """fsync a directory so renames and creations in it are durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
