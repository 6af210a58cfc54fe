"""Kafka's generated ``*JsonConverter`` output for the messages seglog decodes.

Kafka writes message fields in schema order with camelCase names, compactly (Jackson), skipping
tagged fields it does not know; UUIDs print as URL-safe base64 without padding. The construct
schemas in ``formats`` use snake_case names in the same order, so the conversion is by name;
the few names whose camelCase is not mechanical are listed in ``SPECIAL_NAMES``. The text is
written by :func:`seglog_cli.render.jackson.jackson_text`.
"""

from __future__ import annotations

import base64

from seglog_cli.render.jackson import jackson_text
from seglog_cli.storage.log.java_text import uuid_text
from seglog_cli.storage.log.text import camel_case as plain_camel_case

SPECIAL_NAMES = {
    "kraft_version": "kRaftVersion",
    "kraft_version_feature": "kRaftVersionFeature",
}
UUID_FIELDS = {"voter_directory_id"}
SKIPPED_FIELDS = {"tagged_fields", "_io"}


def camel_case(name: str) -> str:
    return SPECIAL_NAMES[name] if name in SPECIAL_NAMES else plain_camel_case(name)


def to_kafka_json_value(container) -> dict:
    """A parsed construct Container as the dict Kafka's JSON converter would write."""
    out = {}
    for name, value in container.items():
        if name in SKIPPED_FIELDS or name.startswith("_"):
            continue
        out[camel_case(name)] = _value(name, value)
    return out


def _value(name: str, value):
    if name in UUID_FIELDS and isinstance(value, (bytes, bytearray)):
        return uuid_text(bytes(value))
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return to_kafka_json_value(value)
    if isinstance(value, list):
        return [_value(name, item) for item in value]
    return value


def to_kafka_json(container) -> str:
    """Compact JSON text, as Jackson's ``JsonNode.toString`` prints it (control characters as
    ``\\u00XX`` in upper case, where ``json.dumps`` wrote ``\\u001f``)."""
    return jackson_text(to_kafka_json_value(container))
