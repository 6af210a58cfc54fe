"""Which segments Kafka's retention deletes, and why (spec §16; Kafka ``UnifiedLog``).

Kafka's retention task (``UnifiedLog.deleteOldSegments``, every ``log.retention.check.interval.ms``)
runs three walks in this order, each over the log the previous one left:

1. ``deleteLogStartOffsetBreachedSegments``: a segment goes when the *next* segment's base offset
   is <= the log start offset (always, whatever ``cleanup.policy``);
2. ``deleteRetentionSizeBreachedSegments`` (policy has ``delete``, ``retention.bytes`` >= 0 and the
   log is at least that big): oldest first, while ``excess - segment.size >= 0``, the active
   segment included;
3. ``deleteRetentionMsBreachedSegments`` (policy has ``delete``, ``retention.ms`` >= 0): oldest
   first, while ``now - segment.largestTimestamp > retention.ms``.

Each walk is ``deletableSegments(predicate)``: from the oldest segment, stop at the first one
the predicate keeps; a segment is only offered to the predicate when the high watermark is >=
its upper bound (next base offset, or the log end offset for the last one), and the last
segment is never taken when it is empty. When every segment is deletable Kafka first rolls a new
empty active segment at the log end offset (``deleteSegments`` -> ``roll``), so the log start
offset becomes the log end offset. The new log start offset is the first surviving base offset.

``largestTimestamp`` is the segment's max timestamp (the time index's last entry; seglog also
reads the batch headers and takes their max when the index is stale), falling back to the
``.log`` file's mtime when no record has a timestamp: copies lose mtimes, so the source of every
segment's clock is reported (``timestamp_source``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from seglog_cli.storage.log.checkpoints import TopicPartition, offset_checkpoint_view
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.config.topic_config import TopicConfig

REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
DEFAULT_CHECK_INTERVAL_MS = 300000  # log.retention.check.interval.ms


# -- facts read from the files ----------------------------------------------------------------

@dataclass(frozen=True)
class SegmentFacts:
    """What retention needs of one segment: offsets, size, clock."""

    base_offset: int
    next_offset: int  # offset after its last batch (readNextOffset)
    size: int
    largest_timestamp: int
    timestamp_source: str  # "timeindex", "batches" (time index stale or missing), "mtime"
    mtime_ms: int
    log_path: Path | None = None
    first_batch_timestamp: int = -1  # the first batch's max timestamp (max.compaction.lag.ms)

    def as_dict(self) -> dict:
        return {"baseOffset": self.base_offset, "nextOffset": self.next_offset, "size": self.size,
                "largestTimestamp": self.largest_timestamp, "timestampSource": self.timestamp_source,
                "mtimeMs": self.mtime_ms, "file": None if self.log_path is None else self.log_path.name}


def read_segment_facts(segment: LogSegment) -> SegmentFacts:
    mtime_ms = segment.log_path.stat().st_mtime_ns // 1_000_000
    indexed = -1
    time_index = segment.time_index()
    if time_index is not None:
        with time_index:
            count = time_index.dump_entry_count()
            if count:
                indexed = time_index.entry(count - 1).timestamp
    scanned, next_offset, first = -1, segment.base_offset, None
    for batch in segment.batches(resync=False, check_crc=False):
        first = batch.max_timestamp if first is None else first
        scanned = max(scanned, batch.max_timestamp)
        next_offset = batch.next_offset
    if indexed >= 0 and indexed >= scanned:
        largest, source = indexed, "timeindex"
    elif scanned >= 0:
        largest, source = scanned, "batches"
    else:
        largest, source = mtime_ms, "mtime"
    return SegmentFacts(segment.base_offset, next_offset, segment.size, largest, source, mtime_ms,
                        segment.log_path, -1 if first is None else first)


@dataclass(frozen=True)
class PartitionState:
    """A partition as the broker would hold it after loading: segments, log start offset,
    high watermark, log end offset, the cleaner's checkpoint; each with where it came from."""

    path: Path
    segments: tuple[SegmentFacts, ...]
    log_start_offset: int
    log_start_source: str
    high_watermark: int
    high_watermark_source: str
    cleaner_checkpoint: int | None = None

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset if self.segments else 0

    @property
    def size(self) -> int:
        return sum(segment.size for segment in self.segments)


