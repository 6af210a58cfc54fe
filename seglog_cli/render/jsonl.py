"""JSON Lines output of ``seglog dump --format jsonl`` (schema version 1, documented in docs/commands/dump.md).

One JSON object per line, each with a ``type``: ``file``, ``batch``, ``record``,
``offsetIndexEntry``, ``timeIndexEntry``, ``producerState``, ``abortedTxn``, ``trailingBytes``,
``indexEmpty``, ``sanityCheck``, ``finding``, ``error``, ``unknownFile``, ``indexMismatch``,
``timeIndexMismatch``, ``timeIndexOutOfOrder``, ``timeIndexOffsetNotFound``,
``nonConsecutiveOffsets``. Batch objects keep kafka-dump-log's camelCase field names; record
objects use the column names of Spark's Kafka source (``key``, ``value``, ``topic``,
``partition``, ``offset``, ``timestamp``, ``timestampType``, ``headers``) plus batch context.

Every record object says how its key, value and header values are written: ``encoding``
(``utf8``, ``hex`` or ``base64``, the ``--payload-encoding``). Header keys are always text. A
record whose JSON is not an exact image of its bytes also gets ``"lossy": true`` (absent
otherwise): in utf8, a key, value or header value that is not valid UTF-8 (written as Java's
``new String(bytes, UTF_8)`` decodes it, with U+FFFD); in every encoding, a header key that is
not. Valid UTF-8 is found with a strict decode tried first, so the common case costs no more
than before. ``seglog_cli.storage.serde.jsonl_records`` reads these records back.

A ``record_fields`` callable (an internal-topic decoder) adds its fields to each data record
object, e.g. ``metadataRecord`` under ``--cluster-metadata-decoder``; absent fields keep
schema version 1 unchanged (as ``encoding`` and ``lossy`` do: additive fields).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from seglog_cli.render.kafka_json import to_kafka_json_value
from seglog_cli.render.output import LineOutput
from seglog_cli.render.text import codec_text
from seglog_cli.storage.log.batch_header import TIMESTAMP_TYPE_NAMES, BatchHeader
from seglog_cli.storage.log.batches import BatchRun
from seglog_cli.storage.dump.dump_events import (
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
from seglog_cli.storage.log.text import java_utf8

SCHEMA_VERSION = 1


def _utf8(data):
    return None if data is None else java_utf8(data)


def _strict_utf8(data):
    return None if data is None else data.decode()


def _hex(data):
    return None if data is None else data.hex()


def _base64(data):
    return None if data is None else base64.b64encode(data).decode("ascii")


ENCODERS = {"utf8": _utf8, "hex": _hex, "base64": _base64}


def batch_object(batch: BatchHeader, path: str) -> dict:
    obj = {"type": "batch", "path": path}
    if batch.magic >= 2:
        obj.update(baseOffset=batch.base_offset, lastOffset=batch.last_offset, count=batch.records_count,
                   baseSequence=batch.base_sequence, lastSequence=batch.last_sequence,
                   producerId=batch.producer_id, producerEpoch=batch.producer_epoch,
                   partitionLeaderEpoch=batch.partition_leader_epoch,
                   isTransactional=batch.is_transactional, isControl=batch.is_control,
                   deleteHorizonMs=batch.delete_horizon_ms)
    else:
        obj.update(offset=batch.last_offset)
    obj.update(position=batch.position, timestampType=batch.timestamp_type_name,
               maxTimestamp=batch.max_timestamp, size=batch.size, magic=batch.magic,
               compresscodec=codec_text(batch.compression), crc=batch.crc, isvalid=batch.is_valid)
    return obj


class JsonLinesDumpRenderer(LineOutput):
    def __init__(self, out, err, *, payload_encoding: str = "utf8", deep_iteration: bool = True,
                 flush_lines: int = 2048, record_fields=None):
        super().__init__(out, err, flush_lines)
        self.record_fields = record_fields  # record -> dict of decoded fields (data records only)
        self.encode = ENCODERS[payload_encoding]
        self._exact = _strict_utf8 if payload_encoding == "utf8" else self.encode  # raises where encode is lossy
        self.encoding = payload_encoding
        self.deep_iteration = deep_iteration
        self._file: FileStart | None = None
        self._segment = None
        self._batch: BatchHeader | None = None
        self._dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def _emit(self, obj: dict) -> None:
        self.text(self._dumps(obj))

    def render(self, events) -> DumpReport | None:
        report = None
        for event in events:
            if type(event) in (list, BatchRun, RecordRun):
                for item in event:
                    self._item(item)
            elif type(event) is DumpReport:
                self.report(event)
                report = event
            else:
                self._other(event)
        self.flush()
        return report

    def _item(self, event) -> None:
        kind = type(event)
        if kind is Record:
            self._emit(self.record_object(event))
        elif kind is BatchHeader:
            self._batch = event
            self._emit(batch_object(event, self._file.path))
        elif kind is ControlRecordEntry:
            self._emit(self.record_object(event.record, event.control))
        else:
            self._other(event)

    def batch_records(self, start: FileStart, batch: BatchHeader, items) -> None:
        """The record lines of ``batch`` (``Record`` or ``ControlRecordEntry`` items) exactly as
        ``--deep-iteration`` writes them, without the file and batch lines (seglog diff
        --export-lost writes the records a truncation discards this way)."""
        self._file, self._segment, self._batch = start, Path(start.path).name, batch
        for item in items:
            if type(item) is ControlRecordEntry:
                self._emit(self.record_object(item.record, item.control))
            else:
                self._emit(self.record_object(item))

    def record_object(self, record: Record, control=None) -> dict:
        batch, start = self._batch, self._file
        key, value, headers, lossy = self._payload(record)
        obj = {
            "type": "record",
            "topic": start.topic,
            "partition": start.partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
            "timestampType": batch.timestamp_type,
            "key": key,
            "value": value,
            "headers": headers,
            "encoding": self.encoding,
            "keySize": record.key_size,
            "valueSize": record.value_size,
            "sequence": record.sequence,
            "baseOffset": batch.base_offset if batch.magic >= 2 else None,
            "producerId": batch.producer_id,
            "producerEpoch": batch.producer_epoch,
            "isTransactional": batch.is_transactional,
            "isControl": batch.is_control,
            "compression": codec_text(batch.compression),
            "segment": self._segment,
            "position": batch.position,
        }
        if lossy:
            obj["lossy"] = True
        if batch.magic < 2:
            obj["crc"] = record.crc
            obj["isValid"] = record.is_valid
        if control is None and self.record_fields is not None:
            obj.update(self.record_fields(record))
        if control is not None:
            obj["controlType"] = control.type_name
            if control.is_transaction_marker:
                obj["coordinatorEpoch"] = control.coordinator_epoch
            elif control.data is not None:
                obj["controlData"] = to_kafka_json_value(control.data)
        return obj

    def _payload(self, record: Record) -> tuple:
        """key, value, headers as written, and whether that text is lossy. ``_exact`` is tried
        first (utf8: a strict decode, as fast as Java's decoding on valid UTF-8; header keys
        likewise in every encoding); only bytes that are not UTF-8 are written again as Java
        decodes them (U+FFFD), and the record is lossy."""
        key, value, headers = record[3], record[4], record[5]
        encode = self._exact
        try:
            return encode(key), encode(value), [{"key": k.decode(), "value": encode(v)} for k, v in headers], False
        except UnicodeDecodeError:
            encode = self.encode
            return (encode(key), encode(value), [{"key": java_utf8(k), "value": encode(v)} for k, v in headers],
                    True)

    def _other(self, event) -> None:
        kind = type(event)
        path = self._file.path if self._file is not None else None
        if kind is FileStart:
            self._file = event
            self._segment = Path(event.path).name
            obj = {"type": "file", "schemaVersion": SCHEMA_VERSION, "path": event.path, "kind": event.kind,
                   "topic": event.topic, "partition": event.partition, "baseOffset": event.base_offset}
            if event.snapshot_id is not None:
                obj.update(snapshotEndOffset=event.snapshot_id.end_offset, snapshotEpoch=event.snapshot_id.epoch)
            self._emit(obj)
        elif kind is OffsetPosition:
            self._emit({"type": "offsetIndexEntry", "path": path, "offset": event.offset,
                        "position": event.position})
        elif kind is TimestampOffset:
            self._emit({"type": "timeIndexEntry", "path": path, "timestamp": event.timestamp,
                        "offset": event.offset})
        elif kind is ProducerStateEntry:
            self._emit(producer_state_object(event, path))
        elif kind is AbortedTxn:
            self._emit({"type": "abortedTxn", "path": path, "version": event.version,
                        "producerId": event.producer_id, "firstOffset": event.first_offset,
                        "lastOffset": event.last_offset, "lastStableOffset": event.last_stable_offset})
        elif kind is TrailingBytes:
            self._emit({"type": "trailingBytes", "path": path, "count": event.count,
                        "position": event.position})
        elif kind is IndexIsEmpty:
            self._emit({"type": "indexEmpty", "path": event.path})
        elif kind is SanityCheckPassed:
            self._emit({"type": "sanityCheck", "path": event.path, "passed": True})
        elif kind is Problem:
            self.stderr(event.text)
            obj = {"type": "error", "path": path, "message": str(event.error or event.text),
                   "kafkaMessage": event.text}
            if event.finding is not None:
                obj.update(code=event.finding.code, position=event.finding.position)
            self._emit(obj)
        elif kind is Notice:
            self.stderr(event.text)
        elif kind is UnknownFile:
            self.stderr(f"Ignoring unknown file {event.path}")
            self._emit({"type": "unknownFile", "path": event.path})
        elif kind is FileEnd:
            for finding in event.findings:
                self._emit({"type": "finding", **finding.as_dict()})
            self._batch = None

    def report(self, report: DumpReport) -> None:
        for path, mismatches in report.index_mismatches.items():
            for index_offset, log_offset in mismatches:
                self._emit({"type": "indexMismatch", "path": path, "indexOffset": index_offset,
                            "logOffset": log_offset})
        errors = report.time_index
        for label, table, names in (("timeIndexMismatch", errors.mismatches, ("indexTimestamp", "logTimestamp")),
                                    ("timeIndexOutOfOrder", errors.out_of_order,
                                     ("indexTimestamp", "previousTimestamp")),
                                    ("timeIndexOffsetNotFound", errors.shallow_offset_not_found,
                                     ("indexedOffset", "foundLogOffset"))):
            for path, pairs in table.items():
                for first, second in pairs:
                    self._emit({"type": label, "path": path, names[0]: first, names[1]: second})
        for path, pairs in report.non_consecutive.items():
            for first, second in pairs:
                self._emit({"type": "nonConsecutiveOffsets", "path": path, "offset": first,
                            "nextOffset": second})


def producer_state_object(entry: ProducerStateEntry, path) -> dict:
    obj = {"type": "producerState", "path": path, "producerId": entry.producer_id,
           "producerEpoch": entry.producer_epoch, "coordinatorEpoch": entry.coordinator_epoch,
           "currentTxnFirstOffset": entry.current_txn_first_offset, "lastTimestamp": entry.last_timestamp}
    metadata = entry.batch_metadata
    if metadata is not None:
        obj.update(firstSequence=metadata.first_sequence, lastSequence=metadata.last_sequence,
                   lastOffset=metadata.last_offset, offsetDelta=metadata.offset_delta,
                   timestamp=metadata.timestamp)
    return obj


__all__ = ["JsonLinesDumpRenderer", "TIMESTAMP_TYPE_NAMES", "batch_object", "producer_state_object"]
