"""The record schemas of ``__consumer_offsets`` (Kafka's group coordinator), by record type.

Every record's key and value start with an int16::

    key     int16 record type (the key schema's apiKey), then the key fields (key version 0)
    value   int16 value version, then the value fields of that version; a null value is a
            tombstone (the key's state is deleted)

Record types (``GroupCoordinatorRecordSerde``; Kafka 4.x gives each key/value pair an apiKey, and
``CoordinatorRecordType`` is generated from the message files that exist)::

    0  LegacyOffsetCommit        (offset commits of Kafka 0.8.2-era key v0)
    1  OffsetCommit              value v0-v4 (v4 flexible)
    2  GroupMetadata             classic groups, value v0-v4 (v4 flexible); consumer
                                 subscriptions/assignments are embedded version-prefixed bytes
    3  ConsumerGroupMetadata ... 8 ConsumerGroupCurrentMemberAssignment (KIP-848 groups)
    10 ShareGroupMemberMetadata ... 15 ShareGroupStatePartitionMetadata (KIP-932 share groups)
    16 ConsumerGroupRegularExpression
    17 StreamsGroupMetadata, 19 StreamsGroupMemberMetadata, 20 StreamsGroupTargetAssignmentMetadata,
    21 StreamsGroupTargetAssignmentMember, 22 StreamsGroupCurrentMemberAssignment,
    23 StreamsGroupTopology (KIP-1071 streams groups, production-ready in Kafka 4.2)

Types 9 (ShareGroupPartitionMetadata) and 18 (StreamsGroupPartitionMetadata) are gone: Kafka 4.1
deleted their message files when group metadata hashes replaced them (KAFKA-17747, apache/kafka
PRs 19796 and 19802), so Kafka 4.2's serde, and seglog, call them unknown record types.

Field lists and versions follow Kafka's ``group-coordinator/src/main/resources/common/message``
specs; the names are the camelCase names Kafka's JSON converters print.

Share-group schemas (KIP-932, production-ready in Kafka 4.2; the 4.2 branch was cut on
2025-11-21, "Bump trunk to 4.3.0-SNAPSHOT", apache/kafka PR 20948, and 4.2.0 was announced on
2026-02-17). Every key is version 0, classic (``groupId``, plus ``memberId`` for 10, 13 and 14);
every value is version 0, flexible::

    10 ShareGroupMemberMetadataValue        rackId (nullable string), clientId, clientHost,
                                            subscribedTopicNames []string
    11 ShareGroupMetadataValue              epoch int32, metadataHash int64 (NOT tagged, unlike
                                            ConsumerGroupMetadataValue's tag 0)
    12 ShareGroupTargetAssignmentMetadataValue  assignmentEpoch int32
    13 ShareGroupTargetAssignmentMemberValue    topicPartitions []{topicId uuid, partitions []int32}
    14 ShareGroupCurrentMemberAssignmentValue   memberEpoch int32, previousMemberEpoch int32,
                                            state int8, assignedPartitions []{topicId, partitions}
    15 ShareGroupStatePartitionMetadataValue    initializingTopics, initializedTopics
                                            []{topicId uuid, topicName, partitions []int32},
                                            deletingTopics []{topicId uuid, topicName}

What is confirmed for 4.2 and what is a best reading (no 4.2 source tree was readable):

- Confirmed from a stored Kafka message file of the 4.2 window: 10 and 12. Their stored files
  lack the "KIP-932 is in development" header that apache/kafka PR 20814 removed on 2025-11-03,
  so they are the forms on trunk when the 4.2 branch was cut.
- Confirmed by sources on both sides of 4.2 that agree: 11, 13, 14 and every key. The stored
  files (apiKeys 11-15) match the layouts a third-party reimplementation documents at Kafka tag
  4.3.1 and Kafka's own ``ShareGroupMessageFormatterTest``. ``metadataHash`` came in with
  KAFKA-17747 [1/N] (PR 19504, April 2025) as a plain int64; a tagged reading would misread
  every 4.2 record. 13 and 14 have not changed since KAFKA-17247 (PR 16786, August 2024).
- 15: ``initializingTopics`` first is confirmed (KAFKA-18827 [4/N], PR 19339, April 2025; the
  formatter test prints it). That ``TopicPartitionsInfo`` has no ``createTimestamp`` is a best
  reading: one stored draft declares ``CreateTimestamp`` int64, but KAFKA-19204 (PR 19781, May
  2025) was merged saying "No record schema changes" (its timestamp is the replay time, kept in
  memory), and neither the formatter test nor the 4.3.1 layout has the field.
- Left out, as later than 4.2: ShareGroupTargetAssignmentMetadataValue's tagged
  ``assignmentTimestamp`` (tag 0, KAFKA-20266, March 2026); a 4.3 record's tag is skipped.
- Type 9 (ShareGroupPartitionMetadata) is gone since 4.1 (above).

Streams-group schemas: every value is version 0, flexible. Their files changed often while
KIP-1071 was in development; the field lists here are those of the newest stored versions that
predate the 4.2 branch (late 2025), checked against later releases' layouts. Two tagged fields
whose 4.2 presence could not be confirmed are declared as the newest versions have them:
``lastAssignmentConfigs`` (StreamsGroupMetadataValue tag 1, KAFKA-19765, Oct 2025; first
proposed as ``assignmentConfigs``) and ``assignmentEpochs`` (tag 0 of the current assignment's
task lists, KAFKA-19779, Nov 2025). Left out, as later than 4.2: StreamsGroupMetadataValue tags
2-3 (KIP-1331, 2026), StreamsGroupTargetAssignmentMetadataValue's ``assignmentTimestamp``
(KIP-1263, 2026) and record type 24 StreamsGroupTargetAssignmentResolvedTopicIds (2026). A
tagged field seglog leaves out is skipped, as a 4.2 reader skips it.
"""

