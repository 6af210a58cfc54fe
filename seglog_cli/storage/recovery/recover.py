"""Kafka's start-up log loading and recovery (§15), offline: planned, then applied with backups.

Per partition, in Kafka's order (``LogLoader.load``):

1. temp files: ``.deleted`` removed; ``.cleaned`` removed, and with them every ``.swap`` at or
   above the lowest cleaned base offset (an interrupted split); the remaining ``.swap`` files are
   completed: the segments they replace (names in [min swap base, max swap end)) are removed and
   the ``.swap`` suffixes dropped;
2. index files without their ``.log`` removed; a segment whose ``.index`` is missing (or whose
   ``.txnindex`` fails its sanity check) is recovered whatever the shutdown was;
3. without ``.kafka_cleanshutdown`` in the log dir, every segment from the one holding the
   recovery point on is recovered (``LogSegment.recover``: indexes rebuilt batch by batch, the
   ``.txnindex`` from the producer state, the ``.log`` truncated at the first invalid batch);
   when a segment loses bytes, every later segment is removed; a segment whose offsets overflow
   its base is split (``segment_split``) and the pieces recovered as Kafka's second load does;
4. the log end offset, the log start offset (``max(checkpoint, first base)``), the
   leader-epoch-checkpoint cut to the log end and the log start, producer snapshots (one at the
   end of each recovered segment, strays removed, one at the log end offset), the recovery point
   and the high watermark clamped into [log start, log end].

``mode="salvage"`` keeps what Kafka would throw away: the batches after a damaged region (the
region alone is cut out, found by the same resync as verify) and the later segments. The plan
names the offsets each mode loses.

Everything removed or replaced goes through the write protocol (:mod:`seglog_cli.storage.write.write_session`:
the log dir's lock taken before planning, a journal, the original bytes and a manifest in
``seglog-backups/`` beside the log dir); later segments are removed before a truncation, the last
first, so the log stays a valid prefix of itself at every instant.
"""

from __future__ import annotations

import bisect
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from seglog_cli.storage.log.batches import INT32_MAX, LogScan
from seglog_cli.storage.log.checkpoints import (EpochEntry, TopicPartition, format_leader_epoch_checkpoint,
                                            format_offset_checkpoint, read_leader_epoch_checkpoint,
                                            read_offset_checkpoint)
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import MappedFile, has_contents
from seglog_cli.storage.log.indexes import TransactionIndex, format_aborted_txns
from seglog_cli.storage.log.log_dir_files import (CLEAN_SHUTDOWN, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
                                              REPLICATION_CHECKPOINT)
from seglog_cli.storage.log.naming import OFFSET_OUT_OF_RANGE, format_offset, parse_partition_dir_name, parse_segment_file_name
from seglog_cli.storage.log.parallel import parallel_map
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.producer_state import (ProducerStateManager, rebuild_producer_state, recover_batch,
                                              replay_positions, replay_segment)
from seglog_cli.storage.write.rebuild_index import RebuildError, recover_indexes
from seglog_cli.storage.write.journal import FileStep
from seglog_cli.storage.write.segment_split import split_overflowed
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.config.topic_config import TopicConfig, config_for
from seglog_cli.storage.write.writer import SegmentIndexer, WriterError
from seglog_cli.storage.write.write_session import WriteSession, plan_directories, take_fingerprint

KAFKA, SALVAGE = "kafka", "salvage"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class RecoverError(SeglogError):
    """A partition recover cannot plan (Kafka itself would fail to load it)."""


@dataclass
class Step:
    """One change: ``op`` is "remove", "rename", "truncate", "replace" or "cut" (salvage: remove
    a byte range from the middle of a ``.log``)."""

    op: str
    path: Path
    why: str
    target: Path | None = None  # rename
    size: int | None = None  # truncate
    data: bytes | None = None  # replace / cut (the new contents)
    offsets_lost: tuple[int, int] | None = None  # [first, last] no longer readable
    kept: tuple[tuple[int, int], ...] | None = None  # salvage: the new contents are these [start, end) of the file

    @property
    def new_size(self) -> int | None:
        """The size of the new contents of a "replace" step (None for the other ops)."""
        if self.kept is not None:
            return sum(end - start for start, end in self.kept)
        return None if self.data is None else len(self.data)

    def as_dict(self) -> dict:
        out = {"op": self.op, "path": str(self.path), "why": self.why}
        if self.target is not None:
            out["target"] = str(self.target)
        if self.size is not None:
            out["size"] = self.size
        if self.new_size is not None:
            out["bytes"] = self.new_size
        if self.offsets_lost is not None:
            out["offsetsLost"] = list(self.offsets_lost)
        return out


@dataclass(frozen=True)
class DamagedRange:
    """Bytes of a ``.log`` that a plan removes as damage: the region salvage cuts out, or the
    tail Kafka's truncation drops (the valid batches after the damage included).

    ``offsets``: what the bytes held, as the plan knows it: ``NO_OFFSETS`` (zero bytes, or the
    next valid batch continues where the last one ended), ``KNOWN`` (``first..last``, from the
    valid batches around the range or the header of a torn batch), ``UNKNOWN`` (no batch header
    can be read in the bytes, so the offsets they held cannot be named; ``first`` is the one
    offset known when there is one)."""

    path: Path
    position: int
    length: int
    offsets: str
    first: int | None = None
    last: int | None = None
    why: str = ""  # the same in words, for people

    @property
    def offset_count(self) -> int | None:
        if self.offsets == NO_OFFSETS:
            return 0
        if self.offsets == KNOWN:
            return self.last - self.first + 1
        return None

    def as_dict(self) -> dict:
        return {"path": str(self.path), "position": self.position, "bytes": self.length, "offsets": self.offsets,
                "firstOffset": self.first, "lastOffset": self.last, "offsetCount": self.offset_count,
                "why": self.why}


NO_OFFSETS, KNOWN, UNKNOWN = "none", "known", "unknown"


@dataclass
class KeptBeyond:
    """The valid batches a plan keeps after the first damaged range of a partition (in the
    damaged segment after the cut, and in every later segment): what salvage keeps and Kafka's
    truncation would drop (always nothing in ``--mode kafka``). A legacy (v0/v1) entry counts as
    one record (a compressed wrapper is not opened)."""

    batches: int = 0
    records: int = 0
    first: int | None = None
    last: int | None = None

    def add(self, batch) -> None:
        self.batches += 1
        self.records += batch.records_count if batch.records_count is not None else 1
        if self.first is None:
            self.first = batch.base_offset
        self.last = batch.last_offset

    def as_dict(self) -> dict:
        return {"batches": self.batches, "records": self.records, "firstOffset": self.first, "lastOffset": self.last}


