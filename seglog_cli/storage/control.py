"""Control records (§4): transaction markers and KRaft control messages.

:func:`parse_control_record` applies Kafka's checks (``ControlRecordType.parseTypeId``,
``EndTransactionMarker.deserializeValue``, ``ControlRecordUtils``) and returns a
:class:`ControlRecord`; a malformed one raises :class:`InvalidRecordError` with Kafka's message.
"""

from __future__ import annotations

from dataclasses import dataclass

from construct import ConstructError

from formats import control as control_format
from seglog_cli.storage.errors import InvalidRecordError, _first_line
from seglog_cli.storage.records import Record

UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class ControlRecord:
    type_id: int
    key_version: int
    coordinator_epoch: int | None = None  # ABORT / COMMIT only
    data: object = None  # parsed KRaft message (a construct Container), KRaft types only

    @property
    def type_name(self) -> str:
        return control_format.CONTROL_TYPES.get(self.type_id, UNKNOWN)

    @property
    def is_transaction_marker(self) -> bool:
        return self.type_id in (control_format.ABORT, control_format.COMMIT)


def parse_control_type(key: bytes | None, path=None, position=None) -> tuple[int, int]:
    """(key version, type id) of a control record key, with Kafka's validation."""
    if key is None or len(key) < control_format.CONTROL_KEY_SIZE:
        found = 0 if key is None else len(key)
        raise InvalidRecordError(
            f"Invalid value size found for end control record key. Must have at least "
            f"{control_format.CONTROL_KEY_SIZE} bytes, but found only {found}", path, position)
    parsed = control_format.ControlRecordKey.parse(key)
    if parsed.version < 0:
        raise InvalidRecordError(
            f"Invalid version found for control record: {parsed.version}. May indicate data corruption",
            path, position)
    return parsed.version, parsed.type


def parse_control_record(record: Record, path=None, position=None) -> ControlRecord:
    version, type_id = parse_control_type(record.key, path, position)
    if type_id in (control_format.ABORT, control_format.COMMIT):
        return ControlRecord(type_id, version, coordinator_epoch=_end_txn_epoch(record.value, path, position))
    schema = control_format.KRAFT_CONTROL_VALUES.get(type_id)
    if schema is None:
        return ControlRecord(type_id, version)
    try:
        data = schema.parse(record.value or b"")
    except (ConstructError, ValueError) as exc:
        raise InvalidRecordError(
            f"Cannot read {control_format.CONTROL_TYPES[type_id]} control record: {_first_line(exc)}", path,
            position, record.offset) from None
    return ControlRecord(type_id, version, data=data)


def _end_txn_epoch(value: bytes | None, path, position) -> int:
    size = 0 if value is None else len(value)
    if size < control_format.END_TXN_MARKER_VALUE_SIZE:
        raise InvalidRecordError(
            f"Invalid value size found for end transaction marker. Must have at least "
            f"{control_format.END_TXN_MARKER_VALUE_SIZE} bytes, but found only {size}", path, position)
    parsed = control_format.EndTxnMarkerValue.parse(value)
    if parsed.version < 0:
        raise InvalidRecordError(
            f"Invalid version found for end transaction marker: {parsed.version}. May indicate data "
            f"corruption", path, position)
    return parsed.coordinator_epoch
