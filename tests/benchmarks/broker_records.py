"""The record keys and values a Kafka 4.2 KRaft broker writes to its internal topics, encoded
for ``make_broker_logdir.py``; field layouts from Kafka's message specs.

``__consumer_offsets`` (group coordinator; the key's first int16 is the record type)::

    OffsetCommitKey    (type 1)   int16 1, string group, string topic, int32 partition
    OffsetCommitValue  (v4)       int16 4, int64 offset, int32 leader_epoch,
                                  compact string metadata, int64 commit_timestamp, tagged fields

(classic strings: int16 length + UTF-8; compact: unsigned varint length + 1). Kafka 4.2 writes
version 4 for consumer commits (the corpus's ``__consumer_offsets-38``).

``__transaction_state`` (transaction coordinator)::

    TransactionLogKey    (v0)   int16 0, string transactional_id
    TransactionLogValue  (v1)   int16 1, int64 producer_id, int16 producer_epoch,
                                int32 timeout_ms, int8 status, compact [] {compact string topic,
                                compact [] int32 partitions, tags}, int64 last_update_ms,
                                int64 start_ms, tagged fields

``__cluster_metadata`` record values: ``unsigned varint frame_version (1), api_key, version``
then the message, built by seglog's own declarations (``seglog_cli.formats.metadata_records``,
whose constructs also write). The KRaft leader-change control record: key ``int16 0, int16 2``,
value ``LeaderChangeMessage`` v0 (``int16 version, int32 leader_id, compact [] voters,
compact [] granting_voters``, each voter ``int32 voter_id`` + tags).

Coordinator partitions: ``Utils.abs(key.hashCode()) % 50`` with Java's ``String.hashCode`` and
``Utils.abs`` = ``Math.abs`` except ``Integer.MIN_VALUE`` -> 0 (not ``& 0x7fffffff``, which is
``Utils.toPositive``, the producer partitioner's).
"""

from __future__ import annotations

import base64
import random
import struct

from seglog_cli.formats.metadata_records import FRAME_VERSION, RECORD_TYPES
from seglog_cli.formats.varint import encode_unsigned

COORDINATOR_PARTITIONS = 50  # offsets.topic.num.partitions, transaction.state.log.num.partitions
METADATA_TOPIC_ID = bytes(15) + b"\x01"  # Topic.CLUSTER_METADATA_TOPIC_ID: AAAAAAAAAAAAAAAAAAAAAQ
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
TXN_EMPTY, TXN_ONGOING, TXN_PREPARE_COMMIT, TXN_PREPARE_ABORT = 0, 1, 2, 3
TXN_COMPLETE_COMMIT, TXN_COMPLETE_ABORT = 4, 5
NO_TAGS = b"\x00"
_API_KEYS = {t.name: t.api_key for t in RECORD_TYPES.values()}


# -- Java's hashing and Kafka's Uuid ----------------------------------------------------------------

def java_string_hash(text: str) -> int:
    """``String.hashCode``: ``31 * h + c`` over the UTF-16 code units, in 32-bit arithmetic."""
    h = 0
    for unit in struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H", text.encode("utf-16-be")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int = COORDINATOR_PARTITIONS) -> int:
    """The ``__consumer_offsets`` / ``__transaction_state`` partition of a group or transactional id."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def random_uuid(rng: random.Random) -> bytes:
    """``Uuid.randomUuid``: a version-4 UUID, never the zero or metadata id, never shown as ``-...``."""
    while True:
        raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        if bytes(raw) not in (bytes(16), METADATA_TOPIC_ID) and not uuid_text(bytes(raw)).startswith("-"):
            return bytes(raw)


def uuid_text(raw: bytes) -> str:
    """``Uuid.toString``: base64url without padding (22 characters)."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# -- primitive encodings ----------------------------------------------------------------------------

def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return encode_unsigned(len(data) + 1) + data


def _compact_array(items: list[bytes] | None) -> bytes:
    return b"\x00" if items is None else encode_unsigned(len(items) + 1) + b"".join(items)


# -- group and transaction coordinators -------------------------------------------------------------

def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + _string(group) + _string(topic) + struct.pack(">i", partition)


def offset_commit_value(offset: int, commit_timestamp: int, leader_epoch: int = -1, metadata: str = "") -> bytes:
    return (struct.pack(">hqi", 4, offset, leader_epoch) + _compact_string(metadata)
            + struct.pack(">q", commit_timestamp) + NO_TAGS)


def txn_key(transactional_id: str) -> bytes:
    return struct.pack(">h", 0) + _string(transactional_id)


