"""Control record keys and values (spec §4): transaction markers and the KRaft messages.

The KRaft values are Kafka *flexible* encodings (every message JSON under
``clients/src/main/resources/common/message/`` has ``"flexibleVersions": "0+"``): compact arrays
and strings carry unsigned varint length + 1, every struct ends with a tagged-field count,
ports are uint16 and directory ids 16-byte uuids. The literals below are derived from those rules;
the snapshot header/footer, kraft.version and voters literals are the bytes of the corpus
checkpoint, which the last test decodes whole against Kafka's own output.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from construct import GreedyRange, StreamError

from seglog_cli.formats import control
from seglog_cli.formats.control import (
    ControlRecordKey,
    EndTxnMarkerValue,
    KRaftVersionRecord,
    LeaderChangeMessage,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    VotersRecord,
)
from seglog_cli.formats.protocol import EMPTY_TAGGED_FIELDS, CompactString, TaggedFields, Uint16
from seglog_cli.formats.record_batch import RecordBatch, UncompressedRecords
from tests.conftest import CORPUS, requires_corpus

NO_TAGS = {"count": 0, "fields": []}


def plain(obj):
    """A parsed Container/ListContainer as plain dicts and lists, for equality with literals."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj


def check(schema, data: bytes, expected: dict):
    """Parse gives ``expected``; building ``expected`` gives ``data`` back."""
    assert plain(schema.parse(data)) == expected
    assert schema.build(expected) == data


# -- the control record key -------------------------------------------------------------------

def test_control_types():
    assert control.CONTROL_TYPES == {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE",
                                     3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                                     5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}


@pytest.mark.parametrize("data, expected", [
    (bytes.fromhex("0000"      # version 0
                   "0000"),    # type 0: ABORT
     {"version": 0, "type": control.ABORT, "rest": b""}),
    (bytes.fromhex("0000"      # version 0
                   "0006"),    # type 6: KRAFT_VOTERS
     {"version": 0, "type": control.KRAFT_VOTERS, "rest": b""}),
    (bytes.fromhex("0003"      # version 3: newer versions are read as version 0 by Kafka
                   "0001"      # type 1: COMMIT
                   "beef"),    # bytes past the 4 Kafka reads: kept, not an error
     {"version": 3, "type": control.COMMIT, "rest": b"\xbe\xef"}),
    (bytes.fromhex("ffff"      # version -1: corruption, but the schema reads it (the engine judges)
                   "0001"),    # type 1
     {"version": -1, "type": control.COMMIT, "rest": b""}),
])
def test_control_record_key(data, expected):
    check(ControlRecordKey, data, expected)


def test_control_key_size():
    assert control.CONTROL_KEY_SIZE == 4
    with pytest.raises(StreamError):
        ControlRecordKey.parse(b"\x00\x00\x00")


# -- the end transaction marker value ---------------------------------------------------------

@pytest.mark.parametrize("data, expected", [
    (bytes.fromhex("0000"        # version 0
                   "0000002a"),  # coordinator_epoch 42
     {"version": 0, "coordinator_epoch": 42, "rest": b""}),
    (bytes.fromhex("0000"        # version 0
                   "ffffffff"),  # coordinator_epoch -1
     {"version": 0, "coordinator_epoch": -1, "rest": b""}),
    (bytes.fromhex("0001"        # version 1: Kafka reads any version > 0 as version 0
                   "00000007"    # coordinator_epoch 7
                   "00ff"),      # extra bytes past the 6 Kafka reads: tolerated, kept
     {"version": 1, "coordinator_epoch": 7, "rest": b"\x00\xff"}),
])
def test_end_txn_marker_value(data, expected):
    check(EndTxnMarkerValue, data, expected)


def test_end_txn_marker_size():
    assert control.END_TXN_MARKER_VALUE_SIZE == 6
    with pytest.raises(StreamError):
        EndTxnMarkerValue.parse(bytes(5))


# -- KRaft messages ---------------------------------------------------------------------------

LEADER_CHANGE = bytes.fromhex(
    "0000"              # version 0
    "00000002"          # leader_id 2
    "04"                # voters: compact array, 3 elements (count + 1)
    "00000001" "00"     #   voter_id 1, no tagged fields
    "00000002" "00"     #   voter_id 2
    "00000003" "00"     #   voter_id 3
    "03"                # granting_voters: 2 elements
    "00000002" "00"     #   voter_id 2
    "00000003" "00"     #   voter_id 3
    "00"                # tagged fields: none
)


def voter(voter_id):
    return {"voter_id": voter_id, "tagged_fields": NO_TAGS}


