"""The record schemas of ``__share_group_state`` (Kafka's share coordinator, KIP-932).

Every record's key and value start with an int16::

    key     int16 record type, then the key fields (classic encoding, never flexible):
              string groupId, uuid topicId, int32 partition
    value   int16 value version (0; flexible), then the value fields; a null value is a
            tombstone (the share-partition's state is deleted)

Record types (``ShareCoordinatorRecordSerde``, ``CoordinatorRecordType`` of the share
coordinator)::

    0  ShareSnapshot    value v0: int32 snapshotEpoch, int32 stateEpoch, int32 leaderEpoch,
                        int64 startOffset, int32 deliveryCompleteCount (tag 0, default -1),
                        int64 createTimestamp, int64 writeTimestamp, []stateBatches
    1  ShareUpdate      value v0: int32 snapshotEpoch, int32 leaderEpoch, int64 startOffset,
                        int32 deliveryCompleteCount (tag 0, default -1), []stateBatches

    stateBatches        int64 firstOffset, int64 lastOffset, int8 deliveryState
                        (0 available, 2 acknowledged, 4 archived), int16 deliveryCount

From Kafka 4.2's ``share-coordinator/src/main/resources/common/message/Share{Snapshot,Update}
{Key,Value}.json``. ``DeliveryCompleteCount`` is new in 4.2 (KIP-1226), a tagged field, so the
JSON converter prints it only where the writer set it; the order of the fields was checked
against the records a real Kafka 4.2.0 broker wrote (../shared/corpus/kafka-4.2.0/share-groups).
"""

from __future__ import annotations

from seglog_cli.formats.kafka_message import ArrayOf, Field as F, Message

SHARE_PARTITION_KEY_FIELDS = (F("groupId", "string"), F("topicId", "uuid"), F("partition", "int32"))

SHARE_SNAPSHOT_KEY = Message("ShareSnapshotKey", SHARE_PARTITION_KEY_FIELDS, valid="0")
SHARE_UPDATE_KEY = Message("ShareUpdateKey", SHARE_PARTITION_KEY_FIELDS, valid="0")

STATE_BATCHES = ArrayOf((
    F("firstOffset", "int64"),
    F("lastOffset", "int64"),
    F("deliveryState", "int8"),
    F("deliveryCount", "int16"),
))

DELIVERY_COMPLETE_COUNT = F("deliveryCompleteCount", "int32", tag=0, default=-1)

SHARE_SNAPSHOT_VALUE = Message("ShareSnapshotValue", (
    F("snapshotEpoch", "int32"),
    F("stateEpoch", "int32"),
    F("leaderEpoch", "int32"),
    F("startOffset", "int64"),
    DELIVERY_COMPLETE_COUNT,
    F("createTimestamp", "int64"),
    F("writeTimestamp", "int64"),
    F("stateBatches", STATE_BATCHES),
), flexible="0+")

SHARE_UPDATE_VALUE = Message("ShareUpdateValue", (
    F("snapshotEpoch", "int32"),
    F("leaderEpoch", "int32"),
    F("startOffset", "int64"),
    DELIVERY_COMPLETE_COUNT,
    F("stateBatches", STATE_BATCHES),
), flexible="0+")

# record type -> (key schema, value schema)
RECORD_TYPES = {
    0: (SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
    1: (SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE),
}

DELIVERY_STATES = {0: "AVAILABLE", 2: "ACKNOWLEDGED", 4: "ARCHIVED"}

__all__ = ["DELIVERY_STATES", "RECORD_TYPES", "SHARE_SNAPSHOT_KEY", "SHARE_SNAPSHOT_VALUE", "SHARE_UPDATE_KEY",
           "SHARE_UPDATE_VALUE"]