def read_partition_state(path: str | Path, high_watermark: int | None = None,
                         log_start_offset: int | None = None) -> PartitionState:
    """Load ``path`` (a partition dir) with the checkpoints of the log dir around it; explicit
    ``high_watermark`` / ``log_start_offset`` win over the checkpoint files."""
    log = PartitionLog(path)
    try:
        segments = tuple(read_segment_facts(segment) for segment in log.segments)
    finally:
        log.close()
    tp = TopicPartition(log.topic, log.partition) if log.name else None
    first_base = segments[0].base_offset if segments else 0
    log_end = segments[-1].next_offset if segments else 0
    checkpoint_start, start_source = _checkpointed(log.path.parent / LOG_START_CHECKPOINT, tp)
    if log_start_offset is not None:
        checkpoint_start, start_source = log_start_offset, "--log-start-offset"
    # LogLoader: max(checkpointed log start offset, first segment's base offset)
    start = max(checkpoint_start if checkpoint_start is not None else first_base, first_base)
    if checkpoint_start is None or start != checkpoint_start:
        start_source = "first segment" if checkpoint_start is None else f"{start_source}, raised to the first segment"
    hw, hw_source = _checkpointed(log.path.parent / REPLICATION_CHECKPOINT, tp)
    if high_watermark is not None:
        hw, hw_source = high_watermark, "--high-watermark"
    if hw is None:  # Partition starts from 0, but a leader moves it to the log end as soon as its ISR has it
        hw, hw_source = log_end, "no replication-offset-checkpoint entry: assumed at the log end offset"
    clamped = min(max(hw, start), log_end)  # UnifiedLog.updateHighWatermark clamps
    if clamped != hw:
        hw_source += f" (clamped from {hw})"
    cleaner, _ = _checkpointed(log.path.parent / CLEANER_CHECKPOINT, tp)
    return PartitionState(log.path, segments, start, start_source, clamped, hw_source, cleaner)


def _checkpointed(path: Path, tp: TopicPartition | None) -> tuple[int | None, str]:
    if tp is None or not path.is_file():
        return None, "none"
    offsets = offset_checkpoint_view(path)
    return (offsets[tp], path.name) if tp in offsets else (None, "none")


# -- reasons ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class StartOffsetBreach:
    """``StartOffsetBreach``: the next segment starts at or below the log start offset."""

    next_base_offset: int
    log_start_offset: int
    code = "LOG_START_OFFSET_BREACH"
    deletes = True

    def text(self, time_text=None, duration_text=None) -> str:
        return (f"next segment starts at {self.next_base_offset} <= log start offset {self.log_start_offset}")


@dataclass(frozen=True)
class RetentionSizeBreach:
    """``RetentionSizeBreach``: removing the segment still leaves the log >= retention.bytes."""

    excess_before: int
    segment_size: int
    retention_bytes: int
    log_size: int
    code = "RETENTION_SIZE_BREACH"
    deletes = True

    def text(self, time_text=None, duration_text=None) -> str:
        return (f"log size {self.log_size} exceeds retention.bytes {self.retention_bytes} by {self.excess_before} "
                f">= segment size {self.segment_size}")


@dataclass(frozen=True)
class _RetentionMsRule:
    """The time rule's verdict on a segment: its largest timestamp against ``now - retention.ms``."""

    largest_timestamp: int
    timestamp_source: str
    now_ms: int
    retention_ms: int
    relation = ""

    def text(self, time_text: Callable[[int], str] | None = None,
             duration_text: Callable[[int], str] | None = None) -> str:
        """``time_text``/``duration_text``: how a renderer shows epoch ms and ms (raw ms by default)."""
        return _age_text(self.largest_timestamp, self.timestamp_source, self.now_ms - self.largest_timestamp,
                         self.relation, self.retention_ms, time_text, duration_text)


class RetentionMsBreach(_RetentionMsRule):
    """``RetentionMsBreach``: ``now - largestTimestamp > retention.ms``."""

    code = "RETENTION_MS_BREACH"
    deletes = True
    relation = ">"


class RetentionMsHold(_RetentionMsRule):
    """The time rule keeps the segment: ``now - largestTimestamp <= retention.ms``."""

    code = "RETENTION_MS_KEEPS"
    deletes = False
    relation = "<="


def _age_text(largest_timestamp: int, source: str, age_ms: int, relation: str, retention_ms: int,
              time_text, duration_text) -> str:
    when = str(largest_timestamp) if time_text is None else time_text(largest_timestamp)
    if duration_text is None:
        return f"largest timestamp {when} ({source}) is {age_ms} ms old {relation} retention.ms {retention_ms}"
    return (f"largest timestamp {when} ({source}) is {duration_text(age_ms)} old {relation} retention.ms "
            f"{retention_ms} ({duration_text(retention_ms)})")


@dataclass(frozen=True)
class Hold:
    """Why a walk kept a segment (and stopped there): ``code`` is stable, ``detail`` explains."""

    code: str
    detail: str
    deletes = False

    def text(self, time_text=None, duration_text=None) -> str:
        return self.detail


