"""The JSON Lines record reader: what ``seglog dump --format jsonl`` writes comes back as the
segment's bytes in every encoding (records built by seglog's own writer, and the corpus's real
broker data); a utf8 dump of bytes that are not UTF-8 is marked lossy and refused by the exact
reader in one line; lines written before records named their encoding; bad lines."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest

from seglog_cli import api
from seglog_cli.storage.log.batch_header import LOG_APPEND_TIME
from seglog_cli.storage.log.codecs import GZIP
from seglog_cli.storage.serde.jsonl_records import JsonLinesError, JsonRecord, read_json_records
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker
from tests.conftest import CORPUS, requires_corpus, run_seglog

T0 = 1_700_000_000_000
ENCODINGS = ["utf8", "hex", "base64"]
NOT_UTF8 = b"\xff\xfe not UTF-8 \x80"
SURROGATE = b"\xed\xa0\x80 a UTF-8-encoded surrogate"  # Java: one U+FFFD for the three bytes

# (record, is its payload valid UTF-8?) in the first batch
FIRST = [
    (NewRecord(b"key-0", "caf\u00e9 \U0001f600".encode(), headers=[("h", b"x"), ("null", None), ("\u00e9t\u00e9", b"")],
               timestamp=T0), True),
    (NewRecord(NOT_UTF8, b"a key that is not UTF-8", timestamp=T0 + 1), False),
    (NewRecord(b"k", SURROGATE, timestamp=T0 - 100), False),
    (NewRecord(None, None, timestamp=T0 + 3), True),  # a tombstone with a null key
    (NewRecord(b"", b"", headers=[("bin", b"\x00\xff\x80\x7f\xfe\x01\x02\x03")], timestamp=T0 + 4), False),
    (NewRecord(b"fffd", "a real \ufffd, and \n\"\\ \u2028".encode(), timestamp=T0 + 5), True),
    (NewRecord(b"ctl", b"\x00\x01\x1b[31m", timestamp=T0 + 6), True),  # control characters are valid UTF-8
]


def _partition(tmp_path: Path, extra_header_key: bytes | None = None) -> Path:
    """t-0: FIRST uncompressed, a gzip batch, a LogAppendTime batch, a committed transaction."""
    directory = tmp_path / "t-0"
    directory.mkdir()
    first = [record for record, _ in FIRST]
    if extra_header_key is not None:
        first.append(NewRecord(b"hk", b"v", headers=[(extra_header_key, b"x")], timestamp=T0 + 7))
    data = build_batch(first, partition_leader_epoch=0)
    offset = len(first)
    data += build_batch([NewRecord(b"z%d" % i, NOT_UTF8 * i, timestamp=T0 + i) for i in range(3)],
                        base_offset=offset, compression=GZIP, partition_leader_epoch=0)
    offset += 3
    data += build_batch([NewRecord(b"la", b"log append time", timestamp=T0)], base_offset=offset,
                        timestamp_type=LOG_APPEND_TIME, log_append_time=T0 + 99_000, partition_leader_epoch=0)
    offset += 1
    data += build_batch([NewRecord(b"tx", SURROGATE, timestamp=T0 + 10)], base_offset=offset, producer_id=7,
                        producer_epoch=0, base_sequence=0, transactional=True, partition_leader_epoch=0)
    data += build_end_txn_marker(commit=True, base_offset=offset + 1, producer_id=7, producer_epoch=0,
                                 coordinator_epoch=3, timestamp=T0 + 11)
    (directory / "00000000000000000000.log").write_bytes(data)
    return directory


def _segment_records(partition: Path) -> list:
    """(offset, timestamp, timestamp type, key, value, headers) as seglog's reader finds them in the segment."""
    log = api.open_partition(partition)
    try:
        return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value,
                 tuple((bytes(k), v) for k, v in r.headers)) for r in api.records(log)]
    finally:
        log.close()


def _as_read(records: list[JsonRecord]) -> list:
    return [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers) for r in records]


