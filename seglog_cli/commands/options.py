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


def log_dirs_of(inputs: list[str]) -> list:
    """The real log dirs that writing to ``inputs`` (segment files, partition dirs, log dirs,
    trees of them) changes: the locks to take before planning."""
    from pathlib import Path

    from seglog_cli.storage.partition_log import partition_dirs_under
    from seglog_cli.storage.safety import log_dir_of

    out = []
    for raw in inputs:
        path = Path(raw)
        if path.is_file():
            dirs = [log_dir_of(path.parent)]
        elif path.is_dir():
            dirs = [log_dir_of(partition) for partition in partition_dirs_under(path)]
        else:
            continue
        out.extend(d for d in dirs if d not in out)
    return out


def writing(apply: bool, log_dirs, command: str, backup_dir: str | None):
    """The write session of a command: its log dirs locked (and anything an interrupted run
    left finished) before it plans; a no-op context when it only plans (no --apply)."""
    import contextlib
    import sys

    if not apply:
        for log_dir in log_dirs:
            if (log_dir / ".seglog-journal").is_file():  # journal.POINTER, without importing the write path
                sys.stderr.write(f"seglog: {log_dir}: an interrupted seglog run is pending there; --apply (or any "
                                 "writing seglog command) rolls it back first, so the plan below may change\n")
        return contextlib.nullcontext(None)
    from seglog_cli.storage.write_session import WriteSession

    @contextlib.contextmanager
    def session():
        with WriteSession(log_dirs, command, backup_dir) as held:
            for note in held.notes:
                sys.stderr.write(f"seglog: {note}\n")
            yield held
    return session()
