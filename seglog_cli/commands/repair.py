"""``seglog repair --from``: a damaged replica made whole from a healthy one, byte for byte."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import List, Optional

import typer

from seglog_cli.commands.options import (METADATA_LOG_HELP, SERVER_CONFIG_HELP, PlanFormat, config_sources,
                                         effective_configs, writing)
from seglog_cli.status import ExitStatus, guarded

HELP = """Repair a damaged replica of a partition from a healthy replica, byte for byte.

For every range of DAMAGED that is damaged (a batch failing its CRC, a corrupt or zeroed region,
a torn tail) and that HEALTHY holds at the same positions, in the same leader epochs and with
valid CRCs, HEALTHY's batches for exactly that offset range are put into DAMAGED, and the
segment's .index and .timeindex are HEALTHY's when the segment comes out HEALTHY's bytes (and
HEALTHY's indexes point right), else rebuilt (index.interval.bytes and segment.index.bytes as
DAMAGED's partition resolves them: Kafka's defaults < --server-config < the cluster metadata
(__cluster_metadata-0 beside the partition, or --metadata-log) < --config-file/--config; the values
not at their default are printed with their source). A segment DAMAGED lacks in the middle of its
log is restored whole from HEALTHY when the segments either side agree. Offsets DAMAGED lacks at
its end (a cut tail, a lost last segment: it lags) are missing, not damaged: they are said, and
--tail copies them when DAMAGED's log is a prefix of HEALTHY's. HEALTHY is only read.
Refused, with nothing changed, when the replicas diverge in that range, when HEALTHY is damaged
there too, or when their topic ids differ.

Where DAMAGED diverges from HEALTHY (after an unclean leader election: another leader epoch, or
the same epoch with other bytes, at an offset both hold, as seglog diff finds it), that is no
damage: repair says at which offset and why, what DAMAGED alone holds from there on, and the
commands that keep it (seglog diff --export-lost, then seglog replay), and exits 3; damage below
that offset is still repaired.

When a metadata log is at hand (--metadata-log, else a __cluster_metadata-0 in DAMAGED's or
HEALTHY's log dir), each leader epoch of the two replicas is named with the election behind it:
the leader broker, the metadata offset and time it became leader, clean, preferred or unclean.

Without --apply it prints the plan; with --apply it takes DAMAGED's log dir .lock before it
plans, journals every step and keeps every replaced byte in seglog-backups/ beside the log dir
(undo with seglog undo --apply DIR).

Example:
  seglog repair --from /data/b2/events-0 /data/b1/events-0 --apply

Exit status:
- 0: nothing to repair, or applied (offsets only missing at DAMAGED's end, without --tail, are no
  damage: also 0)
- 1: a plan (not applied)
- 2: usage error
- 3: DAMAGED diverges from HEALTHY (said with its offset; damage below it is planned, or with
  --apply repaired), or refused (the replicas diverge in the damaged range, HEALTHY damaged too,
  another topic id; nothing changed)
- 4: an input could not be read
- 5: a broker holds the log dir's .lock
- 6: cannot write here
"""


def repair_command(
    damaged: str = typer.Argument(..., help="The damaged replica's partition directory."),
    healthy: str = typer.Option(..., "--from", help="The healthy replica's partition directory (only read)."),
    apply: bool = typer.Option(False, "--apply", help="Carry out the plan (default: only show it)."),
    tail: bool = typer.Option(False, "--tail", help="Also copy what DAMAGED lacks at its end from HEALTHY."),
    config: Optional[List[str]] = typer.Option(None, "--config", help="Topic config key=value (index.interval.bytes, segment.index.bytes), over the cluster's (repeatable)."),
    config_file: Optional[str] = typer.Option(None, "--config-file", help="A properties file of topic configs (as --config)."),
    server_config: Optional[str] = typer.Option(None, "--server-config", help=SERVER_CONFIG_HELP),
    metadata_log: Optional[str] = typer.Option(None, "--metadata-log", help=METADATA_LOG_HELP + " Its elections name the leader epochs compared."),
    backup_dir: Optional[str] = typer.Option(None, "--backup-dir", help="Where replaced bytes and the manifest go."),
    output_format: PlanFormat = typer.Option(PlanFormat.text, "--format", help="text or json."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(damaged, healthy, apply, tail, config, config_file, server_config, metadata_log, backup_dir,
         output_format) -> int:
    from seglog_cli.render import config_report, repair_report
    from seglog_cli.storage.log.errors import UnreadableInputError
    from seglog_cli.storage.log.partition_log import looks_like_partition_dir
    from seglog_cli.storage.replicas.repair_apply import build_steps, staging_dir
    from seglog_cli.storage.replicas.replica_repair import plan_repair
    from seglog_cli.storage.write.safety import default_backup_root, log_dir_of

    for path in (healthy, damaged):
        if not Path(path).is_dir() or not looks_like_partition_dir(Path(path)):
            raise UnreadableInputError("not a partition directory", path)
    sources = config_sources(config, config_file, server_config, metadata_log)
    applied = None
    with writing(apply, [log_dir_of(damaged)], "repair", backup_dir) as session:
        resolved = effective_configs(sources, [Path(damaged)])
        plan = plan_repair(healthy, damaged, tail)  # planned under the lock
        if apply and not plan.empty:
            import shutil

            root = Path(backup_dir) if backup_dir else default_backup_root(log_dir_of(damaged))
            staging = staging_dir(root)
            try:
                steps = build_steps(plan, staging, resolved[0].config)
                applied = session.apply(steps)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    status = _status(plan, applied)
    elections = _elections(metadata_log, damaged, healthy)
    if output_format == PlanFormat.json:
        document = {**repair_report.document(plan, applied, status, elections), **config_report.json_fields(resolved)}
        json.dump(document, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        config_report.render_all_text(resolved, sys.stdout)
        repair_report.render_text(plan, applied, apply, sys.stdout, elections)
    sys.stdout.flush()
    return status


def _elections(metadata_log, damaged, healthy):
    """The elections behind the replicas' leader epochs (None without a metadata log)."""
    from seglog_cli.commands.options import metadata_elections
    from seglog_cli.storage.log.naming import parse_partition_dir_name

    name = parse_partition_dir_name(Path(damaged).resolve().name)
    subject = {(name.topic, name.partition)} if name is not None else set()
    return metadata_elections(metadata_log, [Path(damaged).resolve().parent, Path(healthy).resolve().parent], subject)


def _status(plan, applied) -> int:
    if plan.divergence is not None:
        return ExitStatus.DAMAGE  # another history: needs a human, whatever was repaired below it
    if plan.empty or applied is not None:
        return ExitStatus.OK
    return ExitStatus.WARNINGS
