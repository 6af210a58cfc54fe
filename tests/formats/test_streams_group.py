"""The KIP-1071 streams-group record schemas (types 17, 19-23) on byte literals, field by field:
each literal is parsed, and the layer's build side writes the same bytes back from plain values."""

from __future__ import annotations

import pytest
from construct import ConstructError

from seglog_cli.formats import group_coordinator as gc
from seglog_cli.formats.kafka_message import KafkaReadError, RawString
from tests.coordinator_bytes import hex_bytes as _hex
from tests.coordinator_bytes import round_trip as _round_trip

NO_TAGS = "00"


@pytest.mark.parametrize(("record_type", "name", "fields"), [
    (17, "StreamsGroupMetadataKey", ["groupId"]),
    (19, "StreamsGroupMemberMetadataKey", ["groupId", "memberId"]),
    (20, "StreamsGroupTargetAssignmentMetadataKey", ["groupId"]),
    (21, "StreamsGroupTargetAssignmentMemberKey", ["groupId", "memberId"]),
    (22, "StreamsGroupCurrentMemberAssignmentKey", ["groupId", "memberId"]),
    (23, "StreamsGroupTopologyKey", ["groupId"]),
])
def test_keys_are_classic_strings(record_type, name, fields):
    key, _ = gc.RECORD_TYPES[record_type]
    assert key.name == name and [f.name for f in key.fields] == fields
    assert not key.is_flexible(0) and key.is_valid(0) and not key.is_valid(1)
    data = _hex(*("0003" "617070", "0002" "6d31")[:len(fields)])  # int16 length + "app", then "m1"
    parsed = _round_trip(key, data, dict(zip(fields, ["app", "m1"])))
    assert parsed.groupId == b"app" and isinstance(parsed.groupId, RawString)


def test_types_9_18_and_24_are_not_declared():
    # removed in Kafka 4.1 (9, 18); added after 4.2 (24)
    assert not {9, 18, 24} & set(gc.RECORD_TYPES)
    assert set(range(17, 24)) - {18} <= set(gc.RECORD_TYPES)


def test_group_metadata_value_without_tags():
    data = _hex("00000005",  # epoch 5
                "000000000000002a",  # metadataHash 42
                NO_TAGS)
    parsed = _round_trip(gc.STREAMS_GROUP_METADATA_VALUE, data,
                         {"epoch": 5, "metadataHash": 42, "tagged_fields": {}})
    assert (parsed.epoch, parsed.metadataHash, parsed.tagged_fields) == (5, 42, {})


def test_group_metadata_value_tagged_epoch_and_configs():
    configs = _hex("02",  # compact array: 1 entry
                   "15", "num.standby.replicas".encode().hex(),  # key, compact (20 + 1)
                   "02" "31",  # value "1"
                   NO_TAGS)  # the entry's tagged fields
    data = _hex("00000007", "fffffffffffffff6",  # epoch 7, metadataHash -10
                "02",  # two tagged fields
                "00" "04" "00000003",  # tag 0 validatedTopologyEpoch, 4 bytes: 3
                "01", f"{len(configs):02x}", configs.hex())  # tag 1 lastAssignmentConfigs
    value = {"epoch": 7, "metadataHash": -10, "tagged_fields": {
        "validatedTopologyEpoch": 3,
        "lastAssignmentConfigs": [{"key": "num.standby.replicas", "value": "1", "tagged_fields": {}}]}}
    parsed = _round_trip(gc.STREAMS_GROUP_METADATA_VALUE, data, value)
    (config,) = parsed.tagged_fields["lastAssignmentConfigs"]
    assert (config.key, config.value) == (b"num.standby.replicas", b"1")
    assert parsed.tagged_fields["validatedTopologyEpoch"] == 3


def test_group_metadata_value_null_configs_and_later_tags():
    data = _hex("00000001", "0000000000000000",  # epoch 1, metadataHash 0
                "02",
                "01" "01" "00",  # tag 1, 1 byte: compact count 0 = null
                "02" "04" "00000009")  # tag 2 (KIP-1331, after 4.2): unknown, its 4 bytes skipped
    parsed = gc.STREAMS_GROUP_METADATA_VALUE.struct(0).parse(data)
    assert parsed.tagged_fields == {"lastAssignmentConfigs": None}


