"""--offsets-decoder lines for the KIP-932 share-group records (types 10-15), in the style of Kafka's
``DumpLogSegmentsTest.testOffsetsMessageParser``: records encoded from the message specs
(tests/coordinator_bytes.py), the exact key/payload text kafka-dump-log 4.2 prints.

The values are those of Kafka's own ``ShareGroupMessageFormatterTest`` (group "group-id", member
"member-id", ``Uuid.ONE_UUID``), and each expected ``data`` object is the one that test expects;
kafka-dump-log prints the same JSON, with the type and version quoted."""

from __future__ import annotations

import pytest

from seglog_cli.render.coordinator_json import offsets_fields
from seglog_cli.storage.log.records import Record
from tests.coordinator_bytes import NO_TAGS, carr, cs, i8, i16, i32, i64, tags
from tests.coordinator_bytes import offsets_line as parse
from tests.coordinator_bytes import type_key as key

ONE_UUID = bytes(15) + b"\x01"
ONE_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAQ"


def record(key, value, offset=7):
    return Record(offset, 0, 0, key, value, (), 0, 0)


def topic_partitions(topic_id, partitions):
    return topic_id + carr([i32(p) for p in partitions]) + NO_TAGS


def topic_info(topic_id, name, partitions=None):
    listed = carr([i32(p) for p in partitions]) if partitions is not None else b""
    return topic_id + cs(name) + listed + NO_TAGS


MEMBER = ("group-id", "member-id")


def test_member_metadata():
    value = i16(0) + cs("rack-a") + cs("client-id") + cs("1.2.3.4") + carr([cs("topic")]) + NO_TAGS
    assert parse(key(10, *MEMBER), value) == (
        '{"type":"10","data":{"groupId":"group-id","memberId":"member-id"}}',
        '{"version":"0","data":{"rackId":"rack-a","clientId":"client-id","clientHost":"1.2.3.4",'
        '"subscribedTopicNames":["topic"]}}')


def test_member_metadata_null_rack():
    _, payload = parse(key(10, *MEMBER), i16(0) + cs(None) + cs("c") + cs("/10.0.0.1") + carr([]) + NO_TAGS)
    assert payload == ('{"version":"0","data":{"rackId":null,"clientId":"c","clientHost":"/10.0.0.1",'
                       '"subscribedTopicNames":[]}}')


def test_group_metadata_prints_the_hash_even_when_zero():
    assert parse(key(11, "group-id"), i16(0) + i32(1) + i64(1) + NO_TAGS) == (
        '{"type":"11","data":{"groupId":"group-id"}}', '{"version":"0","data":{"epoch":1,"metadataHash":1}}')
    # an untagged field is always printed (a tagged one would be left out at its default 0)
    _, payload = parse(key(11, "group-id"), i16(0) + i32(3) + i64(0) + NO_TAGS)
    assert payload == '{"version":"0","data":{"epoch":3,"metadataHash":0}}'


def test_group_metadata_in_the_tagged_form_is_misread():
    # epoch 1 with metadataHash as a tag-0 field (ConsumerGroupMetadataValue's form): 4.2 reads the
    # tag section's first 8 bytes (01 00 08 00 00 00 00 00) as the hash, then tag count 0, and
    # ignores the 2 bytes left, as CoordinatorRecordSerde does
    value = i16(0) + i32(1) + tags((0, i64(1)))
    _, payload = parse(key(11, "group-id"), value)
    assert payload == '{"version":"0","data":{"epoch":1,"metadataHash":%d}}' % 0x0100080000000000


def test_target_assignment_metadata():
    assert parse(key(12, "group-id"), i16(0) + i32(1) + NO_TAGS) == (
        '{"type":"12","data":{"groupId":"group-id"}}', '{"version":"0","data":{"assignmentEpoch":1}}')


