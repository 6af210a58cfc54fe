"""A partition directory and a log directory, as Kafka lays them out (§13-§15).

:class:`PartitionLog` lists a ``<topic>-<partition>`` directory: its segments ordered by base
offset, producer snapshots, KRaft snapshots, temporary files (``.deleted``, ``.cleaned``,
``.swap``) and the rest. Offset lookups go segment floor (largest base offset <= target) ->
offset index floor -> scan, as Kafka's read path does; timestamp lookups take the first segment
whose records reach the timestamp and search it through its time index.

:class:`LogDir` is a directory of partition directories plus the log-dir-level files.
"""

from __future__ import annotations

import bisect
import copy
from dataclasses import dataclass, field, replace
from pathlib import Path

from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.log.files import NOT_A_FILE_DIRECTORY, regular_file_problem
from seglog_cli.storage.log.naming import (
    CHECKPOINT_SUFFIX,
    LOG_SUFFIX,
    METADATA_TOPIC,
    OFFSET_OUT_OF_RANGE,
    SNAPSHOT_SUFFIX,
    PartitionDirName,
    parse_kraft_snapshot_name,
    parse_partition_dir_name,
    offset_out_of_range,
    parse_segment_file_name,
)
from seglog_cli.storage.log.segments import LogSegment, OffsetMatch

REMOTE_LOG_INDEX_CACHE = "remote-log-index-cache"


@dataclass
class PartitionFiles:
    """The files of a partition directory, by role (paths, sorted by offset)."""

    segments: list[LogSegment] = field(default_factory=list)
    snapshots: list[Path] = field(default_factory=list)
    kraft_snapshots: list[Path] = field(default_factory=list)
    index_files: list[Path] = field(default_factory=list)
    temp_files: list[Path] = field(default_factory=list)
    other_files: list[Path] = field(default_factory=list)
    # entries that are no regular file (a FIFO, a device, a socket, a dangling symlink, a loop)
    # or whose offset does not fit a long: (path, why); Kafka skips the first kind, fails on the second
    unusable: list[tuple[Path, str]] = field(default_factory=list)


