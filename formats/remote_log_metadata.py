"""Tiered storage's remote log metadata records: the value of every record in
``__remote_log_metadata`` (KIP-405, ``TopicBasedRemoteLogMetadataManager``).

Record value frame (Kafka ``RemoteLogMetadataSerde`` over ``BytesApiMessageSerde``, the same
``AbstractApiMessageSerde`` frame as the KRaft metadata records, :mod:`seglog_cli.formats.metadata_records`)::

    frame_version  unsigned varint   must be 1
    api_key        unsigned varint   the record type, see RECORD_TYPES
    version        unsigned varint   the record's schema version (0; every version flexible)
    message        the record's fields, and not one byte more

Records carry no key (the manager partitions them by topic-partition hash). Types::

    0  RemoteLogSegmentMetadataRecord          a segment's copy started (state COPY_SEGMENT_STARTED)
    1  RemoteLogSegmentMetadataUpdateRecord    a segment's state changed
    2  RemotePartitionDeleteMetadataRecord     a partition's remote data is being deleted
    3  RemoteLogSegmentMetadataSnapshotRecord  the metadata manager's snapshot form of a segment

    segment states    0 COPY_SEGMENT_STARTED, 1 COPY_SEGMENT_FINISHED, 2 DELETE_SEGMENT_STARTED,
                      3 DELETE_SEGMENT_FINISHED (RemoteLogSegmentState)
    partition states  0 DELETE_PARTITION_MARKED, 1 DELETE_PARTITION_STARTED,
                      2 DELETE_PARTITION_FINISHED (RemotePartitionDeleteState)

From Kafka 4.2's ``storage/src/main/resources/message/RemoteLogSegmentMetadataRecord.json``,
``RemoteLogSegmentMetadataUpdateRecord.json``, ``RemotePartitionDeleteMetadataRecord.json`` and
``RemoteLogSegmentMetadataSnapshotRecord.json``: every record at version 0 only.
``TxnIndexEmpty`` (tagged field 0, KIP-1058) is in 4.2: a real 4.2.0 broker writes it in every
RemoteLogSegmentMetadataRecord (../shared/corpus/kafka-4.2.0/tiered). The tagged
``BrokerLeaderEpoch`` (tag 1, versions 1+) that later Kafka adds is not: 4.2 writes version 0,
and a 4.2 reader skips tag 1 as an unknown tag.
"""

from __future__ import annotations

from dataclasses import dataclass

from seglog_cli.formats.kafka_message import ArrayOf, Field as F, Message

TOPIC_ID_PARTITION = (F("name", "string"), F("id", "uuid"), F("partition", "int32"))
REMOTE_LOG_SEGMENT_ID = (F("topicIdPartition", TOPIC_ID_PARTITION), F("id", "uuid"))
SEGMENT_LEADER_EPOCHS = ArrayOf((F("leaderEpoch", "int32"), F("offset", "int64")))
CUSTOM_METADATA = F("customMetadata", "bytes", nullable="0+", default=None)
TXN_INDEX_EMPTY = F("txnIndexEmpty", "bool", tag=0, default=False)


def _record(name: str, *fields: F) -> Message:
    return Message(name, fields, valid="0", flexible="0+")


REMOTE_LOG_SEGMENT_METADATA = _record(
    "RemoteLogSegmentMetadataRecord",
    F("remoteLogSegmentId", REMOTE_LOG_SEGMENT_ID),
    F("startOffset", "int64"),
    F("endOffset", "int64"),
    F("brokerId", "int32"),
    F("maxTimestampMs", "int64"),
    F("eventTimestampMs", "int64"),
    F("segmentLeaderEpochs", SEGMENT_LEADER_EPOCHS),
    F("segmentSizeInBytes", "int32"),
    CUSTOM_METADATA,
    F("remoteLogSegmentState", "int8"),
    TXN_INDEX_EMPTY,
)
REMOTE_LOG_SEGMENT_METADATA_UPDATE = _record(
    "RemoteLogSegmentMetadataUpdateRecord",
    F("remoteLogSegmentId", REMOTE_LOG_SEGMENT_ID),
    F("brokerId", "int32"),
    F("eventTimestampMs", "int64"),
    CUSTOM_METADATA,
    F("remoteLogSegmentState", "int8"),
)
REMOTE_PARTITION_DELETE_METADATA = _record(
    "RemotePartitionDeleteMetadataRecord",
    F("topicIdPartition", TOPIC_ID_PARTITION),
    F("brokerId", "int32"),
    F("eventTimestampMs", "int64"),
    F("remotePartitionDeleteState", "int8"),
)
REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT = _record(
    "RemoteLogSegmentMetadataSnapshotRecord",
    F("segmentId", "uuid"),
    F("startOffset", "int64"),
    F("endOffset", "int64"),
    F("brokerId", "int32"),
    F("maxTimestampMs", "int64"),
    F("eventTimestampMs", "int64"),
    F("segmentLeaderEpochs", SEGMENT_LEADER_EPOCHS),
    F("segmentSizeInBytes", "int32"),
    CUSTOM_METADATA,
    F("remoteLogSegmentState", "int8"),
    TXN_INDEX_EMPTY,
)


@dataclass(frozen=True)
class RecordType:
    api_key: int
    name: str  # the generated MetadataRecordType's name
    schema: Message


RECORD_TYPES = {t.api_key: t for t in (
    RecordType(0, "REMOTE_LOG_SEGMENT_METADATA_RECORD", REMOTE_LOG_SEGMENT_METADATA),
    RecordType(1, "REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD", REMOTE_LOG_SEGMENT_METADATA_UPDATE),
    RecordType(2, "REMOTE_PARTITION_DELETE_METADATA_RECORD", REMOTE_PARTITION_DELETE_METADATA),
    RecordType(3, "REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD", REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT),
)}

SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                  3: "DELETE_SEGMENT_FINISHED"}
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                           2: "DELETE_PARTITION_FINISHED"}

__all__ = ["PARTITION_DELETE_STATES", "RECORD_TYPES", "REMOTE_LOG_SEGMENT_METADATA",
           "REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT", "REMOTE_LOG_SEGMENT_METADATA_UPDATE",
           "REMOTE_PARTITION_DELETE_METADATA", "RecordType", "SEGMENT_STATES"]
