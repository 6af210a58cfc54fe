"""Kafka's generated-message encoding, declared field by field (the ``*.json`` message specs).

One layer for every message seglog reads this way: the ``__consumer_offsets`` and
``__transaction_state`` records (:mod:`seglog_cli.formats.group_coordinator`, :mod:`seglog_cli.formats.transaction_log`)
and the KRaft metadata records (:mod:`seglog_cli.formats.metadata_records`). A message is a list of fields,
each with a type and the versions it exists in. For one version the bytes are the present
fields in declaration order; *flexible* versions (KIP-482) use the compact encodings and end
every struct with a tagged-field section::

    int8 / int16 / int32 / int64 / float64   1 / 2 / 4 / 8 / 8 bytes, big-endian, signed
    uint16                                   2 bytes, big-endian, unsigned
    bool                                     1 byte, non-zero = true
    uuid                                     16 bytes
    string     classic: int16 length (-1 = null), UTF-8 bytes
               flexible: unsigned varint length + 1 (0 = null), UTF-8 bytes
    bytes      classic: int32 length (-1 = null), bytes
               flexible: unsigned varint length + 1 (0 = null), bytes
    [ ]T       classic: int32 count (-1 = null), count x T
               flexible: unsigned varint count + 1 (0 = null), count x T
    struct     its fields, then (flexible only) the tagged fields:
               unsigned varint count, count x (unsigned varint tag, unsigned varint size, field)
    nullable struct   untagged: int8 marker (negative = null) then the struct;
                      tagged: unsigned varint marker (0 = null, 1 = present) then the struct

Reading follows the readers Kafka generates (``MessageDataGenerator.generateClassReader``):

- unsigned varints are read into a Java ``int`` (at most 5 bytes, wrapping to negative past
  2**31 - 1; a 6th byte is "Varint is too long"), and ``n - 1`` is 32-bit arithmetic;
- null in a non-nullable field, a string longer than 0x7fff, a string, byte array or
  collection longer than the bytes left are refused with Kafka's messages; elements of a string
  array are never nullable (``<name> element``);
- tagged section: a negative count reads no entry. For each entry, a tag the struct declares
  for this version is read *from the stream* as the field is written, the entry's size
  ignored (a size that disagrees just moves the reader to wherever the field ended); a tag
  the struct declares only for other versions is refused ("Tag N is not valid for version V");
  any other tag's ``size`` bytes are read aside (``readUnknownTaggedField``: ``readArray(size)``)
  and never reported.

Absent tagged fields are simply missing from ``tagged_fields``; their default is
:attr:`Field.default_value`. Strings parse to :class:`RawString` and uuids to :class:`RawUuid`
(``bytes`` subclasses), so the engine decodes text the way Java does and prints uuids the way
Kafka does. Every construct also builds, writing what Kafka's generated writers write.

This module holds the declarations (plain data); the constructs that read and write them are in
:mod:`seglog_cli.formats.message_constructs`, imported when a message is first parsed or built.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

NO_VERSIONS = (1, 0)  # an empty range
MAX_VERSION = 0x7FFF
MAX_STRING_LENGTH = 0x7FFF
NO_DEFAULT = object()
ZERO_UUID = bytes(16)
TAGGED = "tagged_fields"  # the parsed container's key for a struct's tagged values


class RawString(bytes):
    """The UTF-8 bytes of a string field, undecoded."""


class RawUuid(bytes):
    """The 16 bytes of a uuid field."""


@lru_cache(maxsize=None)
def versions(text: str) -> tuple[int, int]:
    """Kafka's version range syntax: ``"0+"``, ``"3"``, ``"0-4"``, ``"none"``."""
    if text == "none":
        return NO_VERSIONS
    if text.endswith("+"):
        return int(text[:-1]), MAX_VERSION
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def _in(version: int, span: tuple[int, int]) -> bool:
    return span[0] <= version <= span[1]


def java_int(raw: int) -> int:
    """An integer as Java's 32-bit ``int`` holds it."""
    raw &= 0xFFFFFFFF
    return raw - (1 << 32) if raw >= 1 << 31 else raw


_TYPE_DEFAULTS = {"bool": False, "float64": 0.0, "uuid": ZERO_UUID, "string": b"", "bytes": b""}


@dataclass(frozen=True)
class ArrayOf:
    """``[]Struct``: an array of structs with these fields."""

    fields: tuple


@dataclass(frozen=True)
class Field:
    """One declared field, in Kafka's own terms: ``versions``/``nullable`` are version ranges,
    ``tag`` makes it a tagged field (tagged in the versions it exists in, when flexible). ``kind``
    is a primitive name, ``"string"``, ``"bytes"``, ``"uuid"``, ``"[]"`` + one of those, an
    :class:`ArrayOf`, or a tuple of fields (a struct). ``name`` is the name the family prints."""

    name: str
    kind: object
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    default: object = NO_DEFAULT

    @property
    def span(self) -> tuple[int, int]:
        return versions(self.versions)

    def present_in(self, version: int) -> bool:
        return _in(version, versions(self.versions))

    def nullable_in(self, version: int) -> bool:
        return _in(version, versions(self.nullable))

    @property
    def default_value(self):
        """What Kafka's generated class holds when the field is absent."""
        if self.default is not NO_DEFAULT:
            return self.default
        kind = self.kind
        if isinstance(kind, ArrayOf) or (isinstance(kind, str) and kind.startswith("[]")):
            return []
        if isinstance(kind, tuple):
            return None
        return _TYPE_DEFAULTS.get(kind, 0)


@dataclass(frozen=True)
class Message:
    """A message spec: its fields, valid versions and flexible versions (``validVersions``,
    ``flexibleVersions``)."""

    name: str
    fields: tuple
    valid: str = "0"
    flexible: str = "none"

    def is_valid(self, version: int) -> bool:
        return _in(version, versions(self.valid))

    def is_flexible(self, version: int) -> bool:
        return _in(version, versions(self.flexible))

    def struct(self, version: int):
        """The construct of this message at ``version`` (:func:`seglog_cli.formats.message_constructs.struct_for`)."""
        from seglog_cli.formats.message_constructs import struct_for

        return struct_for(self.fields, version, self.is_flexible(version))


# The readers and writers (construct classes) are in formats/message_constructs.py, imported on the
# first Message.struct(): a command that holds declarations but parses nothing with them (the
# offsets command's records are read by seglog_cli/storage/serde/coordinator_fast.py) needs no construct.
_CONSTRUCT_NAMES = frozenset({"KafkaReadError", "PRIMITIVES", "read_unsigned_varint", "struct_for"})


def __getattr__(name: str):
    if name in _CONSTRUCT_NAMES:
        from seglog_cli.formats import message_constructs

        return getattr(message_constructs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# the declarations; KafkaReadError, read_unsigned_varint and struct_for are importable from here too
__all__ = ["ArrayOf", "Field", "MAX_STRING_LENGTH", "Message", "NO_DEFAULT", "RawString", "RawUuid", "TAGGED",
           "ZERO_UUID", "java_int", "versions"]
