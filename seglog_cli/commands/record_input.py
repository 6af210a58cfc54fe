"""Records for ``seglog append``: from ``--value`` options, text lines or JSON Lines (the
shape ``seglog dump --format jsonl`` writes), with keys, values and header values decoded per
``--payload-encoding``. A bad line is a usage error naming its line number."""

from __future__ import annotations

import base64
import binascii
import json
import sys
from typing import Iterator

from seglog_cli.commands.options import parse_timestamp
from seglog_cli.status import UsageError
from seglog_cli.storage.write.builder import NewRecord
from seglog_cli.storage.log.errors import UnreadableInputError


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")  # argv's undecodable bytes come back as they were


def _hex(text: str) -> bytes:
    return bytes.fromhex(text)


def _base64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


DECODERS = {"utf8": _utf8, "hex": _hex, "base64": _base64}
_ENCODING_NAMES = {decode: name for name, decode in DECODERS.items()}


class InputLineError(UsageError):
    """A record that cannot be read from the input (usage error naming the line)."""


def _decoded(decode, text, what: str, where: str) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise InputLineError(f"{where}: {what} must be a string or null, not {type(text).__name__}")
    try:
        return decode(text)
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise InputLineError(f"{where}: {what} is not valid {_ENCODING_NAMES[decode]} ({exc})") from None


def value_records(values, key, header, decode, timestamp) -> Iterator[NewRecord]:
    where = "command line"
    key_bytes = _decoded(decode, key, "--key", where)
    headers = []
    for pair in header or ():
        name, sep, text = pair.partition("=")
        headers.append((_utf8(name), _decoded(decode, text, f"--header {name}", where) if sep else None))
    for text in values:
        yield NewRecord(key_bytes, _decoded(decode, text, "--value", where), tuple(headers), timestamp)


# -- input files ------------------------------------------------------------------------------------

def read_input(path: str, input_format: str, decode, key_separator: str | None,
               timestamp: int | None) -> Iterator[NewRecord]:
    """The records of ``path`` (``-``: stdin), one per line; errors name the line."""
    name = "stdin" if path == "-" else path
    if path == "-":
        lines = sys.stdin.buffer
    else:
        try:
            lines = open(path, "rb")
        except OSError as exc:
            raise UnreadableInputError(f"cannot read the input: {exc.strerror}", path) from None
    reader = _jsonl_record if input_format == "jsonl" else _line_record
    separator = None if key_separator is None else key_separator.encode("utf-8", "surrogateescape")
    try:
        number = 0
        while True:
            try:
                line = lines.readline()
            except OSError as exc:
                raise UnreadableInputError(f"cannot read the input: {exc.strerror}", path) from None
            if not line:
                return
            number += 1
            record = reader(line, f"{name} line {number}", decode, separator, timestamp)
            if record is not None:
                yield record
    finally:
        if lines is not sys.stdin.buffer:
            lines.close()


def _line_record(line: bytes, where: str, decode, separator: bytes | None, timestamp) -> NewRecord:
    """kafka-console-producer's line reader: the line without its end, split at the first SEP."""
    line = line[:-2] if line.endswith(b"\r\n") else line[:-1] if line.endswith(b"\n") else line
    key = None
    if separator is not None:
        key, found, line = line.partition(separator)
        if not found:
            raise InputLineError(f"{where}: no key separator {separator.decode('utf-8', 'replace')!r} found")
    if decode is not _utf8:
        key = _decoded(decode, _ascii(key, where), "the key", where)
        line = _decoded(decode, _ascii(line, where), "the value", where)
    return NewRecord(key, line, (), timestamp)


def _ascii(data: bytes | None, where: str) -> str | None:
    try:
        return None if data is None else data.decode("ascii")
    except UnicodeDecodeError:
        raise InputLineError(f"{where}: not ASCII text, as hex or base64 must be") from None


_JSON = json.JSONDecoder()


def _jsonl_record(line: bytes, where: str, decode, _separator, timestamp) -> NewRecord | None:
    if not line.strip():
        return None
    try:
        obj = _JSON.decode(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputLineError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise InputLineError(f"{where}: a JSON object was expected, not {type(obj).__name__}")
    if obj.get("type", "record") != "record" or obj.get("isControl") is True:
        return None  # seglog dump's file/batch lines, and transaction markers
    stamp = obj.get("timestamp")
    if stamp is None:
        stamp = timestamp
    elif isinstance(stamp, str):
        stamp = parse_timestamp(stamp, f"{where}: timestamp")
    elif isinstance(stamp, bool) or not isinstance(stamp, int):
        raise InputLineError(f"{where}: timestamp must be epoch milliseconds, not {stamp!r}")
    return NewRecord(_decoded(decode, obj.get("key"), "key", where), _decoded(decode, obj.get("value"), "value", where),
                     _headers(obj.get("headers"), decode, where), stamp)


def _headers(headers, decode, where: str) -> tuple:
    if headers is None:
        return ()
    if isinstance(headers, dict):
        pairs = list(headers.items())
    elif isinstance(headers, list) and all(isinstance(h, dict) and "key" in h for h in headers):
        pairs = [(h["key"], h.get("value")) for h in headers]
    else:
        raise InputLineError(f"{where}: headers must be a list of {{\"key\", \"value\"}} objects or an object")
    out = []
    for name, text in pairs:
        if not isinstance(name, str):
            raise InputLineError(f"{where}: a header key must be a string")
        try:
            name_bytes = name.encode("utf-8")
        except UnicodeError:
            raise InputLineError(f"{where}: header key {name!r} is not valid Unicode") from None
        out.append((name_bytes, _decoded(decode, text, f"header {name!r}", where)))
    return tuple(out)


__all__ = ["DECODERS", "InputLineError", "read_input", "value_records"]
