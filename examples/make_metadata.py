#!/usr/bin/env python3
"""Build examples/metadata: the KRaft metadata log of the cluster examples/logdir belongs to.

    python examples/make_metadata.py [TARGET_DIR]        (default: examples/metadata)

The content is deterministic (fixed timestamps, ids and records), so running the script again
reproduces the committed files byte for byte (no test checks it yet: after a change, run it and
commit what it writes). TARGET_DIR is the metadata log dir of controller 100 (meta.properties,
node.id=100) holding ``__cluster_metadata-0``, as the controller left it after a clean shutdown:
one segment of RecordBatch v2 batches, KRaft leader epoch 1, the LEADER_CHANGE control record
first. It is the current copy ``--metadata-log`` asks for: ``seglog verify --metadata-log
examples/metadata examples/logdir`` previews broker 1's start-up (4 partition dirs kept). Its
records, in order:

* the bootstrap: metadata.version 4.2-IV1 and the other feature levels;
* brokers 1, 2 and 3 registered (broker 1's log dir is examples/logdir's ``directory.id``) and
  unfenced; a producer id block for broker 1 (producers 4000 and 4001 of payments-0 come from it);
* the topics of examples/logdir, with its topic ids: ``orders`` (2 partitions, replicas [1,2] and
  [2,1], ``segment.bytes=16384`` and ``index.interval.bytes=1024`` as make_example.py wrote it),
  ``payments`` (1 partition, replicas [1,3]) and ``__consumer_offsets`` (1 partition, replicas
  [1,2,3], compacted);
* broker 2's controlled shutdown: orders-1's leadership moves to broker 1 and broker 2 leaves the
  ISRs, then it is fenced; broker 2 registers again (a new epoch and incarnation), is unfenced,
  rejoins the ISRs, and a preferred election gives orders-1 back to it;
* a config change of payments (``retention.ms``) and a NoOpRecord.
"""

from __future__ import annotations

import base64
import shutil
import struct
import sys
from pathlib import Path

from seglog_cli.formats.metadata_records import FRAME_VERSION, RECORD_TYPES
from seglog_cli.formats.varint import encode_unsigned
from seglog_cli.storage.log.log_dir_files import write_clean_shutdown
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.write.writer import PartitionWriter, SegmentConfig

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z, as make_example.py
CLUSTER_ID = "c2VnbG9nLWV4YW1wbGUtMQ"  # make_example.py's
TOPIC_IDS = {"orders": "b3JkZXJzLXRvcGljLWlkAA", "payments": "cGF5bWVudHMtdG9waWMtMQ",
             "__consumer_offsets": "Y29uc3VtZXItb2Zmc2V0cw"}  # make_example.py's partition.metadata
LOG_DIRS = {1: "ZXhhbXBsZS1sb2ctZGlyMQ", 2: "ZXhhbXBsZS1sb2ctZGlyMg", 3: "ZXhhbXBsZS1sb2ctZGlyMw"}
METADATA_DIRECTORY_ID = "ZXhhbXBsZS1tZXRhLWRpcg"
INCARNATIONS = {1: "aW5jYXJuYXRpb24tYjEtMQ", 2: "aW5jYXJuYXRpb24tYjItMQ", 3: "aW5jYXJuYXRpb24tYjMtMQ"}
INCARNATION_2_AGAIN = "aW5jYXJuYXRpb24tYjItMg"
CONTROLLER = 100
FEATURES = {"metadata.version": 29, "eligible.leader.replicas.version": 1, "group.version": 1,
            "transaction.version": 2}
SUPPORTED = {"metadata.version": (7, 29), "eligible.leader.replicas.version": (0, 1),
             "group.version": (0, 1), "transaction.version": (0, 2)}
TOPICS = {  # name: (replicas per partition, configs)
    "orders": ([[1, 2], [2, 1]], {"segment.bytes": "16384", "index.interval.bytes": "1024"}),
    "payments": ([[1, 3]], {"min.insync.replicas": "1"}),
    "__consumer_offsets": ([[1, 2, 3]], {"cleanup.policy": "compact", "compression.type": "producer",
                                          "segment.bytes": "104857600"}),
}
TOPIC_RESOURCE = 2
API_KEYS = {t.name: t.api_key for t in RECORD_TYPES.values()}


def uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


def record(type_name: str, version: int, **fields) -> bytes:
    """A ``__cluster_metadata`` record value: the frame, then the message built by seglog's schema."""
    api_key = API_KEYS[type_name]
    fields.setdefault("tagged_fields", {})
    body = RECORD_TYPES[api_key].schema.struct(version).build(fields)
    return encode_unsigned(FRAME_VERSION) + encode_unsigned(api_key) + encode_unsigned(version) + body


def leader_change(leader_id: int, voters: tuple[int, ...]) -> tuple[bytes, bytes]:
    """(key, value) of the LEADER_CHANGE control record a new KRaft leader writes first."""
    voter_list = encode_unsigned(len(voters) + 1) + b"".join(struct.pack(">i", v) + b"\x00" for v in voters)
    return struct.pack(">hh", 0, 2), struct.pack(">hi", 0, leader_id) + voter_list + voter_list + b"\x00"


def register_broker(broker: int, epoch: int, incarnation: str) -> bytes:
    return record("REGISTER_BROKER_RECORD", 3, broker_id=broker, is_migrating_zk_broker=False,
                  incarnation_id=uuid(incarnation), broker_epoch=epoch,
                  end_points=[dict(name="PLAINTEXT", host=f"broker-{broker}", port=9092, security_protocol=0,
                                   tagged_fields={})],
                  features=[dict(name=n, min_supported_version=lo, max_supported_version=hi, tagged_fields={})
                            for n, (lo, hi) in SUPPORTED.items()],
                  rack=None, fenced=True, in_controlled_shutdown=False,
                  tagged_fields={"log_dirs": [uuid(LOG_DIRS[broker])]})


