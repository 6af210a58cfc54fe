"""Rows of plain values as an aligned text table, CSV, one JSON document or JSON Lines
(shared by ``seglog offsets`` and ``seglog transactions``)."""

from __future__ import annotations

import csv
import json
import sys
from datetime import datetime, timezone
from typing import TextIO


def iso_time(epoch_ms: int | None) -> str:
    """Epoch milliseconds as UTC ISO-8601 (``-`` for none or a negative value)."""
    if epoch_ms is None or epoch_ms < 0:
        return "-"
    try:
        moment = datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return str(epoch_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def write_table(rows: list[dict], columns: list[tuple[str, str]], out: TextIO, width: int | None = None) -> None:
    """``columns``: (row key, heading) pairs; numbers right-aligned. On a terminal (or with
    ``width``) the table fits the width without breaking a cell: the rightmost columns move under
    their row as ``heading value`` (seglog_cli.render.fit); else every column on one line."""
    from seglog_cli.render import fit

    if width is None:
        width = fit.terminal_width(out) if _isatty(out) else sys.maxsize
    numeric = [all(isinstance(row.get(key), int) for row in rows) and bool(rows) for key, _ in columns]
    shape = [fit.Column(heading, right=num, drop=0 if n < 2 else n, label=heading)
             for n, ((_, heading), num) in enumerate(zip(columns, numeric))]
    lines = fit.render(shape, [[_cell(row.get(key)) for key, _ in columns] for row in rows], width)
    out.write("\n".join(lines) + "\n")


def _isatty(out) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def write_csv(rows: list[dict], keys: list[str], out: TextIO) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(keys)
    for row in rows:
        writer.writerow(["" if row.get(key) is None else _csv_cell(row.get(key)) for key in keys])


def _csv_cell(value):
    if isinstance(value, (list, tuple)):
        return " ".join(str(item) for item in value)
    return value


def write_json(document: dict, out: TextIO) -> None:
    out.write(json.dumps(document, indent=1, ensure_ascii=False) + "\n")


def write_jsonl(objects, out: TextIO) -> None:
    for obj in objects:
        out.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n")
