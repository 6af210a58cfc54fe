"""A rich progress bar on stderr for long dumps (bytes of .log read, batches per second)."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from seglog_cli.render.literal import markup_literal
from seglog_cli.storage.log.batch_header import BatchHeader
from seglog_cli.storage.log.batches import BatchRun
from seglog_cli.storage.dump.dump_events import FileEnd, FileStart
from seglog_cli.storage.log.records import RecordRun


def dump_progress(events):
    """Pass ``events`` through unchanged while advancing a progress bar per file."""
    console = Console(stderr=True)
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TextColumn("{task.fields[batches]} batches"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = total = None
        batches = 0
        for event in events:
            kind = type(event)
            if kind is BatchRun:
                batches += event.count
                if task is not None:
                    bar.update(task, completed=event.end, batches=batches)
            elif kind is list or kind is RecordRun:  # a run of batches and records
                headers = event.headers if kind is RecordRun else [i for i in event if type(i) is BatchHeader]
                last = headers[-1] if headers else None
                batches += len(headers)
                if last is not None and task is not None:
                    bar.update(task, completed=last.end_position, batches=batches)
            elif kind is FileStart:
                total = _size(event.path)
                task = bar.add_task(markup_literal(os.path.basename(event.path)), total=total, batches=0)
                batches = 0
            elif kind is FileEnd and task is not None:
                bar.update(task, completed=total, batches=batches)
                bar.remove_task(task)
                task = None
            yield event


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


@contextmanager
def verify_progress(total_bytes: int):
    """A bar over the ``.log`` bytes to verify; yields ``advance(bytes, batches)``."""
    console = Console(stderr=True)
    columns = (TextColumn("verify"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TextColumn("{task.fields[batches]} batches ({task.fields[rate]} batches/s)"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("verify", total=total_bytes or None, batches=0, rate=0)
        counted = {"batches": 0}
        started = time.monotonic()

        def advance(size: int, batches: int) -> None:
            counted["batches"] += batches
            elapsed = max(time.monotonic() - started, 1e-6)
            bar.update(task, advance=size, batches=counted["batches"], rate=int(counted["batches"] / elapsed))

        yield advance


@contextmanager
def recover_progress(partitions: int):
    """A bar over the partitions being planned; yields ``advance(partition_recovery)``."""
    console = Console(stderr=True)
    columns = (TextColumn("recover"), BarColumn(), TextColumn("{task.completed}/{task.total} partitions"),
               TextColumn("{task.fields[last]}"), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("recover", total=partitions or None, last="")

        def advance(partition) -> None:
            bar.update(task, advance=1, last=markup_literal(partition.path.name))

        yield advance
