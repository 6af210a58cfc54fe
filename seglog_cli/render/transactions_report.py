"""How ``seglog transactions`` shows transactions: table, CSV, JSON or JSON Lines.

JSON document::

    {"transactions": [<transaction>...], "coordinator": [<state>...],
     "txn_index_mismatches": [...], "unreadable": [...], "problems": [...],
     "counts": {"committed": N, "aborted": N, "open": N, "hanging": N}, "partitions_read": N}

``<transaction>``: ``partition``, ``producer_id``, ``producer_epoch``, ``state`` (committed,
aborted, open), ``first_offset``, ``last_offset``, ``marker_offset``, ``coordinator_epoch``,
``first_timestamp``, ``end_timestamp``, ``batches``, ``records``, ``transactional_id``,
``in_txn_index`` (aborted only), ``age_ms`` and ``hanging`` (open only).
``<state>``: the latest ``__transaction_state`` value of a transactional id
(``transactional_id``, ``producer_id``, ``producer_epoch``, ``status``, ``partitions``,
``transaction_timeout_ms``, ``start_timestamp``, ``last_update_timestamp``,
``coordinator_partition``, ``record_offset``). JSON Lines: one object per line with ``type``
``transaction``, ``coordinator_state``, ``txn_index_mismatch``, ``unreadable`` or ``problem``.
"""

from __future__ import annotations

from typing import TextIO

from seglog_cli.render.tabular import iso_time, write_csv, write_json, write_jsonl, write_table
from seglog_cli.storage.transactions import Transaction, TransactionsReport

FIELDS = ["partition", "producer_id", "producer_epoch", "state", "first_offset", "last_offset",
          "marker_offset", "coordinator_epoch", "first_timestamp", "end_timestamp", "batches", "records",
          "transactional_id", "in_txn_index", "age_ms", "hanging"]
COLUMNS = [("partition", "PARTITION"), ("producer_id", "PRODUCER-ID"), ("producer_epoch", "EPOCH"),
           ("state", "STATE"), ("first_offset", "FIRST-OFFSET"), ("last_offset", "LAST-OFFSET"),
           ("marker_offset", "MARKER"), ("records", "RECORDS"), ("started", "STARTED"), ("note", "NOTE"),
           ("transactional_id", "TRANSACTIONAL-ID")]
STATE_COLUMNS = [("transactional_id", "TRANSACTIONAL-ID"), ("producer_id", "PRODUCER-ID"),
                 ("producer_epoch", "EPOCH"), ("status", "STATUS"), ("transaction_timeout_ms", "TIMEOUT-MS"),
                 ("updated", "LAST-UPDATE"), ("partitions", "PARTITIONS")]


def _note(txn: Transaction) -> str:
    if txn.state == "open":
        return f"{'HANGING ' if txn.hanging else ''}age {txn.age_ms} ms"
    if txn.state == "aborted" and txn.in_txn_index is False:
        return "not in .txnindex"
    return ""


def _counts(report: TransactionsReport) -> dict:
    return {"committed": report.count("committed"), "aborted": report.count("aborted"),
            "open": report.count("open"), "hanging": sum(1 for t in report.transactions if t.hanging)}


def render(report: TransactionsReport, output_format: str, out: TextIO) -> None:
    transactions = [t.as_dict() for t in report.transactions]
    if output_format == "json":
        write_json({"transactions": transactions, "coordinator": [s.as_dict() for s in report.coordinator],
                    "txn_index_mismatches": [vars(m) for m in report.txn_index_mismatches],
                    "unreadable": report.unreadable, "problems": [vars(p) for p in report.problems],
                    "counts": _counts(report), "partitions_read": report.partitions_read}, out)
    elif output_format == "jsonl":
        write_jsonl([{"type": "transaction", **t} for t in transactions]
                    + [{"type": "coordinator_state", **s.as_dict()} for s in report.coordinator]
                    + [{"type": "txn_index_mismatch", **vars(m)} for m in report.txn_index_mismatches]
                    + [{"type": "unreadable", "message": u} for u in report.unreadable]
                    + [{"type": "problem", **vars(p)} for p in report.problems], out)
    elif output_format == "csv":
        write_csv(transactions, FIELDS, out)
    else:
        _text(report, out)


def _text(report: TransactionsReport, out: TextIO) -> None:
    rows = []
    for txn in report.transactions:
        row = txn.as_dict()
        row["started"] = iso_time(txn.first_timestamp)
        row["note"] = _note(txn)
        rows.append(row)
    if rows:
        write_table(rows, COLUMNS, out)
    if report.coordinator:
        out.write("\nTransaction coordinator (__transaction_state, latest per transactional id):\n")
        states = [{**s.as_dict(), "updated": iso_time(s.last_update_timestamp)} for s in report.coordinator]
        write_table(states, STATE_COLUMNS, out)
    for mismatch in report.txn_index_mismatches:
        out.write(f"txnindex    {mismatch.path}: producer {mismatch.producer_id} offsets "
                  f"{mismatch.first_offset}..{mismatch.last_offset}: {mismatch.message}\n")
    for item in report.unreadable:
        out.write(f"unreadable  {item}\n")
    for problem in report.problems:
        out.write(f"damaged     {problem}\n")
    counts = _counts(report)
    out.write(f"{counts['committed']} committed, {counts['aborted']} aborted, {counts['open']} open "
              f"({counts['hanging']} hanging) transaction(s) in {report.partitions_read} partition(s)\n")
