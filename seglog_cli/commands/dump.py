"""``seglog dump``: kafka-dump-log's output, for files, partitions and whole log dirs."""

from __future__ import annotations

import sys
from enum import Enum
from typing import List, Optional

import typer

from seglog_cli.commands.options import (
    JOBS_HELP,
    PayloadEncoding,
    command_paths,
    jobs_or_default,
    parse_timestamp,
    show_progress,
)
from seglog_cli.render.text import DECODERS, TextDumpRenderer, decoder_for
from seglog_cli.status import ExitStatus, UsageError, guarded
from seglog_cli.storage.dump.dump import INT32_MAX, DumpOptions, dump, expand_paths
from seglog_cli.storage.dump.dump_events import KIND_NAMES

HELP = """Print the content of Kafka log files, as kafka-dump-log.sh does.

Accepts .log, .index, .timeindex, .snapshot, .txnindex and KRaft .checkpoint files, partition
directories and whole log dirs (directories expand to their .log segments; see --types).
The text output is Kafka 4.2's, line for line; where kafka-dump-log stops at damage, seglog
prints Kafka's message on stderr and carries on.

Example:
  seglog dump --deep-iteration --print-data-log /var/lib/kafka/orders-0

Exit status:
- 0: dumped
- 1: some input is damaged where kafka-dump-log would stop (seglog went on)
- 2: usage error
- 4: an input could not be read
"""


class OutputFormat(str, Enum):
    text = "text"
    jsonl = "jsonl"


