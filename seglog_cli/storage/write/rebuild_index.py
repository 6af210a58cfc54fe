"""Rebuilding ``.index``, ``.timeindex`` and ``.txnindex`` as Kafka's recovery does (§10.3).

``LogSegment.recover`` walks the ``.log`` batch by batch (not append by append):

* every batch must pass ``ensureValid`` (size, CRC); the walk stops at the first that does
  not, and recovery truncates the file there;
* ``maxTimestampSoFar`` and the offset holding it follow the batches' max timestamps
  (the *last* offset of the batch holding the max);
* when more than ``index.interval.bytes`` were walked since the last entry, the offset index
  gets (batch last offset, batch position) and the time index ``maybeAppend(maxTimestampSoFar,
  offsetOfMaxTimestampSoFar)``; the counter restarts at that batch;
* at the end the time index gets the final ``maybeAppend`` with the full check skipped, and
  both indexes are trimmed to their entries;
* aborted transactions completed in the segment go to the ``.txnindex``, from the producer
  state at the segment's base offset (``producer_state``).

seglog plans first: each index file is compared with what recovery would write, and only the
files that differ are rewritten on :func:`apply_rebuild` (through the write protocol of
:mod:`seglog_cli.storage.write.write_session`, the originals kept in the backup). A segment whose ``.log`` is not valid to its end is refused: the
bytes after the last valid batch are what ``seglog recover`` is for.

The walk keeps one offset and one time index in memory as packed bytes (at most
``segment.index.bytes`` each), never one object per batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from seglog_cli.storage.log import native
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import NOT_A_FILE_DIRECTORY, MappedFile, is_present, regular_file_problem
from seglog_cli.storage.log.indexes import ABORTED_TXN
from seglog_cli.storage.log.naming import OFFSET_OUT_OF_RANGE, offset_out_of_range, parse_segment_file_name
from seglog_cli.storage.log.producer_state import rebuild_producer_state, replay_segment
from seglog_cli.storage.log.partition_log import PartitionLog, partition_dirs_under
from seglog_cli.storage.write.durable import Spool, SpoolRange, Tally
from seglog_cli.storage.write.file_steps import FileStep
from seglog_cli.storage.write.write_session import WriteSession, plan_directories, take_fingerprint
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.config.topic_config import TopicConfig, config_for
from seglog_cli.storage.write.writer import OFFSET_ENTRY, TIME_ENTRY, SegmentIndexer, WriterError

INT32_MAX = 2**31 - 1
NO_TIMESTAMP = -1
MAX_SEGMENT_BYTES = 2**31 - 1  # FileRecords: a segment's size is an int
WALK_CHUNK = 16 * 1024 * 1024  # bytes the compiled recovery walk checks per call (then the pages behind go)
TXN_ENTRY_SIZE = ABORTED_TXN.size

ENTRY_SIZES = {"offset": OFFSET_ENTRY.size, "time": TIME_ENTRY.size, "txn": TXN_ENTRY_SIZE}

# what a planned file change is
IDENTICAL, TRIM, CREATE, REWRITE = "identical", "trim", "create", "rewrite"


class RebuildError(SeglogError):
    """Kafka's recovery itself would fail on this segment (not damage it truncates)."""


