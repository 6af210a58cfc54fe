"""Recovery of segments (``LogSegment.recover`` and ``recoverSegment``) in both modes: Kafka's
truncation at the first invalid batch, with every later segment removed, or salvage's cut of
the damaged bytes alone; the split of a segment whose offsets overflow its base; the damaged
ranges and the offsets each plan loses."""

from __future__ import annotations

import bisect
import os
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.config.topic_config import TopicConfig
from seglog_cli.storage.log.batch_header import INT32_MAX
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.indexes import format_aborted_txns
from seglog_cli.storage.log.naming import format_offset
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.producer_state import (
    ProducerStateManager,
    rebuild_producer_state,
    recover_batch,
    replay_positions,
    replay_segment,
)
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.recovery.plan import (
    DamagedRange,
    KAFKA,
    KNOWN,
    NO_OFFSETS,
    PartitionRecovery,
    SALVAGE,
    Step,
    UNKNOWN,
)
from seglog_cli.storage.recovery.producer_snapshots import SnapshotModel
from seglog_cli.storage.write.rebuild_index import RebuildError, recover_indexes
from seglog_cli.storage.write.segment_split import split_overflowed
from seglog_cli.storage.write.writer import SegmentIndexer, WriterError


@dataclass
class Work:
    """One partition being planned: the directory as the plan leaves it and what the walks
    learnt on the way."""

    directory: Path
    out: PartitionRecovery
    config: TopicConfig
    files: dict[str, Path]  # final name -> source path, after the temp-file passes (loading.Files)
    partition: PartitionLog | None  # listed when a replay first needs it
    snapshots: "SnapshotModel"
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
        if self.partition is None:
            self.partition = PartitionLog(self.directory)
        return self.partition.with_segments(segments)


def recover_segments(work: Work, segments: list[LogSegment], recover: list[int],
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
                removed_whole(out, victim)
                for path in segment_files(work.files, victim):
                    removals.append(Step("remove", path, f"after the truncation of segment {base} (Kafka deletes "
                                                         "every later segment)",
                                         offsets_lost=lost if path.suffix == ".log" else None))
                if lost is not None:
                    out.offsets_lost.append(lost)
            out.steps[mark:mark] = removals
            kept = [s for s in kept if s.base_offset <= base]
            break
    return kept


def _salvage_outside_recovery(work: Work, log: PartitionLog, segment: LogSegment) -> None:
    """Salvage a damaged segment Kafka's recovery would not look at. The producer snapshots stay
    as the broker wrote them: they were taken with the damaged batches intact, so they hold the
    producers' real history (and after a clean shutdown Kafka trusts them as they are)."""
    manager = rebuild_producer_state(log, up_to_offset=segment.base_offset).manager
    salvaged_from = work.salvaged_from
    _salvage(work, segment, None, manager, snapshot=False)
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


def _recover_one(work: Work, segment: LogSegment, manager: ProducerStateManager) -> bool:
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
                raise Refused(_refusal(exc, segment)) from None
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


def _salvage(work: Work, segment: LogSegment, valid: int | None, manager: ProducerStateManager,
             snapshot: bool = True) -> bool:
    """Salvage: keep every valid batch of the segment, the damaged bytes alone cut out (found
    by verify's resync), indexes and ``.txnindex`` built over what is kept. Returns False (the
    later segments stay). The kept batches are planned as byte ranges of the ``.log`` (runs of
    adjacent batches), copied from the file itself when the step is carried out: a salvaged
    1 GiB segment is never held in memory. With ``snapshot``, the producer state over the kept
    batches is what recovery snapshots at the segment's end (as for a segment recovered whole):
    a run again on the salvaged segment finds the same state and has nothing to do."""
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
    if snapshot:
        manager.map_end_offset = max(manager.map_end_offset, expected)
        work.snapshots.take(manager.map_end_offset)
        work.snapshot_data[manager.map_end_offset] = manager.snapshot_bytes()
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
        raise Refused(f"segment {segment.base_offset}: salvage cannot index the batches it keeps: {why}; "
                       "nothing is planned for this partition")


class _NeedsSplit(Exception):
    """``LogSegmentOffsetOverflowException``: Kafka splits the segment and loads again."""


def _split(work: Work, segment: LogSegment, kept: list[LogSegment]) -> tuple[list[LogSegment], list[int]]:
    """``splitOverflowedSegment``: the steps that replace ``segment`` by its pieces; the segments
    kept (the pieces in its place, read from a scratch copy while planning) and the pieces
    Kafka's second load recovers (from the one holding the recovery point on, after an unclean
    shutdown)."""
    out, directory = work.out, work.directory
    with MappedFile(segment.log_path) as mapped:
        try:
            pieces = split_overflowed(mapped, work.config)
        except SeglogError as exc:
            raise Refused(f"segment {segment.base_offset}: offsets past base + 2^31 - 1, which Kafka splits "
                           f"(KAFKA-6264), but {exc.message}; nothing is planned for this partition") from None
    segment.close()
    names = {format_offset(p.base_offset) + suffix for p in pieces for suffix in (".log", ".index", ".timeindex")}
    for path in segment_files(work.files, segment):
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


class Refused(Exception):
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


def count_kept_beyond(work: Work, kept: list[LogSegment]) -> None:
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


def segment_files(files: dict[str, Path], segment: LogSegment) -> list[Path]:
    stem = format_offset(segment.base_offset)
    return [files[n] for n in (stem + ".log", stem + ".index", stem + ".timeindex", stem + ".txnindex")
            if n in files]


def removed_whole(out: PartitionRecovery, segment: LogSegment) -> None:
    out.removed_segments.append(segment.base_offset)
    out.removed_bytes += os.path.getsize(segment.log_path)
