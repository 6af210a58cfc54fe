"""The KIP-932 share-group record schemas (types 10-15) as Kafka 4.2 writes them, on byte literals
commented field by field: each literal is parsed, and the layer's build side writes the same bytes
back from plain values and from the parsed container."""

from __future__ import annotations

import pytest
from construct import ConstructError

from seglog_cli.formats import group_coordinator as gc
from seglog_cli.formats.kafka_message import KafkaReadError, RawString, RawUuid
from tests.coordinator_bytes import hex_bytes as _hex
from tests.coordinator_bytes import round_trip as _round_trip

NO_TAGS = "00"
TOPIC_ID = "00000000000000000000000000000001"  # Uuid.ONE_UUID
OTHER_ID = "0f" * 16


@pytest.mark.parametrize(("record_type", "name", "fields"), [
    (10, "ShareGroupMemberMetadataKey", ["groupId", "memberId"]),
    (11, "ShareGroupMetadataKey", ["groupId"]),
    (12, "ShareGroupTargetAssignmentMetadataKey", ["groupId"]),
    (13, "ShareGroupTargetAssignmentMemberKey", ["groupId", "memberId"]),
    (14, "ShareGroupCurrentMemberAssignmentKey", ["groupId", "memberId"]),
    (15, "ShareGroupStatePartitionMetadataKey", ["groupId"]),
])
def test_keys_are_classic_strings(record_type, name, fields):
    key, value = gc.RECORD_TYPES[record_type]
    assert key.name == name and [f.name for f in key.fields] == fields
    assert not key.is_flexible(0) and key.is_valid(0) and not key.is_valid(1)
    assert value.name == name.replace("Key", "Value")
    assert value.is_valid(0) and value.is_flexible(0) and not value.is_valid(1)
    data = _hex(*("0008" "67726f75702d6964", "0009" "6d656d6265722d6964")[:len(fields)])  # "group-id", "member-id"
    parsed = _round_trip(key, data, dict(zip(fields, ["group-id", "member-id"])))
    assert parsed.groupId == b"group-id" and isinstance(parsed.groupId, RawString)


def test_type_9_is_gone_and_10_to_15_are_declared():
    # ShareGroupPartitionMetadata (9) was deleted in Kafka 4.1 (KAFKA-17747 [6/N])
    assert 9 not in gc.RECORD_TYPES
    assert set(range(10, 16)) <= set(gc.RECORD_TYPES)


def test_member_metadata_value():
    data = _hex("07" "7261636b2d61",  # rackId "rack-a" (compact: 6 + 1)
                "0a" "636c69656e742d6964",  # clientId "client-id"
                "08" "312e322e332e34",  # clientHost "1.2.3.4"
                "02" "06" "746f706963",  # subscribedTopicNames ["topic"]
                NO_TAGS)
    value = {"rackId": "rack-a", "clientId": "client-id", "clientHost": "1.2.3.4",
             "subscribedTopicNames": ["topic"], "tagged_fields": {}}
    parsed = _round_trip(gc.SHARE_GROUP_MEMBER_METADATA_VALUE, data, value)
    assert parsed.subscribedTopicNames == [b"topic"]


def test_member_metadata_value_null_rack():
    data = _hex("00",  # rackId null
                "02" "63", "02" "68",  # clientId "c", clientHost "h"
                "01",  # subscribedTopicNames []
                NO_TAGS)
    parsed = _round_trip(gc.SHARE_GROUP_MEMBER_METADATA_VALUE, data, {
        "rackId": None, "clientId": "c", "clientHost": "h", "subscribedTopicNames": [], "tagged_fields": {}})
    assert parsed.rackId is None


def test_member_metadata_value_null_client_id_is_refused():
    with pytest.raises(KafkaReadError, match="^non-nullable field clientId was serialized as null$"):
        gc.SHARE_GROUP_MEMBER_METADATA_VALUE.struct(0).parse(_hex("00", "00", "02" "68", "01", NO_TAGS))


def test_group_metadata_value_hash_is_a_plain_int64():
    data = _hex("00000001",  # epoch 1
                "0000000000000001",  # metadataHash 1: always written, not a tagged field
                NO_TAGS)
    parsed = _round_trip(gc.SHARE_GROUP_METADATA_VALUE, data, {"epoch": 1, "metadataHash": 1, "tagged_fields": {}})
    assert (parsed.epoch, parsed.metadataHash) == (1, 1)
    assert [f.tag for f in gc.SHARE_GROUP_METADATA_VALUE.fields] == [None, None]


def test_group_metadata_value_without_the_hash_is_short():
    # the pre-April-2025 form (epoch and an empty tag section) is too short for 4.2's reader
    with pytest.raises(ConstructError):
        gc.SHARE_GROUP_METADATA_VALUE.struct(0).parse(_hex("00000001", NO_TAGS))