from __future__ import annotations

from seglog_cli.formats.kafka_message import ArrayOf, Field, Message

F = Field


def _key(name: str, *fields: str) -> Message:
    return Message(name, tuple(F(field, "string") for field in fields), valid="0")


TOPIC_PARTITIONS = ArrayOf((F("topicId", "uuid"), F("partitions", "[]int32")))
ASSIGNED_PARTITIONS = ArrayOf((
    F("topicId", "uuid"),
    F("partitions", "[]int32"),
    F("assignmentEpochs", "[]int32", nullable="0+", tag=0, default=None),
))
TOPIC_METADATA = ArrayOf((
    F("topicId", "uuid"),
    F("topicName", "string"),
    F("numPartitions", "int32"),
    F("partitionMetadata", ArrayOf((F("partition", "int32"), F("racks", "[]string")))),
))

LEGACY_OFFSET_COMMIT_VALUE = Message("LegacyOffsetCommitValue", (
    F("offset", "int64"),
    F("metadata", "string"),
    F("commitTimestamp", "int64"),
), valid="0")

OFFSET_COMMIT_VALUE = Message("OffsetCommitValue", (
    F("offset", "int64"),
    F("leaderEpoch", "int32", versions="3+", default=-1),
    F("metadata", "string"),
    F("commitTimestamp", "int64"),
    F("expireTimestamp", "int64", versions="1", default=-1),
), valid="0-4", flexible="4+")

MEMBER_METADATA = ArrayOf((
    F("memberId", "string"),
    F("groupInstanceId", "string", versions="3+", nullable="3+", default=None),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("rebalanceTimeout", "int32", versions="1+", default=-1),
    F("sessionTimeout", "int32"),
    F("subscription", "bytes"),
    F("assignment", "bytes"),
))

GROUP_METADATA_VALUE = Message("GroupMetadataValue", (
    F("protocolType", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("currentStateTimestamp", "int64", versions="2+", default=-1),
    F("members", MEMBER_METADATA),
), valid="0-4", flexible="4+")

CONSUMER_GROUP_METADATA_VALUE = Message("ConsumerGroupMetadataValue", (
    F("epoch", "int32"),
    F("metadataHash", "int64", tag=0, default=0),
    F("creationTimeMs", "int64", tag=1, default=-1),
), flexible="0+")

CONSUMER_GROUP_PARTITION_METADATA_VALUE = Message("ConsumerGroupPartitionMetadataValue", (
    F("topics", TOPIC_METADATA),
), flexible="0+")

CLASSIC_MEMBER_METADATA = (
    F("sessionTimeoutMs", "int32"),
    F("supportedProtocols", ArrayOf((F("name", "string"), F("metadata", "bytes")))),
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE = Message("ConsumerGroupMemberMetadataValue", (
    F("instanceId", "string", nullable="0+"),
    F("rackId", "string", nullable="0+"),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("subscribedTopicNames", "[]string"),
    F("subscribedTopicRegex", "string", nullable="0+"),
    F("rebalanceTimeoutMs", "int32", default=-1),
    F("serverAssignor", "string", nullable="0+"),
    F("classicMemberMetadata", CLASSIC_MEMBER_METADATA, nullable="0+", tag=0, default=None),
), flexible="0+")

ASSIGNMENT_EPOCH_VALUE_FIELDS = (F("assignmentEpoch", "int32"),)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "ConsumerGroupTargetAssignmentMetadataValue", ASSIGNMENT_EPOCH_VALUE_FIELDS, flexible="0+")

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message("ConsumerGroupTargetAssignmentMemberValue", (
    F("topicPartitions", TOPIC_PARTITIONS),
), flexible="0+")

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message("ConsumerGroupCurrentMemberAssignmentValue", (
    F("memberEpoch", "int32"),
    F("previousMemberEpoch", "int32"),
    F("state", "int8"),
    F("assignedPartitions", ASSIGNED_PARTITIONS),
    F("partitionsPendingRevocation", ASSIGNED_PARTITIONS),
), flexible="0+")

# -- KIP-932 share groups (types 10-15; see the module doc for what is confirmed for 4.2) ---------------

SHARE_GROUP_MEMBER_METADATA_VALUE = Message("ShareGroupMemberMetadataValue", (
    F("rackId", "string", nullable="0+"),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("subscribedTopicNames", "[]string"),
), flexible="0+")

SHARE_GROUP_METADATA_VALUE = Message("ShareGroupMetadataValue", (
    F("epoch", "int32"),
    F("metadataHash", "int64"),  # untagged here (tagged in ConsumerGroupMetadataValue)
), flexible="0+")

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "ShareGroupTargetAssignmentMetadataValue", ASSIGNMENT_EPOCH_VALUE_FIELDS, flexible="0+")

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message("ShareGroupTargetAssignmentMemberValue", (
    F("topicPartitions", TOPIC_PARTITIONS),
), flexible="0+")

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message("ShareGroupCurrentMemberAssignmentValue", (
    F("memberEpoch", "int32"),
    F("previousMemberEpoch", "int32"),
    F("state", "int8"),
    F("assignedPartitions", TOPIC_PARTITIONS),
), flexible="0+")

