"""``--cluster-metadata-decoder``: KRaft metadata records as kafka-dump-log prints them.

Kafka's ``ClusterMetadataLogMessageParser`` prints no key and, as the payload, the Jackson
text of ``{"type": <MetadataRecordType name>, "version": <n>, "data": <XJsonConverter.write>}``;
a value it cannot read prints ``Error at <offset>, skipping. <exception message>`` in its place.

Jackson's compact output differs from Python's ``json.dumps`` in small ways reproduced here:
control characters other than ``\\b \\t \\n \\f \\r`` are ``\\u00XX`` with upper-case hex, doubles
print as Java's ``Double.toString`` (``1.0E7``, ``0.001``), NaN and infinities as quoted strings,
and ``bytes`` fields as standard base64 with padding.
"""

from __future__ import annotations

import base64
import math
from decimal import Decimal

from seglog_cli.storage.metadata_decoder import MetadataRecord, MetadataRecordError, decode_metadata_record

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n", "\r": "\\r"}
for _code in range(0x20):
    _ESCAPES.setdefault(chr(_code), f"\\u{_code:04X}")
_TRANSLATION = str.maketrans(_ESCAPES)


def camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def java_double(value: float) -> str:
    """``Double.toString``: the shortest digits, plain between 1e-3 and 1e7, else ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    if 1e-3 <= abs(value) < 1e7:
        point = exponent + 1  # digits before the decimal point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, fraction = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip significant digits of a positive double, and the decimal exponent
    of the first digit (Python's ``repr`` digits, as Java 19+'s ``Double.toString`` picks)."""
    _, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits))
    first = len(text) - 1 + exponent
    return text.lstrip("0").rstrip("0") or "0", first - (len(text) - len(text.lstrip("0")))


def jackson_json(value) -> str:
    """Compact JSON text as Jackson's ``JsonNode.toString`` writes it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = java_double(value)
        return f'"{text}"' if text[-1] in "yN" else text
    if isinstance(value, str):
        return f'"{value.translate(_TRANSLATION)}"'
    if isinstance(value, (bytes, bytearray)):
        return f'"{base64.b64encode(bytes(value)).decode("ascii")}"'
    if isinstance(value, dict):
        return "{" + ",".join(f'"{camel_case(k).translate(_TRANSLATION)}":{jackson_json(v)}'
                              for k, v in value.items()) + "}"
    return "[" + ",".join(jackson_json(item) for item in value) + "]"


def metadata_record_text(record: MetadataRecord) -> str:
    return (f'{{"type":"{record.type_name}","version":{record.version},'
            f'"data":{jackson_json(record.data)}}}')


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
