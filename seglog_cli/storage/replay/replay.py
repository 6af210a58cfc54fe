"""Plan and apply a replay: the source records sent to a live cluster, exactly once (the plan
in :mod:`~seglog_cli.storage.replay.plan`, the produce loop in
:mod:`~seglog_cli.storage.replay.sender`, the resume and its reconciliation here).

Planning reads the sources' batch headers (what would be sent, per source partition: records,
bytes, offsets, what is skipped and why) and checks the destination before anything is sent:
each destination topic exists (or ``create_topics``: the source's partition count and its
configs from the source's ``__cluster_metadata``), has the partitions the records go to, and
keeps the records' own timestamps (``message.timestamp.type=CreateTime``).

Applying sends with one idempotent producer per compression codec (a record goes to its
destination partition in source order: the producer's sequence numbers keep that order and
drop retried duplicates) and notes every acknowledgement in the progress file
(:mod:`~seglog_cli.storage.replay.progress`). A replay killed at any point and run again first
reads what each destination holds past the progress file's end: records that match the next
source records (key, value, headers, and the timestamp where the topic keeps it) are this
replay's own, acknowledged or not before the kill, and are counted as delivered; anything else
was written by someone else, and the replay stops with one line unless ``accept_foreign_writes``.
So no source record is written twice and none is left out.
"""

from __future__ import annotations

from typing import Callable, Iterator

from seglog_cli.storage.log.errors import DestinationRefusedError
from seglog_cli.storage.replay.cluster import Cluster
from seglog_cli.storage.replay.partitioner import partition_for_key
from seglog_cli.storage.replay.plan import (PartitionPlan, ReplayOptions, ReplayPlan, TopicCheck,  # the plan,
                                             check_destination, plan_source)  # as callers take it
from seglog_cli.storage.replay.progress import Progress
from seglog_cli.storage.replay.sender import ReplayResult, _Sender, _text_keys
from seglog_cli.storage.replay.sources import Skipped, SourcePartition


def dest_partition_of(options: ReplayOptions, source: SourcePartition, key: bytes | None, partitions: int) -> int:
    if not options.repartition:
        return source.partition
    if key is None:
        return source.partition % partitions
    return partition_for_key(key, partitions)


def apply_replay(plan: ReplayPlan, cluster: Cluster, progress: Progress, options: ReplayOptions,
                 records_of: Callable[[SourcePartition, int | None, Skipped], Iterator[tuple]],
                 on_progress=None) -> ReplayResult:
    """Send what ``plan`` lists (its checks passed), resuming from ``progress``."""
    result = ReplayResult()
    if plan.refusals:
        raise DestinationRefusedError(plan.refusals[0])
    creations = [(t.name, t.needed, options.replication_factor, t.configs) for t in plan.topics if t.create]
    cluster.create_topics(creations)
    partition_counts = cluster.describe(sorted({p.dest_topic for p in plan.partitions})).topics
    if progress.cluster_id is None:
        progress.cluster_id = plan.cluster_id
    elif plan.cluster_id is not None and progress.cluster_id != plan.cluster_id:
        raise DestinationRefusedError(f"the progress file was written for cluster {progress.cluster_id}, this is "
                                      f"{plan.cluster_id}: give another --progress file")
    # every destination partition the records can go to, with its end
    dests = sorted({(p.dest_topic, n) for p in plan.partitions
                    for n in (range(partition_counts[p.dest_topic]) if options.repartition else [p.source.partition])})
    known = {(d.topic, d.partition): d.end for d in progress.destinations}
    ends = cluster.end_offsets(dests, known)
    for dest in dests:
        progress.destination(dest[0], dest[1], ends[dest])
    timestamps = {t.name: t.timestamp_type for t in plan.topics}
    _reconcile(plan, cluster, progress, options, ends, records_of, partition_counts, timestamps, result)
    progress.save()
    sender = _Sender(cluster, progress, options, on_progress)
    try:
        for part in plan.partitions:
            source = part.source
            state = progress.source(source.topic, source.partition)
            if state.done:
                continue
            count = partition_counts[part.dest_topic]
            part.skipped = Skipped()  # counted again while sending (the plan's counts were from headers)
            delivered = {progress.destinations[i].partition: last for i, last in state.delivered.items()
                         if progress.destinations[i].topic == part.dest_topic}
            start = min(delivered.values()) + 1 if delivered and not options.repartition else None
            def partition_of(key, _source=source, _count=count):
                return dest_partition_of(options, _source, key, _count)

            fixed = None if options.repartition else source.partition
            result.skipped_delivered += sender.send_records(
                state, part.dest_topic, records_of(source, start, part.skipped), partition_of, delivered, fixed)
        sender.finish()
    except BaseException as exc:
        # what was acknowledged is kept; a source is marked done only once all of it is
        try:
            for producer in sender.producers.values():
                producer.flush(30.0 if isinstance(exc, KeyboardInterrupt) else 10.0)
        finally:
            sender.save()
        raise
    for part in plan.partitions:
        progress.source(part.source.topic, part.source.partition).done = True
    result.sent = sender.acked
    result.unmapped = sender.unmapped
    progress.complete = True
    progress.save()
    return result


