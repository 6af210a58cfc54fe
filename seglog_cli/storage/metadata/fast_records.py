"""The metadata records a controller writes most, decoded without construct: :func:`fast_decode`.

Most of a busy cluster's metadata log is ``PartitionChangeRecord`` (leader moves, ISR shrinks and
expansions), ``NoOpRecord`` (one every 500 ms), ``PartitionRecord`` and broker fencing. Their
layouts are small and fixed (flexible versions: compact arrays ``unsigned varint N+1`` then N
elements, a UUID as 16 bytes, tagged fields ``count, (tag, size, bytes)*``)::

    PartitionRecord v0-2        int32 partition_id, uuid topic_id, []int32 replicas, isr,
                                removing_replicas, adding_replicas, int32 leader, int32
                                leader_epoch, int32 partition_epoch, v1+ []uuid directories;
                                tags 0 int8 leader_recovery_state, v2+ 1 elr, 2 last_known_elr
    PartitionChangeRecord v0-2  int32 partition_id, uuid topic_id; tags 0 isr, 1 int32 leader,
                                2 replicas, 3 removing, 4 adding, 5 int8 leader_recovery_state,
                                v1+ 8 []uuid directories, v2+ 6 elr, 7 last_known_elr
    Fence/UnfenceBrokerRecord   int32 id, int64 epoch
    NoOpRecord                  (nothing)

:func:`fast_decode` gives ``(type name, data)`` with exactly the fields and values
:func:`~seglog_cli.storage.serde.metadata_decoder.decode_metadata_record` gives (tagged fields
only when not at their default), or None for anything else (another type or version, an
unknown tag, trailing bytes, a short value): the caller then decodes it the general way, which
also says why a bad value is refused.
"""

from __future__ import annotations

import struct

from seglog_cli.storage.log.java_text import uuid_text

_I32 = struct.Struct(">i").unpack_from
_I32_UUID = struct.Struct(">i16s").unpack_from
_III = struct.Struct(">iii").unpack_from
_IQ = struct.Struct(">iq").unpack_from
_B = struct.Struct(">b").unpack_from
PARTITION, PARTITION_CHANGE, FENCE, UNFENCE, NO_OP = 3, 5, 7, 8, 20


class _Odd(Exception):
    """A value the fast path does not read: the general decoder will."""


