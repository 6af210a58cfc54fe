"""Plan and apply a replay: the source records sent to a live cluster, exactly once.

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

import collections
import os
import signal
import time
from dataclasses import dataclass, field
from itertools import repeat
from operator import and_, eq, itemgetter
from pathlib import Path
from typing import Callable, Iterator

from seglog_cli.storage.dump.dump import dump, readable_partition_files
from seglog_cli.storage.log.batch_header import LOG_OVERHEAD, BatchHeader
from seglog_cli.storage.log.batches import BatchRun
from seglog_cli.storage.log.errors import ClusterError, DestinationRefusedError
from seglog_cli.storage.replay.cluster import CODEC_NAMES, Cluster
from seglog_cli.storage.replay.partitioner import partition_for_key
from seglog_cli.storage.replay.progress import Progress
from seglog_cli.storage.replay.sources import (
    Selection,
    Skipped,
    SourcePartition,
    batch_verdict,
)

SAVE_EVERY_S = 1.0
# the crash tests' kill points: "send:N" (SIGKILL before the Nth produce call), "ack:N" (after the
# Nth acknowledgement, before the progress file notes it), "save:N" (after the Nth save)
KILL_AT = "SEGLOG_TEST_REPLAY_KILL_AT"


def _kill_point(kind: str, count: int) -> None:
    point = os.environ.get(KILL_AT)
    if point and point == f"{kind}:{count}":
        os.kill(os.getpid(), signal.SIGKILL)


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
            _count(plan, offset, offset, stamp, 1, _size(key, value, headers), codec)
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


def _size(key, value, headers) -> int:
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


# -- applying ---------------------------------------------------------------------------------------

@dataclass
class ReplayResult:
    sent: int = 0
    matched: int = 0  # found in the destination after a kill, counted as delivered
    foreign: int = 0  # records of someone else accepted (accept_foreign_writes)
    skipped_delivered: int = 0  # records a previous run delivered
    unmapped: int = 0  # acknowledged as already written, without their offset (not in the map)


_FAILED = object()  # in a lane's acks: a record whose produce failed
_offset_of = itemgetter(0)  # a Record's offset


class _Lane:
    """One destination partition being written, and its index in the progress file.

    Acknowledgements arrive in order per partition. The lane's callback (``delivered``) only
    notes each one's destination offset in ``acks`` (None: written, offset not said; _FAILED);
    :meth:`settle`, before every save, pairs them with the source offsets queued when the
    records were produced, a batch at a time: a stretch whose source and destination offsets
    both go up one by one extends the run in one step, anything else (a gap on either side, a
    failed or unmapped record) is paired record by record, as one callback per record would.
    ``queue`` holds, in produce order, a list of source offsets per batch (an int for one record)
    and, before the offsets of each source, its SourceProgress."""

    __slots__ = ("queue", "acks", "index", "destination", "source", "run", "fed_by", "sender", "delivered")

    def __init__(self, index: int, destination, sender):
        self.queue: collections.deque = collections.deque()
        self.acks: list = []
        self.index, self.destination, self.sender = index, destination, sender
        self.source = None  # the SourceProgress whose offsets are acknowledged now
        self.run = None  # that source's last run into this lane
        self.fed_by = None  # the SourceProgress whose offsets were queued last
        self.delivered = self._counting if sender.kill_points else _noting(self)

    def failed(self, error, message) -> None:
        self.acks.append(_FAILED)
        if self.sender.error is None:
            self.sender.error = f"produce to {message.topic()}-{message.partition()} failed: {error.str()}"

    def _counting(self, error, message) -> None:
        """The callback under the crash tests' kill points: "ack:N" after the Nth acknowledgement
        (unmapped ones counted, not killed at), before the progress file notes it."""
        if error is not None:
            self.failed(error, message)
            return
        offset = message.offset()
        self.acks.append(offset)
        sender = self.sender
        sender.acks_seen += 1
        if offset is not None:
            _kill_point("ack", sender.acks_seen)

    def settle(self) -> None:
        """Pair the acknowledgements noted since the last settle with their source offsets."""
        acks = self.acks
        total = len(acks)
        queue = self.queue
        at = 0
        while at < total:
            block = queue[0]
            kind = type(block)
            if kind is int:
                self._pair(block, acks[at])
                queue.popleft()
                at += 1
                continue
            if kind is not list:  # the source whose offsets follow
                self.source, self.run = block, block.last_run(self.index)
                queue.popleft()
                continue
            size = len(block)
            take = size if size <= total - at else total - at
            sources = block if take == size else block[:take]
            dests = acks[at:at + take]
            src, dest = sources[0], dests[0]
            if (type(dest) is int and all(map(eq, dests, range(dest, dest + take)))
                    and all(map(eq, sources, range(src, src + take)))):
                self._extend(src, dest, take)
            else:
                for src, dest in zip(sources, dests):
                    self._pair(src, dest)
            if take == size:
                queue.popleft()
            else:
                queue[0] = block[take:]
            at += take
        acks.clear()

    def _extend(self, src: int, dest: int, count: int) -> None:
        """``count`` records from source offset ``src`` at destination offsets from ``dest``."""
        run = self.run
        if run is not None and run[0] + run[3] == src and run[2] + run[3] == dest:
            run[3] += count  # the run goes on (a run's offsets are never negative)
        else:
            self.source.add(src, self.index, dest)
            self.run = run = self.source.last_run(self.index)
            run[3] += count - 1
        self.sender.acked += count

    def _pair(self, src: int, offset) -> None:
        """One record's acknowledgement."""
        if offset is _FAILED:
            return
        sender = self.sender
        if offset is None or offset < 0:
            # written, offset not said (librdkafka's DUPLICATE_SEQUENCE_NUMBER success: a resent
            # batch the broker already had; confluent-kafka gives None for it, not -1001): the
            # record is there once; the map skips it
            sender.unmapped += 1
        else:
            self._extend(src, offset, 1)
            return
        sender.acked += 1

    def sync(self) -> None:
        """What was acknowledged noted in the runs, and the destination's end after it (before
        a save)."""
        self.settle()
        run = self.run
        if run is not None and run[2] + run[3] > self.destination.end:
            self.destination.end = run[2] + run[3]


