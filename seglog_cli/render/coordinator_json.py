"""kafka-dump-log's ``--offsets-decoder``, ``--transaction-log-decoder`` and
``--share-group-state-decoder`` text.

Kafka 4.2's ``DumpLogSegments.CoordinatorRecordMessageParser`` prints, for each record::

    key: {"type":"<record type>","data":<key JSON>}
    payload: {"version":"<value version>","data":<value JSON>}     or   payload: <DELETE>

and for a record it cannot read, only ``key: Unknown record type N at offset O, skipping.`` or
``key: Error at offset O, skipping. <message>``. The JSON is what the generated
``*JsonConverter`` classes write through Jackson: fields in schema order, tagged fields only
when they differ from their default, bytes as padded base64, uuids as URL-safe base64, compact
separators, non-ASCII unescaped, control characters as ``\\uXXXX`` (upper-case hex), written
by :func:`seglog_cli.render.jackson.jackson_text` (Python's C encoder where the schema declares
no double; the embedded consumer-protocol messages have none either). In a
``GroupMetadataValue`` of protocol type ``consumer`` each member's ``subscription`` and
``assignment`` bytes are replaced by the decoded consumer-protocol message when they parse.
"""

from __future__ import annotations

import base64

from seglog_cli.formats import group_coordinator as gc
from seglog_cli.formats.kafka_message import ArrayOf, Message, RawUuid
from seglog_cli.render.jackson import declares_floats, jackson_text
from seglog_cli.storage.log.java_text import uuid_text
from seglog_cli.storage.serde.coordinator_records import (
    GROUP_RECORD_TYPES,
    SHARE_RECORD_TYPES,
    TRANSACTION_RECORD_TYPES,
    CoordinatorRecordError,
    UnknownRecordType,
    read_coordinator_record,
    read_versioned,
)
from seglog_cli.storage.log.errors import DecodeError


def message_json(fields: tuple, version: int, flexible: bool, values: dict) -> dict:
    """The generated JsonConverter's tree for one decoded message (see the module doc)."""
    out = {}
    for spec in fields:
        if spec.name not in values:
            continue
        value = values[spec.name]
        if spec.tag is not None and value == spec.default_value:
            continue
        out[spec.name] = _json_value(spec.kind, version, flexible, value)
    return out


_PLAIN_KINDS = frozenset({"int8", "int16", "uint16", "int32", "int64", "bool", "string"})


def is_plain(fields: tuple) -> bool:
    """Whether every field is an untagged integer, bool or string: then :func:`message_json`
    of the decoded values (a dict in schema order, Java's strings) is those values as they are."""
    return all(spec.tag is None and spec.kind in _PLAIN_KINDS for spec in fields)


def _json_value(kind, version: int, flexible: bool, value):
    if value is None:
        return None
    if isinstance(kind, tuple):
        return message_json(kind, version, flexible, value)
    if isinstance(kind, ArrayOf):
        return [message_json(kind.fields, version, flexible, item) for item in value]
    if isinstance(value, RawUuid):
        return uuid_text(bytes(value))
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, list):
        return [uuid_text(bytes(item)) if isinstance(item, RawUuid) else item for item in value]
    return value


def value_json(schema: Message, version: int, values: dict) -> dict:
    tree = message_json(schema.fields, version, schema.is_flexible(version), values)
    if schema is gc.GROUP_METADATA_VALUE and values.get("protocolType") == gc.CONSUMER_PROTOCOL_TYPE:
        for member, member_tree in zip(values.get("members") or (), tree.get("members") or ()):
            _expand(member_tree, "subscription", member.get("subscription"), gc.CONSUMER_PROTOCOL_SUBSCRIPTION)
            _expand(member_tree, "assignment", member.get("assignment"), gc.CONSUMER_PROTOCOL_ASSIGNMENT)
    return tree


def _expand(member_tree: dict, name: str, data, schema: Message) -> None:
    """Replace the member's embedded bytes by their decoded message; keep the bytes when they
    do not parse (Kafka swallows the error)."""
    if data is None:
        return
    try:
        version, values = read_versioned(schema, bytes(data))
    except CoordinatorRecordError:
        return
    member_tree[name] = message_json(schema.fields, version, False, values)