Reason = StartOffsetBreach | RetentionSizeBreach | RetentionMsBreach | RetentionMsHold | Hold
Predicate = Callable[[SegmentFacts, "SegmentFacts | None"], Reason]


def reason_dict(reason: Reason) -> dict:
    return {"code": reason.code, "deletes": reason.deletes, "text": reason.text()}


# -- the walk ---------------------------------------------------------------------------------

@dataclass
class Walk:
    """One ``deletableSegments`` walk: the segments taken (with reasons) and where it stopped."""

    rule: str
    deleted: list[tuple[SegmentFacts, Reason]] = field(default_factory=list)
    stopped_at: SegmentFacts | None = None
    stop_reason: Hold | None = None
    skipped: str | None = None  # the rule did not run at all (policy, limits)


def deletable_segments(segments: list[SegmentFacts], log_end_offset: int, high_watermark: int,
                       predicate: Predicate, rule: str) -> Walk:
    """``UnifiedLog.deletableSegments``: the oldest segments ``predicate`` breaches, up to the
    first it keeps, never past the high watermark, never the last segment when it is empty."""
    walk = Walk(rule)
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        upper_bound = following.base_offset if following else log_end_offset
        if high_watermark < upper_bound:
            walk.stopped_at, walk.stop_reason = segment, Hold(
                "HIGH_WATERMARK", f"holds offsets up to {upper_bound - 1}, at or past the high watermark {high_watermark}")
            break
        reason = predicate(segment, following)
        if not reason.deletes:
            walk.stopped_at, walk.stop_reason = segment, reason
            break
        if following is None and segment.size == 0:
            walk.stopped_at, walk.stop_reason = segment, Hold("ACTIVE_EMPTY", "the active segment is empty")
            break
        walk.deleted.append((segment, reason))
    return walk


def start_offset_predicate(log_start_offset: int) -> Predicate:
    def predicate(segment, following):
        if following is not None and following.base_offset <= log_start_offset:
            return StartOffsetBreach(following.base_offset, log_start_offset)
        if following is None:
            return Hold("LOG_START_OFFSET_KEEPS", "the last segment is never removed by the log start offset")
        return Hold("LOG_START_OFFSET_KEEPS", f"next segment starts at {following.base_offset} > log start offset "
                                              f"{log_start_offset}")
    return predicate


def size_predicate(log_size: int, retention_bytes: int) -> Predicate:
    excess = [log_size - retention_bytes]

    def predicate(segment, following):
        before = excess[0]
        if before - segment.size >= 0:
            excess[0] -= segment.size
            return RetentionSizeBreach(before, segment.size, retention_bytes, log_size)
        return Hold("RETENTION_SIZE_KEEPS", f"remaining excess {before} < segment size {segment.size}")
    return predicate


def time_predicate(now_ms: int, retention_ms: int) -> Predicate:
    def predicate(segment, following):
        age = now_ms - segment.largest_timestamp
        if age > retention_ms:
            return RetentionMsBreach(segment.largest_timestamp, segment.timestamp_source, now_ms, retention_ms)
        return RetentionMsHold(segment.largest_timestamp, segment.timestamp_source, now_ms, retention_ms)
    return predicate


# -- the plan ---------------------------------------------------------------------------------

@dataclass
class SegmentVerdict:
    """One segment: the reason that deletes it, or the reason each walk kept it."""

    segment: SegmentFacts
    deleted_by: Reason | None = None
    rule: str | None = None  # the walk that deleted it
    holds: list[tuple[str, Hold]] = field(default_factory=list)

    def as_dict(self, now_ms: int) -> dict:
        document = self.segment.as_dict()
        document["ageMs"] = now_ms - self.segment.largest_timestamp
        document["action"] = "delete" if self.deleted_by else "keep"
        document["deletedBy"] = None if self.deleted_by is None else dict(reason_dict(self.deleted_by), rule=self.rule)
        document["keptBy"] = [dict(reason_dict(hold), rule=rule) for rule, hold in self.holds]
        return document


