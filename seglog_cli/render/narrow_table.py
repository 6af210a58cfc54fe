"""Plain tables that fit a terminal by dropping columns, never breaking a cell across lines
(``seglog offsets``: one row per group and partition, where moving cells under the row as
:mod:`seglog_cli.render.fit` does would double the lines of a long listing).

As ``kubectl get`` and ``ls`` do: a table is printed whole when it fits; otherwise the headings
are shortened and the least important columns dropped, one at a time, until it fits. A cell is
never cut or wrapped (a group name, a topic, an offset must stay copyable); when even the
columns that are never dropped do not fit, :func:`fitted_lines` says so (None) and the caller
chooses another layout (:func:`stacked_lines`: one ``HEADING value`` line per cell). The text,
CSV and JSON formats carry every column whatever the width.
"""

from __future__ import annotations

from dataclasses import dataclass

from seglog_cli.render.fit import shown


@dataclass(frozen=True)
class Column:
    key: str
    heading: str
    short: str | None = None  # the heading when narrow
    drop: int = 0  # 0: always kept; otherwise dropped when narrow, the highest rank first


def cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return shown(",".join(str(item) for item in value)) or "-"
    return shown(str(value))


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
    fit = fit_columns(rows, columns, width)
    return None if fit is None else table_lines(rows, *fit)


def fit_columns(rows: list[dict], columns: list[Column], width: int) -> tuple[list[Column], bool] | None:
    """The columns (and whether with short headings) :func:`fitted_lines` draws ``rows`` with."""
    if _fits(table_lines(rows, columns), width):
        return list(columns), False
    kept = list(columns)
    for column in sorted((c for c in columns if c.drop), key=lambda c: -c.drop):
        if _fits(table_lines(rows, kept, short=True), width):
            return kept, True
        kept.remove(column)
    return (kept, True) if _fits(table_lines(rows, kept, short=True), width) else None


def stacked_lines(rows: list[dict], columns: list[Column], width: int) -> list[str]:
    """Each row as ``HEADING  value`` lines (for widths no table fits), rows apart by a blank
    line; a value too long for its line goes on the next one, alone."""
    lines: list[str] = []
    pad = max((len(c.heading) for c in columns), default=0)
    for row in rows:
        if lines:
            lines.append("")
        for column in columns:
            text = cell(row.get(column.key))
            line = f"{column.heading.ljust(pad)}  {text}"
            lines.extend([line] if len(line) <= width else [column.heading, f"  {text}"])
    return lines


def _fits(lines: list[str], width: int) -> bool:
    return all(len(line) <= width for line in lines)
