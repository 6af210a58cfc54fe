"""KRaft metadata record schemas: byte literals parsed field by field, built back, and the
Java reader's refusals (null in a non-nullable field, over-long strings, impossible counts)."""

from __future__ import annotations

import pytest
from construct import ConstructError

from seglog_cli.formats.kafka_message import KafkaReadError, java_int
from seglog_cli.formats.metadata_records import (
    BROKER_REGISTRATION_CHANGE,
    CLEAR_ELR,
    CONFIG,
    PARTITION_CHANGE,
    RECORD_TYPES,
    TOPIC,
)

TOPIC_ID = bytes(range(16))

TOPIC_V0 = (
    b"\x04" b"big"        # name: compact string, length 3 + 1
    + TOPIC_ID           # topic_id: uuid, 16 bytes
    + b"\x00"            # tagged fields: none
)

PARTITION_CHANGE_V2 = (
    b"\x00\x00\x00\x07"   # partition_id: int32 7
    + TOPIC_ID           # topic_id
    + b"\x03"            # three tagged fields follow
    + b"\x00\x01\x01"     # tag 0 (isr), size 1, compact array of 0 elements
    + b"\x01\x04\xff\xff\xff\xff"  # tag 1 (leader), size 4, int32 -1
    + b"\x06\x05\x02\x00\x00\x00\x01"  # tag 6 (eligible_leader_replicas), size 5, [1]
)


def test_topic_record_v0_parses_and_builds():
    schema = TOPIC.struct(0)
    parsed = schema.parse(TOPIC_V0)
    assert parsed.name == b"big"
    assert parsed.topic_id == TOPIC_ID
    assert parsed.tagged_fields == {}
    assert schema.build({"name": b"big", "topic_id": TOPIC_ID, "tagged_fields": {}}) == TOPIC_V0


def test_partition_change_v2_tagged_fields_by_name():
    parsed = PARTITION_CHANGE.struct(2).parse(PARTITION_CHANGE_V2)
    assert parsed.partition_id == 7
    assert parsed.tagged_fields == {"isr": [], "leader": -1, "eligible_leader_replicas": [1]}


def test_tagged_fields_build_back_in_tag_order():
    schema = PARTITION_CHANGE.struct(2)
    built = schema.build({"partition_id": 7, "topic_id": TOPIC_ID,
                          "tagged_fields": {"leader": -1, "isr": [], "eligible_leader_replicas": [1]}})
    assert built == PARTITION_CHANGE_V2


def test_tag_of_a_later_version_is_refused():
    # tag 6 belongs to eligible_leader_replicas, a version 2+ field: Kafka's v1 reader throws
    with pytest.raises(KafkaReadError, match="Tag 6 is not valid for version 1"):
        PARTITION_CHANGE.struct(1).parse(PARTITION_CHANGE_V2)


def test_undeclared_tags_are_skipped():
    data = b"\x00\x00\x00\x01" + (16).to_bytes(8, "big") + b"\x02" + b"\x00\x01\xff" + b"\x09\x02\xaa\xbb"
    parsed = BROKER_REGISTRATION_CHANGE.struct(2).parse(data)
    assert parsed.tagged_fields == {"fenced": -1}  # tag 9: 2 bytes skipped


def test_fields_of_later_versions_are_absent():
    data = b"\x00\x00\x00\x01" + (16).to_bytes(8, "big") + b"\x01" + b"\x00\x01\xff"
    assert BROKER_REGISTRATION_CHANGE.struct(0).parse(data).tagged_fields == {"fenced": -1}
    tagged = data[:-4] + b"\x02" + b"\x00\x01\xff" + b"\x01\x01\x01"
    with pytest.raises(KafkaReadError, match="Tag 1 is not valid for version 0"):
        BROKER_REGISTRATION_CHANGE.struct(0).parse(tagged)
    assert BROKER_REGISTRATION_CHANGE.struct(1).parse(tagged).tagged_fields == {
        "fenced": -1, "in_controlled_shutdown": 1}


def test_string_array_elements_are_never_null():
    from seglog_cli.formats.metadata_records import DELEGATION_TOKEN

    data = b"\x02o" b"\x02r" b"\x02\x00"  # owner, requester, renewers [null]
    with pytest.raises(KafkaReadError, match="non-nullable field renewers element was serialized as null"):
        DELEGATION_TOKEN.struct(0).parse(data + bytes(24) + b"\x02t\x00")


def test_null_in_a_non_nullable_string_is_refused():
    with pytest.raises(KafkaReadError, match="non-nullable field name was serialized as null"):
        TOPIC.struct(0).parse(b"\x00" + TOPIC_ID + b"\x00")


def test_nullable_string_reads_null():
    parsed = CONFIG.struct(0).parse(b"\x02" b"\x01" b"\x02x" b"\x00" b"\x00")
    assert (parsed.resource_type, parsed.resource_name, parsed.name, parsed.value) == (2, b"", b"x", None)


def test_string_longer_than_32767_is_refused():
    with pytest.raises(KafkaReadError, match="had invalid length 32768"):
        CLEAR_ELR.struct(0).parse(b"\x81\x80\x02" + b"a" * 40000 + b"\x00")


def test_collection_larger_than_the_bytes_left_is_refused():
    data = b"\x00\x00\x00\x07" + TOPIC_ID + b"\x01" + b"\x00\x05\xff\xff\xff\x0f"
    with pytest.raises(KafkaReadError, match="Tried to allocate a collection of size"):
        PARTITION_CHANGE.struct(0).parse(data)


def test_truncated_value_is_a_construct_error():
    with pytest.raises(ConstructError):
        TOPIC.struct(0).parse(TOPIC_V0[:-3])


def test_java_int_wraps_like_an_int():
    assert java_int(0xFFFFFFFF) == -1
    assert java_int(0x7FFFFFFF) == 2**31 - 1


def test_record_type_table_is_consistent():
    names = [t.name for t in RECORD_TYPES.values()]
    assert len(set(names)) == len(names)
    assert all(t.name.endswith("_RECORD") and t.lowest_version <= t.highest_version
               for t in RECORD_TYPES.values())
    for record_type in RECORD_TYPES.values():  # every known version builds a schema
        for version in range(record_type.lowest_version, record_type.highest_version + 1):
            record_type.schema.struct(version)