def test_leader_change():
    check(LeaderChangeMessage, LEADER_CHANGE, {
        "version": 0, "leader_id": 2,
        "voters": [voter(1), voter(2), voter(3)],
        "granting_voters": [voter(2), voter(3)],
        "tagged_fields": NO_TAGS,
    })


def test_leader_change_null_and_empty_arrays():
    data = bytes.fromhex(
        "0000"          # version 0
        "ffffffff"      # leader_id -1
        "00"            # voters: compact length 0 = null
        "01"            # granting_voters: compact length 1 = empty
        "00")           # tagged fields: none
    check(LeaderChangeMessage, data, {"version": 0, "leader_id": -1, "voters": None,
                                      "granting_voters": [], "tagged_fields": NO_TAGS})


def test_compact_array_count_is_an_unsigned_varint():
    """127 voters: count + 1 = 128 takes two varint bytes, 80 01."""
    message = {"version": 0, "leader_id": 1, "voters": [voter(i) for i in range(127)],
               "granting_voters": [], "tagged_fields": NO_TAGS}
    data = LeaderChangeMessage.build(message)
    assert data[6:8] == bytes.fromhex("8001")
    assert len(data) == 2 + 4 + 2 + 127 * 5 + 1 + 1
    assert plain(LeaderChangeMessage.parse(data)) == message


SNAPSHOT_HEADER = bytes.fromhex(
    "0000"              # version 0
    "000001a20302ad29"  # last_contained_log_timestamp 1795346836777
    "00"                # tagged fields: none
)
SNAPSHOT_FOOTER = bytes.fromhex(
    "0000"              # version 0
    "00"                # tagged fields: none
)
KRAFT_VERSION = bytes.fromhex(
    "0000"              # version 0
    "0001"              # kraft_version 1
    "00"                # tagged fields: none
)


def test_snapshot_header():
    check(SnapshotHeaderRecord, SNAPSHOT_HEADER, {
        "version": 0, "last_contained_log_timestamp": 1795346836777, "tagged_fields": NO_TAGS})


def test_snapshot_footer():
    check(SnapshotFooterRecord, SNAPSHOT_FOOTER, {"version": 0, "tagged_fields": NO_TAGS})


def test_kraft_version():
    check(KRaftVersionRecord, KRAFT_VERSION, {
        "version": 0, "kraft_version": 1, "tagged_fields": NO_TAGS})


def test_unknown_tagged_fields_are_kept():
    data = bytes.fromhex(
        "0000"          # version 0
        "02"            # tagged fields: 2
        "00" "02" "abcd"    # tag 0, size 2, data
        "8101" "00")        # tag 129 (two-byte unsigned varint), size 0
    check(SnapshotFooterRecord, data, {"version": 0, "tagged_fields": {"count": 2, "fields": [
        {"tag": 0, "size": 2, "data": b"\xab\xcd"}, {"tag": 129, "size": 0, "data": b""}]}})


VOTERS = bytes.fromhex(
    "0000"              # version 0
    "02"                # voters: 1 element
    "00000001"          #   voter_id 1
    "a7d28bbae1a0431e82502a486247069d"  # voter_directory_id (Kafka prints p9KLuuGgQx6CUCpIYkcGnQ)
    "02"                #   endpoints: 1 element
    "0b" "434f4e54524f4c4c4552"         # name: compact string, 10 bytes, "CONTROLLER"
    "0a" "3132372e302e302e31"           # host: 9 bytes, "127.0.0.1"
    "2385"              #     port 9093 (uint16)
    "00"                #     endpoint tagged fields: none
    "0000"              #   kraft_version_feature.min_supported_version 0
    "0001"              #   kraft_version_feature.max_supported_version 1
    "00"                #   kraft_version_feature tagged fields: none
    "00"                #   voter tagged fields: none
    "00"                # tagged fields: none
)


def test_voters():
    assert len(VOTERS) == 55  # the corpus record's valueSize
    check(VotersRecord, VOTERS, {"version": 0, "voters": [{
        "voter_id": 1,
        "voter_directory_id": bytes.fromhex("a7d28bbae1a0431e82502a486247069d"),
        "endpoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093,
                       "tagged_fields": NO_TAGS}],
        "kraft_version_feature": {"min_supported_version": 0, "max_supported_version": 1,
                                  "tagged_fields": NO_TAGS},
        "tagged_fields": NO_TAGS,
    }], "tagged_fields": NO_TAGS})


@pytest.mark.parametrize("data, value", [
    (bytes.fromhex("00"), None),                 # length + 1 = 0: null
    (bytes.fromhex("01"), ""),                   # length + 1 = 1: empty
    (bytes.fromhex("03" "c3a9"), "\u00e9"),      # the length counts UTF-8 bytes, not characters
])
def test_compact_string(data, value):
    assert CompactString.parse(data) == value
    assert CompactString.build(value) == data


