"""``seglog offsets``: what each consumer group has committed, read from __consumer_offsets."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Optional

import typer

from seglog_cli.render import offsets_report
from seglog_cli.status import ExitStatus, guarded
from seglog_cli.storage.coordinator.consumer_lag import UNREADABLE
from seglog_cli.storage.coordinator.offsets import read_committed_offsets

HELP = """Show the committed offset of every group, topic and partition, and its lag, offline.

Replays the __consumer_offsets partitions of a log dir as the group coordinator does: the
latest commit per key wins, tombstones delete, transactional commits count only once their
COMMIT marker is in the log (commits still waiting for a marker are listed as pending).

Each committed offset is set against its topic partition in the same log dir(s), as
kafka-consumer-groups.sh --describe shows it: the log start and end offsets (from the segments
and log-start-offset-checkpoint), the high watermark (replication-offset-checkpoint) and the
lag (high watermark, else log end offset, minus the committed offset). A partition hosted by
another broker shows "-". Flags: BELOW-START (COMMITTED_BELOW_LOG_START: retention deleted
records the group had not read) and BEYOND-END (COMMITTED_BEYOND_LOG_END): the group's next
fetch is out of range and its auto.offset.reset decides where it resumes.

Example:
  seglog offsets /var/lib/kafka/data --group orders-app --format csv

Exit status:
- 0: read cleanly, nothing flagged
- 1: some records could not be decoded, a committed offset is flagged (below the log start or beyond
  the log end offset) or a topic partition could not be read
- 3: a partition is damaged (read up to the damage)
- 4: no Kafka log dir or no __consumer_offsets partition found, or unreadable
"""


class OffsetsFormat(str, Enum):
    table = "table"
    text = "text"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"




def offsets_command(
    log_dir: str = typer.Argument(..., help="A Kafka log dir (or a tree of them, or one __consumer_offsets-N dir)."),
    group: Optional[str] = typer.Option(None, "--group", help="Only this consumer group."),
    topic: Optional[str] = typer.Option(None, "--topic", help="Only this topic."),
    output_format: Optional[OffsetsFormat] = typer.Option(
        None, "--format", help="table (fitted to the terminal; the default on one), text (every column; the "
                               "default into a pipe or file), json, jsonl or csv."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(log_dir, group, topic, output_format) -> int:
    report = read_committed_offsets(log_dir, group=group, topic=topic)
    fmt = output_format.value if output_format is not None else ("table" if sys.stdout.isatty() else "text")
    offsets_report.render(report, fmt, sys.stdout)
    sys.stdout.flush()
    if report.problems:
        return ExitStatus.DAMAGE
    unread_partitions = any(p.end.end_source == UNREADABLE for p in report.positions.values())
    if report.unreadable or report.flagged_groups or unread_partitions:
        return ExitStatus.WARNINGS
    return ExitStatus.OK
