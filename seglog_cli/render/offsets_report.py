"""How ``seglog offsets`` shows committed offsets: a table fitted to the terminal, the whole
table as text, CSV, JSON or JSON Lines.

JSON document (:meth:`OffsetsReport.as_dict`)::

    {"version": 1, "committed": [<offset>...], "pending": [<offset>...], "unreadable": [...],
     "problems": [...], "partitionsRead": N, "recordsRead": N, "flaggedGroups": [group...]}

where ``<offset>`` has ``group``, ``topic``, ``partition``, ``offset``, ``leaderEpoch``,
``metadata``, ``commitTimestamp``, ``expireTimestamp``, ``valueVersion``,
``coordinatorPartition``, ``recordOffset``, ``producerId`` (null outside transactions), and for
a committed one its partition's ``logStartOffset``, ``logEndOffset``, ``highWatermark`` (null
when unknown), ``lag``, ``lagBasis`` (``highWatermark`` or ``logEndOffset``), ``logEndSource``,
``partitionDir``, ``flags`` (codes) and ``notes`` (what the flags mean, why a value is missing).
JSON Lines: one such object per line with ``"type": "committed"`` or ``"pending"``, then
``"unreadable"`` and ``"problem"`` lines. CSV: ``status`` then the ``<offset>`` keys as headers.
"""

from __future__ import annotations

import textwrap
from typing import TextIO

from seglog_cli.render.fit import terminal_width
from seglog_cli.render.narrow_table import Column, fit_columns, fitted_lines, stacked_lines, table_lines
from seglog_cli.render.tabular import iso_time, write_csv, write_json, write_jsonl
from seglog_cli.storage.coordinator.consumer_lag import BELOW_LOG_START, BEYOND_LOG_END, NOT_HERE
from seglog_cli.storage.coordinator.offsets import CommittedOffset, OffsetsReport

FIELDS = ["group", "topic", "partition", "offset", "leaderEpoch", "metadata", "commitTimestamp",
          "expireTimestamp", "valueVersion", "coordinatorPartition", "recordOffset", "producerId",
          "logStartOffset", "logEndOffset", "highWatermark", "lag", "lagBasis", "logEndSource", "partitionDir",
          "flags", "notes"]
# the table: kafka-consumer-groups' order (offset, end, lag) first; when narrow, columns with a
# drop rank go, the highest first (the text, CSV and JSON formats always carry all of them)
COLUMNS = [Column("group", "GROUP"), Column("topic", "TOPIC"), Column("partition", "PARTITION", "PART"),
           Column("offset", "OFFSET"), Column("logStartOffset", "LOG-START", "START", drop=6),
           Column("logEndOffset", "LOG-END", "END", drop=5), Column("highWatermark", "HIGH-WATERMARK", "HW", drop=4),
           Column("lag", "LAG"), Column("flagMarks", "FLAGS"),
           Column("leaderEpoch", "LEADER-EPOCH", "EPOCH", drop=7), Column("committedAt", "COMMITTED-AT", drop=8),
           Column("metadata", "METADATA", drop=10), Column("source", "RECORD", drop=9)]
PENDING_COLUMNS = [c for c in COLUMNS if c.key in ("group", "topic", "partition", "offset", "leaderEpoch",
                                                   "committedAt", "metadata", "source")]
# the table's marks for the flag codes
FLAG_MARKS = {BELOW_LOG_START: "BELOW-START", BEYOND_LOG_END: "BEYOND-END"}


def _row(commit: CommittedOffset, report: OffsetsReport | None = None) -> dict:
    row = report.committed_dict(commit) if report is not None else commit.as_dict()
    row["committedAt"] = iso_time(commit.commit_timestamp)
    row["source"] = f"{commit.coordinator_partition}@{commit.record_offset}"
    if commit.producer_id is not None:
        row["source"] += f" (txn pid {commit.producer_id})"
    if "flags" in row:
        row["flagMarks"] = [FLAG_MARKS.get(code, code) for code in row["flags"]]
    return row


