"""How a rebuild-index plan (and its application) is shown: text lines or one JSON document.

A command shows each segment as it is planned (:class:`Shown`, the plan's ``on_segment``): its
lines (or its JSON) go to a scratch file, so a lean plan need not keep the segments that change
nothing; :func:`render_text` and :func:`render_json` then write everything out."""

from __future__ import annotations

import json
import os
from typing import TextIO

from seglog_cli.render.plan_stream import Scratch, json_item, terminal_width, write_json, write_line
from seglog_cli.storage.write.rebuild_index import ApplyResult, RebuildPlan, SegmentPlan
from seglog_cli.storage.log.text import printable

_WORDS = {"identical": "ok", "trim": "trim", "create": "create", "rewrite": "rewrite"}


class Shown:
    """The segments of a plan as they are planned: for text, the lines (one per file to write,
    every file with ``verbose``, one per refused segment); for JSON, each segment's object."""

    def __init__(self, json_format: bool = False, verbose: bool = False):
        self.json_format = json_format
        self.verbose = verbose
        self.scratch = Scratch()
        self.common: str | None = None  # the segments' longest common directory
        self.mixed = False  # absolute and relative paths: no common directory

    def add(self, segment: SegmentPlan) -> None:
        if self.json_format:
            self.scratch.add(json_item(segment.as_dict()))
            return
        parent = str(segment.log_path.parent)
        try:
            self.common = parent if self.common is None else os.path.commonpath([self.common, parent])
        except ValueError:
            self.mixed = True
        if segment.refused:
            self.scratch.add(json.dumps(["refused", str(segment.log_path), segment.refused]))
            return
        for change in segment.files:
            if change.changes or self.verbose:
                self.scratch.add(json.dumps([_WORDS[change.action], str(change.path), change.detail]))

    @property
    def base(self) -> str | None:
        return os.path.dirname(self.common) if self.common and not self.mixed else None


def _short(path, base: str | None) -> str:
    text = str(path)
    if base:
        try:
            return os.path.relpath(text, base)
        except ValueError:
            return text
    return text


def _shown(plan: RebuildPlan, json_format: bool, verbose: bool) -> Shown:
    """A plan's segments shown after the fact (a plan that kept them all)."""
    shown = Shown(json_format, verbose)
    for segment in plan.segments:
        shown.add(segment)
    return shown


def render_text(plan: RebuildPlan, out: TextIO, applied: ApplyResult | None = None, verbose: bool = False,
                shown: Shown | None = None, width: int | None = None) -> None:
    """One line per segment that needs something (every segment with ``verbose``), then a summary.
    ``shown``: the segments as the plan went (else the plan's own). ``width``: wrap the lines to
    it (default: the terminal's when ``out`` is one; piped, no wrapping)."""
    shown = shown or _shown(plan, False, verbose)
    width = width or terminal_width(out)
    base = shown.base
    for line in plan.unreadable:
        out.write(f"unreadable  {printable(line)}\n")
    for line in shown.scratch.lines():
        word, path, detail = json.loads(line)
        if word == "refused":
            write_line(out, f"refused  {printable(_short(path, base))}: {printable(detail)}", width)
        else:
            write_line(out, f"{word:<8} {printable(_short(path, base))}: {printable(detail)}", width)
    to_write = len(plan.changes)
    refused = len(plan.refused)
    summary = (f"{plan.segment_count} segment(s), {plan.batch_count} batches walked; "
               f"{to_write} index file(s) to write, {refused} segment(s) refused")
    if applied is not None:
        summary += f"; wrote {len(applied.written)}"
        if applied.backup_dir is not None:
            summary += f", originals and manifest in {printable(str(applied.backup_dir))}"
    elif to_write and not refused:
        summary += " (a plan: run again with --apply to write them)"
    elif not refused and not plan.unreadable:
        summary += "; nothing to do"
    out.write(summary + "\n")


def render_json(plan: RebuildPlan, out: TextIO, applied: ApplyResult | None = None,
                extra: dict | None = None, shown: Shown | None = None) -> None:
    """``extra``: more top-level keys (the effective ``configs``). ``shown``: the segments as the
    plan went (JSON), else the plan's own."""
    shown = shown or _shown(plan, True, False)
    document = plan.as_dict(with_segments=False)
    document.update(extra or {})
    document["applied"] = None if applied is None else {
        "written": [str(p) for p in applied.written],
        "backupDir": None if applied.backup_dir is None else str(applied.backup_dir)}
    write_json(document, "segments", shown.scratch, out)
