"""``seglog metadata``: the cluster metadata image a KRaft node's __cluster_metadata holds."""

from __future__ import annotations

import re
import sys
from enum import Enum
from typing import Optional

import typer

from seglog_cli.commands.options import parse_timestamp
from seglog_cli.status import ExitStatus, UsageError, guarded

HELP = """Show the cluster metadata image of a KRaft broker or controller, offline: topics and ids,
each partition's leader, epochs, replicas, ISR and ELR, the brokers (epoch, fencing, controlled
shutdown, log dirs), features (metadata.version), configs, client quotas, SCRAM users (names and
mechanisms, never secrets), ACLs, delegation tokens and the next producer id.

DIR is a __cluster_metadata-0 directory or the log dir holding it. The latest snapshot at or
below the target is read, then the log after it, as the node does at start-up. --at-offset N
shows the image of the records below offset N (what a snapshot N-<epoch>.checkpoint holds),
--at-time T the image of every batch whose max timestamp is at most T. Records of an aborted
metadata transaction are not applied.

--history TOPIC-P lists every change of a partition (offset, time, leader and epoch, ISR,
replicas) and why: election (clean, preferred or unclean), reassignment steps, ISR shrink (the
broker fenced or in controlled shutdown) or expand. --history broker:N lists a broker's
registrations, fencing, controlled shutdowns and the leaderships it gained and lost.

Examples:
  seglog metadata /var/lib/kafka/data --at-time 2026-11-28T20:00:00Z
  seglog metadata /var/lib/kafka/data --history orders-0

Exit status:
- 0: the image (or history) was read and shown
- 1: records Kafka cannot decode were skipped, or the topic, partition or broker asked for is not
  in the log
- 2: bad options
- 4: no __cluster_metadata-0 there, or unreadable
"""


class MetadataFormat(str, Enum):
    text = "text"
    json = "json"


def metadata_command(
    directory: str = typer.Argument(..., help="A __cluster_metadata-0 directory, or a KRaft node's log dir."),
    at_offset: Optional[int] = typer.Option(None, "--at-offset", help="The image of the records below this offset."),
    at_time: Optional[str] = typer.Option(None, "--at-time", help="The image at this time (epoch ms or ISO-8601): "
                                                                  "batches whose max timestamp is at most it."),
    topic: Optional[str] = typer.Option(None, "--topic", help="Only this topic (and its configs)."),
    broker: Optional[int] = typer.Option(None, "--broker", help="Only this broker and the partitions it hosts."),
    history: Optional[str] = typer.Option(None, "--history", help="TOPIC-PARTITION (e.g. orders-0) or broker:N: "
                                                                  "every change, and why."),
    output_format: MetadataFormat = typer.Option(MetadataFormat.text, "--format", help="text or json."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(directory, at_offset, at_time, topic, broker, history, output_format) -> int:
    from seglog_cli.render import metadata_report
    from seglog_cli.storage.metadata.history import broker_history, partition_history
    from seglog_cli.storage.metadata.loader import find_metadata_dir, load_image, node_id_of

    time_ms = parse_timestamp(at_time, "--at-time")
    if at_offset is not None and time_ms is not None:
        raise UsageError("give --at-offset or --at-time, not both")
    if at_offset is not None and at_offset < 0:
        raise UsageError(f"--at-offset: {at_offset} is negative")
    fmt = output_format.value
    if history is not None:
        subject = _history_subject(history)
        metadata_dir = find_metadata_dir(directory)
        if isinstance(subject, int):
            changes = broker_history(metadata_dir, subject, at_offset, time_ms)
            name = f"broker {subject}"
        else:
            changes = partition_history(metadata_dir, subject[0], subject[1], at_offset, time_ms)
            name = f"{subject[0]}-{subject[1]}"
        metadata_report.render_history(str(metadata_dir), node_id_of(metadata_dir), name, changes, fmt, sys.stdout)
        if not changes:
            print(f"seglog: no change of {name} in {metadata_dir}", file=sys.stderr)
        return ExitStatus.OK if changes else ExitStatus.WARNINGS
    loaded = load_image(directory, at_offset, time_ms)
    metadata_report.render_image(loaded, fmt, sys.stdout, topic, broker)
    missing = [f"topic {topic!r}" for _ in [0] if topic is not None and loaded.image.topic(topic) is None]
    missing += [f"broker {broker}" for _ in [0] if broker is not None and broker not in loaded.image.brokers]
    for what in missing:
        print(f"seglog: {what} is not in the image of {loaded.directory} below offset {loaded.end_offset}",
              file=sys.stderr)
    return ExitStatus.WARNINGS if missing or loaded.undecodable else ExitStatus.OK


def _history_subject(text: str) -> "int | tuple[str, int]":
    match = re.fullmatch(r"broker:(\d+)", text)
    if match:
        return int(match.group(1))
    match = re.fullmatch(r"(.+)-(\d+)", text)
    if match is None:
        raise UsageError(f"--history: {text!r} is neither TOPIC-PARTITION (orders-0) nor broker:N")
    return match.group(1), int(match.group(2))
