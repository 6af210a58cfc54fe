"""The hand-written offset-commit readers (seglog_cli/storage/serde/coordinator_fast.py) against the
declarative schemas: records built with the layer's build side decode identically through both,
and bytes the fast readers are not sure of go to the schemas, so Kafka's error texts stay."""

from __future__ import annotations

import collections
import struct
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog_cli.formats import group_coordinator as gc
from seglog_cli.render.coordinator_json import CoordinatorRecordParser, offsets_parser
from seglog_cli.storage.serde import coordinator_records
from seglog_cli.storage.serde.coordinator_fast import (
    read_consumer_assignment,
    read_consumer_subscription,
    read_group_key,
    read_group_metadata_value,
    read_legacy_offset_commit_value,
    read_offset_commit_key,
    read_offset_commit_value,
)
from seglog_cli.storage.serde.coordinator_records import (
    GROUP_RECORD_TYPES,
    CoordinatorRecordError,
    read_coordinator_record,
    read_message,
)
from seglog_cli.storage.coordinator.coordinator_log import partition_entries
from seglog_cli.storage.log.records import Record
from tests.conftest import requires_corpus

# the same schemas in new (key, value) tuples: the fast readers serve only the table's own pairs
SCHEMA_ONLY = {record_type: (pair[0], pair[1]) for record_type, pair in GROUP_RECORD_TYPES.items()}

INT32 = st.integers(-2**31, 2**31 - 1)
INT64 = st.integers(-2**63, 2**63 - 1)
TEXT = st.text(max_size=40)  # any code points, control characters and astral ones included


def outcome(key: bytes, value: bytes | None, record_types: dict):
    """What reading a record gives: its type, key, version and value, or Kafka's message."""
    try:
        record = read_coordinator_record(key, value, record_types)
    except CoordinatorRecordError as exc:
        return type(exc).__name__, exc.message
    return record.record_type, record.key, record.value_version, record.value


def build_key(record_type: int, group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", record_type) + gc.OFFSET_COMMIT_KEY.struct(0).build(
        {"group": group, "topic": topic, "partition": partition})


@st.composite
def offset_commit_values(draw):
    """(record type, value version, value bytes) for every version of types 0 and 1, built by the
    layer's build side."""
    record_type = draw(st.sampled_from([0, 1]))
    version = 0 if record_type == 0 else draw(st.integers(0, 4))
    schema = gc.RECORD_TYPES[record_type][1]
    fields = {"offset": draw(INT64), "leaderEpoch": draw(INT32), "metadata": draw(TEXT),
              "commitTimestamp": draw(INT64), "expireTimestamp": draw(INT64), "tagged_fields": {}}
    return record_type, version, struct.pack(">h", version) + schema.struct(version).build(fields)


@settings(max_examples=400, deadline=None)
@given(offset_commit_values(), TEXT, TEXT, INT32)
def test_built_records_decode_alike(value_case, group, topic, partition):
    record_type, version, value = value_case
    key = build_key(record_type, group, topic, partition)
    fast = outcome(key, value, GROUP_RECORD_TYPES)
    assert fast == outcome(key, value, SCHEMA_ONLY)
    assert fast[0] == record_type and fast[2] == version
    # the fast readers took these records themselves (a v4 metadata of 127+ bytes needs a
    # longer varint: that one goes to the schema)
    assert read_offset_commit_key(key) == fast[1]
    plain_v4 = version != 4 or len(fast[3]["metadata"].encode("utf-8", "surrogatepass")) < 0x7F
    read_value = read_legacy_offset_commit_value if record_type == 0 else read_offset_commit_value
    assert (read_value(value, version) == fast[3]) == plain_v4


@settings(max_examples=200, deadline=None)
@given(offset_commit_values(), TEXT, TEXT, INT32, st.data())
def test_cut_or_changed_records_read_like_the_schemas(value_case, group, topic, partition, data):
    record_type, _, value = value_case
    key = build_key(record_type, group, topic, partition)
    key, value = _damage(key, data), _damage(value, data)
    assert outcome(key, value, GROUP_RECORD_TYPES) == outcome(key, value, SCHEMA_ONLY)