def test_target_assignment_metadata_later_tag_is_not_printed():
    # Kafka 4.3's assignmentTimestamp (tag 0) is unknown to a 4.2 reader
    _, payload = parse(key(12, "group-id"), i16(0) + i32(1) + tags((0, i64(1_770_000_000_000))))
    assert payload == '{"version":"0","data":{"assignmentEpoch":1}}'


def test_target_assignment_member():
    value = i16(0) + carr([topic_partitions(ONE_UUID, [0, 1])]) + NO_TAGS
    assert parse(key(13, *MEMBER), value) == (
        '{"type":"13","data":{"groupId":"group-id","memberId":"member-id"}}',
        '{"version":"0","data":{"topicPartitions":[{"topicId":"%s","partitions":[0,1]}]}}' % ONE_UUID_TEXT)


def test_current_member_assignment():
    value = i16(0) + i32(1) + i32(0) + i8(0) + carr([topic_partitions(ONE_UUID, [0, 1])]) + NO_TAGS
    assert parse(key(14, *MEMBER), value) == (
        '{"type":"14","data":{"groupId":"group-id","memberId":"member-id"}}',
        '{"version":"0","data":{"memberEpoch":1,"previousMemberEpoch":0,"state":0,'
        '"assignedPartitions":[{"topicId":"%s","partitions":[0,1]}]}}' % ONE_UUID_TEXT)


def test_state_partition_metadata():
    value = (i16(0) + carr([topic_info(ONE_UUID, "topic", [1])]) + carr([topic_info(ONE_UUID, "topic", [0])])
             + carr([topic_info(ONE_UUID, "topic")]) + NO_TAGS)
    topic = '"topicId":"%s","topicName":"topic"' % ONE_UUID_TEXT
    assert parse(key(15, "group-id"), value) == (
        '{"type":"15","data":{"groupId":"group-id"}}',
        '{"version":"0","data":{"initializingTopics":[{%s,"partitions":[1]}],'
        '"initializedTopics":[{%s,"partitions":[0]}],"deletingTopics":[{%s}]}}' % (topic, topic, topic))


def test_state_partition_metadata_with_a_create_timestamp_is_an_error_line():
    # the unmerged KAFKA-19204 draft (TopicPartitionsInfo + CreateTimestamp int64): 4.2's reader
    # takes the timestamp's first byte as the entry's tag count and cannot go on
    entry = ONE_UUID + cs("topic") + carr([i32(1)]) + i64(1_700_000_000_000) + NO_TAGS
    key_text, payload = parse(key(15, "group-id"), i16(0) + carr([entry]) + carr([]) + carr([]) + NO_TAGS)
    assert key_text.startswith("Error at offset 7, skipping. Could not read record with version 0 from value's ")
    assert payload is None


@pytest.mark.parametrize("record_type", [10, 11, 12, 13, 14, 15])
def test_tombstones(record_type):
    names = MEMBER if record_type in (10, 13, 14) else MEMBER[:1]
    key_text, payload = parse(key(record_type, *names), None)
    member = ',"memberId":"member-id"' if len(names) == 2 else ""
    assert key_text == '{"type":"%d","data":{"groupId":"group-id"%s}}' % (record_type, member)
    assert payload == "<DELETE>"


def test_type_9_is_unknown():
    assert parse(key(9, "group-id"), i16(0) + carr([]) + NO_TAGS) == (
        "Unknown record type 9 at offset 7, skipping.", None)


def test_unknown_value_version():
    assert parse(key(15, "group-id"), i16(1) + carr([]) + carr([]) + carr([]) + NO_TAGS) == (
        "Error at offset 7, skipping. Found an unknown record version 1 for 15 type", None)


def test_jsonl_fields():
    fields = offsets_fields(record(key(11, "group-id"), i16(0) + i32(2) + i64(-5) + NO_TAGS))
    assert fields == {"coordinatorRecord": {"recordType": 11, "key": {"groupId": "group-id"}, "valueVersion": 0,
                                            "value": {"epoch": 2, "metadataHash": -5}}}
