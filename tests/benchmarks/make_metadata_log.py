"""A generated KRaft metadata log (``__cluster_metadata-0``) as a controller writes it, at scale.

``make_metadata_log(out, records=10**6)`` writes about ``records`` metadata records into
``out/__cluster_metadata-0/`` (and ``meta.properties`` in ``out``), in RecordBatch v2 batches of
partition leader epoch 1 with CreateTimes 10 ms apart, segments rolled at ``segment_bytes``:

* the bootstrap: the LEADER_CHANGE control batch, feature levels and a cluster config;
* ``brokers`` RegisterBrokerRecords (one batch each) and their unfencing;
* topics of ``partitions_per_topic`` partitions, RF 3 (one batch per topic: TopicRecord, a
  ConfigRecord, its PartitionRecords), ``records // 10`` partitions in all;
* churn until the budget is spent, in batches of 1-20 records: clean leader elections, ISR
  shrinks and expansions, a preferred election back to the first replica, now and then an
  unclean election (a leader out of the ISR, RECOVERING) and its recovery, broker fencing and
  unfencing, ConfigRecords, a NoOpRecord every 50 batches, and near the end a few
  RemoveTopicRecords.

The frequent record types (PartitionRecord, PartitionChangeRecord, NoOp, Fence/Unfence) are
encoded here with ``struct`` (flexible version 0 layouts, checked against seglog's construct
schemas by the smoke test); the others with those schemas (``broker_records.metadata_record``).
Batches are streamed to the segment files, so memory stays small.

    python -m tests.benchmarks.make_metadata_log /tmp/meta --records 1000000
"""

from __future__ import annotations

import argparse
import random
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.formats.varint import encode_unsigned
from seglog_cli.storage.write.builder import NewRecord, build_batch
from tests.benchmarks import broker_records as rec

METADATA = "__cluster_metadata-0"
T0 = 1_764_000_000_000  # 2025-11-24T16:00:00Z
SEGMENT_BYTES = 8 * 1024 * 1024  # metadata.log.segment.bytes' minimum
FEATURES = {"metadata.version": 29, "eligible.leader.replicas.version": 1, "group.version": 1,
            "transaction.version": 2}
SUPPORTED = {"metadata.version": (7, 29), "eligible.leader.replicas.version": (0, 1)}
_I32 = struct.Struct(">i")
PARTITION_CHANGE, FENCE, UNFENCE, NO_OP, PARTITION = 5, 7, 8, 20, 3
NO_OP_VALUE = bytes((1, NO_OP, 0, 0))  # frame version 1, api key 20, version 0, no tagged fields


def _ints(values) -> bytes:
    return encode_unsigned(len(values) + 1) + b"".join(_I32.pack(v) for v in values)


def partition_record(topic_id: bytes, partition: int, replicas: list[int], leader: int, leader_epoch: int = 0) -> bytes:
    """PartitionRecord v0: partition id, topic id, replicas, isr (= replicas), removing and adding
    (empty), leader, leader epoch, partition epoch, no tagged fields."""
    return (bytes((1, PARTITION, 0)) + _I32.pack(partition) + topic_id + _ints(replicas) + _ints(replicas)
            + b"\x01\x01" + struct.pack(">iii", leader, leader_epoch, leader_epoch) + b"\x00")


def partition_change(topic_id: bytes, partition: int, isr: list[int] | None = None, leader: int | None = None,
                     recovery_state: int | None = None) -> bytes:
    """PartitionChangeRecord v0: partition id, topic id, then the tagged fields given (ISR tag 0,
    leader tag 1, leader recovery state tag 5), in tag order."""
    tags = []
    if isr is not None:
        body = _ints(isr)
        tags.append(b"\x00" + encode_unsigned(len(body)) + body)
    if leader is not None:
        tags.append(b"\x01\x04" + _I32.pack(leader))
    if recovery_state is not None:
        tags.append(b"\x05\x01" + struct.pack(">b", recovery_state))
    return (bytes((1, PARTITION_CHANGE, 0)) + _I32.pack(partition) + topic_id + encode_unsigned(len(tags))
            + b"".join(tags))


def fence_record(broker_id: int, epoch: int, fence: bool = True) -> bytes:
    return bytes((1, FENCE if fence else UNFENCE, 0)) + struct.pack(">iq", broker_id, epoch) + b"\x00"