@dataclass(slots=True)
class IndexFilePlan:
    """One index file: what is there and what recovery would write. ``rebuilt``: the bytes, in
    memory or in the plan's spool (a lean plan keeps none of a file that does not change, and
    none at all when it is only shown: :func:`plan_rebuild`'s ``spool``)."""

    path: Path
    kind: str  # "offset", "time", "txn"
    rebuilt: bytes | SpoolRange | None
    existing_size: int | None  # None: the file does not exist
    action: str  # IDENTICAL, TRIM, CREATE, REWRITE
    detail: str  # one line for people
    rebuilt_size: int = -1  # len(rebuilt), kept when the bytes are not

    def __post_init__(self) -> None:
        if self.rebuilt_size < 0:
            self.rebuilt_size = len(self.rebuilt)

    @property
    def entry_size(self) -> int:
        return ENTRY_SIZES[self.kind]

    @property
    def changes(self) -> bool:
        return self.action != IDENTICAL

    def as_dict(self) -> dict:
        return {"path": str(self.path), "kind": self.kind, "action": self.action, "detail": self.detail,
                "existingBytes": self.existing_size, "rebuiltBytes": self.rebuilt_size,
                "rebuiltEntries": self.rebuilt_size // self.entry_size}


@dataclass(slots=True)
class SegmentPlan:
    """One segment: the walk's outcome and its index files."""

    log_path: Path
    base_offset: int
    log_size: int
    valid_bytes: int = 0
    batches: int = 0
    refused: str | None = None  # why this segment cannot be rebuilt offline as it is
    transactional_batches: int = 0  # only ABORT markers (transactional) make .txnindex entries
    files: list[IndexFilePlan] = field(default_factory=list)

    @property
    def changes(self) -> list[IndexFilePlan]:
        return [f for f in self.files if f.changes]

    def as_dict(self) -> dict:
        return {"log": str(self.log_path), "baseOffset": self.base_offset, "logBytes": self.log_size,
                "validBytes": self.valid_bytes, "batches": self.batches, "refused": self.refused,
                "files": [f.as_dict() for f in self.files]}


@dataclass
class RebuildPlan:
    config: TopicConfig | Mapping[Path, TopicConfig]
    segments: list[SegmentPlan] = field(default_factory=list)
    log_dirs: list[Path] = field(default_factory=list)  # whose .lock must be free to apply
    unreadable: list[str] = field(default_factory=list)
    fingerprint: dict = field(default_factory=dict)  # the directories as planned (write_session)
    # a lean plan counts the segments that change nothing instead of keeping them
    counted_segments: int = 0
    counted_batches: int = 0

    @property
    def segment_count(self) -> int:
        return len(self.segments) + self.counted_segments

    @property
    def batch_count(self) -> int:
        return sum(s.batches for s in self.segments) + self.counted_batches

    @property
    def changes(self) -> list[IndexFilePlan]:
        return [change for segment in self.segments for change in segment.changes]

    @property
    def refused(self) -> list[SegmentPlan]:
        return [segment for segment in self.segments if segment.refused]

    def as_dict(self, with_segments: bool = True) -> dict:
        """``segments``: the segments kept (a lean plan's only count those that change nothing);
        None without ``with_segments`` (a renderer streams them)."""
        single = self.config if isinstance(self.config, TopicConfig) else None  # else: per partition
        return {"version": 1, "indexIntervalBytes": single and single.index_interval_bytes,
                "segmentIndexBytes": single and single.segment_index_bytes,
                "segments": [s.as_dict() for s in self.segments] if with_segments else None,
                "unreadable": self.unreadable,
                "summary": {"segments": self.segment_count, "filesToWrite": len(self.changes),
                            "refused": len(self.refused)}}


# -- the walk ---------------------------------------------------------------------------------

@dataclass
class RecoveredIndexes:
    offset_index: bytes
    time_index: bytes
    valid_bytes: int
    batches: int
    stop: str | None  # why the walk ended before the end of the file
    transactional_batches: int = 0
    next_offset: int = 0  # the offset after the last valid batch (the segment's base when none)
    # positions of the batches the producer-state replay needs (``recover_walk``), when the
    # compiled walk indexed the whole valid prefix; None: replay every batch
    producer_positions: list[int] | None = None


def recover_indexes(mapped: MappedFile, base_offset: int, config: TopicConfig = TopicConfig()) -> RecoveredIndexes:
    """The offset and time index ``LogSegment.recover`` builds for ``mapped`` (a ``.log``):
    the writer's :class:`SegmentIndexer` fed every batch from position 0. A ``.log`` larger than
    2^31 - 1 bytes is refused: Kafka's ``FileRecords`` will not open it and an ``.index``
    position is a 32-bit int, so its entries would wrap."""
    if mapped.size > MAX_SEGMENT_BYTES:
        raise RebuildError(f"the segment is {mapped.size} bytes, larger than the maximum allowed segment size of "
                           f"{MAX_SEGMENT_BYTES} (Kafka refuses to open it; .index positions are 32-bit)",
                           mapped.path)
    indexer = SegmentIndexer(base_offset, config.index_interval_bytes, config.segment_index_bytes, path=mapped.path)
    start, fast_batches, producers = 0, 0, None
    compiled = native.module
    if compiled is not None and mapped.size:
        start, fast_batches, producers = _recover_compiled(indexer, mapped, compiled)
    scan = LogScan(mapped, start, resync=False)
    try:
        valid_bytes, batches, stopped = indexer.recover(scan.chunks(), start)
    except WriterError as exc:
        raise RebuildError(exc.message, mapped.path, exc.position, exc.offset) from None
    if batches:
        producers = None  # Python's loop indexed some of it: the producer replay walks the segment itself
    batches += fast_batches
    stop = None
    if stopped is not None:
        if stopped.is_valid:
            last = stopped.last_offset
            raise RebuildError(f"offset {last} does not fit segment {base_offset} (relative offset overflow: "
                               "Kafka splits such a segment at start-up)", mapped.path, stopped.position, last)
        stop = (f"the batch at position {stopped.position} fails its "
                f"{'size check' if stopped.size < stopped.min_size else 'CRC check'}")
    elif valid_bytes < mapped.size:
        error = scan.kafka_error
        stop = (error.message if error is not None else
                f"{mapped.size - valid_bytes} bytes after the last complete batch (a torn or zero-filled tail)")
    try:
        indexer.close()
    except WriterError as exc:
        raise RebuildError(exc.message, mapped.path, exc.position, exc.offset) from None
    return RecoveredIndexes(bytes(indexer.offset_index), bytes(indexer.time_index), valid_bytes, batches, stop,
                            indexer.transactional_batches, indexer.next_offset, producers)


def _recover_compiled(indexer: SegmentIndexer, mapped: MappedFile, compiled) -> tuple[int, int, list[int]]:
    """The compiled recovery walk, ``WALK_CHUNK`` bytes at a time with the pages behind dropped
    in between, so a 1 GiB segment is never resident at once. Each call's state carries into the
    next; its producer positions are concatenated, a chunk's closing repeat of its last batch
    (when its list ends with one) dropped but the final one's: the replay takes every run's first
    and last batch in order, and the very last batch once more to set the map end offset."""
    position, batches, producers, chunk, repeated = 0, 0, [], WALK_CHUNK, False
    while True:
        end = min(mapped.size, position + chunk)
        stopped, count, positions = indexer.recover_compiled(mapped.buffer, position, end, compiled)
        batches += count
        if repeated and positions:
            producers.pop()  # the previous chunk's repeat of its last batch: more batches follow it
        producers.extend(positions)
        repeated = positions[-1] in positions[:-1] if positions else repeated
        if stopped >= mapped.size or not count and end == mapped.size:
            return stopped, batches, producers
        chunk = WALK_CHUNK if count else chunk * 4  # a batch larger than the chunk: a longer reach
        position = stopped
        mapped.release_behind(position)


# -- planning ---------------------------------------------------------------------------------

def plan_rebuild(paths: list[str], config: TopicConfig | Mapping[Path, TopicConfig] = TopicConfig(),
                 txn_index: bool = True, fingerprint: bool = True, spool: Spool | Tally | None = None,
                 on_segment: Callable[[SegmentPlan], None] | None = None) -> RebuildPlan:
    """What rebuilding the indexes of ``paths`` (segment files, partition dirs, log dirs, trees
    of log dirs) would change. Nothing is written. ``config``: one for all, or each partition
    dir's own (``config_for``).

    ``fingerprint``: take each directory's fingerprint as it is planned, so that applying later
    refuses when anything changed since (False under the log dirs' locks, or when the plan is
    only shown). ``spool``: None keeps every rebuilt file in memory and every segment in
    ``plan.segments``; a lean plan (a :class:`~seglog_cli.storage.write.durable.Spool`, whose
    bytes :func:`apply_rebuild` writes, or a :class:`~seglog_cli.storage.write.durable.Tally`
    for a plan only shown) keeps the new bytes of the files that change there, nothing of those
    that do not, and only counts the segments that change nothing. ``on_segment(segment_plan)``
    sees every segment once its plan is complete (a command shows them as they come)."""
    plan = RebuildPlan(config)
    # each segment once: partition dirs planned whole, and segments given alone (not one entry per
    # segment of a log dir: 10^5 of them)
    whole_dirs: set[str] = set()
    single_segments: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        problem = regular_file_problem(path)
        if problem is not None and problem != NOT_A_FILE_DIRECTORY:
            plan.unreadable.append(f"{raw}: {'no such file or directory' if problem == 'no such file' else problem}")
            continue
        whole = problem == NOT_A_FILE_DIRECTORY  # a directory: its partitions are planned whole
        for log_dir, segments, partition in _segments_of(path, plan):
            if log_dir not in plan.log_dirs:
                plan.log_dirs.append(log_dir)
            if partition is not None and fingerprint:  # each directory once: the log dir's listing is not taken per partition
                unseen = [d for d in plan_directories([partition.path]) if str(d) not in plan.fingerprint]
                plan.fingerprint.update(take_fingerprint(unseen))
            planned = []
            unusable = {} if partition is None else dict(partition.files.unusable)
            plan.unreadable.extend(f"{entry}: {why}" for entry, why in unusable.items()
                                   if path.is_dir() or entry.name.startswith(path.name.split(".")[0]))
            for segment in segments:
                if str(segment.log_path.parent) in whole_dirs or segment.log_path in single_segments:
                    continue
                if not whole:
                    single_segments.add(segment.log_path)
                if any(p in unusable for p in (segment.index_path, segment.time_index_path, segment.txn_index_path)):
                    continue  # named above; nothing is planned over it
                planned.append(plan_segment(segment, config_for(config, segment.log_path.parent)))
            if partition is not None and whole:
                whole_dirs.add(str(partition.path))
            if txn_index and partition is not None and any(p.transactional_batches or _has_txn_index(p) for p in planned):
                _plan_txn_indexes(partition, planned)
            for segment_plan in planned:
                _keep(plan, segment_plan, spool, on_segment)
    return plan


def _keep(plan: RebuildPlan, planned: SegmentPlan, spool: Spool | Tally | None, on_segment) -> None:
    """One segment's finished plan: shown, then kept (lean: its changed files' bytes spooled,
    and the segment only counted when it changes nothing)."""
    if spool is not None:
        for change in planned.files:
            if not change.changes:
                change.rebuilt = None
            elif isinstance(change.rebuilt, bytes):
                start = len(spool)
                spool.write(change.rebuilt)
                change.rebuilt = spool.range(start, len(spool))
    if on_segment is not None:
        on_segment(planned)
    if spool is not None and not planned.refused and not planned.changes:
        plan.counted_segments += 1
        plan.counted_batches += planned.batches
        return
    plan.segments.append(planned)


def _has_txn_index(planned: "SegmentPlan") -> bool:
    return planned.log_path.with_suffix(".txnindex").exists()


def _plan_txn_indexes(partition: PartitionLog, planned: list["SegmentPlan"]) -> None:
    """Add the ``.txnindex`` each planned segment's recovery would write: the producer state
    at the log start (Kafka keeps no snapshot at or below it), then every segment replayed in
    order, aborted transactions collected where their ABORT marker is."""
    wanted = {p.base_offset: p for p in planned if not p.refused}
    if not wanted or not partition.segments:
        return
    manager = rebuild_producer_state(partition, up_to_offset=partition.segments[0].base_offset).manager
    for segment in partition.segments:
        replay = replay_segment(manager, segment)
        segment.close()
        target = wanted.get(segment.base_offset)
        if target is not None:
            data = replay.txn_index_bytes()
            if data or segment.txn_index_path.exists():
                target.files.append(_compare(segment.txn_index_path, "txn", data))
        if replay.stopped_at is not None:
            return  # the segments after damage are refused anyway


def _segments_of(path: Path, plan: RebuildPlan):
    """(log dir, segments, partition log or None) for one argument."""
    if path.is_file():
        parsed = parse_segment_file_name(path.name)
        if offset_out_of_range(path.name):
            plan.unreadable.append(f"{path}: {OFFSET_OUT_OF_RANGE}")
            return
        if parsed is None or parsed.is_temp:
            plan.unreadable.append(f"{path}: not a segment file (a .log, .index, .timeindex or .txnindex)")
            return
        log_path = path.with_name(path.name[: path.name.index(parsed.suffix)] + ".log")
        if not log_path.is_file():
            plan.unreadable.append(f"{path}: no {log_path.name} beside it to rebuild from")
            return
        partition = PartitionLog(path.parent)
        segment = next((s for s in partition.segments if s.log_path == log_path), LogSegment(log_path))
        yield path.parent.absolute().parent, [segment], partition
        return
    partitions = partition_dirs_under(path)
    if not partitions:
        plan.unreadable.append(f"{path}: no Kafka log dir or partition directory in this directory")
    for partition_dir in partitions:
        partition = PartitionLog(partition_dir)
        yield partition_dir.absolute().parent, partition.segments, partition


def plan_segment(segment: LogSegment, config: TopicConfig = TopicConfig()) -> SegmentPlan:
    try:
        mapped = MappedFile(segment.log_path)
    except SeglogError as exc:
        return SegmentPlan(segment.log_path, segment.base_offset, 0, refused=exc.message)
    with mapped:
        plan = SegmentPlan(segment.log_path, segment.base_offset, mapped.size)
        try:
            recovered = recover_indexes(mapped, segment.base_offset, config)
        except RebuildError as exc:
            plan.refused = f"{exc} (Kafka's recovery fails here too; nothing can be rebuilt)"
            return plan
    plan.valid_bytes, plan.batches = recovered.valid_bytes, recovered.batches
    plan.transactional_batches = recovered.transactional_batches
    if recovered.stop is not None:
        plan.refused = (f"the .log is valid only up to position {recovered.valid_bytes} of {mapped.size}: "
                        f"{recovered.stop}; Kafka's recovery would truncate it there (and delete later segments "
                        f"if this is not the last one): run `seglog recover` first")
        return plan
    plan.files.append(_compare(segment.index_path, "offset", recovered.offset_index))
    plan.files.append(_compare(segment.time_index_path, "time", recovered.time_index))
    return plan


def _compare(path: Path, kind: str, rebuilt: bytes) -> IndexFilePlan:
    """What writing ``rebuilt`` over the index file at ``path`` changes. The file is mapped,
    not read: only as many bytes as ``rebuilt`` holds (and one entry more) are compared, the
    rest is checked to be zeros, so a huge or sparse index costs no memory."""
    size = ENTRY_SIZES[kind]
    entries = len(rebuilt) // size
    if not is_present(path):
        return IndexFilePlan(path, kind, rebuilt, None, CREATE, f"missing; recovery writes {entries} entries")
    with MappedFile(path) as mapped:
        total = mapped.size
        existing = bytes(mapped.view[:len(rebuilt) + size])
        zero_tail = mapped.find_non_zero(len(existing)) is None
    if total == len(rebuilt) and existing == rebuilt:
        return IndexFilePlan(path, kind, rebuilt, total, IDENTICAL, f"identical ({entries} entries)")
    if zero_tail and existing[:len(rebuilt)] == rebuilt and not any(existing[len(rebuilt):]):
        return IndexFilePlan(path, kind, rebuilt, total, TRIM,
                             f"same {entries} entries; {total - len(rebuilt)} zero bytes of preallocation "
                             "trimmed")
    kept = _entries_before_zero_tail(existing, size) if zero_tail else total // size + 1
    if kept < entries and rebuilt[:kept * size] == existing[:kept * size]:
        more = entries - kept
        why = (" (the final time index entry Kafka writes when it closes the segment)"
               if kind == "time" and more == 1 else "")
        trimmed = total - kept * size
        return IndexFilePlan(path, kind, rebuilt, total, REWRITE,
                             f"keeps the {kept} existing entries and adds {more}{why}"
                             + (f"; {trimmed} zero bytes of preallocation trimmed" if trimmed else ""))
    first = _first_difference(existing, rebuilt, size)
    old = _entry_text(kind, existing, first, size)
    new = _entry_text(kind, rebuilt, first, size)
    return IndexFilePlan(path, kind, rebuilt, total, REWRITE,
                         f"differs from entry {first}: existing {old}, rebuilt {new} "
                         f"({total // size} entries vs {entries})")


def _entries_before_zero_tail(data: bytes, size: int) -> int:
    """Whole entries before the trailing run of zero bytes (Kafka's preallocated tail)."""
    end = len(data.rstrip(b"\0"))
    return -(-end // size)


def _first_difference(a: bytes, b: bytes, size: int) -> int:
    lo, hi = 0, min(len(a), len(b)) // size
    while lo < hi:  # largest common prefix of whole entries, by bisection on slices
        mid = (lo + hi + 1) // 2
        if a[:mid * size] == b[:mid * size]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _entry_text(kind: str, data: bytes, n: int, size: int) -> str:
    if (n + 1) * size > len(data):
        return "none"
    if kind == "offset":
        relative, position = OFFSET_ENTRY.unpack_from(data, n * size)
        return f"(relative offset {relative}, position {position})"
    if kind == "time":
        timestamp, relative = TIME_ENTRY.unpack_from(data, n * size)
        return f"(timestamp {timestamp}, relative offset {relative})"
    _, pid, first, last, lso = ABORTED_TXN.unpack_from(data, n * size)
    return f"(producer {pid}, first offset {first}, last offset {last}, last stable offset {lso})"


# -- applying ---------------------------------------------------------------------------------

@dataclass
class ApplyResult:
    written: list[Path]
    backup_dir: Path | None


def apply_rebuild(plan: RebuildPlan, backup_root: str | Path | None = None,
                  session: WriteSession | None = None) -> ApplyResult:
    """Write every planned change through the write protocol (``session``: the command's, taken
    before it planned; without one the log dirs are locked here and the plan re-validated).

    Refuses (raises) when any segment was refused: nothing is written then, nor for a plan made
    to be shown only (``plan_rebuild(spool=Tally())``)."""
    if any(isinstance(c.rebuilt, SpoolRange) and isinstance(c.rebuilt.spool, Tally) for c in plan.changes):
        raise RebuildError("internal: this plan was made to be shown only (plan_rebuild(spool=Tally())); plan again "
                           "with a session's spool to apply it")
    if plan.refused:
        raise RebuildError(f"{len(plan.refused)} segment(s) cannot be rebuilt as they are (first: "
                           f"{plan.refused[0].log_path}: {plan.refused[0].refused}); nothing was written",
                           plan.refused[0].log_path)
    steps = [FileStep("write", change.path, f"{change.kind} index: {change.detail}", data=change.rebuilt)
             for change in plan.changes]
    if session is None:
        with WriteSession(plan.log_dirs, "rebuild-index", backup_root) as session:
            return apply_rebuild(plan, backup_root, session)
    backup_dir = session.apply(steps, plan.fingerprint) if steps else None
    return ApplyResult([change.path for change in plan.changes], backup_dir)


__all__ = ["ApplyResult", "IndexFilePlan", "RebuildError", "RebuildPlan", "RecoveredIndexes", "SegmentPlan",
           "apply_rebuild", "plan_rebuild", "plan_segment", "recover_indexes"]
