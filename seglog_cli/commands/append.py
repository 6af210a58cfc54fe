"""``seglog append``: records appended to a partition directory as a leader broker would, planned first.

The command reads records (``--value`` options, text lines or JSON Lines), groups them into
produce requests the way Kafka's producer fills ``batch.size``, and hands them to the engine
(:func:`~seglog_cli.storage.write.append.plan_append`); only ``--apply`` writes the plan.
"""

from __future__ import annotations

import sys
from enum import Enum
from itertools import chain
from pathlib import Path
from typing import Iterator, List, Optional

import typer

from seglog_cli.commands.options import (
    METADATA_LOG_HELP,
    SERVER_CONFIG_HELP,
    PayloadEncoding,
    PlanFormat,
    config_sources,
    effective_configs,
    parse_timestamp,
    writing,
)
from seglog_cli.commands.record_input import DECODERS, read_input, value_records
from seglog_cli.render import append_report, config_report
from seglog_cli.status import ExitStatus, UsageError, guarded
from seglog_cli.storage.write.append import apply_append, plan_append
from seglog_cli.storage.write.append_plan import AppendOptions, ProducerOptions
from seglog_cli.storage.write.builder import group_batches
from seglog_cli.storage.log.java_text import decode_uuid
from seglog_cli.storage.write.durable import Tally
from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.log.naming import parse_partition_dir_name
from seglog_cli.storage.write.safety import log_dir_of

HELP = """Append records to a partition directory as a leader broker would (one produce request per batch).

Records come from --value (one record each, sharing --key and --header), or from --input FILE
(- for stdin): text lines (one record per line; --key-separator splits key and value, as
kafka-console-producer's parse.key does) or JSON Lines with key, value, headers and timestamp
(seglog dump --format jsonl output is accepted as it is: non-record lines and control records are
skipped). Records are grouped into batches as Kafka's producer fills batch.size (--batch-size,
--linger-records). Offsets, leader epoch, indexes, segment rolls, producer state snapshots,
.txnindex and the recovery point are written as Kafka writes them; idempotent and transactional
producers are checked as the broker checks them. Without --apply it only shows the plan. With
--apply it writes it after taking the log dir's .lock, keeping a backup and a manifest
(seglog-backups/ beside the log dir, or --backup-dir; seglog undo puts everything back).

Topic configs are the partition's as the broker resolves them: Kafka's defaults < --server-config
< the cluster metadata (__cluster_metadata-0 beside the partition, or --metadata-log) <
--config-file/--config; the values not at their default are printed with their source.

Examples:
  seglog append --create --value hello --value world \\
      /var/lib/kafka/data/orders-0
  # a copy of a partition:
  seglog dump --deep-iteration --format jsonl --payload-encoding base64 \\
      orders-0 | seglog append --input - --input-format jsonl \\
      --payload-encoding base64 --create --apply copy/orders-0

A partition a broker would recover first (no clean shutdown, recovery point below the log end) is
refused with 3: run seglog recover first.

Run again with --producer-id and --base-sequence, an append whose batches (same sequences and
records) and --end-txn marker are that producer's last in the log says "already appended" with
their offsets and writes nothing, as Kafka answers a duplicate. Without --base-sequence the
sequences continue: a run again appends again.

Exit status:
- 0: written (--apply), or already appended (nothing to do)
- 1: planned, nothing written
- 2: usage error (bad options, configs or input lines)
- 3: refused, as Kafka would refuse it (a torn tail, a fenced epoch, a sequence gap, a batch too
  large...), nothing written
- 4: the input file or the partition directory could not be read
- 5: a broker holds the log dir's .lock (nothing written)
- 6: cannot write here (read-only file system, permission, disk full, a symlink): the message says
  what, if anything, was changed
"""



class InputFormat(str, Enum):
    lines = "lines"
    jsonl = "jsonl"


class Compression(str, Enum):
    none = "none"
    gzip = "gzip"
    snappy = "snappy"
    lz4 = "lz4"
    zstd = "zstd"


class TimestampType(str, Enum):
    CreateTime = "CreateTime"
    LogAppendTime = "LogAppendTime"


class EndTxn(str, Enum):
    commit = "commit"
    abort = "abort"