@dataclass
class RetentionPlan:
    """What one run of ``deleteOldSegments`` at ``now_ms`` removes."""

    state: PartitionState
    config: TopicConfig
    now_ms: int
    walks: list[Walk]
    verdicts: list[SegmentVerdict]
    rolled: SegmentFacts | None  # the empty active segment Kafka rolls before deleting every segment
    new_log_start_offset: int

    @property
    def deleted(self) -> list[SegmentVerdict]:
        return [verdict for verdict in self.verdicts if verdict.deleted_by is not None]

    @property
    def reclaimed_bytes(self) -> int:
        return sum(verdict.segment.size for verdict in self.deleted)

    @property
    def reclaimed_offsets(self) -> int:
        return self.new_log_start_offset - self.state.log_start_offset

    def as_dict(self) -> dict:
        state = self.state
        return {
            "partition": str(state.path), "nowMs": self.now_ms, "cleanupPolicy": self.config.cleanup_policy,
            "retentionMs": self.config.retention_ms, "retentionBytes": self.config.retention_bytes,
            "logStartOffset": state.log_start_offset, "logStartSource": state.log_start_source,
            "highWatermark": state.high_watermark, "highWatermarkSource": state.high_watermark_source,
            "logEndOffset": state.log_end_offset, "size": state.size,
            "walks": [{"rule": w.rule, "skipped": w.skipped, "deleted": [s.base_offset for s, _ in w.deleted],
                       "stoppedAt": None if w.stopped_at is None else w.stopped_at.base_offset,
                       "stopReason": None if w.stop_reason is None else reason_dict(w.stop_reason)}
                      for w in self.walks],
            "segments": [verdict.as_dict(self.now_ms) for verdict in self.verdicts],
            "rolledActiveSegment": None if self.rolled is None else self.rolled.base_offset,
            "deletedSegments": [verdict.segment.base_offset for verdict in self.deleted],
            "reclaimedBytes": self.reclaimed_bytes, "reclaimedOffsets": self.reclaimed_offsets,
            "newLogStartOffset": self.new_log_start_offset,
        }


RULE_START_OFFSET, RULE_SIZE, RULE_TIME = "log-start-offset", "retention.bytes", "retention.ms"


def plan_retention(state: PartitionState, config: TopicConfig, now_ms: int) -> RetentionPlan:
    """``UnifiedLog.deleteOldSegments`` at ``now_ms``: the three walks in Kafka's order."""
    segments = list(state.segments)
    log_end, high_watermark = state.log_end_offset, state.high_watermark
    log_start = state.log_start_offset
    walks: list[Walk] = []
    rolled = None
    for rule in (RULE_START_OFFSET, RULE_SIZE, RULE_TIME):
        predicate, skipped = _rule(rule, config, segments, log_start, now_ms)
        if predicate is None:
            walks.append(Walk(rule, skipped=skipped))
            continue
        walk = deletable_segments(segments, log_end, high_watermark, predicate, rule)
        walks.append(walk)
        if walk.deleted:
            if len(walk.deleted) == len(segments):  # deleteSegments: roll first, a log keeps one segment
                rolled = SegmentFacts(log_end, log_end, 0, now_ms, "mtime", now_ms, None)
                segments.append(rolled)
            del segments[:len(walk.deleted)]
            log_start = max(log_start, segments[0].base_offset)
    return RetentionPlan(state, config, now_ms, walks, _verdicts(state, walks), rolled, log_start)


def _rule(rule: str, config: TopicConfig, segments: list[SegmentFacts], log_start: int, now_ms: int):
    if rule == RULE_START_OFFSET:
        return start_offset_predicate(log_start), None
    if not config.delete:
        return None, f"cleanup.policy={config.cleanup_policy} (no delete): only the log start offset deletes"
    if rule == RULE_SIZE:
        size = sum(segment.size for segment in segments)
        if config.retention_bytes < 0:
            return None, "retention.bytes < 0: no size limit"
        if size < config.retention_bytes:
            return None, f"log size {size} < retention.bytes {config.retention_bytes}"
        return size_predicate(size, config.retention_bytes), None
    if config.retention_ms < 0:
        return None, "retention.ms < 0: no time limit"
    return time_predicate(now_ms, config.retention_ms), None


def _verdicts(state: PartitionState, walks: list[Walk]) -> list[SegmentVerdict]:
    verdicts = {segment.base_offset: SegmentVerdict(segment) for segment in state.segments}
    order = [segment.base_offset for segment in state.segments]
    for walk in walks:
        for segment, reason in walk.deleted:
            if segment.base_offset in verdicts:
                verdict = verdicts[segment.base_offset]
                verdict.deleted_by, verdict.rule = reason, walk.rule
        stop = None if walk.stopped_at is None else walk.stopped_at.base_offset
        for base in order:
            verdict = verdicts[base]
            if verdict.deleted_by is not None:
                continue
            if walk.skipped:
                verdict.holds.append((walk.rule, Hold("RULE_OFF", walk.skipped)))
            elif base == stop:
                verdict.holds.append((walk.rule, walk.stop_reason))
            elif stop is not None and base > stop:
                verdict.holds.append((walk.rule, Hold("WALK_STOPPED", f"the walk stopped at segment {stop}")))
    return [verdicts[base] for base in order]