def test_port_is_unsigned():
    assert Uint16.parse(b"\xff\xff") == 65535
    assert Uint16.build(65535) == b"\xff\xff"


def test_schema_per_kraft_type():
    assert control.KRAFT_CONTROL_VALUES == {
        control.LEADER_CHANGE: LeaderChangeMessage,
        control.SNAPSHOT_HEADER: SnapshotHeaderRecord,
        control.SNAPSHOT_FOOTER: SnapshotFooterRecord,
        control.KRAFT_VERSION: KRaftVersionRecord,
        control.KRAFT_VOTERS: VotersRecord,
    }


def test_empty_tagged_fields_constant():
    assert EMPTY_TAGGED_FIELDS == NO_TAGS
    assert TaggedFields.build(EMPTY_TAGGED_FIELDS) == b"\x00"


# -- the corpus KRaft snapshot against Kafka's own decoding -----------------------------------

CHECKPOINT = "00000000000000000000-0000000000.checkpoint"
GOLDEN_NAMES = {"SnapshotHeader": control.SNAPSHOT_HEADER, "SnapshotFooter": control.SNAPSHOT_FOOTER,
                "KRaftVersion": control.KRAFT_VERSION, "KRaftVoters": control.KRAFT_VOTERS,
                "LeaderChange": control.LEADER_CHANGE}
GOLDEN_RECORD = re.compile(r"^\| offset: (\d+) .* keySize: (\d+) valueSize: (\d+) .* headerKeys: \[\] "
                           r"(\w+) (\{.*\})$")


def kafka_json(type_id: int, message) -> dict:
    """The JSON DumpLogSegments prints for a KRaft control message (Kafka's field names)."""
    if type_id == control.SNAPSHOT_HEADER:
        return {"version": message.version,
                "lastContainedLogTimestamp": message.last_contained_log_timestamp}
    if type_id == control.SNAPSHOT_FOOTER:
        return {"version": message.version}
    if type_id == control.KRAFT_VERSION:
        return {"version": message.version, "kRaftVersion": message.kraft_version}
    if type_id == control.KRAFT_VOTERS:
        return {"version": message.version, "voters": [{
            "voterId": v.voter_id,
            "voterDirectoryId": base64.urlsafe_b64encode(v.voter_directory_id).decode().rstrip("="),
            "endpoints": [{"name": e.name, "host": e.host, "port": e.port} for e in v.endpoints],
            "kRaftVersionFeature": {
                "minSupportedVersion": v.kraft_version_feature.min_supported_version,
                "maxSupportedVersion": v.kraft_version_feature.max_supported_version},
        } for v in message.voters]}
    raise AssertionError(f"no JSON mapping for control type {type_id}")


@requires_corpus
def test_corpus_checkpoint_matches_kafka():
    data = (CORPUS / "kafka-4.2.0" / "data" / "__cluster_metadata-0" / CHECKPOINT).read_bytes()
    golden = (CORPUS / "kafka-4.2.0" / "golden" / "__cluster_metadata-0" /
              f"{CHECKPOINT}.deep-iteration+print-data-log.out").read_text().splitlines()
    expected = [GOLDEN_RECORD.match(line).groups() for line in golden if line.startswith("| ")]
    assert len(expected) == 4

    decoded = []
    batches = GreedyRange(RecordBatch).parse(data)
    assert sum(12 + b.header.length for b in batches) == len(data)
    for batch in batches:
        assert batch.header.attributes.is_control
        for record in UncompressedRecords.parse(batch.records_data):
            key = ControlRecordKey.parse(record.key)
            schema = control.KRAFT_CONTROL_VALUES[key.type]
            message = schema.parse(record.value)
            assert schema.build(message) == record.value  # exact round trip on real bytes
            decoded.append((str(batch.header.base_offset + record.offset_delta), str(len(record.key)),
                            str(len(record.value)), key.type, kafka_json(key.type, message)))

    assert decoded == [(offset, key_size, value_size, GOLDEN_NAMES[name], json.loads(text))
                       for offset, key_size, value_size, name, text in expected]


@requires_corpus
def test_literals_are_the_corpus_values():
    """The literals above were cut from the corpus checkpoint (SnapshotHeader, KRaftVersion,
    KRaftVoters, SnapshotFooter)."""
    path = CORPUS / "kafka-4.2.0" / "data" / "__cluster_metadata-0" / CHECKPOINT
    values = [r.value for b in GreedyRange(RecordBatch).parse(path.read_bytes())
              for r in UncompressedRecords.parse(b.records_data)]
    assert values == [SNAPSHOT_HEADER, KRAFT_VERSION, VOTERS, SNAPSHOT_FOOTER]
