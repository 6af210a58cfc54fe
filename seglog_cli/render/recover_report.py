"""How a recovery plan is shown: one line per step and a summary per partition, or JSON."""

from __future__ import annotations

import json
import os
from typing import TextIO

from seglog_cli.render.literal import markup_literal
from seglog_cli.storage.recover import RecoveryPlan, RecoveryResult
from seglog_cli.storage.text import printable


def render_text(plan: RecoveryPlan, out: TextIO, applied: RecoveryResult | None = None) -> None:
    for partition in plan.partitions:
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
    for steps in plan.log_dir_steps.values():
        for step in steps:
            out.write(f"  {step.op:<8} {printable(str(step.path))}: {printable(step.why)}\n")
    if len(plan.partitions) > 1:
        _summary_table(plan, out)
    summary = plan.as_dict()["summary"]
    line = (f"{summary['partitions']} partition(s), mode {plan.mode}: {summary['steps']} step(s), "
            f"{summary['bytesTruncated']} bytes truncated, {summary['offsetRangesLost']} offset range(s) lost")
    if summary["refused"]:
        line += f", {summary['refused']} partition(s) REFUSED"
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


def _summary_table(plan: RecoveryPlan, out: TextIO) -> None:
    """One row per partition: what recovery does to it."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"recover --mode {plan.mode}", title_justify="left")
    for name, justify in (("partition", "left"), ("recovered", "right"), ("log", "left"), ("truncated B", "right"),
                          ("offsets lost", "right"), ("steps", "right"), ("status", "left")):
        table.add_column(name, justify=justify)
    quiet = [p for p in plan.partitions if not p.steps and not p.refused] if len(plan.partitions) > 20 else []
    for p in plan.partitions:
        if p in quiet:
            continue
        lost = sum((last - first + 1) for first, last in p.offsets_lost if last is not None)
        status = "refused" if p.refused else ("changes" if p.steps else "ok")
        table.add_row(markup_literal(p.path.name), str(len(p.recovered_segments)),
                      markup_literal(f"[{p.log_start_offset}, {p.log_end_offset})"),
                      str(p.bytes_truncated), str(lost), str(len(p.steps)), status)
    if quiet:
        table.add_row(f"({len(quiet)} more)", "", "", "", "", "0", "ok")
    console = Console(file=out, width=max(100, Console(file=out).width), color_system=None if not out.isatty() else "auto")
    console.print(table)