def append_command(
    partition_dir: str = typer.Argument(..., help="The partition directory (<log dir>/<topic>-<partition>)."),
    value: Optional[List[str]] = typer.Option(None, "--value", help="A record with this value (repeatable: one record each)."),
    key: Optional[str] = typer.Option(None, "--key", help="The key of the --value records (default: null)."),
    header: Optional[List[str]] = typer.Option(None, "--header", help="k=v header of the --value records (repeatable; k alone: a null value)."),
    input_path: Optional[str] = typer.Option(None, "--input", help="Read records from this file (- for stdin)."),
    input_format: InputFormat = typer.Option(InputFormat.lines, "--input-format", help="lines (one value per line) or jsonl (key, value, headers, timestamp)."),
    key_separator: Optional[str] = typer.Option(None, "--key-separator", help="lines: split each line into key and value at the first SEP."),
    payload_encoding: PayloadEncoding = typer.Option(PayloadEncoding.utf8, "--payload-encoding", help="How keys, values and header values are given: utf8, hex or base64 (as seglog dump writes them)."),
    timestamp: Optional[str] = typer.Option(None, "--timestamp", help="Timestamp of records that carry none (epoch ms or ISO-8601; default: now)."),
    batch_size: int = typer.Option(16384, "--batch-size", min=0, help="The producer's batch.size: a batch is closed before its estimated uncompressed size would pass it."),
    linger_records: Optional[int] = typer.Option(None, "--linger-records", min=1, help="Close a batch after N records (default: no limit)."),
    compression: Compression = typer.Option(Compression.none, "--compression", help="none, gzip, snappy, lz4 or zstd."),
    timestamp_type: Optional[TimestampType] = typer.Option(None, "--timestamp-type", help="CreateTime or LogAppendTime (default: the topic's message.timestamp.type)."),
    leader_epoch: Optional[int] = typer.Option(None, "--leader-epoch", min=0, help="Partition leader epoch (default: the latest in leader-epoch-checkpoint, else 0)."),
    producer_id: Optional[int] = typer.Option(None, "--producer-id", min=0, help="An idempotent producer's id (sequences continue from its state)."),
    producer_epoch: Optional[int] = typer.Option(None, "--producer-epoch", min=0, max=32767, help="The producer's epoch (default: its current one, else 0)."),
    base_sequence: Optional[int] = typer.Option(None, "--base-sequence", min=0, help="The first batch's base sequence (default: the producer's next). Without --producer-id: every batch's, stored as sent (a non-idempotent client such as Sarama sends 0)."),
    transactional: bool = typer.Option(False, "--transactional", help="Write the batches inside a transaction of --producer-id."),
    end_txn: Optional[EndTxn] = typer.Option(None, "--end-txn", help="Then end the producer's transaction: commit or abort (a marker)."),
    coordinator_epoch: Optional[int] = typer.Option(None, "--coordinator-epoch", min=0, help="The marker's coordinator epoch (default: the producer's)."),
    config: Optional[List[str]] = typer.Option(None, "--config", help="Topic config key=value (segment.bytes, segment.ms, index.interval.bytes, segment.index.bytes, max.message.bytes, message.timestamp.type, ...), over the cluster's (repeatable)."),
    config_file: Optional[str] = typer.Option(None, "--config-file", help="A properties file of topic configs (--config wins)."),
    server_config: Optional[str] = typer.Option(None, "--server-config", help=SERVER_CONFIG_HELP),
    metadata_log: Optional[str] = typer.Option(None, "--metadata-log", help=METADATA_LOG_HELP),
    create: bool = typer.Option(False, "--create", help="Create the partition directory when it does not exist."),
    topic_id: Optional[str] = typer.Option(None, "--topic-id", help="With --create: the topic id for partition.metadata (base64 Uuid; default: random)."),
    no_recovery_point: bool = typer.Option(False, "--no-recovery-point", help="Leave the log dir's recovery-point-offset-checkpoint alone."),
    apply: bool = typer.Option(False, "--apply", help="Write the plan (default: only show it)."),
    backup_dir: Optional[str] = typer.Option(None, "--backup-dir", help="Where the backup and manifest go (default: seglog-backups/ beside the log dir)."),
    output_format: PlanFormat = typer.Option(PlanFormat.text, "--format", help="text or json."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="text: one line per batch too."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(partition_dir, value, key, header, input_path, input_format, key_separator, payload_encoding, timestamp,
         batch_size, linger_records, compression, timestamp_type, leader_epoch, producer_id, producer_epoch,
         base_sequence, transactional, end_txn, coordinator_epoch, config, config_file, server_config, metadata_log,
         create, topic_id, no_recovery_point, apply, backup_dir, output_format, verbose) -> int:
    _check_options(value, key, header, input_path, input_format, key_separator, producer_id, producer_epoch,
                   base_sequence, transactional, end_txn, coordinator_epoch, create, topic_id)
    sources = config_sources(config, config_file, server_config, metadata_log)
    decode = DECODERS[payload_encoding.value]
    default_timestamp = parse_timestamp(timestamp, "--timestamp")
    if value:
        records = iter(list(value_records(value, key, header, decode, default_timestamp)))
    elif input_path is not None:
        records = read_input(input_path, input_format.value, decode, key_separator, default_timestamp)
    else:
        records = iter(())
    _check_partition_dir(Path(partition_dir), create)
    batches = _nonempty(group_batches(records, batch_size, linger_records), end_txn is not None, input_path)
    options = AppendOptions(
        compression=compression.value, timestamp_type=timestamp_type.value if timestamp_type else None,
        leader_epoch=leader_epoch,
        producer=ProducerOptions(-1 if producer_id is None else producer_id, producer_epoch, base_sequence,
                                 transactional, coordinator_epoch),
        end_transaction=end_txn.value if end_txn else None, create=create, topic_id=topic_id,
        update_recovery_point=not no_recovery_point)
    with writing(apply, [log_dir_of(partition_dir)], "append", backup_dir) as session:
        effective = effective_configs(sources, [Path(partition_dir)])
        spool = session.spool() if session is not None else Tally()  # the new .log bytes: never all in memory
        plan = plan_append(partition_dir, batches, effective[0].config, options, spool)
        applied = apply_append(plan, backup_dir, session) if apply and plan.writes else None
    if output_format == PlanFormat.json:
        append_report.render_json(plan, sys.stdout, applied, config_report.json_fields(effective))
    else:
        config_report.render_all_text(effective, sys.stdout)
        append_report.render_text(plan, sys.stdout, applied, verbose)
    sys.stdout.flush()
    return ExitStatus.OK if applied is not None or not plan.writes else ExitStatus.WARNINGS


def _check_options(value, key, header, input_path, input_format, key_separator, producer_id, producer_epoch,
                   base_sequence, transactional, end_txn, coordinator_epoch, create, topic_id) -> None:
    """Option combinations the engine would only refuse later, refused as usage errors."""
    if value and input_path is not None:
        raise UsageError("give records with --value or with --input, not both")
    if (key is not None or header) and not value:
        raise UsageError("--key and --header go with --value (JSON Lines input carries its own keys and headers)")
    if not value and input_path is None and end_txn is None:
        raise UsageError("nothing to append: give --value, --input or --end-txn")
    if key_separator is not None and (input_path is None or input_format != InputFormat.lines):
        raise UsageError("--key-separator goes with --input and --input-format lines")
    if key_separator == "":
        raise UsageError("--key-separator must not be empty")
    if producer_id is None:  # --base-sequence alone: a plain producer's batches carrying it (as Sarama's do)
        given = [name for name, present in (("--producer-epoch", producer_epoch is not None),
                                             ("--transactional", transactional), ("--end-txn", end_txn is not None),
                                             ("--coordinator-epoch", coordinator_epoch is not None)) if present]
        if given:
            raise UsageError(f"{', '.join(given)} need(s) --producer-id")
    if coordinator_epoch is not None and end_txn is None:
        raise UsageError("--coordinator-epoch goes with --end-txn")
    if topic_id is not None:
        if not create:
            raise UsageError("--topic-id goes with --create (an existing partition keeps its partition.metadata)")
        try:
            decode_uuid(topic_id)
        except ValueError as exc:
            raise UsageError(f"--topic-id: {exc}") from None


def _check_partition_dir(directory: Path, create: bool) -> None:
    name = parse_partition_dir_name(directory.absolute().name)
    if name is None or name.kind != "current":
        raise UsageError(f"{directory}: not a partition directory name Kafka accepts (<topic>-<partition>)")
    if directory.exists():
        if not directory.is_dir():
            raise UnreadableInputError("not a directory", directory)
    elif not create:
        raise UnreadableInputError("no such partition directory (use --create to make one)", directory)
    elif not directory.absolute().parent.is_dir():
        raise UnreadableInputError("no such log dir to create the partition in", directory.absolute().parent)


# -- payloads ---------------------------------------------------------------------------------------

def _nonempty(batches: Iterator[list], end_txn: bool, input_path: str | None) -> Iterator[list]:
    """``batches``, or a usage error when there is nothing to append at all."""
    first = next(batches, None)
    if first is None:
        if not end_txn:
            raise UsageError(f"no records in the input {'stdin' if input_path == '-' else input_path}")
        return iter(())
    return chain((first,), batches)