def test_member_metadata_value_with_endpoint():
    data = _hex("00",  # instanceId null
                "03" "7231",  # rackId "r1"
                "04" "636c69",  # clientId "cli"
                "05" "2f312e32",  # clientHost "/1.2"
                "00007530",  # rebalanceTimeoutMs 30000
                "00000002",  # topologyEpoch 2
                "04" "706964",  # processId "pid"
                "01",  # userEndpoint: int8 marker 1 = present (an untagged nullable struct)
                "0a" "6c6f63616c686f7374", "ffff",  # host "localhost", port uint16 65535
                NO_TAGS,  # the endpoint's tagged fields
                "02" "03" "617a" "02" "62", NO_TAGS,  # clientTags [{key "az", value "b"}]
                NO_TAGS)
    value = {"instanceId": None, "rackId": "r1", "clientId": "cli", "clientHost": "/1.2",
             "rebalanceTimeoutMs": 30000, "topologyEpoch": 2, "processId": "pid",
             "userEndpoint": {"host": "localhost", "port": 65535, "tagged_fields": {}},
             "clientTags": [{"key": "az", "value": "b", "tagged_fields": {}}], "tagged_fields": {}}
    parsed = _round_trip(gc.STREAMS_GROUP_MEMBER_METADATA_VALUE, data, value)
    assert parsed.userEndpoint.port == 65535 and parsed.userEndpoint.host == b"localhost"
    assert parsed.instanceId is None


def test_member_metadata_value_null_endpoint():
    data = _hex("03" "6931", "00", "02" "63", "02" "68",  # instanceId "i1", rackId null, "c", "h"
                "ffffffff", "00000000", "02" "70",  # rebalanceTimeoutMs -1, topologyEpoch 0, processId "p"
                "ff",  # userEndpoint: int8 marker -1 = null
                "01",  # clientTags []
                NO_TAGS)
    value = {"instanceId": "i1", "rackId": None, "clientId": "c", "clientHost": "h", "rebalanceTimeoutMs": -1,
             "topologyEpoch": 0, "processId": "p", "userEndpoint": None, "clientTags": [], "tagged_fields": {}}
    parsed = _round_trip(gc.STREAMS_GROUP_MEMBER_METADATA_VALUE, data, value)
    assert parsed.userEndpoint is None and parsed.clientTags == []


def test_member_metadata_value_null_process_id_is_refused():
    data = _hex("00", "00", "02" "63", "02" "68", "ffffffff", "00000000", "00")  # processId null
    with pytest.raises(KafkaReadError, match="^non-nullable field processId was serialized as null$"):
        gc.STREAMS_GROUP_MEMBER_METADATA_VALUE.struct(0).parse(data)


def test_target_assignment_metadata_value():
    data = _hex("0000000c", NO_TAGS)  # assignmentEpoch 12
    parsed = _round_trip(gc.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, data,
                         {"assignmentEpoch": 12, "tagged_fields": {}})
    assert parsed.assignmentEpoch == 12


def test_target_assignment_member_value():
    data = _hex("02" "0230" "03" "00000000" "00000002", NO_TAGS,  # activeTasks [{"0", [0, 2]}]
                "01",  # standbyTasks []
                "02" "0231" "01", NO_TAGS,  # warmupTasks [{"1", []}]
                NO_TAGS)
    value = {"activeTasks": [{"subtopologyId": "0", "partitions": [0, 2], "tagged_fields": {}}],
             "standbyTasks": [],
             "warmupTasks": [{"subtopologyId": "1", "partitions": [], "tagged_fields": {}}], "tagged_fields": {}}
    parsed = _round_trip(gc.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE, data, value)
    assert [t.partitions for t in parsed.activeTasks] == [[0, 2]]