class PartitionLog:
    """One partition directory. ``topic``/``partition`` come from the directory name (None when
    the name is not Kafka's)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise UnreadableInputError("not a directory", self.path)
        self.name: PartitionDirName | None = parse_partition_dir_name(self.path.name)
        self.files = _list_partition(self.path)
        self._bases = [segment.base_offset for segment in self.files.segments]

    def __repr__(self) -> str:
        return f"PartitionLog({str(self.path)!r}, segments={len(self.segments)})"

    @property
    def topic(self) -> str | None:
        return self.name.topic if self.name else None

    @property
    def partition(self) -> int | None:
        return self.name.partition if self.name else None

    @property
    def segments(self) -> list[LogSegment]:
        return self.files.segments

    @property
    def is_metadata_log(self) -> bool:
        return self.topic == METADATA_TOPIC

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    def with_segments(self, segments: list[LogSegment]) -> "PartitionLog":
        """This partition with ``segments`` in place of the files listed (what a plan leaves:
        recovery's kept segments, completed swaps); the other files as listed."""
        view = copy.copy(self)
        view.files = replace(self.files, segments=sorted(segments, key=lambda s: s.base_offset))
        view._bases = [segment.base_offset for segment in view.files.segments]
        return view

    def floor_segment(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset <= ``offset``."""
        index = bisect.bisect_right(self._bases, offset) - 1
        return self.segments[index] if index >= 0 else None

    def segments_from(self, offset: int) -> list[LogSegment]:
        """Segments that may hold ``offset`` or later ones (the floor segment onwards)."""
        index = max(0, bisect.bisect_right(self._bases, offset) - 1)
        return self.segments[index:]

    def find_offset(self, offset: int) -> tuple[LogSegment, OffsetMatch] | None:
        """The batch holding ``offset`` (or the first one after it) and its segment."""
        for segment in self.segments_from(offset):
            match = segment.translate_offset(offset)
            if match is not None:
                return segment, match
        return None

    def find_offset_by_timestamp(self, timestamp: int) -> int | None:
        """Offset of the first record with timestamp >= ``timestamp`` (ListOffsets semantics)."""
        for segment in self.segments:
            offset = segment.find_offset_by_timestamp(timestamp)
            if offset is not None:
                return offset
        return None

    @property
    def log_start_offset(self) -> int | None:
        return self.segments[0].base_offset if self.segments else None

    def log_end_offset(self) -> int | None:
        return self.segments[-1].read_next_offset() if self.segments else None


def _list_partition(path: Path) -> PartitionFiles:
    files = PartitionFiles()
    try:
        entries = sorted(path.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        raise UnreadableInputError(f"cannot list directory: {exc.strerror}", path) from None
    for entry in entries:
        problem = regular_file_problem(entry)
        if problem is not None or offset_out_of_range(entry.name):
            if problem != NOT_A_FILE_DIRECTORY:
                files.unusable.append((entry, problem or OFFSET_OUT_OF_RANGE))
            continue
        parsed = parse_segment_file_name(entry.name)
        if parsed is None:
            if parse_kraft_snapshot_name(entry.name) is not None:
                files.kraft_snapshots.append(entry)
            else:
                files.other_files.append(entry)
        elif parsed.is_temp:
            files.temp_files.append(entry)
        elif parsed.suffix == LOG_SUFFIX:
            files.segments.append(LogSegment(entry, parsed.base_offset))
        elif parsed.suffix == SNAPSHOT_SUFFIX:
            files.snapshots.append(entry)
        elif parsed.suffix == CHECKPOINT_SUFFIX:
            files.kraft_snapshots.append(entry)
        else:
            files.index_files.append(entry)
    files.segments.sort(key=lambda segment: segment.base_offset)
    files.snapshots.sort(key=lambda p: parse_segment_file_name(p.name).base_offset)
    return files


class LogDir:
    """A Kafka ``log.dirs`` entry: partition directories plus checkpoint and metadata files."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise UnreadableInputError("not a directory", self.path)

    def partition_dirs(self) -> list[Path]:
        """Sub-directories Kafka would load as logs, ordered by topic then partition number;
        ``remote-log-index-cache`` is skipped, the metadata log included."""
        found = []
        for entry in self.path.iterdir():
            # only real directories: a symlink (``loop-0 -> .``) is no partition of this log dir
            if entry.is_symlink() or not entry.is_dir() or entry.name == REMOTE_LOG_INDEX_CACHE:
                continue
            name = parse_partition_dir_name(entry.name)
            if name is not None:
                found.append((name.topic, name.partition, name.kind, entry))
        return [entry for *_, entry in sorted(found, key=lambda item: item[:3])]

    def partitions(self) -> list[PartitionLog]:
        return [PartitionLog(path) for path in self.partition_dirs()]

    def unexpected_dirs(self) -> list[Path]:
        """Sub-directories whose names Kafka refuses (broker start-up would abort)."""
        return sorted(entry for entry in self.path.iterdir()
                      if entry.is_dir() and entry.name != REMOTE_LOG_INDEX_CACHE
                      and parse_partition_dir_name(entry.name) is None)

    def root_files(self) -> list[Path]:
        return sorted(entry for entry in self.path.iterdir() if regular_file_problem(entry) is None)

    def unusable_root_files(self) -> list[tuple[Path, str]]:
        """Entries of the log dir that are neither regular files nor directories: (path, why)."""
        found = ((entry, regular_file_problem(entry)) for entry in sorted(self.path.iterdir()))
        return [(entry, why) for entry, why in found if why is not None and why != NOT_A_FILE_DIRECTORY]


def looks_like_partition_dir(path: Path) -> bool:
    """True for a directory of segment files, False for a directory of partition directories.

    Content decides before the name, because a log dir may itself be named like a partition
    (``/data/kafka-1``); a log dir holds ``bootstrap.checkpoint`` but no segment.
    """
    try:
        children = list(path.iterdir())
    except OSError:
        return False
    if any(child.is_dir() and parse_partition_dir_name(child.name) is not None for child in children):
        return False
    if any(child.is_file() and (_is_segment_or_snapshot(child.name)
                                or parse_kraft_snapshot_name(child.name) is not None)
           for child in children):
        return True
    if any(child.is_dir() for child in children):  # no segments but subdirectories: a tree, whatever its name
        return False
    return parse_partition_dir_name(path.name) is not None


def _is_segment_or_snapshot(name: str) -> bool:
    """``<offset>.log`` or ``<offset>.snapshot`` (a ``build.log`` or ``notes.log`` is no segment)."""
    parsed = parse_segment_file_name(name)
    return parsed is not None and not parsed.is_temp and parsed.suffix in (LOG_SUFFIX, SNAPSHOT_SUFFIX)


LOG_DIR_FILES = ("meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                 "log-start-offset-checkpoint", "cleaner-offset-checkpoint", ".kafka_cleanshutdown",
                 "bootstrap.checkpoint", ".lock")
MAX_SEARCH_DEPTH = 8


def is_log_dir(path: Path) -> bool:
    """A directory Kafka would use as a ``log.dirs`` entry: it holds log-dir files or partition
    directories."""
    try:
        children = list(path.iterdir())
    except OSError:
        return False
    return any(child.name in LOG_DIR_FILES for child in children) or any(
        child.is_dir() and parse_partition_dir_name(child.name) is not None and looks_like_partition_dir(child)
        for child in children)


def find_kafka_dirs(path: Path, depth: int = MAX_SEARCH_DEPTH) -> tuple[list[Path], list[Path]]:
    """Log dirs and stray partition dirs under ``path`` (a copy of a machine's disk, a backup
    tree): ``(log_dirs, partition_dirs)``, in path order. Hidden directories and symlinks
    are not followed."""
    log_dirs: list[Path] = []
    partition_dirs: list[Path] = []
    try:
        children = sorted(child for child in path.iterdir()
                          if child.is_dir() and not child.is_symlink() and not child.name.startswith("."))
    except OSError:
        return log_dirs, partition_dirs
    for child in children:
        if looks_like_partition_dir(child) and parse_partition_dir_name(child.name) is not None:
            partition_dirs.append(child)
        elif is_log_dir(child):
            log_dirs.append(child)
        elif depth > 0:
            more_logs, more_partitions = find_kafka_dirs(child, depth - 1)
            log_dirs.extend(more_logs)
            partition_dirs.extend(more_partitions)
    return log_dirs, partition_dirs


def partition_dirs_under(path: Path) -> list[Path]:
    """The partition directories ``path`` stands for: itself, a log dir's partitions, or those
    of every log dir (and stray partition directory) in a tree, in path order."""
    path = Path(path)
    if looks_like_partition_dir(path):
        return [path]
    if is_log_dir(path):
        return LogDir(path).partition_dirs()
    log_dirs, partitions = find_kafka_dirs(path)
    return [d for log_dir in log_dirs for d in LogDir(log_dir).partition_dirs()] + partitions
