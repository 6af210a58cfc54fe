"""The internal topics of the log dir ``make_broker_logdir.py`` generates, written as Kafka 4.2's
coordinators and KRaft controller write them (record layouts in ``broker_records.py``).

* ``__consumer_offsets-0..49``: two groups per data topic (``<topic>-group-0``, ``-1``), each in
  partition ``abs(hashCode) % 50``; one batch per commit (every partition of the topic, its
  OffsetCommitValue v4 carrying the partition's leader epoch), producer id -1 and base sequence
  0 as Kafka 4.2's coordinator runtime writes them; committed offsets rise to the log end offset
  (30 % of the groups stay up to 500 records behind). 5 % of the groups commit 40-120 times,
  every 6 hours, so their partitions roll (segment.ms, 7 days) into several segments.
* ``__transaction_state-0..49``: ``txn-app-0`` (the medium shape's transactional producer 5000)
  goes Empty, then Ongoing, Prepare*, Complete* for each of its transactions; ``txn-app-1..3``
  only Empty. One batch per write, producer id -1.
* ``__cluster_metadata-0``: the leader's LEADER_CHANGE control batch (epoch 1), feature levels
  and a cluster-default config, broker 1's registration and unfencing, a producer id block,
  then one batch per created topic: TOPIC_RECORD, its CONFIG_RECORDs (data topics:
  segment.bytes 1048576, segment.ms 3600000, every fifth retention.ms -1; the internal topics'
  own), a PARTITION_RECORD v2 per partition (replicas and ISR [1], leader 1, its leader epoch,
  this log dir's id). ``partition.metadata`` (its fixed topic id), ``leader-epoch-checkpoint``
  and ``quorum-state``.
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

from seglog_cli.storage.write.builder import NewRecord, build_batch

from tests.benchmarks import broker_records as rec
from tests.benchmarks.broker_segments import ROLL_MS, T0, WrittenLog, write_log, write_partition_files

COMMIT_EVERY_MS = 6 * 3_600_000
INTERNAL_SEGMENT_MS = 604_800_000  # segment.ms default: what rolls the coordinators' segments
BROKER_EPOCH = 16
OFFSETS, TXN_STATE, METADATA = "__consumer_offsets", "__transaction_state", "__cluster_metadata-0"
TXN_IDS = ("txn-app-0", "txn-app-1", "txn-app-2", "txn-app-3")
FEATURES = {"metadata.version": 29, "eligible.leader.replicas.version": 1, "group.version": 1,
            "transaction.version": 2}
SUPPORTED = {"group.version": (0, 1), "kraft.version": (0, 1), "metadata.version": (7, 29),
             "transaction.version": (0, 2), "eligible.leader.replicas.version": (0, 1)}
INTERNAL_CONFIGS = {
    OFFSETS: {"compression.type": "producer", "cleanup.policy": "compact", "segment.bytes": "104857600"},
    TXN_STATE: {"compression.type": "uncompressed", "cleanup.policy": "compact", "min.insync.replicas": "1",
                "segment.bytes": "104857600", "unclean.leader.election.enable": "false"},
}


def last_epoch(log: WrittenLog) -> int:
    return log.epochs[-1][0] if log.epochs else 0


def by_topic(data: list) -> dict[str, list]:
    """The data partitions (``topic``, ``partition``, ``name``, ``shape``) grouped by topic, in order."""
    topics: dict[str, list] = defaultdict(list)
    for partition in data:
        topics[partition.topic].append(partition)
    return topics


# -- the coordinators -------------------------------------------------------------------------------

def coordinator_key(base: str, copy: int, partitions: int, repeat: int) -> str:
    """A group or transactional id named ``base`` (with ``.r<copy>`` in a later copy of a
    repeated layout). In a repeated layout: the first such name, or one ending ``-<i>``, whose
    coordinator partition is the one ``base`` has among one copy's partitions plus ``copy`` times
    their number, so every copy's commits and transactions land alike."""
    name = base if copy == 0 else f"{base}.r{copy}"
    if repeat == 1:
        return name
    per_copy = partitions // repeat
    target = rec.coordinator_partition(base, per_copy) + copy * per_copy
    found, attempt = name, 0
    while rec.coordinator_partition(found, partitions) != target:
        attempt += 1
        found = f"{name}-{attempt}"
    return found


