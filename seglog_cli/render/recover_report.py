"""How a recovery plan is shown: one line per step (or per group of alike steps) and a summary
per partition, or JSON.

Steps that differ only by the file they act on (the 28 ``.deleted`` files of a compacted
partition, the index files of the segments a truncation removes) are one line, ``remove 28
.deleted files (Kafka removes them at start-up)``; ``--show info`` lists every file, and JSON
always does. On a terminal the lines are wrapped to its width between words (a file name or an
offset is never cut); piped, each step stays one line for scripts.
"""

from __future__ import annotations

import os
from typing import TextIO

from seglog_cli.render import fit
from seglog_cli.render.plan_stream import Scratch, json_item, terminal_width, write_json, write_line
from seglog_cli.storage.recovery.recover import RecoveryPlan, RecoveryResult
from seglog_cli.storage.log.text import printable

# a group of steps with one of these reasons, said in the plural ("{n}" is the count)
_PLURAL = {
    "a .deleted file (Kafka removes it at start-up)": "{n} .deleted files (Kafka removes them at start-up)",
    "a .cleaned file (an interrupted clean or split)": "{n} .cleaned files (an interrupted clean or split)",
    "a .swap of an interrupted segment split": "{n} .swap files of an interrupted segment split",
    "an index file without its .log (Kafka deletes it)": "{n} index files without their .log (Kafka deletes them)",
    "a producer snapshot Kafka's loader deletes (stray, or above a recovered segment)":
        "{n} producer snapshots Kafka's loader deletes (stray, or above a recovered segment)",
    "the producer state Kafka's loader snapshots here": "{n} producer snapshots: the producer state Kafka's loader "
                                                        "snapshots there",
    "rebuilt by recovery": "{n} index files rebuilt by recovery",
    "rebuilt over the kept batches": "{n} index files rebuilt over the kept batches",
}


def quiet(partition) -> bool:
    """Nothing to report: recovery changes nothing there, refuses nothing, notes nothing."""
    return not partition.steps and not partition.refused and not partition.notes


def render_text(plan: RecoveryPlan, out: TextIO, applied: RecoveryResult | None = None,
                show_all: bool = False, width: int | None = None) -> None:
    """One block per partition recovery changes or refuses (every partition with ``show_all``,
    the others counted in one line), the log dirs' steps, a table when there are several
    partitions, and the summary. Alike steps are grouped (every step on its own line with
    ``show_all``). ``width``: wrap the lines to it (default: the terminal's, when ``out`` is one;
    no wrapping otherwise)."""
    if width is None:
        width = terminal_width(out)
    silent = 0
    for partition in plan.partitions:
        if not show_all and quiet(partition):
            silent += 1
            continue
        where = printable(partition.path.name)
        state = "clean shutdown" if partition.clean_shutdown else f"unclean, recovery point {partition.recovery_point}"
        _line(out, f"{where}: {state}; segments recovered: "
                   f"{', '.join(map(str, partition.recovered_segments)) or 'none'}; "
                   f"log [{partition.log_start_offset}, {partition.log_end_offset})", width)
        for group in _groups(partition.steps, show_all):
            _line(out, "  " + _step_text(group), width)
        for note in partition.notes:
            _line(out, f"  note: {printable(note)}", width)
        if partition.refused:
            _line(out, f"  REFUSED: {printable(partition.refused)}", width)
    if silent:
        out.write(f"{fit.counted(silent, 'partition')} with nothing to change (--show info lists them)\n")
    for steps in plan.log_dir_steps.values():
        for step in steps:
            _line(out, f"  {step.op:<8} {printable(str(step.path))}: {printable(step.why)}", width)
    if len(plan.partitions) > 1:
        _summary_table(plan, out, show_all, width)
    summary = plan.summary()
    line = (f"{fit.counted(summary['partitions'], 'partition')}, mode {plan.mode}: "
            f"{fit.counted(summary['steps'], 'step')}, {summary['bytesTruncated']} bytes truncated, "
            f"{fit.counted(summary['offsetRangesLost'], 'offset range')} lost")
    if summary["refused"]:
        line += f", {fit.counted(summary['refused'], 'partition')} REFUSED"
    if applied is not None:
        line += f"; applied, originals and manifest in {applied.backup_dir}" if applied.backup_dir else "; nothing to do"
    elif summary["steps"]:
        line += " (a plan: run again with --apply)"
    _line(out, line, width)


