"""A replay's plan: what each source partition sends (records, bytes, offsets, codecs, what is
skipped and why, read from the batch headers) and the destination checked before anything is
sent: each topic exists (or is created with the source's partition count and configs), has the
partitions the records go to, keeps the records' timestamps, and accepts them
(``message.timestamp.before/after.max.ms``). :mod:`~seglog_cli.storage.replay.replay` applies it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import repeat
from operator import and_
from pathlib import Path
from typing import Callable, Iterator

from seglog_cli.storage.dump.dump import dump, readable_partition_files
from seglog_cli.storage.log.batch_header import LOG_OVERHEAD, BatchHeader
from seglog_cli.storage.log.batches import BatchRun
from seglog_cli.storage.replay.cluster import CODEC_NAMES, Cluster
from seglog_cli.storage.replay.sources import (
    Selection,
    Skipped,
    SourcePartition,
    batch_verdict,
)


@dataclass
class ReplayOptions:
    bootstrap: str
    topic_map: dict[str, str] = field(default_factory=dict)
    selection: Selection = field(default_factory=Selection)
    repartition: bool = False
    compression: int | None = None  # None: each record as its source batch
    create_topics: bool = False
    replication_factor: int = -1
    accept_foreign_writes: bool = False
    accept_log_append_time: bool = False
    throttle_bytes_per_s: float | None = None

    def dest_topic(self, topic: str) -> str:
        return self.topic_map.get(topic, topic)

    def identity(self, sources: list[SourcePartition], display=str) -> dict:
        """What makes two runs the same replay (the progress file must belong to it); ``display``
        maps a path to what the user named (a remote URL for a remote view's path)."""
        s = self.selection
        return {"sources": sorted(display(str(Path(src.where).absolute())) for src in sources),
                "bootstrap": self.bootstrap, "topicMap": dict(sorted(self.topic_map.items())),
                "repartition": self.repartition, "fromOffset": s.from_offset, "toOffset": s.to_offset,
                "fromTimestamp": s.from_timestamp, "toTimestamp": s.to_timestamp,
                "includeAborted": s.include_aborted}


# -- the plan ---------------------------------------------------------------------------------------

@dataclass
class PartitionPlan:
    source: SourcePartition
    dest_topic: str
    records: int = 0
    bytes: int = 0  # of the batches read (as stored: compressed when the source is)
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    max_timestamp: int | None = None  # the newest record (a batch's max timestamp)
    min_timestamp: int | None = None  # the oldest (a batch's base timestamp)
    codecs: set = field(default_factory=set)
    skipped: Skipped = field(default_factory=Skipped)
    delivered: int = 0  # records a previous run already put in the destination

    def as_dict(self) -> dict:
        return {"topic": self.source.topic, "partition": self.source.partition, "source": self.source.where,
                "copiesNotRead": self.source.copies, "destinationTopic": self.dest_topic,
                "records": self.records, "bytes": self.bytes, "firstOffset": self.first_offset,
                "lastOffset": self.last_offset, "firstTimestamp": self.first_timestamp,
                "lastTimestamp": self.last_timestamp, "maxTimestamp": self.max_timestamp, "minTimestamp": self.min_timestamp,
                "compression": sorted(CODEC_NAMES[c] for c in self.codecs), "skipped": self.skipped.as_dict(),
                "alreadyDelivered": self.delivered}


@dataclass
class TopicCheck:
    name: str
    exists: bool
    partitions: int | None  # in the destination (None: missing)
    needed: int  # the partitions the records go to (highest + 1), or the source's count to create
    timestamp_type: str | None = None
    create: bool = False
    configs: dict[str, str] = field(default_factory=dict)  # to create it with

    def as_dict(self) -> dict:
        return {"topic": self.name, "exists": self.exists, "partitions": self.partitions,
                "partitionsNeeded": self.needed, "timestampType": self.timestamp_type, "create": self.create,
                "configs": self.configs}


@dataclass
class ReplayPlan:
    partitions: list[PartitionPlan]
    topics: list[TopicCheck]
    refusals: list[str] = field(default_factory=list)  # checks that stop --apply
    notes: list[str] = field(default_factory=list)
    cluster_id: str | None = None
    progress_path: str | None = None
    resumed: bool = False

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)

    @property
    def warnings(self) -> int:
        """Records skipped for another reason than a consumer's: damage, no marker (yet)."""
        return sum(p.skipped.damaged + p.skipped.open + p.skipped.unknown for p in self.partitions)

    def as_dict(self) -> dict:
        return {"clusterId": self.cluster_id, "progress": self.progress_path, "resumed": self.resumed,
                "records": self.records, "bytes": self.bytes,
                "partitions": [p.as_dict() for p in self.partitions], "topics": [t.as_dict() for t in self.topics],
                "refusals": self.refusals, "notes": self.notes}


