"""Building blocks for Kafka's generated *flexible* message schemas, read as Kafka's Java does.

A KRaft metadata record (and any message with ``"flexibleVersions": "0+"``) is a sequence of
fields, each present in a range of versions, followed by a tagged-field section::

    int8 / int16 / int32 / int64   1 / 2 / 4 / 8 bytes, big-endian, signed
    uint16                          2 bytes, big-endian, unsigned
    float64                         8 bytes, IEEE 754 big-endian
    bool                            1 byte; any non-zero byte is true
    uuid                            16 bytes
    string                          unsigned varint n, then n - 1 UTF-8 bytes; n = 0 is null
                                    (an error unless the field is nullable); n - 1 > 32767 is an error
    bytes                           unsigned varint n, then n - 1 bytes; n = 0 is null
    []T                             unsigned varint n, then n - 1 elements; n = 0 is null; a count
                                    larger than the bytes left is an error
    struct                          its fields, then its own tagged-field section
    tagged-field section            unsigned varint count, then count x (unsigned varint tag,
                                    unsigned varint size, field); a known tag's field is read from
                                    the stream as it is written (the size is not checked), a
                                    tag the struct declares for other versions only is an error,
                                    an unknown tag's ``size`` bytes are skipped

Unsigned varints are read into a Java ``int`` (at most 5 bytes; the value wraps to negative above
2**31 - 1), and ``n - 1`` is computed in 32-bit arithmetic, as the generated Java readers do.
Strings are returned as raw ``bytes``; turning them into text (Java's UTF-8 replacement rules)
is the engine's job.

A schema is declared once with :func:`field` entries and :func:`struct_of`; :func:`message_struct`
builds the construct ``Struct`` of one version from the declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from construct import (
    Bytes,
    Construct,
    ConstructError,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int64sb,
    SizeofError,
    Struct,
    stream_read,
    stream_write,
)

from formats.varint import UnsignedVarInt, encode_unsigned

MAX_STRING_LENGTH = 0x7FFF
NO_DEFAULT = object()


class SchemaViolation(ConstructError):
    """Bytes that a generated Kafka reader refuses (null in a non-nullable field, a string or a
    collection longer than allowed)."""


def java_int(raw: int) -> int:
    """An unsigned 32-bit value as Java's ``int`` holds it."""
    raw &= 0xFFFFFFFF
    return raw - (1 << 32) if raw >= 1 << 31 else raw


def _length(stream, context, path) -> int:
    """``readUnsignedVarint() - 1`` in Java ``int`` arithmetic."""
    return java_int(UnsignedVarInt._parsereport(stream, context, path) - 1)


def _remaining(stream) -> int:
    here = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(here)
    return end - here


def _write_length(obj, stream, context, path) -> None:
    UnsignedVarInt._build(0 if obj is None else len(obj) + 1, stream, context, path)