def dump_command(
    paths: Optional[List[str]] = typer.Argument(None, help="Files, partition dirs or log dirs (globs allowed)."),
    files: Optional[List[str]] = typer.Option(None, "--files", help="Comma-separated files, as kafka-dump-log takes them."),
    deep_iteration: bool = typer.Option(False, "--deep-iteration", help="One line per record, not only per batch."),
    print_data_log: bool = typer.Option(False, "--print-data-log", help="Print keys and values (implies --deep-iteration)."),
    skip_record_metadata: bool = typer.Option(False, "--skip-record-metadata", help="Omit offsets, timestamps and sizes from record lines."),
    verify_index_only: bool = typer.Option(False, "--verify-index-only", help="Index files: report mismatches only, print no entries."),
    index_sanity_check: bool = typer.Option(False, "--index-sanity-check", help="Index files: run Kafka's sanity check only."),
    max_message_size: int = typer.Option(5 * 1024 * 1024, "--max-message-size", min=0, help="Bytes read at each .index entry when verifying it."),
    max_bytes: int = typer.Option(INT32_MAX, "--max-bytes", min=0, help="Read only the first N bytes of each .log (whole batches)."),
    key_decoder_class: Optional[str] = typer.Option(None, "--key-decoder-class", help="StringDecoder (default), IntegerDecoder or LongDecoder."),
    value_decoder_class: Optional[str] = typer.Option(None, "--value-decoder-class", help="StringDecoder (default), IntegerDecoder or LongDecoder."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text (kafka-dump-log lines) or jsonl (one JSON object per item)."),
    payload_encoding: PayloadEncoding = typer.Option(PayloadEncoding.utf8, "--payload-encoding", help="JSON Lines: how keys, values and header values are written."),
    from_offset: Optional[int] = typer.Option(None, "--from-offset", help="First offset to show (seeks through the .index)."),
    to_offset: Optional[int] = typer.Option(None, "--to-offset", help="Last offset to show."),
    from_timestamp: Optional[str] = typer.Option(None, "--from-timestamp", help="Start at the first record with timestamp >= this (epoch ms or ISO-8601)."),
    to_timestamp: Optional[str] = typer.Option(None, "--to-timestamp", help="Stop before the first record with timestamp > this (epoch ms or ISO-8601)."),
    types: str = typer.Option("log", "--types", help="File kinds taken from directories: log,index,timeindex,txnindex,snapshot,checkpoint or all."),
    resync: bool = typer.Option(True, "--resync/--no-resync", help="Continue past mid-file damage at the next valid batch."),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="Progress bar on stderr (default: when stderr is a terminal and stdout is not a pipe)."),
    offsets_decoder: bool = typer.Option(False, "--offsets-decoder", help="Decode records as __consumer_offsets data (implies --print-data-log)."),
    transaction_log_decoder: bool = typer.Option(False, "--transaction-log-decoder", help="Decode records as __transaction_state data (implies --print-data-log)."),
    cluster_metadata_decoder: bool = typer.Option(False, "--cluster-metadata-decoder", help="Decode records as KRaft __cluster_metadata records (implies --print-data-log)."),
    remote_log_metadata_decoder: bool = typer.Option(False, "--remote-log-metadata-decoder", help="Decode records as tiered storage's __remote_log_metadata records (implies --print-data-log)."),
    share_group_state_decoder: bool = typer.Option(False, "--share-group-state-decoder", help="Decode records as __share_group_state data (implies --print-data-log)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Deep iteration: processes decoding a compressed segment's batches at once " + JOBS_HELP + "."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(paths, files, deep_iteration, print_data_log, skip_record_metadata, verify_index_only,
         index_sanity_check, max_message_size, max_bytes, key_decoder_class, value_decoder_class,
         output_format, payload_encoding, from_offset, to_offset, from_timestamp, to_timestamp, types,
         resync, progress, offsets_decoder=False, transaction_log_decoder=False,
         cluster_metadata_decoder=False, remote_log_metadata_decoder=False, share_group_state_decoder=False,
         jobs=None) -> int:
    inputs = _inputs(paths, files)
    kinds = _kinds(types)
    decoder = _decoder_flag(offsets_decoder, transaction_log_decoder, cluster_metadata_decoder,
                            remote_log_metadata_decoder, share_group_state_decoder)
    record_parser = _record_parser(decoder)
    print_data_log = print_data_log or bool(key_decoder_class or value_decoder_class) or record_parser is not None
    deep_iteration = deep_iteration or print_data_log
    out, err = sys.stdout.buffer, sys.stderr.buffer
    if output_format == OutputFormat.jsonl:
        from seglog_cli.render.jsonl import JsonLinesDumpRenderer

        renderer = JsonLinesDumpRenderer(out, err, payload_encoding=payload_encoding.value,
                                         deep_iteration=deep_iteration,
                                         record_fields=_record_fields(decoder))
    else:
        renderer = TextDumpRenderer(out, err, print_data_log=print_data_log,
                                    skip_record_metadata=skip_record_metadata,
                                    key_decoder=_decoder(key_decoder_class),
                                    value_decoder=_decoder(value_decoder_class),
                                    record_parser=record_parser)
    options = DumpOptions(
        deep_iteration=deep_iteration,
        verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check,
        max_message_size=max_message_size,
        max_bytes=max_bytes,
        resync=resync,
        from_offset=from_offset,
        to_offset=to_offset,
        from_timestamp=parse_timestamp(from_timestamp, "--from-timestamp"),
        to_timestamp=parse_timestamp(to_timestamp, "--to-timestamp"),
        jobs=jobs_or_default(jobs),
        format_run=getattr(renderer, "format_run", None),
    )
    events = dump(expand_paths(inputs, kinds, options), options)
    if show_progress(progress):
        from seglog_cli.render.progress import dump_progress  # rich only when it is used

        events = dump_progress(events)
    report = renderer.render(events)
    if report is None:
        return ExitStatus.OK
    if report.unreadable_files:
        return ExitStatus.UNREADABLE
    return ExitStatus.WARNINGS if report.damaged_files else ExitStatus.OK


def _inputs(paths, files) -> list[str]:
    grouped = [name for group in files or () for name in group.split(",") if name]
    return command_paths(paths, "file or directory (or --files a,b)", grouped)


def _kinds(types: str) -> tuple[str, ...]:
    if types.strip() == "all":
        return tuple(KIND_NAMES)
    kinds = tuple(part.strip() for part in types.split(",") if part.strip())
    unknown = [kind for kind in kinds if kind not in KIND_NAMES]
    if unknown or not kinds:
        raise UsageError(f"--types: unknown file kind(s) {', '.join(unknown) or '(none)'}; choose from "
                         f"{', '.join(KIND_NAMES)} or all")
    return kinds


# kafka-dump-log's internal-topic decoders, in the order its messageParser() tries them: the
# first one set wins, as in Kafka
DECODER_FLAGS = ("offsets", "transaction-log", "cluster-metadata", "remote-log-metadata", "share-group-state")


def _decoder_flag(*flags: bool) -> str | None:
    return next((name for name, given in zip(DECODER_FLAGS, flags) if given), None)


def _record_parser(decoder: str | None):
    """The (key text, payload text) parser of a decoder flag, or None."""
    if decoder in ("offsets", "transaction-log", "share-group-state"):
        from seglog_cli.render import coordinator_json

        return {"offsets": coordinator_json.offsets_parser,
                "transaction-log": coordinator_json.transaction_log_parser,
                "share-group-state": coordinator_json.share_group_state_parser}[decoder]()
    if decoder == "cluster-metadata":
        from seglog_cli.render.metadata_json import cluster_metadata_parser

        return cluster_metadata_parser
    if decoder == "remote-log-metadata":
        from seglog_cli.render.remote_log_metadata import remote_log_metadata_parser

        return remote_log_metadata_parser
    return None


def _record_fields(decoder: str | None):
    """JSON Lines: the decoded fields each data record gains under a decoder flag (or None)."""
    if decoder in ("offsets", "transaction-log", "share-group-state"):
        from seglog_cli.render import coordinator_json

        return {"offsets": coordinator_json.offsets_fields,
                "transaction-log": coordinator_json.transaction_log_fields,
                "share-group-state": coordinator_json.share_group_state_fields}[decoder]
    if decoder == "cluster-metadata":
        from seglog_cli.render.metadata_json import cluster_metadata_fields

        return cluster_metadata_fields
    if decoder == "remote-log-metadata":
        from seglog_cli.render.remote_log_metadata import remote_log_metadata_fields

        return remote_log_metadata_fields
    return None


def _decoder(class_name):
    try:
        return decoder_for(class_name)
    except KeyError:
        raise UsageError(f"unsupported decoder class {class_name}; use one of "
                         f"{', '.join(DECODERS)}") from None
