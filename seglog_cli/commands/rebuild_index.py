"""``seglog rebuild-index``: the indexes Kafka's recovery would write, planned, then applied."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from seglog_cli.commands.options import (
    METADATA_LOG_HELP,
    SERVER_CONFIG_HELP,
    PlanFormat,
    command_paths,
    config_sources,
    effective_configs,
    log_dirs_of,
    writing,
)
from seglog_cli.render import config_report, rebuild_report
from seglog_cli.status import ExitStatus, guarded
from seglog_cli.storage.write.durable import Tally
from seglog_cli.storage.write.rebuild_index import apply_rebuild, plan_rebuild
from seglog_cli.storage.config.effective_config import configs_by_partition
from seglog_cli.storage.log.partition_log import partition_dirs_under

HELP = """Rebuild .index, .timeindex and .txnindex files as Kafka's recovery does (batch by batch).

Takes segment files, partition directories and log dirs. Without --apply it only shows the plan:
per segment, which index files are missing, differ from what recovery writes, or only carry a
preallocated zero tail. With --apply it writes them (temporary file, fsync, rename) after taking
the log dir's .lock, keeping the originals and a manifest in a backup directory (seglog-backups/
beside the log dir, or --backup-dir). A segment whose .log has damage or a torn tail is refused:
run seglog recover first.

Topic configs (index.interval.bytes, segment.index.bytes) are each partition's as the broker
resolves them: Kafka's defaults < --server-config < the cluster metadata (__cluster_metadata-0
beside the partition, or --metadata-log) < --config-file/--config; the values not at their
default are printed with their source.

Example:
  seglog rebuild-index --config index.interval.bytes=4096 \\
      /var/lib/kafka/data/orders-0

Exit status:
- 0: nothing to change, or all written (--apply)
- 1: changes planned (not applied)
- 2: usage error
- 3: a segment was refused (nothing written)
- 4: an input could not be read
- 5: a broker holds the log dir's .lock (nothing written)
"""


def rebuild_index_command(
    paths: Optional[List[str]] = typer.Argument(None, help="Segment files, partition dirs or log dirs (globs allowed)."),
    apply: bool = typer.Option(False, "--apply", help="Write the planned files (default: only show the plan)."),
    config: Optional[List[str]] = typer.Option(None, "--config", help="Topic config key=value (index.interval.bytes, segment.index.bytes), over the cluster's (repeatable)."),
    config_file: Optional[str] = typer.Option(None, "--config-file", help="A properties file of topic configs (as --config)."),
    server_config: Optional[str] = typer.Option(None, "--server-config", help=SERVER_CONFIG_HELP),
    metadata_log: Optional[str] = typer.Option(None, "--metadata-log", help=METADATA_LOG_HELP),
    no_txn_index: bool = typer.Option(False, "--no-txn-index", help="Leave .txnindex files alone."),
    backup_dir: Optional[str] = typer.Option(None, "--backup-dir", help="Where originals and the manifest go (default: seglog-backups/ beside the log dir)."),
    output_format: PlanFormat = typer.Option(PlanFormat.text, "--format", help="text or json."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="text: list the files that are already right too."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(paths, apply, config, config_file, server_config, metadata_log, no_txn_index, backup_dir, output_format,
         verbose) -> int:
    inputs = _inputs(paths)
    sources = config_sources(config, config_file, server_config, metadata_log)
    shown = rebuild_report.Shown(output_format == PlanFormat.json, verbose)
    with writing(apply, log_dirs_of(inputs), "rebuild-index", backup_dir) as session:
        resolved = effective_configs(sources, _partition_dirs(inputs))
        # planned under the lock (or only shown): no fingerprint; the new bytes of the files that
        # change go to the session's spool, none are kept for a plan only shown
        plan = plan_rebuild(inputs, configs_by_partition(resolved), txn_index=not no_txn_index, fingerprint=False,
                            spool=session.spool() if session is not None else Tally(), on_segment=shown.add)
        applied = None
        if apply and not plan.refused and not plan.unreadable and plan.changes:
            applied = apply_rebuild(plan, backup_dir, session)
    if output_format == PlanFormat.json:
        rebuild_report.render_json(plan, sys.stdout, applied, config_report.json_fields(resolved), shown)
    else:
        config_report.render_all_text(resolved, sys.stdout)
        rebuild_report.render_text(plan, sys.stdout, applied, verbose, shown)
    sys.stdout.flush()
    if plan.unreadable:
        return ExitStatus.UNREADABLE
    if plan.refused:
        return ExitStatus.DAMAGE
    if plan.changes and applied is None:
        return ExitStatus.WARNINGS
    return ExitStatus.OK


def _inputs(paths) -> list[str]:
    return command_paths(paths, "segment file, partition directory or log dir")


def _partition_dirs(inputs: list[str]) -> list[Path]:
    """The partition dirs the inputs are in or hold (each once)."""
    out: dict[Path, Path] = {}  # absolute -> as found
    for raw in inputs:
        path = Path(raw)
        found = [path.parent] if path.is_file() else partition_dirs_under(path) if path.is_dir() else []
        for directory in found:
            out.setdefault(directory.absolute(), directory)
    return list(out.values())
