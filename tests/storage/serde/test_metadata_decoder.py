"""The metadata record decoder: Kafka's frame checks and messages, JSON field rules (tagged
fields only when not default), real broker-written KRaft logs, and random bytes."""

from __future__ import annotations

import glob

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog_cli.formats.metadata_records import RECORD_TYPES
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.serde.metadata_decoder import MetadataRecord, MetadataRecordError, decode_metadata_record
from seglog_cli.storage.log.records import read_records
from tests.conftest import CORPUS, requires_corpus

TOPIC_ID = bytes(range(16))
TOPIC_ID_TEXT = "AAECAwQFBgcICQoLDA0ODw"


def test_topic_record():
    record = decode_metadata_record(b"\x01\x02\x00" + b"\x04big" + TOPIC_ID + b"\x00")
    assert record == MetadataRecord(2, "TOPIC_RECORD", 0, {"name": "big", "topic_id": TOPIC_ID_TEXT})


def test_tagged_fields_at_their_default_are_left_out():
    # PartitionChangeRecord v0 with only tag 1 (leader) at its default -2, and one at -1
    base = b"\x01\x05\x00" + b"\x00\x00\x00\x03" + TOPIC_ID
    assert decode_metadata_record(base + b"\x01\x01\x04\xff\xff\xff\xfe").data == {
        "partition_id": 3, "topic_id": TOPIC_ID_TEXT}
    assert decode_metadata_record(base + b"\x01\x01\x04\xff\xff\xff\xff").data == {
        "partition_id": 3, "topic_id": TOPIC_ID_TEXT, "leader": -1}


def test_untagged_fields_are_kept_whatever_their_value():
    record = decode_metadata_record(b"\x01\x0c\x00" + b"\x01" + b"\x00\x00" + b"\x00")
    assert record.data == {"name": "", "feature_level": 0}


def test_strings_decode_as_java_does():
    record = decode_metadata_record(b"\x01\x1c\x00" + b"\x04a\xed\xa0" + b"\x00")
    assert record.data == {"topic_name": "a\ufffd"}


@pytest.mark.parametrize("value,message", [
    (None, "Error while reading frame version"),
    (b"", "Error while reading frame version"),
    (b"\x80", "Error while reading frame version"),
    (b"\x00\x02\x00", "Could not deserialize metadata record with frame version 0. Note that upgrades "
                      "from the preview release of KRaft in 2.8 to newer versions are not supported."),
    (b"\x02\x02\x00", "Could not deserialize metadata record due to unknown frame version 2(only frame "
                      "version 1 is supported)"),
    (b"\x01\x80\x80\x02\x00", "Value for type was too large."),
    (b"\x01\x02", "Error while reading version"),
    (b"\x01\x02\x00\x04bi", "Failed to deserialize record with type 2"),
    (b"\x01\x14\x00\x00\x99\x98", "Found 2 byte(s) of garbage after 20"),
])
def test_kafka_messages(value, message):
    with pytest.raises(MetadataRecordError) as caught:
        decode_metadata_record(value)
    assert caught.value.message == message
    assert not caught.value.unknown


def test_unknown_type_is_reported_as_unknown():
    with pytest.raises(MetadataRecordError) as caught:
        decode_metadata_record(b"\x01\x63\x00\x00")
    assert caught.value.unknown and caught.value.api_key == 99
    assert caught.value.message == ("org.apache.kafka.common.errors.UnsupportedVersionException: "
                                    "Unknown metadata id 99")


def test_versions_beyond_the_known_ones_read_as_the_nearest_known_one():
    # RegisterControllerRecord has version 0 only; Kafka's reader does not check the version
    body = b"\x00\x00\x00\x02" + TOPIC_ID + b"\x00" + b"\x01" + b"\x01" + b"\x00"
    record = decode_metadata_record(b"\x01\x1b\x05" + body)
    assert record.version == 5 and record.unknown_version
    assert record.data == {"controller_id": 2, "incarnation_id": TOPIC_ID_TEXT, "zk_migration_ready": False,
                           "end_points": [], "features": []}
    assert not decode_metadata_record(b"\x01\x1b\x00" + body).unknown_version
    # a version 4 RegisterBrokerRecord (Kafka 4.3) carries a tag 4.2 does not know: skipped
    v3 = decode_metadata_record(b"\x01\x00\x03" + _broker_v3_body(b"\x00"))
    v4 = decode_metadata_record(b"\x01\x00\x04" + _broker_v3_body(b"\x01\x01\x01\x01"))
    assert v4.data == v3.data and v4.unknown_version


def _broker_v3_body(tagged: bytes) -> bytes:
    return (b"\x00\x00\x00\x01" + b"\x00" + TOPIC_ID + bytes(8) + b"\x01" + b"\x01" + b"\x00" + b"\x01"
            + b"\x00" + tagged)


def _clean(value: bytes) -> None:
    try:
        record = decode_metadata_record(value)
    except MetadataRecordError as exc:
        assert exc.message
    else:
        assert record.type_name == RECORD_TYPES[record.api_key].name


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_random_bytes_decode_or_fail_cleanly(data):
    _clean(data)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted((t.api_key, v) for t in RECORD_TYPES.values()
                              for v in range(t.lowest_version, t.highest_version + 2))),
       st.binary(max_size=120))
def test_random_bodies_of_every_type_and_version(key_version, body):
    api_key, version = key_version
    _clean(bytes([1, api_key, version]) + body)


def _metadata_files() -> list[str]:
    return sorted(glob.glob(str(CORPUS / "kafka-4.2.0" / "data" / "__cluster_metadata-0" / "*.log"))
                  + glob.glob(str(CORPUS / "kafka-4.2.0" / "data" / "__cluster_metadata-0" / "*.checkpoint"))
                  + glob.glob(str(CORPUS / "public" / "**" / "__cluster_metadata-0" / "*.log"), recursive=True)
                  + glob.glob(str(CORPUS / "public" / "**" / "__cluster_metadata-0" / "*.checkpoint"),
                              recursive=True))


@requires_corpus
@pytest.mark.corpus
def test_every_broker_written_metadata_record_decodes():
    files = _metadata_files()
    assert files, "no __cluster_metadata files in the corpus"
    seen = set()
    for path in files:
        with MappedFile(path) as mapped:
            for batch in LogScan(mapped, 0, None):
                if batch.is_control:
                    continue
                for record in read_records(mapped.buffer, batch, path):
                    decoded = decode_metadata_record(record.value)  # raises on any refusal
                    seen.add((decoded.type_name, decoded.version))
    # the corpus spans KRaft from 3.x (PartitionRecord v0/v1, ZK migration state) to 4.2
    assert {("PARTITION_RECORD", 0), ("PARTITION_RECORD", 1), ("PARTITION_RECORD", 2),
            ("REGISTER_BROKER_RECORD", 2), ("REGISTER_BROKER_RECORD", 3), ("CLEAR_ELR_RECORD", 0),
            ("ZK_MIGRATION_STATE_RECORD", 0), ("BROKER_REGISTRATION_CHANGE_RECORD", 1)} <= seen
