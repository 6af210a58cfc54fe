"""Retention (spec §17, Kafka ``UnifiedLog.deleteOldSegments``): the walk and its reasons, checked
against a small independent oracle of Kafka's rules, on synthetic logs and on broker-written
partitions with many segments."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_cli.storage.retention.retention import PartitionState, SegmentFacts, plan_retention, read_partition_state
from seglog_cli.storage.retention.retention_timeline import DELETED, DUE, GONE, KEPT, build_timeline
from seglog_cli.storage.config.topic_config import TopicConfig

NOW = 1_800_000_000_000


def _state(specs, high_watermark=None, log_start=None) -> PartitionState:
    """``specs``: (base offset, offsets held, size, largest timestamp) per segment."""
    segments = tuple(SegmentFacts(base, base + count, size, ts, "timeindex", ts) for base, count, size, ts in specs)
    log_end = segments[-1].next_offset
    return PartitionState(Path("t-0"), segments, segments[0].base_offset if log_start is None else log_start, "test",
                          log_end if high_watermark is None else high_watermark, "test")


def oracle(segments, log_start, hw, config, now):
    """Kafka's three walks written out plainly: returns (deleted base offsets, new log start)."""
    live = [dict(base=s.base_offset, next=s.next_offset, size=s.size, ts=s.largest_timestamp) for s in segments]
    log_end = live[-1]["next"]
    deleted = []

    def walk(breached):
        taken = 0
        for i, seg in enumerate(live):
            upper = live[i + 1]["base"] if i + 1 < len(live) else log_end
            if not hw >= upper or not breached(i, seg):
                break
            if i == len(live) - 1 and seg["size"] == 0:
                break
            taken += 1
        return taken

    def remove(count):
        nonlocal log_start
        if count == 0:
            return
        if count == len(live):
            live.append(dict(base=log_end, next=log_end, size=0, ts=now))
        deleted.extend(seg["base"] for seg in live[:count])
        del live[:count]
        log_start = max(log_start, live[0]["base"])

    remove(walk(lambda i, seg: i + 1 < len(live) and live[i + 1]["base"] <= log_start))
    if "delete" in config.cleanup_policy.split(","):
        total = sum(seg["size"] for seg in live)
        if config.retention_bytes >= 0 and total >= config.retention_bytes:
            left = [total - config.retention_bytes]

            def by_size(i, seg):
                if left[0] >= seg["size"]:
                    left[0] -= seg["size"]
                    return True
                return False
            remove(walk(by_size))
        if config.retention_ms >= 0:
            remove(walk(lambda i, seg: now - seg["ts"] > config.retention_ms))
    return deleted, log_start


def test_time_walk_stops_at_the_first_young_segment():
    """'I set 10 minutes and still see hour-old messages': a segment written later than its
    neighbours (a producer with a wrong clock) keeps every newer segment."""
    hour = 3_600_000
    state = _state([(0, 10, 100, NOW - 2 * hour), (10, 10, 100, NOW + hour), (20, 10, 100, NOW - hour),
                    (30, 5, 50, NOW)])
    plan = plan_retention(state, TopicConfig(retention_ms=600_000), NOW)
    assert [v.segment.base_offset for v in plan.deleted] == [0]
    assert plan.deleted[0].deleted_by.code == "RETENTION_MS_BREACH"
    held = dict(plan.verdicts[1].holds)["retention.ms"]
    assert held.code == "RETENTION_MS_KEEPS"
    assert dict(plan.verdicts[2].holds)["retention.ms"].code == "WALK_STOPPED"
    assert plan.new_log_start_offset == 10 and plan.reclaimed_bytes == 100 and plan.reclaimed_offsets == 10


def test_high_watermark_holds_segments_and_the_active_segment_is_rolled_when_everything_goes():
    state = _state([(0, 10, 100, NOW - 10), (10, 10, 100, NOW - 10), (20, 5, 50, NOW - 10)], high_watermark=20)
    plan = plan_retention(state, TopicConfig(retention_ms=1), NOW)
    assert [v.segment.base_offset for v in plan.deleted] == [0, 10]
    assert dict(plan.verdicts[2].holds)["retention.ms"].code == "HIGH_WATERMARK"
    assert plan.rolled is None
    full = plan_retention(_state([(0, 10, 100, NOW - 10), (10, 5, 50, NOW - 10)]), TopicConfig(retention_ms=1), NOW)
    assert [v.segment.base_offset for v in full.deleted] == [0, 10]
    assert full.rolled.base_offset == 15 and full.new_log_start_offset == 15


