"""``--cluster-metadata-decoder``: KRaft metadata records as kafka-dump-log prints them.

Kafka's ``ClusterMetadataLogMessageParser`` prints no key and, as the payload, the Jackson
text of ``{"type": <MetadataRecordType name>, "version": <n>, "data": <XJsonConverter.write>}``;
a value it cannot read prints ``Error at <offset>, skipping. <exception message>`` in its place.

The text is Jackson's (:mod:`seglog_cli.render.jackson`): control characters as ``\\u00XX``
with upper-case hex, doubles as Java's ``Double.toString`` (``1.0E7``, ``0.001``), NaN and
infinities as quoted strings, and ``bytes`` fields as standard base64 with padding.
"""

from __future__ import annotations

import base64
import math

from seglog_cli.formats.metadata_records import RECORD_TYPES
from seglog_cli.render.jackson import declares_floats, jackson_text, java_double
from seglog_cli.storage.log.text import camel_case
from seglog_cli.storage.serde.metadata_decoder import MetadataRecord, MetadataRecordError, decode_metadata_record


def jackson_json(value) -> str:
    """Compact JSON text as Jackson's ``JsonNode.toString`` writes it, snake_case keys in
    camelCase (:func:`json_value`)."""
    return jackson_text(json_value(value))


# whether a record type's JSON can hold a double (ClientQuotaRecord's value); else the fast writer
_FLOATS = {api_key: declares_floats(record_type.schema.fields) for api_key, record_type in RECORD_TYPES.items()}


def metadata_record_text(record: MetadataRecord) -> str:
    data = jackson_text(json_value(record.data), floats=_FLOATS.get(record.api_key, True))
    return f'{{"type":"{record.type_name}","version":{record.version},"data":{data}}}'


def cluster_metadata_parser(record) -> tuple[str | None, str | None]:
    """Kafka's ``ClusterMetadataLogMessageParser.parse``: (no key, the payload text)."""
    try:
        return None, metadata_record_text(decode_metadata_record(record.value))
    except MetadataRecordError as exc:
        return None, f"Error at {record.offset}, skipping. {exc.message}"


def json_value(value):
    """A decoded value as plain JSON data: camelCase keys, bytes as base64, non-finite doubles
    as Java's strings."""
    if isinstance(value, dict):
        return {camel_case(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_value(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, float) and not math.isfinite(value):
        return java_double(value)
    return value


def cluster_metadata_fields(record) -> dict:
    """JSON Lines: the fields a record object gains under ``--cluster-metadata-decoder``:
    ``metadataRecord`` ({type, version, data}) or ``metadataError`` (Kafka's message) with
    ``metadataUnknown`` (true when the type is not one seglog knows); ``metadataUnknown`` is
    also true beside a ``metadataRecord`` of a version above those seglog knows."""
    try:
        decoded = decode_metadata_record(record.value)
    except MetadataRecordError as exc:
        return {"metadataError": exc.message, "metadataUnknown": exc.unknown}
    fields = {"metadataRecord": {"type": decoded.type_name, "version": decoded.version,
                                 "data": json_value(decoded.data)}}
    if decoded.unknown_version:
        fields["metadataUnknown"] = True  # read with the fields of the nearest known version
    return fields


__all__ = ["cluster_metadata_fields", "cluster_metadata_parser", "jackson_json", "java_double",
           "metadata_record_text"]
