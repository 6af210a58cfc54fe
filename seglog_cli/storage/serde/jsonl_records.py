"""Records read back from JSON Lines: the one reader of ``seglog append --input-format jsonl``
and of ``seglog replay``.

A record line, as ``seglog dump --format jsonl`` and ``seglog diff --export-lost`` write it
(schema version 1, the JSON Lines table of docs/commands/dump.md); the fields this reader takes::

    type              "record" (absent: a record; any other type is skipped)
    topic             string or null
    partition         int or null
    offset            int or null
    timestamp         int, epoch ms, or null
    timestampType     int: 0 CreateTime, 1 LogAppendTime, -1 none; or null
    key, value        text in ``encoding``, or null
    headers           [{"key": text, "value": text in encoding or null}, ...], or {key: value}
    encoding          "utf8" | "hex" | "base64": how key, value and header values are written
    lossy             true when the JSON is not an exact image of the bytes (absent otherwise)
    isControl         bool, absent or null: false (control records are kept, flagged, for the caller)
    isTransactional   bool, absent or null: false
    producerId        int or null
    compression       string (none, gzip, snappy, lz4, zstd) or null
    controlType       string (COMMIT, ABORT, ...) on control records

Header keys are text in every encoding (UTF-8 bytes once read). Any other field is ignored.

Encodings: a record's own ``encoding`` is used; a line without one (written by a seglog older
than the field, or by another tool) takes ``default_encoding`` (the caller's
``--payload-encoding``), and with no default it is refused. **A record's declaration wins over
the default**: a file mixing encodings, or given a default that disagrees, is read as it
says it was written. ``utf8`` text goes back to bytes with ``surrogateescape`` (lone
``\\udc80``-``\\udcff`` become the bytes they stand for, as Python writes undecodable bytes).

Exactness (``exact=True``, replay's byte-for-byte promise): a record marked ``"lossy": true``
(dumped with ``--payload-encoding utf8`` from bytes that are not UTF-8, or with a header key
that is not UTF-8) is refused, and so is a record without ``encoding`` whose text holds U+FFFD
where utf8 was assumed (key, value, header values) or in a header key: it may have been lossy.

Errors (bad JSON, a wrong type, bad base64 or hex, a refused record) are one
:class:`JsonLinesError` each: ``FILE line N: what is wrong``. Lines are read one at a time, so
memory stays flat on a file of any size.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator

from seglog_cli.storage.log.errors import UnreadableInputError


@dataclass(frozen=True, slots=True)
class JsonRecord:
    topic: str | None
    partition: int | None
    offset: int | None
    timestamp: int | None
    timestamp_type: int | None  # 0 CreateTime, 1 LogAppendTime (the JSON's timestampType)
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[bytes, bytes | None], ...]
    is_control: bool
    is_transactional: bool
    producer_id: int | None
    compression: str | None
    line: int  # 1-based line number in the file
    control_type: str | None = None  # control records: COMMIT, ABORT, ... (the JSON's controlType)


class JsonLinesError(UnreadableInputError):
    """A JSON Lines line that cannot be read as a record, or not exactly: ``FILE line N: ...``
    (an unreadable input: exit status 4 where it is not turned into a usage error)."""

    def __init__(self, name: str, line: int, problem: str):
        super().__init__(f"{name} line {line}: {problem}")
        self.name, self.line, self.problem = name, line, problem


# -- payload text -> bytes: the one implementation (append's --value/--key/--header use it too) --------

def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _hex(text: str) -> bytes:
    return bytes.fromhex(text)


def _base64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


DECODERS: dict[str, Callable[[str], bytes]] = {"utf8": _utf8, "hex": _hex, "base64": _base64}


def decode_payload(text, encoding: str, what: str) -> bytes | None:
    """``text`` (a key, value or header value) as bytes; ``ValueError`` naming ``what`` when it
    is not a string or null, or not valid in ``encoding``."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a string or null, not {type(text).__name__}")
    try:
        return DECODERS[encoding](text)
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise ValueError(f"{what} is not valid {encoding} ({exc})") from None


# -- the reader ----------------------------------------------------------------------------------------

LOSSY = ("the record is lossy (its JSON is not an exact image of its bytes): written with --payload-encoding "
         "utf8 from bytes that are not UTF-8; re-export it with --payload-encoding base64 (a header key that is not "
         "UTF-8 is lossy in every encoding: read such records from the log dir itself)")
MAYBE_LOSSY = ("the record has no encoding and its text holds U+FFFD: it may have been written from bytes "
               "that are not UTF-8; re-export it with --payload-encoding base64")
NO_ENCODING = "no encoding: written by an older seglog or another tool; give --payload-encoding"

_JSON = json.JSONDecoder()


