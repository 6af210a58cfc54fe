"""--share-group-state-decoder: the key/payload text kafka-dump-log 4.2 prints for
``__share_group_state`` records, and the JSON Lines fields.

Vectors: Kafka 4.2's message specs
(share-coordinator/src/main/resources/common/message/ShareSnapshotKey.json, ShareSnapshotValue.json,
ShareUpdateKey.json, ShareUpdateValue.json; ``DeliveryCompleteCount`` tagged field 0, default -1,
KIP-1226) and the expectations of Kafka's own
``tools/src/test/java/org/apache/kafka/tools/DumpLogSegmentsTest.testShareGroupStateMessageParser``
(group "gs1", topic id "Uj5wn_FqTXirEASvVZRY1w", the tombstone, the unknown record type 32767,
the ShareSnapshotValue read as a ShareUpdateValue). Records are encoded field by field from the
specs (tests/coordinator_bytes.py), batches and segments with seglog's builder. The real
broker's output (../shared/corpus/kafka-4.2.0/share-groups/golden) is replayed line for line by
tests/commands/test_dump_golden.py; here its JSON Lines are checked against it.
"""

from __future__ import annotations

import base64
import json

import pytest

from seglog_cli.render.coordinator_json import share_group_state_fields, share_group_state_parser
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.log.errors import DecodeError
from seglog_cli.storage.log.records import Record
from tests.conftest import CORPUS, requires_corpus, run_seglog
from tests.coordinator_bytes import NO_TAGS, carr, i8, i16, i32, i64, s, tags

TOPIC_ID_TEXT = "Uj5wn_FqTXirEASvVZRY1w"
TOPIC_ID = base64.urlsafe_b64decode(TOPIC_ID_TEXT + "==")
KEY_JSON = '{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w","partition":0}'


def share_key(record_type, group="gs1", topic_id=TOPIC_ID, partition=0):
    return i16(record_type) + s(group) + topic_id + i32(partition)


def state_batch(first, last, state, count):
    return i64(first) + i64(last) + i8(state) + i16(count) + NO_TAGS


def snapshot_value(snapshot_epoch, state_epoch, leader_epoch, start, create_ts, write_ts, batches,
                   delivery_complete=None, version=0):
    tagged = NO_TAGS if delivery_complete is None else tags((0, i32(delivery_complete)))
    return (i16(version) + i32(snapshot_epoch) + i32(state_epoch) + i32(leader_epoch) + i64(start) + i64(create_ts)
            + i64(write_ts) + carr(batches) + tagged)


def update_value(snapshot_epoch, leader_epoch, start, batches, delivery_complete=None):
    tagged = NO_TAGS if delivery_complete is None else tags((0, i32(delivery_complete)))
    return i16(0) + i32(snapshot_epoch) + i32(leader_epoch) + i64(start) + carr(batches) + tagged


def parse(key, value, offset=0):
    return share_group_state_parser()(Record(offset, 0, 0, key, value, (), 0, 0))


TIMESTAMP = 1_795_622_312_549


def test_snapshot_as_kafka_dump_log_test_expects():
    value = snapshot_value(0, 0, 0, 0, TIMESTAMP, TIMESTAMP, [state_batch(0, 4, 2, 1)])
    assert parse(share_key(0), value) == (
        '{"type":"0","data":%s}' % KEY_JSON,
        '{"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,"leaderEpoch":0,"startOffset":0,'
        '"createTimestamp":%d,"writeTimestamp":%d,"stateBatches":[{"firstOffset":0,"lastOffset":4,'
        '"deliveryState":2,"deliveryCount":1}]}}' % (TIMESTAMP, TIMESTAMP))


def test_update_as_kafka_dump_log_test_expects():
    assert parse(share_key(1), update_value(0, 0, 0, [state_batch(0, 4, 2, 1)])) == (
        '{"type":"1","data":%s}' % KEY_JSON,
        '{"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,"startOffset":0,'
        '"stateBatches":[{"firstOffset":0,"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}')


