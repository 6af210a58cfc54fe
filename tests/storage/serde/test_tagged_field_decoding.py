"""Both decoders over the one message layer: what a tagged-field section that Kafka's generated
readers would refuse or read oddly turns into (coordinator records: Kafka's "Could not read
record ..." text; metadata records: MetadataRecordSerde's messages)."""

from __future__ import annotations

import pytest

from seglog_cli.storage.serde.coordinator_records import (
    GROUP_RECORD_TYPES,
    CoordinatorRecordError,
    read_coordinator_record,
)
from seglog_cli.storage.serde.metadata_decoder import MetadataRecordError, decode_metadata_record

TOPIC_ID = bytes(range(16))
TOPIC_ID_TEXT = "AAECAwQFBgcICQoLDA0ODw"
CONSUMER_GROUP_METADATA_KEY = b"\x00\x03" b"\x00\x05group"  # type 3, groupId "group"
SHARE_TARGET_ASSIGNMENT_METADATA_KEY = b"\x00\x0c" b"\x00\x05group"  # type 12, groupId "group"

# DumpLogSegmentsTest.testOffsetsMessageParser's last case: new ConsumerGroupMemberMetadataValue()
# (every string "", Kafka's default) written as version 0, stored under another record type
MEMBER_METADATA_DEFAULTS = (b"\x00\x00"  # version 0
                            b"\x01\x01\x01\x01"  # instanceId, rackId, clientId, clientHost ""
                            b"\x01\x01"  # subscribedTopicNames [], subscribedTopicRegex ""
                            b"\xff\xff\xff\xff"  # rebalanceTimeoutMs -1
                            b"\x01" b"\x00")  # serverAssignor "", no tagged fields
# read as a one-int32 message: epoch 0x01010101, 1 tagged field, tag 1, size ff ff ff ff 01
# (536870911), one byte left


def _error(key: bytes, value: bytes) -> str:
    with pytest.raises(CoordinatorRecordError) as info:
        read_coordinator_record(key, value, GROUP_RECORD_TYPES)
    return info.value.message


def test_unknown_tag_past_the_end_is_kafkas_own_test_expectation():
    # ShareGroupTargetAssignmentMetadataValue (one int32, no tags in 4.2): tag 1 is unknown and
    # readArray(536870911) fails, the text Kafka's test expects (of a ConsumerGroupMetadataValue
    # that had no tag 1 yet)
    assert _error(SHARE_TARGET_ASSIGNMENT_METADATA_KEY, MEMBER_METADATA_DEFAULTS) == (
        "Could not read record with version 0 from value's buffer due to: "
        "Error reading byte array of 536870911 byte(s): only 1 byte(s) available.")


def test_known_tag_past_the_end_is_a_buffer_underflow():
    # ConsumerGroupMetadataValue declares tag 1 (creationTimeMs): readLong() on one byte
    assert _error(CONSUMER_GROUP_METADATA_KEY, MEMBER_METADATA_DEFAULTS) == (
        "Could not read record with version 0 from value's buffer due to: null.")


def test_known_tag_with_a_wrong_size_decodes():
    value = (b"\x00\x00" b"\x00\x00\x00\x0a"  # version 0, epoch 10
             b"\x02"  # two tagged fields
             b"\x00\x03" b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # tag 0, size 3 (wrong), metadataHash 42
             b"\x07\x01" b"\xee")  # tag 7, unknown, 1 byte
    record = read_coordinator_record(CONSUMER_GROUP_METADATA_KEY, value, GROUP_RECORD_TYPES)
    assert record.value == {"epoch": 10, "metadataHash": 42, "creationTimeMs": -1}


def test_varint_too_long_is_kafkas_message():
    value = b"\x00\x00" b"\x00\x00\x00\x0a" b"\xff\xff\xff\xff\xff"  # epoch 10, tag count of 5+ bytes
    assert _error(CONSUMER_GROUP_METADATA_KEY, value) == (
        "Could not read record with version 0 from value's buffer due to: Varint is too long, the most "
        "significant bit in the 5th byte is set, converted value: ffffffff.")


PARTITION_CHANGE_HEAD = b"\x01\x05"  # frame version 1, type 5 (PartitionChangeRecord)
PARTITION = b"\x00\x00\x00\x03" + TOPIC_ID  # partition_id 3, topic_id


def test_metadata_tag_of_a_later_version():
    tagged = b"\x01" + b"\x07\x05" b"\x02\x00\x00\x00\x01"  # tag 7 (last_known_elr, v2+) = [1]
    record = decode_metadata_record(PARTITION_CHANGE_HEAD + b"\x02" + PARTITION + tagged)
    assert record.data == {"partition_id": 3, "topic_id": TOPIC_ID_TEXT, "last_known_elr": [1]}
    with pytest.raises(MetadataRecordError, match="^Failed to deserialize record with type 5$"):
        decode_metadata_record(PARTITION_CHANGE_HEAD + b"\x01" + PARTITION + tagged)


def test_metadata_unknown_tag_is_skipped_or_fails_past_the_end():
    skipped = b"\x02" + b"\x0c\x02\xaa\xbb" + b"\x01\x04\xff\xff\xff\xff"  # tag 12 (2 bytes), leader -1
    record = decode_metadata_record(PARTITION_CHANGE_HEAD + b"\x00" + PARTITION + skipped)
    assert record.data == {"partition_id": 3, "topic_id": TOPIC_ID_TEXT, "leader": -1}
    with pytest.raises(MetadataRecordError, match="^Failed to deserialize record with type 5$"):
        decode_metadata_record(PARTITION_CHANGE_HEAD + b"\x00" + PARTITION + b"\x01" + b"\x0c\x05\xaa")


def test_metadata_known_tag_size_is_ignored():
    # tag 1 (leader) says 6 bytes: the int32 is read, the 2 bytes after it are left over
    value = PARTITION_CHANGE_HEAD + b"\x00" + PARTITION + b"\x01" + b"\x01\x06" b"\xff\xff\xff\xff" b"\x00\x00"
    with pytest.raises(MetadataRecordError, match="^Found 2 byte\\(s\\) of garbage after 5$"):
        decode_metadata_record(value)
    # the same tag saying 0 bytes still reads its int32
    record = decode_metadata_record(PARTITION_CHANGE_HEAD + b"\x00" + PARTITION + b"\x01" + b"\x01\x00\x00\x00\x00\x05")
    assert record.data["leader"] == 5