def _dump(path: Path, encoding: str, out: Path) -> Path:
    result = run_seglog("dump", "--deep-iteration", "--format", "jsonl", "--payload-encoding", encoding,
                        "--no-progress", str(path))
    assert result.exit_code == 0, result.err
    out.write_bytes(result.stdout)
    return out


def _objects(path: Path) -> list[dict]:
    lines = path.read_bytes().split(b"\n")  # not splitlines(): U+2028 and \x1c..\x1e stay in their JSON strings
    return [o for o in map(json.loads, filter(None, lines)) if o["type"] == "record"]


# -- round trips ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding", ["hex", "base64"])
def test_hex_and_base64_read_back_the_segments_bytes(tmp_path, encoding):
    partition = _partition(tmp_path)
    dumped = _dump(partition, encoding, tmp_path / "dump.jsonl")
    assert {o["encoding"] for o in _objects(dumped)} == {encoding}
    assert not any("lossy" in o for o in _objects(dumped))
    records = list(read_json_records(dumped, exact=True))  # no default needed: every record names its encoding
    assert _as_read(records) == _segment_records(partition)
    assert [r.is_control for r in records] == [False] * 12 + [True]
    marker = records[-1]
    assert (marker.control_type, marker.producer_id, marker.is_transactional) == ("COMMIT", 7, True)
    assert [r.compression for r in records[7:10]] == ["gzip"] * 3
    assert records[10].timestamp_type == 1 and records[10].timestamp == T0 + 99_000
    assert {(r.topic, r.partition) for r in records} == {("t", 0)}
    assert [r.line for r in records][:2] == [3, 4]  # after the file and batch lines


def test_utf8_reads_back_every_record_that_is_not_lossy(tmp_path):
    partition = _partition(tmp_path)
    dumped = _dump(partition, "utf8", tmp_path / "dump.jsonl")
    objects = _objects(dumped)
    assert {o["encoding"] for o in objects} == {"utf8"}
    expected_lossy = [not valid for _, valid in FIRST] + [False, True, True, False, True, False]
    assert [o.get("lossy", False) for o in objects] == expected_lossy
    assert all(o["lossy"] is True for o in objects if "lossy" in o)
    records = list(read_json_records(dumped))
    segment = _segment_records(partition)
    exact = [(read, stored) for read, stored, lossy in zip(_as_read(records), segment, expected_lossy) if not lossy]
    assert len(exact) == 7 and all(read == stored for read, stored in exact)
    # lossy ones: U+FFFD where Java's decoder put it, as kafka-dump-log prints the value
    assert records[1].key == "\ufffd\ufffd not UTF-8 \ufffd".encode()
    assert records[2].value == "\ufffd a UTF-8-encoded surrogate".encode()


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_corpus_partition_round_trips(tmp_path, encoding):
    """plain-0 of a real broker: binary values, headers, a non-ASCII header key."""
    partition = CORPUS / "kafka-4.2.0" / "data" / "plain-0"
    dumped = _dump(partition, encoding, tmp_path / "dump.jsonl")
    lossy = [o.get("lossy", False) for o in _objects(dumped)]
    segment = _segment_records(partition)
    read = _as_read(read_json_records(dumped))
    assert len(read) == len(segment) > 6000
    if encoding == "utf8":
        assert 0 < sum(lossy) < len(lossy)
        read, segment = ([r for r, bad in zip(rows, lossy) if not bad] for rows in (read, segment))
    else:
        assert not any(lossy)
    assert read == segment


# -- lossy ---------------------------------------------------------------------------------------------

