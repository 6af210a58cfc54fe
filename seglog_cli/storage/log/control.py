"""Control records (§4): transaction markers and KRaft control messages.

:func:`parse_control_record` applies Kafka's checks (``ControlRecordType.parseTypeId``,
``EndTransactionMarker.deserializeValue``, ``ControlRecordUtils``) and returns a
:class:`ControlRecord`; a malformed one raises :class:`InvalidRecordError` with Kafka's message.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from seglog_cli.formats import layout
from seglog_cli.storage.log.errors import InvalidRecordError, _first_line
from seglog_cli.storage.log.records import Record

UNKNOWN = "UNKNOWN"
# a control record key (version, type) and an end-transaction marker value (version, coordinator
# epoch): read with struct (tests/formats/test_engine_layouts.py holds them to formats/control.py's
# schemas), so a dump of a transactional log does not import construct for every marker
KEY = struct.Struct(">hh")
END_TXN_MARKER = struct.Struct(">hi")


@dataclass(frozen=True)
class ControlRecord:
    type_id: int
    key_version: int
    coordinator_epoch: int | None = None  # ABORT / COMMIT only
    data: object = None  # parsed KRaft message (a construct Container), KRaft types only

    @property
    def type_name(self) -> str:
        return layout.CONTROL_TYPES.get(self.type_id, UNKNOWN)

    @property
    def is_transaction_marker(self) -> bool:
        return self.type_id in (layout.ABORT, layout.COMMIT)


def parse_control_type(key: bytes | None, path=None, position=None) -> tuple[int, int]:
    """(key version, type id) of a control record key, with Kafka's validation."""
    if key is None or len(key) < layout.CONTROL_KEY_SIZE:
        found = 0 if key is None else len(key)
        raise InvalidRecordError(
            f"Invalid value size found for end control record key. Must have at least "
            f"{layout.CONTROL_KEY_SIZE} bytes, but found only {found}", path, position)
    version, type_id = KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for control record: {version}. May indicate data corruption",
            path, position)
    return version, type_id


def parse_control_record(record: Record, path=None, position=None) -> ControlRecord:
    version, type_id = parse_control_type(record.key, path, position)
    if type_id in (layout.ABORT, layout.COMMIT):
        return ControlRecord(type_id, version, coordinator_epoch=_end_txn_epoch(record.value, path, position))
    from construct import ConstructError  # KRaft control messages only: a data log's markers need none

    from seglog_cli.formats import control as control_format

    schema = control_format.KRAFT_CONTROL_VALUES.get(type_id)
    if schema is None:
        return ControlRecord(type_id, version)
    try:
        data = schema.parse(record.value or b"")
    except (ConstructError, ValueError) as exc:
        raise InvalidRecordError(
            f"Cannot read {layout.CONTROL_TYPES[type_id]} control record: {_first_line(exc)}", path,
            position, record.offset) from None
    return ControlRecord(type_id, version, data=data)


def _end_txn_epoch(value: bytes | None, path, position) -> int:
    size = 0 if value is None else len(value)
    if size < layout.END_TXN_MARKER_VALUE_SIZE:
        raise InvalidRecordError(
            f"Invalid value size found for end transaction marker. Must have at least "
            f"{layout.END_TXN_MARKER_VALUE_SIZE} bytes, but found only {size}", path, position)
    version, coordinator_epoch = END_TXN_MARKER.unpack_from(value)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for end transaction marker: {version}. May indicate data "
            f"corruption", path, position)
    return coordinator_epoch
