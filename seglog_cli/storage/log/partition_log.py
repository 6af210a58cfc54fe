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
import os
from pathlib import Path

from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.log.files import NOT_A_FILE_DIRECTORY, regular_file_problem
from seglog_cli.storage.log.naming import (
    CHECKPOINT_SUFFIX,
    INDEX_SUFFIX,
    KRAFT_SNAPSHOT_NAME,
    SEGMENT_NAME,
    MAX_OFFSET,
    LOG_SUFFIX,
    METADATA_TOPIC,
    OFFSET_OUT_OF_RANGE,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    PartitionDirName,
    parse_kraft_snapshot_name,
    parse_partition_dir_name,
    offset_out_of_range,
    parse_segment_file_name,
)
from seglog_cli.storage.log.segments import LogSegment, OffsetMatch, join_name

REMOTE_LOG_INDEX_CACHE = "remote-log-index-cache"


_LISTS = ("snapshots", "kraft_snapshots", "index_files", "temp_files", "other_files")


class PartitionFiles:
    """The files of a partition directory, by role (sorted by offset): ``segments``, and the
    paths of ``snapshots``, ``kraft_snapshots``, ``index_files``, ``temp_files`` and
    ``other_files``. Listed as names; the :class:`~pathlib.Path` lists are built when first
    asked for (:meth:`names` and :meth:`files` give them as ``str``, as a log dir of 10^5
    segments wants them). ``unusable``: entries that are no regular file (a FIFO, a device, a
    socket, a dangling symlink, a loop) or whose offset does not fit a long, as (path, why);
    Kafka skips the first kind, fails on the second."""

    __slots__ = ("segments", "unusable", "directory", "regular_names", "_names", "_paths")

    def __init__(self, segments=None, snapshots=None, kraft_snapshots=None, index_files=None, temp_files=None,
                 other_files=None, unusable=None, *, directory: str | None = None, names: dict | None = None,
                 regular_names: frozenset | None = None):
        self.segments: list[LogSegment] = [] if segments is None else segments
        self.unusable: list[tuple[Path, str]] = [] if unusable is None else unusable
        self.directory = directory  # str(Path(...)) of the directory the names are in
        self.regular_names = regular_names  # every regular file listed (None: not listed)
        self._names: dict[str, list[str]] = names or {}
        self._paths: dict[str, list[Path]] = {}
        for kind, given in zip(_LISTS, (snapshots, kraft_snapshots, index_files, temp_files, other_files)):
            if given is not None:
                self._paths[kind] = list(given)

    def names(self, kind: str) -> list[str]:
        """The file names of one role (``"snapshots"``, ``"index_files"``, ...)."""
        if kind in self._paths:
            return [path.name for path in self._paths[kind]]
        return self._names.get(kind, [])

    def files(self, kind: str) -> list[str]:
        """The paths of one role, as ``str``."""
        if kind in self._paths:
            return [str(path) for path in self._paths[kind]]
        directory = self.directory
        return [join_name(directory, name) for name in self._names.get(kind, [])]

    def _path_list(self, kind: str) -> list[Path]:
        paths = self._paths.get(kind)
        if paths is None:
            base = Path(self.directory) if self.directory is not None else None
            paths = self._paths[kind] = [base / name for name in self._names.get(kind, [])]
        return paths

    snapshots = property(lambda self: self._path_list("snapshots"))
    kraft_snapshots = property(lambda self: self._path_list("kraft_snapshots"))
    index_files = property(lambda self: self._path_list("index_files"))
    temp_files = property(lambda self: self._path_list("temp_files"))
    other_files = property(lambda self: self._path_list("other_files"))

    def with_segments(self, segments: list[LogSegment]) -> "PartitionFiles":
        out = PartitionFiles(segments, unusable=self.unusable, directory=self.directory, names=self._names,
                             regular_names=self.regular_names)
        out._paths = self._paths
        return out

    def __repr__(self) -> str:
        return (f"PartitionFiles(segments={self.segments!r}, "
                + ", ".join(f"{kind}={getattr(self, kind)!r}" for kind in _LISTS) + f", unusable={self.unusable!r})")


