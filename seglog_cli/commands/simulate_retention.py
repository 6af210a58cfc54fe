"""``seglog simulate-retention``: what retention, rolling and compaction delete and keep, when, why."""

from __future__ import annotations

import io
import json
import re
import sys
import time
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from seglog_cli.commands.options import (
    METADATA_LOG_HELP,
    SERVER_CONFIG_HELP,
    command_paths,
    config_sources,
    effective_configs,
    parse_timestamp,
    writing,
)
from seglog_cli.render import config_report, plots, retention_report
from seglog_cli.render.plan_stream import Scratch, json_item, write_json
from seglog_cli.render.plots import PartitionSchedule, PlotError, picture_format
from seglog_cli.status import ExitStatus, UsageError, guarded
from seglog_cli.storage.config.broker_config import (
    CHECK_INTERVAL,
    CLEANER_BACKOFF,
    DEFAULT_CLEANER_BACKOFF_MS,
    PRODUCER_EXPIRATION,
)
from seglog_cli.storage.config.effective_config import (
    RetentionRefusedError,
    compact_only_refusal,
)
from seglog_cli.storage.log.errors import CannotWriteError, UnreadableInputError
from seglog_cli.storage.log.naming import METADATA_TOPIC
from seglog_cli.storage.log.partition_log import partition_dirs_under
from seglog_cli.storage.log.producer_state import PRODUCER_ID_EXPIRATION_MS
from seglog_cli.storage.retention.compaction import plan_compaction
from seglog_cli.storage.retention.retention import (
    DEFAULT_CHECK_INTERVAL_MS,
    plan_retention,
    read_partition_state,
)
from seglog_cli.storage.retention.retention_apply import apply_deletions, deletion_of
from seglog_cli.storage.retention.retention_model import (
    ModelError,
    Producer,
    model_retention,
)
from seglog_cli.storage.retention.retention_timeline import (
    build_timeline,
    schedule_segments,
)
from seglog_cli.storage.write.safety import log_dir_of

HELP = """Show which segments retention deletes and which records compaction removes, when and why.

On partition dirs or log dirs: for every segment, whether the log start offset, retention.bytes
(the size walk, active segment included), retention.ms (largest timestamp, or the file mtime when
no record has one) or the high watermark deletes or keeps it, with Kafka's reason; bytes and
offsets reclaimed and the new log start offset. Topic configs are resolved as the broker does:
Kafka's defaults < --server-config (log.* settings) < the cluster metadata (__cluster_metadata-0
beside the partition, or --metadata-log: cluster default, this broker's and the topic's configs)
< --config-file/--config; each value not at its default is printed with its source. The high
watermark, log start offset and cleaner checkpoint come from the log dir's checkpoint files. --at adds a timeline (check interval and file.delete.delay.ms taken
into account). With cleanup.policy containing compact, one cleaner pass is simulated too.
--apply deletes the planned segments as a broker does (renamed .deleted, then removed) into the
backup directory with a manifest (undo with seglog undo), under the log dir's .lock.

--model needs no data: from a producer (--records-per-sec, --record-size, --batch-records) and
segment/retention configs it tells when segments roll and how long a record stays readable.

Examples:
  seglog simulate-retention --config retention.ms=600000 --at +10m --at +1h \\
      /var/lib/kafka/data/orders-0
  seglog simulate-retention --model --records-per-sec 0.2 --record-size 150 \\
      --config segment.bytes=16384 --config retention.ms=600000

Exit status:
- 0: nothing would be deleted or removed (or --apply did it, or --model)
- 1: deletions or removals planned
- 2: usage error
- 3: --apply refused (nothing changed): it would delete by retention.ms or retention.bytes from a
  topic whose cleanup.policy (as the broker has it, without --config) is compact only
- 4: an input could not be read
- 5: the log dir is locked
"""


class Format(str, Enum):
    table = "table"
    text = "text"
    json = "json"


_DURATION = re.compile(r"^\+(\d+(?:\.\d+)?)(ms|s|m|min|h|d)?$")
_UNITS = {"ms": 1, "s": 1000, "m": 60000, "min": 60000, "h": 3600000, "d": 86400000, None: 1}


