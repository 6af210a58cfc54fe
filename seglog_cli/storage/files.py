"""Read-only memory-mapped files.

Every binary file the engine reads goes through :class:`MappedFile`: one ``mmap`` of the whole
file (an empty file maps to ``b""``), a ``memoryview`` over it for zero-copy slices, and
``release_behind`` to drop already-scanned pages from this process's resident set so a scan
of a 2 GiB segment keeps a flat memory footprint (the pages stay in the kernel page cache).
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from seglog_cli.storage.errors import SeglogError, UnreadableInputError, WriteError

_PAGE = mmap.PAGESIZE
RELEASE_STEP = 16 * 1024 * 1024  # drop resident pages every 16 MiB of progress


class MappedFile:
    """A whole file mapped read-only. Use as a context manager or call :meth:`close`."""

    __slots__ = ("path", "size", "buffer", "view", "_mmap", "_released_to")

    def __init__(self, path: str | Path):
        self.path = str(path)
        self._mmap = None
        self._released_to = 0
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            raise UnreadableInputError("no such file", self.path) from None
        except IsADirectoryError:
            raise UnreadableInputError("is a directory, not a file", self.path) from None
        except OSError as exc:
            raise UnreadableInputError(f"cannot open: {exc.strerror}", self.path) from None
        try:
            self.size = os.fstat(fd).st_size
            if self.size == 0:
                self.buffer = b""
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

    def release_behind(self, position: int) -> None:
        """Tell the kernel the pages before ``position`` are no longer needed by this process."""
        if self._mmap is None or position - self._released_to < RELEASE_STEP:
            return
        end = position - position % _PAGE
        if end > self._released_to and hasattr(mmap, "MADV_DONTNEED"):
            self._mmap.madvise(mmap.MADV_DONTNEED, self._released_to, end - self._released_to)
            self._released_to = end

    def close(self) -> None:
        try:
            self.view.release()
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


def read_small_file(path: str | Path, limit: int = 64 * 1024 * 1024) -> bytes:
    """Read a small file (snapshot, txn index, text file) whole, with a one-line error."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise UnreadableInputError("no such file", path) from None
    except IsADirectoryError:
        raise UnreadableInputError("is a directory, not a file", path) from None
    except OSError as exc:
        raise UnreadableInputError(f"cannot read: {exc.strerror}", path) from None
    if len(data) > limit:
        raise UnreadableInputError(f"larger than {limit} bytes", path)
    return data


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
