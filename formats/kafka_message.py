"""Kafka's generated-message encoding, declared field by field (the ``*.json`` message specs).

A message is a list of fields, each with a type and the versions it exists in. For one version
the bytes are the present fields in declaration order; *flexible* versions (KIP-482) use the
compact encodings and end every struct with a tagged-field section::

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
               unsigned varint count, count x (unsigned varint tag, unsigned varint size, size bytes)

Tagged fields are optional: absent means the field's default. Unknown tags are skipped.
Strings parse to :class:`RawString` and uuids to :class:`RawUuid` (``bytes`` subclasses), so
the engine can decode text the way Java does and print uuids the way Kafka does.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dataclass_field
from functools import lru_cache

from construct import (
    Construct,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int64sb,
    StreamError,
    Struct,
    stream_read,
)

from formats.varint import UnsignedVarInt

NO_VERSIONS = (1, 0)  # an empty range
MAX_VERSION = 0x7FFF


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


@dataclass(frozen=True)
class Field:
    """One declared field. ``kind`` is a primitive name, ``"[]"`` + a kind, or a tuple of
    fields (a struct); ``name`` is the camelCase name Kafka's JSON converter prints."""

    name: str
    kind: object
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    default: object = 0

    @property
    def span(self) -> tuple[int, int]:
        return versions(self.versions)

    def nullable_in(self, version: int) -> bool:
        return _in(version, versions(self.nullable))


@dataclass(frozen=True)
class Message:
    """A message spec: its fields, valid versions and first flexible version."""

    name: str
    fields: tuple
    valid: str = "0"
    flexible: str = "none"
    extra: dict = dataclass_field(default_factory=dict, compare=False, hash=False)

    def is_valid(self, version: int) -> bool:
        return _in(version, versions(self.valid))

    def is_flexible(self, version: int) -> bool:
        return _in(version, versions(self.flexible))

    def struct(self, version: int) -> Construct:
        return struct_for(self.fields, version, self.is_flexible(version))


class KafkaReadError(StreamError):
    """Bytes a generated Kafka reader refuses; the message is the one Kafka's reader throws."""


NullFieldError = KafkaReadError


def _remaining(stream) -> int:
    here = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(here)
    return end - here


def _length(stream, context, path, flexible: bool, classic: Construct) -> int:
    """A length or count: compact (unsigned varint - 1, read as Java's int) or classic."""
    if not flexible:
        return classic._parsereport(stream, context, path)
    raw = UnsignedVarInt._parsereport(stream, context, path) & 0xFFFFFFFF
    return (raw - (1 << 32) if raw >= 1 << 31 else raw) - 1


class _Text(Construct):
    """A length-prefixed string or bytes field; ``None`` for a null length when nullable."""

    def __init__(self, flexible: bool, nullable: bool, wide: bool, result_type, field_name: str = ""):
        super().__init__()
        self.flexible, self.nullable, self.wide, self.result_type = flexible, nullable, wide, result_type
        self.field_name = field_name

    def _parse(self, stream, context, path):
        size = _length(stream, context, path, self.flexible, Int32sb if self.wide else Int16sb)
        if size < 0:
            if not self.nullable:
                raise KafkaReadError(f"non-nullable field {self.field_name} was serialized as null")
            return None
        remaining = _remaining(stream)
        if not self.wide and size > 0x7FFF:
            raise KafkaReadError(f"string field {self.field_name} had invalid length {size}")
        if size > remaining:
            raise KafkaReadError(f"Error reading byte array of {size} byte(s): only {remaining} byte(s) available"
                                 if self.wide else
                                 f"Error reading string of length {size}, only {remaining} bytes available")
        return self.result_type(stream_read(stream, size, path))

    def _build(self, obj, stream, context, path):
        raise NotImplementedError("kafka_message schemas are read-only; the builder writes messages")


class _List(Construct):
    """A counted array; ``None`` for a null count when nullable."""

    def __init__(self, subcon: Construct, flexible: bool, nullable: bool, field_name: str = ""):
        super().__init__()
        self.subcon, self.flexible, self.nullable = subcon, flexible, nullable
        self.field_name = field_name

    def _parse(self, stream, context, path):
        count = _length(stream, context, path, self.flexible, Int32sb)
        if count < 0:
            if not self.nullable:
                raise KafkaReadError(f"non-nullable field {self.field_name} was serialized as null")
            return None
        remaining = _remaining(stream)
        if count > remaining:
            raise KafkaReadError(f"Tried to allocate a collection of size {count}, but there are only "
                                 f"{remaining} bytes remaining.")
        return [self.subcon._parsereport(stream, context, path) for _ in range(count)]


class _TaggedSection(Construct):
    """The tagged fields of a flexible struct: a dict name -> value for the known tags (read
    from the field's own bytes); unknown tags are skipped."""

    def __init__(self, known: dict):
        super().__init__()
        self.known = known  # tag -> (name, construct)

    def _parse(self, stream, context, path):
        values = {}
        for _ in range(_length(stream, context, path, True, Int32sb) + 1):
            tag = _length(stream, context, path, True, Int32sb) + 1
            size = _length(stream, context, path, True, Int32sb) + 1
            remaining = _remaining(stream)
            if size < 0 or size > remaining:
                raise KafkaReadError(f"Error reading byte array of {size} byte(s): only {remaining} byte(s) available")
            data = stream_read(stream, size, path)
            if tag in self.known:
                name, subcon = self.known[tag]
                values[name] = subcon.parse(data)
        return values


PRIMITIVES = {
    "int8": Int8sb, "int16": Int16sb, "uint16": Int16ub, "int32": Int32sb, "int64": Int64sb,
    "float64": Float64b, "bool": Flag,
}


def kind_construct(kind, version: int, flexible: bool, nullable: bool, name: str = "") -> Construct:
    if isinstance(kind, tuple):
        return struct_for(kind, version, flexible)
    if kind in PRIMITIVES:
        return PRIMITIVES[kind]
    if kind == "uuid":
        return _UuidBytes
    if kind == "string":
        return _Text(flexible, nullable, False, RawString, name)
    if kind == "bytes":
        return _Text(flexible, nullable, True, bytes, name)
    if isinstance(kind, str) and kind.startswith("[]"):
        element = kind_construct(kind[2:], version, flexible, False, name)
        return _List(element, flexible, nullable, name)
    if isinstance(kind, ArrayOf):
        return _List(struct_for(kind.fields, version, flexible), flexible, nullable, name)
    raise ValueError(f"unknown field kind {kind!r}")


@dataclass(frozen=True)
class ArrayOf:
    """``[]Struct``: an array of structs with these fields."""

    fields: tuple


class _UuidType(Construct):
    def _parse(self, stream, context, path):
        return RawUuid(stream_read(stream, 16, path))


_UuidBytes = _UuidType()


@lru_cache(maxsize=None)
def struct_for(fields: tuple, version: int, flexible: bool) -> Construct:
    """The construct Struct of ``fields`` at ``version`` (cached)."""
    parts, tagged = [], {}
    for spec in fields:
        if not _in(version, spec.span):
            continue
        subcon = kind_construct(spec.kind, version, flexible, spec.nullable_in(version), spec.name)
        if spec.tag is not None:
            if flexible:
                tagged[spec.tag] = (spec.name, subcon)
            continue
        parts.append(spec.name / subcon)
    if flexible:
        parts.append("_tagged" / _TaggedSection(tagged))
    return Struct(*parts)


__all__ = ["ArrayOf", "Field", "Message", "RawString", "RawUuid", "struct_for", "versions"]