def plan_source(source: SourcePartition, options: ReplayOptions,
                records: Callable[[], Iterator[tuple]] | None = None) -> PartitionPlan:
    """What would be sent of ``source``: from its batch headers (a partition dir) or its records
    (JSON Lines, through ``records``)."""
    plan = PartitionPlan(source, options.dest_topic(source.topic))
    if records is not None:
        for offset, stamp, key, value, headers, codec in records():
            _count(plan, offset, offset, stamp, 1, record_size(key, value, headers), codec)
        return plan
    selection = options.selection
    dump_options = selection.dump_options()
    low, high = _resolved_range(source, dump_options)
    ranged = low is not None or high is not None
    include_aborted = selection.include_aborted
    files = list(readable_partition_files(source.directory, ("log",), dump_options, source.remote))
    totals = _Totals()
    for event in dump(files, _headers_only(dump_options)):
        if type(event) is BatchRun:
            lists = event.chunks()
        elif type(event) is list:
            lists = (event,)
        else:
            continue
        for batches in lists:
            if not ranged and totals.add_plain(batches):
                continue
            for batch in batches:
                if type(batch) is not BatchHeader:
                    continue
                count = batch.records_count if batch.magic >= 2 else 1
                if ranged:
                    first, last = batch.base_offset, batch.last_offset
                    if (low is not None and last < low) or (high is not None and first > high):
                        continue
                    if low is not None and first < low or high is not None and last > high:
                        cut = (last if high is None else min(last, high)) - (first if low is None else max(first, low)) + 1
                        count = min(max(0, cut), batch.records_count)
                verdict = batch_verdict(source, batch, include_aborted)
                if verdict != "send":
                    plan.skipped.add(verdict, count)
                elif count > 0:
                    totals.add(batch, count)
    totals.note(plan, low, high)
    return plan


