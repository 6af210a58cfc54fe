"""How simulate-retention results are shown: a table fitted to the terminal, plain text with a timeline chart, JSON."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TextIO

from seglog_cli.storage.retention.compaction_report import CompactionPlan
from seglog_cli.storage.retention.retention import RetentionPlan
from seglog_cli.storage.retention.retention_model import RetentionModel
from seglog_cli.storage.retention.retention_timeline import DELETED, DUE, GONE, KEPT, Timeline
from seglog_cli.storage.log.text import printable

CHART_WIDTH = 60
_QUIET = ("RULE_OFF", "LOG_START_OFFSET_KEEPS", "WALK_STOPPED")  # shown in JSON, left out of the table
CHART_MARKS = {KEPT: "=", DUE: "~", DELETED: ".", GONE: " "}


def when(ms: int | None) -> str:
    if ms is None:
        return "never"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def duration(ms: float | None) -> str:
    if ms is None:
        return "forever"
    seconds = ms / 1000
    if abs(seconds) < 120:
        return f"{seconds:.1f} s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.1f} min"
    if abs(seconds) < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _segment_lines(plan: RetentionPlan, human: bool = False) -> list[tuple[str, ...]]:
    """``human``: times and ages in the reasons as a person reads them (the table on a terminal);
    else epoch ms and ms, as the text format always printed them."""
    forms = (when, duration) if human else ()
    rows = []
    for verdict in plan.verdicts:
        s = verdict.segment
        if verdict.deleted_by is not None:
            action, why = "DELETE", f"{verdict.rule}: {verdict.deleted_by.text(*forms)}"
        else:
            action = "keep"
            shown = [(rule, hold) for rule, hold in verdict.holds if hold.code not in _QUIET]
            why = "; ".join(f"{rule}: {hold.text(*forms)}" for rule, hold in shown or verdict.holds[-1:])
        rows.append((str(s.base_offset), f"{s.base_offset}..{s.next_offset - 1}" if s.next_offset > s.base_offset
                     else "empty", str(s.size), when(s.largest_timestamp), s.timestamp_source,
                     duration(plan.now_ms - s.largest_timestamp), action, why))
    return rows


def _summary(plan: RetentionPlan) -> list[str]:
    state = plan.state
    lines = [f"partition {state.path}",
             f"  now {when(plan.now_ms)}; cleanup.policy={plan.config.cleanup_policy} "
             f"retention.ms={plan.config.retention_ms} retention.bytes={plan.config.retention_bytes}",
             f"  log start offset {state.log_start_offset} ({state.log_start_source}); high watermark "
             f"{state.high_watermark} ({state.high_watermark_source}); log end offset {state.log_end_offset}; "
             f"size {state.size} bytes"]
    if any(s.timestamp_source == "mtime" for s in state.segments):
        lines.append("  note: some segments have no record timestamps: Kafka then uses the file's mtime, "
                     "which a copy does not keep")
    rolled = f"; Kafka first rolls a new empty active segment at {plan.rolled.base_offset}" if plan.rolled else ""
    lines.append(f"  deletes {len(plan.deleted)} segment(s), {plan.reclaimed_bytes} bytes, "
                 f"{plan.reclaimed_offsets} offsets; new log start offset {plan.new_log_start_offset}{rolled}")
    return lines


def render_text(plan: RetentionPlan, out: TextIO, timeline: Timeline | None = None,
                compaction: CompactionPlan | None = None, records: bool = False) -> None:
    for line in _summary(plan):
        out.write(line + "\n")
    header = ("base", "offsets", "bytes", "largest timestamp", "clock", "age", "action", "reason")
    rows = [header] + _segment_lines(plan)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        out.write("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])) + "  " + row[-1] + "\n")
    if timeline is not None:
        write_timeline(timeline, out)
    if compaction is not None:
        write_compaction(compaction, out, records)


def write_timeline(timeline: Timeline, out: TextIO) -> None:
    out.write(f"timeline (check interval {duration(timeline.check_interval_ms)} from {timeline.check_source}, "
              f"file.delete.delay.ms "
              f"{duration(timeline.file_delete_delay_ms)}):\n")
    for s in timeline.schedules:
        note = f"  ({s.note})" if s.note else ""
        out.write(f"  segment {s.segment.base_offset}: deletable from {when(s.eligible_at)}, unreadable by "
                  f"{when(s.removed_by)}, files gone by {when(s.files_gone_by)}{note}\n")
    for point in timeline.points:
        out.write(f"  at {when(point.at_ms)}: {len(point.plan.deleted)} segment(s) deletable, "
                  f"{point.plan.reclaimed_bytes} bytes, log start offset {point.plan.new_log_start_offset}\n")
    for line in chart(timeline):
        out.write(line + "\n")


def chart(timeline: Timeline) -> list[str]:
    """One row per segment from now to the last time of interest: '=' readable, '~' deletable
    (the next check removes it), '.' renamed .deleted, ' ' gone."""
    ends = [s.files_gone_by for s in timeline.schedules if s.files_gone_by is not None]
    ends += [p.at_ms for p in timeline.points]
    start = timeline.now_ms
    end = max(ends + [start + 1])
    step = (end - start) / CHART_WIDTH
    label = max((len(str(s.segment.base_offset)) for s in timeline.schedules), default=1)
    lines = [f"  {'':>{label}} |{when(start)}{' ' * max(1, CHART_WIDTH - 48)}{when(end)}|"]
    for s in timeline.schedules:
        cells = "".join(CHART_MARKS[s.phase(int(start + (i + 0.5) * step))] for i in range(CHART_WIDTH))
        lines.append(f"  {s.segment.base_offset:>{label}} |{cells}|")
    lines.append(f"  {'':>{label}}  = readable  ~ deletable at the next check  . renamed .deleted  (blank) gone")
    return lines


def write_compaction(plan: CompactionPlan, out: TextIO, records: bool = False) -> None:
    r = plan.range
    out.write(f"compaction (delete.retention.ms={plan.config.delete_retention_ms}, "
              f"min.compaction.lag.ms={plan.config.min_compaction_lag_ms}):\n")
    out.write(f"  cleaner checkpoint {plan.state.cleaner_checkpoint}; dirty range {r.first_dirty_offset}.."
              f"{r.first_uncleanable_segment} (limited by the {r.uncleanable_because}); dirty ratio "
              f"{r.dirty_ratio:.3f} vs min.cleanable.dirty.ratio {r.min_cleanable_dirty_ratio}: "
              f"{'the cleaner would pick this log' if r.would_clean else 'the cleaner would not clean now'}\n")
    if r.first_dirty_note:
        out.write(f"  {r.first_dirty_note}\n")
    out.write(f"  pass over offsets < {plan.end_offset} in groups {plan.groups}; {plan.map_keys} key(s) in the "
              f"offset map; {len(plan.kept_offsets)} record(s) kept, {len(plan.removed_offsets)} removed\n")
    for segment in plan.segments:
        reasons = ", ".join(f"{code} {count}" for code, count in sorted(segment.counts().items()))
        empty = sum(b.empty for b in segment.batches)
        extra = f", {empty} empty batch(es) kept" if empty else ""
        out.write(f"  segment {segment.base_offset}: {'in pass' if segment.in_pass else 'not cleaned'}: "
                  f"{reasons or 'no records'}{extra}\n")
        if records:
            for record in segment.records:
                out.write(f"    {record.offset:>8} {'keep' if record.kept else 'REMOVE':<6} {record.code:<19} "
                          f"key={_key(record.key)} {record.detail}\n")


def _key(key) -> str:
    if key is None:
        return "null"
    text = key.decode("utf-8", "backslashreplace")
    return text if len(text) <= 24 else text[:21] + "..."


def render_table(plan: RetentionPlan, out: TextIO, timeline: Timeline | None = None,
                 compaction: CompactionPlan | None = None, records: bool = False, width: int | None = None,
                 color: bool | None = None) -> None:
    """The segments laid out for the terminal's width without breaking a token, then the summary
    (and the timeline and compaction pass when asked)."""
    from seglog_cli.render import fit

    width = width or fit.terminal_width(out)
    color = fit.use_color(out) if color is None else color
    columns = [fit.Column("base", right=True, drop=5), fit.Column("offsets"), fit.Column("bytes", right=True, drop=3),
               fit.Column("largest timestamp", drop=1, label="largest timestamp"), fit.Column("clock", drop=4),
               fit.Column("age", right=True, drop=2, label="age"), fit.Column("action"),
               fit.Column("reason", wrap=True)]
    rows = []
    for row in _segment_lines(plan, human=True):
        cells = [printable(cell) for cell in row]
        cells[6] = fit.Cell(cells[6], "bold red" if row[6] == "DELETE" else "green")
        rows.append(cells)
    title = f"{printable(plan.state.path.name)}: retention at {when(plan.now_ms)}"
    lines = fit.render(columns, rows, width, color, title=title)
    for line in _summary(plan)[1:]:
        lines += fit.paragraph(line, width)
    out.write("\n".join(lines) + "\n")
    if timeline is not None:
        write_timeline(timeline, out)
    if compaction is not None:
        write_compaction(compaction, out, records)


def render_model_text(model: RetentionModel, out: TextIO) -> None:
    p, roll, life = model.producer, model.roll, model.lifetime
    out.write(f"producer: {p.records_per_sec:g} records/s, {p.record_bytes} B/record, {p.batch_records} record(s) "
              f"per batch ({p.batch_bytes} B, one every {duration(p.batch_interval_ms)})\n")
    out.write(f"rolling: a segment holds {roll.records_per_segment} records ({roll.batches_per_segment} batches, "
              f"{roll.segment_bytes_used} bytes, {roll.index_entries} index entries); it rolls on {roll.roll_cause}\n")
    out.write(f"  first to last record {duration(roll.fill_ms)}; rolled {duration(roll.roll_after_ms)} after its "
              f"first record\n")
    out.write("  batches allowed by each limit: " + ", ".join(f"{k} {v}" for k, v in roll.candidates.items()) + "\n")
    out.write(f"retention (check every {duration(model.check_interval_ms)}, file.delete.delay.ms "
              f"{duration(model.file_delete_delay_ms)}), decided by {life.deciding_rule or 'nothing: kept forever'}:\n")
    out.write(f"  readable: at least {duration(life.min_readable_ms)}, at most {duration(life.max_readable_ms)}\n")
    out.write(f"  on disk:  at least {duration(life.min_on_disk_ms)}, at most {duration(life.max_on_disk_ms)}\n")
    out.write("segments of a log written from t=0: first record, roll, deletable from, unreadable by, files gone by\n")
    for w in model.segments:
        out.write(f"  #{w.index}: {duration(w.first_record_ms)}, {duration(w.rolled_ms)}, {duration(w.deletable_ms)}, "
                  f"{duration(w.unreadable_by_ms)}, {duration(w.files_gone_by_ms)}\n")


def render_json(document: dict, out: TextIO) -> None:
    out.write(json.dumps(document, indent=1, default=str) + "\n")
