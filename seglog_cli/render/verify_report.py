"""Rendering a verify report: a table for the terminal, plain text lines, one JSON document, JSON Lines.

* ``table`` (default on a terminal): the partitions with findings at or above the chosen severity
  (the others counted in one line), then those findings laid out for the terminal width without
  breaking a token (seglog_cli.render.fit), then the verdict.
* ``text``: one line per finding (``SEVERITY CODE path: position P (offset O): message``) and a
  verdict line; stable for grep.
* ``json``: the whole report, ``{"seglogVerifyReport": 1, ...}`` (all findings, every severity).
* ``jsonl``: one finding per line (all severities), each with the topic and partition.
"""

from __future__ import annotations

import json

from seglog_cli.render.fit import counted
from seglog_cli.storage.log.findings import Finding, Severity
from seglog_cli.storage.log.text import printable
from seglog_cli.storage.verify.verify import VerifyReport

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
MAX_TABLE_FINDINGS = 200


def verdict(report: VerifyReport) -> str:
    counts = report.counts()
    summary = report.as_dict()["summary"]
    what = ", ".join([counted(summary["partitions"], "partition"), counted(summary["segments"], "segment"),
                      counted(summary["batches"], "batch", "batches"), counted(summary["bytes"], "byte")])
    if summary["records"] is not None:
        what += ", " + counted(summary["records"], "record")
    return (f"{report.status}: {counted(counts['error'], 'error')}, {counted(counts['warning'], 'warning')}, "
            f"{counted(counts['info'], 'info')} ({what}, {report.level} level)")


def shown(report: VerifyReport, minimum: Severity) -> list[Finding]:
    return [f for f in report.all_findings() if f.severity.rank >= minimum.rank]


def render_text(report: VerifyReport, out, minimum: Severity) -> None:
    for finding in shown(report, minimum):
        out.write(f"{finding.severity.value.upper()} {finding}\n")
    out.write(f"seglog verify: {verdict(report)}\n")


def render_json(report: VerifyReport, out, extra: dict | None = None) -> None:
    """``extra``: more top-level keys (the ``startupPreview``)."""
    json.dump({**report.as_dict(), **(extra or {})}, out, indent=2)
    out.write("\n")


def render_jsonl(report: VerifyReport, out) -> None:
    partitions = {}
    for partition in report.partitions:
        for finding in partition.findings:
            partitions[id(finding)] = partition
    for finding in report.all_findings():
        obj = finding.as_dict()
        partition = partitions.get(id(finding))
        obj["topic"] = partition.topic if partition else None
        obj["partition"] = partition.partition if partition else None
        out.write(json.dumps(obj, separators=(",", ":")) + "\n")


def render_table(report: VerifyReport, out, minimum: Severity, width: int | None = None,
                 color: bool | None = None) -> None:
    """The partitions, then the findings, laid out for ``width`` columns (the terminal's) without
    breaking a name, an offset or a position. Partitions with nothing at or above ``minimum`` are
    counted in one line unless ``minimum`` is info."""
    from seglog_cli.render import fit

    width = width or fit.terminal_width(out)
    color = fit.use_color(out) if color is None else color
    lines: list[str] = []
    listed = [p for p in report.partitions
              if minimum is Severity.INFO or any(f.severity.rank >= minimum.rank for f in p.findings)]
    quiet = len(report.partitions) - len(listed)
    if listed:
        columns = [fit.Column("partition"), fit.Column("segments", right=True, drop=3),
                   fit.Column("batches", right=True, drop=2), fit.Column("bytes", right=True, drop=4),
                   fit.Column("offsets", drop=1, label="offsets"), fit.Column("errors", right=True),
                   fit.Column("warnings", right=True)]
        rows = []
        for partition in listed:
            errors = sum(1 for f in partition.findings if f.severity is Severity.ERROR)
            warnings = sum(1 for f in partition.findings if f.severity is Severity.WARNING)
            name = f"{partition.topic}-{partition.partition}" if partition.topic is not None else partition.path
            offsets = ("" if partition.log_end_offset is None
                       else f"{partition.log_start_offset}..{partition.log_end_offset - 1}")
            rows.append([printable(name), partition.segments, partition.batches, partition.bytes, offsets,
                         fit.Cell(str(errors), "bold red" if errors else None),
                         fit.Cell(str(warnings), "yellow" if warnings else None)])
        lines += fit.render(columns, rows, width, color, title="Partitions")
    if quiet:
        lines.append(f"{counted(quiet, 'partition')} with nothing to report"
                     f"{'' if minimum is Severity.INFO else ' (--show info lists them)'}")
    findings = shown(report, minimum)
    if findings:
        columns = [fit.Column("severity"), fit.Column("code"),
                   fit.Column("file", drop=1, short=fit.short_path, label="file"),
                   fit.Column("position", right=True, drop=3, label="position"),
                   fit.Column("offset", right=True, drop=2, label="offset"), fit.Column("message", wrap=True)]
        rows = [[fit.Cell(f.severity.value, SEVERITY_STYLE[f.severity.value]), f.code, printable(f.path),
                 "" if f.position is None else str(f.position), "" if f.offset is None else str(f.offset),
                 printable(f.message)] for f in findings[:MAX_TABLE_FINDINGS]]
        lines += ([""] if lines else []) + fit.render(columns, rows, width, color, title="Findings")
        if len(findings) > MAX_TABLE_FINDINGS:
            lines.append(f"... {len(findings) - MAX_TABLE_FINDINGS} more (use --format text or json)")
    style = {"damage": "bold red", "unreadable": "bold red", "warnings": "yellow", "clean": "bold green"}[report.status]
    lines += fit.paragraph(verdict(report), width, style, color)
    out.write("\n".join(lines) + "\n")
