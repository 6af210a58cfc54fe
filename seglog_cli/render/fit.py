"""Tables that fit the terminal without breaking a token.

A file name, an offset, a position or a timestamp split over two lines cannot be copied into
the next command, so a cell is never cut. When the columns do not fit the width, the table
does what ``ls -l`` and ``kubectl get`` do: it first shortens the columns that have a short
form (a path to its last two parts), then drops the least needed columns, and at last moves
the one free-text column (a message, a reason) under its row, wrapped between words. Only a
single word longer than the whole width (a path in a message) may run past the edge, whole.

Text and JSON output always carry everything; this is only for people at a terminal.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from dataclasses import dataclass
from typing import Callable, Sequence

GAP = "  "
MIN_WRAP = 32  # a free-text column narrower than this goes under its row
DETAIL_INDENT = "    "
_GLUE = "\x00"  # holds a label to its value while wrapping

_STYLES = {"red": "31", "bold red": "1;31", "yellow": "33", "green": "32", "bold green": "1;32", "dim": "2",
           "bold": "1"}


@dataclass(frozen=True)
class Column:
    """``drop``: 0 never dropped, larger numbers dropped first; a dropped column with a ``label``
    moves under its row as ``label value`` instead of going away. ``wrap``: the free-text column
    (at most one, the last). ``short``: a shorter form of a cell, tried before anything else."""

    heading: str
    right: bool = False
    drop: int = 0
    wrap: bool = False
    short: Callable[[str], str] | None = None
    label: str | None = None


@dataclass(frozen=True)
class Cell:
    text: str
    style: str | None = None


def terminal_width(stream=None) -> int:
    """The width to lay out for: ``$COLUMNS`` when set, the terminal's, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = stream or sys.stdout
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return shutil.get_terminal_size((80, 24)).columns


def use_color(stream) -> bool:
    """ANSI colours on a terminal, unless ``NO_COLOR`` is set (https://no-color.org)."""
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# what a cell's text is shown as: a command reading object-store URLs through a local view sets
# the view's mapping back to the URL here (commands.remote_inputs), so columns are laid out for
# the text the user sees, not for the view's temporary paths
DISPLAY: list[Callable[[str], str]] = []


def shown(text: str) -> str:
    """``text`` as the user sees it (:data:`DISPLAY`'s mapping, when one is set)."""
    return DISPLAY[-1](text) if DISPLAY else text


def _cell(value) -> Cell:
    if isinstance(value, Cell):
        return Cell(shown(value.text), value.style) if DISPLAY else value
    return Cell("" if value is None else shown(str(value)))


@dataclass
class Layout:
    kept: list[int]           # columns shown on the row's line, in order
    shortened: set[int]
    widths: dict[int, int]
    under: list[int]          # columns shown under the row (labelled ones, then the free text)


def layout(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int) -> Layout:
    """Shorten, then move the free text under its row, then drop (or move under, when labelled)
    the least needed columns, until the row's line fits ``width``."""
    wrap = next((i for i, c in enumerate(columns) if c.wrap), None)
    plan = Layout(list(range(len(columns))), set(), {}, [])

    def measure() -> bool:
        plan.widths = {i: max([len(columns[i].heading)] + [len(_text(columns, plan, i, row[i])) for row in rows])
                       for i in plan.kept}
        fixed = [plan.widths[i] for i in plan.kept if i != wrap]
        used = sum(fixed) + len(GAP) * max(0, len(fixed) - 1)
        if wrap not in plan.kept:
            return used <= width
        room = width - used - len(GAP)
        longest = max((len(word) for row in rows for word in row[wrap].text.split()), default=0)
        if room < min(plan.widths[wrap], max(MIN_WRAP, longest)):
            return False
        plan.widths[wrap] = min(plan.widths[wrap], room)
        return True

    order = sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop)
    if measure():
        return plan
    for i in order:
        if columns[i].short is not None:
            plan.shortened.add(i)
            if measure():
                return plan
    if wrap is not None:
        plan.kept.remove(wrap)
        if measure():
            plan.under.append(wrap)
            return plan
    for i in order:
        if i == wrap:
            continue
        plan.kept.remove(i)
        if columns[i].label is not None:
            plan.under.append(i)
        if measure():
            break
    if wrap is not None:
        plan.under.append(wrap)
    plan.under.sort(key=lambda i: (i == wrap, i))
    return plan