def simulate_retention_command(
    paths: Optional[List[str]] = typer.Argument(None, help="Partition dirs or log dirs (globs allowed)."),
    config: Optional[List[str]] = typer.Option(None, "--config", help="Topic config key=value: retention.ms, retention.bytes, cleanup.policy, segment.bytes, delete.retention.ms, min.compaction.lag.ms, min.cleanable.dirty.ratio, file.delete.delay.ms ... or a log.* broker synonym, log.retention.check.interval.ms, producer.id.expiration.ms (repeatable)."),
    config_file: Optional[str] = typer.Option(None, "--config-file", help="A properties file: topic configs, or a broker's server.properties (over everything, as --config)."),
    server_config: Optional[str] = typer.Option(None, "--server-config", help=SERVER_CONFIG_HELP),
    metadata_log: Optional[str] = typer.Option(None, "--metadata-log", help=METADATA_LOG_HELP),
    now: Optional[str] = typer.Option(None, "--now", help="The clock: epoch ms or ISO-8601 (default: now)."),
    at: Optional[List[str]] = typer.Option(None, "--at", help="A later time for the timeline: epoch ms, ISO-8601 or +10m/+2h/+1d from --now (repeatable)."),
    check_interval_ms: Optional[int] = typer.Option(None, "--check-interval-ms", help="log.retention.check.interval.ms (default 300000, or the config's)."),
    high_watermark: Optional[int] = typer.Option(None, "--high-watermark", help="Override replication-offset-checkpoint."),
    log_start_offset: Optional[int] = typer.Option(None, "--log-start-offset", help="Override log-start-offset-checkpoint."),
    cleaner_checkpoint: Optional[int] = typer.Option(None, "--cleaner-checkpoint", help="Override cleaner-offset-checkpoint."),
    records: bool = typer.Option(False, "--records", help="text: list the compaction verdict of every record."),
    model: bool = typer.Option(False, "--model", help="The what-if model: no data, a producer and configs."),
    records_per_sec: Optional[float] = typer.Option(None, "--records-per-sec", help="--model: records per second."),
    record_size: Optional[int] = typer.Option(None, "--record-size", help="--model: bytes one record takes in the .log."),
    batch_records: int = typer.Option(1, "--batch-records", help="--model: records per batch."),
    batch_overhead: int = typer.Option(0, "--batch-overhead", help="--model: bytes per batch besides the records (61 for a v2 header)."),
    apply: bool = typer.Option(False, "--apply", help="Delete the planned segments (into the backup directory, undoable)."),
    backup_dir: Optional[str] = typer.Option(None, "--backup-dir", help="Where removed files and the manifest go."),
    output_format: Optional[Format] = typer.Option(None, "--format", help="table (default on a terminal), text or json."),
    plot: Optional[str] = typer.Option(None, "--plot", metavar="FILE", help="Also draw the timeline into FILE, a .png or .svg picture: each segment's bar (readable, deletable, renamed .deleted) over time and the log bytes left, with --now and every --at marked (needs matplotlib: pip install 'seglog[plot]')."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(paths, config, config_file, server_config, metadata_log, now, at, check_interval_ms, high_watermark,
         log_start_offset, cleaner_checkpoint, records, model, records_per_sec, record_size, batch_records,
         batch_overhead, apply, backup_dir, output_format, plot) -> int:
    plot_format = _plot_format(plot, model)
    sources = config_sources(config, config_file, server_config, metadata_log, lenient_file=True)
    fmt = output_format or (Format.table if sys.stdout.isatty() else Format.text)
    if model:
        effective = effective_configs(sources, [None])[0]
        interval, _ = _check_interval(check_interval_ms, effective)
        return _model(effective.config, records_per_sec, record_size, batch_records, batch_overhead, interval, fmt)
    now_ms = parse_timestamp(now, "--now") if now is not None else int(time.time() * 1000)
    at_ms = [_at(text, now_ms) for text in at or []]
    partitions = _partitions(paths)
    # each partition is shown as it is planned: straight to stdout for a plan in text or a table;
    # into a scratch file for JSON (one document) and for --apply (nothing is shown when a partition
    # is refused, and the backup directories are known only at the end)
    shown = Shown(fmt, records, sys.stdout, buffered=apply or fmt == Format.json, apply=apply)
    changes, deletions, drawn = False, [], []
    with writing(apply, [log_dir_of(p) for p in partitions], "simulate-retention", backup_dir) as session:
        for partition in partitions:
            state = read_partition_state(partition, high_watermark, log_start_offset)
            if not state.segments:
                continue
            effective = effective_configs(sources, [partition])[0]
            plan = plan_retention(state, effective.config, now_ms)
            if apply:
                _refuse_compact_only(effective, plan)
            topic_config = effective.config
            interval, check_source = _check_interval(check_interval_ms, effective)
            timeline = (build_timeline(plan.state, topic_config, now_ms, at_ms, interval, check_source)
                        if at_ms else None)
            expiration_ms = _number(effective.broker.get(PRODUCER_EXPIRATION, PRODUCER_ID_EXPIRATION_MS),
                                    PRODUCER_EXPIRATION)
            compaction = (plan_compaction(plan.state.path, topic_config, now_ms, high_watermark=high_watermark,
                                          log_start_offset=log_start_offset, cleaner_checkpoint=cleaner_checkpoint,
                                          producer_id_expiration_ms=expiration_ms)
                          if topic_config.compact else None)
            deletion = deletion_of(plan) if apply and plan.deleted else None
            if deletion is not None:
                deletions.append(deletion)
            changes = (changes or (bool(plan.deleted) and deletion is None)
                       or bool(compaction and compaction.removed_offsets))
            shown.add(effective, plan, timeline, compaction, deletion)
            if plot is not None:
                drawn.append(PartitionSchedule(partition.name, timeline.schedules if timeline else
                                               schedule_segments(plan.state, topic_config, now_ms, interval)))
        backups = apply_deletions(deletions, session) if deletions else {}
    shown.finish(backups)
    sys.stdout.flush()
    if plot is not None:
        _draw(plot, plot_format, drawn, now_ms, at_ms)
    return ExitStatus.WARNINGS if changes else ExitStatus.OK


def _plot_format(plot, model) -> str | None:
    """--plot's format from its name, and matplotlib, checked before anything is read."""
    if plot is None:
        return None
    if model:
        raise UsageError("--plot draws a log dir's segments; --model has none")
    try:
        fmt = picture_format(plot)
        plots.require_matplotlib()
    except PlotError as exc:
        raise UsageError(str(exc)) from None
    return fmt


def _draw(path, fmt, drawn, now_ms, at_ms) -> None:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now_ms / 1000))
    try:
        with open(path, "wb") as out:
            plots.retention_figure(drawn, now_ms, at_ms, out, fmt, title=f"seglog simulate-retention, now {when}")
    except OSError as exc:
        raise CannotWriteError(f"{path}: cannot write the picture: {exc.strerror or exc}") from None