def test_size_walk_counts_the_active_segment_and_an_empty_active_segment_is_never_deleted():
    state = _state([(0, 10, 100, NOW), (10, 10, 100, NOW), (20, 10, 100, NOW)])
    plan = plan_retention(state, TopicConfig(retention_bytes=150), NOW)
    assert [v.segment.base_offset for v in plan.deleted] == [0]  # 300-150=150: one 100-byte segment fits
    reason = plan.deleted[0].deleted_by
    assert (reason.code, reason.excess_before, reason.log_size) == ("RETENTION_SIZE_BREACH", 150, 300)
    empty = _state([(0, 10, 100, NOW - 100), (10, 0, 0, NOW - 100)])
    plan = plan_retention(empty, TopicConfig(retention_ms=1), NOW)
    assert [v.segment.base_offset for v in plan.deleted] == [0]
    assert dict(plan.verdicts[1].holds)["retention.ms"].code == "ACTIVE_EMPTY"


def test_compact_policy_only_applies_the_log_start_offset():
    state = _state([(0, 10, 100, 0), (10, 10, 100, 0), (20, 10, 100, 0)], log_start=15)
    plan = plan_retention(state, TopicConfig(cleanup_policy="compact", retention_ms=1, retention_bytes=1), NOW)
    assert [v.segment.base_offset for v in plan.deleted] == [0]
    assert plan.deleted[0].deleted_by.code == "LOG_START_OFFSET_BREACH"
    assert [w.skipped is not None for w in plan.walks] == [False, True, True]


