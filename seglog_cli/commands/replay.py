"""``seglog replay``: records from log dirs (or seglog's JSON Lines) back into a live cluster."""

from __future__ import annotations

import hashlib
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from seglog_cli.commands.options import PayloadEncoding, PlanFormat, command_paths, parse_timestamp, show_progress
from seglog_cli.status import ExitStatus, UsageError, guarded

HELP = """Send the records of log dirs, partition dirs or JSON Lines exports back into a live
cluster, exactly once, and carry the consumer groups' positions over.

Sources: partition dirs and log dirs (a deleted topic's <topic>-<n>.<id>-delete directories,
tiered partitions with their remote directory, remote URLs as the read commands take them),
or the JSON Lines of `seglog dump --format jsonl` and `seglog diff --export-lost` (lossless:
each record says its encoding; a file that turned bytes into U+FFFD is refused). The same
partition in several log dirs (one per broker) is read once, from the copy that ends last.

What a consumer of the destination sees is the source's records, byte for byte: key, value,
headers and timestamp as stored, in the same partition number (--repartition: Kafka's default
partitioner over the destination's partitions), in source order, compressed as their source
batch (or --compression). Control records are never sent; records of aborted or still-open
transactions are skipped, as a read_committed consumer skips them (--include-aborted sends
them); records of batches failing their CRC are skipped and counted.

Without --apply this is a plan: per source partition what goes where (records, bytes, offsets),
and the destination checked first (the topic exists or --create-topics makes it with the
source's partition count and configs from its __cluster_metadata; enough partitions;
message.timestamp.type CreateTime). --apply sends with an idempotent producer and notes each
acknowledgement in the progress file (--progress-file, default
./seglog-replay-<hash of the arguments>.json). Run the same command again after a kill or an
error: it reads what the destination holds past the progress file, counts its own records as
delivered and goes on, with no duplicate and no gap; records someone else wrote there in
between stop it (--accept-foreign-writes goes on after them).

Consumer groups: the groups committed in the sources' __consumer_offsets (or --groups) get
their offsets translated (to the first replayed record at or after the committed one), printed
as kafka-consumer-groups.sh --reset-offsets commands and written as the CSV its --from-file
reads (--groups-csv, default beside the progress file); --commit-groups commits them in the
destination, for groups with no active member there.

A cluster that is settling (no leader yet for a partition just created or after an election,
a group coordinator loading, a broker restarting) is waited for as Kafka's clients wait:
every request is retried on Kafka's retriable errors with their back-off (100 ms doubling
to 1 s) until --timeout (60 s, default.api.timeout.ms), with one "waiting for ..." line on
stderr; after --create-topics every new partition's leader is waited for before sending.

Client settings (security.protocol, sasl.*, ssl.*) come from --producer-config, a Java
properties file as Kafka's own tools take it.

Example:
  seglog replay lost.jsonl --bootstrap-server broker-1:9092 --apply

Exit status:
- 0: plan shown, or every record sent
- 1: sent (or planned), but records were skipped for damage (a batch failing its CRC) or
  transactions with no marker in the source; or --accept-foreign-writes went on after someone's records
- 2: usage error (also: a progress file of another replay)
- 3: refused before sending: a destination check failed, or someone else wrote to a destination
  partition since the last run
- 4: a source could not be read (also: a lossy JSON Lines file)
- 6: the progress file cannot be written, or another replay holds it
- 7: the cluster: unreachable, authentication or authorization refused, an error that is not
  retriable, a retriable one still there at --timeout, a produce failed (the progress file keeps
  what was acknowledged: run again to resume)
- 130: interrupted (the progress file keeps what was acknowledged: run again to resume)
"""


class Codec(str, Enum):
    source = "source"
    none = "none"
    gzip = "gzip"
    snappy = "snappy"
    lz4 = "lz4"
    zstd = "zstd"


