"""One change to a file of a log dir (:class:`FileStep`), the bytes it reads and the backups it
leaves: what a :class:`~seglog_cli.storage.write.journal.Journal` records and carries out."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.write.durable import CannotWriteError, SpoolRange, describe_os_error, read_chunks
from seglog_cli.storage.write.safety import BackupError


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


def source_chunks(step: FileStep):
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


def slice_chunks(chunks, start: int, end: int):
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


def step_size(step: FileStep) -> int:
    if step.source is None:
        return len(step.data or b"")
    if step.ranges is not None:
        return sum(end - start for start, end in step.ranges)
    return os.stat(step.source).st_size


def write_backup(fd: int, data, path: Path) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise CannotWriteError(f"cannot write the backup: {describe_os_error(exc)}; nothing was changed",
                               path) from None


__all__ = ["FileStep", "backup_chunks", "slice_chunks", "source_chunks", "step_size", "write_backup"]
