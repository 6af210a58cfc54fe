"""How a recovery plan is shown: one line per step and a summary per partition, or JSON."""

from __future__ import annotations

import json
import os
from typing import TextIO

from seglog_cli.storage.recover import RecoveryPlan, RecoveryResult


def render_text(plan: RecoveryPlan, out: TextIO, applied: RecoveryResult | None = None) -> None:
    for partition in plan.partitions:
        where = partition.path.name
        state = "clean shutdown" if partition.clean_shutdown else f"unclean, recovery point {partition.recovery_point}"
        out.write(f"{where}: {state}; segments recovered: {', '.join(map(str, partition.recovered_segments)) or 'none'}; "
                  f"log [{partition.log_start_offset}, {partition.log_end_offset})\n")
        for step in partition.steps:
            detail = f" -> {os.path.basename(step.target)}" if step.target is not None else ""
            if step.op == "truncate":
                detail = f" to {step.size} bytes"
            lost = ""
            if step.offsets_lost is not None:
                first, last = step.offsets_lost
                lost = f"; offsets {first}..{'?' if last is None else last} lost"
            out.write(f"  {step.op:<8} {step.path.name}{detail}: {step.why}{lost}\n")
        for note in partition.notes:
            out.write(f"  note: {note}\n")
    for steps in plan.log_dir_steps.values():
        for step in steps:
            out.write(f"  {step.op:<8} {step.path}: {step.why}\n")
    summary = plan.as_dict()["summary"]
    line = (f"{summary['partitions']} partition(s), mode {plan.mode}: {summary['steps']} step(s), "
            f"{summary['bytesTruncated']} bytes truncated, {summary['offsetRangesLost']} offset range(s) lost")
    if applied is not None:
        line += f"; applied, originals and manifest in {applied.backup_dir}" if applied.backup_dir else "; nothing to do"
    elif summary["steps"]:
        line += " (a plan: run again with --apply)"
    out.write(line + "\n")


def render_json(plan: RecoveryPlan, out: TextIO, applied: RecoveryResult | None = None) -> None:
    document = plan.as_dict()
    document["applied"] = None if applied is None else {
        "backupDir": None if applied.backup_dir is None else str(applied.backup_dir), "steps": applied.steps}
    out.write(json.dumps(document, indent=1) + "\n")