segment_lists = st.lists(st.tuples(st.integers(1, 20), st.integers(0, 500), st.integers(NOW - 10_000, NOW + 1000)),
                         min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(segment_lists, st.booleans(), st.integers(0, 200), st.integers(0, 200),
       st.sampled_from(["delete", "compact", "compact,delete"]), st.integers(-1, 12_000), st.integers(-1, 2500))
def test_plan_matches_the_oracle(specs, empty_active, hw_back, start_ahead, policy, retention_ms, retention_bytes):
    base, rows = 0, []
    for count, size, ts in specs:
        rows.append((base, count, size, ts))
        base += count
    if empty_active:
        rows.append((base, 0, 0, NOW))
    state = _state(rows)
    log_end = state.log_end_offset
    state = _state(rows, high_watermark=max(0, log_end - hw_back), log_start=min(log_end, start_ahead))
    config = TopicConfig(cleanup_policy=policy, retention_ms=retention_ms, retention_bytes=retention_bytes)
    plan = plan_retention(state, config, NOW)
    expected, new_start = oracle(state.segments, state.log_start_offset, state.high_watermark, config, NOW)
    assert [v.segment.base_offset for v in plan.deleted] == expected
    assert plan.new_log_start_offset == new_start
    for verdict in plan.verdicts:
        if verdict.deleted_by is None:
            assert verdict.holds and not any(hold.deletes for _, hold in verdict.holds)
        else:
            assert verdict.deleted_by.deletes and verdict.rule in ("log-start-offset", "retention.bytes", "retention.ms")


# -- broker-written partitions -----------------------------------------------------------------

def _raw_facts(partition: Path):
    """Sizes from stat, largest timestamps straight from the .timeindex bytes (last entry)."""
    out = []
    for log in sorted(partition.glob("*.log")):
        data = (log.with_suffix(".timeindex")).read_bytes()
        timestamp = struct.unpack_from(">q", data, len(data) - 12)[0] if len(data) >= 12 else None
        out.append((int(log.stem), log.stat().st_size, timestamp))
    return out


def test_broker_partition_grid_matches_the_oracle(corpus):
    partition = corpus / "kafka-4.2.0" / "data" / "smallseg-0"
    state = read_partition_state(partition)
    raw = _raw_facts(partition)
    assert [(s.base_offset, s.size, s.largest_timestamp) for s in state.segments] == raw
    assert {s.timestamp_source for s in state.segments} == {"timeindex"}
    assert state.high_watermark == 3000 and state.log_end_offset == 3000  # replication-offset-checkpoint
    newest = max(ts for *_, ts in raw)
    checked = 0
    for retention_ms in (-1, 0, 100, 300, 600_000):
        for retention_bytes in (-1, 0, 100_000, 300_000, 577_677, 10**9):
            for now in (newest - 1000, newest, newest + 200, newest + 700_000):
                for hw in (None, 0, 1500, 2999):
                    s = read_partition_state(partition, high_watermark=hw)
                    config = TopicConfig(retention_ms=retention_ms, retention_bytes=retention_bytes)
                    plan = plan_retention(s, config, now)
                    expected, new_start = oracle(s.segments, s.log_start_offset, s.high_watermark, config, now)
                    assert [v.segment.base_offset for v in plan.deleted] == expected
                    assert plan.new_log_start_offset == new_start
                    checked += 1
    assert checked == 480


def test_segments_without_timestamps_fall_back_to_the_mtime(corpus, tmp_path):
    """Magic v0 records carry no timestamp: Kafka's largestTimestamp is the file's mtime."""
    source = corpus / "public" / "asayers__kafkalite"
    partition = next(p.parent for p in sorted(source.rglob("*.log")))
    copy = tmp_path / partition.name
    shutil.copytree(partition, copy)
    log = sorted(copy.glob("*.log"))[0]
    os.utime(log, ns=(NOW * 1_000_000, NOW * 1_000_000))
    state = read_partition_state(copy)
    first = state.segments[0]
    assert first.timestamp_source == "mtime" and first.largest_timestamp == NOW
    # no replication-offset-checkpoint beside the copy: assumed at the log end offset
    assert state.high_watermark == state.log_end_offset and "assumed" in state.high_watermark_source
    blocked = plan_retention(read_partition_state(copy, high_watermark=0), TopicConfig(retention_ms=1000), NOW + 1001)
    assert blocked.deleted == [] and dict(blocked.verdicts[0].holds)["retention.ms"].code == "HIGH_WATERMARK"
    assert plan_retention(state, TopicConfig(retention_ms=1000), NOW + 1000).deleted == []
    assert plan_retention(state, TopicConfig(retention_ms=1000), NOW + 1001).deleted[0].segment.base_offset == \
        first.base_offset


def test_timeline_phases_follow_check_interval_and_delete_delay():
    state = _state([(0, 10, 100, NOW - 1000), (10, 10, 100, NOW), (20, 5, 50, NOW + 500)])
    config = TopicConfig(retention_ms=10_000, file_delete_delay_ms=60_000)
    timeline = build_timeline(state, config, NOW, [NOW + 9_500, NOW + 10_501, NOW + 400_000], check_interval_ms=300_000)
    first, second, third = timeline.schedules
    assert first.eligible_at == NOW - 1000 + 10_001
    assert second.eligible_at == NOW + 10_001 and third.eligible_at == NOW + 500 + 10_001
    assert (second.removed_by, second.files_gone_by) == (NOW + 310_001, NOW + 370_001)
    assert [p.phases[0] for p in timeline.points] == [DUE, DUE, GONE]
    assert [p.phases[20] for p in timeline.points] == [KEPT, DUE, GONE]
    assert second.phase(NOW + 320_000) == DELETED  # unreadable, its .deleted files still there
    assert [len(p.plan.deleted) for p in timeline.points] == [1, 3, 3]
    assert timeline.points[1].plan.new_log_start_offset == 25  # rolled: everything went


def test_every_corpus_partition_with_several_segments_matches_the_oracle(corpus):
    from seglog_cli.storage.log.partition_log import partition_dirs_under

    # segments named as Kafka names them (the corpus's node-logs/broker-N dirs hold server.log ...)
    partitions = [p for p in partition_dirs_under(corpus) if len(list(p.glob("[0-9]" * 20 + ".log"))) >= 3
                  and not p.name.startswith("__cluster_metadata")]
    assert len(partitions) >= 5
    for partition in partitions:
        state = read_partition_state(partition)
        stamps = sorted(s.largest_timestamp for s in state.segments)
        sizes = sorted(s.size for s in state.segments)
        for now in (stamps[0], stamps[len(stamps) // 2] + 1, stamps[-1] + 1):
            for retention_ms in (-1, 0, 60_000):
                for retention_bytes in (-1, sizes[len(sizes) // 2], state.size - 1):
                    config = TopicConfig(retention_ms=retention_ms, retention_bytes=retention_bytes)
                    plan = plan_retention(state, config, now)
                    expected, new_start = oracle(state.segments, state.log_start_offset, state.high_watermark,
                                                 config, now)
                    assert [v.segment.base_offset for v in plan.deleted] == expected, partition
                    assert plan.new_log_start_offset == new_start
