"""A run's ``manifest.json``: what a :class:`~seglog_cli.storage.write.journal.Journal` writes into
its backup directory, and how it is read back and checked.

manifest.json is one JSON document, written in the key order and the text of its canonical form
(json.dumps(body, sort_keys=True, separators=(",", ":"))) cut into lines at its steps and at the
entries of its per-file maps: a reader takes the steps one line at a time, and the checksum,
the sha256 of that canonical text, is computed as the lines are written (it comes last). Any
other layout of the same document (a manifest edited by hand) is read whole and checked the
same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.write.durable import CannotWriteError, describe_os_error, fault_point
from seglog_cli.storage.write.file_steps import write_backup
from seglog_cli.storage.write.safety import BackupError

MANIFEST = "manifest.json"
MANIFEST_VERSION = 2
PREPARED, COMPLETE, ROLLED_BACK = "prepared", "complete", "rolled-back"

_LINE_MAPS = ("expected", "final", "listing")  # maps with one entry per file: a line each
_CHECKSUM_LINE = re.compile(rb',"checksum":"([0-9a-f]{64})"\}\n?')
WHOLE_READ_LIMIT = 64 << 20  # a manifest not in the line layout is read whole up to this size


@dataclass(frozen=True, slots=True)
class Content:
    """What a path holds at one point of a run: its size and sha256 (None: no file)."""

    size: int
    sha256: str

    def as_dict(self) -> dict:
        return {"size": self.size, "sha256": self.sha256}


class Final(tuple):
    """A file as the run left it (``final``): size, sha256, inode, mtime."""

    def __new__(cls, size: int, sha256: str, ino: int, mtime_ns: int):
        return tuple.__new__(cls, (size, sha256, ino, mtime_ns))

    def as_dict(self) -> dict:
        return {"size": self[0], "sha256": self[1], "ino": self[2], "mtimeNs": self[3]}


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _fragments(body: dict, entry_lines):
    """The canonical text of ``body`` with ``steps`` the entries of ``entry_lines`` (each its
    canonical text), in pieces: one per key, and for ``steps`` and the per-file maps one per
    item. Their concatenation, then ``}``, is ``canonical(body with its steps)``."""
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
                yield ("" if i == 0 else ",") + json.dumps(item) + ":" + canonical(_plain(body[key][item]))
            yield "}"
        else:
            yield f"{lead}{name}:{canonical(body[key])}"


def _plain(value):
    """A map's value as JSON has it (the run keeps them as small objects)."""
    return value.as_dict() if isinstance(value, (Content, Final)) else value


def write_manifest_file(directory: Path, document: dict, entry_lines) -> str:
    """``directory``'s manifest, written whole (temporary file, fsync, rename) and streamed: one
    line per step (``entry_lines``, each its canonical text) and per entry of ``expected``,
    ``final`` and ``listing`` (see :func:`_fragments`), the checksum last; nothing of it is
    held in memory at once. Returns the checksum."""
    temp = directory / f"{MANIFEST}.{os.getpid()}.tmp"
    fault_point(f"write the manifest of {directory.name}")
    try:
        if temp.is_symlink() or temp.exists():
            temp.unlink()
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            body = {key: value for key, value in document.items() if key not in ("steps", "checksum")}
            digest, buffer = hashlib.sha256(), bytearray()
            for fragment in _fragments(body, entry_lines):
                data = fragment.encode()
                digest.update(data)
                buffer += data + b"\n"
                if len(buffer) >= 1 << 20:
                    write_backup(fd, buffer, temp)
                    buffer.clear()
            digest.update(b"}")
            checksum = digest.hexdigest()
            buffer += f',"checksum":"{checksum}"}}\n'.encode()
            write_backup(fd, buffer, temp)
            os.fsync(fd)
        finally:
            os.close(fd)
        fault_point(f"rename the manifest of {directory.name}")
        os.replace(temp, directory / MANIFEST)
        fsync_directory(directory)
    except OSError as exc:
        raise CannotWriteError(f"cannot write the manifest: {describe_os_error(exc)}; nothing was changed",
                               temp) from None
    return checksum


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


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
        lines = steps.lines() if isinstance(steps, StepList) else (canonical(entry) for entry in steps)
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


__all__ = ["COMPLETE", "Content", "Final", "LineMap", "MANIFEST", "MANIFEST_VERSION", "PREPARED", "ROLLED_BACK",
           "StepList", "canonical", "fsync_directory", "manifest_checksum", "read_manifest", "write_manifest_file"]
