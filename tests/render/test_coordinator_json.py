"""The --offsets-decoder / --transaction-log-decoder lines against Kafka's own expectations
(``DumpLogSegmentsTest.testOffsetsMessageParser``, whose records are re-encoded here from the
message specs) and Jackson's escaping rules."""

from __future__ import annotations

import pytest

from seglog_cli.render.coordinator_json import jackson_text, offsets_parser, transaction_log_parser
from seglog_cli.storage.log.errors import DecodeError
from seglog_cli.storage.log.records import Record
from tests.coordinator_bytes import (
    NO_TAGS, arr, b, carr, cb, cs, i16, i32, i64, offset_commit_key, offset_commit_value, s, tags, txn_key,
    txn_value_v1, uvar,
)


def record(key, value, offset=0):
    return Record(offset, 0, 0, key, value, (), 0, 0)


def group_metadata_v4(subscription: bytes, assignment: bytes) -> bytes:
    member = (cs("member") + cs("instance") + cs("client") + cs("host") + i32(1000) + i32(100)
              + cb(subscription) + cb(assignment) + NO_TAGS)
    return (i16(4) + cs("consumer") + i32(10) + cs("range") + cs("member") + i64(-1)
            + carr([member]) + NO_TAGS)


GROUP_KEY = i16(2) + s("group")
CONSUMER_GROUP_KEY = i16(3) + s("group")


def test_consumer_group_metadata():
    key, payload = offsets_parser()(record(CONSUMER_GROUP_KEY, i16(0) + i32(10) + NO_TAGS))
    assert key == '{"type":"3","data":{"groupId":"group"}}'
    assert payload == '{"version":"0","data":{"epoch":10}}'


def test_group_metadata_expands_the_consumer_protocol():
    subscription = (i16(3) + arr([s("foo")]) + b(None) + arr([s("foo") + arr([i32(0)])]) + i32(0) + s("rack"))
    assignment = i16(3) + arr([s("foo") + arr([i32(0)])]) + b(None)
    key, payload = offsets_parser()(record(GROUP_KEY, group_metadata_v4(subscription, assignment)))
    assert key == '{"type":"2","data":{"group":"group"}}'
    assert payload == (
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":{"topics":["foo"],'
        '"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}')


def test_group_metadata_keeps_malformed_embedded_bytes():
    _, payload = offsets_parser()(record(GROUP_KEY, group_metadata_v4(b"Subscription", b"Assignment")))
    assert '"subscription":"U3Vic2NyaXB0aW9u","assignment":"QXNzaWdubWVudA=="}' in payload


def test_tombstone():
    assert offsets_parser()(record(CONSUMER_GROUP_KEY, None)) == (
        '{"type":"3","data":{"groupId":"group"}}', "<DELETE>")


def test_unknown_record_type():
    key = i16(32767) + s("group")
    assert offsets_parser()(record(key, i16(0) + i32(10) + NO_TAGS)) == (
        "Unknown record type 32767 at offset 0, skipping.", None)


def test_value_of_another_type_is_an_error_line():
    # a ConsumerGroupMemberMetadataValue (null strings) stored under a ConsumerGroupMetadata key.
    # Read as ConsumerGroupMetadataValue: epoch 0x101, one tagged field, tag 0 (metadataHash, a
    # known tag: read in place as an int64, its size ignored, as Kafka's generated reader does)
    # with one byte left, so Java's BufferUnderflowException, whose message is null
    member_value = (i16(0) + cs(None) + cs(None) + cs("") + cs("") + carr([]) + cs(None) + i32(-1)
                    + cs(None) + NO_TAGS)
    key, payload = offsets_parser()(record(CONSUMER_GROUP_KEY, member_value))
    assert key == ("Error at offset 0, skipping. Could not read record with version 0 from "
                   "value's buffer due to: null.")
    assert payload is None


def test_missing_key_is_a_decode_error():
    with pytest.raises(DecodeError, match="message had a missing key"):
        offsets_parser()(record(None, None, offset=4))


def test_short_key_and_unknown_value_version():
    assert offsets_parser()(record(b"\x00", None, offset=3)) == (
        "Error at offset 3, skipping. Could not read version from key's buffer.", None)
    key = offset_commit_key("g", "t", 0)
    assert offsets_parser()(record(key, i16(9) + i64(1))) == (
        "Error at offset 0, skipping. Found an unknown record version 9 for 1 type", None)


def test_offset_commit_versions():
    key = offset_commit_key("g", "t", 2)
    expected_key = '{"type":"1","data":{"group":"g","topic":"t","partition":2}}'
    cases = {
        0: '{"offset":5,"metadata":"m","commitTimestamp":7}',
        1: '{"offset":5,"metadata":"m","commitTimestamp":7,"expireTimestamp":-1}',
        2: '{"offset":5,"metadata":"m","commitTimestamp":7}',
        3: '{"offset":5,"leaderEpoch":-1,"metadata":"m","commitTimestamp":7}',
        4: '{"offset":5,"leaderEpoch":-1,"metadata":"m","commitTimestamp":7}',
    }
    for version, data in cases.items():
        value = offset_commit_value(5, "m", 7, version=version)
        assert offsets_parser()(record(key, value)) == (expected_key, f'{{"version":"{version}","data":{data}}}')
    legacy = i16(0) + s("g") + s("t") + i32(2)
    assert offsets_parser()(record(legacy, offset_commit_value(5, "m", 7, version=0)))[0] == expected_key.replace(
        '"type":"1"', '"type":"0"')


def test_transaction_log_tagged_fields_print_only_when_not_default():
    value = txn_value_v1(7, 1, 1, [("t", [0, 1])], 10, 20)
    key, payload = transaction_log_parser()(record(txn_key("tx"), value))
    assert key == '{"type":"0","data":{"transactionalId":"tx"}}'
    assert payload == ('{"version":"1","data":{"producerId":7,"producerEpoch":1,"transactionTimeoutMs":60000,'
                       '"transactionStatus":1,"transactionPartitions":[{"topic":"t","partitionIds":[0,1]}],'
                       '"transactionLastUpdateTimestampMs":20,"transactionStartTimestampMs":10}}')
    tagged = value[:-1] + tags((0, i64(3)), (2, i16(2)))
    _, payload = transaction_log_parser()(record(txn_key("tx"), tagged))
    assert '"producerId":7,"previousProducerId":3,"producerEpoch":1' in payload
    assert payload.endswith('"transactionStartTimestampMs":10,"clientTransactionVersion":2}}')
    # the offsets decoder does not know type 0 as a transaction key
    assert offsets_parser()(record(txn_key("tx"), value))[0].startswith("Error at offset 0, skipping.")


def test_jackson_escaping():
    assert jackson_text({"a": "\u0001\t\"\\é\u007f"}) == '{"a":"\\u0001\\t\\"\\\\é\u007f"}'
    assert jackson_text([None, True, -1]) == "[null,true,-1]"
