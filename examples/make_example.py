#!/usr/bin/env python3
"""Build examples/logdir: a small Kafka log dir written by seglog's own writer.

    python examples/make_example.py [TARGET_DIR [TIERED_DIR]]
                                  (default: examples/logdir and examples/tiered)

The content is deterministic (fixed timestamps, ids and payloads), so running the script again
reproduces the committed files byte for byte; the test suite checks that. The log dir looks like
one a Kafka 4.x broker (node 1) left after a clean shutdown:

* orders-0: 300 JSON order events in 60 uncompressed batches, segment.bytes=16384 so the
  partition rolls into several segments, with .index/.timeindex entries every
  index.interval.bytes=1024, producer snapshots at each roll and at the log end offset;
* orders-1: the same kind of events in gzip, snappy, lz4 and zstd batches, records with headers,
  a null key and a tombstone (null value);
* payments-0: three transactions, appended as a leader broker appends them (seglog's append
  engine, with a fixed broker clock): producer 4000 commits two records, then aborts one (a
  .txnindex entry), and producer 4001's transaction is still open (hanging);
* __consumer_offsets-0: the group orders-app's committed offsets (orders-0 at 250, orders-1 at
  160, payments-0 at 3), as the group coordinator writes them;
* the log-dir files: meta.properties, the four offset checkpoints, .kafka_cleanshutdown.

And examples/tiered: orders-0 after tiered storage (KIP-405) copied its first two segments to
Kafka's LocalTieredStorage and local retention deleted them: ``rsm/kafka-tiered-storage/
orders-0-<topic id>/`` holds one fileset per remote segment (``.log``, ``.index``, ``.timeindex``
byte for byte, the producer snapshot at the next segment's base offset, the leader epochs up to
the segment's end), as RemoteLogManager.copyLogSegment uploads them; ``data/`` is the broker's log
dir, whose orders-0 keeps its last segment.
"""

from __future__ import annotations

import json
import shutil
import struct
import sys
import tempfile
from pathlib import Path

from seglog_cli.formats.group_coordinator import OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.log.checkpoints import (
    PartitionMetadata,
    TopicPartition,
    format_leader_epoch_checkpoint,
    read_leader_epoch_checkpoint,
    write_offset_checkpoint,
    write_partition_metadata,
)
from seglog_cli.storage.log.remote_layout import remote_file_name
from seglog_cli.storage.log.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD
from seglog_cli.storage.log.log_dir_files import write_clean_shutdown
from seglog_cli.storage.write.append import apply_append, plan_append
from seglog_cli.storage.write.append_plan import AppendOptions, ProducerOptions
from seglog_cli.storage.write.writer import PartitionWriter, SegmentConfig

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TOPIC = "orders"
TOPIC_ID = "b3JkZXJzLXRvcGljLWlkAA"  # 16 fixed bytes, base64url
CLUSTER_ID = "c2VnbG9nLWV4YW1wbGUtMQ"
DIRECTORY_ID = "ZXhhbXBsZS1sb2ctZGlyMQ"
PAYMENTS_ID = "cGF5bWVudHMtdG9waWMtMQ"
OFFSETS_ID = "Y29uc3VtZXItb2Zmc2V0cw"
CONFIG = SegmentConfig(segment_bytes=16384, index_interval_bytes=1024)
ITEMS = ["keyboard", "monitor", "mouse", "laptop", "headset", "dock", "cable", "webcam"]


def order(n: int) -> bytes:
    body = {"order_id": f"o-{n:05d}", "customer": f"c-{n % 17:03d}", "item": ITEMS[n % len(ITEMS)],
            "quantity": 1 + n % 3, "price_cents": 1999 + 250 * (n % 9), "status": "created"}
    return json.dumps(body, separators=(",", ":")).encode()


def write_orders_0(directory: Path) -> int:
    writer = PartitionWriter(directory, CONFIG)
    offset = 0
    for batch in range(60):
        records = [NewRecord(key=f"c-{(offset + i) % 17:03d}".encode(), value=order(offset + i),
                             timestamp=T0 + 1000 * (offset + i)) for i in range(5)]
        writer.append(build_batch(records, base_offset=offset, partition_leader_epoch=0))
        offset += 5
    writer.close()
    return offset


def write_orders_1(directory: Path) -> int:
    writer = PartitionWriter(directory, CONFIG)
    offset = 0
    for batch, codec in enumerate([NONE, GZIP, SNAPPY, LZ4, ZSTD] * 4):
        records = []
        for i in range(8):
            n = offset + i
            key = None if n % 13 == 5 else f"c-{n % 17:03d}".encode()
            value = None if n % 29 == 7 else order(1000 + n)
            headers = [("trace-id", f"t-{n:06d}".encode())] if n % 3 == 0 else []
            records.append(NewRecord(key=key, value=value, headers=headers, timestamp=T0 + 500 * n))
        writer.append(build_batch(records, base_offset=offset, compression=codec, partition_leader_epoch=0))
        offset += len(records)
    writer.close()
    return offset


def append(directory: Path, records: list[NewRecord], now_ms: int, **options) -> None:
    """One produce request (and its marker), as the leader broker appends it at ``now_ms``."""
    producer = options.pop("producer", ProducerOptions())
    plan = plan_append(directory, [records] if records else [], options=AppendOptions(
        producer=producer, now_ms=now_ms, create=True, roll_jitter_seed=0, **options))
    with tempfile.TemporaryDirectory() as backups:  # the append's undo data: not part of the example
        apply_append(plan, backups)


