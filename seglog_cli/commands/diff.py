"""``seglog diff``: the replicas of a partition compared by offset and batch."""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

from seglog_cli.commands.options import JOBS_HELP, ELECTIONS_METADATA_LOG_HELP, PayloadEncoding, ReportFormat, command_paths, jobs_or_default
from seglog_cli.status import ExitStatus, UsageError, guarded

HELP = """Compare the replicas of a partition (the copies of several brokers) by offset and batch.

Takes partition directories of one topic-partition, or whole log dirs (partitions matched by
directory name; a replica whose partition.metadata names another topic id is reported, not
compared). Batches are compared by header and CRC (base/last offset, partitionLeaderEpoch, CRC,
size), indexes by meaning (an entry fewer is info), producer snapshots not at all. Against the
reference (--leader, else the highest leader epoch, then the longest log) each replica gets: the
common prefix, the first divergent offset and why (another leader epoch; the same epoch but other
bytes, naming the side whose CRC fails; a shorter log), the offset Kafka truncates it to when it
rejoins (Kafka 4.2's rule: the follower's latest epoch, the leader's end offset for it), the
records that truncation loses (by producer and time), and checkpoint or index disagreements.
--export-lost writes the lost records as `seglog dump --deep-iteration --format jsonl` does,
keys, values and header values in --payload-encoding: base64 by default, lossless (seglog
replay sends exactly those bytes); every record names its "encoding", and utf8 marks a record
whose bytes are not UTF-8 "lossy": true (replay refuses it).

When a metadata log is at hand (--metadata-log, else a __cluster_metadata-0 in a replica's log
dir, the reference's first), each leader epoch compared is named with the election behind it:
the leader broker, the metadata offset and time it became leader, and whether the election was
clean, preferred or unclean (as seglog metadata --history says it).

Example:
  seglog diff broker-1/events-0 broker-2/events-0 broker-3/events-0
  seglog diff --export-lost lost.jsonl broker-1/events-0 broker-2/events-0
  seglog diff --metadata-log controller/ broker-1/events-0 broker-2/events-0

Exit status:
- 0: all replicas agree
- 1: only lagging prefixes
- 2: usage error
- 3: divergence, damage or another topic id
- 4: an input could not be read
"""


