"""Plans shown as they are made: what a writing command prints of each partition or segment is
kept in a scratch file while it plans (not in memory: a log dir holds 10^5 segments), then
written out whole once the plan is complete, so a command that stops half-way prints nothing
half-made.

:class:`Scratch` holds lines; :func:`write_json` writes one JSON document in the layout of
``json.dumps(document, indent=1)`` with one of its lists streamed from a :class:`Scratch` of
JSON items.
"""

from __future__ import annotations

import json
import tempfile
import textwrap
from typing import Iterator, TextIO

IN_MEMORY = 1 << 20  # a scratch file stays in memory up to this many bytes


class Scratch:
    """Lines kept aside, in order (in memory while small, then in an unnamed temporary file)."""

    def __init__(self) -> None:
        self._file = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY, mode="w+b")
        self.count = 0

    def add(self, line: str) -> None:
        """One line (no newline in it: JSON strings escape theirs)."""
        self._file.write(line.encode("utf-8", "surrogateescape") + b"\n")
        self.count += 1

    def add_text(self, text: str) -> None:
        """Lines already ended by newlines (a renderer's output)."""
        self._file.write(text.encode("utf-8", "surrogateescape"))
        self.count += text.count("\n")

    def lines(self) -> Iterator[str]:
        self._file.seek(0)
        for raw in self._file:
            yield raw[:-1].decode("utf-8", "surrogateescape")

    def close(self) -> None:
        self._file.close()


def json_item(value, default=None) -> str:
    """A list item of :func:`write_json`: ``value`` as ``json.dumps(value, indent=1)`` on one
    line (its newlines escaped as they are inside a JSON string: ``\\n``)."""
    return json.dumps(json.dumps(value, indent=1, default=default))


def write_json(document: dict, key: str, items: Scratch, out: TextIO, replace: dict[str, str] | None = None) -> None:
    """``json.dumps(document, indent=1)`` with ``document[key]`` the list of :func:`json_item`
    values in ``items``, written without holding the list. ``replace``: JSON texts put in place
    of others in each item (a value known only once every item was made)."""
    marker = "\x00seglog-stream\x00"
    text = json.dumps(dict(document, **{key: marker}), indent=1)
    head, tail = text.split(json.dumps(marker), 1)
    out.write(head)
    if not items.count:
        out.write("[]")
    else:
        out.write("[\n")
        for index, line in enumerate(items.lines()):
            item = json.loads(line)
            for old, new in (replace or {}).items():
                item = item.replace(old, new)
            out.write(("" if index == 0 else ",\n") + "\n".join("  " + piece for piece in item.split("\n")))
        out.write("\n ]")
    out.write(tail + "\n")


def terminal_width(out: TextIO) -> int | None:
    """The width to wrap plan lines to: the terminal's when ``out`` is one (``$COLUMNS`` first),
    else None: piped, every line stays whole for scripts."""
    from seglog_cli.render import fit

    try:
        terminal = out.isatty()
    except (AttributeError, ValueError):
        terminal = False
    return fit.terminal_width(out) if terminal else None


def write_line(out: TextIO, text: str, width: int | None) -> None:
    """``text`` as one line, or wrapped to ``width`` between words, the continuation lines
    indented under it: a file name, an offset or a path is one word and never cut (one longer
    than the width stays whole on a line of its own)."""
    if width is None or len(text) <= width:
        out.write(text + "\n")
        return
    indent = text[:len(text) - len(text.lstrip(" "))]
    pieces = textwrap.wrap(text, max(width, 1), break_long_words=False, break_on_hyphens=False,
                           subsequent_indent=indent + "    ")
    out.write("\n".join(pieces) + "\n")
