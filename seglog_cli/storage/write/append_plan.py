"""An append planned, as values (``seglog append``): what
:func:`~seglog_cli.storage.write.append.plan_append` takes and gives.

The options of an append (:class:`AppendOptions`, the producer fields in
:class:`ProducerOptions`), the one error for an append Kafka would refuse or seglog will not
make (:class:`AppendError`), and the plan itself (:class:`AppendPlan`): each batch with the
offsets it gets (:class:`PlannedBatch`), the segments rolled and why, and the file steps in the
order they are applied (:class:`FileWrite`), for the CLI to print and
:func:`~seglog_cli.storage.write.append.apply_append` to carry out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.write.durable import SpoolRange


class AppendError(SeglogError):
    """An append Kafka would refuse, or a partition seglog will not append to as it is."""


@dataclass(frozen=True)
class ProducerOptions:
    """The producer fields of the batches (all -1: a plain producer)."""

    producer_id: int = -1
    producer_epoch: int | None = None  # None: the epoch in the producer state (0 for a new producer)
    base_sequence: int | None = None  # None: continue from the producer state (0 for a new producer);
    # without a producer id: every batch's base sequence as sent (None: -1, no sequence)
    transactional: bool = False
    coordinator_epoch: int | None = None  # markers; None: the producer state's (0 for a new producer)


@dataclass(frozen=True)
class AppendOptions:
    compression: str = "none"  # none, gzip, snappy, lz4, zstd (Kafka's framings)
    timestamp_type: str | None = None  # CreateTime or LogAppendTime; None: the topic's message.timestamp.type
    leader_epoch: int | None = None  # None: the latest in leader-epoch-checkpoint (0 when there is none)
    producer: ProducerOptions = ProducerOptions()
    end_transaction: str | None = None  # "commit" or "abort": a marker after the batches
    now_ms: int | None = None  # the broker clock; None: the wall clock
    create: bool = False  # create the partition directory when it does not exist
    topic_id: str | None = None  # partition.metadata for a created partition (default: a random id)
    update_recovery_point: bool = True  # the log dir's recovery-point-offset-checkpoint
    roll_jitter_seed: int | None = None  # segment.jitter.ms draws (None: random, as Kafka)


@dataclass
class PlannedBatch:
    base_offset: int
    last_offset: int
    records: int
    size: int
    segment: int  # base offset of the segment it goes to
    max_timestamp: int
    control: str | None = None  # "COMMIT"/"ABORT" for a marker

    def as_dict(self) -> dict:
        return {"baseOffset": self.base_offset, "lastOffset": self.last_offset, "records": self.records,
                "size": self.size, "segment": self.segment, "maxTimestamp": self.max_timestamp,
                "control": self.control}


@dataclass(frozen=True)
class AlreadyAppended:
    """A run whose batches the producer already wrote last (:mod:`append_rerun`): nothing to append."""

    producer_id: int
    producer_epoch: int
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int  # of the last data batch
    marker: str | None = None  # "COMMIT"/"ABORT": the run's --end-txn, found after them
    marker_offset: int | None = None

    def text(self) -> str:
        ended = f", then its {self.marker} marker at offset {self.marker_offset}" if self.marker else ""
        return (f"already appended: producer {self.producer_id} epoch {self.producer_epoch} wrote sequences "
                f"{self.first_sequence}..{self.last_sequence} at offsets {self.first_offset}..{self.last_offset}{ended} "
                "(Kafka answers a duplicate with the earlier offsets): nothing to do")

    def as_dict(self) -> dict:
        return {"producerId": self.producer_id, "producerEpoch": self.producer_epoch,
                "sequences": [self.first_sequence, self.last_sequence], "offsets": [self.first_offset, self.last_offset],
                "marker": self.marker, "markerOffset": self.marker_offset}


@dataclass
class FileWrite:
    """One step of the plan: ``op`` is "append" (to a .log or .txnindex) or "replace". ``data``:
    bytes, or for a ``.log`` its part of the :class:`~seglog_cli.storage.write.durable.Spool` (or
    ``Tally``) the plan was made with."""

    op: str
    path: Path
    data: bytes | SpoolRange
    why: str

    def as_dict(self) -> dict:
        return {"op": self.op, "path": str(self.path), "bytes": len(self.data), "why": self.why}


@dataclass
class AppendPlan:
    partition_dir: Path
    log_dir: Path
    log_end_offset_before: int
    log_end_offset_after: int = 0
    batches: list[PlannedBatch] = field(default_factory=list)
    rolls: list[tuple[int, str]] = field(default_factory=list)  # (new base offset, reason)
    writes: list[FileWrite] = field(default_factory=list)
    created: bool = False
    warnings: list[str] = field(default_factory=list)
    fingerprint: dict = field(default_factory=dict)  # the directories as planned (write_session)
    already_appended: AlreadyAppended | None = None  # a rerun: the batches are in the log already

    @property
    def records(self) -> int:
        return sum(batch.records for batch in self.batches if batch.control is None)

    def as_dict(self) -> dict:
        return {"version": 1, "partitionDir": str(self.partition_dir), "create": self.created,
                "logEndOffsetBefore": self.log_end_offset_before, "logEndOffsetAfter": self.log_end_offset_after,
                "records": self.records, "batches": [b.as_dict() for b in self.batches],
                "rolls": [{"baseOffset": base, "reason": reason} for base, reason in self.rolls],
                "writes": [w.as_dict() for w in self.writes], "warnings": self.warnings,
                "alreadyAppended": None if self.already_appended is None else self.already_appended.as_dict()}


__all__ = ["AlreadyAppended", "AppendError", "AppendOptions", "AppendPlan", "FileWrite", "PlannedBatch", "ProducerOptions"]