def test_the_exact_reader_refuses_a_lossy_record_in_one_line(tmp_path):
    dumped = _dump(_partition(tmp_path), "utf8", tmp_path / "dump.jsonl")
    reader = read_json_records(dumped, exact=True)
    first = next(reader)
    assert first.key == b"key-0"
    with pytest.raises(JsonLinesError) as raised:
        next(reader)
    message = str(raised.value)
    assert message.startswith(f"{dumped} line 4: ") and raised.value.line == 4
    assert "lossy" in message and "--payload-encoding base64" in message and "\n" not in message


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_header_key_that_is_not_utf8_is_lossy_in_every_encoding(tmp_path, encoding):
    dumped = _dump(_partition(tmp_path, extra_header_key=b"\xffkey"), encoding, tmp_path / "dump.jsonl")
    header_record = [o for o in _objects(dumped) if o["key"] in ("hk", "686b", "aGs=")]
    assert header_record[0]["lossy"] is True and header_record[0]["headers"][0]["key"] == "\ufffdkey"
    with pytest.raises(JsonLinesError, match="lossy"):
        list(read_json_records(dumped, exact=True))


# -- lines without an encoding (an older seglog, another tool) -------------------------------------------

def _line(**fields) -> str:
    return json.dumps({"type": "record", "topic": "t", "partition": 0, "offset": 5, "timestamp": T0,
                       "timestampType": 0, "headers": [], **fields})


def _read(text: str, **options) -> list[JsonRecord]:
    return list(read_json_records(io.BytesIO(text.encode()), name="in.jsonl", **options))


def test_no_encoding_needs_a_default():
    old = _line(key="6b", value="76") + "\n"
    with pytest.raises(JsonLinesError) as raised:
        _read(old)
    assert str(raised.value) == ("in.jsonl line 1: no encoding: written by an older seglog or another tool; "
                                 "give --payload-encoding")
    (record,) = _read(old, default_encoding="hex")
    assert (record.key, record.value, record.offset, record.timestamp) == (b"k", b"v", 5, T0)


def test_a_records_own_encoding_wins_over_the_default():
    text = _line(key="aGk=", value=None, encoding="base64") + "\n" + _line(key="6869") + "\n"
    assert [r.key for r in _read(text, default_encoding="hex")] == [b"hi", b"hi"]


def test_exact_refuses_replacement_characters_where_utf8_was_assumed():
    suspicious = _line(value="caf\ufffd") + "\n"
    with pytest.raises(JsonLinesError, match="line 1: the record has no encoding and its text holds U\\+FFFD"):
        _read(suspicious, default_encoding="utf8", exact=True)
    assert _read(suspicious, default_encoding="utf8")[0].value == "caf\ufffd".encode()
    declared = _line(value="caf\ufffd", encoding="utf8") + "\n"  # a real U+FFFD, said exact by the writer
    assert _read(declared, exact=True)[0].value == "caf\ufffd".encode()
    header_key = _line(value="AA==", headers=[{"key": "\ufffd", "value": None}]) + "\n"  # header keys are always text
    with pytest.raises(JsonLinesError, match="U\\+FFFD"):
        _read(header_key, default_encoding="base64", exact=True)
    assert _read(_line(value="AA==") + "\n", default_encoding="base64", exact=True)[0].value == b"\x00"


# -- what is skipped, what is kept, laziness -----------------------------------------------------------

def test_blank_and_non_record_lines_are_skipped_and_control_records_kept():
    text = "\n".join([
        json.dumps({"type": "file", "schemaVersion": 1, "path": "x"}),
        "", "   ",
        json.dumps({"type": "batch", "baseOffset": 0}),
        json.dumps({"key": "a", "value": "b", "headers": {"h": "v", "n": None}}),  # no type: a record
        json.dumps({"type": "record", "isControl": True, "controlType": "ABORT", "key": "AAAAAA==",
                    "value": None, "encoding": "base64"}),
    ]) + "\n"
    plain, control = _read(text, default_encoding="utf8")
    assert (plain.line, plain.key, plain.value, plain.headers) == (5, b"a", b"b", ((b"h", b"v"), (b"n", None)))
    assert (plain.topic, plain.offset, plain.timestamp, plain.is_control) == (None, None, None, False)
    assert (control.line, control.is_control, control.control_type, control.key) == (6, True, "ABORT", b"\0\0\0\0")


