"""Plain tables that fit a terminal without ever breaking a cell across lines.

As ``kubectl get`` and ``ls`` do: a table is printed whole when it fits; otherwise the headings
are shortened and the least important columns dropped, one at a time, until it fits. A cell is
never cut or wrapped (a group name, a topic, an offset must stay copyable); when even the
columns that are never dropped do not fit, :func:`fitted_lines` says so (None) and the caller
chooses another layout (:func:`stacked_lines`: one ``HEADING value`` line per cell). The text,
CSV and JSON formats carry every column whatever the width.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

DEFAULT_WIDTH = 80


@dataclass(frozen=True)
class Column:
    key: str
    heading: str
    short: str | None = None  # the heading when narrow
    drop: int = 0  # 0: always kept; otherwise dropped when narrow, the highest rank first


def terminal_width(out=None) -> int:
    """``COLUMNS`` when set (as the shell exports it), else the terminal's width, else 80."""
    text = os.environ.get("COLUMNS", "")
    if text.isdigit() and int(text) > 0:
        return int(text)
    try:
        return os.get_terminal_size(out.fileno()).columns if out is not None else shutil.get_terminal_size().columns
    except (AttributeError, OSError, ValueError):
        return DEFAULT_WIDTH


def cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value) or "-"
    return str(value)


def table_lines(rows: list[dict], columns: list[Column], short: bool = False) -> list[str]:
    """The aligned table (two spaces between columns, numbers right-aligned), one string a line."""
    headings = [(column.short or column.heading) if short else column.heading for column in columns]
    cells = [[cell(row.get(column.key)) for column in columns] for row in rows]
    widths = [max([len(heading)] + [len(line[n]) for line in cells]) for n, heading in enumerate(headings)]
    numeric = [bool(rows) and all(isinstance(row.get(c.key), int) or row.get(c.key) is None for row in rows)
               and any(isinstance(row.get(c.key), int) for row in rows) for c in columns]
    lines = ["  ".join(h.rjust(w) if num else h.ljust(w) for h, w, num in zip(headings, widths, numeric)).rstrip()]
    for line in cells:
        lines.append("  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(line, widths, numeric)).rstrip())
    return lines


def fitted_lines(rows: list[dict], columns: list[Column], width: int) -> list[str] | None:
    """The table within ``width`` characters a line: whole, else with short headings and the
    droppable columns left out from the highest rank down; None when the kept ones do not fit."""
    lines = table_lines(rows, columns)
    if _fits(lines, width):
        return lines
    kept = list(columns)
    for column in sorted((c for c in columns if c.drop), key=lambda c: -c.drop):
        lines = table_lines(rows, kept, short=True)
        if _fits(lines, width):
            return lines
        kept.remove(column)
    lines = table_lines(rows, kept, short=True)
    return lines if _fits(lines, width) else None


def stacked_lines(rows: list[dict], columns: list[Column], title_key: str | None = None) -> list[str]:
    """Each row as ``HEADING  value`` lines (for widths no table fits), rows apart by a blank line."""
    lines: list[str] = []
    shown = [c for c in columns if c.key != title_key]
    pad = max((len(c.heading) for c in shown), default=0)
    for row in rows:
        if lines:
            lines.append("")
        if title_key is not None:
            lines.append(cell(row.get(title_key)))
        lines.extend(f"  {c.heading.ljust(pad)}  {cell(row.get(c.key))}" for c in shown)
    return lines


def _fits(lines: list[str], width: int) -> bool:
    return all(len(line) <= width for line in lines)