class CoordinatorRecordParser:
    """``parse(record) -> (key_text, payload_text)``, one instance per decoder flag."""

    def __init__(self, record_types: dict):
        self.record_types = record_types
        # per record type: whether the key / value JSON can hold a double (else the fast
        # writer), and whether the key / value is plain (its decoded dict is its JSON tree)
        self.shapes = {record_type: (declares_floats(key.fields), declares_floats(value.fields),
                                     is_plain(key.fields), is_plain(value.fields))
                       for record_type, (key, value) in record_types.items()}

    def __call__(self, record) -> tuple[str | None, str | None]:
        if record.key is None:
            raise DecodeError(f"Failed to decode message at offset {record.offset} using the specified "
                              f"decoder (message had a missing key)")
        try:
            decoded = read_coordinator_record(record.key, record.value, self.record_types)
        except UnknownRecordType as exc:
            return f"Unknown record type {exc.record_type} at offset {record.offset}, skipping.", None
        except CoordinatorRecordError as exc:
            return f"Error at offset {record.offset}, skipping. {exc.message}", None
        key_floats, value_floats, key_plain, value_plain = self.shapes[decoded.record_type]
        key_tree = decoded.key if key_plain else message_json(decoded.key_schema.fields, 0, False, decoded.key)
        key_text = '{"type":"%d","data":%s}' % (decoded.record_type, jackson_text(key_tree, floats=key_floats))
        if decoded.value is None:
            return key_text, "<DELETE>"
        tree = decoded.value if value_plain else value_json(decoded.value_schema, decoded.value_version,
                                                             decoded.value)
        return key_text, '{"version":"%d","data":%s}' % (decoded.value_version,
                                                          jackson_text(tree, floats=value_floats))


def offsets_parser() -> CoordinatorRecordParser:
    return CoordinatorRecordParser(GROUP_RECORD_TYPES)


def transaction_log_parser() -> CoordinatorRecordParser:
    return CoordinatorRecordParser(TRANSACTION_RECORD_TYPES)


def coordinator_fields(record, record_types: dict) -> dict:
    """JSON Lines: the fields a data record gains under ``--offsets-decoder`` or
    ``--transaction-log-decoder``: ``coordinatorRecord`` (``recordType``, ``key``,
    ``valueVersion``, ``value``; both null for a tombstone) with the same JSON as the text
    lines, or ``coordinatorError`` (Kafka's message) and ``coordinatorUnknown`` (true for a
    record type seglog does not know)."""
    if record.key is None:
        return {"coordinatorError": "the record has no key", "coordinatorUnknown": False}
    try:
        decoded = read_coordinator_record(record.key, record.value, record_types)
    except UnknownRecordType as exc:
        return {"coordinatorError": exc.message, "coordinatorUnknown": True}
    except CoordinatorRecordError as exc:
        return {"coordinatorError": exc.message, "coordinatorUnknown": False}
    value = None
    if not decoded.is_tombstone:
        value = value_json(decoded.value_schema, decoded.value_version, decoded.value)
    return {"coordinatorRecord": {
        "recordType": decoded.record_type,
        "key": message_json(decoded.key_schema.fields, 0, False, decoded.key),
        "valueVersion": decoded.value_version,
        "value": value,
    }}


def share_group_state_parser() -> CoordinatorRecordParser:
    """``--share-group-state-decoder``: Kafka 4.2's ``ShareGroupStateMessageParser`` is the same
    ``CoordinatorRecordMessageParser`` over ``ShareCoordinatorRecordSerde``."""
    return CoordinatorRecordParser(SHARE_RECORD_TYPES)


def offsets_fields(record) -> dict:
    return coordinator_fields(record, GROUP_RECORD_TYPES)


def transaction_log_fields(record) -> dict:
    return coordinator_fields(record, TRANSACTION_RECORD_TYPES)


def share_group_state_fields(record) -> dict:
    return coordinator_fields(record, SHARE_RECORD_TYPES)
