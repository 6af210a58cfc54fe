"""``seglog offsets``: what each consumer group has committed, read from __consumer_offsets."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from seglog_cli.commands.options import TableFormat
from seglog_cli.render import offsets_report
from seglog_cli.status import ExitStatus, guarded
from seglog_cli.storage.offsets import read_committed_offsets

HELP = """Show the committed offset of every group, topic and partition, offline.

Replays the __consumer_offsets partitions of a log dir as the group coordinator does: the
latest commit per key wins, tombstones delete, transactional commits count only once their
COMMIT marker is in the log (commits still waiting for a marker are listed as pending).

Example: seglog offsets /var/lib/kafka/data --group orders-app --format csv

Exit status: 0 read cleanly; 1 some records could not be decoded; 3 a partition is damaged
(read up to the damage); 4 no Kafka log dir or no __consumer_offsets partition found, or unreadable.
"""




def offsets_command(
    log_dir: str = typer.Argument(..., help="A Kafka log dir (or a tree of them, or one __consumer_offsets-N dir)."),
    group: Optional[str] = typer.Option(None, "--group", help="Only this consumer group."),
    topic: Optional[str] = typer.Option(None, "--topic", help="Only this topic."),
    output_format: TableFormat = typer.Option(TableFormat.table, "--format", help="table, json, jsonl or csv."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(log_dir, group, topic, output_format) -> int:
    report = read_committed_offsets(log_dir, group=group, topic=topic)
    offsets_report.render(report, output_format.value, sys.stdout)
    sys.stdout.flush()
    if report.problems:
        return ExitStatus.DAMAGE
    return ExitStatus.WARNINGS if report.unreadable else ExitStatus.OK
