"""DumpLogSegments' text layout (Kafka 4.2 ``kafka-dump-log.sh``), line for line.

:class:`TextDumpRenderer` turns the dump engine's events into the exact stdout and stderr lines
of Kafka's tool. Lines are buffered and written as UTF-8 bytes in large chunks.
"""

from __future__ import annotations

from seglog_cli.render.output import LineOutput
from seglog_cli.storage.log import native
from seglog_cli.storage.log.batch_header import BatchHeader
from seglog_cli.storage.log.batches import BatchRun
from seglog_cli.storage.log.codecs import codec_label as codec_text
from seglog_cli.storage.log.control import ControlRecord
from seglog_cli.storage.log.errors import DecodeError
from seglog_cli.storage.dump.dump_events import (
    CHECKPOINT,
    LOG,
    ControlRecordEntry,
    DumpReport,
    FileEnd,
    FileStart,
    IndexIsEmpty,
    Notice,
    Problem,
    SanityCheckPassed,
    TrailingBytes,
    UnknownFile,
)
from seglog_cli.storage.log.indexes import AbortedTxn, OffsetPosition, TimestampOffset
from seglog_cli.storage.log.records import Record, RecordRun
from seglog_cli.storage.log.snapshots import ProducerStateEntry
from seglog_cli.storage.log.text import java_utf8, printable

_TS_NAMES = {0: "CreateTime", 1: "LogAppendTime", -1: "NoTimestampType"}
_BOOL = {True: "true", False: "false"}
CONTROL_LABELS = {3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}


def optional_long(value: int | None) -> str:
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def batch_line(batch: BatchHeader) -> str:
    if batch.magic >= 2:
        attributes = batch.attributes
        horizon = f"OptionalLong[{batch.base_timestamp}]" if attributes & 0x40 else "OptionalLong.empty"
        head = (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
                f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
                f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
                f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
                f"isTransactional: {_BOOL[bool(attributes & 0x10)]} isControl: {_BOOL[bool(attributes & 0x20)]} "
                f"deleteHorizonMs: {horizon}")
    else:
        head = f"offset: {batch.base_offset}"
    return (f"{head} position: {batch.position} {_TS_NAMES[batch.timestamp_type]}: {batch.max_timestamp} "
            f"size: {batch.length + 12} magic: {batch.magic} compresscodec: {codec_text(batch.attributes & 7)} "
            f"crc: {batch.crc} isvalid: {_BOOL[batch.is_valid]}")


def control_text(control: ControlRecord) -> str:
    type_id = control.type_id
    if control.is_transaction_marker:
        return f" endTxnMarker: {control.type_name} coordinatorEpoch: {control.coordinator_epoch}"
    if type_id in CONTROL_LABELS or type_id == 2:
        from seglog_cli.render.kafka_json import to_kafka_json  # KRaft control records only

        if type_id == 2:  # Kafka 4.1+ (KAFKA-19069)
            return f" LeaderChange: {to_kafka_json(control.data)}"
        return f" {CONTROL_LABELS[type_id]} {to_kafka_json(control.data)}"
    return f" controlType: {control.type_name}({type_id})"


def string_decoder(data: bytes) -> str:
    return java_utf8(data)