def _damage(data: bytes, draw) -> bytes:
    """Cut short, one byte overwritten, or bytes appended."""
    how = draw.draw(st.sampled_from(["cut", "byte", "append", "none"]))
    if how == "cut":
        return data[:draw.draw(st.integers(0, len(data)))]
    if how == "byte" and len(data) > 2:
        at = draw.draw(st.integers(2, len(data) - 1))
        return data[:at] + bytes([draw.draw(st.integers(0, 255))]) + data[at + 1:]
    if how == "append":
        return data + draw.draw(st.binary(min_size=1, max_size=4))
    return data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([0, 1, 2]), st.binary(max_size=40), st.one_of(st.none(), st.binary(max_size=40)))
def test_any_bytes_read_like_the_schemas(record_type, key_body, value):
    key = struct.pack(">h", record_type) + key_body
    assert outcome(key, value, GROUP_RECORD_TYPES) == outcome(key, value, SCHEMA_ONLY)


def test_schema_error_texts_stay():
    key = build_key(1, "g", "t", 0)
    null_metadata = struct.pack(">hqih", 3, 5, 0, -1)  # v3, offset 5, leaderEpoch 0, metadata null
    assert outcome(key, null_metadata, GROUP_RECORD_TYPES) == (
        "CoordinatorRecordError", "Could not read record with version 3 from value's buffer due to: "
        "non-nullable field metadata was serialized as null.")
    assert outcome(key, struct.pack(">hq", 5, 1), GROUP_RECORD_TYPES) == (
        "CoordinatorRecordError", "Found an unknown record version 5 for 1 type")
    assert outcome(key, struct.pack(">hq", 1, 1), GROUP_RECORD_TYPES)[1].endswith("due to: null.")
    null_group = struct.pack(">hh", 1, -1)
    assert outcome(null_group, None, GROUP_RECORD_TYPES) == (
        "CoordinatorRecordError", "Could not read record with version 1 from key's buffer due to: "
        "non-nullable field group was serialized as null.")


def test_v4_tagged_fields_and_long_metadata_go_to_the_schema():
    key = build_key(1, "g", "t", 0)
    tagged = struct.pack(">hqi", 4, 10, 2) + b"\x01" + struct.pack(">q", 3) + b"\x01\x07\x01\xff"  # tag 7, 1 byte
    assert read_offset_commit_value(tagged, 4) is None
    assert outcome(key, tagged, GROUP_RECORD_TYPES)[3] == {"offset": 10, "leaderEpoch": 2, "metadata": "",
                                                           "commitTimestamp": 3}
    long_metadata = "m" * 200  # compact length 201: a two-byte varint
    value = struct.pack(">h", 4) + gc.OFFSET_COMMIT_VALUE.struct(4).build(
        {"offset": 1, "leaderEpoch": -1, "metadata": long_metadata, "commitTimestamp": 2, "tagged_fields": {}})
    assert read_offset_commit_value(value, 4) is None
    assert outcome(key, value, GROUP_RECORD_TYPES)[3]["metadata"] == long_metadata


def test_java_replacement_of_bad_utf8():
    key = struct.pack(">hh", 1, 3) + b"\xed\xa0\x80" + struct.pack(">h", 1) + b"\xff" + struct.pack(">i", 2)
    assert read_offset_commit_key(key) == {"group": "\ufffd", "topic": "\ufffd", "partition": 2}
    assert outcome(key, None, GROUP_RECORD_TYPES) == outcome(key, None, SCHEMA_ONLY)


def test_group_metadata_key():
    key = struct.pack(">hh", 2, 5) + b"group"
    assert read_group_key(key) == {"group": "group"}
    assert read_group_key(struct.pack(">hh", 2, -1)) is None
    assert outcome(key, None, GROUP_RECORD_TYPES) == outcome(key, None, SCHEMA_ONLY)


