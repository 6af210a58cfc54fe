"""Text decoding exactly as Kafka's Java tools do it.

Kafka turns bytes into text with ``new String(bytes, UTF_8)``, which replaces malformed input
with U+FFFD. Python's ``errors="replace"`` agrees on everything except UTF-8-encoded surrogates
(``ED A0..BF xx``): Java replaces the 3-byte sequence (or its 2-byte prefix) with a single
U+FFFD where Python emits one per byte. The ``java-replace`` error handler closes that gap;
``tests/storage/log/test_text.py`` checks it against a real JVM when one is installed.
"""

from __future__ import annotations

import codecs
import re

ERRORS = "seglog-java-replace"


def _java_replace(exc: UnicodeDecodeError):
    data, start = exc.object, exc.start
    if data[start] == 0xED and start + 1 < len(data) and 0xA0 <= data[start + 1] <= 0xBF:
        if start + 2 < len(data) and 0x80 <= data[start + 2] <= 0xBF:
            return "\ufffd", start + 3
        return "\ufffd", start + 2
    return "\ufffd", exc.end


codecs.register_error(ERRORS, _java_replace)


def camel_case(name: str) -> str:
    """A snake_case field name as Kafka's generated JSON spells it, and every seglog JSON document
    with it: ``leader_epoch`` -> ``leaderEpoch``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def java_utf8(data: bytes) -> str:
    """``new String(data, StandardCharsets.UTF_8)``."""
    return data.decode("utf-8", ERRORS)


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\udc80-\udcff]")


def _escape_one(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte of a name that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` (a file name, a message naming one) safe for a one-line human-readable output:
    control characters (``\\x1b``, ``\\r``, a newline), bidirectional overrides and the bytes of
    a name that is not UTF-8 are written as ``\\xNN``/``\\uNNNN`` escapes, so a name read from
    disk cannot break a line, move the cursor, recolour the terminal or fail the encoder.
    Text without such characters is returned unchanged."""
    return _UNPRINTABLE.sub(_escape_one, text) if _UNPRINTABLE.search(text) else text
