"""KRaft metadata record values, decoded as Kafka's ``MetadataRecordSerde`` reads them.

:func:`decode_metadata_record` turns the value of one ``__cluster_metadata`` record into a
:class:`MetadataRecord`: the type, the version and the fields Kafka's generated JSON converter
writes, in its order (tagged fields only when they differ from their default). A value Kafka
cannot read raises :class:`MetadataRecordError` whose message is the one Kafka's exception
carries (``kafka-dump-log --cluster-metadata-decoder`` prints it after ``Error at <offset>,
skipping.``); ``unknown`` is set when the type is one seglog does not know.

Kafka's generated readers and JSON writers do not check the version: a version above the
highest known one is read (and printed) with the fields of the highest, a negative one with
those of version 0. seglog does the same and flags the record ``unknown_version``.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

from construct import ConstructError

from seglog_cli.formats.kafka_message import TAGGED, ArrayOf, read_unsigned_varint
from seglog_cli.formats.metadata_records import FRAME_VERSION, RECORD_TYPES
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.java_text import uuid_text
from seglog_cli.storage.log.text import java_utf8

SHORT_MAX = 0x7FFF
UNSUPPORTED_VERSION = "org.apache.kafka.common.errors.UnsupportedVersionException"


@dataclass(frozen=True)
class MetadataRecord:
    """One decoded metadata record. ``data`` maps snake_case field names, in schema order, to
    ``int``/``float``/``bool``/``str``/``bytes``/``None``, lists and nested dicts; UUIDs are
    Kafka's text form (URL-safe base64, no padding)."""

    api_key: int
    type_name: str
    version: int
    data: dict
    unknown_version: bool = False


class MetadataRecordError(SeglogError):
    """A metadata record value Kafka's serde refuses; ``message`` is Kafka's own text."""

    def __init__(self, message: str, *, unknown: bool = False, api_key: int | None = None,
                 version: int | None = None):
        super().__init__(message)
        self.unknown = unknown
        self.api_key = api_key
        self.version = version


def _frame_short(stream, entity: str) -> int:
    """``AbstractApiMessageSerde.unsignedIntToShort``."""
    try:
        value = read_unsigned_varint(stream)
    except (ConstructError, IndexError):
        raise MetadataRecordError(f"Error while reading {entity}") from None
    if value > SHORT_MAX:
        raise MetadataRecordError(f"Value for {entity} was too large.")
    return struct.unpack(">h", struct.pack(">H", value & 0xFFFF))[0]


def read_frame(stream) -> tuple[int, int]:
    """``AbstractApiMessageSerde.read`` up to the message: (api key, version) of the frame at
    the stream's position; raises :class:`MetadataRecordError` with Kafka's message. Shared by
    every value framed this way (KRaft metadata records, remote log metadata records)."""
    frame_version = _frame_short(stream, "frame version")
    if frame_version == 0:
        raise MetadataRecordError("Could not deserialize metadata record with frame version 0. Note that "
                                  "upgrades from the preview release of KRaft in 2.8 to newer versions are "
                                  "not supported.")
    if frame_version != FRAME_VERSION:
        raise MetadataRecordError(f"Could not deserialize metadata record due to unknown frame version "
                                  f"{frame_version}(only frame version {FRAME_VERSION} is supported)")
    return _frame_short(stream, "type"), _frame_short(stream, "version")


def decode_metadata_record(value: bytes | None) -> MetadataRecord:
    """The record in one metadata value; raises :class:`MetadataRecordError`."""
    stream = io.BytesIO(b"" if value is None else bytes(value))
    if value is None:
        raise MetadataRecordError("Error while reading frame version")
    api_key, version = read_frame(stream)
    record_type = RECORD_TYPES.get(api_key)
    if record_type is None:
        raise MetadataRecordError(f"{UNSUPPORTED_VERSION}: Unknown metadata id {api_key}", unknown=True,
                                  api_key=api_key, version=version)
    failed = f"Failed to deserialize record with type {api_key}"
    layout = min(max(version, record_type.lowest_version), record_type.highest_version)
    try:
        parsed = record_type.schema.struct(layout).parse_stream(stream)
    except (ConstructError, IndexError, OverflowError):
        raise MetadataRecordError(failed, api_key=api_key, version=version) from None
    left = len(stream.getbuffer()) - stream.tell()
    if left > 0:
        raise MetadataRecordError(f"Found {left} byte(s) of garbage after {api_key}", api_key=api_key,
                                  version=version)
    return MetadataRecord(api_key, record_type.name, version, struct_data(record_type.schema.fields, parsed, layout),
                          not record_type.knows(version))


def struct_data(fields: tuple, parsed, version: int) -> dict:
    """The fields Kafka's JSON converter writes for one parsed struct, in schema order."""
    tagged = parsed[TAGGED]
    out = {}
    for item in fields:
        if not item.present_in(version):
            continue
        if item.tag is None:
            out[item.name] = _value(item.kind, parsed[item.name], version)
            continue
        default = item.default_value
        present = tagged.get(item.name, default)
        if present != default:
            out[item.name] = _value(item.kind, present, version)
    return out


def _value(kind, value, version: int):
    if value is None:
        return None
    if isinstance(kind, ArrayOf):
        return [struct_data(kind.fields, element, version) for element in value]
    if isinstance(kind, tuple):
        return struct_data(kind, value, version)
    if kind.startswith("[]"):
        return [_value(kind[2:], element, version) for element in value]
    if kind == "string":
        return java_utf8(value)
    if kind == "uuid":
        return uuid_text(value)
    if kind == "bytes":
        return bytes(value)
    return value


__all__ = ["MetadataRecord", "MetadataRecordError", "decode_metadata_record", "read_frame", "struct_data",
           "uuid_text"]