def read_json_records(path_or_binary_file, *, default_encoding: str | None = None, exact: bool = False,
                      name: str | None = None, parse_time: Callable[[str], int] | None = None
                      ) -> Iterator[JsonRecord]:
    """The records of a JSON Lines file (a path, or a binary file object left open), in file
    order, one line at a time. Blank lines and lines whose ``type`` is not ``record`` are
    skipped; control records are yielded with ``is_control``. ``name`` labels errors (default:
    the path, or the file object's name). A timestamp given as a string is refused unless
    ``parse_time`` turns it into epoch ms (it raises ``ValueError`` on bad text)."""
    if default_encoding is not None and default_encoding not in DECODERS:
        raise ValueError(f"default_encoding is utf8, hex or base64, not {default_encoding!r}")
    if isinstance(path_or_binary_file, (str, os.PathLike)):
        path = os.fspath(path_or_binary_file)
        name = path if name is None else name
        try:
            handle = open(path, "rb")
        except OSError as exc:
            raise UnreadableInputError(f"cannot read the input: {exc.strerror}", path) from None
        with handle:
            yield from _records(handle, name, default_encoding, exact, parse_time)
    else:
        name = str(getattr(path_or_binary_file, "name", "input")) if name is None else name
        yield from _records(path_or_binary_file, name, default_encoding, exact, parse_time)


def numbered_lines(handle: BinaryIO, name: str) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of a binary stream, read lazily; a read error names ``name``."""
    number = 0
    while True:
        try:
            line = handle.readline()
        except OSError as exc:
            raise UnreadableInputError(f"cannot read the input: {exc.strerror}", name) from None
        if not line:
            return
        number += 1
        yield number, line


def _records(handle: BinaryIO, name: str, default_encoding, exact: bool, parse_time) -> Iterator[JsonRecord]:
    for number, line in numbered_lines(handle, name):
        if not line.strip():
            continue
        try:
            record = _record(_object(line), number, default_encoding, exact, parse_time)
        except ValueError as exc:
            raise JsonLinesError(name, number, str(exc)) from None
        if record is not None:
            yield record


def _object(line: bytes) -> dict:
    try:
        obj = _JSON.decode(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"a JSON object was expected, not {type(obj).__name__}")
    return obj


def _record(obj: dict, number: int, default_encoding, exact: bool, parse_time) -> JsonRecord | None:
    """One line's record (``ValueError`` for whatever is wrong with it), or None: not a record."""
    if obj.get("type", "record") != "record":
        return None
    encoding = obj.get("encoding")
    if encoding is None:
        encoding = default_encoding
        if encoding is None:
            raise ValueError(NO_ENCODING)
        declared = False
    elif not isinstance(encoding, str) or encoding not in DECODERS:
        raise ValueError(f"encoding must be utf8, hex or base64, not {encoding!r}")
    else:
        declared = True
    if exact and obj.get("lossy") is True:
        raise ValueError(LOSSY)
    key_text, value_text = obj.get("key"), obj.get("value")
    pairs = _header_pairs(obj.get("headers"))
    if exact and not declared and _maybe_lossy(encoding, key_text, value_text, pairs):
        raise ValueError(MAYBE_LOSSY)
    return JsonRecord(
        topic=_typed(obj, "topic", str), partition=_typed(obj, "partition", int), offset=_typed(obj, "offset", int),
        timestamp=_timestamp(obj.get("timestamp"), parse_time), timestamp_type=_typed(obj, "timestampType", int),
        key=decode_payload(key_text, encoding, "key"), value=decode_payload(value_text, encoding, "value"),
        headers=tuple((_header_key(k), decode_payload(v, encoding, f"header {k!r}")) for k, v in pairs),
        is_control=_flag(obj, "isControl"), is_transactional=_flag(obj, "isTransactional"),
        producer_id=_typed(obj, "producerId", int), compression=_typed(obj, "compression", str),
        line=number, control_type=_typed(obj, "controlType", str))


def _header_pairs(headers) -> list:
    if headers is None:
        return []
    if isinstance(headers, dict):
        return list(headers.items())
    if isinstance(headers, list) and all(isinstance(h, dict) and "key" in h for h in headers):
        return [(h["key"], h.get("value")) for h in headers]
    raise ValueError("headers must be a list of {\"key\", \"value\"} objects or an object")


def _header_key(name) -> bytes:
    if not isinstance(name, str):
        raise ValueError("a header key must be a string")
    try:
        return name.encode("utf-8")
    except UnicodeError:
        raise ValueError(f"header key {name!r} is not valid Unicode") from None


def _maybe_lossy(encoding: str, key, value, pairs) -> bool:
    """U+FFFD where a lossy export would have put it: header keys (always text), and key, value
    and header values read as utf8."""
    texts = [k for k, _v in pairs]
    if encoding == "utf8":
        texts += [key, value] + [v for _k, v in pairs]
    return any(isinstance(text, str) and "\ufffd" in text for text in texts)


def _timestamp(stamp, parse_time) -> int | None:
    if stamp is None or type(stamp) is int:
        return stamp
    if isinstance(stamp, str) and parse_time is not None:
        return parse_time(stamp)
    raise ValueError(f"timestamp must be epoch milliseconds, not {stamp!r}")


def _typed(obj: dict, field: str, kind: type):
    value = obj.get(field)
    if value is None or (type(value) is kind):  # type(): a bool is no int here
        return value
    raise ValueError(f"{field} must be {'an int' if kind is int else 'a string'} or null, not {value!r}")


def _flag(obj: dict, field: str) -> bool:
    value = obj.get(field)
    if value is None:
        return False
    if type(value) is not bool:
        raise ValueError(f"{field} must be true or false, not {value!r}")
    return value


__all__ = ["DECODERS", "JsonLinesError", "JsonRecord", "decode_payload", "read_json_records"]