class _Totals:
    """What :func:`plan_source` counts of the batches it would send, noted in the plan at the
    end. The headers of a whole list of plain batches (the common case) are added at once, a
    column at a time: a Python step per batch would cost as much as the rest of the plan."""

    __slots__ = ("records", "bytes", "codecs", "first", "last", "newest", "oldest")

    def __init__(self):
        self.records = self.bytes = 0
        self.codecs: set[int] = set()
        self.first = self.last = None  # the first and last batch counted
        self.newest = self.oldest = None  # the highest max timestamp, the lowest base timestamp >= 0

    def add(self, batch: BatchHeader, count: int) -> None:
        """One batch sent (``count`` of its records)."""
        self.records += count
        self.bytes += batch.size
        magic = batch.magic
        self.codecs.add(batch.compression if magic >= 1 else 0)
        if self.first is None:
            self.first = batch
        self.last = batch
        stamp = batch.max_timestamp
        if self.newest is None or stamp > self.newest:
            self.newest = stamp
        stamp = batch.base_timestamp if magic >= 2 else stamp
        if stamp >= 0 and (self.oldest is None or stamp < self.oldest):
            self.oldest = stamp

    def add_plain(self, batches: list) -> bool:
        """Add every batch of ``batches`` if each is a valid v2 data batch outside transactions
        with records (batch_verdict's "send", counted whole), else add nothing: False."""
        if not batches or type(batches[0]) is not BatchHeader:
            return False
        count = len(batches)
        columns = tuple(zip(*batches))  # BatchHeader's fields, in _HEADER_FIELDS order
        magic, crc, attributes, computed, records = columns[4], columns[5], columns[6], columns[14], columns[13]
        if not (magic.count(2) == count and crc == computed and min(columns[2]) >= 49 and min(records) > 0
                and not any(map(and_, attributes, repeat(0x30, count)))):
            return False
        self.records += sum(records)
        self.bytes += sum(columns[2]) + LOG_OVERHEAD * count
        self.codecs.update(map(and_, attributes, repeat(0x07, count)))
        if self.first is None:
            self.first = batches[0]
        self.last = batches[-1]
        newest = max(columns[9])
        if self.newest is None or newest > self.newest:
            self.newest = newest
        oldest = min(columns[8])
        if oldest < 0:
            oldest = min((stamp for stamp in columns[8] if stamp >= 0), default=None)
        if oldest is not None and (self.oldest is None or oldest < self.oldest):
            self.oldest = oldest
        return True

    def note(self, plan: PartitionPlan, low: int | None, high: int | None) -> None:
        first, last = self.first, self.last
        if first is None:
            return
        plan.records, plan.bytes, plan.codecs = self.records, self.bytes, self.codecs
        plan.first_offset = first.base_offset if low is None else max(first.base_offset, low)
        plan.last_offset = last.last_offset if high is None else min(last.last_offset, high)
        plan.first_timestamp, plan.last_timestamp = first.max_timestamp, last.max_timestamp
        plan.max_timestamp, plan.min_timestamp = self.newest, self.oldest


def _headers_only(options):
    from dataclasses import replace
    return replace(options, deep_iteration=False, from_timestamp=None, to_timestamp=None)


def _resolved_range(source: SourcePartition, options) -> tuple[int | None, int | None]:
    from seglog_cli.storage.dump.dump import resolve_range
    if not options.has_range:
        return None, None
    return resolve_range(str(Path(source.directory).absolute()), options)


def _count(plan: PartitionPlan, first: int, last: int, stamp: int, count: int, size: int, codec: int,
           oldest: int | None = None) -> None:
    if count <= 0:
        return
    plan.records += count
    plan.bytes += size
    plan.codecs.add(codec)
    if plan.first_offset is None:
        plan.first_offset, plan.first_timestamp = first, stamp
    plan.last_offset, plan.last_timestamp = last, stamp
    if stamp is not None and (plan.max_timestamp is None or stamp > plan.max_timestamp):
        plan.max_timestamp = stamp
    oldest = stamp if oldest is None else oldest
    if oldest is not None and oldest >= 0 and (plan.min_timestamp is None or oldest < plan.min_timestamp):
        plan.min_timestamp = oldest


def record_size(key, value, headers) -> int:
    return (len(key) if key is not None else 0) + (len(value) if value is not None else 0) + sum(
        len(k) + (len(v) if v is not None else 0) for k, v in headers)


