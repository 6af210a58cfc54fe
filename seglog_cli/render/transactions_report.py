"""How ``seglog transactions`` shows transactions: table, CSV, JSON or JSON Lines.

JSON document (:meth:`TransactionsReport.as_dict`)::

    {"version": 1, "transactions": [<transaction>...], "coordinator": [<state>...],
     "txnIndexMismatches": [...], "unreadable": [...], "problems": [...],
     "counts": {"committed": N, "aborted": N, "open": N, "hanging": N}, "partitionsRead": N}

``<transaction>``: ``partition``, ``producerId``, ``producerEpoch``, ``state`` (committed,
aborted, open), ``firstOffset``, ``lastOffset``, ``markerOffset``, ``coordinatorEpoch``,
``firstTimestamp``, ``endTimestamp``, ``batches``, ``records``, ``transactionalId``,
``inTxnIndex`` (aborted only), ``ageMs`` and ``hanging`` (open only).
``<state>``: the latest ``__transaction_state`` value of a transactional id
(``transactionalId``, ``producerId``, ``producerEpoch``, ``transactionState``,
``topicPartitions``, ``transactionTimeoutMs``, ``transactionStartTimestampMs``,
``transactionLastUpdateTimestampMs``, ``coordinatorPartition``, ``recordOffset``).
``txnIndexMismatches``: ``path``, ``producerId``, ``firstOffset``, ``lastOffset``, ``message``.
JSON Lines: one object per line with ``type`` ``transaction``, ``coordinatorState``,
``txnIndexMismatch``, ``unreadable`` or ``problem``. CSV: the ``<transaction>`` keys as headers.
"""

from __future__ import annotations

from typing import TextIO

from seglog_cli.render.tabular import iso_time, write_csv, write_json, write_jsonl, write_table
from seglog_cli.storage.coordinator.transactions import Transaction, TransactionsReport

FIELDS = ["partition", "producerId", "producerEpoch", "state", "firstOffset", "lastOffset", "markerOffset",
          "coordinatorEpoch", "firstTimestamp", "endTimestamp", "batches", "records", "transactionalId",
          "inTxnIndex", "ageMs", "hanging"]
COLUMNS = [("partition", "PARTITION"), ("producerId", "PRODUCER-ID"), ("producerEpoch", "EPOCH"),
           ("state", "STATE"), ("firstOffset", "FIRST-OFFSET"), ("lastOffset", "LAST-OFFSET"),
           ("markerOffset", "MARKER"), ("records", "RECORDS"), ("started", "STARTED"), ("note", "NOTE"),
           ("transactionalId", "TRANSACTIONAL-ID")]
STATE_COLUMNS = [("transactionalId", "TRANSACTIONAL-ID"), ("producerId", "PRODUCER-ID"),
                 ("producerEpoch", "EPOCH"), ("transactionState", "STATUS"), ("transactionTimeoutMs", "TIMEOUT-MS"),
                 ("updated", "LAST-UPDATE"), ("topicPartitions", "PARTITIONS")]


def _note(txn: Transaction) -> str:
    if txn.state == "open":
        return f"{'HANGING ' if txn.hanging else ''}age {txn.age_ms} ms"
    if txn.state == "aborted" and txn.in_txn_index is False:
        return "not in .txnindex"
    return ""


def render(report: TransactionsReport, output_format: str, out: TextIO) -> None:
    if output_format == "json":
        write_json(report.as_dict(), out)
    elif output_format == "jsonl":
        write_jsonl([{"type": "transaction", **t.as_dict()} for t in report.transactions]
                    + [{"type": "coordinatorState", **s.as_dict()} for s in report.coordinator]
                    + [{"type": "txnIndexMismatch", **m.as_dict()} for m in report.txn_index_mismatches]
                    + [{"type": "unreadable", "message": u} for u in report.unreadable]
                    + [{"type": "problem", **p.as_dict()} for p in report.problems], out)
    elif output_format == "csv":
        write_csv([t.as_dict() for t in report.transactions], FIELDS, out)
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
    counts = report.counts()
    out.write(f"{counts['committed']} committed, {counts['aborted']} aborted, {counts['open']} open "
              f"({counts['hanging']} hanging) transaction(s) in {report.partitions_read} partition(s)\n")
