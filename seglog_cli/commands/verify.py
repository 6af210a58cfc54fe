"""``seglog verify``: every kind of damage in segments, indexes, snapshots and checkpoints."""

from __future__ import annotations

import os
import sys
from enum import Enum
from typing import List, Optional

import typer

from seglog_cli.commands.options import JOBS_HELP, ReportFormat, command_paths, jobs_or_default, show_progress
from seglog_cli.commands.startup_preview import startup_previews
from seglog_cli.render import startup_report, verify_report
from seglog_cli.status import ExitStatus, UsageError, guarded
from seglog_cli.storage.log.findings import Severity
from seglog_cli.storage.verify.verify import CLEAN, DAMAGE, UNREADABLE, VerifyOptions, verify

HELP = """Check Kafka log files for damage: CRCs, framing, offsets, indexes, snapshots, checkpoints.

Takes segment and index files, partition directories and whole log dirs. --level shallow checks
the framing and CRC of every batch (and the indexes, snapshots and checkpoints against them);
--level deep also decodes every record. Damage in the middle of a file does not stop it: it
resumes at the next valid batch and reports what it skipped.

A KRaft broker's log dir (node.id in meta.properties) also gets a start-up preview: per partition
dir, what the broker does with it at its next start, given the metadata image it will meet when it
has caught up (kept, marked stray with Kafka's reason and the record that decided it, created
empty; JBOD: a dir outside its assigned directory). --metadata-log DIR names a current copy of the
metadata log (a controller's); without it the broker's own copy is read, which ends where the
broker stopped.

Example:
  seglog verify --level deep --jobs 2 /var/lib/kafka/data

Exit status:
- 0: clean (informational findings only)
- 1: warnings only (what a broker repairs by itself, such as a torn tail)
- 2: usage error
- 3: damage found
- 4: an input could not be read
"""


SERIAL_SECONDS = 0.05  # default --jobs: verify alone this long before forking (a fork costs ~10-40 ms)


class Level(str, Enum):
    shallow = "shallow"
    deep = "deep"


def verify_command(
    paths: Optional[List[str]] = typer.Argument(None, help="Files, partition dirs or log dirs (globs allowed)."),
    level: Level = typer.Option(Level.shallow, "--level", help="shallow: framing and CRC of every batch; deep: also every record."),
    output_format: Optional[ReportFormat] = typer.Option(None, "--format", help="table (default on a terminal), text (default otherwise), json or jsonl."),
    show: Severity = typer.Option(Severity.WARNING, "--show", help="table/text: the least severity listed (json and jsonl list all)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help=f"Partitions verified in parallel processes {JOBS_HELP}; with the default, a run with little work stays in this process. With one partition or file, its big segments' records are decoded by that many processes (--level deep)."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="Progress on stderr (default: when stderr is a terminal and stdout is not a pipe)."),
    spark: Optional[str] = typer.Option(None, "--spark", metavar="MASTER", help="Verify the segments as Spark tasks on this master (local[4], spark://host:7077, yarn); needs the spark extra (pyspark, pyarrow, pandas)."),
    metadata_log: Optional[str] = typer.Option(None, "--metadata-log", metavar="DIR", help="The start-up preview of a KRaft broker's log dirs judges them against this metadata log (a __cluster_metadata-0 dir, or a controller's or broker's log dir holding one; default: the broker's own, which ends where it stopped)."),
    remote: Optional[List[str]] = typer.Option(None, "--remote", help="Tiered storage (LocalTieredStorage's kafka-tiered-storage dir, or remote partition dirs), repeatable: each remote partition is verified with the local partition of the same topic-partition, as one log (the same as giving it as a PATH)."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(paths, level, output_format, show, jobs, progress, spark, metadata_log=None, remote=None) -> int:
    inputs = _inputs(list(paths or []) + list(remote or []))
    options = VerifyOptions(level=level.value, jobs=jobs_or_default(jobs),
                            serial_seconds=SERIAL_SECONDS if jobs is None else 0.0)
    if spark is not None:
        report = _spark_report(inputs, level.value, spark)
    elif show_progress(progress):
        from seglog_cli.render.progress import verify_progress

        with verify_progress(_total_bytes(inputs)) as advance:
            report = verify(inputs, options, advance)
    else:
        report = verify(inputs, options)
    previews = startup_previews(inputs, metadata_log)
    for preview in previews:
        report.findings.extend(preview.findings())
    fmt = output_format or (ReportFormat.table if sys.stdout.isatty() else ReportFormat.text)
    if fmt == ReportFormat.text:
        startup_report.render_text(previews, sys.stdout, show_kept=show is Severity.INFO)
    elif fmt == ReportFormat.table:
        from seglog_cli.render.fit import terminal_width

        startup_report.render_text(previews, sys.stdout, terminal_width(sys.stdout), show is Severity.INFO)
    if fmt == ReportFormat.json:
        verify_report.render_json(report, sys.stdout, startup_report.json_fields(previews))
    elif fmt == ReportFormat.jsonl:
        verify_report.render_jsonl(report, sys.stdout)
    elif fmt == ReportFormat.text:
        verify_report.render_text(report, sys.stdout, show)
    else:
        verify_report.render_table(report, sys.stdout, show)
    sys.stdout.flush()
    return {CLEAN: ExitStatus.OK, DAMAGE: ExitStatus.DAMAGE, UNREADABLE: ExitStatus.UNREADABLE}.get(
        report.status, ExitStatus.WARNINGS)


def _spark_report(inputs, level: str, master: str):
    try:
        from seglog_cli.spark.verify import verify_with_spark
    except ImportError as exc:
        raise UsageError(f"--spark needs the spark extra (pip install 'seglog[spark]'): {exc}") from None
    return verify_with_spark(inputs, level, master)


def _inputs(paths) -> list[str]:
    return command_paths(paths)


def _total_bytes(paths: list[str]) -> int:
    total = 0
    for path in paths:
        if os.path.isfile(path):
            total += _size(path) if path.endswith(".log") else 0
            continue
        for root, _dirs, files in os.walk(path):
            total += sum(_size(os.path.join(root, f)) for f in files if f.endswith(".log"))
    return total


def _size(path: str) -> int:
    """A regular file's size for the progress bar; 0 for what verify will report instead."""
    try:
        return os.path.getsize(path) if os.path.isfile(path) else 0
    except OSError:
        return 0