def write_payments_0(directory: Path) -> None:
    def payment(n: int, cents: int) -> NewRecord:
        body = json.dumps({"payment": f"p-{n}", "order_id": f"o-{n:05d}", "cents": cents}, separators=(",", ":"))
        return NewRecord(key=f"p-{n}".encode(), value=body.encode(), timestamp=T0 + 600_000 + 1000 * n)

    committing = ProducerOptions(4000, 0, None, True, None)
    append(directory, [payment(1, 1999), payment(2, 4999)], T0 + 603_000, producer=committing,
           end_transaction="commit", topic_id=PAYMENTS_ID)
    append(directory, [payment(3, 999)], T0 + 604_000, producer=committing, end_transaction="abort")
    append(directory, [payment(4, 2500)], T0 + 605_000, producer=ProducerOptions(4001, 0, None, True, None))
    # each append ends as a clean shutdown does, with a snapshot at the log end; the broker's next
    # start keeps only the latest one here (LogLoader: removeStraySnapshots, none is a segment base)
    for snapshot in sorted(directory.glob("*.snapshot"))[:-1]:
        snapshot.unlink()


def offset_commit(group: str, topic: str, partition: int, offset: int, at_ms: int) -> NewRecord:
    """An offset commit as the group coordinator writes it: record type 1 and its OffsetCommitKey,
    then OffsetCommitValue version 3 (built with the schemas ``seglog dump --offsets-decoder`` reads)."""
    key = struct.pack(">h", 1) + OFFSET_COMMIT_KEY.struct(0).build(
        {"group": group, "topic": topic, "partition": partition})
    value = struct.pack(">h", 3) + OFFSET_COMMIT_VALUE.struct(3).build(
        {"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": at_ms})
    return NewRecord(key=key, value=value, timestamp=at_ms)


def write_consumer_offsets_0(directory: Path) -> None:
    at = T0 + 700_000
    commits = [offset_commit("orders-app", TOPIC, 0, 250, at), offset_commit("orders-app", TOPIC, 1, 160, at),
               offset_commit("orders-app", "payments", 0, 3, at)]
    append(directory, commits, at, topic_id=OFFSETS_ID)


def make(target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    (target / "meta.properties").write_text(
        "#\n#Thu Jan 01 00:00:00 UTC 2026\nnode.id=1\n"
        f"directory.id={DIRECTORY_ID}\nversion=1\ncluster.id={CLUSTER_ID}\n")
    ends = {}
    for partition, write in ((0, write_orders_0), (1, write_orders_1)):
        directory = target / f"{TOPIC}-{partition}"
        directory.mkdir()
        write_partition_metadata(directory / "partition.metadata", PartitionMetadata(0, TOPIC_ID))
        ends[TopicPartition(TOPIC, partition)] = write(directory)
    write_offset_checkpoint(target / "recovery-point-offset-checkpoint", ends)
    write_payments_0(target / "payments-0")
    write_consumer_offsets_0(target / "__consumer_offsets-0")
    (target / ".lock").unlink()  # taken by the appends; a broker makes its own
    write_offset_checkpoint(target / "replication-offset-checkpoint", {
        **ends, TopicPartition("payments", 0): 6, TopicPartition("__consumer_offsets", 0): 3})
    write_offset_checkpoint(target / "log-start-offset-checkpoint", {})
    write_offset_checkpoint(target / "cleaner-offset-checkpoint", {})
    write_clean_shutdown(target / ".kafka_cleanshutdown", 1)


REMOTE_SEGMENT_IDS = {0: "dGllcmVkLXNlZ21lbnQtMA", 120: "dGllcmVkLXNlZ21lbnQtMQ"}  # fixed, base64url


def make_tiered(log_dir: Path, target: Path) -> None:
    """``target``/rsm and ``target``/data: ``log_dir``'s orders-0 with its segments 0 and 120 in
    remote storage only (orders-1 and the other partitions are left out)."""
    if target.exists():
        shutil.rmtree(target)
    source = log_dir / f"{TOPIC}-0"
    remote = target / "rsm" / "kafka-tiered-storage" / f"{TOPIC}-0-{TOPIC_ID}"
    remote.mkdir(parents=True)
    data = target / "data"
    data.mkdir()
    bases = sorted(int(path.name[:20]) for path in source.glob("*.log"))
    epochs = read_leader_epoch_checkpoint(source / "leader-epoch-checkpoint")
    for base, segment_id in REMOTE_SEGMENT_IDS.items():
        next_base = bases[bases.index(base) + 1]
        for suffix in (".log", ".index", ".timeindex"):
            shutil.copyfile(source / f"{base:020d}{suffix}", remote / remote_file_name(base, segment_id, suffix))
        shutil.copyfile(source / f"{next_base:020d}.snapshot", remote / remote_file_name(base, segment_id, ".snapshot"))
        (remote / remote_file_name(base, segment_id, ".leader_epoch_checkpoint")).write_bytes(
            format_leader_epoch_checkpoint([e for e in epochs if e.start_offset < next_base]))
    local = data / source.name
    local.mkdir()
    kept = [path for path in sorted(source.iterdir())
            if not path.name[:20].isdigit() or int(path.name[:20]) not in REMOTE_SEGMENT_IDS]
    for path in kept:
        shutil.copyfile(path, local / path.name)
    for name in ("meta.properties", ".kafka_cleanshutdown", "cleaner-offset-checkpoint"):
        shutil.copyfile(log_dir / name, data / name)
    partition = TopicPartition(TOPIC, 0)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        write_offset_checkpoint(data / name, {partition: 300})
    # the log start offset stays at the remote log's start; the local log starts at 240
    write_offset_checkpoint(data / "log-start-offset-checkpoint", {partition: 0})


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    log_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else here / "logdir"
    make(log_dir)
    make_tiered(log_dir, Path(sys.argv[2]) if len(sys.argv) > 2 else here / "tiered")