def copy_of(topic: str) -> tuple[str, int]:
    """``topic-0001.r3`` -> (``topic-0001``, 3); a topic of the first copy is copy 0."""
    base, _, copy = topic.partition(".r")
    return base, int(copy or 0)


def offset_commits(data: list, logs: dict[str, WrittenLog], seed: int,
                   partitions: int = rec.COORDINATOR_PARTITIONS, repeat: int = 1) -> dict[int, list]:
    """Coordinator partition -> [(timestamp, records of one commit)]. Each topic's groups draw
    from their own generator, seeded by the topic's name before any ``.r<k>`` (so a repeated
    layout's copies commit alike)."""
    commits = defaultdict(list)
    start = T0 + 24 * ROLL_MS
    for topic, parts in by_topic(data).items():
        rng = random.Random(f"{seed}-groups-{topic.partition('.r')[0]}")
        for g in range(2):
            base, copy = copy_of(topic)
            group = coordinator_key(f"{base}-group-{g}", copy, partitions, repeat)
            rounds = rng.randint(40, 120) if rng.random() < 0.05 else rng.randint(1, 8)
            lag = rng.randint(1, 500) if rng.random() < 0.3 else 0
            for r in range(rounds):
                at = start + r * COMMIT_EVERY_MS + rng.randint(0, 60_000)
                commits[rec.coordinator_partition(group, partitions)].append((at, [
                    NewRecord(rec.offset_commit_key(group, topic, p.partition),
                              rec.offset_commit_value(max(0, logs[p.name].log_end_offset * (r + 1) // rounds - lag),
                                                      at, last_epoch(logs[p.name])), timestamp=at)
                    for p in parts]))
    return commits


def txn_writes(markers: tuple[tuple[bool, int], ...], medium: list, ids: tuple[str, ...] = TXN_IDS) -> dict[str, list]:
    """Transactional id -> [(timestamp, [record])], one per state transition."""
    writes: dict[str, list] = {}
    partitions: dict[str, list[int]] = defaultdict(list)
    for p in medium[:4]:
        partitions[p.topic].append(p.partition)
    for n, txn_id in enumerate(ids):
        states = [(T0 - 60_000, rec.TXN_EMPTY, None, -1)]
        for commit, at in markers if n == 0 else ():
            states += [(at - 500, rec.TXN_ONGOING, partitions, at - 500),
                       (at - 1, rec.TXN_PREPARE_COMMIT if commit else rec.TXN_PREPARE_ABORT, partitions, at - 500),
                       (at, rec.TXN_COMPLETE_COMMIT if commit else rec.TXN_COMPLETE_ABORT, {}, at - 500)]
        writes[txn_id] = [(at, [NewRecord(rec.txn_key(txn_id), rec.txn_value(5000 + n, 0, status, parts, started, at),
                                          timestamp=at)]) for at, status, parts, started in states]
    return writes


def coordinator_segments(writes: list[tuple[int, list[NewRecord]]], base_sequence: int) -> list[tuple[int, list]]:
    """One batch per write, in time order, rolled when a batch is more than segment.ms after the
    segment's first (Kafka's time roll)."""
    segments: list[tuple[int, list[bytes]]] = [(0, [])]
    offset, first = 0, None
    for at, records in sorted(writes, key=lambda item: item[0]):
        if first is not None and at - first > INTERNAL_SEGMENT_MS:
            segments.append((offset, []))
            first = None
        first = at if first is None else first
        segments[-1][1].append(build_batch(records, base_offset=offset, base_sequence=base_sequence,
                                           partition_leader_epoch=0))
        offset += len(records)
    return segments


def write_coordinators(out: Path, data: list, logs: dict[str, WrittenLog], markers: tuple, ids: dict[str, bytes],
                       clean: bool, seed: int, partitions: int = rec.COORDINATOR_PARTITIONS,
                       repeat: int = 1) -> dict[str, WrittenLog]:
    """The coordinator partitions (50 + 50 by default); their logs by directory name."""
    commits = offset_commits(data, logs, seed, partitions, repeat)
    txns = defaultdict(list)
    copies = defaultdict(list)  # the medium partitions of each copy of the layout
    for p in data:
        if p.shape == "medium":
            copies[copy_of(p.topic)[1]].append(p)
    for copy, medium in sorted(copies.items()):
        txn_ids = tuple(coordinator_key(txn_id, copy, partitions, repeat) for txn_id in TXN_IDS)
        for txn_id, writes in txn_writes(markers, medium, txn_ids).items():
            txns[rec.coordinator_partition(txn_id, partitions)].extend(writes)
    internal = {}
    for topic, writes, base_sequence in ((OFFSETS, commits, 0), (TXN_STATE, txns, -1)):
        for n in range(partitions):
            directory = out / f"{topic}-{n}"
            directory.mkdir()
            internal[directory.name] = write_log(directory, coordinator_segments(writes.get(n, []), base_sequence),
                                                 clean)
            write_partition_files(directory, ids[topic], ((0, 0),))
    return internal


# -- the metadata log -------------------------------------------------------------------------------

def metadata_writes(data: list, logs: dict[str, WrittenLog], ids: dict[str, bytes],
                    coordinator_partitions: int = rec.COORDINATOR_PARTITIONS) -> list[list[bytes]]:
    """The record values of each controller write, in order."""
    directory = ids["directory"]
    writes = [[rec.feature_level_record(name, level) for name, level in FEATURES.items()]
              + [rec.config_record("", "min.insync.replicas", "1", rec.BROKER_RESOURCE)],
              [rec.register_broker_record(BROKER_EPOCH, ids["incarnation"], directory, SUPPORTED)],
              [rec.unfence_broker_record(BROKER_EPOCH)],
              [rec.producer_ids_record(BROKER_EPOCH, 6000)]]
    for t, (topic, parts) in enumerate(by_topic(data).items()):
        configs = {"segment.bytes": "1048576", "segment.ms": str(ROLL_MS)}
        configs.update({"retention.ms": "-1"} if t % 5 == 4 else {})
        writes.append(create_topic(topic, ids[topic], configs, [(p.partition, last_epoch(logs[p.name])) for p in parts],
                                   directory))
    for topic, configs in INTERNAL_CONFIGS.items():
        writes.append(create_topic(topic, ids[topic], configs, [(n, 0) for n in range(coordinator_partitions)],
                                   directory))
    return writes


def create_topic(topic: str, topic_id: bytes, configs: dict[str, str], partitions: list[tuple[int, int]],
                 directory: bytes) -> list[bytes]:
    """What CreateTopics makes the controller write, as one atomic batch."""
    return ([rec.topic_record(topic, topic_id)] + [rec.config_record(topic, k, v) for k, v in configs.items()]
            + [rec.partition_record(topic_id, p, directory, epoch) for p, epoch in partitions])


def write_metadata_log(out: Path, data: list, logs: dict[str, WrittenLog], ids: dict[str, bytes],
                       clean: bool, coordinator_partitions: int = rec.COORDINATOR_PARTITIONS) -> WrittenLog:
    key, value = rec.leader_change(1)
    at = T0 - 86_400_000
    batches = [build_batch([NewRecord(key, value, timestamp=at)], control=True, partition_leader_epoch=1)]
    offset = 1
    for values in metadata_writes(data, logs, ids, coordinator_partitions):
        at += 500
        batches.append(build_batch([NewRecord(None, v, timestamp=at) for v in values], base_offset=offset,
                                   partition_leader_epoch=1))
        offset += len(values)
    directory = out / METADATA
    directory.mkdir()
    log = write_log(directory, [(0, batches)], clean)
    write_partition_files(directory, rec.METADATA_TOPIC_ID, ((1, 0),))
    (directory / "quorum-state").write_text(rec.quorum_state(1, 1))
    return log
