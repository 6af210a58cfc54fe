"""``seglog recover``: Kafka's start-up recovery, offline, planned first."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from seglog_cli.commands.options import (
    JOBS_HELP,
    jobs_or_default,
    METADATA_LOG_HELP,
    SERVER_CONFIG_HELP,
    PlanFormat,
    command_paths,
    show_progress,
    config_sources,
    effective_configs,
    writing,
)
from seglog_cli.commands.startup_preview import startup_previews
from seglog_cli.render import config_report, recover_report, startup_report
from seglog_cli.render.fit import terminal_width
from seglog_cli.status import ExitStatus, guarded
from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.log.findings import Severity
from seglog_cli.storage.log.partition_log import partition_dirs_under
from seglog_cli.storage.recovery.recover import apply_recover, plan_recover
from seglog_cli.storage.write.safety import log_dir_of
from seglog_cli.storage.config.effective_config import configs_by_partition

HELP = """Run Kafka's start-up log recovery offline: plan it, then apply it with backups.

Takes partition directories and log dirs. --mode kafka does what the broker would do at start-up
(temp files, swaps, orphan indexes, every segment from the recovery point on recovered when the
log dir has no .kafka_cleanshutdown, truncation at the first invalid batch and removal of every
later segment, indexes and .txnindex rebuilt, producer snapshots, leader epochs and checkpoints),
so a start-up can be previewed. Without --apply it prints the plan; with --apply it takes the log
dir's .lock before it plans, journals every step and keeps every removed byte in seglog-backups/
beside the log dir (undo with seglog undo --apply DIR; an interrupted run is rolled back by the
next writing seglog command on the log dir).

Topic configs (index.interval.bytes, segment.index.bytes...) are each partition's as the broker
resolves them: Kafka's defaults < --server-config < the cluster metadata (__cluster_metadata-0
beside the partition, or --metadata-log) < --config; the values not at their default are printed
with their source.

The plan of a KRaft broker's log dir (node.id in meta.properties) also previews what the broker
does with each partition dir when it starts, given the metadata image it meets once caught up
(--metadata-log, else its own copy, which ends where it stopped): kept, marked stray (with Kafka's
reason and the record that decided it), created empty; JBOD: a dir outside its assigned directory.
seglog never renames nor deletes a dir for this: see runbook 12.

Example:
  seglog recover --mode kafka /var/lib/kafka/data/orders-0

Exit status:
- 0: nothing to do, or applied
- 1: a plan (not applied)
- 2: usage error
- 3: a partition was refused (Kafka itself would not load it as recovery does: a damaged segment
  whose offsets overflow its base, an index the configured size cannot hold; the other partitions
  are planned and, with --apply, applied)
- 4: an input could not be read
- 5: a broker holds the log dir's .lock
- 6: cannot write here (read-only file system, permission, disk full, a symlink): the message says
  what, if anything, was changed
"""


class Mode(str, Enum):
    kafka = "kafka"
    salvage = "salvage"


def recover_command(
    paths: Optional[List[str]] = typer.Argument(None, help="Partition dirs or log dirs (globs allowed)."),
    mode: Mode = typer.Option(Mode.kafka, "--mode", help="kafka: what the broker does; salvage: keep what Kafka would drop."),
    apply: bool = typer.Option(False, "--apply", help="Carry out the plan (default: only show it)."),
    config: Optional[List[str]] = typer.Option(None, "--config", help="Topic config key=value (index.interval.bytes, segment.index.bytes), over the cluster's (repeatable)."),
    server_config: Optional[str] = typer.Option(None, "--server-config", help=SERVER_CONFIG_HELP),
    metadata_log: Optional[str] = typer.Option(None, "--metadata-log", help=METADATA_LOG_HELP),
    backup_dir: Optional[str] = typer.Option(None, "--backup-dir", help="Where removed bytes and the manifest go."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help=f"Partitions planned in parallel processes (num.recovery.threads.per.data.dir) {JOBS_HELP}."),
    output_format: PlanFormat = typer.Option(PlanFormat.text, "--format", help="text or json."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="Progress on stderr (default: when stderr is a terminal and stdout is not a pipe)."),
    show: Severity = typer.Option(Severity.WARNING, "--show", help="text: info lists every partition; warning (default) only those recovery changes, refuses or notes something about, the others counted in one line (json lists all)."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(paths, mode, apply, config, server_config, metadata_log, backup_dir, jobs, output_format, progress, show) -> int:
    sources = config_sources(config, None, server_config, metadata_log)
    inputs = command_paths(paths, "partition directory or log dir")
    partitions = _partitions(inputs)
    with writing(apply, [log_dir_of(p) for p in partitions], "recover", backup_dir) as session:
        resolved = effective_configs(sources, partitions)
        topic_config = configs_by_partition(resolved)
        jobs = jobs_or_default(jobs, len(partitions))
        if show_progress(progress):
            from seglog_cli.render.progress import recover_progress
            with recover_progress(len(partitions)) as advance:
                plan = plan_recover(partitions, mode.value, topic_config, jobs, on_partition=advance, fingerprint=False)
        else:
            plan = plan_recover(partitions, mode.value, topic_config, jobs, fingerprint=False)
        applied = apply_recover(plan, backup_dir, session) if apply and plan.steps else None
    previews = [] if apply else startup_previews(inputs, metadata_log)
    if output_format == PlanFormat.json:
        recover_report.render_json(plan, sys.stdout, applied,
                                   {**config_report.json_fields(resolved), **startup_report.json_fields(previews)})
    else:
        config_report.render_all_text(resolved, sys.stdout)
        startup_report.render_text(previews, sys.stdout, terminal_width(sys.stdout), show is Severity.INFO)
        recover_report.render_text(plan, sys.stdout, applied, show_all=show is Severity.INFO)
    sys.stdout.flush()
    if any(p.refused for p in plan.partitions):
        return ExitStatus.DAMAGE
    return ExitStatus.WARNINGS if plan.steps and applied is None and not apply else ExitStatus.OK


def _partitions(inputs: list[str]) -> list[Path]:
    out: list[Path] = []
    for raw in inputs:
        path = Path(raw)
        if not path.is_dir():
            raise UnreadableInputError("not a partition directory or log dir", path)
        out.extend(partition_dirs_under(path))
    if not out:
        raise UnreadableInputError("no partition directory found", inputs[0])
    return out
