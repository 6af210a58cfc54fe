"""When retention removes each segment, if nothing more is written (spec §16.3).

The broker checks retention every ``log.retention.check.interval.ms`` (first check 30 s after
start-up, ``LogManager.InitialTaskDelayMs``); a compacted log (``compact`` or ``compact,delete``) is
left to the cleaner thread, which runs ``deleteOldSegments`` for it after every cleaning attempt,
every ``log.cleaner.backoff.ms`` (15 s) when idle (``LogCleaner.cleanFilthiestLog``,
``LogCleanerManager.deletableLogs``). So a segment that becomes deletable at ``E`` is
removed from reads at the first check in ``[E, E + interval)``; its files are renamed
``.deleted`` and removed ``file.delete.delay.ms`` later (``LocalLog.deleteSegmentFiles`` via the
scheduler). Offline the check schedule is unknown, so each segment gets the window.

``E`` is ``now`` for what the plan at ``now`` deletes (log start offset, size and time walks);
for the rest it is when the time walk reaches it: the running maximum of the largest timestamps
from the first surviving segment, plus ``retention.ms`` + 1 ms (``now - largest > retention``),
provided the high watermark lets the walk reach it. Size and log-start-offset deletions do not
grow with time when nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass

from seglog_cli.storage.retention.retention import (
    DEFAULT_CHECK_INTERVAL_MS,
    PartitionState,
    RetentionPlan,
    SegmentFacts,
    plan_retention,
)
from seglog_cli.storage.config.topic_config import TopicConfig

KEPT, DUE, DELETED, GONE = "kept", "due", "deleted", "gone"


@dataclass(frozen=True)
class SegmentSchedule:
    """Deletable from ``eligible_at``; readable until at most ``removed_by``; its files gone
    between ``eligible_at + file.delete.delay.ms`` and ``files_gone_by``. None: never (without
    new data)."""

    segment: SegmentFacts
    eligible_at: int | None
    rule: str | None
    removed_by: int | None
    files_gone_by: int | None
    note: str = ""

    def phase(self, at_ms: int) -> str:
        if self.eligible_at is None or at_ms < self.eligible_at:
            return KEPT
        if at_ms < self.removed_by:
            return DUE
        return DELETED if at_ms < self.files_gone_by else GONE

    def as_dict(self) -> dict:
        return {"baseOffset": self.segment.base_offset, "eligibleAt": self.eligible_at, "rule": self.rule,
                "removedBy": self.removed_by, "filesGoneBy": self.files_gone_by, "note": self.note}


@dataclass(frozen=True)
class TimelinePoint:
    at_ms: int
    plan: RetentionPlan
    phases: dict[int, str]  # base offset -> phase

    def as_dict(self) -> dict:
        return {"atMs": self.at_ms, "deletedSegments": [v.segment.base_offset for v in self.plan.deleted],
                "reclaimedBytes": self.plan.reclaimed_bytes, "newLogStartOffset": self.plan.new_log_start_offset,
                "phases": {str(base): phase for base, phase in self.phases.items()}}


@dataclass(frozen=True)
class Timeline:
    now_ms: int
    check_interval_ms: int
    file_delete_delay_ms: int
    schedules: list[SegmentSchedule]
    points: list[TimelinePoint]
    check_source: str = "log.retention.check.interval.ms"

    def as_dict(self) -> dict:
        return {"nowMs": self.now_ms, "checkIntervalMs": self.check_interval_ms, "checkIntervalSource": self.check_source,
                "fileDeleteDelayMs": self.file_delete_delay_ms,
                "schedule": [s.as_dict() for s in self.schedules], "at": [p.as_dict() for p in self.points]}


def schedule_segments(state: PartitionState, config: TopicConfig, now_ms: int,
                      check_interval_ms: int = DEFAULT_CHECK_INTERVAL_MS) -> list[SegmentSchedule]:
    now_plan = plan_retention(state, config, now_ms)
    delay = config.file_delete_delay_ms
    schedules = []
    running_max = None
    blocked = None
    for i, verdict in enumerate(now_plan.verdicts):
        segment = verdict.segment
        if verdict.deleted_by is not None:
            schedules.append(_window(segment, now_ms, verdict.rule, check_interval_ms, delay))
            continue
        following = state.segments[i + 1] if i + 1 < len(state.segments) else None
        upper_bound = following.base_offset if following else state.log_end_offset
        if blocked is None:
            if not config.delete or config.retention_ms < 0:
                blocked = "no time retention (cleanup.policy or retention.ms)"
            elif state.high_watermark < upper_bound:
                blocked = f"high watermark {state.high_watermark} < upper bound {upper_bound}"
            elif following is None and segment.size == 0:
                blocked = "empty active segment"
        if blocked is not None:
            schedules.append(SegmentSchedule(segment, None, None, None, None, blocked))
            continue
        running_max = segment.largest_timestamp if running_max is None else max(running_max, segment.largest_timestamp)
        eligible = running_max + config.retention_ms + 1
        note = "" if running_max == segment.largest_timestamp else \
            f"waits for an earlier segment (largest timestamp {running_max})"
        schedules.append(_window(segment, eligible, "retention.ms", check_interval_ms, delay, note))
    return schedules


def _window(segment, eligible, rule, interval, delay, note="") -> SegmentSchedule:
    return SegmentSchedule(segment, eligible, rule, eligible + interval, eligible + interval + delay, note)


def build_timeline(state: PartitionState, config: TopicConfig, now_ms: int, at_ms: list[int],
                   check_interval_ms: int = DEFAULT_CHECK_INTERVAL_MS,
                   check_source: str = "log.retention.check.interval.ms") -> Timeline:
    """The schedule from ``now_ms`` and, at every time in ``at_ms``, the plan a check then would run."""
    schedules = schedule_segments(state, config, now_ms, check_interval_ms)
    points = [TimelinePoint(at, plan_retention(state, config, at),
                            {s.segment.base_offset: s.phase(at) for s in schedules})
              for at in sorted(at_ms)]
    return Timeline(now_ms, check_interval_ms, config.file_delete_delay_ms, schedules, points, check_source)