def test_delivery_complete_count_printed_after_start_offset_when_written():
    # the tag is printed where the writer set it (even to 0), in the spec's position
    value = snapshot_value(1, 1, 0, 647, 10, 20, [state_batch(647, 899, 2, 1)], delivery_complete=253)
    assert parse(share_key(0), value)[1] == (
        '{"version":"0","data":{"snapshotEpoch":1,"stateEpoch":1,"leaderEpoch":0,"startOffset":647,'
        '"deliveryCompleteCount":253,"createTimestamp":10,"writeTimestamp":20,"stateBatches":[{"firstOffset":647,'
        '"lastOffset":899,"deliveryState":2,"deliveryCount":1}]}}')
    _, payload = parse(share_key(1), update_value(0, 0, 0, [state_batch(0, 29, 0, 1)], delivery_complete=0))
    assert payload == ('{"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,"startOffset":0,'
                       '"deliveryCompleteCount":0,"stateBatches":[{"firstOffset":0,"lastOffset":29,"deliveryState":0,'
                       '"deliveryCount":1}]}}')
    # written at its default -1: the JSON converter leaves it out, as if absent
    _, payload = parse(share_key(1), update_value(0, 0, 5, [], delivery_complete=-1))
    assert payload == '{"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,"startOffset":5,"stateBatches":[]}}'


def test_tombstone():
    assert parse(share_key(0), None) == ('{"type":"0","data":%s}' % KEY_JSON, "<DELETE>")


def test_unknown_record_type():
    assert parse(i16(32767), b"") == ("Unknown record type 32767 at offset 0, skipping.", None)
    assert parse(i16(2) + s("gs1"), None, offset=9) == ("Unknown record type 2 at offset 9, skipping.", None)


def test_snapshot_value_under_an_update_key_is_an_error():
    # DumpLogSegmentsTest: a ShareSnapshotValue with every field at its default, under a
    # ShareUpdateKey, is read as a ShareUpdateValue until the array count (a zero byte: null)
    value = snapshot_value(0, 0, 0, 0, 0, 0, [])
    assert parse(share_key(1, group="group"), value) == (
        "Error at offset 0, skipping. Could not read record with version 0 from value's buffer due to: "
        "non-nullable field stateBatches was serialized as null.", None)


def test_unknown_value_version():
    value = snapshot_value(0, 1, 0, -1, 1, 1, [], version=1)
    assert parse(share_key(0), value, offset=4) == (
        "Error at offset 4, skipping. Found an unknown record version 1 for 0 type", None)


def test_undecodable_bytes():
    assert parse(share_key(0)[:1], None, offset=3) == (
        "Error at offset 3, skipping. Could not read version from key's buffer.", None)
    assert parse(share_key(0), b"\x00", offset=3) == (
        "Error at offset 3, skipping. Could not read version from value's buffer.", None)
    truncated = snapshot_value(0, 1, 0, -1, 1, 1, [state_batch(0, 4, 2, 1)])[:30]
    assert parse(share_key(0), truncated, offset=3) == (
        "Error at offset 3, skipping. Could not read record with version 0 from value's buffer due to: null.", None)
    # the key is read "with version <record type>"
    assert parse(share_key(1)[:8], None, offset=3) == (
        "Error at offset 3, skipping. Could not read record with version 1 from key's buffer due to: null.", None)


def test_missing_key_stops_like_kafka():
    with pytest.raises(DecodeError, match="Failed to decode message at offset 0 using the specified decoder "
                                          r"\(message had a missing key\)"):
        parse(None, None)