def _varint(buf, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 28:
            raise _Odd
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _uuid(raw: bytes, names: dict) -> str:
    text = names.get(raw)
    if text is None:
        text = names[raw] = uuid_text(raw)
    return text


def _array(buf, pos: int, width: int, nullable: bool):
    """A compact array's length, where its elements start and end (``n`` None: a null array)."""
    n, pos = _varint(buf, pos)
    if n == 0:
        if not nullable:
            raise _Odd
        return None, pos, pos
    n -= 1
    end = pos + width * n
    if end > len(buf):
        raise _Odd
    return n, pos, end


def _ints(buf, pos: int, nullable: bool = False):
    n, pos, end = _array(buf, pos, 4, nullable)
    return (None if n is None else list(struct.unpack_from(f">{n}i", buf, pos))), end


def _uuids(buf, pos: int, nullable: bool = False):
    n, pos, end = _array(buf, pos, 16, nullable)
    if n is None:
        return None, end
    return [uuid_text(bytes(buf[pos + 16 * k:pos + 16 * k + 16])) for k in range(n)], end


def _head(buf, pos: int, names: dict) -> tuple[int, str, int]:
    if pos + 20 > len(buf):
        raise _Odd
    partition, raw = _I32_UUID(buf, pos)
    return partition, _uuid(bytes(raw), names), pos + 20


# PartitionChangeRecord tags: (name, reader, lowest version), in the order Kafka's JSON writes them
_CHANGE_TAGS = {0: ("isr", "ints", 0), 1: ("leader", "i32", 0), 2: ("replicas", "ints", 0),
                3: ("removing_replicas", "ints", 0), 4: ("adding_replicas", "ints", 0),
                5: ("leader_recovery_state", "i8", 0), 8: ("directories", "uuids", 1),
                6: ("eligible_leader_replicas", "ints", 2), 7: ("last_known_elr", "ints", 2)}
_CHANGE_ORDER = ("isr", "leader", "replicas", "removing_replicas", "adding_replicas", "leader_recovery_state",
                 "directories", "eligible_leader_replicas", "last_known_elr")
_CHANGE_DEFAULTS = {"leader": -2, "leader_recovery_state": -1}
_PARTITION_TAGS = {0: ("leader_recovery_state", "i8", 0), 1: ("eligible_leader_replicas", "ints", 2),
                   2: ("last_known_elr", "ints", 2)}
_PARTITION_DEFAULTS = {"leader_recovery_state": 0}


def _tags(buf, pos: int, version: int, known: dict) -> tuple[dict, int]:
    count, pos = _varint(buf, pos)
    found = {}
    last = -1
    for _ in range(count):
        tag, pos = _varint(buf, pos)
        size, pos = _varint(buf, pos)
        entry = known.get(tag)
        if entry is None or tag <= last or version < entry[2]:
            raise _Odd
        last = tag
        name, reader, _ = entry
        end = pos + size
        if reader == "ints":
            value, pos = _ints(buf, pos, nullable=True)
        elif reader == "uuids":
            value, pos = _uuids(buf, pos, nullable=True)
        elif reader == "i32" and size == 4:
            value, pos = _I32(buf, pos)[0], end
        elif reader == "i8" and size == 1:
            value, pos = _B(buf, pos)[0], end
        else:
            raise _Odd
        if pos != end:
            raise _Odd
        found[name] = value
    return found, pos


def _partition_change(buf, pos: int, version: int, names: dict) -> dict:
    partition, topic_id, pos = _head(buf, pos, names)
    found, pos = _tags(buf, pos, version, _CHANGE_TAGS)
    if pos != len(buf):
        raise _Odd
    data = {"partition_id": partition, "topic_id": topic_id}
    for name in _CHANGE_ORDER:
        if name in found and found[name] != _CHANGE_DEFAULTS.get(name):
            data[name] = found[name]
    return data


def _partition(buf, pos: int, version: int, names: dict) -> dict:
    partition, topic_id, pos = _head(buf, pos, names)
    replicas, pos = _ints(buf, pos)
    isr, pos = _ints(buf, pos)
    removing, pos = _ints(buf, pos)
    adding, pos = _ints(buf, pos)
    if pos + 12 > len(buf):
        raise _Odd
    leader, leader_epoch, partition_epoch = _III(buf, pos)
    pos += 12
    directories = None
    if version >= 1:
        directories, pos = _uuids(buf, pos)
    found, pos = _tags(buf, pos, version, _PARTITION_TAGS)
    if pos != len(buf):
        raise _Odd
    data = {"partition_id": partition, "topic_id": topic_id, "replicas": replicas, "isr": isr,
            "removing_replicas": removing, "adding_replicas": adding, "leader": leader}
    if found.get("leader_recovery_state", 0) != 0:
        data["leader_recovery_state"] = found["leader_recovery_state"]
    data["leader_epoch"] = leader_epoch
    data["partition_epoch"] = partition_epoch
    if version >= 1:
        data["directories"] = directories
    for name in ("eligible_leader_replicas", "last_known_elr"):
        if found.get(name) is not None:
            data[name] = found[name]
    return data


def _broker_epoch(buf, pos: int) -> dict:
    if pos + 13 != len(buf) or buf[pos + 12] != 0:
        raise _Odd
    broker, epoch = _IQ(buf, pos)
    return {"id": broker, "epoch": epoch}


_NAMES = {PARTITION: "PARTITION_RECORD", PARTITION_CHANGE: "PARTITION_CHANGE_RECORD", FENCE: "FENCE_BROKER_RECORD",
          UNFENCE: "UNFENCE_BROKER_RECORD", NO_OP: "NO_OP_RECORD"}


def fast_decode(value, topic_ids: dict | None = None) -> tuple[str, dict] | None:
    """``(type name, data)`` of a frequent record (see the module doc), else None.
    ``topic_ids``: raw topic id -> its text, filled as ids are met (one dict per load: a
    cluster's topic ids repeat in every change of their partitions)."""
    if topic_ids is None:
        topic_ids = {}
    if value is None or len(value) < 4 or value[0] != 1 or value[1] >= 0x80 or value[2] >= 0x80:
        return None
    api_key, version = value[1], value[2]
    try:
        if api_key == PARTITION_CHANGE and version <= 2:
            return _NAMES[api_key], _partition_change(value, 3, version, topic_ids)
        if api_key == NO_OP and version == 0:
            return (_NAMES[api_key], {}) if len(value) == 4 and value[3] == 0 else None
        if api_key == PARTITION and version <= 2:
            return _NAMES[api_key], _partition(value, 3, version, topic_ids)
        if api_key in (FENCE, UNFENCE) and version == 0:
            return _NAMES[api_key], _broker_epoch(value, 3)
    except (_Odd, struct.error, IndexError):
        return None
    return None


__all__ = ["fast_decode"]