def register_broker(broker_id: int, epoch: int, rng: random.Random) -> bytes:
    return rec.metadata_record(
        "REGISTER_BROKER_RECORD", 3, broker_id=broker_id, is_migrating_zk_broker=False,
        incarnation_id=rec.random_uuid(rng), broker_epoch=epoch,
        end_points=[dict(name="PLAINTEXT", host=f"broker-{broker_id}", port=9092, security_protocol=0,
                         tagged_fields={})],
        features=[dict(name=n, min_supported_version=lo, max_supported_version=hi, tagged_fields={})
                  for n, (lo, hi) in SUPPORTED.items()],
        rack=f"rack-{broker_id % 3}", fenced=True, in_controlled_shutdown=False,
        tagged_fields={"log_dirs": [rec.random_uuid(rng)]})


def remove_topic(topic_id: bytes) -> bytes:
    return rec.metadata_record("REMOVE_TOPIC_RECORD", 0, topic_id=topic_id)


class SegmentWriter:
    """Batches appended to ``directory``'s segments, rolled at ``segment_bytes`` (base offset names)."""

    def __init__(self, directory: Path, segment_bytes: int = SEGMENT_BYTES, epoch: int = 1):
        self.directory, self.segment_bytes, self.epoch = directory, segment_bytes, epoch
        self.offset, self.records, self.batches, self.segments = 0, 0, 0, 0
        self.at = T0
        self.handle = None
        self.size = 0

    def _roll(self) -> None:
        if self.handle is not None:
            self.handle.close()
        self.handle = open(self.directory / f"{self.offset:020d}.log", "wb")
        self.size = 0
        self.segments += 1

    def append(self, values: list[bytes], control_key: bytes | None = None) -> None:
        """One batch of record values (a control batch when ``control_key`` is given), 10 ms on."""
        self.at += 10
        records = [NewRecord(control_key, v, timestamp=self.at) for v in values]
        batch = build_batch(records, base_offset=self.offset, partition_leader_epoch=self.epoch,
                            control=control_key is not None)
        if self.handle is None or (self.size + len(batch) > self.segment_bytes and self.size):
            self._roll()
        self.handle.write(batch)
        self.size += len(batch)
        self.offset += len(values)
        self.records += len(values)
        self.batches += 1

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def write_node_files(out: Path, directory: Path, node_id: int = 100) -> None:
    (out / "meta.properties").write_text(rec.meta_properties("generatedClusterId000A", "AAAAAAAAAAAAAAAAAAAAAQ",
                                                             node_id))
    (directory / "quorum-state").write_text(rec.quorum_state(node_id, 1))
    (directory / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")


@dataclass
class Summary:
    directory: Path
    records: int
    batches: int
    segments: int
    brokers: int
    topics: int
    partitions: int
    end_offset: int
    seconds: float

    def line(self) -> str:
        return (f"{self.directory}: {self.records} records in {self.batches} batches, {self.segments} segments; "
                f"{self.brokers} brokers, {self.topics} topics, {self.partitions} partitions; "
                f"{self.seconds:.1f} s")


class _Cluster:
    """The controller's state the churn follows, so every change is one Kafka could make."""

    def __init__(self, rng: random.Random, brokers: int):
        self.rng = rng
        self.brokers = brokers
        self.broker_epochs = {b: 10 + b for b in range(1, brokers + 1)}
        self.fenced: set[int] = set()
        self.topics: list[bytes] = []  # topic ids, index = topic number
        self.removed: set[int] = set()
        self.replicas: list[list[int]] = []  # per partition (global index)
        self.isr: list[list[int]] = []
        self.leader: list[int] = []
        self.recovering: set[int] = set()
        self.where: list[tuple[int, int]] = []  # global index -> (topic number, partition)

    def churn(self) -> list[bytes]:
        """One controller write: a few partition changes, or a broker fenced or unfenced."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.01:
            return self._fence_or_unfence()
        return [self._partition_change() for _ in range(rng.randint(1, 20))]

    def _fence_or_unfence(self) -> list[bytes]:
        broker = self.rng.randint(1, self.brokers)
        epoch = self.broker_epochs[broker]
        if broker in self.fenced:
            self.fenced.discard(broker)
            return [fence_record(broker, epoch, fence=False)]
        self.fenced.add(broker)
        return [fence_record(broker, epoch)]

    def _partition_change(self) -> bytes:
        rng = self.rng
        while True:
            p = rng.randrange(len(self.replicas))
            if self.where[p][0] not in self.removed:
                break
        topic_id = self.topics[self.where[p][0]]
        partition = self.where[p][1]
        replicas, isr, leader = self.replicas[p], self.isr[p], self.leader[p]
        if p in self.recovering:
            self.recovering.discard(p)
            return partition_change(topic_id, partition, recovery_state=0)
        roll = rng.random()
        out = [b for b in replicas if b not in isr]
        followers = [b for b in isr if b != leader]
        if roll < 0.35 and followers:  # ISR shrink
            gone = rng.choice(followers)
            self.isr[p] = [b for b in isr if b != gone]
            return partition_change(topic_id, partition, isr=self.isr[p])
        if roll < 0.7 and out:  # ISR expand
            self.isr[p] = isr + [rng.choice(out)]
            return partition_change(topic_id, partition, isr=self.isr[p])
        if roll < 0.85 and followers:  # clean election, the old leader out of the ISR
            new = rng.choice(followers)
            self.leader[p] = new
            self.isr[p] = [b for b in isr if b != leader]
            return partition_change(topic_id, partition, isr=self.isr[p], leader=new)
        if roll < 0.99 and leader != replicas[0] and replicas[0] in isr:  # preferred election
            self.leader[p] = replicas[0]
            return partition_change(topic_id, partition, leader=replicas[0])
        if out and roll >= 0.99:  # unclean: a replica out of the ISR leads alone, RECOVERING
            new = rng.choice(out)
            self.leader[p], self.isr[p] = new, [new]
            self.recovering.add(p)
            return partition_change(topic_id, partition, isr=[new], leader=new, recovery_state=1)
        return partition_change(topic_id, partition, leader=leader)  # the same leader, a new epoch


def make_metadata_log(out: str | Path, records: int = 1_000_000, brokers: int | None = None,
                      partitions_per_topic: int = 10, segment_bytes: int = SEGMENT_BYTES,
                      seed: int = 35) -> Summary:
    """Write the log (see the module doc); about ``records`` records (the last batch may pass it)."""
    started = time.perf_counter()
    out = Path(out)
    directory = out / METADATA
    directory.mkdir(parents=True)
    rng = random.Random(seed)
    partitions = max(partitions_per_topic, records // 10)
    brokers = brokers or max(3, min(300, partitions // 300))
    cluster = _Cluster(rng, brokers)
    writer = SegmentWriter(directory, segment_bytes)
    key, value = rec.leader_change(100, (100,))
    writer.append([value], control_key=key)
    writer.append([rec.feature_level_record(n, v) for n, v in FEATURES.items()]
                  + [rec.config_record("", "min.insync.replicas", "1", rec.BROKER_RESOURCE)])
    for broker in range(1, brokers + 1):
        writer.append([register_broker(broker, cluster.broker_epochs[broker], rng)])
    for broker in range(1, brokers + 1):
        writer.append([fence_record(broker, cluster.broker_epochs[broker], fence=False)])
    for t in range(partitions // partitions_per_topic):
        topic_id = rec.random_uuid(rng)
        cluster.topics.append(topic_id)
        values = [rec.topic_record(f"topic-{t:05d}", topic_id),
                  rec.config_record(f"topic-{t:05d}", "retention.ms", str(3_600_000 * (1 + t % 48)))]
        for n in range(partitions_per_topic):
            replicas = rng.sample(range(1, brokers + 1), 3)
            cluster.where.append((t, n))
            cluster.replicas.append(replicas)
            cluster.isr.append(list(replicas))
            cluster.leader.append(replicas[0])
            values.append(partition_record(topic_id, n, replicas, replicas[0]))
        writer.append(values)
    removals = max(1, len(cluster.topics) // 1000)
    while writer.records < records:
        if writer.batches % 50 == 0:
            writer.append([NO_OP_VALUE])
        elif writer.batches % 997 == 0:
            t = rng.randrange(len(cluster.topics))
            writer.append([rec.config_record(f"topic-{t:05d}", "max.message.bytes", str(1_000_000 + writer.batches))])
        elif removals and writer.records > records * 0.95:
            t = next(t for t in range(len(cluster.topics)) if t not in cluster.removed)
            cluster.removed.add(t)
            removals -= 1
            writer.append([remove_topic(cluster.topics[t])])
        else:
            writer.append(cluster.churn())
    writer.close()
    write_node_files(out, directory)
    return Summary(directory, writer.records, writer.batches, writer.segments, brokers, len(cluster.topics),
                   len(cluster.replicas), writer.offset, time.perf_counter() - started)


def main(argv=None) -> Summary:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="The node's log dir to create (it gets __cluster_metadata-0/).")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=None)
    parser.add_argument("--segment-bytes", type=int, default=SEGMENT_BYTES)
    parser.add_argument("--seed", type=int, default=35)
    args = parser.parse_args(argv)
    summary = make_metadata_log(args.out, args.records, args.brokers, segment_bytes=args.segment_bytes,
                                seed=args.seed)
    print(summary.line())
    return summary


if __name__ == "__main__":
    main()
