"""The ``__share_group_state`` schemas (formats/share_coordinator.py) on byte literals commented field
by field: values a real Kafka 4.2.0 broker wrote (kafka-4.2.0/share-groups, __share_group_state-1,
offsets 0, 1 and 13), each parsed and written back by the layer's build side."""

from __future__ import annotations

from seglog_cli.formats import share_coordinator as sc
from seglog_cli.formats.kafka_message import RawString, RawUuid
from tests.coordinator_bytes import hex_bytes as _hex
from tests.coordinator_bytes import round_trip as _round_trip

TOPIC_ID = "5e0c124cbec6470a868f154031a53a08"  # XgwSTL7GRwqGjxVAMaU6CA


def test_record_types_and_versions():
    assert {t: (k.name, v.name) for t, (k, v) in sc.RECORD_TYPES.items()} == {
        0: ("ShareSnapshotKey", "ShareSnapshotValue"), 1: ("ShareUpdateKey", "ShareUpdateValue")}
    for key, value in sc.RECORD_TYPES.values():
        assert not key.is_flexible(0) and key.is_valid(0)
        assert value.is_flexible(0) and value.is_valid(0) and not value.is_valid(1)


def test_key():
    data = _hex("0009" "73672d616363657074",  # groupId "sg-accept" (classic string)
                TOPIC_ID,  # topicId
                "00000002")  # partition 2
    parsed = _round_trip(sc.SHARE_SNAPSHOT_KEY, data, {"groupId": "sg-accept", "topicId": bytes.fromhex(TOPIC_ID),
                                                       "partition": 2})
    assert isinstance(parsed.groupId, RawString) and isinstance(parsed.topicId, RawUuid)


def test_snapshot_value_initialization():
    data = _hex("00000000",  # snapshotEpoch 0
                "00000001",  # stateEpoch 1
                "00000000",  # leaderEpoch 0
                "ffffffffffffffff",  # startOffset -1
                "000001a2136e1905",  # createTimestamp 1795622312197
                "000001a2136e1905",  # writeTimestamp
                "01",  # stateBatches [] (compact: 0 + 1)
                "00")  # no tagged fields: deliveryCompleteCount absent (default -1)
    value = {"snapshotEpoch": 0, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": -1,
             "createTimestamp": 1795622312197, "writeTimestamp": 1795622312197, "stateBatches": [],
             "tagged_fields": {}}
    parsed = _round_trip(sc.SHARE_SNAPSHOT_VALUE, data, value)
    assert "deliveryCompleteCount" not in parsed.tagged_fields


def test_snapshot_value_with_a_batch_and_the_tagged_count():
    data = _hex("00000001", "00000001", "00000000",  # snapshotEpoch 1, stateEpoch 1, leaderEpoch 0
                "0000000000000287",  # startOffset 647
                "000001a2136e1905", "000001a2136e6a35",  # createTimestamp, writeTimestamp
                "02",  # stateBatches: 1 entry
                "0000000000000287" "0000000000000383"  # firstOffset 647, lastOffset 899
                "02" "0001" "00",  # deliveryState 2 (acknowledged), deliveryCount 1, no tags
                "01" "00" "04" "000000fd")  # 1 tagged field: tag 0, size 4, deliveryCompleteCount 253
    value = {"snapshotEpoch": 1, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": 647,
             "createTimestamp": 1795622312197, "writeTimestamp": 1795622332981,
             "stateBatches": [{"firstOffset": 647, "lastOffset": 899, "deliveryState": 2, "deliveryCount": 1,
                               "tagged_fields": {}}],
             "tagged_fields": {"deliveryCompleteCount": 253}}
    parsed = _round_trip(sc.SHARE_SNAPSHOT_VALUE, data, value)
    assert parsed.tagged_fields["deliveryCompleteCount"] == 253


def test_update_value():
    data = _hex("00000000", "00000000",  # snapshotEpoch 0, leaderEpoch 0
                "0000000000000000",  # startOffset 0
                "02" "0000000000000000" "0000000000000286" "02" "0001" "00",  # [0..646, acknowledged, 1]
                "01" "00" "04" "00000287")  # deliveryCompleteCount 647 (tag 0)
    value = {"snapshotEpoch": 0, "leaderEpoch": 0, "startOffset": 0,
             "stateBatches": [{"firstOffset": 0, "lastOffset": 646, "deliveryState": 2, "deliveryCount": 1,
                               "tagged_fields": {}}],
             "tagged_fields": {"deliveryCompleteCount": 647}}
    _round_trip(sc.SHARE_UPDATE_VALUE, data, value)
