"""Hand-written readers for the ``__consumer_offsets`` records that fill the topic: offset
commits (record types 0 and 1) and the group metadata key (type 2).

They read with :mod:`struct` what the declarations in :mod:`formats.group_coordinator` read with
construct, about ten times faster, and give the same plain values
(:func:`seglog_cli.storage.coordinator_records.read_coordinator_record`'s). Byte layouts, after
the int16 record type / value version::

    key  (types 0, 1)   group string, topic string, partition int32
    key  (type 2)       group string
    value type 0 v0     offset int64, metadata string, commitTimestamp int64
    value type 1 v0, v2 offset int64, metadata string, commitTimestamp int64
                 v1     offset int64, metadata string, commitTimestamp int64, expireTimestamp int64
                 v3     offset int64, leaderEpoch int32, metadata string, commitTimestamp int64
                 v4     as v3 with a compact metadata (unsigned varint length + 1), then the
                        tagged-field count

    string  classic: int16 length, UTF-8 bytes; compact: unsigned varint length + 1, UTF-8 bytes

Each reader gives up (returns ``None``) wherever the bytes leave the plain case: a null or
too-long string, a length past the end, a version the schema does not have, a v4 value with
tagged fields, a multi-byte varint. The caller then reads the record through the schemas, which
produce Kafka's exact error text or read the rarer shapes. Bytes after the last field are ignored
by both paths, as Kafka's reader ignores them.
"""

from __future__ import annotations

from struct import Struct

from seglog_cli.storage.text import java_utf8

_INT16 = Struct(">h")
_INT32 = Struct(">i")
_INT64 = Struct(">q")
_INT64_INT32 = Struct(">qi")  # offset, leaderEpoch
_INT64_INT64 = Struct(">qq")  # commitTimestamp, expireTimestamp
MAX_STRING_LENGTH = 0x7FFF


def _string(data: bytes, at: int):
    """A classic non-null string at ``at``: (text, next position), or None."""
    if at + 2 > len(data):
        return None
    size = (data[at] << 8) | data[at + 1]
    end = at + 2 + size
    if size > MAX_STRING_LENGTH or end > len(data):  # > 0x7fff: a negative int16 (null or bad)
        return None
    return java_utf8(data[at + 2:end]), end


def read_offset_commit_key(key: bytes):
    """Types 0/1 key (after the int16 type, which the caller has read): a dict, or None."""
    size = len(key)
    if size < 4:
        return None
    group_end = 4 + ((key[2] << 8) | key[3])
    if key[2] > 0x7F or group_end + 2 > size:  # a negative length (null or bad), or past the end
        return None
    topic_end = group_end + 2 + ((key[group_end] << 8) | key[group_end + 1])
    if key[group_end] > 0x7F or topic_end + 4 > size:
        return None
    return {"group": java_utf8(key[4:group_end]), "topic": java_utf8(key[group_end + 2:topic_end]),
            "partition": _INT32.unpack_from(key, topic_end)[0]}


def read_group_key(key: bytes):
    """Type 2 key: ``{"group": ...}`` or None."""
    group = _string(key, 2)
    return None if group is None else {"group": group[0]}


def read_legacy_offset_commit_value(value: bytes, version: int):
    """Type 0's value (version 0 only): a dict, or None."""
    return read_offset_commit_value(value, 0) if version == 0 else None


def read_offset_commit_value(value: bytes, version: int):
    """A type 1 value of ``version`` (its int16 already read): a dict, or None."""
    size = len(value)
    if version == 3 or version == 4:
        if size < 15:  # v3: at least the metadata's length; v4: its one varint byte
            return None
        offset, leader_epoch = _INT64_INT32.unpack_from(value, 2)
        if version == 3:
            metadata = _string(value, 14)
            if metadata is None:
                return None
            text, at = metadata
        else:
            length = value[14] - 1  # compact length, one varint byte only
            at = 15 + length
            if not 0 <= length < 0x7F or at > size:
                return None
            text = java_utf8(value[15:at])
        end = at + 8
        if end + (version == 4) > size or (version == 4 and value[end] != 0):  # v4: no tagged fields
            return None
        return {"offset": offset, "leaderEpoch": leader_epoch, "metadata": text,
                "commitTimestamp": _INT64.unpack_from(value, at)[0]}
    if not 0 <= version <= 2 or size < 10:
        return None
    metadata = _string(value, 10)
    if metadata is None:
        return None
    text, at = metadata
    offset = _INT64.unpack_from(value, 2)[0]
    if version == 1:
        if at + 16 > size:
            return None
        commit, expire = _INT64_INT64.unpack_from(value, at)
        return {"offset": offset, "metadata": text, "commitTimestamp": commit, "expireTimestamp": expire}
    if at + 8 > size:
        return None
    return {"offset": offset, "metadata": text, "commitTimestamp": _INT64.unpack_from(value, at)[0]}


__all__ = ["read_group_key", "read_legacy_offset_commit_value", "read_offset_commit_key",
           "read_offset_commit_value"]
