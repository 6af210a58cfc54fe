"""--offsets-decoder lines for the KIP-1071 streams-group records (types 17, 19-23), in the style
of Kafka's ``DumpLogSegmentsTest.testOffsetsMessageParser``: records encoded from the message
specs (tests/coordinator_bytes.py), the exact key/payload text kafka-dump-log 4.2 prints."""

from __future__ import annotations

import struct

import pytest

from seglog_cli.render.coordinator_json import offsets_fields
from seglog_cli.storage.log.records import Record
from tests.coordinator_bytes import NO_TAGS, carr, cs, i8, i16, i32, i64, tags
from tests.coordinator_bytes import offsets_line as parse
from tests.coordinator_bytes import type_key as key


def record(key, value, offset=7):
    return Record(offset, 0, 0, key, value, (), 0, 0)


def task_ids(subtopology, partitions, epochs=None):
    tagged = tags((0, carr([i32(e) for e in epochs]))) if epochs is not None else NO_TAGS
    return cs(subtopology) + carr([i32(p) for p in partitions]) + tagged


def key_value(k, v):
    return cs(k) + cs(v) + NO_TAGS


def test_group_metadata_defaults_are_not_printed():
    line = parse(key(17, "app"), i16(0) + i32(5) + i64(42) + NO_TAGS)
    assert line == ('{"type":"17","data":{"groupId":"app"}}',
                    '{"version":"0","data":{"epoch":5,"metadataHash":42}}')


def test_group_metadata_tagged_fields():
    value = i16(0) + i32(6) + i64(-1) + tags((0, i32(2)), (1, carr([key_value("num.standby.replicas", "1")])))
    _, payload = parse(key(17, "app"), value)
    assert payload == ('{"version":"0","data":{"epoch":6,"metadataHash":-1,"validatedTopologyEpoch":2,'
                       '"lastAssignmentConfigs":[{"key":"num.standby.replicas","value":"1"}]}}')


def test_group_metadata_empty_configs_differ_from_the_null_default():
    _, payload = parse(key(17, "app"), i16(0) + i32(1) + i64(0) + tags((0, i32(-1)), (1, carr([]))))
    assert payload == '{"version":"0","data":{"epoch":1,"metadataHash":0,"lastAssignmentConfigs":[]}}'


def test_member_metadata():
    value = (i16(0) + cs("inst") + cs(None) + cs("app-1-StreamThread-1") + cs("/127.0.0.1") + i32(300000)
             + i32(1) + cs("7f3c") + i8(1) + cs("localhost") + struct.pack(">H", 8080) + NO_TAGS
             + carr([key_value("az", "eu-1")]) + NO_TAGS)
    line = parse(key(19, "app", "member-1"), value)
    assert line == (
        '{"type":"19","data":{"groupId":"app","memberId":"member-1"}}',
        '{"version":"0","data":{"instanceId":"inst","rackId":null,"clientId":"app-1-StreamThread-1",'
        '"clientHost":"/127.0.0.1","rebalanceTimeoutMs":300000,"topologyEpoch":1,"processId":"7f3c",'
        '"userEndpoint":{"host":"localhost","port":8080},"clientTags":[{"key":"az","value":"eu-1"}]}}')


def test_member_metadata_null_endpoint():
    value = (i16(0) + cs(None) + cs(None) + cs("c") + cs("h") + i32(-1) + i32(0) + cs("p") + i8(-1)
             + carr([]) + NO_TAGS)
    _, payload = parse(key(19, "app", "m"), value)
    assert '"processId":"p","userEndpoint":null,"clientTags":[]}}' in payload


def test_target_assignment_metadata_and_member():
    assert parse(key(20, "app"), i16(0) + i32(3) + NO_TAGS) == (
        '{"type":"20","data":{"groupId":"app"}}', '{"version":"0","data":{"assignmentEpoch":3}}')
    value = i16(0) + carr([task_ids("0", [0, 1])]) + carr([task_ids("1", [2])]) + carr([]) + NO_TAGS
    assert parse(key(21, "app", "m"), value) == (
        '{"type":"21","data":{"groupId":"app","memberId":"m"}}',
        '{"version":"0","data":{"activeTasks":[{"subtopologyId":"0","partitions":[0,1]}],'
        '"standbyTasks":[{"subtopologyId":"1","partitions":[2]}],"warmupTasks":[]}}')


