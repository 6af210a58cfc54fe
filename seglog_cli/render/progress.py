"""A rich progress bar on stderr for long dumps (bytes of .log read, batches per second)."""

from __future__ import annotations

import os

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from seglog_cli.storage.batches import BatchHeader
from seglog_cli.storage.dump_events import FileEnd, FileStart

UPDATE_EVERY = 2048  # events between two bar refreshes: keeps the hot loop cheap


def dump_progress(events):
    """Pass ``events`` through unchanged while advancing a progress bar per file."""
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TextColumn("{task.fields[batches]} batches"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = None
        batches = 0
        count = 0
        for event in events:
            count += 1
            kind = type(event)
            if kind is BatchHeader:
                batches += 1
                if count % UPDATE_EVERY == 0 and task is not None:
                    bar.update(task, completed=event.end_position, batches=batches)
            elif kind is FileStart:
                size = _size(event.path)
                task = bar.add_task(os.path.basename(event.path), total=size, batches=0)
                batches = 0
            elif kind is FileEnd and task is not None:
                bar.update(task, completed=bar.tasks[task].total, batches=batches)
                bar.remove_task(task)
                task = None
            yield event


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None
