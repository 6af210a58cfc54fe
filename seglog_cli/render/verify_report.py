"""Rendering a verify report: a rich table, plain text lines, one JSON document, JSON Lines.

* ``table`` (default on a terminal): a summary per partition, then the findings at or above the
  chosen severity, then the verdict.
* ``text``: one line per finding (``SEVERITY CODE path: position P (offset O): message``) and a
  verdict line; stable for grep.
* ``json``: the whole report, ``{"seglogVerifyReport": 1, ...}`` (all findings, every severity).
* ``jsonl``: one finding per line (all severities), each with the topic and partition.
"""

from __future__ import annotations

import json
from pathlib import Path

from seglog_cli.storage.findings import Finding, Severity
from seglog_cli.render.literal import markup_literal
from seglog_cli.storage.verify import VerifyReport

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "dim"}
MAX_TABLE_FINDINGS = 200


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 partition``, ``2 partitions`` (``plural`` where adding an s is wrong)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


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


def render_json(report: VerifyReport, out) -> None:
    json.dump(report.as_dict(), out, indent=2)
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


def _short(path: str) -> str:
    """A finding's file as ``<partition dir>/<file>`` (the table is narrow; text and json keep
    the whole path)."""
    parts = Path(path).parts
    return "/".join(parts[-2:]) if len(parts) >= 2 else path


def render_table(report: VerifyReport, console, minimum: Severity) -> None:
    from rich.table import Table

    if report.partitions:
        table = Table(title="Partitions", title_justify="left", show_lines=False)
        table.add_column("partition", no_wrap=True, overflow="fold")
        for column in ("segments", "batches", "bytes"):
            table.add_column(column, justify="right")
        table.add_column("offsets", no_wrap=True)
        for column in ("errors", "warnings"):
            table.add_column(column, justify="right")
        for partition in report.partitions:
            errors = sum(1 for f in partition.findings if f.severity is Severity.ERROR)
            warnings = sum(1 for f in partition.findings if f.severity is Severity.WARNING)
            name = f"{partition.topic}-{partition.partition}" if partition.topic is not None else partition.path
            offsets = ("" if partition.log_end_offset is None
                       else f"{partition.log_start_offset}..{partition.log_end_offset - 1}")
            table.add_row(markup_literal(name), str(partition.segments), str(partition.batches), str(partition.bytes), offsets,
                          f"[bold red]{errors}[/]" if errors else "0",
                          f"[yellow]{warnings}[/]" if warnings else "0")
        console.print(table)
    findings = shown(report, minimum)
    if findings:
        table = Table(title="Findings", title_justify="left")
        table.add_column("severity", no_wrap=True)
        table.add_column("code", no_wrap=True)
        table.add_column("file", overflow="fold")
        table.add_column("position", justify="right", no_wrap=True)
        table.add_column("offset", justify="right", no_wrap=True)
        table.add_column("message", overflow="fold", ratio=1)
        for finding in findings[:MAX_TABLE_FINDINGS]:
            table.add_row(f"[{SEVERITY_STYLE[finding.severity.value]}]{finding.severity.value}[/]", finding.code,
                          markup_literal(_short(finding.path)), "" if finding.position is None else str(finding.position),
                          "" if finding.offset is None else str(finding.offset), markup_literal(finding.message))
        console.print(table)
        if len(findings) > MAX_TABLE_FINDINGS:
            console.print(f"... {len(findings) - MAX_TABLE_FINDINGS} more (use --format text or json)")
    style = {"damage": "bold red", "unreadable": "bold red", "warnings": "yellow", "clean": "bold green"}[report.status]
    console.print(f"[{style}]{markup_literal(verdict(report))}[/]")
