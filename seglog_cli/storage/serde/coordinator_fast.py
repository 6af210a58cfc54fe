"""Hand-written readers for the ``__consumer_offsets`` records that fill the topic: offset
commits (record types 0 and 1), classic group metadata (type 2) and the consumer-protocol
messages embedded in it.

They read with :mod:`struct` what the declarations in :mod:`seglog_cli.formats.group_coordinator` read with
construct, five to ten times faster, and give the same plain values
(:func:`seglog_cli.storage.serde.coordinator_records.read_coordinator_record`'s). Byte layouts, after
the int16 record type / value version::

    key  (types 0, 1)   group string, topic string, partition int32
    key  (type 2)       group string
    value type 0 v0     offset int64, metadata string, commitTimestamp int64
    value type 1 v0, v2 offset int64, metadata string, commitTimestamp int64
                 v1     offset int64, metadata string, commitTimestamp int64, expireTimestamp int64
                 v3     offset int64, leaderEpoch int32, metadata string, commitTimestamp int64
                 v4     as v3 with a compact metadata (unsigned varint length + 1), then the
                        tagged-field count
    value type 2 v0-v4  protocolType string, generation int32, protocol string?, leader string?,
                        currentStateTimestamp int64 (v2+), members [] of: memberId string,
                        groupInstanceId string? (v3+), clientId string, clientHost string,
                        rebalanceTimeout int32 (v1+), sessionTimeout int32, subscription bytes,
                        assignment bytes (v4: compact encodings, a tagged-field count per struct)
    ConsumerProtocolSubscription v0-3 (int16 version first)  topics []string, userData bytes?,
                        ownedPartitions [] of {topic string, partitions []int32} (v1+),
                        generationId int32 (v2+), rackId string? (v3+)
    ConsumerProtocolAssignment v0-3   assignedPartitions [] of {topic, partitions}, userData bytes?

    string  classic: int16 length, UTF-8 bytes; compact: unsigned varint length + 1
    bytes   classic: int32 length; compact: unsigned varint length + 1
    []      classic: int32 count; compact: unsigned varint count + 1      (? = nullable)

Each reader gives up (returns ``None``) wherever the bytes leave the plain case: a null where
none is allowed, a too-long string, a length or count past the end, a version the schema does
not have, a flexible struct with tagged fields, a v4 offset-commit metadata of a multi-byte
varint. The caller then reads the record through the schemas, which produce Kafka's exact error
text or read the rarer shapes. Bytes after the last field are ignored by both paths, as Kafka's
reader ignores them.
"""

from __future__ import annotations

from struct import Struct
from struct import error as struct_error

from seglog_cli.storage.log.text import java_utf8

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


# -- classic group metadata (type 2 values) and the consumer protocol's embedded messages ------------

class _Unsure(Exception):
    """The reader leaves this message to the schemas."""


class _Reader:
    """A cursor over one message, classic or compact (flexible) encodings. Anything outside the
    plain case raises :class:`_Unsure` (or IndexError / struct.error at the end of the bytes)."""

    __slots__ = ("data", "at", "compact")

    def __init__(self, data: bytes, at: int, compact: bool):
        self.data, self.at, self.compact = data, at, compact

    def int32(self) -> int:
        value = _INT32.unpack_from(self.data, self.at)[0]
        self.at += 4
        return value

    def int64(self) -> int:
        value = _INT64.unpack_from(self.data, self.at)[0]
        self.at += 8
        return value

    def _length(self, classic: Struct) -> int:
        """A length or count; -1 for null."""
        if not self.compact:
            value = classic.unpack_from(self.data, self.at)[0]
            self.at += classic.size
            return value
        data, at = self.data, self.at
        value = shift = 0
        for at in range(at, at + 5):
            byte = data[at]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.at = at + 1
                if value > 0x7FFFFFFF:  # wraps in Java's int arithmetic
                    raise _Unsure
                return value - 1
            shift += 7
        raise _Unsure

    def _raw(self, classic: Struct, nullable: bool):
        size = self._length(classic)
        if size < 0:
            if nullable and size == -1:
                return None
            raise _Unsure
        end = self.at + size
        if end > len(self.data):
            raise _Unsure
        raw = self.data[self.at:end]
        self.at = end
        return raw

    def string(self, nullable: bool = False):
        raw = self._raw(_INT16, nullable)
        if raw is None:
            return None
        if len(raw) > MAX_STRING_LENGTH:
            raise _Unsure
        return java_utf8(raw)

    def bytes(self, nullable: bool = False):
        return self._raw(_INT32, nullable)

    def count(self) -> int:
        """A non-null array's element count, at most the bytes left."""
        count = self._length(_INT32)
        if not 0 <= count <= len(self.data) - self.at:
            raise _Unsure
        return count

    def int32s(self) -> list:
        count = self.count()
        end = self.at + 4 * count
        if end > len(self.data):
            raise _Unsure
        values = list(Struct(f">{count}i").unpack_from(self.data, self.at)) if count else []
        self.at = end
        return values

    def no_tags(self) -> None:
        """A flexible struct's tagged-field count: only an empty section is read here."""
        if self.compact:
            if self.data[self.at] != 0:
                raise _Unsure
            self.at += 1


