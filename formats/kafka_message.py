"""Kafka's generated-message encoding, declared field by field (the ``*.json`` message specs).

One layer for every message seglog reads this way: the ``__consumer_offsets`` and
``__transaction_state`` records (:mod:`formats.group_coordinator`, :mod:`formats.transaction_log`)
and the KRaft metadata records (:mod:`formats.metadata_records`). A message is a list of fields,
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
"""

from __future__ import annotations

from dataclasses import dataclass
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
    SizeofError,
    StreamError,
    Struct,
    stream_read,
    stream_write,
)

from formats.varint import encode_unsigned

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


class KafkaReadError(StreamError):
    """Bytes a generated Kafka reader refuses; the message is the one Kafka's reader throws."""


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

    def struct(self, version: int) -> Construct:
        return struct_for(self.fields, version, self.is_flexible(version))


# -- readers and writers --------------------------------------------------------------------------

def _remaining(stream) -> int:
    here = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(here)
    return end - here


def read_unsigned_varint(stream, path=None) -> int:
    """``ByteUtils.readUnsignedVarint``: at most 5 bytes, into a Java ``int``."""
    raw = 0
    for shift in (0, 7, 14, 21, 28):
        byte = stream_read(stream, 1, path)[0]
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return java_int(raw)
    raise KafkaReadError("Varint is too long, the most significant bit in the 5th byte is set, "
                         f"converted value: {raw & 0xFFFFFFFF:x}")


def _write_unsigned_varint(value: int, stream, path) -> None:
    data = encode_unsigned(value & 0xFFFFFFFF)
    stream_write(stream, data, len(data), path)


def _read_length(stream, context, path, flexible: bool, classic: Construct) -> int:
    """A length or count: compact (``readUnsignedVarint() - 1`` as Java computes it) or classic."""
    if flexible:
        return java_int(read_unsigned_varint(stream, path) - 1)
    return classic._parsereport(stream, context, path)


def _write_length(obj, stream, context, path, flexible: bool, classic: Construct) -> None:
    size = -1 if obj is None else len(obj)
    if flexible:
        _write_unsigned_varint(size + 1, stream, path)
    else:
        classic._build(size, stream, context, path)


def _null(nullable: bool, name: str):
    if not nullable:
        raise KafkaReadError(f"non-nullable field {name} was serialized as null")
    return None