def registration_change(broker: int, epoch: int, fenced: int | None = None,
                        in_controlled_shutdown: int | None = None) -> bytes:
    tags = {}
    if fenced is not None:
        tags["fenced"] = fenced
    if in_controlled_shutdown is not None:
        tags["in_controlled_shutdown"] = in_controlled_shutdown
    return record("BROKER_REGISTRATION_CHANGE_RECORD", 1, broker_id=broker, broker_epoch=epoch, tagged_fields=tags)


def partition_change(topic: str, partition: int, **tags) -> bytes:
    return record("PARTITION_CHANGE_RECORD", 0, partition_id=partition, topic_id=uuid(TOPIC_IDS[topic]),
                  tagged_fields=tags)


def topic_records(name: str) -> list[bytes]:
    replicas_per_partition, configs = TOPICS[name]
    values = [record("TOPIC_RECORD", 0, name=name, topic_id=uuid(TOPIC_IDS[name]))]
    values += [record("CONFIG_RECORD", 0, resource_type=TOPIC_RESOURCE, resource_name=name, name=key, value=value)
               for key, value in configs.items()]
    for partition, replicas in enumerate(replicas_per_partition):
        values.append(record(
            "PARTITION_RECORD", 2, partition_id=partition, topic_id=uuid(TOPIC_IDS[name]), replicas=replicas,
            isr=replicas, removing_replicas=[], adding_replicas=[], leader=replicas[0], leader_epoch=0,
            partition_epoch=0, directories=[uuid(LOG_DIRS[b]) for b in replicas]))
    return values


def batches() -> list[tuple[int, list[bytes] | tuple[bytes, bytes]]]:
    """(time, record values) of every batch, in log order; a tuple is the LEADER_CHANGE control record."""
    at = T0 - 3_600_000  # the cluster starts an hour before the example's first order
    out: list[tuple[int, list[bytes] | tuple[bytes, bytes]]] = [(at, leader_change(CONTROLLER, (CONTROLLER,)))]
    out.append((at + 100, [record("FEATURE_LEVEL_RECORD", 0, name=n, feature_level=v) for n, v in FEATURES.items()]))
    for broker in (1, 2, 3):
        out.append((at + 1_000 * broker, [register_broker(broker, 10 + broker, INCARNATIONS[broker])]))
    for broker in (1, 2, 3):
        out.append((at + 5_000 + broker, [registration_change(broker, 10 + broker, fenced=-1)]))
    out.append((at + 6_000, [record("PRODUCER_IDS_RECORD", 0, broker_id=1, broker_epoch=11, next_producer_id=5000)]))
    for n, name in enumerate(TOPICS):
        out.append((at + 60_000 + 1_000 * n, topic_records(name)))
    # broker 2 restarts while the example's orders are written (T0 .. T0 + 300 s)
    shutdown = T0 + 120_000
    out.append((shutdown, [registration_change(2, 12, in_controlled_shutdown=1),
                           partition_change("orders", 1, leader=1, isr=[1]),
                           partition_change("orders", 0, isr=[1]),
                           partition_change("__consumer_offsets", 0, isr=[1, 3])]))
    out.append((shutdown + 5_000, [registration_change(2, 12, fenced=1)]))
    out.append((shutdown + 60_000, [register_broker(2, 40, INCARNATION_2_AGAIN)]))
    out.append((shutdown + 61_000, [registration_change(2, 40, fenced=-1)]))
    out.append((shutdown + 64_000, [partition_change("orders", 0, isr=[1, 2]),
                                    partition_change("orders", 1, isr=[1, 2]),
                                    partition_change("__consumer_offsets", 0, isr=[1, 2, 3])]))
    out.append((shutdown + 300_000, [partition_change("orders", 1, leader=2)]))  # the preferred replica
    out.append((T0 + 900_000, [record("CONFIG_RECORD", 0, resource_type=TOPIC_RESOURCE, resource_name="payments",
                                      name="retention.ms", value="604800000")]))
    out.append((T0 + 1_200_000, [record("NO_OP_RECORD", 0)]))
    return out


def make(target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    (target / "meta.properties").write_text(
        f"#\n#Thu Jan 01 00:00:00 UTC 2026\nnode.id={CONTROLLER}\n"
        f"directory.id={METADATA_DIRECTORY_ID}\nversion=1\ncluster.id={CLUSTER_ID}\n")
    directory = target / "__cluster_metadata-0"
    writer = PartitionWriter(directory, SegmentConfig())
    offset = 0
    for at, values in batches():
        if isinstance(values, tuple):
            key, value = values
            batch = build_batch([NewRecord(key, value, timestamp=at)], base_offset=offset,
                                partition_leader_epoch=1, control=True)
            count = 1
        else:
            batch = build_batch([NewRecord(None, v, timestamp=at) for v in values], base_offset=offset,
                                partition_leader_epoch=1)
            count = len(values)
        writer.append(batch, now_ms=at)
        offset += count
    writer.close()
    (directory / "quorum-state").write_text(
        f'{{"leaderId":{CONTROLLER},"leaderEpoch":1,"votedId":-1,'
        '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')
    write_clean_shutdown(target / ".kafka_cleanshutdown", 1)


if __name__ == "__main__":
    make(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "metadata")
