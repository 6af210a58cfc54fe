"""The __consumer_offsets and __transaction_state schemas on byte literals, field by field."""

from __future__ import annotations

import pytest

from seglog_cli.formats import group_coordinator as gc
from seglog_cli.formats import transaction_log as tl
from seglog_cli.formats.kafka_message import RawString, RawUuid, versions


def test_version_ranges():
    assert versions("0+") == (0, 0x7FFF)
    assert versions("1") == (1, 1)
    assert versions("0-4") == (0, 4)
    low, high = versions("none")
    assert low > high


def test_offset_commit_value_v1_has_expire_timestamp():
    data = bytes.fromhex(
        "0000000000000064"  # offset 100
        "0002" "6d64"  # metadata "md"
        "0000000000000007"  # commitTimestamp 7
        "0000000000000009")  # expireTimestamp 9 (v1 only)
    parsed = gc.OFFSET_COMMIT_VALUE.struct(1).parse(data)
    assert (parsed.offset, parsed.metadata, parsed.commitTimestamp, parsed.expireTimestamp) == (100, b"md", 7, 9)
    assert isinstance(parsed.metadata, RawString)
    assert "leaderEpoch" not in parsed


def test_offset_commit_value_v4_is_flexible():
    data = bytes.fromhex(
        "0000000000000001"  # offset 1
        "00000005"  # leaderEpoch 5
        "03" "6162"  # compact metadata "ab" (length + 1)
        "0000000000000002"  # commitTimestamp 2
        "01" "07" "01" "ff")  # one unknown tagged field (tag 7, 1 byte): skipped
    parsed = gc.OFFSET_COMMIT_VALUE.struct(4).parse(data)
    assert (parsed.offset, parsed.leaderEpoch, parsed.metadata, parsed.commitTimestamp) == (1, 5, b"ab", 2)
    assert parsed.tagged_fields == {}
    assert "expireTimestamp" not in parsed


def test_consumer_group_metadata_value_tagged_field():
    data = bytes.fromhex(
        "0000000a"  # epoch 10
        "01" "00" "08" "000000000000002a")  # tagged: tag 0 (metadataHash), 8 bytes = 42
    parsed = gc.CONSUMER_GROUP_METADATA_VALUE.struct(0).parse(data)
    assert parsed.epoch == 10
    assert parsed.tagged_fields == {"metadataHash": 42}


def test_current_member_assignment_uuid_and_arrays():
    topic_id = bytes(range(16))
    data = (bytes.fromhex("00000003" "00000002" "00")  # memberEpoch 3, previous 2, state 0
            + b"\x02" + topic_id + bytes.fromhex("03" "00000000" "00000001" "00")  # 1 topic, [0, 1], no tags
            + b"\x01"  # partitionsPendingRevocation: empty
            + b"\x00")  # no tagged fields
    parsed = gc.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE.struct(0).parse(data)
    (topic,) = parsed.assignedPartitions
    assert isinstance(topic.topicId, RawUuid) and bytes(topic.topicId) == topic_id
    assert topic.partitions == [0, 1]
    assert parsed.partitionsPendingRevocation == []


def test_transaction_log_value_v0_and_v1():
    v0 = bytes.fromhex(
        "0000000000000005"  # producerId 5
        "0001"  # producerEpoch 1
        "0000ea60"  # transactionTimeoutMs 60000
        "01"  # transactionStatus Ongoing
        "00000001" "0003" "747878" "00000001" "00000000"  # [{topic "txx", partitionIds [0]}]
        "0000000000000064"  # lastUpdate 100
        "0000000000000032")  # start 50
    parsed = tl.TRANSACTION_LOG_VALUE.struct(0).parse(v0)
    assert parsed.producerId == 5 and parsed.transactionStatus == 1
    assert parsed.transactionPartitions[0].topic == b"txx"
    assert "tagged_fields" not in parsed
    v1 = bytes.fromhex(
        "0000000000000005" "0001" "0000ea60" "00"
        "00"  # transactionPartitions null (compact)
        "0000000000000064" "ffffffffffffffff"
        "01" "02" "02" "0002")  # tagged clientTransactionVersion (tag 2) = 2
    parsed = tl.TRANSACTION_LOG_VALUE.struct(1).parse(v1)
    assert parsed.transactionPartitions is None
    assert parsed.tagged_fields == {"clientTransactionVersion": 2}


def test_non_nullable_null_string_is_refused_with_kafkas_message():
    from seglog_cli.formats.kafka_message import KafkaReadError

    with pytest.raises(KafkaReadError, match="non-nullable field group was serialized as null"):
        gc.OFFSET_COMMIT_KEY.struct(0).parse(bytes.fromhex("ffff"))


def test_every_record_type_builds_its_structs():
    for key_schema, value_schema in gc.RECORD_TYPES.values():
        key_schema.struct(0)
        low, high = versions(value_schema.valid)
        for version in range(low, high + 1):
            value_schema.struct(version)
