"""The one generated-message layer (formats/kafka_message.py) on byte literals, for both schema
families declared on it: coordinator records (camelCase names) and KRaft metadata records
(snake_case names). Each tagged-field rule is the one Kafka's generated ``read(Readable, short)``
follows (``MessageDataGenerator.generateClassReader``):

(a) a tag the struct declares only for other versions -> "Tag N is not valid for version V";
(b) an unknown tag -> ``readUnknownTaggedField``: its ``size`` bytes are read aside
    (``readArray(size)``, so a size past the end is "Error reading byte array of ...");
(c) a known tag -> the field is read in place from the stream and the entry's size is ignored,
    so a size that disagrees with the field moves nothing: the next tag is read where the
    field ended.
"""

from __future__ import annotations

import pytest
from construct import ConstructError, StreamError
from hypothesis import given, settings, strategies as st

from seglog_cli.formats import group_coordinator as gc
from seglog_cli.formats import metadata_records as mr
from seglog_cli.formats import transaction_log as tl
from seglog_cli.formats.kafka_message import Field as F, KafkaReadError, Message, RawString, RawUuid

TOPIC_ID = bytes(range(16))

# A message whose tagged field exists in some flexible versions only: neither family has one in
# a coordinator schema (TransactionLogValue's tags start with its first flexible version), so the
# layer is checked on a declaration of the same shape as PartitionChangeRecord's tag 6.
LATER_TAG = Message("LaterTag", (
    F("id", "int32"),
    F("note", "string", versions="2+", nullable="2+", tag=3, default=None),
), valid="0-2", flexible="0+")


# -- (a) a tag declared for other versions -------------------------------------------------------

def test_a_tag_of_another_version_is_refused():
    data = (b"\x00\x00\x00\x01"  # id 1
            b"\x01"  # one tagged field
            b"\x03\x02" b"\x02x")  # tag 3 (note, v2+), size 2: compact string "x"
    assert LATER_TAG.struct(2).parse(data).tagged_fields == {"note": b"x"}
    for version in (0, 1):
        with pytest.raises(KafkaReadError, match=f"^Tag 3 is not valid for version {version}$"):
            LATER_TAG.struct(version).parse(data)


def test_metadata_tag_of_a_later_version_is_refused():
    data = (b"\x00\x00\x00\x07" + TOPIC_ID  # partition_id 7, topic_id
            + b"\x01"  # one tagged field
            + b"\x07\x05" b"\x02\x00\x00\x00\x01")  # tag 7 (last_known_elr, v2+), size 5: [1]
    assert mr.PARTITION_CHANGE.struct(2).parse(data).tagged_fields == {"last_known_elr": [1]}
    with pytest.raises(KafkaReadError, match="^Tag 7 is not valid for version 0$"):
        mr.PARTITION_CHANGE.struct(0).parse(data)


# -- (b) unknown tags ----------------------------------------------------------------------------

def test_coordinator_unknown_tag_is_read_aside():
    data = (b"\x00\x00\x00\x0a"  # epoch 10
            b"\x02"  # two tagged fields
            b"\x05\x03" b"\xaa\xbb\xcc"  # tag 5: unknown, its 3 bytes skipped
            b"\x00\x08" b"\x00\x00\x00\x00\x00\x00\x00\x2a")  # tag 0 (metadataHash) = 42
    parsed = gc.CONSUMER_GROUP_METADATA_VALUE.struct(0).parse(data)
    assert (parsed.epoch, parsed.tagged_fields) == (10, {"metadataHash": 42})


def test_unknown_tag_size_past_the_end_is_kafkas_read_array_error():
    data = (b"\x00\x00\x00\x0a"  # epoch 10
            b"\x01"  # one tagged field
            b"\x05\x09" b"\xaa\xbb")  # tag 5, size 9, but 2 bytes left
    with pytest.raises(KafkaReadError, match=r"^Error reading byte array of 9 byte\(s\): only 2 byte\(s\) available$"):
        gc.CONSUMER_GROUP_METADATA_VALUE.struct(0).parse(data)
    metadata = (b"\x00\x00\x00\x01" + (16).to_bytes(8, "big")  # broker_id 1, broker_epoch 16
                + b"\x01" + b"\x09\x04" b"\xaa")  # tag 9 (unknown), size 4, 1 byte left
    with pytest.raises(KafkaReadError, match=r"^Error reading byte array of 4 byte\(s\): only 1 byte\(s\) available$"):
        mr.BROKER_REGISTRATION_CHANGE.struct(0).parse(metadata)


