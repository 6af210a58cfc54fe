"""How ``seglog offsets`` shows committed offsets: table, CSV, JSON or JSON Lines.

JSON document (:meth:`OffsetsReport.as_dict`)::

    {"version": 1, "committed": [<offset>...], "pending": [<offset>...], "unreadable": [...],
     "problems": [...], "partitionsRead": N, "recordsRead": N}

where ``<offset>`` has ``group``, ``topic``, ``partition``, ``offset``, ``leaderEpoch``,
``metadata``, ``commitTimestamp``, ``expireTimestamp``, ``valueVersion``,
``coordinatorPartition``, ``recordOffset``, ``producerId`` (null outside transactions).
JSON Lines: one such object per line with ``"type": "committed"`` or ``"pending"``, then
``"unreadable"`` and ``"problem"`` lines. CSV: ``status`` then the ``<offset>`` keys as headers.
"""

from __future__ import annotations

from typing import TextIO

from seglog_cli.render.tabular import iso_time, write_csv, write_json, write_jsonl, write_table
from seglog_cli.storage.offsets import CommittedOffset, OffsetsReport

FIELDS = ["group", "topic", "partition", "offset", "leaderEpoch", "metadata", "commitTimestamp",
          "expireTimestamp", "valueVersion", "coordinatorPartition", "recordOffset", "producerId"]
COLUMNS = [("group", "GROUP"), ("topic", "TOPIC"), ("partition", "PARTITION"), ("offset", "OFFSET"),
           ("leaderEpoch", "LEADER-EPOCH"), ("committedAt", "COMMITTED-AT"), ("metadata", "METADATA"),
           ("source", "RECORD")]


def _row(commit: CommittedOffset) -> dict:
    row = commit.as_dict()
    row["committedAt"] = iso_time(commit.commit_timestamp)
    row["source"] = f"{commit.coordinator_partition}@{commit.record_offset}"
    if commit.producer_id is not None:
        row["source"] += f" (txn pid {commit.producer_id})"
    return row


def render(report: OffsetsReport, output_format: str, out: TextIO) -> None:
    if output_format == "json":
        write_json(report.as_dict(), out)
    elif output_format == "jsonl":
        write_jsonl([{"type": "committed", **c.as_dict()} for c in report.committed]
                    + [{"type": "pending", **c.as_dict()} for c in report.pending]
                    + [{"type": "unreadable", **u.as_dict()} for u in report.unreadable]
                    + [{"type": "problem", **p.as_dict()} for p in report.problems], out)
    elif output_format == "csv":
        rows = [{"status": "committed", **c.as_dict()} for c in report.committed]
        rows += [{"status": "pending", **c.as_dict()} for c in report.pending]
        write_csv(rows, ["status"] + FIELDS, out)
    else:
        _text(report, out)


def _text(report: OffsetsReport, out: TextIO) -> None:
    if report.committed:
        write_table([_row(c) for c in report.committed], COLUMNS, out)
    if report.pending:
        out.write("\nPending transactional commits (no COMMIT/ABORT marker yet; not counted):\n")
        write_table([_row(c) for c in report.pending], COLUMNS, out)
    for item in report.unreadable:
        out.write(f"unreadable  {item.coordinator_partition}@{item.record_offset}: {item.message}\n")
    for problem in report.problems:
        out.write(f"damaged     {problem}\n")
    groups = len({c.group for c in report.committed})
    out.write(f"{len(report.committed)} committed offset(s) of {groups} group(s), {len(report.pending)} pending; "
              f"{report.records_read} record(s) in {report.partitions_read} __consumer_offsets partition(s)\n")