class PartitionLog:
    """One partition directory. ``topic``/``partition`` come from the directory name (None when
    the name is not Kafka's)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.directory = str(self.path)
        if not os.path.isdir(self.directory):
            raise UnreadableInputError("not a directory", self.path)
        self.name: PartitionDirName | None = parse_partition_dir_name(self.path.name)
        self.files = _list_partition(self.path, self.directory)
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

    def has_file(self, name: str) -> bool:
        """Whether the directory held a regular file ``name`` when it was listed."""
        regular = self.files.regular_names
        return name in regular if regular is not None else os.path.isfile(join_name(self.directory, name))

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
        view.files = self.files.with_segments(sorted(segments, key=lambda s: s.base_offset))
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


def _list_partition(path: Path, directory: str) -> PartitionFiles:
    """One ``scandir`` of the directory; a ``stat`` only for entries that are not plainly
    regular files (symlinks, anything else), to say why they cannot be used."""
    try:
        with os.scandir(directory) as listing:
            entries = sorted(((entry.name, entry.is_file(follow_symlinks=False)) for entry in listing))
    except OSError as exc:
        raise UnreadableInputError(f"cannot list directory: {exc.strerror}", path) from None
    segments, unusable = [], []
    names: dict[str, list[str]] = {kind: [] for kind in _LISTS}
    snapshots, kraft, indexes, temps, others = (names[kind] for kind in _LISTS)
    snapshot_bases: dict[str, int] = {}
    regular = []
    match_segment, match_kraft = SEGMENT_NAME.match, KRAFT_SNAPSHOT_NAME.match
    for name, plain in entries:
        problem = None if plain else regular_file_problem(join_name(directory, name))
        suffix, digits = name[20:], name[:20]
        if suffix in _PLAIN_SUFFIXES and digits.isdigit() and digits.isascii():  # Kafka's own names, at once
            base, temp = int(digits), ""
        else:
            match = match_segment(name)
            if match is not None:
                digits, _remote, suffix, temp = match.groups()
                base = int(digits)
            else:
                base = None
        out_of_range = base > MAX_OFFSET if base is not None else offset_out_of_range(name)
        if problem is not None or out_of_range:
            if problem != NOT_A_FILE_DIRECTORY:
                unusable.append((path / name, problem or OFFSET_OUT_OF_RANGE))
            continue
        regular.append(name)
        if base is None:
            (kraft if match_kraft(name) is not None else others).append(name)
            continue
        if temp:
            temps.append(name)
        elif suffix == LOG_SUFFIX:
            segments.append((base, name))
        elif suffix == SNAPSHOT_SUFFIX:
            snapshots.append(name)
            snapshot_bases[name] = base
        elif suffix == CHECKPOINT_SUFFIX:
            kraft.append(name)
        else:
            indexes.append(name)
    siblings = frozenset(regular)
    segments.sort(key=_first)
    snapshots.sort(key=snapshot_bases.__getitem__)
    return PartitionFiles([LogSegment(join_name(directory, name), base, siblings=siblings) for base, name in segments],
                          unusable=unusable, directory=directory, names=names, regular_names=siblings)


# ``<20 digits><suffix>``: what SEGMENT_NAME matches with no remote id and no temporary suffix
_PLAIN_SUFFIXES = frozenset((LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, SNAPSHOT_SUFFIX))


def _first(pair):
    return pair[0]


class LogDir:
    """A Kafka ``log.dirs`` entry: partition directories plus checkpoint and metadata files."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_dir():
            raise UnreadableInputError("not a directory", self.path)

    def _entries(self) -> list[tuple[str, str]]:
        """(name, kind) of each entry, sorted by name, from one ``scandir``: kind ``"file"`` and
        ``"dir"`` for what is plainly one (no symlink), ``"link"`` for a symlink, ``"other"``."""
        entries = []
        with os.scandir(self.path) as listing:
            for entry in listing:
                if entry.is_file(follow_symlinks=False):
                    kind = "file"
                elif entry.is_dir(follow_symlinks=False):
                    kind = "dir"
                else:
                    kind = "link" if entry.is_symlink() else "other"
                entries.append((entry.name, kind))
        entries.sort()
        return entries

    def partition_dirs(self) -> list[Path]:
        """Sub-directories Kafka would load as logs, ordered by topic then partition number;
        ``remote-log-index-cache`` is skipped, the metadata log included."""
        found = []
        for name, kind in self._entries():
            # only real directories: a symlink (``loop-0 -> .``) is no partition of this log dir
            if kind != "dir" or name == REMOTE_LOG_INDEX_CACHE:
                continue
            parsed = parse_partition_dir_name(name)
            if parsed is not None:
                found.append((parsed.topic, parsed.partition, parsed.kind, name))
        found.sort(key=_first_three)
        path = self.path
        return [path / name for *_, name in found]

    def partitions(self) -> list[PartitionLog]:
        return [PartitionLog(path) for path in self.partition_dirs()]

    def unexpected_dirs(self) -> list[Path]:
        """Sub-directories whose names Kafka refuses (broker start-up would abort)."""
        return [self.path / name for name, kind in self._entries()
                if (kind == "dir" or kind == "link" and (self.path / name).is_dir())
                and name != REMOTE_LOG_INDEX_CACHE and parse_partition_dir_name(name) is None]

    def root_files(self) -> list[Path]:
        return [self.path / name for name, kind in self._entries()
                if kind == "file" or kind != "dir" and regular_file_problem(self.path / name) is None]

    def unusable_root_files(self) -> list[tuple[Path, str]]:
        """Entries of the log dir that are neither regular files nor directories: (path, why)."""
        found = ((self.path / name, regular_file_problem(self.path / name))
                 for name, kind in self._entries() if kind not in ("file", "dir"))
        return [(entry, why) for entry, why in found if why is not None and why != NOT_A_FILE_DIRECTORY]


def _first_three(item):
    return item[:3]


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
    of every log dir (and stray partition directory) in a tree, in path order. A directory
    that cannot be listed is unreadable input, not one with no partitions."""
    path = Path(path)
    if looks_like_partition_dir(path):
        return [path]
    if is_log_dir(path):
        return LogDir(path).partition_dirs()
    log_dirs, partitions = find_kafka_dirs(path)
    if not log_dirs and not partitions and path.is_dir():
        try:
            with os.scandir(path):
                pass
        except OSError as exc:
            raise UnreadableInputError(f"cannot list directory: {exc.strerror}", path) from None
    return [d for log_dir in log_dirs for d in LogDir(log_dir).partition_dirs()] + partitions