def test_legacy_type_0_reads_only_version_0():
    key = build_key(0, "g", "t", 3)
    v0 = struct.pack(">hqh", 0, 42, 0) + struct.pack(">q", 7)
    assert outcome(key, v0, GROUP_RECORD_TYPES) == (0, {"group": "g", "topic": "t", "partition": 3}, 0,
                                                   {"offset": 42, "metadata": "", "commitTimestamp": 7})
    v3 = struct.pack(">hqih", 3, 1, 0, 0) + struct.pack(">q", 7)
    assert read_legacy_offset_commit_value(v3, 3) is None
    assert outcome(key, v3, GROUP_RECORD_TYPES) == ("CoordinatorRecordError",
                                                    "Found an unknown record version 3 for 0 type")


@settings(max_examples=200, deadline=None)
@given(offset_commit_values(), TEXT, TEXT, INT32, st.booleans())
def test_decoder_lines_are_the_same(value_case, group, topic, partition, tombstone):
    record_type, _, value = value_case
    record = Record(9, 0, 0, build_key(record_type, group, topic, partition), None if tombstone else value, (), 0, 0)
    assert offsets_parser()(record) == CoordinatorRecordParser(SCHEMA_ONLY)(record)


@requires_corpus
def test_every_corpus_record_reads_alike(corpus):
    # real brokers' __consumer_offsets (Kafka 4.2.0's own data and public repositories of many
    # versions): the same record, error and lines through the fast readers and the schemas
    directories = sorted(corpus.glob("kafka-4.2.0/data*/__consumer_offsets-*")) + sorted(
        corpus.glob("public/**/__consumer_offsets-*"))
    assert directories
    problems, types, fast_parser = [], collections.Counter(), offsets_parser()
    for directory in directories:
        for entry in partition_entries(directory, problems):
            record = entry.record
            if entry.control is not None or record.key is None:
                continue
            result = outcome(record.key, record.value, GROUP_RECORD_TYPES)
            assert result == outcome(record.key, record.value, SCHEMA_ONLY)
            assert fast_parser(record) == schema_lines(record)
            types[result[0]] += 1
    assert problems == []
    assert types[1] > 0 and types[2] > 0


# -- classic group metadata and the consumer protocol ----------------------------------------------

NULLABLE_TEXT = st.one_of(st.none(), TEXT)
TOPIC_PARTITIONS = st.lists(st.fixed_dictionaries({"topic": TEXT, "partitions": st.lists(INT32, max_size=4)}),
                            max_size=3)


@st.composite
def subscriptions(draw):
    version = draw(st.integers(0, 3))
    fields = {"topics": draw(st.lists(TEXT, max_size=3)), "userData": draw(st.one_of(st.none(), st.binary(max_size=8))),
              "ownedPartitions": draw(TOPIC_PARTITIONS), "generationId": draw(INT32), "rackId": draw(NULLABLE_TEXT)}
    return struct.pack(">h", version) + gc.CONSUMER_PROTOCOL_SUBSCRIPTION.struct(version).build(fields)


@st.composite
def assignments(draw):
    version = draw(st.integers(0, 3))
    fields = {"assignedPartitions": draw(TOPIC_PARTITIONS), "userData": draw(st.one_of(st.none(), st.binary(max_size=8)))}
    return struct.pack(">h", version) + gc.CONSUMER_PROTOCOL_ASSIGNMENT.struct(version).build(fields)


@st.composite
def group_metadata_values(draw):
    """(version, value bytes) of GroupMetadataValue v0-v4 built by the layer's build side, members'
    subscription and assignment either consumer-protocol bytes or arbitrary ones."""
    version = draw(st.integers(0, 4))
    members = [{"memberId": draw(TEXT), "groupInstanceId": draw(NULLABLE_TEXT), "clientId": draw(TEXT),
                "clientHost": draw(TEXT), "rebalanceTimeout": draw(INT32), "sessionTimeout": draw(INT32),
                "subscription": draw(st.one_of(subscriptions(), st.binary(max_size=6))),
                "assignment": draw(st.one_of(assignments(), st.binary(max_size=6))), "tagged_fields": {}}
               for _ in range(draw(st.integers(0, 3)))]
    fields = {"protocolType": draw(st.sampled_from(["consumer", "connect", ""])), "generation": draw(INT32),
              "protocol": draw(NULLABLE_TEXT), "leader": draw(NULLABLE_TEXT), "currentStateTimestamp": draw(INT64),
              "members": members, "tagged_fields": {}}
    return version, struct.pack(">h", version) + gc.GROUP_METADATA_VALUE.struct(version).build(fields)


