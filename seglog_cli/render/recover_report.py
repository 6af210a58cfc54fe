"""How a recovery plan is shown: one line per step and a summary per partition, or JSON."""

from __future__ import annotations

import json
import os
from typing import TextIO

from seglog_cli.render.fit import counted
from seglog_cli.storage.recovery.recover import RecoveryPlan, RecoveryResult
from seglog_cli.storage.log.text import printable


def quiet(partition) -> bool:
    """Nothing to report: recovery changes nothing there, refuses nothing, notes nothing."""
    return not partition.steps and not partition.refused and not partition.notes


def render_text(plan: RecoveryPlan, out: TextIO, applied: RecoveryResult | None = None,
                show_all: bool = False) -> None:
    """One block per partition recovery changes or refuses (every partition with ``show_all``,
    the others counted in one line), the log dirs' steps, a table when there are several
    partitions, and the summary."""
    silent = 0
    for partition in plan.partitions:
        if not show_all and quiet(partition):
            silent += 1
            continue
        where = printable(partition.path.name)
        state = "clean shutdown" if partition.clean_shutdown else f"unclean, recovery point {partition.recovery_point}"
        out.write(f"{where}: {state}; segments recovered: {', '.join(map(str, partition.recovered_segments)) or 'none'}; "
                  f"log [{partition.log_start_offset}, {partition.log_end_offset})\n")
        for step in partition.steps:
            detail = f" -> {printable(os.path.basename(step.target))}" if step.target is not None else ""
            if step.op == "truncate":
                detail = f" to {step.size} bytes"
            lost = ""
            if step.offsets_lost is not None:
                first, last = step.offsets_lost
                lost = f"; offsets {first}..{'?' if last is None else last} lost"
            out.write(f"  {step.op:<8} {printable(step.path.name)}{detail}: {printable(step.why)}{lost}\n")
        for note in partition.notes:
            out.write(f"  note: {printable(note)}\n")
        if partition.refused:
            out.write(f"  REFUSED: {printable(partition.refused)}\n")
    if silent:
        out.write(f"{counted(silent, 'partition')} with nothing to change (--show info lists them)\n")
    for steps in plan.log_dir_steps.values():
        for step in steps:
            out.write(f"  {step.op:<8} {printable(str(step.path))}: {printable(step.why)}\n")
    if len(plan.partitions) > 1:
        _summary_table(plan, out, show_all)
    summary = plan.as_dict()["summary"]
    line = (f"{counted(summary['partitions'], 'partition')}, mode {plan.mode}: {counted(summary['steps'], 'step')}, "
            f"{summary['bytesTruncated']} bytes truncated, {counted(summary['offsetRangesLost'], 'offset range')} lost")
    if summary["refused"]:
        line += f", {counted(summary['refused'], 'partition')} REFUSED"
    if applied is not None:
        line += f"; applied, originals and manifest in {applied.backup_dir}" if applied.backup_dir else "; nothing to do"
    elif summary["steps"]:
        line += " (a plan: run again with --apply)"
    out.write(line + "\n")


def render_json(plan: RecoveryPlan, out: TextIO, applied: RecoveryResult | None = None,
                extra: dict | None = None) -> None:
    """``extra``: more top-level keys (the effective ``configs``)."""
    document = plan.as_dict()
    document.update(extra or {})
    document["applied"] = None if applied is None else {
        "backupDir": None if applied.backup_dir is None else str(applied.backup_dir), "steps": applied.steps}
    out.write(json.dumps(document, indent=1) + "\n")


def _summary_table(plan: RecoveryPlan, out: TextIO, show_all: bool) -> None:
    """One row per partition recovery changes or refuses (every one with ``show_all``), laid out
    for the terminal's width (``$COLUMNS``, else 80 off a terminal) without breaking a token."""
    from seglog_cli.render import fit

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
    lines = fit.render(columns, rows, fit.terminal_width(out), fit.use_color(out), title=f"recover --mode {plan.mode}")
    out.write("\n".join(lines) + "\n")