SHARE_TOPIC_INFO = (F("topicId", "uuid"), F("topicName", "string"))
SHARE_TOPIC_PARTITIONS_INFO = ArrayOf(SHARE_TOPIC_INFO + (F("partitions", "[]int32"),))

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = Message("ShareGroupStatePartitionMetadataValue", (
    F("initializingTopics", SHARE_TOPIC_PARTITIONS_INFO),
    F("initializedTopics", SHARE_TOPIC_PARTITIONS_INFO),
    F("deletingTopics", ArrayOf(SHARE_TOPIC_INFO)),
), flexible="0+")

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = Message("ConsumerGroupRegularExpressionValue", (
    F("topics", "[]string"),
    F("version", "int64"),
    F("timestamp", "int64"),
), flexible="0+")

# -- KIP-1071 streams groups (types 17, 19-23) ------------------------------------------------------

KEY_VALUE = ArrayOf((F("key", "string"), F("value", "string")))

STREAMS_GROUP_METADATA_VALUE = Message("StreamsGroupMetadataValue", (
    F("epoch", "int32"),
    F("metadataHash", "int64"),
    F("validatedTopologyEpoch", "int32", tag=0, default=-1),
    F("lastAssignmentConfigs", KEY_VALUE, nullable="0+", tag=1, default=None),
), flexible="0+")

STREAMS_ENDPOINT = (F("host", "string"), F("port", "uint16"))

STREAMS_GROUP_MEMBER_METADATA_VALUE = Message("StreamsGroupMemberMetadataValue", (
    F("instanceId", "string", nullable="0+"),
    F("rackId", "string", nullable="0+"),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("rebalanceTimeoutMs", "int32", default=-1),
    F("topologyEpoch", "int32"),
    F("processId", "string"),
    F("userEndpoint", STREAMS_ENDPOINT, nullable="0+", default=None),  # untagged: int8 marker
    F("clientTags", KEY_VALUE),
), flexible="0+")

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "StreamsGroupTargetAssignmentMetadataValue", ASSIGNMENT_EPOCH_VALUE_FIELDS, flexible="0+")

TASK_IDS = ArrayOf((F("subtopologyId", "string"), F("partitions", "[]int32")))
TASK_IDS_WITH_EPOCHS = ArrayOf(TASK_IDS.fields + (
    F("assignmentEpochs", "[]int32", nullable="0+", tag=0, default=None),))
TASK_ROLES = ("activeTasks", "standbyTasks", "warmupTasks")

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message("StreamsGroupTargetAssignmentMemberValue", tuple(
    F(role, TASK_IDS) for role in TASK_ROLES), flexible="0+")

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message("StreamsGroupCurrentMemberAssignmentValue", (
    F("memberEpoch", "int32"),
    F("previousMemberEpoch", "int32"),
    F("state", "int8"),
    *(F(role, TASK_IDS_WITH_EPOCHS) for role in TASK_ROLES),
    *(F(role + "PendingRevocation", TASK_IDS_WITH_EPOCHS) for role in TASK_ROLES),
), flexible="0+")

