"""A what-if model of rolling and retention without data (spec §16, §17.2; Kafka ``LogSegment``).

A producer appends one batch of ``batch_records`` records every ``batch_records / records_per_sec``
seconds; each batch takes ``batch_records * record_bytes + batch_overhead_bytes`` bytes in the
``.log`` (``record_bytes`` is what one record costs on disk; leave the overhead at 0 when the record
size already includes the batch framing, as the Strimzi example does).

Rolling (``LogSegment.shouldRoll``, checked before each append) happens before the batch that
finds any of:

* ``size > segment.bytes - batch size``: a segment holds ``floor(segment.bytes / batch)`` batches;
* ``now - first batch's timestamp > segment.ms - jitter`` (and the segment not empty);
* the offset index full (``segment.index.bytes / 8`` entries) or the time index full
  (``segment.index.bytes / 12 - 1`` entries: ``TimeIndex.isFull`` keeps the last slot for the
  entry written at roll). ``LogSegment.append`` adds an entry to both when more than
  ``index.interval.bytes`` were appended since the last one, *before* counting the batch:
  the first entry comes with batch ``floor(interval / batch) + 2``, then one every
  ``floor(interval / batch) + 1`` batches.

Retention (``retention.ms``): a segment is deletable once ``now - its last batch's timestamp >
retention.ms``; the check runs every ``log.retention.check.interval.ms``; the files are removed
``file.delete.delay.ms`` after. So a record stays readable between ``retention.ms`` (the last
record of a segment, deleted right when it expires) and ``fill time + retention.ms + check
interval`` (the first record of a segment); on disk ``file.delete.delay.ms`` longer.
Size retention (``retention.bytes``) deletes a segment once the bytes written from its start reach
``retention.bytes + segment size``. Assumed: timestamps grow with every batch (<= 1 batch per ms),
no segment.jitter.ms, the high watermark follows the log end.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction

from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.text import camel_case
from seglog_cli.storage.retention.retention import DEFAULT_CHECK_INTERVAL_MS
from seglog_cli.storage.config.topic_config import TopicConfig

OFFSET_INDEX_ENTRY = 8
SHOWN_SEGMENTS = 4
TIME_INDEX_ENTRY = 12


class ModelError(SeglogError):
    """A producer or config the model cannot run (a batch larger than a segment, no rate)."""


@dataclass(frozen=True)
class Producer:
    records_per_sec: float
    record_bytes: int
    batch_records: int = 1
    batch_overhead_bytes: int = 0

    @property
    def batch_bytes(self) -> int:
        return self.batch_records * self.record_bytes + self.batch_overhead_bytes

    @property
    def batch_interval_ms(self) -> float:
        return 1000.0 * self.batch_records / self.records_per_sec

    @property
    def exact_interval_ms(self) -> Fraction:
        """The interval without rounding, for the roll boundary (``> segment.ms`` is strict)."""
        return Fraction(1000 * self.batch_records) / Fraction(self.records_per_sec)


@dataclass(frozen=True)
class RollModel:
    batches_per_segment: int
    records_per_segment: int
    segment_bytes_used: int
    roll_cause: str  # "segment.bytes", "segment.ms", "offset index full", "time index full"
    index_entries: int  # offset/time index entries when the segment rolls
    fill_ms: float  # first record to last record of a segment
    roll_after_ms: float  # first record to the roll (the next batch's arrival)
    candidates: dict  # cause -> batches it would allow


@dataclass(frozen=True)
class LifetimeModel:
    min_readable_ms: float | None
    max_readable_ms: float | None
    min_on_disk_ms: float | None
    max_on_disk_ms: float | None
    deciding_rule: str | None  # "retention.ms", "retention.bytes" or None (kept forever)


@dataclass(frozen=True)
class SegmentWindow:
    """Segment ``index`` of a log written from time 0: when its first record comes, when it
    rolls, and when retention may delete it (None: never)."""

    index: int
    first_record_ms: float
    rolled_ms: float
    deletable_ms: float | None
    unreadable_by_ms: float | None
    files_gone_by_ms: float | None


@dataclass(frozen=True)
class RetentionModel:
    producer: Producer
    roll: RollModel
    lifetime: LifetimeModel
    check_interval_ms: int
    file_delete_delay_ms: int
    segments: tuple[SegmentWindow, ...] = ()

    def as_dict(self) -> dict:
        return {"producer": _camel(asdict(self.producer)), "roll": _camel(asdict(self.roll)),
                "lifetime": _camel(asdict(self.lifetime)), "checkIntervalMs": self.check_interval_ms,
                "fileDeleteDelayMs": self.file_delete_delay_ms, "segments": [_camel(asdict(s)) for s in self.segments]}


def _camel(fields: dict) -> dict:
    """A dataclass's fields with the camelCase names every seglog JSON document uses."""
    return {camel_case(key): _camel(value) if isinstance(value, dict) else value for key, value in fields.items()}


