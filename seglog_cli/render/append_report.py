"""How an append plan (and its application) is shown: a short text summary or one JSON document."""

from __future__ import annotations

import json
import os
from typing import TextIO

from seglog_cli.storage.write.append import AppendResult
from seglog_cli.storage.write.append_plan import AppendPlan


def _short(path, base) -> str:
    try:
        return os.path.relpath(str(path), str(base))
    except ValueError:
        return str(path)


def render_text(plan: AppendPlan, out: TextIO, applied: AppendResult | None = None, verbose: bool = False) -> None:
    """The offsets, batches, rolls and file writes in a few lines (every batch with ``verbose``);
    one line for a run already appended."""
    if plan.already_appended is not None:
        out.write(f"{plan.partition_dir}: {plan.already_appended.text()}\n")
        return
    data = [b for b in plan.batches if b.control is None]
    markers = [b for b in plan.batches if b.control is not None]
    where = f"{plan.partition_dir}{' (a new partition)' if plan.created else ''}"
    out.write(f"{where}: log end offset {plan.log_end_offset_before} -> {plan.log_end_offset_after}\n")
    if data:
        out.write(f"records  {plan.records} at offsets {data[0].base_offset}..{data[-1].last_offset} in {len(data)} "
                  f"batch(es), {sum(b.size for b in data)} bytes\n")
    for marker in markers:
        out.write(f"marker   {marker.control} at offset {marker.base_offset}\n")
    if verbose:
        for batch in plan.batches:
            out.write(f"batch    offsets {batch.base_offset}..{batch.last_offset}: {batch.records} record(s), "
                      f"{batch.size} bytes, max timestamp {batch.max_timestamp}, segment {batch.segment}"
                      f"{'' if batch.control is None else ', ' + batch.control + ' marker'}\n")
    for base, reason in plan.rolls:
        out.write(f"roll     new segment at offset {base}: {reason}\n")
    for write in plan.writes:
        out.write(f"{write.op:<8} {_short(write.path, plan.log_dir)}: {write.why}\n")
    for warning in plan.warnings:
        out.write(f"warning  {warning}\n")
    if applied is not None:
        summary = f"wrote {len(applied.written)} file(s)"
        if applied.backup_dir is not None:
            summary += f"; backup and manifest in {applied.backup_dir} (seglog undo puts everything back)"
    else:
        summary = f"a plan: {len(plan.writes)} file write(s), nothing written; run again with --apply to write it"
    out.write(summary + "\n")


def render_json(plan: AppendPlan, out: TextIO, applied: AppendResult | None = None,
                extra: dict | None = None) -> None:
    """``extra``: more top-level keys (the effective ``configs``)."""
    document = plan.as_dict()
    document.update(extra or {})
    document["applied"] = None if applied is None else {
        "written": [str(p) for p in applied.written],
        "backupDir": None if applied.backup_dir is None else str(applied.backup_dir)}
    out.write(json.dumps(document, indent=1) + "\n")