STREAMS_TOPIC_INFO = ArrayOf((
    F("name", "string"),
    F("partitions", "int32"),
    F("replicationFactor", "int16"),
    F("topicConfigs", KEY_VALUE),
))

SUBTOPOLOGY = ArrayOf((
    F("subtopologyId", "string"),
    F("sourceTopics", "[]string"),
    F("sourceTopicRegex", "[]string"),
    F("stateChangelogTopics", STREAMS_TOPIC_INFO),
    F("repartitionSinkTopics", "[]string"),
    F("repartitionSourceTopics", STREAMS_TOPIC_INFO),
    F("copartitionGroups", ArrayOf((  # indexes into the subtopology's own topic lists
        F("sourceTopics", "[]int16"),
        F("sourceTopicRegex", "[]int16"),
        F("repartitionSourceTopics", "[]int16"),
    ))),
))

STREAMS_GROUP_TOPOLOGY_VALUE = Message("StreamsGroupTopologyValue", (
    F("epoch", "int32"),
    F("subtopologies", SUBTOPOLOGY),
), flexible="0+")

OFFSET_COMMIT_KEY = Message("OffsetCommitKey", (
    F("group", "string"), F("topic", "string"), F("partition", "int32")), valid="0")

# record type -> (key schema, value schema)
RECORD_TYPES = {
    0: (Message("LegacyOffsetCommitKey", OFFSET_COMMIT_KEY.fields), LEGACY_OFFSET_COMMIT_VALUE),
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (_key("GroupMetadataKey", "group"), GROUP_METADATA_VALUE),
    3: (_key("ConsumerGroupMetadataKey", "groupId"), CONSUMER_GROUP_METADATA_VALUE),
    4: (_key("ConsumerGroupPartitionMetadataKey", "groupId"), CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (_key("ConsumerGroupMemberMetadataKey", "groupId", "memberId"), CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (_key("ConsumerGroupTargetAssignmentMetadataKey", "groupId"),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: (_key("ConsumerGroupTargetAssignmentMemberKey", "groupId", "memberId"),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (_key("ConsumerGroupCurrentMemberAssignmentKey", "groupId", "memberId"),
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    10: (_key("ShareGroupMemberMetadataKey", "groupId", "memberId"), SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: (_key("ShareGroupMetadataKey", "groupId"), SHARE_GROUP_METADATA_VALUE),
    12: (_key("ShareGroupTargetAssignmentMetadataKey", "groupId"), SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: (_key("ShareGroupTargetAssignmentMemberKey", "groupId", "memberId"),
         SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: (_key("ShareGroupCurrentMemberAssignmentKey", "groupId", "memberId"),
         SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: (_key("ShareGroupStatePartitionMetadataKey", "groupId"), SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
    16: (_key("ConsumerGroupRegularExpressionKey", "groupId", "regularExpression"),
         CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
    17: (_key("StreamsGroupMetadataKey", "groupId"), STREAMS_GROUP_METADATA_VALUE),
    19: (_key("StreamsGroupMemberMetadataKey", "groupId", "memberId"), STREAMS_GROUP_MEMBER_METADATA_VALUE),
    20: (_key("StreamsGroupTargetAssignmentMetadataKey", "groupId"),
         STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    21: (_key("StreamsGroupTargetAssignmentMemberKey", "groupId", "memberId"),
         STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    22: (_key("StreamsGroupCurrentMemberAssignmentKey", "groupId", "memberId"),
         STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    23: (_key("StreamsGroupTopologyKey", "groupId"), STREAMS_GROUP_TOPOLOGY_VALUE),
}

OFFSET_COMMIT_TYPES = (0, 1)
GROUP_METADATA_TYPE = 2

# The classic consumer protocol's embedded messages (clients ConsumerProtocol*.json), each
# stored as int16 version + the fields of that version inside GroupMetadataValue members.
TOPIC_PARTITION = ArrayOf((F("topic", "string"), F("partitions", "[]int32")))

CONSUMER_PROTOCOL_SUBSCRIPTION = Message("ConsumerProtocolSubscription", (
    F("topics", "[]string"),
    F("userData", "bytes", nullable="0+", default=None),
    F("ownedPartitions", TOPIC_PARTITION, versions="1+"),
    F("generationId", "int32", versions="2+", default=-1),
    F("rackId", "string", versions="3+", nullable="3+", default=None),
), valid="0-3")

CONSUMER_PROTOCOL_ASSIGNMENT = Message("ConsumerProtocolAssignment", (
    F("assignedPartitions", TOPIC_PARTITION),
    F("userData", "bytes", nullable="0+", default=None),
), valid="0-3")

CONSUMER_PROTOCOL_TYPE = "consumer"
