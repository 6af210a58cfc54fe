"""Option parsing shared by the commands."""

from __future__ import annotations

import glob
from datetime import datetime, timezone
from enum import Enum

from seglog_cli.status import UsageError


class TableFormat(str, Enum):
    """``--format`` of the commands that print records as a table (offsets, transactions)."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


def parse_timestamp(text: str | None, option: str) -> int | None:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC when no zone is given)."""
    if text is None:
        return None
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{option}: {text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def command_paths(paths, what: str = "file, partition directory or log dir", inputs: list[str] | None = None) -> list[str]:
    """The command-line paths with globs expanded (a pattern matching nothing stays as it is,
    to be reported as missing); a usage error when there are none."""
    inputs = list(inputs or [])
    for path in paths or ():
        matches = sorted(glob.glob(path)) if glob.has_magic(path) else []
        inputs.extend(matches or [path])
    if not inputs:
        raise UsageError(f"give at least one {what}")
    return inputs