def _reconcile(plan, cluster, progress, options, ends, records_of, partition_counts, timestamps, result) -> None:
    """Records in each destination past the progress file's end: this replay's own (matched in
    order to the records it would send next) or someone else's."""
    for index, dest in enumerate(progress.destinations):
        end = ends.get((dest.topic, dest.partition))
        if end is None:
            continue
        if end < dest.end:
            raise DestinationRefusedError(
                f"{dest.label} ends at offset {end}, before the {dest.end} this replay had written there: the "
                f"partition was truncated or the topic recreated; replay into a new topic (--topic-map) or "
                f"start over with a new --progress file")
        if end == dest.end:
            continue
        keep_stamp = timestamps.get(dest.topic) != "LogAppendTime"
        expected = _expected_for(plan, progress, options, dest, records_of, partition_counts)
        matched = 0
        extras = 0
        for offset, key, value, headers, stamp, _type in cluster.read(dest.topic, dest.partition, dest.end, end):
            extras += 1
            if matched == extras - 1:
                candidate = next(expected, None)
                if candidate is not None and _same(candidate[1], key, value, headers, stamp, keep_stamp):
                    state, record = candidate
                    state.add(record[0], index, offset)
                    matched += 1
                    continue
        foreign = extras - matched
        if foreign and not options.accept_foreign_writes:
            raise DestinationRefusedError(
                f"{dest.label}: {foreign} record(s) at offsets {dest.end + matched}..{end - 1} were written by "
                f"someone else since this replay last ran: nothing sent; check who writes there, then give "
                f"--accept-foreign-writes to go on after them")
        result.matched += matched
        result.foreign += foreign
        dest.end = end


def _expected_for(plan, progress, options, dest, records_of, partition_counts) -> Iterator[tuple]:
    """(source progress, record) of the records this replay would send next to ``dest``, in order."""
    index = progress.destination(dest.topic, dest.partition)
    for part in plan.partitions:
        if part.dest_topic != dest.topic:
            continue
        source = part.source
        if not options.repartition and source.partition != dest.partition:
            continue
        state = progress.source(source.topic, source.partition)
        last = state.delivered.get(index)
        count = partition_counts[dest.topic]
        for codec, records in records_of(source, None if last is None else last + 1, Skipped()):
            for r in records:
                if last is not None and r[0] <= last:
                    continue
                if dest_partition_of(options, source, r[3], count) == dest.partition:
                    yield state, (r[0], r[1], r[3], r[4], r[5], codec)


def _same(record: tuple, key, value, headers, stamp, keep_stamp: bool) -> bool:
    _offset, src_stamp, src_key, src_value, src_headers, _codec = record
    if (None if src_key is None else bytes(src_key)) != key or (None if src_value is None else bytes(src_value)) != value:
        return False
    theirs = [(k if isinstance(k, str) else bytes(k).decode("utf-8", "replace"), v) for k, v in headers]
    if theirs != _text_keys(src_headers):  # the keys as they were sent
        return False
    return not keep_stamp or src_stamp <= 0 or src_stamp == stamp


__all__ = ["PartitionPlan", "ReplayOptions", "ReplayPlan", "ReplayResult", "TopicCheck", "apply_replay",
           "check_destination", "dest_partition_of", "plan_source"]