class CompactField(Construct):
    """A compact string or bytes field: raw ``bytes`` or ``None``."""

    def __init__(self, name: str, nullable: bool, is_string: bool):
        super().__init__()
        self.field_name, self.nullable, self.is_string = name, nullable, is_string

    def _parse(self, stream, context, path):
        size = _length(stream, context, path)
        if size < 0:
            if not self.nullable:
                raise SchemaViolation(f"non-nullable field {self.field_name} was serialized as null", path=path)
            return None
        if self.is_string and size > MAX_STRING_LENGTH:
            raise SchemaViolation(f"string field {self.field_name} had invalid length {size}", path=path)
        return stream_read(stream, size, path)

    def _build(self, obj, stream, context, path):
        if isinstance(obj, str):
            obj = obj.encode("utf-8")
        _write_length(obj, stream, context, path)
        if obj is not None:
            stream_write(stream, bytes(obj), len(obj), path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError("compact fields have no fixed size", path=path)


class CompactList(Construct):
    """A compact array of ``subcon``: a list or ``None``."""

    def __init__(self, name: str, subcon: Construct, nullable: bool):
        super().__init__()
        self.field_name, self.subcon, self.nullable = name, subcon, nullable

    def _parse(self, stream, context, path):
        count = _length(stream, context, path)
        if count < 0:
            if not self.nullable:
                raise SchemaViolation(f"non-nullable field {self.field_name} was serialized as null", path=path)
            return None
        left = _remaining(stream)
        if count > left:
            raise SchemaViolation(f"Tried to allocate a collection of size {count}, but there are only "
                                  f"{left} bytes remaining.", path=path)
        return [self.subcon._parsereport(stream, context, path) for _ in range(count)]

    def _build(self, obj, stream, context, path):
        _write_length(obj, stream, context, path)
        for item in obj or ():
            self.subcon._build(item, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError("compact arrays have no fixed size", path=path)


class TaggedSection(Construct):
    """The tagged fields of one struct version: a dict of field name -> value for the known tags
    that were present (unknown tags are skipped, as Kafka keeps them aside unprinted; a tag the
    struct uses only in other versions is refused, as Kafka's generated reader does)."""

    def __init__(self, tags: dict, other_tags: frozenset = frozenset(), version: int = 0):
        super().__init__()
        self.tags = tags  # tag -> (name, construct)
        self.other_tags = other_tags
        self.version = version

    def _parse(self, stream, context, path):
        found = {}
        count = java_int(UnsignedVarInt._parsereport(stream, context, path))
        for _ in range(max(count, 0)):
            tag = java_int(UnsignedVarInt._parsereport(stream, context, path))
            size = java_int(UnsignedVarInt._parsereport(stream, context, path))
            known = self.tags.get(tag)
            if known is not None:
                found[known[0]] = known[1]._parsereport(stream, context, path)
            elif tag in self.other_tags:
                raise SchemaViolation(f"Tag {tag} is not valid for version {self.version}", path=path)
            elif size < 0:
                raise SchemaViolation(f"negative size {size} for tagged field {tag}", path=path)
            else:
                stream_read(stream, size, path)
        return found

    def _build(self, obj, stream, context, path):
        present = [(tag, name, sub) for tag, (name, sub) in sorted(self.tags.items()) if name in (obj or {})]
        head = encode_unsigned(len(present))
        stream_write(stream, head, len(head), path)
        for tag, name, sub in present:
            data = sub.build(obj[name])
            entry = encode_unsigned(tag) + encode_unsigned(len(data)) + data
            stream_write(stream, entry, len(entry), path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError("tagged fields have no fixed size", path=path)


# -- declarations ---------------------------------------------------------------------------------

PRIMITIVES = {
    "int8": Int8sb, "int16": Int16sb, "int32": Int32sb, "int64": Int64sb, "uint16": Int16ub,
    "float64": Float64b, "bool": Flag, "uuid": Bytes(16),
}
ZERO_UUID = bytes(16)
_TYPE_DEFAULTS = {"bool": False, "float64": 0.0, "uuid": ZERO_UUID, "string": b"", "bytes": b""}


@dataclass(frozen=True)
class StructSpec:
    """A named struct type: its fields in declaration order."""

    name: str
    fields: tuple


@dataclass(frozen=True)
class Field:
    """One field of a message: Kafka's ``name``/``type``/``versions``/``nullableVersions``/
    ``tag``/``default`` (the tag applies from the field's first version, as in every metadata
    schema). ``type`` is a primitive name, ``"string"``, ``"bytes"``, a :class:`StructSpec`, or
    ``("array", element type)``."""

    name: str
    type: object
    first_version: int = 0
    last_version: int | None = None
    nullable_from: int | None = None
    tag: int | None = None
    default: object = NO_DEFAULT

    def present_in(self, version: int) -> bool:
        return self.first_version <= version and (self.last_version is None or version <= self.last_version)

    def nullable_in(self, version: int) -> bool:
        return self.nullable_from is not None and version >= self.nullable_from

    @property
    def default_value(self):
        """What Kafka's generated class holds when the field is absent."""
        if self.default is not NO_DEFAULT:
            return self.default
        kind = self.type
        if isinstance(kind, tuple):
            return []
        if isinstance(kind, StructSpec):
            return None  # compared field by field against each sub-field's default
        return _TYPE_DEFAULTS.get(kind, 0)


def _versions(text: str) -> tuple[int, int | None]:
    if text.endswith("+"):
        return int(text[:-1]), None
    low, _, high = text.partition("-")
    return int(low), int(high or low)


def field(name: str, type_, versions: str = "0+", *, nullable: str | None = None, tag: int | None = None,
          default=NO_DEFAULT) -> Field:
    """A field declaration in Kafka's own terms (``versions="1+"``, ``nullable="0+"``)."""
    first, last = _versions(versions)
    return Field(name, type_, first, last, None if nullable is None else _versions(nullable)[0], tag, default)


def array(element) -> tuple:
    return ("array", element)


def struct_of(name: str, *fields: Field) -> StructSpec:
    return StructSpec(name, tuple(fields))


def _type_construct(spec: Field, kind, version: int, element: bool = False) -> Construct:
    if isinstance(kind, tuple):
        return CompactList(spec.name, _type_construct(spec, kind[1], version, True), spec.nullable_in(version))
    if isinstance(kind, StructSpec):
        return struct_version(kind, version)
    if kind in ("string", "bytes"):  # array elements are never nullable
        name = f"{spec.name} element" if element else spec.name
        return CompactField(name, spec.nullable_in(version) and not element, kind == "string")
    return PRIMITIVES[kind]


@lru_cache(maxsize=None)
def struct_version(spec: StructSpec, version: int) -> Struct:
    """The construct ``Struct`` of ``spec`` at ``version``: the untagged fields present in that
    version, in order, then ``tagged_fields`` (a dict of the tagged values that were written)."""
    parts = []
    tags = {}
    other_tags = set()
    for item in spec.fields:
        if not item.present_in(version):
            if item.tag is not None:
                other_tags.add(item.tag)
            continue
        sub = _type_construct(item, item.type, version)
        if item.tag is None:
            parts.append(item.name / sub)
        else:
            tags[item.tag] = (item.name, sub)
    parts.append("tagged_fields" / TaggedSection(tags, frozenset(other_tags - set(tags)), version))
    return Struct(*parts)


__all__ = ["CompactField", "CompactList", "Field", "NO_DEFAULT", "SchemaViolation", "StructSpec",
           "TaggedSection", "ZERO_UUID", "array", "field", "java_int", "struct_of", "struct_version"]