def _line(out: TextIO, text: str, width: int | None) -> None:
    write_line(out, text, width)


def _groups(steps, show_all: bool) -> list[list]:
    """Runs of consecutive steps that differ only by their file (same op and reason, no target,
    no size): one group each (every step alone with ``show_all``)."""
    groups: list[list] = []
    for step in steps:
        last = groups[-1][-1] if groups else None
        if (not show_all and last is not None and step.op == last.op and step.why == last.why
                and step.target is None and last.target is None and step.size is None and last.size is None):
            groups[-1].append(step)
        else:
            groups.append([step])
    return groups


def _step_text(group: list) -> str:
    step = group[0]
    if len(group) == 1:
        detail = f" -> {printable(os.path.basename(step.target))}" if step.target is not None else ""
        if step.op == "truncate":
            detail = f" to {step.size} bytes"
        return f"{step.op:<8} {printable(step.path.name)}{detail}: {printable(step.why)}{_lost(group)}"
    plural = _PLURAL.get(step.why)
    what = (plural.format(n=len(group)) if plural is not None
            else f"{len(group)} files: {step.why}")
    return f"{step.op:<8} {printable(what)}{_lost(group)}"


def _lost(group: list) -> str:
    """``; offsets 600..2999 lost``: the offsets the steps lose, adjacent ranges joined."""
    ranges = sorted((s.offsets_lost for s in group if s.offsets_lost is not None),
                    key=lambda r: (r[0], -1 if r[1] is None else r[1]))
    joined: list[list] = []
    for first, last in ranges:
        if joined and joined[-1][1] is not None and first == joined[-1][1] + 1:
            joined[-1][1] = last
        else:
            joined.append([first, last])
    if not joined:
        return ""
    return "; offsets " + ", ".join(f"{first}..{'?' if last is None else last}" for first, last in joined) + " lost"


def render_json(plan: RecoveryPlan, out: TextIO, applied: RecoveryResult | None = None,
                extra: dict | None = None) -> None:
    """``extra``: more top-level keys (the effective ``configs``). The partitions are written one
    at a time (a log dir of 10,000 partitions is never one object in memory)."""
    document = plan.head()
    document.update(extra or {})
    document["applied"] = None if applied is None else {
        "backupDir": None if applied.backup_dir is None else str(applied.backup_dir), "steps": applied.steps}
    items = Scratch()
    for partition in plan.partitions:
        items.add(json_item(partition.as_dict()))
    write_json(document, "partitions", items, out)
    items.close()


def _summary_table(plan: RecoveryPlan, out: TextIO, show_all: bool, width: int | None = None) -> None:
    """One row per partition recovery changes or refuses (every one with ``show_all``), laid out
    for the terminal's width (``$COLUMNS``, else 80 off a terminal) without breaking a token."""
    listed = [p for p in plan.partitions if show_all or not quiet(p)]
    if not listed:
        return
    columns = [fit.Column("partition"), fit.Column("recovered", right=True, drop=2, label="segments recovered"),
               fit.Column("log", drop=1, label="log"), fit.Column("truncated B", right=True, drop=4, label="truncated B"),
               fit.Column("offsets lost", right=True, drop=5, label="offsets lost"),
               fit.Column("steps", right=True, drop=6, label="steps"), fit.Column("status")]
    rows = []
    for p in listed:
        lost = sum((last - first + 1) for first, last in p.offsets_lost if last is not None)
        status = fit.Cell("refused", "bold red") if p.refused else ("changes" if p.steps else "ok")
        rows.append([printable(p.path.name), len(p.recovered_segments), f"[{p.log_start_offset}, {p.log_end_offset})",
                     p.bytes_truncated, lost, len(p.steps), status])
    lines = fit.render(columns, rows, width or fit.terminal_width(out), fit.use_color(out),
                       title=f"recover --mode {plan.mode}")
    out.write("\n".join(lines) + "\n")