class TextDumpRenderer(LineOutput):
    """Writes DumpLogSegments' stdout and stderr lines for a stream of dump events."""

    def __init__(self, out, err, *, print_data_log=False, skip_record_metadata=False,
                 key_decoder=string_decoder, value_decoder=string_decoder, flush_lines=4096,
                 record_parser=None):
        super().__init__(out, err, flush_lines)
        self.record_parser = record_parser  # kafka-dump-log's --*-decoder: record -> (key, payload)
        self.print_data_log = print_data_log
        self.skip_record_metadata = skip_record_metadata
        self.key_decoder = key_decoder
        self.value_decoder = value_decoder
        self._batch: BatchHeader | None = None
        self._path: str | None = None
        self._undecodable: list[str] = []  # files with a key or value the decoder refused

    # -- events ----------------------------------------------------------------------------

    def render(self, events) -> DumpReport | None:
        compiled = native.module
        custom_decoders = self._custom_decoders()
        # the compiled lines know only Java's StringDecoder
        fast = compiled if compiled is not None and not (self.print_data_log and custom_decoders) else None
        report = None
        for event in events:
            kind = type(event)
            if kind is list:
                if fast is not None:
                    self._run_compiled(event, fast)
                else:
                    self._run(event)
            elif kind is BatchRun:
                self._batch_run(event, compiled)
            elif kind is RecordRun:
                self._record_run(event, fast)
            else:
                report = self._other(event) or report
        self.flush()
        return report

    def _batch_run(self, run: BatchRun, compiled) -> None:
        if compiled is not None:
            self.emit(compiled.batch_lines(run.mapped.data, run.start, run.end, run.check_crc))
        else:
            for batch in run:
                self.emit(batch_line(batch).encode("ascii"))

    def format_run(self, run: RecordRun):
        """The lines of a RecordRun as far as the compiled formatter goes, ``(text, done)``:
        called by dump's decode workers (``DumpOptions.format_run``); None when these lines are
        not the compiled formatter's."""
        compiled = native.module
        if compiled is None or (self.print_data_log and self._custom_decoders()):
            return None
        return compiled.deep_lines(run.buffer, run.headers, run.sections, 0, self.print_data_log,
                                   self.skip_record_metadata)

    def _custom_decoders(self) -> bool:
        return (self.key_decoder is not string_decoder or self.value_decoder is not string_decoder
                or self.record_parser is not None)

    def _record_run(self, run: RecordRun, compiled) -> None:
        """Batches and records straight from the bytes; a batch the compiled formatter refuses
        (a line needing Java's UTF-8 replacement) is built and rendered in Python."""
        if compiled is None:
            self._run(list(run))
            return
        start, count = 0, len(run)
        formatted = run.formatted
        while start < count:
            if formatted is not None:  # formatted by a decode worker
                (text, done), formatted = formatted, None
            else:
                text, done = compiled.deep_lines(run.buffer, run.headers, run.sections, start,
                                                 self.print_data_log, self.skip_record_metadata)
            if done > start:
                self.emit(text)
            if done < count:
                batch = run.headers[done]
                self._run([batch, *run.records(batch, run.sections[done])])
            start = done + 1

    def _run_compiled(self, items: list, compiled) -> None:
        """A run of batches and records: formatted in C as far as it goes, the odd item (a
        control record, a line needing Java's UTF-8 replacement) in Python."""
        start, count = 0, len(items)
        while start < count:
            text, done, self._batch = compiled.render_lines(
                BatchHeader, Record, items, start, self._batch, self.print_data_log, self.skip_record_metadata)
            if done > start:
                self.emit(text)
            if done < count:
                self._run(items[done:done + 1])
            start = done + 1

    def _run(self, items) -> None:
        """A run of batches and records, in Python."""
        emit = self.emit
        for item in items:
            kind = type(item)
            if kind is Record:
                emit(self.record_line(item, None).encode("utf-8", "surrogateescape"))
            elif kind is BatchHeader:
                self._batch = item
                emit(batch_line(item).encode("ascii"))
            else:
                self._other(item)

    def _other(self, event):
        kind = type(event)
        if kind is ControlRecordEntry:
            self.text(self.record_line(event.record, event.control))
        elif kind is OffsetPosition:
            self.text(f"offset: {event.offset} position: {event.position}")
        elif kind is TimestampOffset:
            self.text(f"timestamp: {event.timestamp} offset: {event.offset}")
        elif kind is FileStart:
            self._file_start(event)
        elif kind is ProducerStateEntry:
            self.text(snapshot_line(event))
        elif kind is AbortedTxn:
            self.text(f"version: {event.version} producerId: {event.producer_id} firstOffset: "
                       f"{event.first_offset} lastOffset: {event.last_offset} lastStableOffset: "
                       f"{event.last_stable_offset}")
        elif kind is TrailingBytes:
            self.text(f"Found {event.count} invalid bytes at the end of {printable(event.file_name)}")
        elif kind is IndexIsEmpty:
            self.text(f"{printable(event.path)} is empty.")
        elif kind is SanityCheckPassed:
            self.text(f"{printable(event.path)} passed sanity check.")
        elif kind in (Problem, Notice):
            self.stderr(event.text)
        elif kind is UnknownFile:
            self.stderr(f"Ignoring unknown file {event.path}")
        elif kind is DumpReport:
            self.flush()
            event.damaged_files.extend(p for p in self._undecodable if p not in event.damaged_files)
            self.report(event)
            return event
        elif kind is FileEnd:
            self._batch = None
        return None

    def _file_start(self, event: FileStart) -> None:
        self._path = event.path
        self.text(f"Dumping {printable(event.path)}")
        if event.kind == LOG and event.base_offset is not None:
            self.text(f"Log starting offset: {event.base_offset}")
        elif event.kind == CHECKPOINT:
            if event.bootstrap:
                self.text("KRaft bootstrap snapshot")
            elif event.snapshot_id is not None:
                self.text(f"Snapshot end offset: {event.snapshot_id.end_offset}, "
                           f"epoch: {event.snapshot_id.epoch}")

    def record_line(self, record: Record, control: ControlRecord | None) -> str:
        batch = self._batch
        prefix = "| "
        parts = []
        if not self.skip_record_metadata:
            parts.append(f"| offset: {record.offset} {_TS_NAMES[batch.timestamp_type]}: {record.timestamp} "
                         f"keySize: {record.key_size} valueSize: {record.value_size}")
            if batch.magic >= 2:
                keys = ",".join(java_utf8(key) for key, _ in record.headers)
                parts.append(f" sequence: {record.sequence} headerKeys: [{keys}]")
            else:
                parts.append(f" isValid: {_BOOL[record.is_valid]} crc: {record.crc}}}")
            if control is not None:
                parts.append(control_text(control))
            prefix = " "
        if self.print_data_log and control is None:
            try:
                if self.record_parser is not None:
                    key, payload = self.record_parser(record)
                    if key is not None:
                        parts.append(f"{prefix}key: {key}")
                    if payload is not None:
                        parts.append(f" payload: {payload}")
                    return "".join(parts)
                if record.key is not None:
                    parts.append(f"{prefix}key: {self.key_decoder(record.key)}")
                if record.value is not None:
                    parts.append(f" payload: {self.value_decoder(record.value)}")
            except DecodeError as exc:
                # Kafka's tool dies here (BufferUnderflowException); say where, and go on.
                error = DecodeError(exc.message, self._path, batch.position, record.offset)
                self.stderr(f"seglog: {error}")
                if self._path not in self._undecodable:
                    self._undecodable.append(self._path)
        return "".join(parts)

    # -- the end-of-run report (stderr) ----------------------------------------------------

    def report(self, report: DumpReport) -> None:
        for path, mismatches in report.index_mismatches.items():
            self.stderr(f"Mismatches in :{path}")
            for index_offset, log_offset in reversed(mismatches):
                self.stderr(f"  Index offset: {index_offset}, log offset: {log_offset}")
        errors = report.time_index
        for path, mismatches in errors.mismatches.items():
            self.stderr(f"Found timestamp mismatch in :{path}")
            for index_ts, log_ts in mismatches:
                self.stderr(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}")
        for path, entries in errors.out_of_order.items():
            self.stderr(f"Found out of order timestamp in :{path}")
            for index_ts, previous in entries:
                self.stderr(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {previous}")
        for entries in errors.shallow_offset_not_found.values():
            self.stderr("The following indexed offsets are not found in the log.")
            for indexed, found in entries:
                self.stderr(f"Indexed offset: {indexed}, found log offset: {found}")
        for path, pairs in report.non_consecutive.items():
            self.stderr(f"Non-consecutive offsets in {path}")
            for first, second in reversed(pairs):
                self.stderr(f"  {first} is followed by {second}")


def snapshot_line(entry: ProducerStateEntry) -> str:
    line = (f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: "
            f"{optional_long(entry.current_txn_first_offset)} lastTimestamp: {entry.last_timestamp} ")
    metadata = entry.batch_metadata
    if metadata is not None:
        line += (f"firstSequence: {metadata.first_sequence} lastSequence: {metadata.last_sequence} "
                 f"lastOffset: {metadata.last_offset} offsetDelta: {metadata.offset_delta} "
                 f"timestamp: {metadata.timestamp}")
    return line


def _integer_decoder(data: bytes) -> str:
    """``IntegerDecoder``: the first 4 bytes as a big-endian int."""
    if len(data) < 4:
        raise DecodeError(f"IntegerDecoder: a {len(data)}-byte value is not an int")
    return str(int.from_bytes(data[:4], "big", signed=True))


def _long_decoder(data: bytes) -> str:
    """``LongDecoder``: the first 8 bytes as a big-endian long."""
    if len(data) < 8:
        raise DecodeError(f"LongDecoder: a {len(data)}-byte value is not a long")
    return str(int.from_bytes(data[:8], "big", signed=True))


DECODERS = {"StringDecoder": string_decoder, "IntegerDecoder": _integer_decoder,
            "LongDecoder": _long_decoder}


def decoder_for(class_name: str | None):
    """A key/value decoder by Kafka class name (package optional); StringDecoder by default.
    Raises KeyError for a decoder seglog does not have."""
    if not class_name:
        return string_decoder
    return DECODERS[class_name.rsplit(".", 1)[-1]]
