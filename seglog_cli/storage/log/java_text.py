"""Java's rules for reading text, as Kafka's own file readers apply them: lines
(``BufferedReader.readLine``), numbers (``Integer.parseInt``/``Long.parseLong``), ``String.split``
and ``String.trim``, ``java.util.Properties.load`` and Kafka's ``Uuid.fromString`` and ``toString``.

The checkpoint files and ``partition.metadata`` (:mod:`~seglog_cli.storage.log.checkpoints`),
``meta.properties`` (:mod:`~seglog_cli.storage.log.log_dir_files`) and a broker's or topic's
``.properties`` files are read through these; bytes become text through
:func:`~seglog_cli.storage.log.text.java_utf8` or, for ``Properties.load(InputStream)``,
ISO-8859-1.
"""

from __future__ import annotations

import base64
import re
import unicodedata

_EOL = re.compile(r"\r\n|\r|\n")  # BufferedReader.readLine terminators
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
_INT_BITS = {32: 1 << 31, 64: 1 << 63}
_ASCII_NUMBER = re.compile(r"[+-]?[0-9]{1,19}")
_JAVA_TRIM = "".join(map(chr, range(33)))  # String.trim(): every char <= U+0020
_BLANKS = " \t\f"  # Properties: whitespace around keys and at the start of a line
_KEY_END = re.compile(r"[=: \t\f]")
_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "f": "\f"}
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")


# ---------------------------------------------------------------------------------------------
# lines, numbers, fields


def java_parse_int(text: str, bits: int = 32) -> int | None:
    """``Integer.parseInt`` (bits=32) / ``Long.parseLong`` (bits=64); None where Java throws."""
    if _ASCII_NUMBER.fullmatch(text):  # the common case, checkpoints of thousands of lines
        value = int(text)
        limit = _INT_BITS[bits]
        return value if -limit <= value < limit else None
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not all(ch.isdecimal() and ch <= "\uffff" for ch in body):
        return None  # Java reads UTF-16 units: a supplementary-plane digit is not a digit
    digits = "".join(str(unicodedata.decimal(ch)) for ch in body).lstrip("0") or "0"
    if len(digits) > 19:
        return None
    value = -int(digits) if text[0] == "-" else int(digits)
    limit = _INT_BITS[bits]
    return value if -limit <= value < limit else None


def java_lines(text: str) -> list[str]:
    """The lines ``BufferedReader.readLine`` returns until it returns null."""
    lines = _EOL.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def java_split(pattern: re.Pattern, text: str) -> list[str]:
    """``String.split(regex)``: a leading empty field is kept, trailing empty fields dropped."""
    parts = pattern.split(text)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_trim(text: str) -> str:
    """``String.trim()``: every character up to U+0020 removed from both ends."""
    return text.strip(_JAVA_TRIM)


# ---------------------------------------------------------------------------------------------
# Uuid


def decode_uuid(text: str) -> bytes:
    """``Uuid.fromString``: base64url (padding optional) of exactly 16 bytes, else ValueError."""
    if len(text) > 24:
        raise ValueError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    body = text[:-2] if text.endswith("==") else text[:-1] if text.endswith("=") else text
    if not _BASE64URL.fullmatch(body) or (body != text and len(text) % 4) or len(body) % 4 == 1:
        raise ValueError(f"Input string `{text}` is not valid base64url")
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    if len(raw) != 16:
        raise ValueError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the "
                         "expected 16 bytes of a base64-encoded UUID")
    return raw


def uuid_text(raw: bytes) -> str:
    """``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


# ---------------------------------------------------------------------------------------------
# java.util.Properties


def parse_java_properties(text: str) -> dict[str, str]:
    """``Properties.load``: comments, ``key=value``/``key:value``/``key value``, escapes, continuations."""
    props = {}
    for line in _logical_lines(text):
        key_end, value_start, escaped = len(line), len(line), False
        for index, ch in enumerate(line):
            if not escaped and _KEY_END.match(ch):
                key_end = index
                value_start = _value_start(line, index)
                break
            escaped = ch == "\\" and not escaped
        props[_unescape(line[:key_end])] = _unescape(line[value_start:])
    return props


def _logical_lines(text: str):
    """``Properties.LineReader``: non-empty logical lines, leading blanks and comments skipped."""
    lines, index = java_lines(text), 0
    while index < len(lines):
        line = lines[index].lstrip(_BLANKS)
        index += 1
        if line[:1] in ("#", "!"):
            continue
        parts, dangling = [], False
        while _ends_in_escape(line):
            parts.append(line[:-1])
            if index >= len(lines):  # a backslash ends the file: Java returns even an empty line,
                line, dangling = "", not text.endswith("\r\n")  # unless \r\n follows it
                break
            line = lines[index].lstrip(_BLANKS)
            index += 1
            if not "".join(parts) and line[:1] in ("#", "!"):  # nothing kept yet: still a new line
                line = ""
                break
        logical = "".join(parts) + line
        if logical or dangling:
            yield logical


def _ends_in_escape(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _value_start(line: str, index: int) -> int:
    """Skip blanks, at most one ``=``/``:`` (if the key did not end at one), and blanks again."""
    separated = line[index] in "=:"
    index += 1
    while index < len(line) and (line[index] in _BLANKS or (not separated and line[index] in "=:")):
        separated = separated or line[index] in "=:"
        index += 1
    return index


def _unescape(text: str) -> str:
    """``Properties.loadConvert``: ``\\uXXXX``, ``\\t \\n \\r \\f``; any other ``\\c`` is ``c``."""
    out, index = [], 0
    while index < len(text):
        ch = text[index]
        index += 1
        if ch == "\\" and index < len(text):
            ch = text[index]
            index += 1
            if ch == "u":
                if not _HEX4.fullmatch(text, index, index + 4):
                    raise ValueError("Malformed \\uxxxx encoding.")
                ch = chr(int(text[index:index + 4], 16))
                index += 4
            else:
                ch = _ESCAPES.get(ch, ch)
        out.append(ch)
    joined = "".join(out)
    return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


__all__ = ["decode_uuid", "java_lines", "java_parse_int", "java_split", "java_trim", "parse_java_properties",
           "uuid_text"]