def replay_command(
    paths: Optional[List[str]] = typer.Argument(None, help="Log dirs, partition dirs or JSON Lines files."),
    bootstrap_server: str = typer.Option(..., "--bootstrap-server", help="The destination cluster (HOST:PORT[,HOST:PORT])."),
    apply: bool = typer.Option(False, "--apply", help="Send (without it: only the plan)."),
    topic_map: Optional[List[str]] = typer.Option(None, "--topic-map", help="OLD:NEW: send topic OLD's records to NEW (repeatable)."),
    topics: Optional[str] = typer.Option(None, "--topics", help="Comma-separated source topics to replay (default: all but internal ones)."),
    from_offset: Optional[int] = typer.Option(None, "--from-offset", help="First source offset to send."),
    to_offset: Optional[int] = typer.Option(None, "--to-offset", help="Last source offset to send."),
    from_timestamp: Optional[str] = typer.Option(None, "--from-timestamp", help="Start at the first record with timestamp >= this (epoch ms or ISO-8601)."),
    to_timestamp: Optional[str] = typer.Option(None, "--to-timestamp", help="Stop before the first record with timestamp > this (epoch ms or ISO-8601)."),
    include_aborted: bool = typer.Option(False, "--include-aborted", help="Also send records of aborted and open transactions (read_uncommitted)."),
    repartition: bool = typer.Option(False, "--repartition", help="Place keyed records with Kafka's default partitioner (murmur2) over the destination's partitions; null keys keep their partition number modulo the count."),
    compression: Codec = typer.Option(Codec.source, "--compression", help="source (as each source batch), none, gzip, snappy, lz4 or zstd."),
    create_topics: bool = typer.Option(False, "--create-topics", help="Create missing destination topics (the source's partition count and configs)."),
    replication_factor: int = typer.Option(-1, "--replication-factor", help="For --create-topics (default: the broker's default.replication.factor)."),
    progress_file: Optional[str] = typer.Option(None, "--progress-file", help="The progress file (default: ./seglog-replay-<hash of the arguments>.json)."),
    producer_config: Optional[str] = typer.Option(None, "--producer-config", help="Client properties (security.protocol, sasl.*, ssl.*), a Java properties file."),
    throttle: Optional[float] = typer.Option(None, "--throttle", min=0.001, help="At most this many MB/s of keys, values and headers."),
    accept_foreign_writes: bool = typer.Option(False, "--accept-foreign-writes", help="Go on after records someone else wrote to a destination partition since the last run."),
    accept_log_append_time: bool = typer.Option(False, "--accept-log-append-time", help="Send into LogAppendTime topics (their broker replaces the timestamps)."),
    groups: Optional[str] = typer.Option(None, "--groups", help="Comma-separated consumer groups to carry over (default: every group committed in the sources)."),
    groups_csv: Optional[str] = typer.Option(None, "--groups-csv", help="Where to write the translated offsets (CSV for kafka-consumer-groups.sh --from-file; default: beside the progress file, its name ending .groups.csv)."),
    commit_groups: bool = typer.Option(False, "--commit-groups", help="Commit the translated offsets in the destination (groups with no active member there)."),
    payload_encoding: Optional[PayloadEncoding] = typer.Option(None, "--payload-encoding", help="JSON Lines written without their encoding: utf8, hex or base64."),
    timeout: float = typer.Option(60.0, "--timeout", min=0.1, envvar="SEGLOG_REPLAY_TIMEOUT",
                                  help="Seconds each request to the cluster may take, retries included: Kafka's "
                                       "retriable errors (no leader yet, a coordinator loading, a lost connection) "
                                       "are retried until then, as Kafka's clients do (default.api.timeout.ms; env: "
                                       "SEGLOG_REPLAY_TIMEOUT)."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="Progress bar on stderr (default: when stderr is a terminal)."),
    output_format: PlanFormat = typer.Option(PlanFormat.text, "--format", help="text or json."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(paths, bootstrap_server, apply, topic_map, topics, from_offset, to_offset, from_timestamp, to_timestamp,
         include_aborted, repartition, compression, create_topics, replication_factor, progress_file,
         producer_config, throttle, accept_foreign_writes, accept_log_append_time, groups, groups_csv,
         commit_groups, payload_encoding, timeout, progress, output_format) -> int:
    from seglog_cli.render import replay_report
    from seglog_cli.storage.replay import replay as engine
    from seglog_cli.render.fit import shown  # a remote view's paths as the URLs given
    from seglog_cli.storage.replay.cluster import ClientConfigError, Cluster, client_config, read_client_properties
    from seglog_cli.storage.replay.jsonl_source import CODEC_IDS, JsonLinesSources
    from seglog_cli.storage.replay.metadata import source_topics
    from seglog_cli.storage.replay.progress import Progress, ProgressMismatchError
    from seglog_cli.storage.replay.sources import Selection, TwoTopicsError, find_sources

    inputs = command_paths(paths, "log dir, partition dir or JSON Lines file")
    if commit_groups and not apply:
        raise UsageError("--commit-groups commits offsets of a replay: give it with --apply")
    selection = Selection(from_offset, to_offset, parse_timestamp(from_timestamp, "--from-timestamp"),
                          parse_timestamp(to_timestamp, "--to-timestamp"), include_aborted)
    options = engine.ReplayOptions(
        bootstrap=bootstrap_server, topic_map=_topic_map(topic_map), selection=selection, repartition=repartition,
        compression=None if compression == Codec.source else CODEC_IDS[compression.value],
        create_topics=create_topics, replication_factor=replication_factor,
        accept_foreign_writes=accept_foreign_writes, accept_log_append_time=accept_log_append_time,
        throttle_bytes_per_s=None if throttle is None else throttle * 1e6)
    wanted_topics = {t for t in (topics or "").split(",") if t} or None
    try:
        sources, jsonl_files = find_sources(inputs, wanted_topics)  # lists directories only
    except TwoTopicsError as exc:
        raise UsageError(str(exc)) from None

    properties = read_client_properties(producer_config) if producer_config else {}
    try:
        cluster = Cluster(client_config(bootstrap_server, properties), timeout=timeout, on_wait=_say_waiting)
        cluster.describe()  # an unreachable cluster is said before the sources are read
    except ClientConfigError as exc:
        raise UsageError(f"--producer-config: {exc.message}") from None

    encoding = None if payload_encoding is None else payload_encoding.value
    jsonl = JsonLinesSources(jsonl_files, encoding, selection, wanted_topics)
    sources = sorted(sources + jsonl.sources, key=lambda s: s.key)
    if not sources:
        raise UsageError("nothing to replay: no data partitions (or records) in the sources given")
    _check_unique(sources)
    parts = [engine.plan_source(s, options, jsonl.records_factory(s) if s.jsonl else None) for s in sources]
    plan = engine.ReplayPlan(parts, [])
    plan.notes.extend(jsonl.notes)
    counts, configs = source_topics(sources)
    engine.check_destination(plan, cluster, options, counts, configs)
    identity = options.identity(sources, shown)
    path = Path(progress_file) if progress_file else Path(f"seglog-replay-{_digest(identity)}.json")
    try:
        progress_state = Progress.open(path, identity)
    except ProgressMismatchError as exc:
        raise UsageError(str(exc)) from None
    plan.progress_path = str(path)
    plan.resumed = progress_state.existed
    for part in parts:
        found = progress_state.sources.get(part.source.label)
        part.delivered = 0 if found is None else found.records()

    out = sys.stdout
    if not apply:
        replay_report.render_plan(plan, options, out, output_format.value)
        return ExitStatus.REFUSED if plan.refusals else (ExitStatus.WARNINGS if plan.warnings else ExitStatus.OK)
    if plan.refusals:
        replay_report.render_plan(plan, options, out, output_format.value)
        out.flush()
        sys.stderr.write(f"seglog: refused: {plan.refusals[0]} (nothing sent)\n")
        return ExitStatus.REFUSED
    if output_format.value == "text":
        replay_report.render_plan(plan, options, out, "text", heading_only=True)
        out.flush()
    progress_state.lock()
    try:
        bar = replay_report.progress_bar(plan.records) if show_progress(progress) else None
        try:
            result = engine.apply_replay(plan, cluster, progress_state, options,
                                         _records_of(jsonl), on_progress=bar.update if bar else None)
        finally:
            if bar is not None:
                bar.close()
        translated, group_notes = _groups(sources, progress_state, groups)
        csv_path = Path(groups_csv) if groups_csv else path.with_suffix(".groups.csv")
        if translated:
            _write_csv(csv_path, translated)
        committed = _commit(cluster, translated) if commit_groups else {}
    finally:
        progress_state.unlock()
    replay_report.render_result(plan, options, result, progress_state, translated, group_notes,
                                str(csv_path) if translated else None, committed, out, output_format.value)
    out.flush()
    return ExitStatus.WARNINGS if plan.warnings or result.foreign else ExitStatus.OK


def _say_waiting(line: str) -> None:
    """The one line a request prints when it starts waiting for the cluster to settle."""
    sys.stderr.write(f"seglog: {line}\n")
    sys.stderr.flush()


def _topic_map(pairs) -> dict[str, str]:
    mapping = {}
    for pair in pairs or ():
        old, sep, new = pair.partition(":")
        if not sep or not old or not new:
            raise UsageError(f"--topic-map takes OLD:NEW, not {pair!r}")
        mapping[old] = new
    return mapping


def _check_unique(sources) -> None:
    seen = {}
    for source in sources:
        if source.key in seen:
            raise UsageError(f"{source.label} is in {seen[source.key]} and in {source.where}: give one of them "
                             f"(replaying both would send its records twice)")
        seen[source.key] = source.where


def _digest(identity: dict) -> str:
    import json
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]


def _records_of(jsonl):
    """The ``(codec, records)`` batches of a source from ``start`` on: JSON Lines or a partition dir."""
    from seglog_cli.storage.replay.sources import directory_batches

    def records_of(source, start, skipped):
        if source.jsonl is not None:
            return jsonl.batches(source, start, skipped)
        return directory_batches(source, jsonl.selection, skipped, start)

    return records_of


def _groups(sources, progress_state, groups):
    from seglog_cli.storage.replay.groups import committed_in_sources, translate
    log_dirs = sorted({s.log_dir for s in sources if s.log_dir is not None})
    wanted = {g for g in (groups or "").split(",") if g} or None
    committed, notes = committed_in_sources(log_dirs, wanted)
    return translate(committed, progress_state), notes


def _write_csv(path: Path, translated) -> None:
    from seglog_cli.storage.replay.groups import reset_csv
    try:
        path.write_text(reset_csv(translated))
    except OSError as exc:
        from seglog_cli.storage.log.errors import CannotWriteError
        raise CannotWriteError(f"cannot write the group offsets: {exc.strerror}", path) from None


def _commit(cluster, translated) -> dict[str, str]:
    """Commit each group's offsets where it has no active member: group -> what happened."""
    by_group: dict[str, list] = {}
    for t in translated:
        by_group.setdefault(t.group, []).append((t.topic, t.partition, t.offset))
    states = cluster.group_states(sorted(by_group))
    out = {}
    for group, offsets in sorted(by_group.items()):
        state, members = states.get(group, ("DEAD", 0))
        if members or state not in ("EMPTY", "DEAD", "UNKNOWN"):
            # a group with members (or rebalancing, or STABLE: tansu lists no members of an active
            # classic group) would overwrite them, and the broker refuses commits from outside it
            out[group] = (f"not committed: the group is active in the destination (state {state}, {members} "
                          f"member(s)); stop its consumers, then run the commands above")
            continue
        cluster.commit_group_offsets(group, offsets)
        out[group] = f"committed ({len(offsets)} partition(s))"
    return out