class _Text(Construct):
    """A length-prefixed string or bytes field; ``None`` for a null length when nullable."""

    def __init__(self, flexible: bool, nullable: bool, is_string: bool, field_name: str):
        super().__init__()
        self.flexible, self.nullable, self.is_string, self.field_name = flexible, nullable, is_string, field_name
        self.classic = Int16sb if is_string else Int32sb

    def _parse(self, stream, context, path):
        size = _read_length(stream, context, path, self.flexible, self.classic)
        if size < 0:
            return _null(self.nullable, self.field_name)
        if self.is_string and size > MAX_STRING_LENGTH:
            raise KafkaReadError(f"string field {self.field_name} had invalid length {size}")
        remaining = _remaining(stream)
        if size > remaining:
            raise KafkaReadError(f"Error reading string of length {size}, only {remaining} bytes available"
                                 if self.is_string else
                                 f"Error reading byte array of {size} byte(s): only {remaining} byte(s) available")
        data = stream_read(stream, size, path)
        return RawString(data) if self.is_string else data

    def _build(self, obj, stream, context, path):
        if isinstance(obj, str):
            obj = obj.encode("utf-8")
        _write_length(obj, stream, context, path, self.flexible, self.classic)
        if obj is not None:
            stream_write(stream, bytes(obj), len(obj), path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError("strings and bytes have no fixed size", path=path)


class _List(Construct):
    """A counted array; ``None`` for a null count when nullable."""

    def __init__(self, subcon: Construct, flexible: bool, nullable: bool, field_name: str):
        super().__init__()
        self.subcon, self.flexible, self.nullable, self.field_name = subcon, flexible, nullable, field_name

    def _parse(self, stream, context, path):
        count = _read_length(stream, context, path, self.flexible, Int32sb)
        if count < 0:
            return _null(self.nullable, self.field_name)
        remaining = _remaining(stream)
        if count > remaining:
            raise KafkaReadError(f"Tried to allocate a collection of size {count}, but there are only "
                                 f"{remaining} bytes remaining.")
        return [self.subcon._parsereport(stream, context, path) for _ in range(count)]

    def _build(self, obj, stream, context, path):
        _write_length(obj, stream, context, path, self.flexible, Int32sb)
        for item in obj or ():
            self.subcon._build(item, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError("arrays have no fixed size", path=path)


class _NullableStruct(Construct):
    """A nullable struct field: an int8 marker (untagged, negative = null) or an unsigned
    varint marker (tagged, 0 or less = null), then the struct."""

    def __init__(self, subcon: Construct, tagged: bool):
        super().__init__()
        self.subcon, self.tagged = subcon, tagged

    def _parse(self, stream, context, path):
        marker = read_unsigned_varint(stream, path) if self.tagged else Int8sb._parsereport(stream, context, path)
        if (marker <= 0) if self.tagged else (marker < 0):
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj, stream, context, path):
        marker = 1 if obj is not None else (0 if self.tagged else -1)
        if self.tagged:
            _write_unsigned_varint(marker, stream, path)
        else:
            Int8sb._build(marker, stream, context, path)
        if obj is not None:
            self.subcon._build(obj, stream, context, path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError("nullable structs have no fixed size", path=path)


class _Uuid(Construct):
    def _parse(self, stream, context, path):
        return RawUuid(stream_read(stream, 16, path))

    def _build(self, obj, stream, context, path):
        stream_write(stream, bytes(obj), 16, path)
        return obj

    def _sizeof(self, context, path):
        return 16


class _TaggedSection(Construct):
    """The tagged fields of one struct version, parsed as the generated reader's ``switch
    (_tag)`` does (see the module doc): a dict name -> value of the known tags present."""

    def __init__(self, known: dict, other_tags: frozenset, version: int):
        super().__init__()
        self.known = known  # tag -> (name, construct)
        self.other_tags = other_tags
        self.version = version

    def _parse(self, stream, context, path):
        found = {}
        for _ in range(read_unsigned_varint(stream, path)):  # a negative count reads nothing
            tag = read_unsigned_varint(stream, path)
            size = read_unsigned_varint(stream, path)
            if tag in self.known:
                name, subcon = self.known[tag]
                found[name] = subcon._parsereport(stream, context, path)
            elif tag in self.other_tags:
                raise KafkaReadError(f"Tag {tag} is not valid for version {self.version}")
            else:
                _skip_unknown(stream, size, path)
        return found

    def _build(self, obj, stream, context, path):
        present = [(tag, name, sub) for tag, (name, sub) in sorted(self.known.items()) if name in (obj or {})]
        _write_unsigned_varint(len(present), stream, path)
        for tag, name, sub in present:
            data = sub.build(obj[name])
            _write_unsigned_varint(tag, stream, path)
            _write_unsigned_varint(len(data), stream, path)
            stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context, path):
        raise SizeofError("tagged fields have no fixed size", path=path)


def _skip_unknown(stream, size: int, path) -> None:
    """``readUnknownTaggedField`` -> ``readArray(size)``: Kafka's message when the size runs
    past the bytes left; a negative size fails ``new byte[size]`` (NegativeArraySizeException,
    whose message is the size)."""
    remaining = _remaining(stream)
    if size > remaining:
        raise KafkaReadError(f"Error reading byte array of {size} byte(s): only {remaining} byte(s) available")
    if size < 0:
        raise KafkaReadError(str(size))
    stream_read(stream, size, path)


# -- declarations to constructs -------------------------------------------------------------------

PRIMITIVES = {
    "int8": Int8sb, "int16": Int16sb, "uint16": Int16ub, "int32": Int32sb, "int64": Int64sb,
    "float64": Float64b, "bool": Flag, "uuid": _Uuid(),
}


def _kind_construct(kind, version: int, flexible: bool, nullable: bool, name: str, tagged: bool = False):
    if isinstance(kind, tuple):
        struct = struct_for(kind, version, flexible)
        return _NullableStruct(struct, tagged) if nullable else struct
    if isinstance(kind, ArrayOf):
        return _List(struct_for(kind.fields, version, flexible), flexible, nullable, name)
    if kind in PRIMITIVES:
        return PRIMITIVES[kind]
    if kind in ("string", "bytes"):
        return _Text(flexible, nullable, kind == "string", name)
    if isinstance(kind, str) and kind.startswith("[]"):  # elements are never nullable
        element = _kind_construct(kind[2:], version, flexible, False, f"{name} element")
        return _List(element, flexible, nullable, name)
    raise ValueError(f"unknown field kind {kind!r}")


@lru_cache(maxsize=None)
def struct_for(fields: tuple, version: int, flexible: bool) -> Construct:
    """The construct Struct of ``fields`` at ``version`` (cached): the untagged fields present
    in that version, in order, then (flexible only) ``tagged_fields``."""
    parts, tagged, other_tags = [], {}, set()
    for spec in fields:
        if not spec.present_in(version):
            if spec.tag is not None:
                other_tags.add(spec.tag)
            continue
        is_tagged = spec.tag is not None
        if is_tagged and not flexible:
            continue
        subcon = _kind_construct(spec.kind, version, flexible, spec.nullable_in(version), spec.name, is_tagged)
        if is_tagged:
            tagged[spec.tag] = (spec.name, subcon)
        else:
            parts.append(spec.name / subcon)
    if flexible:
        parts.append(TAGGED / _TaggedSection(tagged, frozenset(other_tags - set(tagged)), version))
    return Struct(*parts)


__all__ = ["ArrayOf", "Field", "KafkaReadError", "MAX_STRING_LENGTH", "Message", "NO_DEFAULT", "RawString",
           "RawUuid", "TAGGED", "ZERO_UUID", "java_int", "read_unsigned_varint", "struct_for", "versions"]