def _noting(lane: _Lane):
    """``lane``'s acknowledgement callback: the destination offset noted, nothing else (a
    closure: no attribute lookup per record)."""
    note, failed = lane.acks.append, lane.failed

    def delivered(error, message) -> None:
        if error is None:
            note(message.offset())
        else:
            failed(error, message)

    return delivered


class _Sender:
    """The produce loop: producers per codec, a lane per destination partition, progress saved
    every second. Per record: one produce call and one acknowledgement, each a few lines."""

    def __init__(self, cluster: Cluster, progress: Progress, options: ReplayOptions, on_progress=None):
        self.cluster, self.progress, self.options = cluster, progress, options
        self.producers: dict[int, object] = {}
        self.current: object | None = None
        self.current_codec: int | None = None
        self.lanes: dict[tuple[str, int], _Lane] = {}
        self.error: str | None = None
        self.unmapped = 0  # acknowledged without an offset
        self.saves = 0
        self.acked = 0  # acknowledgements paired (settled)
        self.acks_seen = 0  # acknowledgements met (counted under kill points only)
        self.sent = 0
        self.bytes = 0
        self.on_progress = on_progress
        self._saved_at = time.monotonic()
        self._started = time.monotonic()
        self.kill_points = bool(os.environ.get(KILL_AT))

    def _producer(self, codec: int):
        producer = self.producers.get(codec)
        if producer is None:
            producer = self.producers[codec] = self.cluster.producer(codec)
        if producer is not self.current:
            if self.current is not None:
                self._drain(self.current)  # keep each partition's order across producers
            self.current, self.current_codec = producer, codec
        return producer

    def lane(self, topic: str, partition: int) -> _Lane:
        lane = self.lanes.get((topic, partition))
        if lane is None:
            index = self.progress.destination(topic, partition)
            lane = self.lanes[(topic, partition)] = _Lane(index, self.progress.destinations[index], self)
        return lane

    def send_records(self, source_progress, dest_topic: str, batches, partition_of, delivered: dict,
                     fixed_partition: int | None) -> int:
        """Produce the records of one source (``(codec, records)`` batches); ``partition_of(key)``
        places each (or every one goes to ``fixed_partition``); records at or below
        ``delivered[partition]`` are already there. Returns how many were skipped so."""
        if fixed_partition is None:
            return self._send_placed(source_progress, dest_topic, batches, partition_of, delivered)
        # every record to one lane: what the loop below does per record is the least a record
        # needs (the lane, the skipping of what is delivered and the codec are per batch)
        partition = fixed_partition
        last = delivered.get(partition)
        kill = self.kill_points
        fixed_codec = self.options.compression
        skipped = 0
        sent = self.sent
        lane = codec_now = producer = produce = None
        try:
            for codec, records in batches:
                if fixed_codec is not None:
                    codec = fixed_codec
                if codec != codec_now or self.current_codec != codec_now:
                    producer = self._producer(codec)
                    produce, codec_now = producer.produce, codec
                if lane is None:
                    lane = self._lane_fed_by(source_progress, dest_topic, partition)
                    queue, on_delivery = lane.queue.append, lane.delivered
                if last is not None and records[0][0] <= last:
                    kept = [record for record in records if record[0] > last]
                    skipped += len(records) - len(kept)
                    records = kept
                    if not records:
                        continue
                queue(list(map(_offset_of, records)))
                for record in records:
                    if kill:
                        _kill_point("send", sent + 1)
                    stamp, headers = record[1], record[5]
                    # confluent-kafka's order: topic, value, key, partition, callback, on_delivery,
                    # timestamp, headers; by keyword the call would take twice as long
                    try:
                        produce(dest_topic, record[4], record[3], partition, on_delivery, None,
                                stamp if stamp > 0 else 0, _text_keys(headers) if headers else None)
                    except BufferError:  # the queue is full: serve acknowledgements, then again
                        self._produce_when_room(producer, dest_topic, record, partition, on_delivery)
                    sent += 1
                    if not sent & 1023:
                        self.sent = sent
                        self._serve(producer, record)
        finally:
            self.sent = sent
        return skipped

    def _send_placed(self, source_progress, dest_topic: str, batches, partition_of, delivered: dict) -> int:
        """send_records with each record placed by ``partition_of(key)`` (--repartition)."""
        fixed_codec = self.options.compression
        kill = self.kill_points
        skipped = 0
        lane_of: dict[int, _Lane] = {}
        codec_now = producer = produce = None
        for codec, records in batches:
            if fixed_codec is not None:
                codec = fixed_codec
            if codec != codec_now or self.current_codec != codec_now:
                producer = self._producer(codec)
                produce, codec_now = producer.produce, codec
            for record in records:
                offset = record[0]
                key = record[3]
                partition = partition_of(key)
                lane = lane_of.get(partition)
                if lane is None:
                    lane = lane_of[partition] = self._lane_fed_by(source_progress, dest_topic, partition)
                last = delivered.get(partition)
                if last is not None and offset <= last:
                    skipped += 1
                    continue
                headers = record[5]
                stamp = record[1]
                lane.queue.append(offset)
                if kill:
                    _kill_point("send", self.sent + 1)
                try:
                    produce(dest_topic, record[4], key, partition, lane.delivered, None,
                            stamp if stamp > 0 else 0, _text_keys(headers) if headers else None)
                except BufferError:
                    self._produce_when_room(producer, dest_topic, record, partition, lane.delivered)
                self.sent += 1
                if not self.sent & 1023:
                    self._serve(producer, record)
        return skipped

    def _lane_fed_by(self, source_progress, topic: str, partition: int) -> _Lane:
        """The lane of ``topic``/``partition``, told that ``source_progress``'s offsets follow."""
        lane = self.lane(topic, partition)
        if lane.fed_by is not source_progress:
            lane.queue.append(source_progress)
            lane.fed_by = source_progress
        return lane

    @staticmethod
    def _produce_when_room(producer, topic: str, record, partition: int, on_delivery) -> None:
        """Produce ``record`` once librdkafka's queue has room (acknowledgements served meanwhile)."""
        stamp, headers = record[1], record[5]
        while True:
            producer.poll(0.05)
            try:
                producer.produce(topic, record[4], record[3], partition, on_delivery, None,
                                 stamp if stamp > 0 else 0, _text_keys(headers) if headers else None)
                return
            except BufferError:
                continue

    def _serve(self, producer, record) -> None:
        """Every 1024 records: acknowledgements, the throttle, a save each second, a produce error."""
        producer.poll(0)
        self._tick(producer, record)
        if self.error is not None:
            raise ClusterError(self.error, self.cluster.bootstrap)

    def sync(self) -> None:
        for lane in self.lanes.values():
            lane.sync()

    def save(self) -> None:
        self.sync()
        self.progress.save()

    def _tick(self, producer, record) -> None:
        now = time.monotonic()
        if self.options.throttle_bytes_per_s:
            self.bytes += 1024 * _size(record[3], record[4], record[5])  # a sample of 1 in 1024
            ahead = self.bytes / self.options.throttle_bytes_per_s - (now - self._started)
            if ahead > 0:
                producer.poll(ahead)
        if now - self._saved_at >= SAVE_EVERY_S or self.kill_points:
            self.save()
            self.saves += 1
            if self.kill_points:
                _kill_point("save", self.saves)
            self._saved_at = now
            if self.on_progress is not None:
                self.on_progress(self.sent, self.acked)

    def _drain(self, producer, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while len(producer) > 0:
            producer.flush(1.0)
            if time.monotonic() > deadline:
                raise ClusterError(f"{len(producer)} records not acknowledged within {timeout:g} s",
                                   self.cluster.bootstrap)

    def finish(self, timeout: float = 300.0) -> None:
        for producer in self.producers.values():
            self._drain(producer, timeout)
        self.save()
        if self.on_progress is not None:
            self.on_progress(self.sent, self.acked)
        if self.error is not None:
            raise ClusterError(self.error, self.cluster.bootstrap)


def _text_keys(headers) -> list:
    """Header keys as text: Kafka's clients hold them as strings (the bytes are their UTF-8), and
    confluent-kafka sends a str key as its UTF-8 (a bytes key would go as its repr). A key that is
    no valid UTF-8, which no Kafka client writes, goes with U+FFFD where a Java consumer shows it."""
    return [(k.decode("utf-8", "replace") if type(k) is bytes else bytes(k).decode("utf-8", "replace"), v)
            for k, v in headers]


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
