"""``seglog transactions``: open, committed and aborted transactions, offline."""

from __future__ import annotations

import sys
import time
from enum import Enum
from typing import Optional

import typer

from seglog_cli.commands.options import TableFormat, parse_timestamp
from seglog_cli.render import transactions_report
from seglog_cli.status import ExitStatus, guarded
from seglog_cli.storage.coordinator.transactions import DEFAULT_TIMEOUT_MS, read_transactions

HELP = """List transactions: per data partition, each producer's committed, aborted and still-open
transaction (producer id, epoch, first offset, marker, age), the coordinator's state from
__transaction_state, and .txnindex entries that match no ABORT marker.

An open transaction older than its timeout, or with no ongoing coordinator transaction for its
producer, is HANGING: it holds the partition's last stable offset back.

Example:
  seglog transactions /var/lib/kafka/data --state open

Exit status:
- 0: no hanging transaction
- 1: a hanging transaction, a .txnindex mismatch or an undecodable record
- 3: a partition is damaged (read up to the damage)
- 4: no Kafka log dir or partition dir under the path, or unreadable input
"""




class State(str, Enum):
    open = "open"
    committed = "committed"
    aborted = "aborted"


def transactions_command(
    log_dir: str = typer.Argument(..., help="A Kafka log dir (or a tree of them, or one partition dir)."),
    topic: Optional[str] = typer.Option(None, "--topic", help="Only this topic's data partitions."),
    state: Optional[State] = typer.Option(None, "--state", help="Only open, committed or aborted transactions."),
    now: Optional[str] = typer.Option(None, "--now", help="The time ages are measured to (epoch ms or ISO-8601; default: now)."),
    timeout_ms: int = typer.Option(DEFAULT_TIMEOUT_MS, "--timeout-ms", min=0, help="Timeout for open transactions the coordinator does not know."),
    output_format: TableFormat = typer.Option(TableFormat.table, "--format", help="table, json, jsonl or csv."),
    remote: Optional[str] = typer.Option(None, "--remote", help="Tiered storage (LocalTieredStorage's kafka-tiered-storage dir, or one remote partition dir): each partition's remote segments are read before its local ones."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(log_dir, topic, state, now, timeout_ms, output_format, remote) -> int:
    now_ms = parse_timestamp(now, "--now")
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    report = read_transactions(log_dir, topic=topic, now_ms=now_ms, default_timeout_ms=timeout_ms, remote=remote)
    if state is not None:
        report.transactions = [t for t in report.transactions if t.state == state.value]
    transactions_report.render(report, output_format.value, sys.stdout)
    sys.stdout.flush()
    if report.problems:
        return ExitStatus.DAMAGE
    if any(t.hanging for t in report.transactions) or report.txn_index_mismatches or report.unreadable:
        return ExitStatus.WARNINGS
    return ExitStatus.OK
