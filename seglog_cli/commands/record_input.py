"""Records for ``seglog append``: from ``--value`` options, text lines or JSON Lines (the
shape ``seglog dump --format jsonl`` writes, read by the engine's
:func:`~seglog_cli.storage.serde.jsonl_records.read_json_records`), with keys, values and header
values decoded per ``--payload-encoding`` (a JSON Lines record naming its own ``encoding`` is
decoded as it says). A bad line is a usage error naming its line number."""

from __future__ import annotations

import sys
from typing import Iterator

from seglog_cli.commands.options import parse_timestamp
from seglog_cli.status import UsageError
from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.serde.jsonl_records import DECODERS, JsonLinesError, decode_payload, read_json_records
from seglog_cli.storage.write.builder import NewRecord

_utf8 = DECODERS["utf8"]  # argv's undecodable bytes come back as they were (surrogateescape)
_ENCODING_NAMES = {decode: name for name, decode in DECODERS.items()}


class InputLineError(UsageError):
    """A record that cannot be read from the input (usage error naming the line)."""


def _decoded(decode, text, what: str, where: str) -> bytes | None:
    try:
        return decode_payload(text, _ENCODING_NAMES[decode], what)
    except ValueError as exc:
        raise InputLineError(f"{where}: {exc}") from None


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
    try:
        if input_format == "jsonl":
            yield from _jsonl_records(lines, name, decode, timestamp)
        else:
            separator = None if key_separator is None else key_separator.encode("utf-8", "surrogateescape")
            yield from _line_records(lines, path, name, decode, separator, timestamp)
    finally:
        if lines is not sys.stdin.buffer:
            lines.close()


def _line_records(lines, path: str, name: str, decode, separator: bytes | None, timestamp) -> Iterator[NewRecord]:
    from seglog_cli.storage.serde.jsonl_records import numbered_lines

    for number, line in numbered_lines(lines, path):
        yield _line_record(line, f"{name} line {number}", decode, separator, timestamp)


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


def _jsonl_records(lines, name: str, decode, timestamp) -> Iterator[NewRecord]:
    """The data records (control records skipped); records without a timestamp get ``timestamp``."""
    try:
        for record in read_json_records(lines, default_encoding=_ENCODING_NAMES[decode], name=name,
                                        parse_time=_json_timestamp):
            if not record.is_control:
                stamp = timestamp if record.timestamp is None else record.timestamp
                yield NewRecord(record.key, record.value, record.headers, stamp)
    except JsonLinesError as exc:
        raise InputLineError(str(exc)) from None


def _json_timestamp(text: str) -> int:
    """A JSON ``timestamp`` given as text: epoch ms or ISO-8601, as --timestamp takes it."""
    try:
        return parse_timestamp(text, "timestamp")
    except UsageError as exc:
        raise ValueError(str(exc)) from None


__all__ = ["DECODERS", "InputLineError", "read_input", "value_records"]
