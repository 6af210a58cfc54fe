"""Value objects of a compaction simulation: the cleanable range, and per segment, batch and
record what one cleaner pass keeps, with a stable reason code.

Record codes: ``LATEST`` (latest value of its key), ``TOMBSTONE`` (a tombstone still retained),
``MARKER`` (a transaction marker kept), ``PAST_MAP`` (after the offset map's range, kept),
``NOT_IN_PASS`` (segment outside the pass, kept); removed: ``SUPERSEDED``, ``TOMBSTONE_EXPIRED``,
``ABORTED_DATA``, ``MARKER_PAST_HORIZON``, ``NO_KEY``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CleanableRange:
    first_dirty_offset: int
    first_dirty_note: str | None
    first_uncleanable_offset: int  # before moving to a segment boundary
    uncleanable_because: str  # "last stable offset", "active segment", "min.compaction.lag.ms"
    first_uncleanable_segment: int  # the cleaning round's upper bound
    last_stable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    dirty_ratio: float
    min_cleanable_dirty_ratio: float
    max_compaction_lag_exceeded: bool
    would_clean: bool

    def as_dict(self) -> dict:
        return {"firstDirtyOffset": self.first_dirty_offset, "firstDirtyNote": self.first_dirty_note,
                "firstUncleanableOffset": self.first_uncleanable_offset, "uncleanableBecause": self.uncleanable_because,
                "upperBoundOffset": self.first_uncleanable_segment, "lastStableOffset": self.last_stable_offset,
                "cleanBytes": self.clean_bytes, "cleanableBytes": self.cleanable_bytes,
                "dirtyRatio": round(self.dirty_ratio, 6), "minCleanableDirtyRatio": self.min_cleanable_dirty_ratio,
                "maxCompactionLagExceeded": self.max_compaction_lag_exceeded, "wouldClean": self.would_clean}


@dataclass(frozen=True)
class RecordVerdict:
    offset: int
    key: bytes | None
    tombstone: bool
    kept: bool
    code: str
    detail: str

    def as_dict(self) -> dict:
        return {"offset": self.offset, "key": _show_key(self.key), "tombstone": self.tombstone, "kept": self.kept,
                "code": self.code, "detail": self.detail}


@dataclass
class BatchVerdict:
    base_offset: int
    last_offset: int
    size: int
    is_control: bool
    is_transactional: bool
    producer_id: int
    delete_horizon_ms: int | None
    retention: str  # RETAIN_EMPTY, DELETE, DELETE_EMPTY, NOT_IN_PASS
    kept: bool  # the batch (or an empty header of it) stays
    records: list[RecordVerdict]
    new_delete_horizon_ms: int | None = None
    empty: bool = False  # kept as an empty batch header (producer state, last offset)

    @classmethod
    def of(cls, batch, retention: str, kept: bool, records: list[RecordVerdict]) -> "BatchVerdict":
        return cls(batch.base_offset, batch.last_offset, batch.size, batch.is_control, batch.is_transactional,
                   batch.producer_id, batch.delete_horizon_ms, retention, kept, records)

    def as_dict(self) -> dict:
        return {"baseOffset": self.base_offset, "lastOffset": self.last_offset, "size": self.size,
                "control": self.is_control, "transactional": self.is_transactional, "producerId": self.producer_id,
                "deleteHorizonMs": self.delete_horizon_ms, "retention": self.retention, "kept": self.kept,
                "keptEmpty": self.empty, "newDeleteHorizonMs": self.new_delete_horizon_ms,
                "records": [r.as_dict() for r in self.records]}


@dataclass
class SegmentCompaction:
    base_offset: int
    size: int
    in_pass: bool
    retain_legacy_deletes: bool | None
    batches: list[BatchVerdict] = field(default_factory=list)

    @property
    def records(self) -> list[RecordVerdict]:
        return [r for b in self.batches for r in b.records]

    def counts(self) -> Counter:
        return Counter(r.code for r in self.records)

    def as_dict(self, with_records: bool = True) -> dict:
        records = self.records
        document = {"baseOffset": self.base_offset, "size": self.size, "inPass": self.in_pass,
                    "retainLegacyDeletes": self.retain_legacy_deletes, "records": len(records),
                    "kept": sum(r.kept for r in records), "removed": sum(not r.kept for r in records),
                    "reasons": dict(sorted(self.counts().items())),
                    "emptyBatchesKept": sum(b.empty for b in self.batches),
                    "batchesRemoved": sum(not b.kept for b in self.batches),
                    "newDeleteHorizons": sorted({b.new_delete_horizon_ms for b in self.batches if b.new_delete_horizon_ms})}
        if with_records:
            document["batches"] = [b.as_dict() for b in self.batches]
        return document


@dataclass
class CompactionPlan:
    state: object  # PartitionState
    config: object  # TopicConfig
    now_ms: int
    range: CleanableRange
    end_offset: int  # the cleaner checkpoint after this pass
    map_keys: int
    legacy_delete_horizon_ms: int
    segments: list[SegmentCompaction]
    groups: list[list[int]]  # base offsets cleaned into one new segment each
    active_producers: list[int]

    @property
    def records(self) -> list[RecordVerdict]:
        return [r for s in self.segments for r in s.records]

    @property
    def kept_offsets(self) -> list[int]:
        return [r.offset for r in self.records if r.kept]

    @property
    def removed_offsets(self) -> list[int]:
        return [r.offset for r in self.records if not r.kept]

    def as_dict(self, with_records: bool = True) -> dict:
        return {"partition": str(self.state.path), "nowMs": self.now_ms, "cleanupPolicy": self.config.cleanup_policy,
                "deleteRetentionMs": self.config.delete_retention_ms,
                "minCompactionLagMs": self.config.min_compaction_lag_ms,
                "cleanerCheckpoint": self.state.cleaner_checkpoint, "range": self.range.as_dict(),
                "newCleanerCheckpoint": self.end_offset if self.range.would_clean else self.state.cleaner_checkpoint,
                "passEndOffset": self.end_offset, "offsetMapKeys": self.map_keys,
                "legacyDeleteHorizonMs": self.legacy_delete_horizon_ms, "groups": self.groups,
                "activeProducers": self.active_producers,
                "keptOffsets": self.kept_offsets, "removedOffsets": self.removed_offsets,
                "segments": [s.as_dict(with_records) for s in self.segments]}


def _show_key(key: bytes | None) -> str | None:
    if key is None:
        return None
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + key.hex()
