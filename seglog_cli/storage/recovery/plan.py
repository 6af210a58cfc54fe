"""The recovery plan as values: steps, damaged ranges, the offsets kept beyond damage, one
partition's recovery and the whole plan (what ``seglog recover`` prints and ``--apply`` carries out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log.errors import SeglogError


KAFKA, SALVAGE = "kafka", "salvage"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class RecoverError(SeglogError):
    """A partition recover cannot plan (Kafka itself would fail to load it)."""


@dataclass(slots=True)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(slots=True)
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


@dataclass(slots=True)
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

    @property
    def step_count(self) -> int:
        return sum(len(p.steps) for p in self.partitions) + sum(len(v) for v in self.log_dir_steps.values())

    def head(self) -> dict:
        """The document's keys but the partitions (a renderer streams those)."""
        return {"version": 1, "mode": self.mode, "partitions": None,
                "logDirSteps": [s.as_dict() for v in self.log_dir_steps.values() for s in v],
                "summary": self.summary()}

    def as_dict(self) -> dict:
        return dict(self.head(), partitions=[p.as_dict() for p in self.partitions])

    def summary(self) -> dict:
        partitions = self.partitions
        return {"partitions": len(partitions), "steps": self.step_count,
                "bytesTruncated": sum(p.bytes_truncated for p in partitions),
                "refused": sum(1 for p in partitions if p.refused is not None),
                "offsetRangesLost": sum(len(p.offsets_lost) for p in partitions),
                "offsetCountLost": sum(p.offset_count_lost for p in partitions),
                "recoveredSegments": sum(len(p.recovered_segments) for p in partitions),
                "recoveredBytes": sum(p.recovered_bytes for p in partitions),
                "removedSegments": sum(len(p.removed_segments) for p in partitions),
                "removedSegmentBytes": sum(p.removed_bytes for p in partitions),
                "damagedRanges": sum(len(p.damaged_ranges) for p in partitions),
                "damagedBytes": sum(r.length for p in partitions for r in p.damaged_ranges),
                "keptBeyondDamage": {
                    "batches": sum(p.kept_beyond.batches for p in partitions),
                    "records": sum(p.kept_beyond.records for p in partitions)}}
