"""What the log cleaner would keep and remove in one pass (spec §18; Kafka ``LogCleanerManager``,
``LogCleaner.Cleaner``, ``CleanedTransactionMetadata``, ``MemoryRecords.filterTo``).

1. Cleanable range (``cleanableOffsets``): first dirty offset = the cleaner checkpoint (the log
   start offset when absent, below the log start or past the log end); first uncleanable offset
   = min(last stable offset, active segment base, first dirty non-active segment whose largest
   timestamp > now - min.compaction.lag.ms), moved down to the start of its segment.
2. Whether the cleaner picks the log: dirty ratio = cleanable bytes / (clean + cleanable bytes)
   > min.cleanable.dirty.ratio, or max.compaction.lag.ms exceeded with cleanable bytes.
3. The pass (``doClean``): an offset map (key -> latest offset) over the dirty range, aborted
   transactions skipped; then every segment from the log start up to the map's end is filtered
   batch by batch (``checkBatchRetention`` + ``shouldRetainRecord``).

When nothing is dirty Kafka does not clean; ``plan_compaction`` still shows what the next pass
would do to the records already there (an empty map whose range ends at the first dirty offset),
marked ``would_clean=False``. Not modelled: the dedupe buffer filling up (Kafka then cleans a
prefix: ``log.cleaner.dedupe.buffer.size``, 128 MiB = ~5M keys), MD5 key collisions.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.retention.compaction_report import (
    BatchVerdict,
    CleanableRange,
    CompactionPlan,
    RecordVerdict,
    SegmentCompaction,
)
from seglog_cli.storage.log.control import parse_control_type
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.producer_state import PRODUCER_ID_EXPIRATION_MS, rebuild_producer_state
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.retention.retention import PartitionState, read_partition_state
from seglog_cli.storage.config.topic_config import TopicConfig

ABORT, COMMIT = 0, 1
RETAIN_EMPTY, DELETE, DELETE_EMPTY = "RETAIN_EMPTY", "DELETE", "DELETE_EMPTY"


# -- choosing the range -----------------------------------------------------------------------

def cleanable_range(state: PartitionState, config: TopicConfig, now_ms: int, last_stable_offset: int,
                    checkpoint: int | None) -> CleanableRange:
    segments = state.segments
    log_start, log_end = state.log_start_offset, state.log_end_offset
    first_dirty, reset = (checkpoint if checkpoint is not None else log_start), None
    if checkpoint is None:
        reset = "no cleaner-offset-checkpoint entry: from the log start offset"
    elif checkpoint < log_start:
        first_dirty, reset = log_start, f"checkpoint {checkpoint} < log start offset {log_start}: reset"
    elif checkpoint > log_end:
        first_dirty, reset = log_start, f"checkpoint {checkpoint} > log end offset {log_end}: reset"
    active_base = segments[-1].base_offset
    limits = {"last stable offset": last_stable_offset, "active segment": active_base}
    lag = max(config.min_compaction_lag_ms, 0)
    if lag > 0:
        for segment in _overlapping(segments, first_dirty, active_base):
            if segment.largest_timestamp > now_ms - lag:
                limits["min.compaction.lag.ms"] = segment.base_offset
                break
    limit_name = min(limits, key=lambda name: limits[name])
    uncleanable = max(first_dirty, limits[limit_name])
    non_active = _overlapping(segments, uncleanable, active_base)
    first_uncleanable = non_active[0].base_offset if non_active else active_base
    clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
    cleanable_bytes = sum(s.size for s in _overlapping(segments, min(first_dirty, first_uncleanable), first_uncleanable))
    total = clean_bytes + cleanable_bytes
    ratio = cleanable_bytes / total if total else 0.0
    need_now = _max_lag_exceeded(state, config, now_ms, first_dirty)
    would_clean = total > 0 and ((need_now and cleanable_bytes > 0) or ratio > config.min_cleanable_dirty_ratio)
    return CleanableRange(first_dirty, reset, uncleanable, limit_name, first_uncleanable, last_stable_offset,
                          clean_bytes, cleanable_bytes, ratio, config.min_cleanable_dirty_ratio, need_now, would_clean)


def _overlapping(segments, start, end):
    """``logSegments(start, end)``: the floor segment of ``start`` and those below ``end``."""
    if start >= end:
        return []
    floor = max((s.base_offset for s in segments if s.base_offset <= start), default=None)
    low = floor if floor is not None else -1
    return [s for s in segments if low <= s.base_offset < end]


def _max_lag_exceeded(state, config, now_ms, first_dirty) -> bool:
    if config.max_compaction_lag_ms >= 2**63 - 1:
        return False
    active_base = state.segments[-1].base_offset
    firsts = [s.first_batch_timestamp for s in _overlapping(state.segments, first_dirty, active_base)
              if s.first_batch_timestamp > 0]
    return bool(firsts) and min(firsts) < now_ms - config.max_compaction_lag_ms


# -- transactions -----------------------------------------------------------------------------

@dataclass
class _AbortedSeen:
    txn: object
    last_observed: int | None = None


@dataclass
class TxnTracker:
    """``CleanedTransactionMetadata``: aborted transactions consumed in first-offset order."""

    committed: set = field(default_factory=set)
    aborted: dict = field(default_factory=dict)  # producer id -> _AbortedSeen
    queue: list = field(default_factory=list)
    _seq: itertools.count = field(default_factory=itertools.count)

    def add(self, txns) -> None:
        for txn in txns:
            heapq.heappush(self.queue, (txn.first_offset, next(self._seq), txn))

    def _consume(self, offset: int) -> None:
        while self.queue and self.queue[0][0] <= offset:
            txn = heapq.heappop(self.queue)[2]
            self.aborted.setdefault(txn.producer_id, _AbortedSeen(txn))

    def on_control(self, batch, control_type: int | None) -> bool:
        """True when the marker may be discarded."""
        self._consume(batch.last_offset)
        if control_type is None:
            return True  # an empty control batch: already cleaned
        if control_type == ABORT:
            seen = self.aborted.pop(batch.producer_id, None)
            return not (seen is not None and seen.last_observed is not None)
        if control_type == COMMIT:
            if batch.producer_id in self.committed:
                self.committed.discard(batch.producer_id)
                return False
            return True
        return False

    def on_data(self, batch) -> bool:
        """True when the batch is aborted data."""
        self._consume(batch.last_offset)
        if not batch.is_transactional:
            return False
        seen = self.aborted.get(batch.producer_id)
        if seen is not None:
            seen.last_observed = batch.last_offset
            return True
        self.committed.add(batch.producer_id)
        return False


def collect_aborted(log: PartitionLog, log_start: int, base_offset: int, upper_bound: int) -> list:
    """``LocalLog.collectAbortedTransactions``: from the floor segment of ``base_offset`` on,
    entries with last offset >= the log start offset and first offset < ``upper_bound``, until an
    entry whose last stable offset reaches ``upper_bound``."""
    found = []
    for segment in log.segments_from(base_offset):
        index = segment.txn_index()
        if index is None:
            continue
        for txn in index.aborted_txns():
            if txn.last_offset >= log_start and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found
    return found


def _control_type(buf, batch, path) -> int | None:
    record = next(iter(read_records(buf, batch, path)), None)
    return None if record is None else parse_control_type(record.key, path, batch.position)[1]


# -- the pass ---------------------------------------------------------------------------------

@dataclass
class _OffsetMap:
    offsets: dict = field(default_factory=dict)
    latest_offset: int = -1


def build_offset_map(log: PartitionLog, log_start: int, start: int, end: int) -> _OffsetMap:
    """``buildOffsetMap``: key -> latest offset over [start, end), aborted data left out."""
    offset_map = _OffsetMap()
    segments = _overlapping(log.segments, start, end)
    tracker = TxnTracker()
    tracker.add(collect_aborted(log, log_start, start, end))
    for i, segment in enumerate(segments):
        next_start = segments[i + 1].base_offset if i + 1 < len(segments) else end
        buf, path = segment.log.buffer, str(segment.log_path)
        position = segment.index_position(start) if i == 0 else 0  # offsetIndex.lookup(startOffset)
        for batch in segment.batches(position, resync=False, check_crc=False):
            if batch.is_control:
                tracker.on_control(batch, _control_type(buf, batch, path))
            elif not tracker.on_data(batch):
                for record in read_records(buf, batch, path):
                    if record.key is not None and record.offset >= start:
                        offset_map.offsets[record.key] = record.offset
            if batch.last_offset >= start:
                offset_map.latest_offset = max(offset_map.latest_offset, batch.last_offset)
        offset_map.latest_offset = max(offset_map.latest_offset, next_start - 1)
    return offset_map


def active_producers(log: PartitionLog, state: PartitionState, now_ms: int, expiration_ms: int) -> dict:
    """producer id -> (last data offset or None, epoch): ``lastRecordsOfActiveProducers``, after
    ``removeExpiredProducers`` at ``now_ms``."""
    manager = rebuild_producer_state(log, log_start_offset=state.log_start_offset, now_ms=now_ms,
                                     producer_id_expiration_ms=expiration_ms).manager
    active = {}
    for pid, entry in manager.producers.items():
        if entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= expiration_ms:
            continue
        last = entry.last_data_offset
        active[pid] = (last if last >= 0 else None, entry.producer_epoch)
    return active, manager.first_undecided_offset()


def plan_compaction(path: str | Path, config: TopicConfig, now_ms: int, *, high_watermark: int | None = None,
                    log_start_offset: int | None = None, cleaner_checkpoint: int | None = None,
                    producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> CompactionPlan:
    state = read_partition_state(path, high_watermark, log_start_offset)
    log = PartitionLog(path)
    try:
        producers, undecided = active_producers(log, state, now_ms, producer_id_expiration_ms)
        lso = state.high_watermark if undecided is None else min(state.high_watermark, undecided)
        checkpoint = cleaner_checkpoint if cleaner_checkpoint is not None else state.cleaner_checkpoint
        rng = cleanable_range(state, config, now_ms, lso, checkpoint)
        if rng.first_dirty_offset < rng.first_uncleanable_segment:
            offset_map = build_offset_map(log, state.log_start_offset, rng.first_dirty_offset, rng.first_uncleanable_segment)
        else:
            offset_map = _OffsetMap(latest_offset=rng.first_dirty_offset - 1)
        end_offset = offset_map.latest_offset + 1
        clean_before = [s for s in state.segments if s.base_offset < rng.first_dirty_offset]
        legacy_horizon = clean_before[-1].mtime_ms - config.delete_retention_ms if clean_before else 0
        in_pass = [s for s in log.segments if s.base_offset < end_offset] if end_offset > 0 else []
        groups = _groups(in_pass, config)
        tracker = TxnTracker()
        segments = []
        for segment in log.segments:
            group = next((g for g in groups if segment in g), None)
            if group is not None:
                segments.append(_clean_segment(log, state, segment, group, offset_map, tracker, producers, config,
                                               now_ms, legacy_horizon, rng.first_uncleanable_segment))
            else:
                segments.append(_untouched(segment))
        return CompactionPlan(state, config, now_ms, rng, end_offset, len(offset_map.offsets), legacy_horizon,
                              segments, [[s.base_offset for s in g] for g in groups], sorted(producers))
    finally:
        log.close()


def _groups(segments, config: TopicConfig):
    """``groupSegmentsBySize`` (the int32 offset-span check left out)."""
    groups, current, sizes = [], [], None
    for segment in segments:
        index = segment.index_path.stat().st_size if segment.index_path.is_file() else 0
        time_index = segment.time_index_path.stat().st_size if segment.time_index_path.is_file() else 0
        fits = current and (sizes[0] + segment.size <= config.segment_bytes and sizes[1] + index <= config.segment_index_bytes
                            and sizes[2] + time_index <= config.segment_index_bytes)
        if fits:
            current.append(segment)
            sizes = (sizes[0] + segment.size, sizes[1] + index, sizes[2] + time_index)
        else:
            current = [segment]
            groups.append(current)
            sizes = (segment.size, index, time_index)
    return groups


def _untouched(segment) -> SegmentCompaction:
    buf, path = segment.log.buffer, str(segment.log_path)
    batches = []
    for batch in segment.batches(resync=False, check_crc=False):
        records = [RecordVerdict(r.offset, r.key, r.value is None, True, "NOT_IN_PASS", "outside this pass's range")
                   for r in read_records(buf, batch, path)] if not batch.is_control else []
        batches.append(BatchVerdict.of(batch, "NOT_IN_PASS", True, records))
    return SegmentCompaction(segment.base_offset, segment.size, False, None, batches)


def _clean_segment(log, state, segment, group, offset_map, tracker, producers, config, now_ms, legacy_horizon,
                   upper_bound) -> SegmentCompaction:
    """``cleanSegments`` for one source segment of ``group``: its aborted transactions up to the
    next segment of the group (or its own end), then ``cleanInto``."""
    position = group.index(segment)
    following = group[position + 1] if position + 1 < len(group) else None
    upper = following.base_offset if following else segment.read_next_offset()
    tracker.add(collect_aborted(log, state.log_start_offset, segment.base_offset, upper))
    mtime_ms = segment.log_path.stat().st_mtime_ns // 1_000_000
    retain_legacy = mtime_ms > legacy_horizon
    buf, path = segment.log.buffer, str(segment.log_path)
    batches = [_filter_batch(batch, buf, path, tracker, offset_map, producers, config, now_ms, retain_legacy, upper_bound)
               for batch in segment.batches(resync=False, check_crc=False)]
    return SegmentCompaction(segment.base_offset, segment.size, True, retain_legacy, batches)


def _filter_batch(batch, buf, path, tracker, offset_map, producers, config, now_ms, retain_legacy, upper_bound):
    control_type = _control_type(buf, batch, path) if batch.is_control else None
    can_discard = tracker.on_control(batch, control_type) if batch.is_control else tracker.on_data(batch)
    horizon = batch.delete_horizon_ms
    if batch.is_control:
        discard_records = can_discard and horizon is not None and horizon <= now_ms
    else:
        discard_records = can_discard
    if batch.has_producer_id and _last_of_producer(batch, producers):
        retention = RETAIN_EMPTY
    elif batch.next_offset == upper_bound:
        retention = RETAIN_EMPTY
    elif discard_records:
        retention = DELETE
    else:
        retention = DELETE_EMPTY
    if retention == DELETE:
        code = "ABORTED_DATA" if not batch.is_control else "MARKER_PAST_HORIZON"
        records = [RecordVerdict(r.offset, r.key, r.value is None, False, code, _why(code, horizon))
                   for r in read_records(buf, batch, path)]
        return BatchVerdict.of(batch, retention, False, records)
    records = [_judge(batch, r, discard_records, offset_map, now_ms, retain_legacy, control_type)
               for r in read_records(buf, batch, path)]
    kept = [r for r in records if r.kept]
    new_horizon = None
    tombstones = any(r.tombstone for r in kept) and not batch.is_control
    empty_txn_marker = can_discard and batch.is_control
    if kept and batch.magic >= 2 and (tombstones or empty_txn_marker) and horizon is None:
        new_horizon = now_ms + config.delete_retention_ms
    verdict = BatchVerdict.of(batch, retention, bool(kept) or retention == RETAIN_EMPTY, records)
    verdict.new_delete_horizon_ms = new_horizon
    verdict.empty = not kept and retention == RETAIN_EMPTY
    return verdict


def _last_of_producer(batch, producers) -> bool:
    entry = producers.get(batch.producer_id)
    if entry is None:
        return False
    last_data_offset, epoch = entry
    if last_data_offset is not None:
        return batch.last_offset == last_data_offset
    return batch.is_control and batch.producer_epoch == epoch


def _judge(batch, record, discard_records, offset_map, now_ms, retain_legacy, control_type) -> RecordVerdict:
    tombstone = record.value is None and not batch.is_control
    if discard_records:
        code = "ABORTED_DATA" if not batch.is_control else "MARKER_PAST_HORIZON"
        return RecordVerdict(record.offset, record.key, tombstone, False, code, _why(code, batch.delete_horizon_ms))
    if batch.is_control:
        name = {ABORT: "ABORT", COMMIT: "COMMIT"}.get(control_type, "control")
        return RecordVerdict(record.offset, record.key, False, True, "MARKER", f"{name} marker kept")
    if record.offset > offset_map.latest_offset:
        return RecordVerdict(record.offset, record.key, tombstone, True, "PAST_MAP", "after the offset map's range")
    if record.key is None:
        return RecordVerdict(record.offset, None, tombstone, False, "NO_KEY", "a record without a key")
    latest = offset_map.offsets.get(record.key, -1)
    if record.offset < latest:
        return RecordVerdict(record.offset, record.key, tombstone, False, "SUPERSEDED", f"key rewritten at offset {latest}")
    if not tombstone:
        return RecordVerdict(record.offset, record.key, False, True, "LATEST", "latest value of its key")
    if batch.magic < 2:
        if retain_legacy:
            return RecordVerdict(record.offset, record.key, True, True, "TOMBSTONE", "legacy tombstone: segment mtime "
                                 "after the legacy delete horizon")
        return RecordVerdict(record.offset, record.key, True, False, "TOMBSTONE_EXPIRED", "legacy tombstone: segment "
                             "mtime at or before the legacy delete horizon")
    horizon = batch.delete_horizon_ms
    if horizon is None:
        return RecordVerdict(record.offset, record.key, True, True, "TOMBSTONE", "no delete horizon yet: this pass "
                             "sets one (now + delete.retention.ms)")
    if now_ms < horizon:
        return RecordVerdict(record.offset, record.key, True, True, "TOMBSTONE", f"delete horizon {horizon} not reached")
    return RecordVerdict(record.offset, record.key, True, False, "TOMBSTONE_EXPIRED", f"delete horizon {horizon} passed")


def _why(code: str, horizon) -> str:
    if code == "ABORTED_DATA":
        return "data of an aborted transaction"
    return f"marker no longer needed and its delete horizon {horizon} passed"
