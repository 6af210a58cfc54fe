"""--cluster-metadata-decoder output: Jackson's JSON text, Java's doubles, Kafka's error lines,
and the JSON Lines fields, through the CLI on a hand-built metadata log and the 4.2 corpus."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog_cli.formats.metadata_records import RECORD_TYPES
from seglog_cli.render.metadata_json import (
    cluster_metadata_fields,
    cluster_metadata_parser,
    jackson_json,
    java_double,
    metadata_record_text,
)
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.serde.metadata_decoder import decode_metadata_record
from tests.conftest import CORPUS, requires_corpus, run_seglog


@pytest.mark.parametrize("value,text", [
    (1.0, "1.0"), (0.5, "0.5"), (1e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"),
    (1e-4, "1.0E-4"), (1048576.0, "1048576.0"), (1.5e300, "1.5E300"), (-2.25, "-2.25"), (-0.0, "-0.0"),
    (12345678.9, "1.23456789E7"),
])
def test_java_double(value, text):
    assert java_double(value) == text


def test_jackson_escapes_and_types():
    assert jackson_json({"a_b": "x\"\\\n\x01\x7fé", "c": None, "d": [True, False], "e": b"\x00\xff",
                         "f": float("nan")}) == (
        '{"aB":"x\\"\\\\\\n\\u0001\x7fé","c":null,"d":[true,false],"e":"AP8=","f":"NaN"}')


def _quota_value() -> bytes:
    # ClientQuotaRecord v0: entity [{entity_type "user", entity_name null}], key, value 1024.0, remove false
    return (b"\x01\x0e\x00" + b"\x02" + b"\x05user" + b"\x00" + b"\x00"
            + b"\x13producer_byte_rate" + struct.pack(">d", 1024.0) + b"\x00" + b"\x00")


def test_client_quota_record_text():
    assert metadata_record_text(decode_metadata_record(_quota_value())) == (
        '{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user",'
        '"entityName":null}],"key":"producer_byte_rate","value":1024.0,"remove":false}}')


def test_scram_credential_bytes_are_base64():
    value = (b"\x01\x0b\x00" + b"\x06alice" + b"\x01" + b"\x03sa" + b"\x02k" + b"\x01" + b"\x00\x00\x10\x00"
             + b"\x00")
    text = metadata_record_text(decode_metadata_record(value))
    assert text == ('{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"alice","mechanism":1,'
                    '"salt":"c2E=","storedKey":"aw==","serverKey":"","iterations":4096}}')


@pytest.fixture
def metadata_log(tmp_path):
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    records = [NewRecord(None, _quota_value(), timestamp=5), NewRecord(None, b"\x01\x63\x00\x00", timestamp=5),
               NewRecord(None, None, timestamp=5)]
    path = directory / "00000000000000000000.log"
    path.write_bytes(build_batch(records, base_offset=0))
    return path


def test_cli_prints_records_and_kafka_error_lines(metadata_log):
    result = run_seglog("dump", "--cluster-metadata-decoder", "--files", str(metadata_log))
    assert result.exit_code == 0
    lines = result.stdout.decode().splitlines()
    assert lines[3].endswith(' headerKeys: [] payload: {"type":"CLIENT_QUOTA_RECORD","version":0,"data":'
                             '{"entity":[{"entityType":"user","entityName":null}],"key":"producer_byte_rate",'
                             '"value":1024.0,"remove":false}}')
    assert lines[4].endswith(" payload: Error at 1, skipping. org.apache.kafka.common.errors."
                             "UnsupportedVersionException: Unknown metadata id 99")
    assert lines[5].endswith("valueSize: -1 sequence: -1 headerKeys: [] payload: Error at 2, skipping. "
                             "Error while reading frame version")


def test_cli_jsonl_carries_the_decoded_record(metadata_log):
    result = run_seglog("dump", "--cluster-metadata-decoder", "--format", "jsonl", "--files", str(metadata_log))
    records = [json.loads(line) for line in result.stdout.decode().splitlines()
               if json.loads(line)["type"] == "record"]
    assert records[0]["metadataRecord"] == {
        "type": "CLIENT_QUOTA_RECORD", "version": 0,
        "data": {"entity": [{"entityType": "user", "entityName": None}], "key": "producer_byte_rate",
                 "value": 1024.0, "remove": False}}
    assert records[1]["metadataUnknown"] is True and "Unknown metadata id 99" in records[1]["metadataError"]
    assert records[2]["metadataError"] == "Error while reading frame version"
    assert records[2]["metadataUnknown"] is False


@requires_corpus
@pytest.mark.corpus
def test_jsonl_data_equals_the_golden_payload_json():
    """The JSON Lines ``metadataRecord`` is the object Kafka 4.2 printed, value for value."""
    data = CORPUS / "kafka-4.2.0" / "data"
    rel = "__cluster_metadata-0/00000000000000000000.log"
    golden = (CORPUS / "kafka-4.2.0" / "golden" / f"{rel}.cluster-metadata-decoder.out").read_text("utf-8")
    expected = [json.loads(line.split(" payload: ", 1)[1]) for line in golden.splitlines() if " payload: " in line]
    result = run_seglog("dump", "--cluster-metadata-decoder", "--format", "jsonl", "--files", rel, cwd=data)
    decoded = [obj["metadataRecord"] for obj in map(json.loads, result.stdout.decode().splitlines())
               if obj["type"] == "record" and not obj["isControl"]]
    assert decoded == expected and len(expected) > 500


class _Record:
    def __init__(self, offset, value):
        self.offset, self.value = offset, value


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=80),
                 st.tuples(st.sampled_from(sorted(RECORD_TYPES)), st.integers(0, 4), st.binary(max_size=80))
                 .map(lambda t: bytes([1, t[0], t[1]]) + t[2])))
def test_random_values_render_as_a_record_or_kafkas_error_line(value):
    _, payload = cluster_metadata_parser(_Record(7, value))
    assert payload.startswith('{"type":"') or payload.startswith("Error at 7, skipping. ")
    fields = cluster_metadata_fields(_Record(7, value))
    json.dumps(fields, allow_nan=False)  # always valid JSON
    assert ("metadataRecord" in fields) == payload.startswith("{")
    if "metadataRecord" in fields:
        assert json.loads(payload)["data"] == fields["metadataRecord"]["data"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), min_size=1, max_size=5))
def test_cli_never_fails_on_random_metadata_values(tmp_path, values):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([NewRecord(None, value, timestamp=1) for value in values]))
    for extra in ((), ("--format", "jsonl")):
        result = run_seglog("dump", "--cluster-metadata-decoder", *extra, "--files", str(path))
        assert result.exit_code == 0, result.err
        assert b"Traceback" not in result.stdout