def render(report: OffsetsReport, output_format: str, out: TextIO) -> None:
    """``table``: fitted to the terminal's width (``COLUMNS``); ``text``: every column."""
    if output_format == "json":
        write_json(report.as_dict(), out)
    elif output_format == "jsonl":
        write_jsonl([{"type": "committed", **report.committed_dict(c)} for c in report.committed]
                    + [{"type": "pending", **c.as_dict()} for c in report.pending]
                    + [{"type": "unreadable", **u.as_dict()} for u in report.unreadable]
                    + [{"type": "problem", **p.as_dict()} for p in report.problems], out)
    elif output_format == "csv":
        rows = [{"status": "committed", **report.committed_dict(c)} for c in report.committed]
        for row in rows:
            row["notes"] = "; ".join(row.get("notes") or []) or None
        rows += [{"status": "pending", **c.as_dict()} for c in report.pending]
        write_csv(rows, ["status"] + FIELDS, out)
    elif output_format == "text":
        _text(report, out, None)
    else:
        _text(report, out, terminal_width(out))


def _text(report: OffsetsReport, out: TextIO, width: int | None) -> None:
    """The tables and what they flag; ``width`` None: every column, lines as long as they are."""
    if report.committed:
        _table([_row(c, report) for c in report.committed], COLUMNS, out, width)
    if report.pending:
        out.write("\nPending transactional commits (no COMMIT/ABORT marker yet; not counted):\n")
        _table([_row(c) for c in report.pending], PENDING_COLUMNS, out, width)
    partition_notes: dict[str, list[str]] = {}
    for commit in report.committed:
        row = report.committed_dict(commit)
        partition = f"{commit.topic}-{commit.partition}"
        for code, why in zip(row["flags"], row["notes"]):
            _say(f"flagged {commit.group} {partition}: {code}: {why}", out, width)
        for note in row["notes"][len(row["flags"]):]:  # about the partition: said once
            if note not in partition_notes.setdefault(partition, []):
                partition_notes[partition].append(note)
    for partition, notes in partition_notes.items():
        for note in notes:
            _say(f"note    {partition}: {note}", out, width)
    absent = sorted({f"{c.topic}-{c.partition}" for c in report.committed
                     if report.committed_dict(c)["logEndSource"] == NOT_HERE})
    if absent:
        _say(f"not in these log dirs (no log end offset, no lag: another broker, or a log dir not given, hosts them): {' '.join(absent)}",
             out, width)
    if any(report.committed_dict(c)["lagBasis"] == "logEndOffset" for c in report.committed):
        _say("lag without a high watermark (no replication-offset-checkpoint entry) is against the log end offset",
             out, width)
    for item in report.unreadable:
        out.write(f"unreadable  {item.coordinator_partition}@{item.record_offset}: {item.message}\n")
    for problem in report.problems:
        out.write(f"damaged     {problem}\n")
    groups = len({c.group for c in report.committed})
    flagged = len(report.flagged_groups)
    _say(f"{len(report.committed)} committed offset(s) of {groups} group(s), {len(report.pending)} pending; "
         f"{report.records_read} record(s) in {report.partitions_read} __consumer_offsets partition(s)"
         + (f"; {flagged} flagged group(s): {' '.join(report.flagged_groups)}" if flagged else ""), out, width)


def _table(rows: list[dict], columns: list[Column], out: TextIO, width: int | None) -> None:
    """The whole table, or (``width`` given) fitted: narrowed, else one table per group under
    its name, else each row stacked as ``HEADING value`` lines. Cells are never broken."""
    if width is None:
        lines = table_lines(rows, columns)
    else:
        lines = fitted_lines(rows, columns, width)
        if lines is None:
            lines = _per_group(rows, columns, width)
    out.write("".join(line + "\n" for line in lines))


def _per_group(rows: list[dict], columns: list[Column], width: int) -> list[str]:
    """One table per group under a ``GROUP name`` line, the same columns in each; rows stacked
    when even that does not fit."""
    fit = fit_columns(rows, [c for c in columns if c.key != "group"], width - 2)
    if fit is None:
        return stacked_lines(rows, columns, width)
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row)
    lines: list[str] = []
    for group, members in groups.items():
        lines.append(f"GROUP {group}")
        lines.extend("  " + line for line in table_lines(members, *fit))
    return lines


def _say(text: str, out: TextIO, width: int | None) -> None:
    """A line of prose; wrapped between words at ``width`` (a name or a number is never split)."""
    if width is None:
        out.write(text + "\n")
        return
    out.write("\n".join(textwrap.wrap(text, width, subsequent_indent="    ", break_long_words=False,
                                       break_on_hyphens=False)) + "\n")