def schema_lines(record: Record):
    """The decoder's lines with every message, embedded ones too, read through the schemas."""
    with mock.patch.object(coordinator_records, "read_consumer_subscription", lambda data: None), \
            mock.patch.object(coordinator_records, "read_consumer_assignment", lambda data: None):
        return CoordinatorRecordParser(SCHEMA_ONLY)(record)


def schema_versioned(message, data: bytes):
    try:
        version = struct.unpack_from(">h", data)[0]
        return version, read_message(message, version, data[2:], "value")
    except (CoordinatorRecordError, struct.error):
        return "error"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_metadata_values(), TEXT)
def test_group_metadata_values_decode_alike(case, group):
    version, value = case
    fast = read_group_metadata_value(value, version)
    assert fast is not None and fast == read_message(gc.GROUP_METADATA_VALUE, version, value[2:], "value")
    key = struct.pack(">h", 2) + gc.RECORD_TYPES[2][0].struct(0).build({"group": group})
    record = Record(3, 0, 0, key, value, (), 0, 0)
    assert outcome(key, value, GROUP_RECORD_TYPES) == outcome(key, value, SCHEMA_ONLY)
    # the whole line, consumer-protocol expansion included, against the schemas alone
    assert offsets_parser()(record) == schema_lines(record)


@settings(max_examples=300, deadline=None)
@given(st.one_of(subscriptions().map(lambda d: (gc.CONSUMER_PROTOCOL_SUBSCRIPTION, d)),
                 assignments().map(lambda d: (gc.CONSUMER_PROTOCOL_ASSIGNMENT, d))), st.data())
def test_consumer_protocol_messages_decode_alike(case, data):
    message, raw = case
    reader = read_consumer_subscription if message is gc.CONSUMER_PROTOCOL_SUBSCRIPTION else read_consumer_assignment
    assert reader(raw) == schema_versioned(message, raw)
    damaged = _damage(raw, data)
    fast = reader(damaged)
    assert fast is None or fast == schema_versioned(message, damaged)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group_metadata_values(), st.data())
def test_cut_or_changed_group_metadata_reads_like_the_schemas(case, data):
    version, value = case
    damaged = _damage(value, data)
    fast = read_group_metadata_value(damaged, version)
    if fast is not None:
        assert fast == read_message(gc.GROUP_METADATA_VALUE, version, damaged[2:], "value")
    key = struct.pack(">hh", 2, 1) + b"g"
    assert outcome(key, damaged, GROUP_RECORD_TYPES) == outcome(key, damaged, SCHEMA_ONLY)


def test_group_metadata_reader_leaves_tagged_fields_and_odd_versions_to_the_schemas():
    fields = {"protocolType": "consumer", "generation": 1, "protocol": None, "leader": None,
              "currentStateTimestamp": -1, "members": [], "tagged_fields": {}}
    v4 = struct.pack(">h", 4) + gc.GROUP_METADATA_VALUE.struct(4).build(fields)
    assert read_group_metadata_value(v4, 4) == {k: v for k, v in fields.items() if k != "tagged_fields"}
    tagged = v4[:-1] + b"\x01\x05\x01\xee"  # one unknown tagged field (tag 5, 1 byte)
    assert read_group_metadata_value(tagged, 4) is None
    assert outcome(struct.pack(">hh", 2, 1) + b"g", tagged, GROUP_RECORD_TYPES)[3]["members"] == []
    assert read_group_metadata_value(v4, 5) is None
    later = struct.pack(">hii", 4, 0, -1)  # a version 4 assignment: [] and null userData
    assert read_consumer_assignment(later) is None
    assert schema_versioned(gc.CONSUMER_PROTOCOL_ASSIGNMENT, later) == (4, {"assignedPartitions": [],
                                                                             "userData": None})
