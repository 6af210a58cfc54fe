"""The progress file of a replay: which source records each destination partition holds, and at
which offsets.

One JSON document, replaced atomically (written beside itself, flushed, renamed over the old one,
the directory flushed) while acknowledgements arrive and when the replay stops::

    {"seglogReplayProgress": 1,
     "replay": {...},                 # what was asked: sources, bootstrap servers, topic map...
     "clusterId": "...",
     "destinations": [{"topic": "orders", "partition": 0, "start": 120, "end": 1120}, ...],
     "sources": {"orders-0": {"topic": "orders", "partition": 0, "done": false,
                              "runs": [[0, 0, 120, 1000], ...]}},
     "complete": false}

A run ``[source offset, destination index, destination offset, count]`` says that ``count``
source records from ``source offset`` on (consecutive offsets) are at consecutive offsets from
``destination offset`` in ``destinations[index]``; a gap on either side (records skipped,
compacted away, someone else's records) starts a new run. ``start`` is the destination's end
when the replay first saw it, ``end`` the end after the last record this replay had
acknowledged. The file may lag the cluster (a kill between an acknowledgement and the next
write): the next run reads the destination's records past ``end`` and matches them to the
source (:mod:`~seglog_cli.storage.replay.replay`), so the file never needs to be exact, only
never ahead.
"""

from __future__ import annotations

import bisect
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.log.errors import CannotWriteError, SeglogError, UnreadableInputError
from seglog_cli.storage.log.files import fsync_dir

VERSION = 1


class ProgressMismatchError(SeglogError):
    """The progress file was written by another replay (other sources, cluster or options)."""


@dataclass
class Destination:
    topic: str
    partition: int
    start: int  # the destination's end offset when this replay first met it
    end: int  # its end after the last record this replay had acknowledged

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition}"


class SourceProgress:
    """The runs of one source partition, and what each destination already holds of it."""

    __slots__ = ("topic", "partition", "done", "runs", "_last")

    def __init__(self, topic: str, partition: int, runs=(), done: bool = False):
        self.topic, self.partition, self.done = topic, partition, done
        self.runs: list[list[int]] = [list(run) for run in runs]
        self._last: dict[int, list[int]] = {}  # destination index -> its last run
        for run in self.runs:
            self._last[run[1]] = run

    @property
    def delivered(self) -> dict[int, int]:
        """Destination index -> the last source offset acknowledged there (runs only go up)."""
        return {dest: run[0] + run[3] - 1 for dest, run in self._last.items()}

    def add(self, src: int, dest: int, dest_offset: int) -> None:
        """One acknowledged record: source offset ``src`` is at ``dest_offset`` of destination ``dest``."""
        run = self._last.get(dest)
        if run is not None and run[0] + run[3] == src and run[2] + run[3] == dest_offset:
            run[3] += 1
        else:
            run = [src, dest, dest_offset, 1]
            self.runs.append(run)
            self._last[dest] = run

    def last_run(self, dest: int) -> list[int] | None:
        """This source's last run into destination ``dest`` (extended in place while acknowledged)."""
        return self._last.get(dest)

    def records(self) -> int:
        return sum(run[3] for run in self.runs)

    def first_at_or_after(self, dest: int, offset: int) -> int | None:
        """The destination offset (in destination ``dest``) of the first replayed record whose
        source offset is ``offset`` or later; past the last one, the offset after it; None when
        nothing of this source went there."""
        runs = [run for run in self.runs if run[1] == dest]
        if not runs:
            return None
        at = bisect.bisect_right([run[0] + run[3] - 1 for run in runs], offset - 1)
        if at == len(runs):
            last = runs[-1]
            return last[2] + last[3]
        src, _dest, first, _count = runs[at]
        return first + max(0, offset - src)

    def as_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "done": self.done, "runs": self.runs}