def _member(reader: _Reader, version: int) -> dict:
    member = {"memberId": reader.string()}
    if version >= 3:
        member["groupInstanceId"] = reader.string(nullable=True)
    member["clientId"] = reader.string()
    member["clientHost"] = reader.string()
    if version >= 1:
        member["rebalanceTimeout"] = reader.int32()
    member["sessionTimeout"] = reader.int32()
    member["subscription"] = reader.bytes()
    member["assignment"] = reader.bytes()
    reader.no_tags()
    return member


def read_group_metadata_value(value: bytes, version: int):
    """A type 2 value of ``version`` 0-4 (its int16 already read): a dict, or None."""
    if not 0 <= version <= 4:
        return None
    reader = _Reader(value, 2, version >= 4)
    try:
        out = {"protocolType": reader.string(), "generation": reader.int32(),
               "protocol": reader.string(nullable=True), "leader": reader.string(nullable=True)}
        if version >= 2:
            out["currentStateTimestamp"] = reader.int64()
        out["members"] = [_member(reader, version) for _ in range(reader.count())]
        reader.no_tags()
    except (_Unsure, IndexError, struct_error):
        return None
    return out


def _topic_partitions(reader: _Reader) -> list:
    return [{"topic": reader.string(), "partitions": reader.int32s()} for _ in range(reader.count())]


def _subscription_fields(reader: _Reader, version: int) -> dict:
    out = {"topics": [reader.string() for _ in range(reader.count())], "userData": reader.bytes(nullable=True)}
    if version >= 1:
        out["ownedPartitions"] = _topic_partitions(reader)
    if version >= 2:
        out["generationId"] = reader.int32()
    if version >= 3:
        out["rackId"] = reader.string(nullable=True)
    return out


def _assignment_fields(reader: _Reader, version: int) -> dict:
    return {"assignedPartitions": _topic_partitions(reader), "userData": reader.bytes(nullable=True)}


def _consumer_protocol(data: bytes, fields):
    """An int16 version 0-3, then ``fields(reader, version)``: (version, dict), or None."""
    try:
        version = _INT16.unpack_from(data)[0]
        if not 0 <= version <= 3:
            return None
        return version, fields(_Reader(data, 2, False), version)
    except (_Unsure, IndexError, struct_error):
        return None


def read_consumer_subscription(data: bytes):
    """ConsumerProtocolSubscription v0-3 (int16 version first): (version, dict), or None."""
    return _consumer_protocol(data, _subscription_fields)


def read_consumer_assignment(data: bytes):
    """ConsumerProtocolAssignment v0-3 (int16 version first): (version, dict), or None."""
    return _consumer_protocol(data, _assignment_fields)


__all__ = ["read_consumer_assignment", "read_consumer_subscription", "read_group_key",
           "read_group_metadata_value", "read_legacy_offset_commit_value", "read_offset_commit_key",
           "read_offset_commit_value"]