def test_unknown_tag_negative_size_fails_like_new_byte_array():
    data = (b"\x00\x00\x00\x0a"  # epoch 10
            b"\x01"  # one tagged field
            b"\x05" b"\xff\xff\xff\xff\x0f")  # tag 5, size 0xffffffff: Java's int -1
    with pytest.raises(KafkaReadError, match="^-1$"):  # NegativeArraySizeException: -1
        gc.CONSUMER_GROUP_METADATA_VALUE.struct(0).parse(data)


# -- (c) a known tag's size is ignored -----------------------------------------------------------

def test_coordinator_known_tag_size_is_ignored():
    data = (b"\x00\x00\x00\x0a"  # epoch 10
            b"\x02"  # two tagged fields
            b"\x00\x01" b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # tag 0, size says 1: the int64 42 is read
            b"\x01\x63" b"\x00\x00\x00\x00\x00\x00\x00\x07")  # tag 1, size says 99: creationTimeMs 7
    parsed = gc.CONSUMER_GROUP_METADATA_VALUE.struct(0).parse(data)
    assert parsed.tagged_fields == {"metadataHash": 42, "creationTimeMs": 7}


def test_coordinator_known_tag_reads_past_its_size():
    data = (b"\x00\x00\x00\x0a"  # epoch 10
            b"\x01"  # one tagged field
            b"\x00\x08" b"\x00\x00\x00\x2a")  # tag 0, size 8, only 4 bytes: the int64 runs out
    with pytest.raises(StreamError) as info:
        gc.CONSUMER_GROUP_METADATA_VALUE.struct(0).parse(data)
    # a buffer underflow (Java's has no message), not the unknown-tag "Error reading byte array"
    assert not isinstance(info.value, KafkaReadError)


def test_metadata_known_tag_size_is_ignored():
    data = (b"\x00\x00\x00\x03" + TOPIC_ID  # partition_id 3, topic_id
            + b"\x02"  # two tagged fields
            + b"\x01\x09" b"\xff\xff\xff\xff"  # tag 1 (leader), size says 9: int32 -1 is read
            + b"\x00\x00" b"\x02\x00\x00\x00\x02")  # tag 0 (isr), size says 0: [2] is read
    parsed = mr.PARTITION_CHANGE.struct(0).parse(data)
    assert parsed.tagged_fields == {"leader": -1, "isr": [2]}


# -- the rest of the reader, both families -------------------------------------------------------

def test_nullable_tagged_struct_has_a_presence_marker():
    member = (b"\x00" b"\x00" b"\x02c" b"\x02h"  # instanceId, rackId null; clientId "c", clientHost "h"
              b"\x01" b"\x00" b"\xff\xff\xff\xff" b"\x00")  # topics [], regex null, rebalance -1, assignor null
    classic = (b"\x01"  # present (Kafka writes varint 1 before a nullable tagged struct)
               b"\x00\x00\x00\x64"  # sessionTimeoutMs 100
               b"\x02" b"\x06range" b"\x02\x07" b"\x00")  # [{name "range", metadata 0x07}], no tags
    schema = gc.CONSUMER_GROUP_MEMBER_METADATA_VALUE.struct(0)
    parsed = schema.parse(member + b"\x01" + b"\x00" + bytes([len(classic)]) + classic + b"\x00")
    meta = parsed.tagged_fields["classicMemberMetadata"]
    assert meta.sessionTimeoutMs == 100
    assert [(p.name, p.metadata) for p in meta.supportedProtocols] == [(b"range", b"\x07")]
    null_marker = schema.parse(member + b"\x01" + b"\x00\x01" + b"\x00" + b"\x00")
    assert null_marker.tagged_fields == {"classicMemberMetadata": None}


def test_string_array_elements_are_never_null():
    data = (b"\x00" b"\x00" b"\x02c" b"\x02h"  # instanceId, rackId null; clientId, clientHost
            b"\x02" b"\x00")  # subscribedTopicNames: one element, null
    message = "^non-nullable field subscribedTopicNames element was serialized as null$"
    with pytest.raises(KafkaReadError, match=message):
        gc.CONSUMER_GROUP_MEMBER_METADATA_VALUE.struct(0).parse(data)