def _check_interval(given, effective) -> tuple[int, str]:
    """The retention check interval: the cleaner's backoff for compacted logs (the cleaner
    thread runs retention for them), else log.retention.check.interval.ms."""
    if given is not None:
        return given, "--check-interval-ms"
    if effective.config.compact:
        return (_number(effective.broker.get(CLEANER_BACKOFF, DEFAULT_CLEANER_BACKOFF_MS), CLEANER_BACKOFF),
                f"{CLEANER_BACKOFF} (the cleaner thread runs retention for compacted logs)")
    return _number(effective.broker.get(CHECK_INTERVAL, DEFAULT_CHECK_INTERVAL_MS), CHECK_INTERVAL), CHECK_INTERVAL


def _refuse_compact_only(effective, plan) -> None:
    """--apply: nothing is deleted by time or size from a topic the broker keeps compact-only
    (checked as each partition is planned, before anything is written)."""
    reason = compact_only_refusal(effective, {verdict.rule for verdict in plan.deleted})
    if reason is not None:
        raise RetentionRefusedError(reason)


class Shown:
    """Each partition's plan as it is made: text or a table written at once, or kept in a scratch
    file (``buffered``: JSON, --apply) until :meth:`finish` (the backup directories known)."""

    def __init__(self, fmt, records: bool, out, buffered: bool, apply: bool = False):
        from seglog_cli.render import fit

        self.fmt, self.records, self.out, self.apply = fmt, records, out, apply
        self.scratch = Scratch() if buffered else None
        self.width, self.color = fit.terminal_width(out), fit.use_color(out)

    def add(self, effective, plan, timeline, compaction, deletion) -> None:
        if self.fmt == Format.json:
            document = plan.as_dict()
            document["configs"] = effective.as_dict()
            document["configNotes"] = list(effective.notes)
            document["timeline"] = None if timeline is None else timeline.as_dict()
            document["compaction"] = None if compaction is None else compaction.as_dict(with_records=True)
            document["applied"] = None if deletion is None else {
                "deletedSegments": deletion.deleted, "files": [str(p) for p in deletion.files],
                "newLogStartOffset": deletion.new_log_start_offset, "backupDir": _backup_marker(deletion)}
            self.scratch.add(json_item(document, default=str))
            return
        out = io.StringIO() if self.scratch is not None else self.out
        config_report.render_text(effective, out)
        out.flush()
        if self.fmt == Format.table:
            retention_report.render_table(plan, out, timeline, compaction, self.records, self.width, self.color)
        else:
            retention_report.render_text(plan, out, timeline, compaction, self.records)
        if deletion is not None:
            marker = _backup_marker(deletion)
            out.write(f"applied: {len(deletion.files)} file(s) renamed .deleted and quarantined in {marker}; log start "
                      f"offset {deletion.new_log_start_offset} (undo: seglog undo {marker})\n")
        elif self.apply:
            out.write("applied: nothing to do (no segment is due for deletion)\n")
        if self.scratch is not None:
            self.scratch.add_text(out.getvalue())

    def finish(self, backups: dict) -> None:
        """Write out what was kept, each backup directory in place of its marker."""
        if self.scratch is None:
            return
        replace = {_marker(log_dir): str(backup) for log_dir, backup in backups.items()}
        if self.fmt == Format.json:
            write_json({"partitions": None}, "partitions", self.scratch, self.out,
                       {json.dumps(k): json.dumps(v) for k, v in replace.items()})
        else:
            for line in self.scratch.lines():
                for marker, backup in replace.items():
                    line = line.replace(marker, backup)
                self.out.write(line + "\n")
        self.scratch.close()