def txn_value(producer_id: int, epoch: int, status: int, partitions: dict[str, list[int]] | None,
              start_ms: int, update_ms: int, timeout_ms: int = 60000) -> bytes:
    topics = None if partitions is None else [
        _compact_string(topic) + _compact_array([struct.pack(">i", p) for p in ids]) + NO_TAGS
        for topic, ids in partitions.items()]
    return (struct.pack(">hqhib", 1, producer_id, epoch, timeout_ms, status) + _compact_array(topics)
            + struct.pack(">qq", update_ms, start_ms) + NO_TAGS)


# -- KRaft ------------------------------------------------------------------------------------------

def leader_change(leader_id: int, voters: tuple[int, ...] = (1,)) -> tuple[bytes, bytes]:
    """(key, value) of the LEADER_CHANGE control record a new KRaft leader writes first."""
    voter_list = _compact_array([struct.pack(">i", v) + NO_TAGS for v in voters])
    return struct.pack(">hh", 0, 2), struct.pack(">hi", 0, leader_id) + voter_list + voter_list + NO_TAGS


def metadata_record(type_name: str, version: int, **fields) -> bytes:
    """A ``__cluster_metadata`` record value: the frame, then the message built by seglog's schema."""
    api_key = _API_KEYS[type_name]
    fields.setdefault("tagged_fields", {})
    body = RECORD_TYPES[api_key].schema.struct(version).build(fields)
    return encode_unsigned(FRAME_VERSION) + encode_unsigned(api_key) + encode_unsigned(version) + body


def topic_record(name: str, topic_id: bytes) -> bytes:
    return metadata_record("TOPIC_RECORD", 0, name=name, topic_id=topic_id)


def partition_record(topic_id: bytes, partition: int, directory_id: bytes, leader_epoch: int = 0) -> bytes:
    return metadata_record("PARTITION_RECORD", 2, partition_id=partition, topic_id=topic_id, replicas=[1], isr=[1],
                           removing_replicas=[], adding_replicas=[], leader=1, leader_epoch=leader_epoch,
                           partition_epoch=leader_epoch, directories=[directory_id])


def config_record(resource_name: str, name: str, value: str, resource_type: int = TOPIC_RESOURCE) -> bytes:
    return metadata_record("CONFIG_RECORD", 0, resource_type=resource_type, resource_name=resource_name,
                           name=name, value=value)


def feature_level_record(name: str, level: int) -> bytes:
    return metadata_record("FEATURE_LEVEL_RECORD", 0, name=name, feature_level=level)


def register_broker_record(broker_epoch: int, incarnation_id: bytes, directory_id: bytes,
                           features: dict[str, tuple[int, int]]) -> bytes:
    """Broker 1 on ``PLAINTEXT://127.0.0.1:9092``, fenced until its registration change."""
    return metadata_record(
        "REGISTER_BROKER_RECORD", 3, broker_id=1, is_migrating_zk_broker=False, incarnation_id=incarnation_id,
        broker_epoch=broker_epoch, end_points=[dict(name="PLAINTEXT", host="127.0.0.1", port=9092,
                                                    security_protocol=0, tagged_fields={})],
        features=[dict(name=n, min_supported_version=lo, max_supported_version=hi, tagged_fields={})
                  for n, (lo, hi) in features.items()],
        rack=None, fenced=True, in_controlled_shutdown=False, tagged_fields={"log_dirs": [directory_id]})


def unfence_broker_record(broker_epoch: int) -> bytes:
    return metadata_record("BROKER_REGISTRATION_CHANGE_RECORD", 0, broker_id=1, broker_epoch=broker_epoch,
                           tagged_fields={"fenced": -1})


def producer_ids_record(broker_epoch: int, next_producer_id: int) -> bytes:
    return metadata_record("PRODUCER_IDS_RECORD", 0, broker_id=1, broker_epoch=broker_epoch,
                           next_producer_id=next_producer_id)


# -- log-dir text files -----------------------------------------------------------------------------

def meta_properties(cluster_id: str, directory_id: str, node_id: int = 1) -> str:
    """``meta.properties`` as ``Properties.store`` writes it (v1, KRaft)."""
    return (f"#\n#Wed Jan 01 00:00:00 UTC 2025\nnode.id={node_id}\ndirectory.id={directory_id}\nversion=1\n"
            f"cluster.id={cluster_id}\n")


def quorum_state(leader_id: int, leader_epoch: int) -> str:
    """``quorum-state`` of the metadata log (``ElectionState``, data_version 1)."""
    return (f'{{"leaderId":{leader_id},"leaderEpoch":{leader_epoch},"votedId":-1,'
            f'"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}}')