def test_current_member_assignment_with_assignment_epochs():
    value = (i16(0) + i32(4) + i32(3) + i8(0)
             + carr([task_ids("0", [0], epochs=[4])]) + carr([]) + carr([])
             + carr([task_ids("1", [5])]) + carr([]) + carr([]) + NO_TAGS)
    assert parse(key(22, "app", "m"), value) == (
        '{"type":"22","data":{"groupId":"app","memberId":"m"}}',
        '{"version":"0","data":{"memberEpoch":4,"previousMemberEpoch":3,"state":0,'
        '"activeTasks":[{"subtopologyId":"0","partitions":[0],"assignmentEpochs":[4]}],'
        '"standbyTasks":[],"warmupTasks":[],'
        '"activeTasksPendingRevocation":[{"subtopologyId":"1","partitions":[5]}],'
        '"standbyTasksPendingRevocation":[],"warmupTasksPendingRevocation":[]}}')


def test_topology():
    changelog = cs("app-store-changelog") + i32(0) + i16(-1) + carr([key_value("cleanup.policy", "compact")]) + NO_TAGS
    subtopology = (cs("0") + carr([cs("input")]) + carr([]) + carr([changelog]) + carr([cs("app-rep")])
                   + carr([]) + carr([carr([i16(0)]) + carr([]) + carr([]) + NO_TAGS]) + NO_TAGS)
    assert parse(key(23, "app"), i16(0) + i32(1) + carr([subtopology]) + NO_TAGS) == (
        '{"type":"23","data":{"groupId":"app"}}',
        '{"version":"0","data":{"epoch":1,"subtopologies":[{"subtopologyId":"0","sourceTopics":["input"],'
        '"sourceTopicRegex":[],"stateChangelogTopics":[{"name":"app-store-changelog","partitions":0,'
        '"replicationFactor":-1,"topicConfigs":[{"key":"cleanup.policy","value":"compact"}]}],'
        '"repartitionSinkTopics":["app-rep"],"repartitionSourceTopics":[],'
        '"copartitionGroups":[{"sourceTopics":[0],"sourceTopicRegex":[],"repartitionSourceTopics":[]}]}]}}')


@pytest.mark.parametrize("record_type", [17, 19, 20, 21, 22, 23])
def test_tombstones(record_type):
    names = ("app", "m") if record_type in (19, 21, 22) else ("app",)
    key_text, payload = parse(key(record_type, *names), None)
    assert key_text.startswith('{"type":"%d","data":{"groupId":"app"' % record_type)
    assert payload == "<DELETE>"


@pytest.mark.parametrize("record_type", [9, 18, 24])
def test_removed_and_later_types_are_unknown(record_type):
    # 9/18: message files deleted in Kafka 4.1; 24: added after 4.2
    assert parse(key(record_type, "app"), i16(0) + NO_TAGS) == (
        f"Unknown record type {record_type} at offset 7, skipping.", None)


def test_unknown_value_version():
    assert parse(key(23, "app"), i16(1) + i32(1) + carr([]) + NO_TAGS) == (
        "Error at offset 7, skipping. Found an unknown record version 1 for 23 type", None)


def test_short_value_is_an_error_line():
    key_text, payload = parse(key(20, "app"), i16(0) + b"\x00\x00")
    assert key_text == ("Error at offset 7, skipping. Could not read record with version 0 from value's "
                        "buffer due to: null.")
    assert payload is None


def test_jsonl_fields():
    fields = offsets_fields(record(key(20, "app"), i16(0) + i32(9) + NO_TAGS))
    assert fields == {"coordinatorRecord": {"recordType": 20, "key": {"groupId": "app"}, "valueVersion": 0,
                                            "value": {"assignmentEpoch": 9}}}
    unknown = offsets_fields(record(key(18, "app"), i16(0) + NO_TAGS))
    assert unknown == {"coordinatorError": "Found an unknown record type 18", "coordinatorUnknown": True}