class Progress:
    """A replay's progress file, held locked (``fcntl.lockf`` on ``<file>.lock``) while in use."""

    def __init__(self, path: str | Path, identity: dict):
        self.path = Path(path)
        self.identity = identity
        self.cluster_id: str | None = None
        self.destinations: list[Destination] = []
        self._dest_index: dict[tuple[str, int], int] = {}
        self.sources: dict[str, SourceProgress] = {}
        self.complete = False
        self.existed = False
        self._lock_fd: int | None = None

    # -- reading ----------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, identity: dict) -> "Progress":
        """The progress at ``path``, or a new one if there is no file. A file written for another
        replay raises :class:`ProgressMismatchError`; an unreadable one, :class:`UnreadableInputError`."""
        progress = cls(path, identity)
        try:
            text = progress.path.read_bytes()
        except FileNotFoundError:
            return progress
        except OSError as exc:
            raise UnreadableInputError(f"cannot read the progress file: {exc.strerror}", path) from None
        try:
            data = json.loads(text)
            if data.get("seglogReplayProgress") != VERSION:
                raise ValueError("not a seglog replay progress file (version 1)")
            progress._load(data)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise UnreadableInputError(f"not a readable progress file ({exc})", path) from None
        if data["replay"] != identity:
            differ = sorted(k for k in set(identity) | set(data["replay"]) if identity.get(k) != data["replay"].get(k))
            raise ProgressMismatchError(f"this progress file belongs to another replay (it differs in: "
                                        f"{', '.join(differ)}): give another --progress file, or the same "
                                        f"arguments as the run that wrote it", path)
        progress.existed = True
        return progress

    def _load(self, data: dict) -> None:
        self.cluster_id = data.get("clusterId")
        for entry in data["destinations"]:
            self.destination(entry["topic"], int(entry["partition"]), int(entry["start"]))
            self.destinations[-1].end = int(entry["end"])
        for label, entry in data["sources"].items():
            self.sources[label] = SourceProgress(entry["topic"], int(entry["partition"]),
                                                 [[int(v) for v in run] for run in entry["runs"]],
                                                 bool(entry.get("done")))
        self.complete = bool(data.get("complete"))

    # -- updating ---------------------------------------------------------------------------------

    def destination(self, topic: str, partition: int, end: int | None = None) -> int:
        """The index of destination ``topic``/``partition``, added (starting at ``end``) if new."""
        key = (topic, partition)
        index = self._dest_index.get(key)
        if index is None:
            if end is None:
                raise KeyError(key)
            index = self._dest_index[key] = len(self.destinations)
            self.destinations.append(Destination(topic, partition, end, end))
        return index

    def source(self, topic: str, partition: int) -> SourceProgress:
        label = f"{topic}-{partition}"
        found = self.sources.get(label)
        if found is None:
            found = self.sources[label] = SourceProgress(topic, partition)
        return found

    def as_dict(self) -> dict:
        return {"seglogReplayProgress": VERSION, "replay": self.identity, "clusterId": self.cluster_id,
                "destinations": [{"topic": d.topic, "partition": d.partition, "start": d.start, "end": d.end}
                                 for d in self.destinations],
                "sources": {label: source.as_dict() for label, source in self.sources.items()},
                "complete": self.complete}

    def save(self) -> None:
        """Replace the file atomically; a kill leaves the old file or the new one, never a mix."""
        data = json.dumps(self.as_dict(), separators=(",", ":")).encode()
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            if self.path.is_symlink():
                raise CannotWriteError("the progress file is a symbolic link: seglog never writes through one",
                                       self.path)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            fsync_dir(self.path.absolute().parent)
        except OSError as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise CannotWriteError(f"cannot write the progress file: {exc.strerror}", self.path) from None

    # -- the lock ---------------------------------------------------------------------------------

    def lock(self) -> None:
        """Hold ``<file>.lock`` (two replays writing the same progress would duplicate records)."""
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise CannotWriteError(f"cannot create the progress lock: {exc.strerror}", lock_path) from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise CannotWriteError("another seglog replay is using this progress file (its .lock is held)",
                                   self.path) from None
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
