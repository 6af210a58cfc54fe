"""How a rebuild-index plan (and its application) is shown: text lines or one JSON document."""

from __future__ import annotations

import json
import os
from typing import TextIO

from seglog_cli.storage.write.rebuild_index import ApplyResult, RebuildPlan
from seglog_cli.storage.log.text import printable

_WORDS = {"identical": "ok", "trim": "trim", "create": "create", "rewrite": "rewrite"}


def _short(path, base: str | None) -> str:
    text = str(path)
    if base:
        try:
            return os.path.relpath(text, base)
        except ValueError:
            return text
    return text


def render_text(plan: RebuildPlan, out: TextIO, applied: ApplyResult | None = None, verbose: bool = False) -> None:
    """One line per segment that needs something (every segment with ``verbose``), then a summary."""
    base = os.path.commonpath([str(s.log_path.parent) for s in plan.segments]) if plan.segments else None
    base = os.path.dirname(base) if base else None
    for line in plan.unreadable:
        out.write(f"unreadable  {printable(line)}\n")
    for segment in plan.segments:
        name = _short(segment.log_path, base)
        if segment.refused:
            out.write(f"refused  {printable(name)}: {printable(segment.refused)}\n")
            continue
        for change in segment.files:
            if change.changes or verbose:
                out.write(f"{_WORDS[change.action]:<8} {printable(_short(change.path, base))}: {printable(change.detail)}\n")
    to_write = len(plan.changes)
    summary = (f"{len(plan.segments)} segment(s), {sum(s.batches for s in plan.segments)} batches walked; "
               f"{to_write} index file(s) to write, {len(plan.refused)} segment(s) refused")
    if applied is not None:
        summary += f"; wrote {len(applied.written)}"
        if applied.backup_dir is not None:
            summary += f", originals and manifest in {printable(str(applied.backup_dir))}"
    elif to_write and not plan.refused:
        summary += " (a plan: run again with --apply to write them)"
    out.write(summary + "\n")


def render_json(plan: RebuildPlan, out: TextIO, applied: ApplyResult | None = None,
                extra: dict | None = None) -> None:
    """``extra``: more top-level keys (the effective ``configs``)."""
    document = plan.as_dict()
    document.update(extra or {})
    document["applied"] = None if applied is None else {
        "written": [str(p) for p in applied.written],
        "backupDir": None if applied.backup_dir is None else str(applied.backup_dir)}
    out.write(json.dumps(document, indent=1) + "\n")