def diff_command(
    paths: Optional[List[str]] = typer.Argument(None, help="Partition dirs of one partition, or log dirs."),
    leader: Optional[str] = typer.Option(None, "--leader", help="The reference replica (a partition dir or log dir given)."),
    export_lost: Optional[str] = typer.Option(None, "--export-lost", help="Write the records a truncation loses here (JSON Lines, as dump --deep-iteration --format jsonl)."),
    payload_encoding: PayloadEncoding = typer.Option(PayloadEncoding.base64, "--payload-encoding", help="--export-lost: how keys, values and header values are written: base64 (default, lossless), hex, or utf8 (text; records whose bytes are not UTF-8 are marked lossy)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help=f"Partitions compared in parallel processes (log dirs) {JOBS_HELP}."),
    metadata_log: Optional[str] = typer.Option(None, "--metadata-log", help=ELECTIONS_METADATA_LOG_HELP),
    output_format: ReportFormat = typer.Option(ReportFormat.table, "--format", help="table, text, json or jsonl."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(paths, leader, export_lost, payload_encoding, jobs, metadata_log, output_format) -> int:
    from seglog_cli.storage.log.parallel import parallel_map
    from seglog_cli.storage.replicas.replicas import partition_groups

    inputs = command_paths(paths, "partition directory or log dir")
    if len(inputs) < 2:
        raise UsageError("give at least two replicas (partition dirs or log dirs) to compare")
    groups_in = partition_groups(inputs)
    describe = export_lost is None
    jobs = jobs_or_default(jobs, len(groups_in))
    if jobs > 1:
        groups = parallel_map(_diff_one, [(g, _leader_for(leader, g), describe) for g in groups_in], jobs)
    else:
        groups = [_diff_one((g, _leader_for(leader, g), describe)) for g in groups_in]
    if export_lost is not None:
        _export(groups, export_lost, payload_encoding.value)
    status = _status(groups)
    elections = group_elections(groups, metadata_log)
    out = sys.stdout
    from seglog_cli.render import diff_report
    if output_format == ReportFormat.json:
        diff_report.render_json(groups, status, out, elections)
    elif output_format == ReportFormat.jsonl:
        diff_report.render_jsonl(groups, status, out, elections)
    elif output_format == ReportFormat.text:
        diff_report.render_text(groups, out, elections)
    else:
        diff_report.render_table(groups, out, elections)
    out.flush()
    for group in groups:
        for bad in group.unreadable:
            sys.stderr.write(f"seglog: {bad['message']}\n")
    return status


def _leader_for(leader, group):
    """--leader names a partition dir, or a log dir whose partition of this group is meant."""
    if leader is None:
        return None
    from pathlib import Path
    path = Path(leader)
    for _label, member in group:
        if member.parent.resolve() == path.resolve():
            return str(member)
    return leader


def _diff_one(item):
    from seglog_cli.storage.replicas.replicas import diff_group
    members, leader, describe = item
    return diff_group(members, leader, describe).drop_segment_detail()


def _status(groups) -> int:
    statuses = {c.status for g in groups for c in g.comparisons}
    if any(g.unreadable for g in groups) or any(g.reference is None for g in groups):
        return ExitStatus.UNREADABLE
    if statuses & {"divergent", "damaged", "not-a-replica"}:
        return ExitStatus.DAMAGE
    if "lagging" in statuses:
        return ExitStatus.WARNINGS
    return ExitStatus.OK


def _export(groups, path, payload_encoding: str) -> None:
    """The lost records of every replica, as dump --deep-iteration --format jsonl writes records."""
    from seglog_cli.render.jsonl import JsonLinesDumpRenderer
    from seglog_cli.storage.log.control import parse_control_record
    from seglog_cli.storage.dump.dump_events import ControlRecordEntry, FileStart
    from seglog_cli.storage.log.records import read_records
    from seglog_cli.storage.replicas.replica_comparison import describe_lost

    try:
        handle = open(path, "wb")
    except OSError as exc:
        raise UsageError(f"--export-lost {path}: {exc.strerror}") from None
    with handle:
        renderer = JsonLinesDumpRenderer(handle, sys.stderr.buffer, payload_encoding=payload_encoding,
                                         deep_iteration=True)
        starts = {}

        def on_record(segment, batch, buf):
            log_path = str(segment.log_path)
            start = starts.get(log_path)
            if start is None:
                start = starts[log_path] = FileStart(log_path, "log", segment.base_offset,
                                                     topic=replica.topic, partition=replica.partition)
            records = [r for r in read_records(buf, batch, log_path) if r.offset >= comparison.lost.first_offset]
            if batch.is_control:
                items = [ControlRecordEntry(r, parse_control_record(r, log_path, batch.position)) for r in records]
            else:
                items = records
            renderer.batch_records(start, batch, items)

        for group in groups:
            for comparison in group.comparisons:
                if comparison.lost is not None:
                    replica = comparison.replica
                    describe_lost(replica, comparison.lost, on_record)
        renderer.flush()


def group_elections(groups, metadata_log):
    """The elections behind the groups' leader epochs (None without a metadata log): the
    reference's log dir is searched first, then every replica's."""
    from seglog_cli.commands.options import metadata_elections

    references = [g.reference for g in groups if g.reference is not None]
    replicas = [c.replica for g in groups for c in g.comparisons]
    log_dirs = [r.path.parent for r in references + replicas]
    return metadata_elections(metadata_log, log_dirs, {(r.topic, r.partition) for r in references})