@dataclass
class PartitionRecovery:
    path: Path
    mode: str
    clean_shutdown: bool
    recovery_point: int
    steps: list[Step] = field(default_factory=list)
    recovered_segments: list[int] = field(default_factory=list)
    log_start_offset: int = 0
    log_end_offset: int = 0
    bytes_truncated: int = 0
    offsets_lost: list[tuple[int, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lowered_log_start: int | None = None  # salvage: the log start offset checkpoint lowered to this
    refused: str | None = None  # why nothing is planned for this partition
    damaged_ranges: list[DamagedRange] = field(default_factory=list)  # in log order
    kept_beyond: KeptBeyond = field(default_factory=KeptBeyond)
    recovered_bytes: int = 0  # the size of the .log files of recovered_segments (what start-up re-reads)
    removed_segments: list[int] = field(default_factory=list)  # segments removed whole (after a truncation...)
    removed_bytes: int = 0  # the size of their .log files (not in bytes_truncated)

    @property
    def flushed_offsets_lost(self) -> tuple[int, int] | None:
        """Offsets below the recovery point (so flushed to disk once) that the log no longer
        holds after the plan and that ``offsets_lost`` does not name (their bytes are zeros or
        no longer carry a readable header): [first, last], or None."""
        if self.refused is not None:
            return None
        named = max([self.log_end_offset - 1] + [last for _, last in self.offsets_lost if last is not None])
        return (named + 1, self.recovery_point - 1) if self.recovery_point - 1 > named else None

    @property
    def offset_count_lost(self) -> int:
        """How many offsets ``offsets_lost`` names (the ranges are disjoint)."""
        return sum(last - first + 1 for first, last in self.offsets_lost if last is not None)

    def as_dict(self) -> dict:
        return {"path": str(self.path), "mode": self.mode, "cleanShutdown": self.clean_shutdown,
                "recoveryPoint": self.recovery_point, "recoveredSegments": self.recovered_segments,
                "logStartOffset": self.log_start_offset, "logEndOffset": self.log_end_offset,
                "bytesTruncated": self.bytes_truncated,
                "offsetsLost": [list(r) for r in sorted(self.offsets_lost, key=lambda r: r[0])],
                "offsetCountLost": self.offset_count_lost, "recoveredBytes": self.recovered_bytes,
                "removedSegments": self.removed_segments, "removedSegmentBytes": self.removed_bytes,
                "flushedOffsetsLost": None if self.flushed_offsets_lost is None else list(self.flushed_offsets_lost),
                "damagedRanges": [r.as_dict() for r in self.damaged_ranges],
                "keptBeyondDamage": self.kept_beyond.as_dict(),
                "steps": [s.as_dict() for s in self.steps], "notes": self.notes, "refused": self.refused}


@dataclass
class RecoveryPlan:
    mode: str
    partitions: list[PartitionRecovery] = field(default_factory=list)
    log_dir_steps: dict[Path, list[Step]] = field(default_factory=dict)
    fingerprint: dict = field(default_factory=dict)  # the directories as planned (write_session)

    @property
    def steps(self) -> list[Step]:
        return [s for p in self.partitions for s in p.steps] + [s for v in self.log_dir_steps.values() for s in v]

    def as_dict(self) -> dict:
        return {"version": 1, "mode": self.mode, "partitions": [p.as_dict() for p in self.partitions],
                "logDirSteps": [s.as_dict() for v in self.log_dir_steps.values() for s in v],
                "summary": {"partitions": len(self.partitions), "steps": len(self.steps),
                            "bytesTruncated": sum(p.bytes_truncated for p in self.partitions),
                            "refused": sum(1 for p in self.partitions if p.refused is not None),
                            "offsetRangesLost": sum(len(p.offsets_lost) for p in self.partitions),
                            "offsetCountLost": sum(p.offset_count_lost for p in self.partitions),
                            "recoveredSegments": sum(len(p.recovered_segments) for p in self.partitions),
                            "recoveredBytes": sum(p.recovered_bytes for p in self.partitions),
                            "removedSegments": sum(len(p.removed_segments) for p in self.partitions),
                            "removedSegmentBytes": sum(p.removed_bytes for p in self.partitions),
                            "damagedRanges": sum(len(p.damaged_ranges) for p in self.partitions),
                            "damagedBytes": sum(r.length for p in self.partitions for r in p.damaged_ranges),
                            "keptBeyondDamage": {
                                "batches": sum(p.kept_beyond.batches for p in self.partitions),
                                "records": sum(p.kept_beyond.records for p in self.partitions)}}}


# -- the log dir context --------------------------------------------------------------------------

@dataclass
class _LogDirState:
    path: Path
    clean_shutdown: bool
    recovery_points: dict
    log_starts: dict
    high_watermarks: dict


def _log_dir_state(log_dir: Path) -> _LogDirState:
    def offsets(name):
        path = log_dir / name
        try:
            return dict(read_offset_checkpoint(path)) if path.is_file() else {}
        except SeglogError:
            return {}  # Kafka: errors reading these at load mean "empty"
    return _LogDirState(log_dir, (log_dir / CLEAN_SHUTDOWN).exists(), offsets(RECOVERY_POINT_CHECKPOINT),
                        offsets(LOG_START_OFFSET_CHECKPOINT), offsets(REPLICATION_CHECKPOINT))


# -- planning ---------------------------------------------------------------------------------------

def plan_recover(partition_dirs: list[Path], mode: str = KAFKA,
                 config: TopicConfig | Mapping[Path, TopicConfig] = TopicConfig(),
                 jobs: int = 1, on_partition=None) -> RecoveryPlan:
    """The recovery of ``partition_dirs``; ``jobs`` partitions at a time in parallel processes
    (Kafka: ``num.recovery.threads.per.data.dir``; segments of a partition go in order).
    ``config``: one for all, or each partition dir's own (``config_for``).
    ``on_partition(partition_recovery)`` is called as each partition is planned (progress)."""
    if mode not in (KAFKA, SALVAGE):
        raise RecoverError(f"unknown mode {mode!r} (kafka or salvage)")
    plan = RecoveryPlan(mode)
    states: dict[Path, _LogDirState] = {}
    directories = [Path(d).absolute() for d in partition_dirs]
    plan.fingerprint = take_fingerprint(plan_directories(directories))
    for directory in directories:
        states.setdefault(directory.parent, _log_dir_state(directory.parent))
    deliver = None if on_partition is None else (lambda _index, result: on_partition(result))
    plan.partitions = parallel_map(lambda d: plan_partition(d, states[d.parent], mode, config_for(config, d)),
                                   directories, jobs,
                                   on_result=deliver)
    for log_dir, state in states.items():
        plan.log_dir_steps[log_dir] = _checkpoint_steps(state, [p for p in plan.partitions if p.path.parent == log_dir])
    return plan


@dataclass
class _Work:
    """One partition being planned: the directory as the plan leaves it and what the walks
    learnt on the way."""

    directory: Path
    out: PartitionRecovery
    config: TopicConfig
    files: dict[str, Path]  # final name -> source path, after the temp-file passes
    partition: PartitionLog
    snapshots: "_SnapshotModel"
    ends: dict[Path, int] = field(default_factory=dict)  # .log -> its next offset, where a walk found it
    salvaged_from: int | None = None  # base of the first salvaged segment
    salvaged: set[int] = field(default_factory=set)  # bases of the segments salvage rewrote
    first_damaged: int | None = None  # base of the first segment salvage cut damage out of
    snapshot_data: dict[int, bytes] = field(default_factory=dict)  # producer state at a recovered segment's end
    clear_epochs: bool = False  # every segment deleted: the leader epochs go too
    scratch_dir: Path | None = None  # split pieces, read while planning (removed at the end)

    def scratch(self) -> Path:
        if self.scratch_dir is None:
            self.scratch_dir = Path(tempfile.mkdtemp(prefix="seglog-split-"))
        return self.scratch_dir

    def log(self, segments: list[LogSegment]) -> PartitionLog:
        """The partition as the plan leaves it, for the producer-state replay."""
        return self.partition.with_segments(segments)


def plan_partition(directory: Path, state: _LogDirState, mode: str, config: TopicConfig) -> PartitionRecovery:
    name = parse_partition_dir_name(directory.name)
    tp = TopicPartition(name.topic, name.partition) if name is not None else None
    recovery_point = state.recovery_points.get(tp, 0)
    log_start_checkpoint = state.log_starts.get(tp, 0)
    out = PartitionRecovery(directory, mode, state.clean_shutdown, recovery_point)
    if _unusable_files(directory, out):
        return out
    files = _housekeeping(directory, out)
    segments = _segments(directory, files, out)
    # pass 4: segments whose .index is missing or whose .txnindex fails its check are recovered now
    must = {s.base_offset for s in segments if not _has(files, s, ".index") or not _txn_index_sane(files, s)}
    if not state.clean_shutdown:
        bases = [s.base_offset for s in segments]
        start = max(0, bisect.bisect_right(bases, recovery_point) - 1)
        must.update(bases[start:])
    snapshots = _SnapshotModel({parse_segment_file_name(n).base_offset for n in files if n.endswith(".snapshot")},
                               log_start_checkpoint)
    work = _Work(directory, out, config, files, PartitionLog(directory), snapshots)
    try:
        # salvage also cuts the damage out of segments Kafka would not look at (below the recovery
        # point, or after a clean shutdown): they are walked, and recovered only when damaged
        extra = {s.base_offset for s in segments} - must if mode == SALVAGE else set()
        kept = _recover_segments(work, segments, sorted(must | extra), extra)
        if mode == SALVAGE:
            _count_kept_beyond(work, kept)
        _finish(work, kept, log_start_checkpoint)
    except _Refused as exc:
        out.refused, out.steps, out.offsets_lost, out.bytes_truncated = str(exc), [], [], 0
        out.damaged_ranges, out.kept_beyond = [], KeptBeyond()
        out.removed_segments, out.removed_bytes = [], 0
        return out
    finally:
        if work.scratch_dir is not None:
            shutil.rmtree(work.scratch_dir, ignore_errors=True)
    out.steps = [step for step in out.steps if not _no_op(step)]
    return out


def _unusable_files(directory: Path, out: PartitionRecovery) -> bool:
    """Entries that are no regular file (Kafka's loader skips them: a note) or whose offset does
    not fit a long (Kafka's loader fails: the partition is refused). True when refused."""
    for entry, why in PartitionLog(directory).files.unusable:
        if why == OFFSET_OUT_OF_RANGE:
            out.refused = f"{entry.name}: {why}; rename or remove it; nothing is planned for this partition"
            return True
        out.notes.append(f"{entry.name}: {why}; Kafka's loader skips it, and so does this plan")
    return False


def _no_op(step: Step) -> bool:
    """A replacement with the bytes already there (recovery rebuilt what was right)."""
    if step.op != "replace":
        return False
    if step.kept is not None:
        return len(step.kept) == 1 and step.kept[0][0] == 0 and step.kept[0][1] == step.path.stat().st_size
    return has_contents(step.path, step.data)


def _housekeeping(directory: Path, out: PartitionRecovery) -> dict[str, Path]:
    """Passes 1-3 (temp files, swaps): the steps, and the directory as it will then be."""
    files = {p.name: p for p in sorted(directory.iterdir()) if p.is_file()}
    cleaned, swaps = [], []
    for name, path in list(files.items()):
        if name.endswith(".deleted") and not name.endswith(".checkpoint.deleted"):
            out.steps.append(Step("remove", path, "a .deleted file (Kafka removes it at start-up)"))
            del files[name]
        elif name.endswith(".cleaned"):
            cleaned.append(name)
        elif name.endswith(".swap"):
            swaps.append(name)
    min_cleaned = min((parse_segment_file_name(n).base_offset for n in cleaned
                       if parse_segment_file_name(n) is not None), default=None)
    for name in swaps[:]:
        parsed = parse_segment_file_name(name)
        if min_cleaned is not None and parsed is not None and parsed.base_offset >= min_cleaned:
            out.steps.append(Step("remove", files.pop(name), "a .swap of an interrupted segment split"))
            swaps.remove(name)
    for name in cleaned:
        out.steps.append(Step("remove", files.pop(name), "a .cleaned file (an interrupted clean or split)"))
    log_swaps = [n for n in swaps if n.endswith(".log.swap")]
    if log_swaps:
        ranges = []
        for name in log_swaps:
            with MappedFile(files[name]) as mapped:
                base = parse_segment_file_name(name).base_offset
                end = base
                for batch in LogScan(mapped, resync=False):
                    end = batch.next_offset
                ranges.append((base, end))
        low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
        for name, path in list(files.items()):
            parsed = parse_segment_file_name(name)
            if parsed is not None and not name.endswith(".swap") and low <= parsed.base_offset < high:
                out.steps.append(Step("remove", path, f"replaced by the swap segments [{low}, {high})"))
                del files[name]
    for name in swaps:
        target = name[: -len(".swap")]
        out.steps.append(Step("rename", files[name], "completing an interrupted swap", target=directory / target))
        files[target] = files.pop(name)
    return files


def _segments(directory: Path, files: dict[str, Path], out: PartitionRecovery) -> list[LogSegment]:
    segments, orphans = [], []
    for name, path in sorted(files.items()):
        parsed = parse_segment_file_name(name)
        if parsed is None or parsed.is_temp:
            continue
        stem = name[: name.index(parsed.suffix)]
        if parsed.suffix in (".index", ".timeindex", ".txnindex") and stem + ".log" not in files:
            out.steps.append(Step("remove", path, "an index file without its .log (Kafka deletes it)"))
            orphans.append(name)
        elif parsed.suffix == ".log":
            segment = LogSegment(path, parsed.base_offset)
            segment.index_path = files.get(stem + ".index", directory / (stem + ".index"))
            segment.time_index_path = files.get(stem + ".timeindex", directory / (stem + ".timeindex"))
            segment.txn_index_path = files.get(stem + ".txnindex", directory / (stem + ".txnindex"))
            segments.append(segment)
    for name in orphans:
        del files[name]
    return sorted(segments, key=lambda s: s.base_offset)


def _has(files: dict[str, Path], segment: LogSegment, suffix: str) -> bool:
    return format_offset(segment.base_offset) + suffix in files


def _txn_index_sane(files: dict[str, Path], segment: LogSegment) -> bool:
    if not _has(files, segment, ".txnindex"):
        return True
    try:
        TransactionIndex(segment.txn_index_path, segment.base_offset).sanity_check()
    except SeglogError:
        return False
    return True


def _recover_segments(work: _Work, segments: list[LogSegment], recover: list[int],
                      if_damaged: set[int] = frozenset()) -> list[LogSegment]:
    """``recoverSegment`` for each base offset in ``recover`` (in order): the segments kept.
    Those in ``if_damaged`` are recovered only when their walk stops before their end."""
    out = work.out
    if not recover:
        return segments
    log = work.log(segments)
    kept = list(segments)
    manager, previous = None, None
    queue = list(recover)
    while queue:
        base = queue.pop(0)
        segment = next((s for s in kept if s.base_offset == base), None)
        if segment is None:
            continue  # removed after an earlier truncation
        if base in if_damaged:
            if _damaged(segment, work.config):
                out.recovered_segments.append(base)
                out.recovered_bytes += os.path.getsize(segment.log_path)
                _salvage_outside_recovery(work, log, segment)
                previous = None  # the next recovered segment loads the producer state afresh
            continue
        out.recovered_segments.append(base)
        out.recovered_bytes += os.path.getsize(segment.log_path)
        before = [s.base_offset for s in kept if s.base_offset < base]
        if manager is not None and before and before[-1] == previous:
            # the state after the segment just recovered is what Kafka's loader reads back from
            # the snapshot that recovery took at its end: no need to replay the log up to here
            manager.map_end_offset = max(manager.map_end_offset, base)
        else:
            manager = rebuild_producer_state(log, up_to_offset=base).manager
        previous = base
        work.snapshots.rebuild_to(base, [s.base_offset for s in kept])
        mark = len(out.steps)
        try:
            truncated = _recover_one(work, segment, manager)
        except _NeedsSplit:
            out.recovered_segments.remove(base)  # its pieces are listed as Kafka's second load recovers them
            out.recovered_bytes -= os.path.getsize(segment.log_path)
            kept, again = _split(work, segment, kept)
            queue[:0] = again  # Kafka loads again after the split: the pieces it recovers come next
            previous = None
            continue
        if truncated and out.mode == KAFKA:
            # the later segments go first, the last one first, so that the log is a valid prefix
            # of itself at every instant (a truncation before them would leave a hole)
            removals = []
            for victim in sorted((s for s in kept if s.base_offset > base), key=lambda s: -s.base_offset):
                first, last = victim.base_offset, victim.read_next_offset() - 1
                victim.close()
                lost = (first, last) if last >= first else None
                _removed_whole(out, victim)
                for path in _segment_files(work.files, victim):
                    removals.append(Step("remove", path, f"after the truncation of segment {base} (Kafka deletes "
                                                         "every later segment)",
                                         offsets_lost=lost if path.suffix == ".log" else None))
                if lost is not None:
                    out.offsets_lost.append(lost)
            out.steps[mark:mark] = removals
            kept = [s for s in kept if s.base_offset <= base]
            break
    return kept


def _salvage_outside_recovery(work: _Work, log: PartitionLog, segment: LogSegment) -> None:
    """Salvage a damaged segment Kafka's recovery would not look at. The producer snapshots stay
    as the broker wrote them: they were taken with the damaged batches intact, so they hold the
    producers' real history (and after a clean shutdown Kafka trusts them as they are)."""
    manager = rebuild_producer_state(log, up_to_offset=segment.base_offset).manager
    salvaged_from = work.salvaged_from
    _salvage(work, segment, None, manager)
    work.salvaged_from = salvaged_from
    work.out.notes.append(f"salvage: segment {segment.base_offset} lies outside Kafka's recovery range; its damage "
                          "is cut out and the producer snapshots are kept as the broker wrote them")


def _damaged(segment: LogSegment, config: TopicConfig) -> bool:
    """Whether recovery's walk of ``segment`` stops before its end (damage, a torn tail)."""
    with MappedFile(segment.log_path) as mapped:
        try:
            return recover_indexes(mapped, segment.base_offset, config).valid_bytes < mapped.size
        except RebuildError:
            return False  # not damage: left as it is (Kafka would not recover it either)


def _recover_one(work: _Work, segment: LogSegment, manager: ProducerStateManager) -> bool:
    """``LogSegment.recover`` of one segment, then ``recoverSegment``'s snapshot at its end;
    True when bytes were truncated."""
    out, directory = work.out, work.directory
    stem = format_offset(segment.base_offset)
    with MappedFile(segment.log_path) as mapped:
        size = mapped.size
        try:
            recovered = recover_indexes(mapped, segment.base_offset, work.config)
        except RebuildError as exc:
            if "does not fit segment" in exc.message:
                raise _NeedsSplit() from None
            if not exc.message.startswith("Attempt to append an offset"):
                raise _Refused(_refusal(exc, segment)) from None
            # InvalidOffsetException from the index: Kafka truncates the segment to its base offset
            lost = _offsets_after(segment, 0, segment.base_offset)
            out.steps.append(Step("truncate", segment.log_path, f"{exc.message}: Kafka truncates the segment to its "
                                  "base offset", size=0, offsets_lost=lost or (segment.base_offset, None)))
            out.damaged_ranges.append(_truncated_range(segment, 0, size, lost, segment.base_offset,
                                                       "Kafka truncates the segment to its base offset"))
            out.bytes_truncated += size
            if lost is not None:
                out.offsets_lost.append(lost)
            work.ends[segment.log_path] = segment.base_offset
            return True
    valid = recovered.valid_bytes
    if valid < size and out.mode == SALVAGE:
        return _salvage(work, segment, valid, manager)
    work.ends[segment.log_path] = recovered.next_offset
    replay = None
    if recovered.producer_positions is not None:
        replay = replay_positions(manager, segment, recovered.producer_positions, valid)
    if replay is None:
        replay = replay_segment(manager, segment)
    segment.close()
    truncated = valid < size
    if truncated:
        lost = _offsets_after(segment, valid, recovered.next_offset)
        out.steps.append(Step("truncate", segment.log_path,
                              f"{recovered.stop}: Kafka truncates the segment to its valid {valid} bytes",
                              size=valid, offsets_lost=lost))
        out.damaged_ranges.append(_truncated_range(segment, valid, size, lost, recovered.next_offset,
                                                   f"Kafka truncates at position {valid}: {recovered.stop}"))
        out.bytes_truncated += size - valid
        if lost is not None:
            out.offsets_lost.append(lost)
    out.steps.append(Step("replace", directory / (stem + ".index"), "rebuilt by recovery",
                          data=recovered.offset_index))
    out.steps.append(Step("replace", directory / (stem + ".timeindex"), "rebuilt by recovery",
                          data=recovered.time_index))
    txn = replay.txn_index_bytes()
    if txn or segment.txn_index_path.exists():
        out.steps.append(Step("replace", directory / (stem + ".txnindex"), "rebuilt by recovery", data=txn))
    work.snapshots.take(manager.map_end_offset)  # so the next segment need not replay this one
    work.snapshot_data[manager.map_end_offset] = manager.snapshot_bytes()
    return truncated


def _salvage(work: _Work, segment: LogSegment, valid: int | None, manager: ProducerStateManager) -> bool:
    """Salvage: keep every valid batch of the segment, the damaged bytes alone cut out (found
    by verify's resync), indexes and ``.txnindex`` built over what is kept. Returns False (the
    later segments stay). The kept batches are planned as byte ranges of the ``.log`` (runs of
    adjacent batches), copied from the file itself when the step is carried out: a salvaged
    1 GiB segment is never held in memory."""
    out, directory, config = work.out, work.directory, work.config
    stem = format_offset(segment.base_offset)
    indexer = SegmentIndexer(segment.base_offset, config.index_interval_bytes, config.segment_index_bytes,
                             path=segment.log_path)
    kept: list[list[int]] = []  # [start, end) runs of valid batches
    batches, aborted, lost, ranges = 0, [], [], []
    position = last_end = 0
    expected = segment.base_offset
    beyond = bool(out.damaged_ranges)  # an earlier segment of the partition is damaged
    with MappedFile(segment.log_path) as mapped:
        size = mapped.size
        for batch in LogScan(mapped):
            if not batch.is_valid:
                continue
            if batch.position > last_end:  # damaged bytes before this batch: cut out
                ranges.append(_cut_range(segment, last_end, batch.position, expected, batch.base_offset))
                beyond = True
            _index_kept(indexer, segment, position, batch)
            if kept and kept[-1][1] == batch.position:
                kept[-1][1] = batch.end_position
            else:
                kept.append([batch.position, batch.end_position])
            batches += 1
            recover_batch(manager, mapped.buffer, batch, str(segment.log_path), aborted)
            if beyond:
                out.kept_beyond.add(batch)
            position += batch.size
            expected = batch.next_offset
            last_end = batch.end_position
        if last_end < size:
            ranges.append(_tail_range(segment, mapped, last_end, size, expected))
    _index_kept(indexer, segment)
    out.bytes_truncated += size - position
    for cut in ranges:
        if cut.offsets == KNOWN:
            lost.append((cut.first, cut.last))
    out.offsets_lost.extend(lost)
    out.damaged_ranges.extend(ranges)
    work.salvaged.add(segment.base_offset)
    if ranges and work.first_damaged is None:
        work.first_damaged = segment.base_offset
    out.steps.append(Step("replace", segment.log_path,
                          f"salvage: {size - position} damaged bytes cut out, {batches} valid batches kept "
                          + (f"(Kafka would truncate at position {valid})" if valid is not None else
                             "(Kafka's start-up does not look at this segment; fetches would fail on the damage)"),
                          kept=tuple((start, end) for start, end in kept),
                          offsets_lost=lost[0] if len(lost) == 1 else None))
    out.steps.append(Step("replace", directory / (stem + ".index"), "rebuilt over the kept batches",
                          data=bytes(indexer.offset_index)))
    out.steps.append(Step("replace", directory / (stem + ".timeindex"), "rebuilt over the kept batches",
                          data=bytes(indexer.time_index)))
    txn = format_aborted_txns(aborted)
    if txn or segment.txn_index_path.exists():
        out.steps.append(Step("replace", directory / (stem + ".txnindex"), "rebuilt over the kept batches", data=txn))
    work.ends[segment.log_path] = expected
    if work.salvaged_from is None:
        work.salvaged_from = segment.base_offset
    return False


def _index_kept(indexer: SegmentIndexer, segment: LogSegment, position: int | None = None, batch=None) -> None:
    """Index a batch salvage keeps (or, without one, close the indexer); a batch the segment's
    32-bit relative offsets cannot hold, or that the index refuses, refuses the partition."""
    why = None
    if batch is not None and not 0 <= batch.last_offset - segment.base_offset <= INT32_MAX:
        why = (f"the valid batch at position {batch.position} holds offset {batch.last_offset}, which does not "
               "fit the segment (relative offset overflow)")
    else:
        try:
            if batch is None:
                indexer.close()
            else:
                indexer.append(position, batch.size, batch.last_offset, batch.max_timestamp, batch.last_offset)
        except WriterError as exc:
            why = exc.message
    if why is not None:
        raise _Refused(f"segment {segment.base_offset}: salvage cannot index the batches it keeps: {why}; "
                       "nothing is planned for this partition")


class _NeedsSplit(Exception):
    """``LogSegmentOffsetOverflowException``: Kafka splits the segment and loads again."""


def _split(work: _Work, segment: LogSegment, kept: list[LogSegment]) -> tuple[list[LogSegment], list[int]]:
    """``splitOverflowedSegment``: the steps that replace ``segment`` by its pieces; the segments
    kept (the pieces in its place, read from a scratch copy while planning) and the pieces
    Kafka's second load recovers (from the one holding the recovery point on, after an unclean
    shutdown)."""
    out, directory = work.out, work.directory
    with MappedFile(segment.log_path) as mapped:
        try:
            pieces = split_overflowed(mapped, work.config)
        except SeglogError as exc:
            raise _Refused(f"segment {segment.base_offset}: offsets past base + 2^31 - 1, which Kafka splits "
                           f"(KAFKA-6264), but {exc.message}; nothing is planned for this partition") from None
    segment.close()
    names = {format_offset(p.base_offset) + suffix for p in pieces for suffix in (".log", ".index", ".timeindex")}
    for path in _segment_files(work.files, segment):
        if path.name not in names:
            out.steps.append(Step("remove", path, f"segment {segment.base_offset} is split: its offsets overflow "
                                                  "its base (Kafka's splitOverflowedSegment)"))
        del work.files[path.name]
    scratch = work.scratch()
    new_segments = []
    for piece in pieces:
        stem = format_offset(piece.base_offset)
        why = (f"split of segment {segment.base_offset}: offsets {piece.first_offset}..{piece.last_offset} "
               "(Kafka's splitOverflowedSegment)")
        for suffix, data in ((".log", piece.data), (".index", piece.offset_index), (".timeindex", piece.time_index)):
            out.steps.append(Step("replace", directory / (stem + suffix), why, data=data))
        copy = scratch / (stem + ".log")
        copy.write_bytes(piece.data)
        work.files[stem + ".log"] = copy
        part = LogSegment(copy, piece.base_offset)
        part.index_path, part.time_index_path = scratch / (stem + ".index"), scratch / (stem + ".timeindex")
        part.txn_index_path = scratch / (stem + ".txnindex")
        work.ends[copy] = piece.last_offset + 1
        new_segments.append(part)
    kept = sorted([s for s in kept if s is not segment] + new_segments, key=lambda s: s.base_offset)
    out.notes.append(f"segment {segment.base_offset} split into {len(pieces)} segment(s) at "
                     f"{', '.join(str(p.base_offset) for p in pieces)} (KAFKA-6264)")
    if out.clean_shutdown:
        return kept, []
    bases = [s.base_offset for s in kept]
    floor = bases[max(0, bisect.bisect_right(bases, out.recovery_point) - 1)]
    return kept, [p.base_offset for p in pieces if p.base_offset >= floor]


class _Refused(Exception):
    """A partition Kafka's loader would not load as recovery does (the reason is the message)."""


def _refusal(exc: RebuildError, segment: LogSegment) -> str:
    hint = "" if exc.message.startswith("the segment is") else "; raise segment.index.bytes with --config to rebuild it"
    return (f"segment {segment.base_offset}: {exc.message} (Kafka's recovery throws here and the log dir goes "
            f"offline{hint}); nothing is planned for this partition")


def _offsets_after(segment: LogSegment, position: int, first: int) -> tuple[int, int] | None:
    """The offsets a truncation at ``position`` loses: from ``first`` (the next offset after
    the kept batches) to the last offset of any valid batch found after ``position``."""
    last = None
    with MappedFile(segment.log_path) as mapped:
        for batch in LogScan(mapped, position):
            if batch.is_valid:
                last = batch.last_offset
        if last is None:
            claimed = _claimed_offsets(mapped.view, position, mapped.size, first)
            last = None if claimed is None else claimed[0]
    return None if last is None else (first, last)


def _claimed_offsets(view, position: int, size: int, next_offset: int) -> tuple[int, bool] | None:
    """The last offset the invalid v2 batches from ``position`` to the end of the file claim,
    when their headers are there and chain from ``next_offset`` (each starts at the offset after
    the one before), and whether the last is torn (cut short by the end of the file, e.g. a
    power loss mid-write: a producer with acks=1 may have been told these offsets were written)
    rather than complete but damaged (its CRC fails); None when no such header is there
    (garbage, zeros, a header cut short)."""
    last = None
    while size - position >= 27:  # base offset .. last offset delta
        base_offset, length, _epoch, magic = struct.unpack_from(">qiib", view, position)
        (delta,) = struct.unpack_from(">i", view, position + 23)
        if magic != 2 or base_offset != next_offset or length < 49 or delta < 0:
            break
        last, end = base_offset + delta, position + 12 + length
        if end > size:
            return last, True
        position, next_offset = end, last + 1
    return None if last is None else (last, False)


def _truncated_range(segment: LogSegment, valid: int, size: int, lost: tuple[int, int] | None, next_offset: int,
                     why: str) -> DamagedRange:
    """The tail a Kafka truncation drops, with the offsets ``_offsets_after`` found in it."""
    if lost is not None:
        return DamagedRange(segment.log_path, valid, size - valid, KNOWN, lost[0], lost[1],
                            f"{why}; the valid batches after the damage, if any, go with it")
    with MappedFile(segment.log_path) as mapped:
        zeros = mapped.find_non_zero(valid, size) is None
    if zeros:
        return DamagedRange(segment.log_path, valid, size - valid, NO_OFFSETS,
                            why=f"{why}; only zero bytes there")
    return DamagedRange(segment.log_path, valid, size - valid, UNKNOWN, next_offset,
                        why=f"{why}; no batch header can be read there, so the offsets those bytes held (from "
                            f"{next_offset} on, if any) cannot be named")


def _cut_range(segment: LogSegment, start: int, end: int, expected: int, next_base: int) -> DamagedRange:
    """Damaged bytes between two valid batches (or before the first): the offsets between them."""
    if next_base > expected:
        return DamagedRange(segment.log_path, start, end - start, KNOWN, expected, next_base - 1,
                            "the offsets between the valid batches around the damage")
    return DamagedRange(segment.log_path, start, end - start, NO_OFFSETS,
                        why=f"the next valid batch continues at offset {next_base}, where the last one ended")


def _tail_range(segment: LogSegment, mapped: MappedFile, start: int, size: int, expected: int) -> DamagedRange:
    """Damaged bytes after the last valid batch of a segment: a torn batch names its offsets."""
    claimed = _claimed_offsets(mapped.view, start, size, expected)
    if claimed is not None:
        last, torn = claimed
        return DamagedRange(segment.log_path, start, size - start, KNOWN, expected, last,
                            f"a {'torn' if torn else 'damaged'} batch whose header claims these offsets")
    if mapped.find_non_zero(start, size) is None:
        return DamagedRange(segment.log_path, start, size - start, NO_OFFSETS,
                            why="only zero bytes after the last valid batch")
    return DamagedRange(segment.log_path, start, size - start, UNKNOWN, expected,
                        why=f"no complete batch header can be read after the last valid batch, so the offsets "
                            f"those bytes held (from {expected} on, if any) cannot be named")


def _count_kept_beyond(work: _Work, kept: list[LogSegment]) -> None:
    """Salvage: the batches of the kept segments after the first damaged one (those salvage did
    not rewrite; the rewritten ones counted theirs) are kept beyond the damage."""
    out = work.out
    if work.first_damaged is None:
        return
    for segment in kept:
        if segment.base_offset <= work.first_damaged or segment.base_offset in work.salvaged:
            continue
        with MappedFile(segment.log_path) as mapped:
            for batch in LogScan(mapped, resync=False):
                if batch.is_valid:
                    out.kept_beyond.add(batch)


def _segment_files(files: dict[str, Path], segment: LogSegment) -> list[Path]:
    stem = format_offset(segment.base_offset)
    return [files[n] for n in (stem + ".log", stem + ".index", stem + ".timeindex", stem + ".txnindex")
            if n in files]


def _finish(work: _Work, kept: list[LogSegment], log_start_checkpoint: int) -> None:
    """Pass 6: log end and start offsets (every segment deleted when the log ends below its
    start offset, and an empty segment created when none is left), leader epochs, producer
    snapshots."""
    out = work.out
    end = _end_offset(work, kept, log_start_checkpoint)
    if kept and end < log_start_checkpoint:
        if out.mode == KAFKA:
            kept = _delete_all(work, kept, end, log_start_checkpoint)
            end = log_start_checkpoint
        else:
            out.lowered_log_start = kept[0].base_offset
            out.notes.append(f"salvage: the log ends at {end}, below its log start offset checkpoint "
                             f"{log_start_checkpoint} (Kafka would delete every segment); the checkpoint is lowered "
                             f"to {kept[0].base_offset} so the broker keeps them")
            log_start_checkpoint = kept[0].base_offset
    if not kept:
        _create_empty_segment(work, log_start_checkpoint)
        end = log_start_checkpoint
    out.log_end_offset = end
    out.log_start_offset = max(log_start_checkpoint, kept[0].base_offset) if kept else log_start_checkpoint
    _leader_epochs(work.directory, out, work.clear_epochs)
    _snapshots(work, kept)


def _removed_whole(out: PartitionRecovery, segment: LogSegment) -> None:
    out.removed_segments.append(segment.base_offset)
    out.removed_bytes += os.path.getsize(segment.log_path)


def _delete_all(work: _Work, kept: list[LogSegment], end: int, log_start: int) -> list[LogSegment]:
    """``deleteSegmentsIfLogStartGreaterThanLogEnd``: every segment and producer snapshot goes,
    the leader epochs are cleared. Returns the segments left (none)."""
    out = work.out
    out.notes.append(f"the log end offset {end} is below the log start offset checkpoint {log_start}: Kafka deletes "
                     f"every segment and starts an empty one at {log_start}")
    doomed = {format_offset(segment.base_offset) for segment in kept}
    # the rebuilt indexes and truncations of these segments are moot: they go whole
    out.steps = [step for step in out.steps
                 if not (step.op in ("replace", "truncate") and step.path.parent == work.directory
                         and step.path.suffix in (".log", ".index", ".timeindex", ".txnindex")
                         and step.path.name.split(".")[0] in doomed)]
    removals: list[list[Step]] = []
    for segment in kept:
        last = work.ends.get(segment.log_path)
        last = (last if last is not None else segment.read_next_offset()) - 1
        segment.close()
        lost = (segment.base_offset, last) if last >= segment.base_offset else None
        _removed_whole(out, segment)
        removals.append([Step("remove", path, f"the log ends below its start offset {log_start} (Kafka deletes every "
                                              "segment)", offsets_lost=lost if path.suffix == ".log" else None)
                         for path in _segment_files(work.files, segment)])
        if lost is not None:
            out.offsets_lost.append(lost)
    for group in reversed(removals):  # the last segment first: a valid prefix at every instant
        out.steps.extend(group)
    work.snapshots.present.clear()
    work.snapshots.written.clear()
    work.snapshots.log_start = work.snapshots.last_snap = log_start
    work.clear_epochs = True
    return []


def _create_empty_segment(work: _Work, base_offset: int) -> None:
    """``LogSegment.open`` of the empty active segment Kafka creates when no segment is left
    (its indexes as a clean shutdown leaves them: empty)."""
    stem = format_offset(base_offset)
    for suffix in (".log", ".index", ".timeindex"):
        path = work.directory / (stem + suffix)
        if path.name not in work.files or any(s.op == "remove" and s.path == path for s in work.out.steps):
            work.out.steps.append(Step("replace", path, f"the empty active segment Kafka creates at offset "
                                                        f"{base_offset} when no segment is left", data=b""))


def _end_offset(work: _Work, kept: list[LogSegment], log_start: int) -> int:
    """The last kept segment's next offset: from its walk when recovery walked it, else read
    (``LogSegment.readNextOffset``: the last index entry, then a scan)."""
    if not kept:
        return log_start
    last = kept[-1]
    if last.log_path in work.ends:
        return work.ends[last.log_path]
    end = last.read_next_offset()
    last.close()
    return end


def _leader_epochs(directory: Path, out: PartitionRecovery, clear: bool = False) -> None:
    path = directory / LEADER_EPOCH_CHECKPOINT
    if not path.is_file():
        return
    entries = read_leader_epoch_checkpoint(path)
    if clear:  # clearAndFlush
        if entries:
            out.steps.append(Step("replace", path, "leader epochs cleared with the deleted segments",
                                  data=format_leader_epoch_checkpoint([])))
        return
    # truncateFromEnd: entries past the log end go. (Kafka's loader also drops an epoch that starts
    # exactly at the log end, and the broker assigns it again when it is elected leader; seglog
    # keeps that one, so an idle partition's file is not rewritten for nothing.)
    kept = [e for e in entries if e.start_offset <= out.log_end_offset]
    if kept and out.log_start_offset > kept[0].start_offset:  # truncateFromStart
        below = [e for e in kept if e.start_offset <= out.log_start_offset]
        kept = [EpochEntry(below[-1].epoch, out.log_start_offset)] + [e for e in kept if e.start_offset > out.log_start_offset]
    if kept != entries:
        out.steps.append(Step("replace", path, f"leader epochs cut to [{out.log_start_offset}, {out.log_end_offset})",
                              data=format_leader_epoch_checkpoint(kept)))


class _SnapshotModel:
    """Which ``<offset>.snapshot`` files exist as Kafka's loader goes (offsets only; their
    contents are the producer state at those offsets, computed at the end)."""

    def __init__(self, present: set[int], log_start: int):
        self.present = set(present)
        self.original = set(present)
        self.written: set[int] = set()
        self.log_start = log_start
        self.last_snap = max(present, default=log_start)

    def rebuild_to(self, last: int, bases: list[int]) -> None:
        """``rebuildProducerState(lastOffset)``: snapshots above ``last`` or at/below the log
        start deleted; the newest remaining one loaded; snapshots taken at the last two segment
        bases passed while replaying, and at ``last``."""
        self.present = {o for o in self.present if self.log_start < o <= last}
        self.written &= self.present
        loaded = max(self.present, default=None)
        end = loaded if loaded is not None else self.log_start
        self.last_snap = end
        if last > end and bases:
            wanted = {bases[-1], last} | ({bases[-2]} if len(bases) > 1 else set())
            floor = max((b for b in bases if b <= end), default=bases[0])
            for base in bases:
                if floor <= base < last and base in wanted:
                    self.take(max(base, end, self.log_start))
        self.take(last)

    def take(self, offset: int) -> None:
        """``takeSnapshot`` at the map end offset ``offset`` (only when it moved past the last)."""
        if offset > self.last_snap:
            self.present.add(offset)
            self.written.add(offset)
            self.last_snap = offset

    def remove_strays(self, bases: set[int]) -> None:
        strays = sorted(o for o in self.present if o not in bases)
        highest = strays[-1] if strays and bases and strays[-1] >= max(bases) else None
        self.present = {o for o in self.present if o in bases or o == highest}
        self.written &= self.present


def _snapshots(work: _Work, kept: list[LogSegment]) -> None:
    """``removeStraySnapshots`` then ``rebuildProducerState`` to the log end offset; then the
    steps that take the directory from its snapshots to the model's."""
    out, model, directory = work.out, work.snapshots, work.directory
    bases = [s.base_offset for s in kept]
    model.remove_strays(set(bases))
    model.rebuild_to(out.log_end_offset, bases)
    if work.salvaged_from is not None:  # the state above a salvaged segment is Kafka's to rebuild from the log
        model.present = {o for o in model.present if o <= work.salvaged_from}
        model.written = {o for o in model.written if o <= work.salvaged_from}
        out.notes.append(f"salvage: no producer snapshot above offset {work.salvaged_from}; the broker rebuilds the "
                         "producer state from the log at its next start")
    for offset in sorted(model.original - model.present):
        out.steps.append(Step("remove", directory / f"{format_offset(offset)}.snapshot",
                              "a producer snapshot Kafka's loader deletes (stray, or above a recovered segment)"))
    log = work.log(kept)
    for offset in sorted(model.written):
        data = work.snapshot_data.get(offset)
        if data is None:
            data = rebuild_producer_state(log, up_to_offset=offset).manager.snapshot_bytes()
        out.steps.append(Step("replace", directory / f"{format_offset(offset)}.snapshot",
                              "the producer state Kafka's loader snapshots here", data=data))


def _checkpoint_steps(state: _LogDirState, partitions: list[PartitionRecovery]) -> list[Step]:
    steps = []
    points = dict(state.recovery_points)
    marks = dict(state.high_watermarks)
    starts = dict(state.log_starts)
    changed_points = changed_marks = changed_starts = False
    for p in partitions:
        name = parse_partition_dir_name(p.path.name)
        if name is None or p.refused is not None:
            continue
        tp = TopicPartition(name.topic, name.partition)
        if p.lowered_log_start is not None and starts.get(tp) != p.lowered_log_start:
            starts[tp] = p.lowered_log_start
            changed_starts = True
        if points.get(tp) != p.log_end_offset:
            points[tp] = p.log_end_offset
            changed_points = True
        if tp in marks:
            clamped = min(max(marks[tp], p.log_start_offset), p.log_end_offset)
            if clamped != marks[tp]:
                marks[tp] = clamped
                changed_marks = True
    steps_out = steps
    if changed_points and (state.path / RECOVERY_POINT_CHECKPOINT).exists():
        steps.append(Step("replace", state.path / RECOVERY_POINT_CHECKPOINT,
                          "recovery points at the log end offsets (everything below is recovered and fsynced)",
                          data=format_offset_checkpoint(points)))
    if changed_marks:
        steps.append(Step("replace", state.path / REPLICATION_CHECKPOINT,
                          "high watermarks clamped into [log start, log end] as Kafka does at load",
                          data=format_offset_checkpoint(marks)))
    if changed_starts:
        steps.append(Step("replace", state.path / LOG_START_OFFSET_CHECKPOINT,
                          "salvage: log start offsets lowered to the first kept segment",
                          data=format_offset_checkpoint(starts)))
    return [step for step in steps_out if not _no_op(step)]


# -- applying -----------------------------------------------------------------------------------------

@dataclass
class RecoveryResult:
    backup_dir: Path | None
    steps: int


def apply_recover(plan: RecoveryPlan, backup_root: str | Path | None = None,
                  session: WriteSession | None = None) -> RecoveryResult:
    """Carry out the plan through the write protocol, one journal per log dir, every byte
    removed kept in the backup (``seglog undo`` restores it). ``session``: the command's, taken
    before it planned; without one the log dirs are locked here and the plan re-validated."""
    steps = [_file_step(step) for step in plan.steps if step.op != "remove" or os.path.lexists(step.path)]
    if session is None:
        log_dirs = {p.path.parent for p in plan.partitions} | set(plan.log_dir_steps)
        with WriteSession(log_dirs, "recover", backup_root) as session:
            return apply_recover(plan, backup_root, session)
    backup_dir = session.apply(steps, plan.fingerprint) if steps else None
    return RecoveryResult(backup_dir, len(steps))


def _file_step(step: Step) -> FileStep:
    op = {"replace": "write", "cut": "write"}.get(step.op, step.op)
    if step.kept is not None:  # salvage: copied from the .log itself while the step runs
        return FileStep(op, step.path, step.why, source=step.path, ranges=step.kept, offsets=step.offsets_lost)
    return FileStep(op, step.path, step.why, data=step.data, size=step.size, target=step.target,
                    offsets=step.offsets_lost)


__all__ = ["KAFKA", "SALVAGE", "DamagedRange", "KeptBeyond", "PartitionRecovery", "RecoverError", "RecoveryPlan",
           "RecoveryResult", "Step", "apply_recover", "plan_partition", "plan_recover"]
