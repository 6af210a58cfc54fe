"""The produce loop of a replay: one idempotent producer per compression codec, a lane per
destination partition pairing each acknowledgement with its source offset, and the progress
file saved every second (:mod:`~seglog_cli.storage.replay.progress`). The crash tests' kill
points (``SEGLOG_TEST_REPLAY_KILL_AT``) are here.
"""

from __future__ import annotations

import collections
import os
import signal
import time
from dataclasses import dataclass
from operator import eq, itemgetter

from seglog_cli.storage.log.errors import ClusterError
from seglog_cli.storage.replay.cluster import Cluster
from seglog_cli.storage.replay.progress import Progress


from seglog_cli.storage.replay.plan import ReplayOptions, record_size

SAVE_EVERY_S = 1.0
# the crash tests' kill points: "send:N" (SIGKILL before the Nth produce call), "ack:N" (after the
# Nth acknowledgement, before the progress file notes it), "save:N" (after the Nth save)
KILL_AT = "SEGLOG_TEST_REPLAY_KILL_AT"


def _kill_point(kind: str, count: int) -> None:
    point = os.environ.get(KILL_AT)
    if point and point == f"{kind}:{count}":
        os.kill(os.getpid(), signal.SIGKILL)


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
            self.bytes += 1024 * record_size(record[3], record[4], record[5])  # a sample of 1 in 1024
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