def test_varint_too_long_is_kafkas_message():
    with pytest.raises(KafkaReadError, match="^Varint is too long, the most significant bit in the 5th byte is set, "
                                             "converted value: ffffffff$"):
        mr.TOPIC.struct(0).parse(b"\xff\xff\xff\xff\xff")
    with pytest.raises(KafkaReadError, match="converted value: fffffff$"):
        mr.TOPIC.struct(0).parse(b"\xff\xff\xff\xff\x80")


def test_compact_length_wraps_as_a_java_int():
    # 0x80000000 is Integer.MIN_VALUE; minus one wraps to Integer.MAX_VALUE
    with pytest.raises(KafkaReadError, match="^string field name had invalid length 2147483647$"):
        mr.TOPIC.struct(0).parse(b"\x80\x80\x80\x80\x08")


def test_strings_and_uuids_are_raw_in_both_families():
    topic = mr.TOPIC.struct(0).parse(b"\x04big" + TOPIC_ID + b"\x00")
    assert isinstance(topic.name, RawString) and isinstance(topic.topic_id, RawUuid)
    key = gc.OFFSET_COMMIT_KEY.struct(0).parse(b"\x00\x01g" b"\x00\x01t" b"\x00\x00\x00\x00")
    assert isinstance(key.group, RawString) and key.group == b"g"


# -- building: what Kafka's generated writers write ------------------------------------------------

def test_classic_and_flexible_builds_round_trip():
    v0 = (b"\x00\x00\x00\x00\x00\x00\x00\x05"  # producerId 5
          b"\x00\x01" b"\x00\x00\xea\x60" b"\x01"  # producerEpoch 1, timeout 60000, Ongoing
          b"\x00\x00\x00\x01" b"\x00\x03txx" b"\x00\x00\x00\x01\x00\x00\x00\x00"  # [{"txx", [0]}]
          b"\x00\x00\x00\x00\x00\x00\x00\x64" b"\x00\x00\x00\x00\x00\x00\x00\x32")  # update 100, start 50
    v1 = (b"\x00\x00\x00\x00\x00\x00\x00\x05" b"\x00\x01" b"\x00\x00\xea\x60" b"\x01"
          b"\x02" b"\x04txx" b"\x02\x00\x00\x00\x00" b"\x00"  # compact [{"txx", [0]}], struct tags
          b"\x00\x00\x00\x00\x00\x00\x00\x64" b"\x00\x00\x00\x00\x00\x00\x00\x32"
          b"\x02" b"\x00\x08\x00\x00\x00\x00\x00\x00\x00\x04"  # tag 0 previousProducerId 4
          b"\x02\x02\x00\x02")  # tag 2 clientTransactionVersion 2
    for version, data in ((0, v0), (1, v1)):
        schema = tl.TRANSACTION_LOG_VALUE.struct(version)
        assert schema.build(schema.parse(data)) == data


def test_nullable_tagged_struct_builds_with_its_marker():
    schema = gc.CONSUMER_GROUP_MEMBER_METADATA_VALUE.struct(0)
    value = {"instanceId": None, "rackId": None, "clientId": "c", "clientHost": "h", "subscribedTopicNames": ["t"],
             "subscribedTopicRegex": None, "rebalanceTimeoutMs": -1, "serverAssignor": None,
             "tagged_fields": {"classicMemberMetadata": {"sessionTimeoutMs": 9, "supportedProtocols": [],
                                                         "tagged_fields": {}}}}
    built = schema.build(value)
    # one tagged field: tag 0, size 7 = the marker 1 + the struct (int32 9, empty array, no tags)
    assert built.endswith(b"\x01" b"\x00\x07" b"\x01" b"\x00\x00\x00\x09" b"\x01" b"\x00")
    assert schema.parse(built).tagged_fields["classicMemberMetadata"].sessionTimeoutMs == 9


# -- any bytes -------------------------------------------------------------------------------------

MESSAGES = ([value for _, value in gc.RECORD_TYPES.values()] + [tl.TRANSACTION_LOG_VALUE]
            + [gc.CONSUMER_PROTOCOL_SUBSCRIPTION, gc.CONSUMER_PROTOCOL_ASSIGNMENT]
            + [record_type.schema for record_type in mr.RECORD_TYPES.values()])


@settings(max_examples=200, deadline=2000)
@given(data=st.binary(max_size=120), version=st.integers(0, 4))
def test_any_bytes_parse_or_raise_a_construct_error(data, version):
    for message in MESSAGES:
        try:
            message.struct(version).parse(data)
        except ConstructError:
            pass
