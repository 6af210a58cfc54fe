"""Decoding the records of Kafka's internal coordinator topics (``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``) into plain values, as Kafka's ``CoordinatorRecordSerde`` reads them.

A record's key starts with an int16 record type, its value with an int16 value version; a
null value is a tombstone. :func:`read_coordinator_record` returns a
:class:`CoordinatorRecord` whose ``key``/``value`` are dicts in schema order (strings decoded
as Java does, uuids as :class:`seglog_cli.formats.kafka_message.RawUuid`, bytes as ``bytes``, tagged
fields with their defaults when absent). Failures raise :class:`CoordinatorRecordError` (or
its subclass :class:`UnknownRecordType`) carrying Kafka's own message. Offset commits and classic
group metadata (with its embedded consumer-protocol messages), which fill ``__consumer_offsets``,
are read by the hand-written readers of
:mod:`seglog_cli.storage.serde.coordinator_fast` first; whatever they are not sure of goes through the
construct schemas (tests/storage/serde/test_coordinator_fast.py holds the two paths to the same result).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from seglog_cli.formats import group_coordinator, share_coordinator, transaction_log
from seglog_cli.formats.kafka_message import TAGGED, ArrayOf, Message, RawString, versions
from seglog_cli.storage.serde.coordinator_fast import (
    read_consumer_assignment,
    read_consumer_subscription,
    read_group_key,
    read_group_metadata_value,
    read_legacy_offset_commit_value,
    read_offset_commit_key,
    read_offset_commit_value,
)
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.text import java_utf8

GROUP_RECORD_TYPES = group_coordinator.RECORD_TYPES
TRANSACTION_RECORD_TYPES = transaction_log.RECORD_TYPES
SHARE_RECORD_TYPES = share_coordinator.RECORD_TYPES


class CoordinatorRecordError(SeglogError):
    """A coordinator record seglog (and Kafka) cannot read; ``message`` is Kafka's text."""


class UnknownRecordType(CoordinatorRecordError):
    def __init__(self, record_type: int):
        super().__init__(f"Found an unknown record type {record_type}")
        self.record_type = record_type


class CoordinatorRecord(NamedTuple):
    """One decoded record (a named tuple: ``__consumer_offsets`` holds millions of them)."""

    record_type: int
    key_schema: Message
    key: dict
    value_schema: Message
    value_version: int | None  # None for a tombstone
    value: dict | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


def read_coordinator_record(key: bytes, value: bytes | None, record_types: dict) -> CoordinatorRecord:
    """Kafka's ``CoordinatorRecordSerde.deserialize`` over ``record_types`` (type -> schemas)."""
    record_type = _read_version(key, "key")
    if record_type not in record_types:
        raise UnknownRecordType(record_type)
    pair = record_types[record_type]
    key_schema, value_schema = pair
    fast = _FAST_READERS.get(record_type)
    if fast is not None and fast[0] is not pair:  # another table under this number
        fast = None
    key_fields = fast[1](key) if fast is not None else None
    if key_fields is None:
        # Kafka reads the key "with version <record type>"; key schemas have the one version 0
        key_fields = read_message(key_schema, 0, key[2:], "key", shown_version=record_type)
    if value is None:
        return CoordinatorRecord(record_type, key_schema, key_fields, value_schema, None, None)
    version = _read_version(value, "value")
    # a fast reader reads only versions the schema has; anything else is judged below
    value_fields = fast[2](value, version) if fast is not None and fast[2] is not None else None
    if value_fields is None:
        if not value_schema.is_valid(version):
            raise CoordinatorRecordError(f"Found an unknown record version {version} for {record_type} type")
        value_fields = read_message(value_schema, version, value[2:], "value")
    return CoordinatorRecord(record_type, key_schema, key_fields, value_schema, version, value_fields)


# record type -> (its key/value schemas, fast key reader, fast value reader or None): the hot
# types read by coordinator_fast, which returns None wherever the schemas must decide
_FAST_READERS = {
    0: (GROUP_RECORD_TYPES[0], read_offset_commit_key, read_legacy_offset_commit_value),
    1: (GROUP_RECORD_TYPES[1], read_offset_commit_key, read_offset_commit_value),
    2: (GROUP_RECORD_TYPES[2], read_group_key, read_group_metadata_value),
}


def read_versioned(message: Message, data: bytes) -> tuple[int, dict]:
    """An int16-version-prefixed message (the consumer protocol's embedded bytes); the fields
    of whatever version is stored, as Kafka's generated readers do (no range check)."""
    if message is group_coordinator.CONSUMER_PROTOCOL_SUBSCRIPTION:
        fast = read_consumer_subscription(data)
    elif message is group_coordinator.CONSUMER_PROTOCOL_ASSIGNMENT:
        fast = read_consumer_assignment(data)
    else:
        fast = None
    if fast is not None:
        return fast
    version = _read_version(data, "value")
    return version, read_message(message, version, data[2:], "value")


def _read_version(data: bytes, name: str) -> int:
    if len(data) < 2:
        raise CoordinatorRecordError(f"Could not read version from {name}'s buffer.")
    return _INT16(data)[0]


_INT16 = struct.Struct(">h").unpack_from


def read_message(message: Message, version: int, data: bytes, name: str, shown_version: int | None = None) -> dict:
    from construct import ConstructError  # the schemas' path only: the fast readers need no construct

    from seglog_cli.formats.message_constructs import KafkaReadError

    shown = version if shown_version is None else shown_version
    try:
        parsed = message.struct(version).parse(data)
    except KafkaReadError as exc:
        raise CoordinatorRecordError(f"Could not read record with version {shown} from {name}'s "
                                     f"buffer due to: {exc.args[0]}.") from None
    except (ConstructError, struct.error, ValueError, OverflowError, RecursionError):
        # Java's BufferUnderflowException has no message: Kafka prints "due to: null."
        detail = "null"
        raise CoordinatorRecordError(f"Could not read record with version {shown} from {name}'s "
                                     f"buffer due to: {detail}.") from None
    return plain_fields(message.fields, version, message.is_flexible(version), parsed)


def plain_fields(fields: tuple, version: int, flexible: bool, parsed) -> dict:
    """The parsed construct Container as a dict in schema order: strings decoded as Java does,
    tagged fields present (their default when absent)."""
    out = {}
    tagged = parsed.get(TAGGED, {}) if flexible else {}
    for spec in fields:
        if not spec.present_in(version):
            continue
        if spec.tag is not None:
            if not flexible:
                continue
            raw = tagged.get(spec.name, _MISSING)
            out[spec.name] = spec.default_value if raw is _MISSING else _plain(spec.kind, version, flexible, raw)
        else:
            out[spec.name] = _plain(spec.kind, version, flexible, parsed[spec.name])
    return out


_MISSING = object()


def _plain(kind, version: int, flexible: bool, raw):
    if raw is None:
        return None
    if isinstance(kind, tuple):
        return plain_fields(kind, version, flexible, raw)
    if isinstance(kind, ArrayOf):
        return [plain_fields(kind.fields, version, flexible, item) for item in raw]
    if isinstance(raw, RawString):
        return java_utf8(bytes(raw))
    if isinstance(raw, list):
        return [java_utf8(bytes(item)) if isinstance(item, RawString) else item for item in raw]
    return raw


__all__ = ["CoordinatorRecord", "CoordinatorRecordError", "UnknownRecordType", "read_coordinator_record",
           "read_versioned", "versions", "GROUP_RECORD_TYPES", "SHARE_RECORD_TYPES",
           "TRANSACTION_RECORD_TYPES"]