def check_destination(plan: ReplayPlan, cluster: Cluster, options: ReplayOptions,
                      source_partition_counts: dict[str, int], source_configs: dict[str, dict[str, str]],
                      now_ms: int | None = None) -> None:
    """The destination's topics against what the plan sends (refusals and notes in ``plan``)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    wanted: dict[str, int] = {}
    for part in plan.partitions:
        wanted[part.dest_topic] = max(wanted.get(part.dest_topic, 0), part.source.partition + 1)
    info = cluster.describe(sorted(wanted))
    plan.cluster_id = info.cluster_id
    existing = [name for name in wanted if name in info.topics]
    configs = cluster.topic_configs(existing)
    for name, needed in sorted(wanted.items()):
        sources = [p.source.topic for p in plan.partitions if p.dest_topic == name]
        count = max([needed] + [source_partition_counts.get(t, 0) for t in sources])
        if name not in info.topics:
            check = TopicCheck(name, False, None, count)
            if options.create_topics:
                check.create = True
                # a broker refuses internal.* configs in CreateTopics (they are set in tests only)
                check.configs = {k: v for k, v in source_configs.get(sources[0], {}).items()
                                 if not k.startswith("internal.")}
                check.timestamp_type = check.configs.get("message.timestamp.type", "CreateTime")
                _timestamp_bounds(plan, name, check.configs, now_ms)
                if check.timestamp_type == "LogAppendTime" and not options.accept_log_append_time:
                    plan.refusals.append(f"topic {name} would be created with message.timestamp.type=LogAppendTime "
                                         f"(as the source's): the broker would replace every record's timestamp; "
                                         f"create it with CreateTime first, or give --accept-log-append-time")
            else:
                plan.refusals.append(f"topic {name} does not exist in the cluster: create it (with {count} "
                                     f"partitions, as the source has) or give --create-topics")
            plan.topics.append(check)
            continue
        partitions = info.topics[name]
        stamp_type = configs.get(name, {}).get("message.timestamp.type")
        check = TopicCheck(name, True, partitions, needed, stamp_type)
        plan.topics.append(check)
        if partitions < needed and not options.repartition:
            plan.refusals.append(f"topic {name} has {partitions} partitions; the records come from partitions up to "
                                 f"{needed - 1}: add partitions, or give --repartition (Kafka's default "
                                 f"partitioner over {partitions} partitions)")
        elif partitions != count and not options.repartition:
            plan.notes.append(f"topic {name} has {partitions} partitions, the source {count}: each record keeps its "
                              f"partition number, where a producer's partitioner would now place keys elsewhere "
                              f"(--repartition places them as Kafka's default partitioner does)")
        _timestamp_bounds(plan, name, configs.get(name, {}), now_ms)
        if stamp_type == "LogAppendTime" and not options.accept_log_append_time:
            plan.refusals.append(f"topic {name} has message.timestamp.type=LogAppendTime: the broker would replace "
                                 f"every record's timestamp with the time of the replay; set it to CreateTime, or "
                                 f"give --accept-log-append-time")


def _timestamp_bounds(plan: ReplayPlan, topic: str, config: dict[str, str], now_ms: int) -> None:
    """The broker's timestamp checks (``LogValidator``, CreateTime topics) and retention, against
    the records' timestamps: a produce of a record outside ``message.timestamp.before.max.ms`` /
    ``after.max.ms`` of the broker's clock fails (InvalidTimestampException), and records older
    than ``retention.ms`` are deleted by the broker's next retention pass."""
    parts = [p for p in plan.partitions if p.dest_topic == topic and p.records]
    stamps = [p.min_timestamp for p in parts if p.min_timestamp is not None]
    newest = max((p.max_timestamp for p in parts if p.max_timestamp is not None), default=None)
    oldest = min(stamps, default=None)

    def number(key: str, default: int) -> int:
        try:
            return int(config.get(key, default))
        except (TypeError, ValueError):
            return default

    after = number("message.timestamp.after.max.ms", 3600000)
    before = number("message.timestamp.before.max.ms", 2**63 - 1)
    if config.get("message.timestamp.type", "CreateTime") == "CreateTime":
        if newest is not None and newest > now_ms + after:
            plan.refusals.append(f"topic {topic}: records have timestamps up to {newest}, more than "
                                 f"message.timestamp.after.max.ms={after} ahead of now: the broker refuses them "
                                 f"(InvalidTimestampException); raise that config on the topic first")
        if oldest is not None and oldest < now_ms - before:
            plan.refusals.append(f"topic {topic}: records have timestamps from {oldest}, more than "
                                 f"message.timestamp.before.max.ms={before} before now: the broker refuses them; "
                                 f"raise that config on the topic first")
    retention = number("retention.ms", 7 * 24 * 3600 * 1000)
    if oldest is not None and retention >= 0 and oldest < now_ms - retention:
        plan.notes.append(f"topic {topic}: some records are older than its retention.ms={retention}: the broker "
                          f"deletes a segment once its newest record is that old (set retention.ms=-1 on the "
                          f"topic first to keep them)")