def test_current_member_assignment_value_with_assignment_epochs():
    active = _hex("02" "0230" "03" "00000000" "00000001",  # [{"0", [0, 1],
                  "01" "00" "09" "03" "00000004" "00000005",  # tag 0 assignmentEpochs [4, 5] (9 bytes)
                  )  # }]
    data = _hex("00000005", "00000004", "02",  # memberEpoch 5, previousMemberEpoch 4, state 2
                active.hex(),  # activeTasks
                "01", "01",  # standbyTasks [], warmupTasks []
                "02" "0231" "02" "00000003", NO_TAGS,  # activeTasksPendingRevocation [{"1", [3]}], no epochs
                "01", "01",  # standby/warmup pending revocation []
                NO_TAGS)
    value = {"memberEpoch": 5, "previousMemberEpoch": 4, "state": 2,
             "activeTasks": [{"subtopologyId": "0", "partitions": [0, 1],
                              "tagged_fields": {"assignmentEpochs": [4, 5]}}],
             "standbyTasks": [], "warmupTasks": [],
             "activeTasksPendingRevocation": [{"subtopologyId": "1", "partitions": [3], "tagged_fields": {}}],
             "standbyTasksPendingRevocation": [], "warmupTasksPendingRevocation": [], "tagged_fields": {}}
    parsed = _round_trip(gc.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, data, value)
    assert parsed.activeTasks[0].tagged_fields == {"assignmentEpochs": [4, 5]}
    assert parsed.activeTasksPendingRevocation[0].tagged_fields == {}


def test_current_member_assignment_value_field_order():
    names = [f.name for f in gc.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE.fields]
    assert names == ["memberEpoch", "previousMemberEpoch", "state", "activeTasks", "standbyTasks", "warmupTasks",
                     "activeTasksPendingRevocation", "standbyTasksPendingRevocation", "warmupTasksPendingRevocation"]


TOPOLOGY = _hex(
    "00000003",  # epoch 3
    "02",  # subtopologies: 1
    "0230",  # subtopologyId "0"
    "02" "03" "696e",  # sourceTopics ["in"]
    "02" "04" "782e2a",  # sourceTopicRegex ["x.*"]
    "02" "04" "636c67" "00000000" "0003",  # stateChangelogTopics [{name "clg", partitions 0, replication 3,
    "02" "0f" "636c65616e75702e706f6c696379" "08" "636f6d70616374", NO_TAGS,  # configs cleanup.policy=compact
    NO_TAGS,  # }] (TopicInfo tags)
    "02" "04" "726570",  # repartitionSinkTopics ["rep"]
    "02" "04" "726570" "00000004" "ffff" "01", NO_TAGS,  # repartitionSourceTopics [{"rep", 4, -1, []}]
    "02" "02" "0000" "01" "02" "0000", NO_TAGS,  # copartitionGroups [{[0], [], [0]}] (int16 indexes)
    NO_TAGS,  # the subtopology's tags
    NO_TAGS)


def test_topology_value():
    value = {"epoch": 3, "subtopologies": [{
        "subtopologyId": "0", "sourceTopics": ["in"], "sourceTopicRegex": ["x.*"],
        "stateChangelogTopics": [{"name": "clg", "partitions": 0, "replicationFactor": 3, "topicConfigs": [
            {"key": "cleanup.policy", "value": "compact", "tagged_fields": {}}], "tagged_fields": {}}],
        "repartitionSinkTopics": ["rep"],
        "repartitionSourceTopics": [{"name": "rep", "partitions": 4, "replicationFactor": -1, "topicConfigs": [],
                                     "tagged_fields": {}}],
        "copartitionGroups": [{"sourceTopics": [0], "sourceTopicRegex": [], "repartitionSourceTopics": [0],
                               "tagged_fields": {}}],
        "tagged_fields": {}}], "tagged_fields": {}}
    parsed = _round_trip(gc.STREAMS_GROUP_TOPOLOGY_VALUE, TOPOLOGY, value)
    (sub,) = parsed.subtopologies
    assert sub.stateChangelogTopics[0].replicationFactor == 3
    assert sub.copartitionGroups[0].repartitionSourceTopics == [0]


def test_topology_value_cut_short_raises():
    with pytest.raises(ConstructError):
        gc.STREAMS_GROUP_TOPOLOGY_VALUE.struct(0).parse(TOPOLOGY[:-5])
