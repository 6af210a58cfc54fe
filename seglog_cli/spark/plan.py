"""Planning a distributed read: which segments, and where to cut them (no Spark, no Arrow).

A read covers the ``.log`` segments of the partition directories a path stands for (a
partition dir, a log dir, a tree of log dirs), in the order ``seglog dump`` reads them. Each
segment becomes one or more :class:`Split`\\ s: byte ranges ``[start, end)`` of the ``.log``
that begin at a batch boundary taken from the segment's ``.index`` (an offset index entry's
position is where a batch starts, ``LogSegment.append`` writes it so). A split holds the
batches whose first byte lies in its range, so the splits of a segment together hold every
batch a single scan finds, once.

A cut is used only when the bytes at that position frame a whole batch that passes its CRC
(a stale or damaged ``.index`` gives no cut); a segment without a usable ``.index`` is one
split. Cuts are planned from the ``.index`` only, so planning a 1 GiB segment reads a few
hundred KiB.

Ranges follow ``seglog dump``: ``from_offset``/``to_offset`` (inclusive) skip segments and
splits that cannot hold them; timestamps are resolved to offsets over the whole partition
(Kafka's ListOffsets semantics, :func:`seglog_cli.storage.dump.dump.resolve_range`).
"""

from __future__ import annotations

import json
import os
import re
import zlib
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping

from seglog_cli.storage.log import native
from seglog_cli.storage.log.batch_header import LEGACY_HEADER, LOG_OVERHEAD, MIN_ENTRY_SIZE, OFFSET_AND_SIZE, V2_HEADER
from seglog_cli.storage.log.checksums import crc32c
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.indexes import OffsetIndex
from seglog_cli.storage.log.naming import parse_partition_dir_name, parse_segment_file_name
from seglog_cli.storage.log.partition_log import PartitionLog, partition_dirs_under
from seglog_cli.storage.objectstore.remote_urls import local_path
from seglog_cli.storage.tiered.tiered import open_partition, ordered_partitions

DEFAULT_SPLIT_BYTES = 128 * 1024 * 1024
KEEP, SKIP, FAIL = "keep", "skip", "fail"
CRC_POLICIES = (KEEP, SKIP, FAIL)
READ_UNCOMMITTED, READ_COMMITTED = "read_uncommitted", "read_committed"
ISOLATION_LEVELS = (READ_UNCOMMITTED, READ_COMMITTED)


class OptionError(SeglogError):
    """A data source option that cannot be used (the message names it)."""


@dataclass(frozen=True)
class ScanOptions:
    """What to read and how. ``on_crc_mismatch``: ``keep`` returns the records of a batch that
    fails its CRC (what ``seglog dump`` and kafka-dump-log print), ``skip`` leaves them out,
    ``fail`` stops the read with an error naming the file and position."""

    check_crc: bool = True
    on_crc_mismatch: str = KEEP
    fail_on_damage: bool = False
    from_offset: int | None = None
    to_offset: int | None = None
    from_timestamp: int | None = None
    to_timestamp: int | None = None
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    split_bytes: int = DEFAULT_SPLIT_BYTES
    max_records_per_batch: int = 8192
    isolation_level: str = READ_UNCOMMITTED
    partitions: tuple[int, ...] | None = None  # None: every partition (pushed-down filters only)
    nothing: bool = False  # pushed-down filters that no row can pass (``topic = 'a' and topic = 'b'``)

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == READ_COMMITTED

    def wants_topic(self, topic: str | None) -> bool:
        if self.topics and topic not in self.topics:
            return False
        return self.topic_pattern is None or (topic is not None and re.fullmatch(self.topic_pattern, topic) is not None)

    def wants_partition(self, partition: int | None) -> bool:
        return self.partitions is None or partition in self.partitions

    @property
    def dump_options(self):
        from seglog_cli.storage.dump.dump import DumpOptions  # imported when a range is given: planner processes start fast

        return DumpOptions(from_offset=self.from_offset, to_offset=self.to_offset,
                           from_timestamp=self.from_timestamp, to_timestamp=self.to_timestamp)


@dataclass(frozen=True)
class Split:
    """Batches of ``path`` starting in ``[start, end)``; records limited to the offsets
    ``[from_offset, to_offset]`` (None: unbounded)."""

    path: str
    topic: str | None
    partition: int | None
    base_offset: int
    start: int
    end: int
    from_offset: int | None = None
    to_offset: int | None = None
    segment: str = field(default="", compare=False)
    active: bool = True  # the partition's last segment: a torn or garbage tail is what a broker truncates
    log_dir: str | None = None  # the log dir the partition dir lies in (``logDir``)
    aborted: tuple = ()  # read_committed: the partition's aborted transactions, (producerId, firstOffset, lastOffset)
    last_stable_offset: int | None = None  # read_committed: records from here on are not returned

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def ranged(self) -> bool:
        """Whether an offset range limits the split's records."""
        return self.from_offset is not None or self.to_offset is not None