def test_target_assignment_metadata_value():
    data = _hex("00000007", NO_TAGS)  # assignmentEpoch 7
    parsed = _round_trip(gc.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, data,
                         {"assignmentEpoch": 7, "tagged_fields": {}})
    assert parsed.assignmentEpoch == 7


def test_target_assignment_metadata_value_skips_a_later_tag():
    # Kafka 4.3's assignmentTimestamp (tag 0, int64) is unknown to 4.2: its 8 bytes are skipped
    data = _hex("00000007", "01" "00" "08" "0000019cb0a2e800")
    assert gc.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE.struct(0).parse(data).tagged_fields == {}


def test_target_assignment_member_value():
    data = _hex("03",  # topicPartitions: 2 entries
                TOPIC_ID, "03" "00000000" "00000001", NO_TAGS,  # {topicId ONE_UUID, partitions [0, 1]}
                OTHER_ID, "01", NO_TAGS,  # {topicId 0f.., partitions []}
                NO_TAGS)
    value = {"topicPartitions": [
        {"topicId": bytes.fromhex(TOPIC_ID), "partitions": [0, 1], "tagged_fields": {}},
        {"topicId": bytes.fromhex(OTHER_ID), "partitions": [], "tagged_fields": {}}], "tagged_fields": {}}
    parsed = _round_trip(gc.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE, data, value)
    first = parsed.topicPartitions[0]
    assert isinstance(first.topicId, RawUuid) and first.partitions == [0, 1]


def test_current_member_assignment_value():
    data = _hex("00000001",  # memberEpoch 1
                "00000000",  # previousMemberEpoch 0
                "00",  # state 0 (STABLE)
                "02", TOPIC_ID, "03" "00000000" "00000001", NO_TAGS,  # assignedPartitions [{ONE_UUID, [0, 1]}]
                NO_TAGS)
    value = {"memberEpoch": 1, "previousMemberEpoch": 0, "state": 0, "assignedPartitions": [
        {"topicId": bytes.fromhex(TOPIC_ID), "partitions": [0, 1], "tagged_fields": {}}], "tagged_fields": {}}
    parsed = _round_trip(gc.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, data, value)
    assert (parsed.memberEpoch, parsed.previousMemberEpoch, parsed.state) == (1, 0, 0)
    # share members never revoke: no partitionsPendingRevocation, unlike type 8
    assert [f.name for f in gc.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE.fields] == [
        "memberEpoch", "previousMemberEpoch", "state", "assignedPartitions"]


STATE_PARTITION_METADATA = _hex(
    "02", TOPIC_ID, "06" "746f706963", "02" "00000001", NO_TAGS,  # initializingTopics [{ONE_UUID, "topic", [1]}]
    "02", TOPIC_ID, "06" "746f706963", "02" "00000000", NO_TAGS,  # initializedTopics [{ONE_UUID, "topic", [0]}]
    "02", OTHER_ID, "06" "746f706963", NO_TAGS,  # deletingTopics [{0f.., "topic"}] (no partitions)
    NO_TAGS)


def test_state_partition_metadata_value():
    topic = bytes.fromhex(TOPIC_ID)
    value = {"initializingTopics": [{"topicId": topic, "topicName": "topic", "partitions": [1], "tagged_fields": {}}],
             "initializedTopics": [{"topicId": topic, "topicName": "topic", "partitions": [0], "tagged_fields": {}}],
             "deletingTopics": [{"topicId": bytes.fromhex(OTHER_ID), "topicName": "topic", "tagged_fields": {}}],
             "tagged_fields": {}}
    parsed = _round_trip(gc.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE, STATE_PARTITION_METADATA, value)
    assert parsed.initializingTopics[0].partitions == [1]
    assert parsed.initializedTopics[0].partitions == [0]
    assert "partitions" not in parsed.deletingTopics[0]


def test_state_partition_metadata_value_without_initializing_topics_is_refused():
    # the Feb-2025 form (initializedTopics, deletingTopics) read by 4.2's reader: the first list is
    # taken as initializingTopics, the empty second as initializedTopics, and the message's empty
    # tag section (00) as a null deletingTopics
    old = _hex("02", TOPIC_ID, "06" "746f706963", "02" "00000000", NO_TAGS,  # [{ONE_UUID, "topic", [0]}]
               "01",  # deletingTopics []
               NO_TAGS)
    with pytest.raises(KafkaReadError, match="^non-nullable field deletingTopics was serialized as null$"):
        gc.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE.struct(0).parse(old)


def test_state_partition_metadata_value_cut_short_raises():
    with pytest.raises(ConstructError):
        gc.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE.struct(0).parse(STATE_PARTITION_METADATA[:-20])