def test_json_lines_fields():
    value = snapshot_value(1, 1, 0, 647, 10, 20, [state_batch(647, 899, 2, 1)], delivery_complete=253)
    fields = share_group_state_fields(Record(5, 0, 0, share_key(0), value, (), 0, 0))
    assert fields == {"coordinatorRecord": {
        "recordType": 0,
        "key": {"groupId": "gs1", "topicId": TOPIC_ID_TEXT, "partition": 0},
        "valueVersion": 0,
        "value": {"snapshotEpoch": 1, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": 647,
                  "deliveryCompleteCount": 253, "createTimestamp": 10, "writeTimestamp": 20,
                  "stateBatches": [{"firstOffset": 647, "lastOffset": 899, "deliveryState": 2, "deliveryCount": 1}]},
    }}
    tombstone = share_group_state_fields(Record(6, 0, 0, share_key(0), None, (), 0, 0))
    assert tombstone["coordinatorRecord"]["value"] is None
    assert share_group_state_fields(Record(7, 0, 0, i16(5), b"", (), 0, 0)) == {
        "coordinatorError": "Found an unknown record type 5", "coordinatorUnknown": True}


def test_cli_on_a_built_segment(tmp_path):
    records = [
        (share_key(0), snapshot_value(0, 1, 0, -1, TIMESTAMP, TIMESTAMP, [])),
        (share_key(1), update_value(0, 0, 0, [state_batch(0, 29, 0, 1)], delivery_complete=0)),
        (share_key(0), None),
        (i16(7) + s("x"), b"\x00\x00"),
    ]
    data = b"".join(build_batch([NewRecord(key=k, value=v, timestamp=TIMESTAMP)], base_offset=n,
                                producer_id=-1, producer_epoch=-1, base_sequence=0, partition_leader_epoch=0)
                    for n, (k, v) in enumerate(records))
    log = tmp_path / "__share_group_state-0" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(data)
    result = run_seglog("dump", "--share-group-state-decoder", str(log))
    assert result.exit_code == 0
    payloads = [line.split(" headerKeys: [] ", 1)[1] for line in result.out.splitlines() if line.startswith("| ")]
    assert payloads == [
        'key: {"type":"0","data":%s} payload: {"version":"0","data":{"snapshotEpoch":0,"stateEpoch":1,'
        '"leaderEpoch":0,"startOffset":-1,"createTimestamp":%d,"writeTimestamp":%d,"stateBatches":[]}}'
        % (KEY_JSON, TIMESTAMP, TIMESTAMP),
        'key: {"type":"1","data":%s} payload: {"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,'
        '"startOffset":0,"deliveryCompleteCount":0,"stateBatches":[{"firstOffset":0,"lastOffset":29,'
        '"deliveryState":0,"deliveryCount":1}]}}' % KEY_JSON,
        'key: {"type":"0","data":%s} payload: <DELETE>' % KEY_JSON,
        "key: Unknown record type 7 at offset 3, skipping.",
    ]


@requires_corpus
def test_json_lines_agree_with_the_broker_golden():
    """Every record of the real share-state partitions: the JSON Lines key and value are the
    JSON kafka-dump-log 4.2 printed for it."""
    data = CORPUS / "kafka-4.2.0" / "share-groups" / "data"
    golden = CORPUS / "kafka-4.2.0" / "share-groups" / "golden"
    checked = 0
    for partition in range(3):
        rel = f"__share_group_state-{partition}/00000000000000000000.log"
        expected = [line for line in (golden / f"{rel}.share-group-state-decoder.out").read_text().splitlines()
                    if line.startswith("| ")]
        result = run_seglog("dump", "--share-group-state-decoder", "--format", "jsonl", "--files", rel, cwd=data)
        records = [obj for obj in map(json.loads, result.out.splitlines()) if obj["type"] == "record"]
        assert len(records) == len(expected)
        for obj, line in zip(records, expected):
            key_text = line.split(" key: ", 1)[1].split(" payload: ", 1)[0]
            payload_text = line.split(" payload: ", 1)[1]
            decoded = obj["coordinatorRecord"]
            assert json.loads(key_text) == {"type": str(decoded["recordType"]), "data": decoded["key"]}
            if payload_text == "<DELETE>":
                assert decoded["value"] is None
            else:
                assert json.loads(payload_text) == {"version": str(decoded["valueVersion"]), "data": decoded["value"]}
            checked += 1
    assert checked == 11 + 27 + 11
