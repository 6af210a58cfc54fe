"""Byte builders for coordinator records in tests: written from the message specs field by field
(classic: int16/int32 lengths; flexible: unsigned varint length + 1 and tagged sections), not
with seglog's readers, so the tests check the readers against an independent encoding."""

from __future__ import annotations

import struct

from seglog_cli.formats.varint import encode_unsigned
from seglog_cli.render.coordinator_json import offsets_parser
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker
from seglog_cli.storage.log.records import Record


def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)
def i64(v): return struct.pack(">q", v)
def uvar(v): return encode_unsigned(v)


def s(text):  # classic string
    if text is None:
        return i16(-1)
    data = text.encode()
    return i16(len(data)) + data


def cs(text):  # compact string
    if text is None:
        return uvar(0)
    data = text.encode()
    return uvar(len(data) + 1) + data


def b(data):  # classic bytes
    return i32(-1) if data is None else i32(len(data)) + data


def cb(data):  # compact bytes
    return uvar(0) if data is None else uvar(len(data) + 1) + data


def arr(items):  # classic array of already-encoded items
    return i32(-1) if items is None else i32(len(items)) + b"".join(items)


def carr(items):  # compact array
    return uvar(0) if items is None else uvar(len(items) + 1) + b"".join(items)


NO_TAGS = uvar(0)


def tags(*fields):  # (tag, encoded bytes) pairs
    return uvar(len(fields)) + b"".join(uvar(tag) + uvar(len(data)) + data for tag, data in fields)


def offset_commit_key(group, topic, partition, record_type=1):
    return i16(record_type) + s(group) + s(topic) + i32(partition)


def offset_commit_value(offset, metadata="", commit_timestamp=0, leader_epoch=-1, version=3, expire=-1):
    if version == 4:
        return i16(4) + i64(offset) + i32(leader_epoch) + cs(metadata) + i64(commit_timestamp) + NO_TAGS
    body = i64(offset) + (i32(leader_epoch) if version >= 3 else b"") + s(metadata) + i64(commit_timestamp)
    return i16(version) + body + (i64(expire) if version == 1 else b"")


def txn_key(transactional_id):
    return i16(0) + s(transactional_id)


def txn_value_v1(producer_id, epoch, status, partitions, start_ms, update_ms, timeout_ms=60000):
    parts = None if partitions is None else [cs(t) + carr([i32(p) for p in ids]) + NO_TAGS
                                             for t, ids in partitions]
    return (i16(1) + i64(producer_id) + i16(epoch) + i32(timeout_ms) + i8(status) + carr(parts)
            + i64(update_ms) + i64(start_ms) + NO_TAGS)


def batch(offset, key, value, *, producer_id=-1, transactional=False, timestamp=1_000):
    return build_batch([NewRecord(key=key, value=value, timestamp=timestamp)], base_offset=offset,
                       producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                       base_sequence=0 if producer_id >= 0 else -1, transactional=transactional,
                       partition_leader_epoch=0)


def marker(offset, producer_id, commit, timestamp=2_000):
    return build_end_txn_marker(commit=commit, base_offset=offset, producer_id=producer_id, producer_epoch=0,
                                timestamp=timestamp)


# -- shared by the schema tests (tests/formats) and the decoder-line tests (tests/render) ----------

def hex_bytes(*parts: str) -> bytes:
    """Bytes from hex literals written field by field."""
    return bytes.fromhex("".join(parts))


def round_trip(message, data: bytes, value: dict):
    """Parse ``data`` with ``message`` (version 0), and build ``value`` (plain Python values) and
    the parsed container back into exactly ``data``; the parsed container."""
    schema = message.struct(0)
    parsed = schema.parse(data)
    assert schema.build(value) == data
    assert schema.build(parsed) == data
    return parsed


def type_key(record_type, *strings):
    """A group-coordinator key: int16 record type, then classic strings."""
    return i16(record_type) + b"".join(s(text) for text in strings)


def offsets_line(key, value, offset=7):
    """The --offsets-decoder (key, payload) texts of one record."""
    return offsets_parser()(Record(offset, 0, 0, key, value, (), 0, 0))

