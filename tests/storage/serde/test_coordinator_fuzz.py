"""Any bytes as a coordinator record's key and value give a decoded record, a clean
CoordinatorRecordError (Kafka's "Error at offset" line) or "Unknown record type", never anything
else; the same through the dump decoders' line builder and the offsets replay."""

from __future__ import annotations

import struct

from hypothesis import given, settings, strategies as st

from seglog_cli.formats import group_coordinator, transaction_log
from seglog_cli.render.coordinator_json import offsets_parser, transaction_log_parser
from seglog_cli.storage.serde.coordinator_records import (
    GROUP_RECORD_TYPES,
    TRANSACTION_RECORD_TYPES,
    CoordinatorRecordError,
    read_coordinator_record,
)
from seglog_cli.storage.log.records import Record

FUZZ = settings(max_examples=300, deadline=2000)
TYPES = sorted(group_coordinator.RECORD_TYPES) + [-1, 17, 32767]


def prefixed(type_or_version: int, tail: bytes) -> bytes:
    return struct.pack(">h", type_or_version) + tail


KEYS = st.binary(max_size=40) | st.builds(prefixed, st.sampled_from(TYPES), st.binary(max_size=40))
VALUES = st.none() | st.binary(max_size=120) | st.builds(prefixed, st.integers(-1, 6), st.binary(max_size=120))


def _decode(key, value, record_types):
    try:
        decoded = read_coordinator_record(key, value, record_types)
    except CoordinatorRecordError as exc:
        assert exc.message and "\n" not in exc.message
        return None
    assert isinstance(decoded.key, dict)
    assert decoded.is_tombstone == (value is None)
    return decoded


@FUZZ
@given(key=KEYS, value=VALUES)
def test_group_records_from_any_bytes(key, value):
    _decode(key, value, GROUP_RECORD_TYPES)
    line_key, payload = offsets_parser()(Record(7, 0, 0, key, value, (), 0, 0))
    assert line_key is not None and "\n" not in line_key
    if line_key.startswith(("Error at offset 7, skipping. ", "Unknown record type ")):
        assert payload is None
    else:
        assert payload == "<DELETE>" if value is None else payload.startswith('{"version":"')


@FUZZ
@given(tail=st.binary(max_size=80), value=VALUES)
def test_transaction_records_from_any_bytes(tail, value):
    key = prefixed(0, tail)
    _decode(key, value, TRANSACTION_RECORD_TYPES)
    line_key, _ = transaction_log_parser()(Record(0, 0, 0, key, value, (), 0, 0))
    assert line_key.startswith(('{"type":"0"', "Error at offset 0, skipping. "))


@FUZZ
@given(version=st.integers(0, 4), body=st.binary(max_size=200))
def test_group_metadata_values_with_any_members(version, body):
    """GroupMetadataValue with garbage embedded subscriptions: expansion never escapes."""
    value = prefixed(version, body)
    key = prefixed(2, b"\x00\x01g")
    line_key, payload = offsets_parser()(Record(0, 0, 0, key, value, (), 0, 0))
    assert line_key.startswith(('{"type":"2"', "Error at offset 0"))


@FUZZ
@given(data=st.binary(max_size=200), version=st.integers(-2, 5))
def test_every_value_schema_from_any_bytes(data, version):
    schemas = [v for _, v in group_coordinator.RECORD_TYPES.values()] + [transaction_log.TRANSACTION_LOG_VALUE]
    for schema in schemas:
        _decode(b"\x00\x00" + b"\x00\x01g\x00\x01t\x00\x00\x00\x00", prefixed(version, data),
                {0: (group_coordinator.OFFSET_COMMIT_KEY, schema)})


@FUZZ
@given(key=st.binary(max_size=4) | st.builds(prefixed, st.sampled_from([0, 1, 2, -1]), st.binary(max_size=60)),
       value=VALUES)
def test_share_state_records_from_any_bytes(key, value):
    from seglog_cli.render.coordinator_json import share_group_state_fields, share_group_state_parser
    from seglog_cli.storage.serde.coordinator_records import SHARE_RECORD_TYPES

    _decode(key, value, SHARE_RECORD_TYPES)
    record = Record(7, 0, 0, key, value, (), 0, 0)
    line_key, payload = share_group_state_parser()(record)
    assert line_key is not None and "\n" not in line_key
    if line_key.startswith(("Error at offset 7, skipping. ", "Unknown record type ")):
        assert payload is None
        assert "coordinatorError" in share_group_state_fields(record)
    else:
        assert payload == "<DELETE>" if value is None else payload.startswith('{"version":"0","data":{')
        assert "coordinatorRecord" in share_group_state_fields(record)


def _rlmm_frames():
    from seglog_cli.formats.varint import encode_unsigned

    return st.builds(lambda api_key, version, tail: encode_unsigned(1) + encode_unsigned(api_key)
                     + encode_unsigned(version) + tail,
                     st.integers(0, 5), st.integers(0, 2), st.binary(max_size=160))


@FUZZ
@given(value=st.none() | st.binary(max_size=160) | _rlmm_frames())
def test_remote_log_metadata_from_any_bytes(value):
    """Any value gives Kafka's object text or one "Error at offset" line, never anything else."""
    from seglog_cli.render.remote_log_metadata import remote_log_metadata_fields, remote_log_metadata_parser

    record = Record(7, 0, 0, None, value, (), 0, 0)
    key, payload = remote_log_metadata_parser(record)
    assert key is None
    fields = remote_log_metadata_fields(record)
    if payload.startswith("Error at offset 7, skipping. "):
        assert "\n" not in payload
        assert fields["remoteLogMetadataError"] == payload[len("Error at offset 7, skipping. "):]
    else:
        assert payload.startswith(("RemoteLogSegmentMetadata{", "RemoteLogSegmentMetadataUpdate{",
                                   "RemotePartitionDeleteMetadata{", "RemoteLogSegmentMetadataSnapshot{"))
        assert fields["remoteLogMetadata"]["text"] == payload
