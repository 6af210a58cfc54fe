"""Jackson's compact JSON text: the one writer behind every Kafka JSON line seglog prints.

Kafka's tools print a generated ``*JsonConverter``'s tree with ``JsonNode.toString()``
(Jackson 2's defaults), and seglog's three decoders (``--offsets-decoder`` /
``--transaction-log-decoder``, ``--cluster-metadata-decoder``, the KRaft control records of
every dump) print through :func:`jackson_text`. Its rules:

    objects, arrays   no whitespace; members in the order given
    strings           ``"`` and ``\\`` escaped; ``\\b \\t \\n \\f \\r`` as those short escapes;
                      the other control characters U+0000-U+001F as ``\\u00XX`` in UPPER-case
                      hex; everything else (U+007F, non-ASCII) written as it is
    integers          decimal digits (``IntNode``/``LongNode``)
    doubles           Java's ``Double.toString`` (``1.0E7``, ``0.001``, ``-0.0``); NaN and the
                      infinities as the quoted strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``
                      (``QUOTE_NON_NUMERIC_NUMBERS``)
    bytes             standard base64 with padding (``BinaryNode``)
    None, True, False ``null``, ``true``, ``false``

Python's C encoder writes the same text for everything except control characters (it writes
``\\u001f``) and doubles (``repr``), so a caller whose tree holds no double may pass
``floats=False`` to take it; its text is kept unless it escaped a control character.
"""

from __future__ import annotations

import base64
import json
import math
from functools import lru_cache

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPES = {chr(code): _SHORT_ESCAPES.get(chr(code), f"\\u{code:04X}") for code in range(0x20)}
_ESCAPES.update(_SHORT_ESCAPES)
_ESCAPE_TABLE = str.maketrans(_ESCAPES)


def _base64(data) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _binary_default(value):
    if isinstance(value, (bytes, bytearray)):
        return _base64(value)
    raise TypeError(f"{type(value).__name__} is not JSON data")


def _c_encoder():
    """Python's C encoder, made once: compact, non-ASCII as it is, no NaN, bytes in base64, no
    circular-reference check (decoded trees have none). ``JSONEncoder.encode`` would build it
    again for every call, which costs more than encoding a small record."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # a Python without the _json accelerator
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                                default=_binary_default).encode
    chunks = make(None, _binary_default, json.encoder.encode_basestring, None, ":", ",", False, False, False)
    join = "".join
    return lambda value: join(chunks(value, 0))


_c_encode = _c_encoder()


def jackson_text(value, floats: bool = True) -> str:
    """``JsonNode.toString()`` of a tree of dicts (str keys), lists, str, int, float, bytes,
    bool and None. ``floats=False`` promises the tree holds no float (see the module doc)."""
    if not floats:
        text = _c_encode(value)
        if "\\u" not in text:
            return text
    return _write(value)


def _write(value) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return '"' + value.translate(_ESCAPE_TABLE) + '"'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = java_double(value)
        return text if math.isfinite(value) else f'"{text}"'
    if isinstance(value, (bytes, bytearray)):
        return f'"{_base64(value)}"'
    if isinstance(value, dict):
        return "{" + ",".join(f"{_write(name)}:{_write(item)}" for name, item in value.items()) + "}"
    return "[" + ",".join(_write(item) for item in value) + "]"


def java_double(value: float) -> str:
    """``Double.toString``: the shortest digits, plain between 1e-3 and 1e7, else ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    if 1e-3 <= abs(value) < 1e7:
        point = exponent + 1  # digits before the decimal point
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, fraction = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{fraction or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip significant digits of a positive double, and the decimal exponent
    of the first digit (Python's ``repr`` digits, as Java 19+'s ``Double.toString`` picks).
    Java prints at least two digits, and when one would do it takes the two-digit decimal
    nearest the exact value if that one reads back as the same double (``Double.MIN_VALUE``
    is ``4.9E-324``, not ``5.0E-324``)."""
    from decimal import Decimal  # doubles only (metadata records): most commands print none

    _, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits))
    first = len(text) - 1 + exponent
    digits_text, first = text.lstrip("0").rstrip("0") or "0", first - (len(text) - len(text.lstrip("0")))
    if len(digits_text) == 1:
        return _nearest_two_digits(value, int(digits_text), first)
    return digits_text, first


def _nearest_two_digits(value: float, digit: int, first: int) -> tuple[str, int]:
    """Java's choice among the decimals of one or two digits that read back as ``value``: the
    one nearest its exact value (an even last digit on a tie)."""
    from decimal import ROUND_HALF_EVEN, Decimal, localcontext

    with localcontext() as context:
        context.prec = 1100  # enough for the exact value of any double
        exact = Decimal(value)
        candidates = [(digit * 10, first)]
        for lead in (first, first - 1):
            scale = Decimal(1).scaleb(lead - 1)
            nearest = int((exact / scale).to_integral_value(rounding=ROUND_HALF_EVEN))
            if 10 <= nearest <= 99 and float(Decimal(nearest) * scale) == value:
                candidates.append((nearest, lead))
        best, lead = min(candidates, key=lambda c: (abs(Decimal(c[0]).scaleb(c[1] - 1) - exact), c[0] % 2))
    return str(best).rstrip("0") or "0", lead


@lru_cache(maxsize=None)
def declares_floats(fields: tuple) -> bool:
    """Whether message declarations (:mod:`seglog_cli.formats.kafka_message` fields) have a ``float64``
    anywhere, nested structs included: when not, their JSON tree holds no float."""
    from seglog_cli.formats.kafka_message import ArrayOf  # imported already by whoever holds the declarations

    for spec in fields:
        kind = spec.kind
        if isinstance(kind, ArrayOf):
            kind = kind.fields
        if isinstance(kind, tuple):
            if declares_floats(kind):
                return True
        elif kind in ("float64", "[]float64"):
            return True
    return False


__all__ = ["declares_floats", "jackson_text", "java_double"]