def _marker(log_dir) -> str:
    return f"\x00backup-dir\x00{log_dir}\x00"


def _backup_marker(deletion) -> str:
    """Where a partition's backup directory goes once the run made it (one per log dir)."""
    return _marker(deletion.partition.parent.absolute())


def _model(topic_config, records_per_sec, record_size, batch_records, batch_overhead, check_interval_ms, fmt) -> int:
    if records_per_sec is None or record_size is None:
        raise UsageError("--model needs --records-per-sec and --record-size")
    try:
        result = model_retention(Producer(records_per_sec, record_size, batch_records, batch_overhead), topic_config,
                                 check_interval_ms)
    except ModelError as exc:
        raise UsageError(str(exc)) from None
    if fmt == Format.json:
        retention_report.render_json(result.as_dict(), sys.stdout)
    else:
        retention_report.render_model_text(result, sys.stdout)
    return ExitStatus.OK


def _number(value, key: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise UsageError(f"Invalid value {value} for configuration {key}: Not a number of type LONG") from None
    if number < 1:
        raise UsageError(f"Invalid value {number} for configuration {key}: Value must be at least 1")
    return number


def _at(text: str, now_ms: int) -> int:
    match = _DURATION.match(text.strip())
    if match:
        return now_ms + int(float(match.group(1)) * _UNITS[match.group(2)])
    return parse_timestamp(text, "--at")


def _partitions(paths) -> list:
    found, skipped = [], 0
    for path in command_paths(paths, "partition directory or log dir"):
        if not Path(path).exists():
            raise UnreadableInputError("no such file or directory", path)
        for partition in partition_dirs_under(Path(path)):
            if partition.name.startswith(METADATA_TOPIC + "-"):
                print(f"seglog: skipped {partition}: the KRaft metadata log is trimmed by snapshots, not by "
                      "retention", file=sys.stderr)
                skipped += 1
            else:
                found.append(partition)
    if not found and not skipped:
        raise UsageError("no partition directory found under the given paths")
    return found
