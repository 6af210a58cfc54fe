"""The constructs that read and write :mod:`seglog_cli.formats.kafka_message` declarations, as Kafka's
generated readers and writers do (the encoding and the reading rules are in that module's doc).

Apart from the declarations so that holding a message spec does not import construct; a
message's :meth:`~seglog_cli.formats.kafka_message.Message.struct` imports this module.
"""

from __future__ import annotations

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

from seglog_cli.formats.kafka_message import MAX_STRING_LENGTH, TAGGED, ArrayOf, RawString, RawUuid, java_int
from seglog_cli.formats.varint import encode_unsigned


class KafkaReadError(StreamError):
    """Bytes a generated Kafka reader refuses; the message is the one Kafka's reader throws."""


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


__all__ = ["KafkaReadError", "PRIMITIVES", "read_unsigned_varint", "struct_for"]