# -- options ------------------------------------------------------------------------------------

_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def parse_options(options: Mapping[str, str]) -> ScanOptions:
    """ScanOptions from Spark's string options (names compared without case, as Spark does)."""
    given = {key.lower(): value for key, value in options.items()}
    policy = given.get("oncrcmismatch", KEEP).lower()
    if policy not in CRC_POLICIES:
        raise OptionError(f"onCrcMismatch: {policy!r} is not one of {', '.join(CRC_POLICIES)}")
    pattern = given.get("topicpattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"topicPattern: {pattern!r} is not a regular expression: {exc}") from None
    topics = tuple(t.strip() for t in given.get("topics", "").split(",") if t.strip())
    isolation = given.get("isolationlevel", READ_UNCOMMITTED).strip().lower()
    if isolation not in ISOLATION_LEVELS:
        raise OptionError(f"isolationLevel: {isolation!r} is not one of {', '.join(ISOLATION_LEVELS)}")
    parsed = ScanOptions(
        check_crc=_flag(given, "checkcrc", True), on_crc_mismatch=policy,
        fail_on_damage=_flag(given, "failondamage", False),
        from_offset=_integer(given, "fromoffset"), to_offset=_integer(given, "tooffset"),
        from_timestamp=_timestamp(given, "fromtimestamp"), to_timestamp=_timestamp(given, "totimestamp"),
        topics=topics, topic_pattern=pattern,
        split_bytes=_integer(given, "splitbytes", DEFAULT_SPLIT_BYTES),
        max_records_per_batch=_integer(given, "maxrecordsperbatch", 8192), isolation_level=isolation)
    if parsed.max_records_per_batch < 1 or parsed.split_bytes < 0:
        raise OptionError("maxRecordsPerBatch must be >= 1 and splitBytes >= 0 (0: one split per segment)")
    if parsed.on_crc_mismatch != KEEP and not parsed.check_crc:
        raise OptionError(f"onCrcMismatch={parsed.on_crc_mismatch} needs checkCrc=true")
    return parsed


def _flag(given: dict, name: str, default: bool) -> bool:
    value = given.get(name)
    if value is None:
        return default
    if value.strip().lower() in _TRUE:
        return True
    if value.strip().lower() in _FALSE:
        return False
    raise OptionError(f"{name}: {value!r} is not true or false")


def _integer(given: dict, name: str, default: int | None = None) -> int | None:
    value = given.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise OptionError(f"{name}: {value!r} is not an integer") from None


def _timestamp(given: dict, name: str) -> int | None:
    """Epoch milliseconds, or an ISO-8601 time (UTC when no zone is given), as ``seglog dump``."""
    value = given.get(name)
    if value is None:
        return None
    text = value.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise OptionError(f"{name}: {text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def option_paths(options: Mapping[str, str]) -> list[str]:
    """The paths given to ``load(path)`` (``path``), to ``load([a, b])`` (Spark passes ``paths``
    as a JSON list) or as the ``paths`` option (comma-separated)."""
    given = {key.lower(): value for key, value in options.items()}
    paths = [given["path"]] if given.get("path") else []
    listed = given.get("paths", "").strip()
    if listed.startswith("["):
        try:
            items = json.loads(listed)
        except ValueError:
            items = None
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise OptionError(f"paths: {listed!r} is not a list of paths")
        paths += [item for item in items if item]
    else:
        paths += [p.strip() for p in listed.split(",") if p.strip()]
    if not paths:
        raise OptionError("give a path: spark.read.format('seglog').load('/var/lib/kafka/data')")
    return paths


# -- splits -------------------------------------------------------------------------------------

def plan_splits(paths: Iterable[str], options: ScanOptions) -> list[Split]:
    """Every split of every segment under ``paths``, in ``seglog dump`` order."""
    if options.nothing:
        return []
    found: list[tuple[str, Path]] = []  # ("file", path) or ("dir", partition directory), in order
    for raw in paths:
        # absolute here, on the driver (relative: to its working directory): a task runs in the
        # executor's own work dir, and reads the splits' paths as they are planned
        path = Path(os.path.abspath(local_path(raw).removeprefix("file:")))
        if path.is_file():
            found.append(("file", path))
            continue
        if not path.is_dir():
            raise SeglogError("no such file or directory", path)
        found.extend(("dir", directory) for directory in partition_dirs_under(path))
    # a tiered partition's remote and local directories, both given, are one log (where the local one is)
    remote_of = dict(ordered_partitions([p for kind, p in found if kind == "dir"]))
    work = []
    for kind, path in found:
        if kind == "file":
            work.append((segment_splits, str(path), options))
        elif path in remote_of:
            name = parse_partition_dir_name(path.name)
            if options.wants_topic(name.topic if name else None) and options.wants_partition(
                    name.partition if name else None):
                work.append((_partition_splits, path, options, remote_of[path]))
    splits: list[Split] = []
    for planned in _in_order(work):
        splits.extend(planned)
    return splits


PLANNING_THREADS = 8


def _in_order(work: list[tuple]) -> Iterable[list[Split]]:
    """Each ``(function, *args)`` called, on a few threads when there are several (listing
    directories and reading indexes wait on the disk or the network, not on the interpreter);
    results in the order given, the first failure in that order raised."""
    if len(work) < 2:
        return [function(*args) for function, *args in work]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(PLANNING_THREADS, len(work)), thread_name_prefix="seglog-plan") as pool:
        return list(pool.map(lambda item: item[0](*item[1:]), work))


def _partition_splits(directory: Path, options: ScanOptions, remote: Path | None = None) -> list[Split]:
    log = open_partition(directory, remote)
    from_offset, to_offset = _offset_range(directory, options)
    committed = _committed_view(directory, options)
    segments = log.segments
    out = []
    for i, segment in enumerate(segments):
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if to_offset is not None and segment.base_offset > to_offset:
            break
        if from_offset is not None and next_base is not None and next_base <= from_offset:
            continue  # dump starts at the floor segment of from_offset
        out.extend(_cut(str(segment.log_path), log.topic, log.partition, segment.base_offset,
                        from_offset, to_offset, options.split_bytes, active=next_base is None,
                        log_dir=_log_dir_of(directory), committed=committed))
    return out


def _log_dir_of(partition_dir: Path) -> str:
    """The log dir a partition dir lies in (its parent, absolute)."""
    return str(partition_dir.absolute().parent)


def _committed_view(directory: Path, options: ScanOptions) -> tuple[tuple, int | None]:
    """read_committed: the partition's aborted transactions and last stable offset, from the
    engine (:func:`seglog_cli.storage.coordinator.transactions.read_committed_view`); nothing otherwise."""
    if not options.read_committed:
        return (), None
    from seglog_cli.storage.coordinator.transactions import read_committed_view

    view = read_committed_view(directory)
    return tuple((t.producer_id, t.first_offset, t.last_offset) for t in view.aborted), view.last_stable_offset


def segment_splits(log_path: str, options: ScanOptions) -> list[Split]:
    """The splits of one ``.log`` named on its own (topic and partition from its directory)."""
    path = Path(log_path)
    name = parse_partition_dir_name(path.absolute().parent.name)
    topic, partition = (name.topic, name.partition) if name else (None, None)
    if options.nothing or not options.wants_topic(topic) or not options.wants_partition(partition):
        return []
    parsed = parse_segment_file_name(path.name)
    base = parsed.base_offset if parsed else 0
    from_offset, to_offset = _offset_range(path.absolute().parent, options)
    if to_offset is not None and base > to_offset:
        return []
    if from_offset is not None and name is not None:
        later = [s.base_offset for s in PartitionLog(path.absolute().parent).segments if s.base_offset > base]
        if later and min(later) <= from_offset:
            return []
    committed = _committed_view(path.absolute().parent, options) if name is not None else ((), None)
    return _cut(str(path), topic, partition, base, from_offset, to_offset, options.split_bytes,
                active=_is_last_segment(path), log_dir=_log_dir_of(path.absolute().parent) if name else None,
                committed=committed)


def _offset_range(directory: Path, options: ScanOptions) -> tuple[int | None, int | None]:
    if (options.from_offset, options.to_offset, options.from_timestamp, options.to_timestamp) == (None,) * 4:
        return None, None
    dump_options = options.dump_options
    if not dump_options.has_range:
        return None, None
    from seglog_cli.storage.dump.dump import resolve_range

    return resolve_range(str(directory.absolute()), dump_options)


def _is_last_segment(path: Path) -> bool:
    from seglog_cli.storage.verify.verify_segment import is_last_segment

    return is_last_segment(path)


def _cut(log_path: str, topic, partition, base_offset: int, from_offset, to_offset,
         split_bytes: int, *, active: bool = True, log_dir: str | None = None,
         committed: tuple[tuple, int | None] = ((), None)) -> list[Split]:
    """Cut one segment at ``.index`` positions about ``split_bytes`` apart."""
    size = Path(log_path).stat().st_size
    start = 0
    index_path = Path(log_path[:-len(".log")] + ".index") if log_path.endswith(".log") else None
    if from_offset is not None and index_path is not None and index_path.is_file():
        start = _index_floor(index_path, base_offset, from_offset, size)
    cuts = _cut_positions(log_path, index_path, base_offset, start, size, split_bytes)
    if to_offset is not None and cuts:
        cuts = _cuts_before(log_path, cuts, to_offset)
        if len(cuts) and cuts[-1] < 0:  # a cut past to_offset: the segment's read ends there
            size = -cuts.pop()
    bounds = [start, *cuts, size]
    segment = Path(log_path).name
    aborted, last_stable = committed
    return [Split(log_path, topic, partition, base_offset, lo, hi, from_offset, to_offset, segment, active,
                  log_dir, aborted, last_stable)
            for lo, hi in zip(bounds, bounds[1:]) if hi > lo]


def _cuts_before(log_path: str, cuts: list[int], to_offset: int) -> list[int]:
    """The cuts whose v2 batch starts at or below ``to_offset``; the first one past it follows,
    negated (where the reading of the segment can end: no later split holds a wanted record)."""
    with MappedFile(log_path) as mapped:
        for i, position in enumerate(cuts):
            if mapped.buffer[position + 16] == 2 and OFFSET_AND_SIZE.unpack_from(mapped.buffer, position)[0] > to_offset:
                return cuts[:i] + [-position]
    return cuts


def _index_floor(index_path: Path, base_offset: int, offset: int, size: int) -> int:
    """Where ``seglog dump --from-offset`` starts scanning (the offset index floor)."""
    try:
        with OffsetIndex(index_path, base_offset) as index:
            position = index.lookup(offset).position
    except (SeglogError, OSError, ValueError):
        return 0
    return position if 0 <= position <= size else 0


def _cut_positions(log_path: str, index_path: Path | None, base_offset: int, start: int, size: int,
                   split_bytes: int) -> list[int]:
    """Where to cut ``[start, size)``: the first ``.index`` position at or past each target
    (``split_bytes`` after the previous cut) that frames a valid batch. The positions are read
    at once; in a sound index they only go up, so each target is a binary search, not a walk
    of every entry (a stale or damaged index that goes back is walked entry by entry)."""
    if split_bytes <= 0 or size - start <= split_bytes or index_path is None or not index_path.is_file():
        return []
    try:
        with OffsetIndex(index_path, base_offset) as index:
            positions = index.dump_positions()
    except (SeglogError, OSError, ValueError):
        return []
    cuts: list[int] = []
    with MappedFile(log_path) as mapped:
        if _never_down(positions):
            _sorted_cuts(mapped, positions, start, size, split_bytes, cuts)
        else:
            _walked_cuts(mapped, positions, start, size, split_bytes, cuts)
    if cuts and size - cuts[-1] < split_bytes // 4:
        cuts.pop()  # no sliver at the end: the last split takes it
    return cuts


def _sorted_cuts(mapped: MappedFile, positions: array, start: int, size: int, split_bytes: int,
                 cuts: list[int]) -> None:
    """:func:`_walked_cuts` over positions that never go down: the first entry past each
    target by bisection (the same cuts: every entry before it is below the target)."""
    target = start + split_bytes
    i = bisect_left(positions, target)
    while i < len(positions):
        position = positions[i]
        if position >= size:
            return  # every later entry is as far
        if position > (cuts[-1] if cuts else start) and _frames_valid_batch(mapped, position):
            cuts.append(position)
            target = position + split_bytes
            i = bisect_left(positions, target, i + 1)
        else:
            i += 1


def _never_down(positions: array) -> bool:
    if native.module is not None:
        return native.module.first_disorder(positions, positions.itemsize, False) < 0
    return positions == array("i", sorted(positions))


def _walked_cuts(mapped: MappedFile, positions: array, start: int, size: int, split_bytes: int,
                 cuts: list[int]) -> None:
    target = start + split_bytes
    for position in positions:
        if position >= target and position < size and position > (cuts[-1] if cuts else start):
            if _frames_valid_batch(mapped, position):
                cuts.append(position)
                target = position + split_bytes


def _frames_valid_batch(mapped: MappedFile, position: int) -> bool:
    """Whether a whole batch (or legacy entry) with a matching CRC starts at ``position``."""
    buf, view = mapped.buffer, mapped.view
    if position + LOG_OVERHEAD + MIN_ENTRY_SIZE > mapped.size:
        return False
    size = OFFSET_AND_SIZE.unpack_from(buf, position)[1]
    end = position + LOG_OVERHEAD + size
    if size < MIN_ENTRY_SIZE or end > mapped.size:
        return False
    magic = buf[position + 16]
    if magic == 2:
        return size >= 49 and V2_HEADER.unpack_from(buf, position)[4] == crc32c(view[position + 21:end])
    if magic in (0, 1):
        return LEGACY_HEADER.unpack_from(buf, position)[2] == zlib.crc32(view[position + 16:end])
    return False