def test_lines_are_read_one_at_a_time():
    lines = [_line(key=str(i), encoding="utf8") for i in range(10_000)] + ["not json"]
    handle = io.BytesIO("\n".join(lines).encode())
    reader = read_json_records(handle)
    assert next(reader).key == b"0"
    assert handle.tell() < 1000  # the first line only, not the file
    with pytest.raises(JsonLinesError, match="line 10001: not valid JSON"):
        list(reader)


def test_utf8_text_with_escaped_bytes_comes_back_as_those_bytes():
    """surrogateescape: \\udcff stands for the byte 0xff (how Python writes undecodable bytes)."""
    (record,) = _read(_line(value="a\udcffb", encoding="utf8") + "\n")
    assert record.value == b"a\xffb"


def test_string_timestamps_need_a_parser():
    line = _line(timestamp="2023-11-14T22:13:20Z", encoding="utf8") + "\n"
    with pytest.raises(JsonLinesError, match="line 1: timestamp must be epoch milliseconds"):
        _read(line)
    assert _read(line, parse_time=lambda text: 42)[0].timestamp == 42


def test_a_path_that_cannot_be_read(tmp_path):
    from seglog_cli.storage.log.errors import UnreadableInputError

    with pytest.raises(UnreadableInputError, match="cannot read the input"):
        list(read_json_records(tmp_path / "missing.jsonl"))


# -- bad lines -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("line, message", [
    ('{"value": "a"', "not valid JSON"),
    ("[1, 2]", "a JSON object was expected, not list"),
    ('{"value": 3, "encoding": "utf8"}', "value must be a string or null, not int"),
    ('{"value": "!!", "encoding": "base64"}', "value is not valid base64"),
    ('{"key": "6g", "encoding": "hex"}', "key is not valid hex"),
    ('{"headers": [{"key": "h", "value": "zz"}], "encoding": "hex"}', "header 'h' is not valid hex"),
    ('{"value": "a", "encoding": "latin1"}', "encoding must be utf8, hex or base64, not 'latin1'"),
    ('{"value": "a", "encoding": ["utf8"]}', "encoding must be utf8, hex or base64, not ['utf8']"),
    ('{"partition": "0", "encoding": "utf8"}', "partition must be an int or null, not '0'"),
    ('{"offset": true, "encoding": "utf8"}', "offset must be an int or null, not True"),
    ('{"timestamp": 1.5, "encoding": "utf8"}', "timestamp must be epoch milliseconds, not 1.5"),
    ('{"topic": 7, "encoding": "utf8"}', "topic must be a string or null, not 7"),
    ('{"headers": [1], "encoding": "utf8"}', "headers must be a list of"),
    ('{"headers": {"7": 7}, "encoding": "utf8"}', "header '7' must be a string or null, not int"),
    ('{"headers": [{"key": 7, "value": null}], "encoding": "utf8"}', "a header key must be a string"),
    ('{"isControl": "yes", "encoding": "utf8"}', "isControl must be true or false, not 'yes'"),
    (b'{"value": "\xff"}', "not valid JSON"),
])
def test_bad_lines_name_the_file_and_line(line, message):
    data = b'{"value": "ok", "encoding": "utf8"}\n\n' + (line if isinstance(line, bytes) else line.encode()) + b"\n"
    reader = read_json_records(io.BytesIO(data), name="in.jsonl")
    assert next(reader).value == b"ok"
    with pytest.raises(JsonLinesError) as raised:
        next(reader)
    assert str(raised.value).startswith(f"in.jsonl line 3: {message}"), str(raised.value)
    assert raised.value.line == 3 and "\n" not in str(raised.value)


def test_base64_values_are_validated_strictly():
    (record,) = _read(_line(value=base64.b64encode(b"\x00\xff").decode(), encoding="base64") + "\n")
    assert record.value == b"\x00\xff"
    with pytest.raises(JsonLinesError, match="not valid base64"):
        _read(_line(value="AP8=\n", encoding="base64") + "\n")