def entries_after(batches: int, interval_bytes: int, batch_bytes: int) -> int:
    """Index entries ``LogSegment.append`` has written after ``batches`` appends."""
    period = interval_bytes // batch_bytes + 1
    first = period + 1
    return 0 if batches < first else 1 + (batches - first) // period


def batches_until_entries(entries: int, interval_bytes: int, batch_bytes: int) -> int:
    """Appends after which the index holds ``entries`` entries (then the next append rolls)."""
    period = interval_bytes // batch_bytes + 1
    return period + 1 + (entries - 1) * period if entries > 0 else 0


def model_roll(producer: Producer, config: TopicConfig) -> RollModel:
    batch = producer.batch_bytes
    if producer.records_per_sec <= 0 or producer.record_bytes <= 0 or producer.batch_records <= 0:
        raise ModelError("records/s, record size and records per batch must be positive")
    if batch > config.segment_bytes:
        raise ModelError(f"a batch of {batch} bytes does not fit in segment.bytes={config.segment_bytes}")
    interval = producer.batch_interval_ms
    offset_entries = config.segment_index_bytes // OFFSET_INDEX_ENTRY
    time_entries = config.segment_index_bytes // TIME_INDEX_ENTRY - 1
    candidates = {
        "segment.bytes": config.segment_bytes // batch,
        "segment.ms": int(Fraction(config.max_segment_ms) / producer.exact_interval_ms) + 1,  # min(segment.ms, max.compaction.lag.ms) if compacted
        "offset index full": batches_until_entries(offset_entries, config.index_interval_bytes, batch),
        "time index full": batches_until_entries(time_entries, config.index_interval_bytes, batch),
    }
    candidates = {cause: max(1, count) for cause, count in candidates.items()}
    cause = min(candidates, key=lambda name: candidates[name])
    batches = candidates[cause]
    return RollModel(batches, batches * producer.batch_records, batches * batch, cause,
                     entries_after(batches, config.index_interval_bytes, batch),
                     (batches - 1) * interval, batches * interval, candidates)


def model_retention(producer: Producer, config: TopicConfig,
                    check_interval_ms: int = DEFAULT_CHECK_INTERVAL_MS) -> RetentionModel:
    roll = model_roll(producer, config)
    interval = producer.batch_interval_ms
    delay = config.file_delete_delay_ms
    # time from a segment's first batch until a check may delete it, per rule
    after_first: dict[str, float] = {}
    if config.delete and config.retention_ms >= 0:
        after_first["retention.ms"] = roll.fill_ms + config.retention_ms + 1
    if config.delete and config.retention_bytes >= 0:
        needed = config.retention_bytes + roll.segment_bytes_used
        batches = -(-needed // producer.batch_bytes)  # ceil
        after_first["retention.bytes"] = max((batches - 1) * interval, roll.fill_ms)
    if not after_first:
        lifetime = LifetimeModel(None, None, None, None, None)
    else:
        rule = min(after_first, key=lambda name: after_first[name])
        eligible = after_first[rule]
        shortest = eligible - roll.fill_ms  # the segment's last record
        lifetime = LifetimeModel(shortest, eligible + check_interval_ms, shortest + delay,
                                 eligible + check_interval_ms + delay, rule)
    windows = []
    for index in range(SHOWN_SEGMENTS):
        first = index * roll.roll_after_ms
        eligible = None if lifetime.deciding_rule is None else first + after_first[lifetime.deciding_rule]
        windows.append(SegmentWindow(index, first, first + roll.roll_after_ms, eligible,
                                     None if eligible is None else eligible + check_interval_ms,
                                     None if eligible is None else eligible + check_interval_ms + delay))
    return RetentionModel(producer, roll, lifetime, check_interval_ms, delay, tuple(windows))