def _text(columns: Sequence[Column], plan: Layout, i: int, cell: Cell) -> str:
    return columns[i].short(cell.text) if i in plan.shortened else cell.text


def render(columns: Sequence[Column], rows: Sequence[Sequence], width: int, color: bool = False,
           title: str | None = None) -> list[str]:
    """The table as lines (no trailing spaces), laid out for ``width`` columns."""
    if any(c.wrap for c in columns[:-1]):
        raise ValueError("only the last column may wrap")
    cells = [[_cell(value) for value in row] for row in rows]
    plan = layout(columns, cells, width)
    w = plan.widths
    wrap = len(columns) - 1 if columns and columns[-1].wrap else None
    lines = [title] if title else []

    def paint(text: str, style: str | None) -> str:
        return _paint(text, style, color)

    def line(values: list[tuple[int, str, str | None]]) -> str:
        parts = []
        for i, value, style in values:
            pad = " " * (w[i] - len(value))
            parts.append(pad + paint(value, style) if columns[i].right else paint(value, style) + pad)
        return GAP.join(parts).rstrip()

    def words(text: str, room: int) -> list[str]:
        return textwrap.wrap(text, max(room, 1), break_long_words=False, break_on_hyphens=False) or [""]

    lines.append(line([(i, columns[i].heading, "bold") for i in plan.kept]))
    for row in cells:
        values = [(i, _text(columns, plan, i, row[i]), row[i].style) for i in plan.kept]
        if wrap in plan.kept:
            pieces = words(row[wrap].text, w[wrap])
            values[-1] = (wrap, pieces[0], row[wrap].style)
            lines.append(line(values))
            blank = [(i, "", None) for i in plan.kept[:-1]]
            lines.extend(line(blank + [(wrap, piece, row[wrap].style)]) for piece in pieces[1:])
            continue
        lines.append(line(values))
        # two spaces apart, no punctuation glued to a value (a path copied from here stays a path);
        # a label stays on the line of its value where both fit
        room = width - len(DETAIL_INDENT)
        parts = []
        for i in plan.under:
            if i != wrap and row[i].text:
                value = _text(columns, plan, i, row[i])
                joiner = _GLUE if len(columns[i].label) + 1 + len(value) <= room else " "
                parts.append(f"{columns[i].label}{joiner}{value}")
        if wrap in plan.under and row[wrap].text:
            parts.append(row[wrap].text)
        under = GAP.join(parts)
        if under:
            style = row[wrap].style if wrap is not None else None
            for piece in words(under, room):
                piece = piece.replace(_GLUE, " ")
                # a word too long for the indented line starts at the edge rather than wrap there
                indent = DETAIL_INDENT if len(DETAIL_INDENT) + len(piece) <= width else ""
                lines.append(indent + paint(piece, style))
    return lines


def paragraph(text: str, width: int, style: str | None = None, color: bool = False) -> list[str]:
    """Free text wrapped between words (a word longer than the width stays whole); continuation
    lines keep the text's own indentation."""
    indent = text[:len(text) - len(text.lstrip(" "))]
    pieces = textwrap.wrap(text, max(width, 1), break_long_words=False, break_on_hyphens=False,
                           subsequent_indent=indent + "  " if indent else "") or [""]
    return [_paint(piece, style, color) for piece in pieces]


def _paint(text: str, style: str | None, color: bool) -> str:
    if not color or not style or style not in _STYLES:
        return text
    return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 partition``, ``2 partitions`` (``plural`` where adding an s is wrong)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def short_path(path: str) -> str:
    """``<partition dir>/<file>``: the last two parts of a path."""
    parts = [p for p in path.split("/") if p]
    return "/".join(parts[-2:]) if len(parts) > 2 else path
