"""Repairing a damaged replica from a healthy one, byte for byte (``seglog repair --from``).

Followers append the leader's batches as they are, and segments roll at the same base offsets
where replicas agree, so a damaged range of one replica (a batch failing its CRC, a corrupt
region, a zeroed range, a torn tail) sits intact at the same positions of the same segment on
another. For each damaged stretch of a segment of DAMAGED, :func:`plan_repair` finds the good
batches either side of it and takes HEALTHY's batches for exactly the offsets in between: they
must start where DAMAGED's damage starts (same position, the next expected offset), end where
its next good batch starts (same position and offset), carry valid CRCs and the leader epochs
DAMAGED's own ``leader-epoch-checkpoint`` gives those offsets. Anything else is refused
(:class:`RepairRefused`): the replicas diverge there, or HEALTHY is damaged too. The repaired
segment is written whole (assembled in a staging file beside the backups), its ``.index`` and
``.timeindex`` rebuilt as Kafka's recovery builds them.

A segment DAMAGED lacks in the middle of its log (``seglog diff`` reports the stretch as a
hole: the batches either side are the same on both) is restored whole from HEALTHY when it is
exactly HEALTHY's segments between two segments DAMAGED holds, every batch valid and in the
leader epoch DAMAGED's checkpoint gives its offsets (:func:`_plan_missing`), with HEALTHY's producer
snapshots for those offsets that DAMAGED lacks.

``tail=True`` also appends what DAMAGED lacks at its end (a cut tail, a lost last segment) when
its log is a prefix of HEALTHY's: the rest of its last segment, HEALTHY's later segments (their
indexes rebuilt), the producer snapshots HEALTHY holds past DAMAGED's old end, and the leader
epochs of the copied batches in its ``leader-epoch-checkpoint``. Those offsets are missing (the
replica lags), not damaged: the plan keeps them apart (:attr:`RepairPlan.missing_at_end`,
:attr:`SegmentRepair.missing_ranges`), and says them without ``tail`` too.

Where the two replicas are different histories (an unclean leader election: another leader
epoch, or the same epoch with other bytes, at an offset both hold) there is no damage to
repair: the plan says where, as ``seglog diff`` finds it (:class:`~seglog_cli.storage.replicas.repair_divergence.Divergence`, from
:func:`~seglog_cli.storage.replicas.replica_comparison.compare`), with what DAMAGED alone holds
and Kafka's truncation would discard; damage below that offset is still planned, damage at or
past it refused.

Planning holds nothing per batch: each segment is read once as chunks of batch header columns
(the scan ``seglog diff`` reads, :func:`~seglog_cli.storage.replicas.replica_scan.column_chunks`) into its
runs of valid batches (byte positions and offsets) and a few single batches, and HEALTHY's
segment is walked forward once for the ranges taken (:mod:`repair_scan`); the repaired segment
is assembled from byte ranges, a chunk at a time (:mod:`repair_apply`).

HEALTHY is only read. Writing goes through :class:`~seglog_cli.storage.write.write_session.WriteSession`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log.checkpoints import EpochEntry
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.naming import parse_segment_file_name
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.replicas.repair_scan import BatchRow, SegmentRuns, SegmentWalk, batch_rows, segment_runs
from seglog_cli.storage.replicas.repair_divergence import Divergence, divergence_of
from seglog_cli.storage.replicas.replica_comparison import compare
from seglog_cli.storage.replicas.replica_scan import scan_replica
from seglog_cli.storage.replicas.replicas import compared_epochs


class RepairRefused(SeglogError):
    """The repair would not restore the healthy replica's bytes (divergence, damage on both
    sides, another topic): nothing is changed."""


@dataclass
class Piece:
    """Bytes ``[start, end)`` of ``source`` (a ``.log`` of DAMAGED or HEALTHY)."""

    source: Path
    start: int
    end: int
    healthy: bool

    def as_dict(self) -> dict:
        return {"from": "healthy" if self.healthy else "damaged", "file": str(self.source), "start": self.start,
                "end": self.end}


@dataclass
class SegmentRepair:
    """One segment of DAMAGED written anew from ``pieces`` (``path`` may not exist yet)."""

    base_offset: int
    path: Path
    pieces: list[Piece]
    ranges: list[tuple[int, int]]  # offsets taken from HEALTHY
    why: str
    new: bool = False
    txn_index: Path | None = None  # HEALTHY's .txnindex, copied when the segment gains offsets (aborts are by offset)
    # HEALTHY's segment and its .index/.timeindex (trimmed, every entry pointing right): copied
    # instead of rebuilt when the repaired segment comes out byte-identical to it
    healthy_segment: Path | None = None
    indexes: str | None = None  # what build_steps chose: "healthy" (HEALTHY's copied) or "rebuilt"
    # offsets from here on in ``ranges`` are ones this replica lacks, not damaged ones: past its
    # old end ("end", --tail) or a segment it lacks in the middle of its log ("middle")
    missing_from: int | None = None
    missing_where: str | None = None

    @property
    def damaged_ranges(self) -> list[tuple[int, int]]:
        """The offsets of ``ranges`` that replace damage (before ``missing_from``)."""
        cut = self.missing_from
        return [(a, b if cut is None else min(b, cut - 1)) for a, b in self.ranges if cut is None or a < cut]

    @property
    def missing_ranges(self) -> list[tuple[int, int]]:
        """The offsets of ``ranges`` this replica lacked (from ``missing_from`` on)."""
        cut = self.missing_from
        return [] if cut is None else [(max(a, cut), b) for a, b in self.ranges if b >= cut]

    @property
    def index_plan(self) -> str:
        """``healthy`` (HEALTHY's .index and .timeindex copied), ``rebuilt``, or, before
        :func:`~seglog_cli.storage.replicas.repair_apply.build_steps` has compared the repaired
        segment with HEALTHY's, ``healthy-if-identical``."""
        if self.indexes is not None:
            return self.indexes
        if self.healthy_segment is None:
            return "rebuilt"
        piece = self.pieces[0] if len(self.pieces) == 1 else None
        if piece is not None and piece.healthy and piece.source == self.healthy_segment and piece.start == 0 \
                and piece.end == os.path.getsize(piece.source):
            return "healthy"  # HEALTHY's segment whole
        return "healthy-if-identical"

    @property
    def size(self) -> int:
        return sum(p.end - p.start for p in self.pieces)

    def as_dict(self) -> dict:
        return {"segment": self.base_offset, "path": str(self.path), "new": self.new, "why": self.why,
                "txnIndex": None if self.txn_index is None else str(self.txn_index),
                "offsets": [list(r) for r in self.ranges], "damagedOffsets": [list(r) for r in self.damaged_ranges],
                "missingOffsets": [list(r) for r in self.missing_ranges], "missingWhere": self.missing_where,
                "size": self.size, "pieces": [p.as_dict() for p in self.pieces]}


@dataclass
class RepairPlan:
    healthy: Path
    damaged: Path
    segments: list[SegmentRepair] = field(default_factory=list)
    snapshots: list[Path] = field(default_factory=list)  # HEALTHY's snapshots to copy
    epoch_checkpoint: list[EpochEntry] | None = None  # DAMAGED's, extended (--tail)
    notes: list[str] = field(default_factory=list)
    divergence: Divergence | None = None  # DAMAGED is another history from there on (not damage)
    missing_at_end: tuple[int, int] | None = None  # offsets DAMAGED lacks at its end that HEALTHY holds
    missing_copied: bool = False  # --tail: missing_at_end is in the plan
    past_healthy_end: tuple[int, int] | None = None  # DAMAGED's offsets past HEALTHY's end (HEALTHY behind)
    leader_epochs: dict = field(default_factory=dict)  # the epochs of both replicas, each's first offsets

    @property
    def empty(self) -> bool:
        return not self.segments and not self.snapshots and self.epoch_checkpoint is None

    def as_dict(self) -> dict:
        return {"healthy": str(self.healthy), "damaged": str(self.damaged),
                "segments": [s.as_dict() for s in self.segments], "snapshots": [str(s) for s in self.snapshots],
                "leaderEpochCheckpoint": None if self.epoch_checkpoint is None
                else [[e.epoch, e.start_offset] for e in self.epoch_checkpoint], "notes": self.notes,
                "divergence": None if self.divergence is None else self.divergence.as_dict(),
                "missingAtEnd": None if self.missing_at_end is None else {
                    "firstOffset": self.missing_at_end[0], "lastOffset": self.missing_at_end[1],
                    "copied": self.missing_copied},
                "pastHealthyEnd": None if self.past_healthy_end is None else {
                    "firstOffset": self.past_healthy_end[0], "lastOffset": self.past_healthy_end[1]}}


def _epoch_for(entries: list[EpochEntry], offset: int) -> int | None:
    epoch = None
    for entry in entries:
        if entry.start_offset <= offset:
            epoch = entry.epoch
    return epoch


def plan_repair(healthy_dir: str | Path, damaged_dir: str | Path, tail: bool = False) -> RepairPlan:
    """What to write into ``damaged_dir`` (see the module doc); :class:`RepairRefused` when not safe."""
    healthy_dir, damaged_dir = Path(healthy_dir), Path(damaged_dir)
    healthy, damaged = scan_replica(healthy_dir), scan_replica(damaged_dir)
    if healthy.topic_id and damaged.topic_id and healthy.topic_id != damaged.topic_id:
        raise RepairRefused(f"topic id {damaged.topic_id} is not {healthy.topic_id} of {healthy_dir}: another topic "
                            "of the same name, not a replica; nothing was changed", damaged_dir)
    if healthy.topic is not None and damaged.topic is not None and \
            (healthy.topic, healthy.partition) != (damaged.topic, damaged.partition):
        raise RepairRefused(f"{damaged_dir.name} is not the partition {healthy_dir.name}; nothing was changed",
                            damaged_dir)
    comparison = compare(healthy, damaged)
    divergence = comparison.divergence
    if divergence is not None and divergence["cause"] == "longer-than-reference":
        divergence = None if damaged.damage else divergence  # a torn batch can make the ends differ
    plan = RepairPlan(healthy_dir, damaged_dir, divergence=divergence_of(comparison, healthy, damaged),
                      leader_epochs=compared_epochs([healthy, damaged]))
    epochs = damaged.epoch_checkpoint
    healthy_log = PartitionLog(healthy_dir)
    damaged_log = PartitionLog(damaged_dir)
    healthy_segments = {s.base_offset: s.log_path for s in healthy_log.segments}
    damaged_segments = damaged_log.segments
    for n, segment in enumerate(damaged_segments):
        is_last = n == len(damaged_segments) - 1
        summary = segment_runs(segment.log_path)
        damaged_here = summary.damaged
        if not damaged_here and not (tail and is_last):
            continue
        source = healthy_segments.get(segment.base_offset)
        if source is None:
            if not damaged_here:
                continue
            raise RepairRefused(f"segment {segment.base_offset} is damaged and {healthy_dir} has no segment at that "
                                "base offset (the replicas' segments differ there); nothing was changed",
                                segment.log_path)
        repair = _repair_segment(segment.base_offset, segment.log_path, summary, source, epochs,
                                 tail and is_last, damaged.log_end, divergence)
        if repair is not None and repair.ranges and repair.ranges[-1][1] >= damaged.log_end:
            repair.txn_index = _txn_index_of(source)
        if repair is not None and _clean_indexes(healthy, segment.base_offset, source):
            repair.healthy_segment = source
        if repair is not None:
            plan.segments.append(repair)
    _plan_missing(plan, healthy, damaged, healthy_log, damaged_log, divergence)
    if tail:
        _plan_tail(plan, healthy, damaged, healthy_log, damaged_log, divergence)
    plan.segments.sort(key=lambda repair: repair.base_offset)
    _ends(plan, healthy, damaged, tail)
    healthy_log.close()
    damaged_log.close()
    return plan


def _ends(plan: RepairPlan, healthy, damaged, tail: bool) -> None:
    """Where the two logs end, when DAMAGED is HEALTHY's history: the offsets it lacks at its
    end (past what the plan repairs as damage: a torn last batch is damage), or the offsets it
    holds past HEALTHY's end."""
    if plan.divergence is not None:
        return
    if damaged.log_end > healthy.log_end:
        plan.past_healthy_end = (healthy.log_end, damaged.log_end - 1)
        return
    start = damaged.log_end
    for repair in plan.segments:
        for _first, last in repair.damaged_ranges:
            start = max(start, last + 1)
    if start < healthy.log_end:
        plan.missing_at_end = (start, healthy.log_end - 1)
        plan.missing_copied = tail


def index_paths(log_path: Path) -> tuple[Path, Path]:
    stem = log_path.name[:-len(".log")]
    return log_path.with_name(stem + ".index"), log_path.with_name(stem + ".timeindex")


def _clean_indexes(healthy, base: int, log_path: Path) -> bool:
    """Whether HEALTHY's indexes of that segment can stand for the repaired one's: both there,
    no entry pointing wrong (the diff scan's checks), no preallocated zero tail."""
    if any(note.segment == base for note in healthy.index_notes):
        return False
    for path, entry in zip(index_paths(log_path), (8, 12)):
        if not path.is_file():
            return False
        size = path.stat().st_size
        if size % entry:
            return False
        if size:
            with open(path, "rb") as handle:
                handle.seek(size - entry)
                if not any(handle.read(entry)):
                    return False
    return True


def _txn_index_of(log_path: Path) -> Path | None:
    path = log_path.with_name(log_path.name[:-len(".log")] + ".txnindex")
    return path if path.is_file() else None


def _repair_segment(base: int, path: Path, summary: SegmentRuns, source: Path, epochs, extend: bool,
                    log_end: int, divergence) -> SegmentRepair | None:
    """The pieces of the repaired segment: DAMAGED's good runs, HEALTHY's bytes for each gap."""
    walk = SegmentWalk(source)
    try:
        return _repair_pieces(base, path, summary, source, walk, epochs, extend, log_end, divergence)
    finally:
        walk.close()


def _repair_pieces(base: int, path: Path, summary: SegmentRuns, source: Path, walk: SegmentWalk, epochs, extend: bool,
                   log_end: int, divergence) -> SegmentRepair | None:
    size, healthy_size = summary.size, walk.size
    pieces, ranges = [], []
    position, expected = 0, base
    missing_from = None  # the first offset appended past DAMAGED's old end (--tail)

    def take(start_pos: int, start_offset: int, stop_pos: int | None, stop_offset: int | None) -> int:
        """HEALTHY's batches from ``start_pos`` (offset ``start_offset``) to ``stop_pos`` (where
        offset ``stop_offset`` starts); None: every batch overlapping DAMAGED's old extent (or all,
        extending). Returns where the copied bytes end."""
        nonlocal missing_from
        if divergence is not None and start_offset >= divergence["offset"] and start_pos >= size:
            raise RepairRefused(f"this replica lacks the offsets from {start_offset} on at its end (missing, not "
                                f"damaged), but the replicas diverge from offset {divergence['offset']} "
                                f"({divergence['cause']}): --tail copies only onto a prefix of HEALTHY's log; "
                                "nothing was changed", path)
        if divergence is not None and start_offset >= divergence["offset"]:
            raise RepairRefused(f"offset {start_offset} is damaged, but the replicas diverge from offset "
                                f"{divergence['offset']} ({divergence['cause']}): HEALTHY's batches there are "
                                "another history; nothing was changed", path)
        batch = walk.seek(start_pos)
        if batch is None or batch.position != start_pos or batch.base != start_offset:
            _refuse_unaligned(path, start_pos, start_offset, source)
        first_offset, end = start_offset, start_pos
        while batch is not None:
            if stop_pos is not None and batch.position >= stop_pos:
                break
            if stop_pos is None and not extend and batch.position >= size:
                break
            if batch.position != end:
                raise RepairRefused(f"{source}: HEALTHY is damaged too at position {end} (no batch starts there); "
                                    "nothing was changed", source)
            if not batch.valid:
                raise RepairRefused(f"{source}: HEALTHY's batch {batch.base}-{batch.last} at position "
                                    f"{batch.position} fails its CRC too; nothing was changed", source)
            want = _epoch_for(epochs, batch.base)
            if want is not None and batch.epoch != want and batch.base < log_end:
                raise RepairRefused(f"offset {batch.base}: HEALTHY's batch is in leader epoch {batch.epoch}, this "
                                    f"replica's leader-epoch-checkpoint says {want}: the replicas diverge there; "
                                    "nothing was changed", path)
            if divergence is not None and batch.last >= divergence["offset"]:
                raise RepairRefused(f"the replicas diverge from offset {divergence['offset']} "
                                    f"({divergence['cause']}): repairing across it would mix two histories; "
                                    "nothing was changed", path)
            if extend and missing_from is None and batch.position >= size:
                missing_from = batch.base
            end = batch.end
            last = batch.last
            walk.advance()
            batch = walk.current()
        if stop_pos is not None and (end != stop_pos or (batch is not None and batch.base != stop_offset)):
            _refuse_unaligned(path, stop_pos, stop_offset, source)
        if end > start_pos:
            pieces.append(Piece(source, start_pos, end, True))
            ranges.append((first_offset, last))
        return end

    for start, end, first_base, last in summary.runs:
        if start != position:
            take(position, expected, start, first_base)
        if pieces and pieces[-1].healthy is False and pieces[-1].end == start:
            pieces[-1].end = end
        else:
            pieces.append(Piece(path, start, end, False))
        position, expected = end, last + 1
    if (position != size or extend) and position < healthy_size:
        take(position, expected, None, None)  # the tail: what overlaps DAMAGED's old extent (all, extending)
    if not ranges:
        if position == size:
            return None
        return SegmentRepair(base, path, pieces, ranges,
                             f"cut {size - position} bytes after the last batch (HEALTHY holds nothing there)")
    repair = SegmentRepair(base, path, pieces, ranges, "", missing_from=missing_from,
                           missing_where=None if missing_from is None else "end")
    parts = []
    if repair.damaged_ranges:
        parts.append("HEALTHY's batches for offsets " + ", ".join(f"{a}-{b}" for a, b in repair.damaged_ranges))
    if repair.missing_ranges:
        parts.append(MISSING_AT_END.format(*repair.missing_ranges[0]))
    repair.why = "; ".join(parts)
    return repair


MISSING_AT_END = "offsets {}-{} this replica lacks at its end (missing, not damaged), from HEALTHY"


def _refuse_unaligned(path, position, offset, source) -> None:
    raise RepairRefused(f"position {position} of {path.name}: HEALTHY ({source}) has no batch of offset {offset} "
                        "there (its segment differs: the replicas diverge, or HEALTHY is damaged too); "
                        "nothing was changed", path)


def _plan_missing(plan: RepairPlan, healthy, damaged, healthy_log: PartitionLog, damaged_log: PartitionLog,
                  divergence) -> None:
    """Whole segments DAMAGED lacks in the middle of its log: HEALTHY's segments between two
    segments DAMAGED holds whose offsets no segment of DAMAGED holds (``seglog diff`` reports the
    stretch as a hole), restored byte for byte (see :func:`_check_missing`)."""
    damaged_segments = {s.base_offset: s for s in damaged_log.segments}
    bases = sorted(damaged_segments)
    if len(bases) < 2:
        return
    segments = healthy_log.segments
    k = 0
    while k < len(segments):
        base = segments[k].base_offset
        if base in damaged_segments or not bases[0] < base < bases[-1]:
            k += 1
            continue
        run = []
        while k < len(segments) and segments[k].base_offset not in damaged_segments:
            run.append(segments[k])
            k += 1
        before = damaged_segments[max(b for b in bases if b < base)]
        last_good = segment_runs(before.log_path).last_good
        if last_good is not None and last_good.last >= base:
            continue  # DAMAGED holds these offsets in a segment of its own (rolled or cleaned otherwise)
        after = segments[k] if k < len(segments) else None
        _check_missing(plan, run, before, last_good, after, damaged_segments, healthy_log, damaged.epoch_checkpoint,
                       divergence)
        for segment in run:
            whole = segment_runs(segment.log_path)
            ranges = [(whole.first.base, whole.last.last)] if whole.count else []
            plan.segments.append(SegmentRepair(
                segment.base_offset, plan.damaged / segment.log_path.name,
                [Piece(segment.log_path, 0, whole.size, True)],
                ranges, "a segment this replica lacks in the middle of its log, from HEALTHY", new=True,
                missing_from=segment.base_offset, missing_where="middle",
                txn_index=_txn_index_of(segment.log_path),
                healthy_segment=segment.log_path if _clean_indexes(healthy, segment.base_offset, segment.log_path)
                else None))
        first, last = run[0].base_offset, after.base_offset - 1
        have = {p.name for p in plan.damaged.iterdir()}
        for snapshot in healthy_log.files.snapshots:
            parsed = parse_segment_file_name(snapshot.name)
            if parsed is not None and first <= parsed.base_offset <= last + 1 and snapshot.name not in have:
                plan.snapshots.append(snapshot)


def _check_missing(plan: RepairPlan, run, before, before_good: BatchRow | None, after, damaged_segments, healthy_log,
                   epochs, divergence) -> None:
    """HEALTHY's segments ``run`` may fill DAMAGED's gap when the segments either side agree
    (DAMAGED's last batch before the gap and first batch after it are HEALTHY's, byte for byte,
    and the segment after the gap starts at the same offset on both) and every batch of ``run``
    is valid, contiguous, inside the gap and in the leader epoch DAMAGED's checkpoint gives it;
    else :class:`RepairRefused`."""
    first = run[0].base_offset
    where = plan.damaged
    if after is None or after.base_offset not in damaged_segments:
        raise RepairRefused(f"this replica lacks offsets from {first} on in the middle of its log, but its next "
                            "segment starts at no segment boundary of HEALTHY (the replicas' segments differ "
                            "there); nothing was changed", where)
    last = after.base_offset - 1
    if divergence is not None and divergence["offset"] <= last:
        raise RepairRefused(f"this replica lacks offsets {first}-{last}, but the replicas diverge from offset "
                            f"{divergence['offset']} ({divergence['cause']}); nothing was changed", where)
    healthy_before = next((s for s in healthy_log.segments if s.base_offset == before.base_offset), None)
    agree = healthy_before is not None and before_good is not None
    if agree:
        healthy_last = segment_runs(healthy_before.log_path).last
        agree = healthy_last is not None and _same_batch(before.log_path, before_good, healthy_before.log_path,
                                                         healthy_last)
    if agree:
        mine = segment_runs(damaged_segments[after.base_offset].log_path).first
        theirs = segment_runs(after.log_path).first
        agree = mine is not None and theirs is not None and _same_batch(damaged_segments[after.base_offset].log_path,
                                                                        mine, after.log_path, theirs)
    if not agree:
        raise RepairRefused(f"this replica lacks offsets {first}-{last}, but the segments either side of the gap "
                            "are not HEALTHY's (the replicas differ there); nothing was changed", where)
    expected = first
    for segment in run:
        size = os.path.getsize(segment.log_path)
        position = 0
        for batch in batch_rows(segment.log_path):
            if not batch.valid or batch.position != position:
                raise RepairRefused(f"{segment.log_path}: HEALTHY is damaged at position {position} of a segment "
                                    "this replica lacks; nothing was changed", segment.log_path)
            if batch.base < expected or batch.last > last:
                raise RepairRefused(f"{segment.log_path}: HEALTHY's batch {batch.base}-{batch.last} lies outside "
                                    f"the offsets {first}-{last} this replica lacks; nothing was changed",
                                    segment.log_path)
            want = _epoch_for(epochs, batch.base)
            if want is not None and batch.epoch != want:
                raise RepairRefused(f"offset {batch.base}: HEALTHY's batch is in leader epoch {batch.epoch}, this "
                                    f"replica's leader-epoch-checkpoint says {want}: the replicas diverge there; "
                                    "nothing was changed", where)
            position, expected = batch.end, batch.last + 1
        if position != size:
            raise RepairRefused(f"{segment.log_path}: HEALTHY is damaged at position {position} of a segment this "
                                "replica lacks; nothing was changed", segment.log_path)


def _same_batch(path_a: Path, a: "BatchRow", path_b: Path, b: "BatchRow") -> bool:
    if a.end - a.position != b.end - b.position:
        return False
    with open(path_a, "rb") as x, open(path_b, "rb") as y:
        x.seek(a.position)
        y.seek(b.position)
        return x.read(a.end - a.position) == y.read(b.end - b.position)


def _plan_tail(plan: RepairPlan, healthy, damaged, healthy_log: PartitionLog, damaged_log: PartitionLog,
               divergence) -> None:
    """Whole segments HEALTHY has past DAMAGED's last one, their snapshots and epochs."""
    if divergence is not None and divergence["cause"] == "longer-than-reference":
        return  # HEALTHY ends first: this replica lacks nothing at its end
    if divergence is not None:
        raise RepairRefused(f"the replicas diverge from offset {divergence['offset']} ({divergence['cause']}): "
                            "--tail copies only onto a prefix of HEALTHY's log; nothing was changed (without "
                            "--tail, repair says where they diverge and how to keep what only this replica holds)",
                            plan.damaged)
    last_base = damaged_log.segments[-1].base_offset if damaged_log.segments else None
    repaired_last = next((s for s in plan.segments if s.base_offset == last_base), None)
    if repaired_last is not None and repaired_last.ranges:
        old_end = damaged.log_end
        new_end = max(old_end, repaired_last.ranges[-1][1] + 1)
    else:
        old_end = new_end = damaged.log_end
    later = [s for s in healthy_log.segments if last_base is None or s.base_offset > last_base]
    for segment in later:
        whole = segment_runs(segment.log_path)
        size, batches = whole.size, whole.count
        if batches and whole.first.base != new_end and not (segment.base_offset == new_end and not batches):
            raise RepairRefused(f"{segment.log_path}: HEALTHY's next segment starts at offset "
                                f"{whole.first.base}, this replica ends at {new_end}; nothing was changed",
                                segment.log_path)
        batch = whole.first_invalid
        if batch is not None:
            raise RepairRefused(f"{segment.log_path}: HEALTHY's batch {batch.base}-{batch.last} fails its CRC; "
                                "nothing was changed", segment.log_path)
        if batches and whole.last.end != size:
            raise RepairRefused(f"{segment.log_path}: HEALTHY's segment is damaged at its end; nothing was changed",
                                segment.log_path)
        target = plan.damaged / segment.log_path.name
        last = whole.last.last if batches else segment.base_offset - 1
        why = (f"a segment this replica lacks at its end: offsets {segment.base_offset}-{last} (missing, not "
               "damaged), from HEALTHY" if batches else "an empty segment this replica lacks at its end, from HEALTHY")
        plan.segments.append(SegmentRepair(segment.base_offset, target, [Piece(segment.log_path, 0, size, True)],
                                           [(segment.base_offset, last)] if batches else [],
                                           why, new=True, missing_from=segment.base_offset, missing_where="end",
                                           txn_index=_txn_index_of(segment.log_path),
                                           healthy_segment=segment.log_path
                                           if _clean_indexes(healthy, segment.base_offset, segment.log_path) else None))
        new_end = last + 1 if batches else new_end
    if new_end == old_end:
        return
    have = {p.name for p in plan.damaged.iterdir()}
    for snapshot in healthy_log.files.snapshots:
        parsed = parse_segment_file_name(snapshot.name)
        if parsed is not None and old_end <= parsed.base_offset <= new_end and snapshot.name not in have:
            plan.snapshots.append(snapshot)
    entries = list(damaged.epoch_checkpoint)
    latest = entries[-1].epoch if entries else -1
    added = False
    for entry in healthy.epoch_checkpoint:
        if entry.epoch > latest and entry.start_offset < new_end:
            entries.append(entry)
            latest = entry.epoch
            added = True
    if added:
        plan.epoch_checkpoint = entries


__all__ = ["Divergence", "RepairPlan", "RepairRefused", "SegmentRepair", "plan_repair"]
