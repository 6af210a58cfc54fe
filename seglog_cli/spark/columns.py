"""Reading one :class:`~seglog_cli.spark.plan.Split` into Arrow record batches (no Spark).

:func:`record_batches` gives one row per record with the columns of Spark's Kafka source
(``key``, ``value``, ``topic``, ``partition``, ``offset``, ``timestamp``, ``timestampType``,
``headers``) plus the batch's (``baseOffset``, ``producerId``, ``producerEpoch``,
``isTransactional``, ``isControl``, ``compression``, ``segment``, ``position``, ``isValid``);
:func:`batch_batches` one row per batch, without decoding records.

The values are those of ``seglog dump --deep-iteration --format jsonl``, from the same engine
calls (``LogScan`` for the framing, ``read_records`` and its compiled decoder for the
records): the record timestamp Kafka reports (the batch max timestamp for LogAppendTime), the
batch's timestamp type, control records included (``isControl``), legacy v0/v1 messages with
their inner messages, header keys decoded as Java's ``new String(bytes, UTF_8)``. Damage is
handled as the dump handles it:

* a batch that fails its CRC still gives its records (``isValid`` false), unless
  ``onCrcMismatch`` is ``skip`` or ``fail``;
* a batch whose records cannot be decoded gives the records before the damaged one (as Kafka's
  iterator does), then the read goes on with the next batch; the same for a control batch
  whose record is no valid control record;
* damaged framing (a corrupt region, a torn or zero-filled tail) is stepped over as the dump's
  scan does (it resumes at the next valid batch).

With ``failOnDamage`` the last two raise a :class:`SeglogError` naming the file, position and
offset instead (Spark then fails the task).

Columns are built a whole Arrow batch at a time: integers through ``array.array`` buffers,
per-batch values taken once per batch and spread with ``take``; nothing is converted per
record in Python except what the decoder already made (key, value and header bytes).
"""

from __future__ import annotations

import array
from itertools import accumulate, chain, repeat
from operator import itemgetter
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from seglog_cli.spark.plan import FAIL, KEEP, ScanOptions, Split
from seglog_cli.spark.record_buffers import RUN_CHUNK, RUN_END, RUN_FULL, RecordBuffers, compiled_columns
from seglog_cli.storage.batches import LogScan
from seglog_cli.storage.codecs import CODEC_NAMES
from seglog_cli.storage.control import parse_control_record
from seglog_cli.storage.errors import SeglogError
from seglog_cli.storage.files import MappedFile
from seglog_cli.storage.findings import Severity
from seglog_cli.storage import native
from seglog_cli.storage.records import Record, read_records
from seglog_cli.storage.text import java_utf8

HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
RECORD_SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
    ("headers", pa.list_(pa.field("element", HEADER))),
    ("baseOffset", pa.int64()), ("producerId", pa.int64()), ("producerEpoch", pa.int32()),
    ("isTransactional", pa.bool_()), ("isControl", pa.bool_()), ("compression", pa.string()),
    ("segment", pa.string()), ("position", pa.int64()), ("isValid", pa.bool_()),
])
BATCH_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("segment", pa.string()), ("position", pa.int64()),
    ("baseOffset", pa.int64()), ("lastOffset", pa.int64()), ("count", pa.int32()),
    ("baseSequence", pa.int32()), ("lastSequence", pa.int32()), ("producerId", pa.int64()),
    ("producerEpoch", pa.int32()), ("partitionLeaderEpoch", pa.int32()), ("isTransactional", pa.bool_()),
    ("isControl", pa.bool_()), ("deleteHorizonMs", pa.int64()), ("timestampType", pa.string()),
    ("maxTimestamp", pa.int64()), ("size", pa.int32()), ("magic", pa.int32()), ("compression", pa.string()),
    ("crc", pa.int64()), ("isValid", pa.bool_()),
])
MAX_BATCH_BYTES = 32 * 1024 * 1024  # payload bytes per Arrow batch: bounds a worker's memory

_OFFSET, _TIMESTAMP, _KEY, _VALUE, _HEADERS = (itemgetter(i) for i in (0, 1, 3, 4, 5))  # Record fields
_POSITION, _OFFSET_FIELD, _PRODUCER_ID, _PRODUCER_EPOCH = (itemgetter(i) for i in (0, 1, 10, 11))  # BatchHeader
_CODEC_NAMES = dict(CODEC_NAMES)


def codec_name(codec: int) -> str:
    return CODEC_NAMES.get(codec, f"unknown({codec})")


# -- walking a split ----------------------------------------------------------------------------

def _split_chunks(mapped: MappedFile, split: Split, options: ScanOptions) -> Iterator[list]:
    """The scan's chunks of batch headers from the split's start (with ``failOnDamage``, damage
    found so far stops the read before each chunk and at the end)."""
    scan = LogScan(mapped, split.start, check_crc=options.check_crc)
    reported = 0
    for chunk in scan.chunks():
        if options.fail_on_damage and len(scan.findings) != reported:
            _raise_damage(scan.findings[reported:], split)
            reported = len(scan.findings)
        yield chunk
    if options.fail_on_damage:
        _raise_damage(scan.findings[reported:], split)


_TAKE, _SKIP, _STOP = range(3)


def _wanted(batch, split: Split, options: ScanOptions) -> int:
    """Whether the split reads ``batch`` (offset range, CRC policy), skips it or ends before it."""
    if batch.position >= split.end:
        return _STOP
    if split.from_offset is not None and batch.last_offset < split.from_offset:
        return _SKIP
    if split.to_offset is not None and batch.magic >= 2 and batch.base_offset > split.to_offset:
        return _STOP
    if options.on_crc_mismatch != KEEP and not batch.is_valid:
        if options.on_crc_mismatch == FAIL:
            raise SeglogError(f"batch fails its CRC (stored {batch.crc}, computed {batch.computed_crc})",
                              split.path, batch.position, batch.base_offset)
        return _SKIP
    return _TAKE


def _split_batches(mapped: MappedFile, split: Split, options: ScanOptions) -> Iterator:
    """The batches starting in the split, filtered by offset range and CRC policy."""
    for chunk in _split_chunks(mapped, split, options):
        for batch in chunk:
            wanted = _wanted(batch, split, options)
            if wanted == _STOP:
                return
            if wanted == _TAKE:
                yield batch


def _raise_damage(findings, split: Split) -> None:
    """failOnDamage: the first damage (an error finding: a corrupt region, trailing garbage)
    inside the split stops the read. Tails a broker truncates by itself (warnings) do not."""
    for finding in findings:
        if finding.severity is Severity.ERROR and split.start <= (finding.position or 0) < split.end:
            raise SeglogError(f"{finding.code}: {finding.message}", split.path, finding.position, finding.offset)


def _records(buf, batch, path: str, fail: bool) -> list:
    """The batch's records; on damage those before it (as ``seglog dump``), or raise."""
    out: list = []
    try:
        out.extend(read_records(buf, batch, path))
    except SeglogError:
        if fail:
            raise
    return out


def _control_records(records: list, batch, path: str, fail: bool) -> list:
    """The records of a control batch up to the first that is no valid control record (Kafka's
    ``ControlRecordType.parse``/``EndTransactionMarker``: the dump stops there too)."""
    for i, record in enumerate(records):
        try:
            parse_control_record(record, path, batch.position)
        except SeglogError:
            if fail:
                raise
            return records[:i]
    return records


# -- records ------------------------------------------------------------------------------------

def record_batches(split: Split, options: ScanOptions) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the split's records (schema :data:`RECORD_SCHEMA`).

    Clean v2 data batches go through the compiled :class:`RecordBuffers` a chunk at a time;
    every other batch (and every batch without the compiled module, or in an offset range)
    through :class:`_General`. Rows keep the file's order: whichever holds the earlier rows is
    emptied first."""
    limit = options.max_records_per_batch
    with MappedFile(split.path) as mapped:
        buf = mapped.buffer
        general = _General(split, options, buf)
        columns_run = compiled_columns()
        ranged = split.from_offset is not None or split.to_offset is not None
        fast = None
        if columns_run is not None and not ranged:
            fast = RecordBuffers(columns_run, max_rows=limit, max_payload=MAX_BATCH_BYTES,
                                 skip_invalid=options.on_crc_mismatch != KEEP)
        for chunk in _split_chunks(mapped, split, options):
            index = 0
            while index < len(chunk):
                if fast is not None:
                    index, reason = fast.run(buf, chunk, index, split.end)
                    if len(fast) and general.records:  # the general decoder's rows came first
                        yield from general.flush()
                    if reason == RUN_CHUNK:
                        break
                    if len(fast):  # full, or what it holds comes before chunk[index]
                        yield from _sliced(_buffer_columns(split, fast, options.check_crc), limit)
                    if reason == RUN_FULL:
                        continue
                    if reason == RUN_END:
                        yield from general.flush()
                        return
                batch = chunk[index]
                index += 1
                wanted = _wanted(batch, split, options)
                if wanted == _STOP:
                    yield from general.flush()
                    return
                if wanted == _TAKE:
                    yield from general.add(batch)
        if fast is not None and len(fast):
            yield from _sliced(_buffer_columns(split, fast, options.check_crc), limit)
        yield from general.flush()


class _General:
    """Batches read through the general decoder (``read_records`` and its compiled
    ``decode_v2_batch``), gathered into Arrow batches."""

    def __init__(self, split: Split, options: ScanOptions, buf):
        self.split, self.options, self.buf = split, options, buf
        compiled = native.module
        self.decode = compiled.decode_v2_batch if compiled is not None else None
        self.ranged = split.from_offset is not None or split.to_offset is not None
        self.records: list = []
        self.batches: list = []
        self.counts: list = []
        self.payload = 0

    def add(self, batch) -> Iterator[pa.RecordBatch]:
        split, options = self.split, self.options
        # the compiled decoder straight away for an uncompressed v2 batch (what read_records
        # does first); None (compressed, legacy, anything unclean) takes read_records' path
        decoded = self.decode(Record, self.buf, batch) if self.decode is not None else None
        if decoded is None:
            decoded = _records(self.buf, batch, split.path, options.fail_on_damage)
        if batch[6] & 0x20 and batch[4] >= 2:  # a control batch: its records must parse as such
            decoded = _control_records(decoded, batch, split.path, options.fail_on_damage)
        if self.ranged:
            decoded = _in_range(decoded, split.from_offset, split.to_offset)
        if not decoded:
            return
        self.records.extend(decoded)
        self.batches.append(batch)
        self.counts.append(len(decoded))
        self.payload += batch[2]
        if len(self.records) >= options.max_records_per_batch or self.payload >= MAX_BATCH_BYTES:
            yield from self.flush()

    def flush(self) -> Iterator[pa.RecordBatch]:
        if self.records:
            batch = _record_columns(self.split, self.records, self.batches, self.counts, self.options.check_crc)
            self.records, self.batches, self.counts, self.payload = [], [], [], 0
            yield from _sliced(batch, self.options.max_records_per_batch)


def _sliced(batch: pa.RecordBatch, limit: int) -> Iterator[pa.RecordBatch]:
    """At most ``limit`` rows each (a Kafka batch is never split across two reads, so the
    last one read may overshoot; slices share the buffers)."""
    if batch.num_rows <= limit:
        yield batch
        return
    for start in range(0, batch.num_rows, limit):
        yield batch.slice(start, limit)


def _in_range(records: list, from_offset, to_offset) -> list:
    low = -2**63 if from_offset is None else from_offset
    high = 2**63 if to_offset is None else to_offset
    return [r for r in records if low <= r[0] <= high]


def _int_array(typecode: str, values, pa_type) -> pa.Array:
    data = array.array(typecode, values)
    return pa.Array.from_buffers(pa_type, len(data), [None, pa.py_buffer(data)])


def _record_columns(split: Split, records: list, batches: list, counts: list, check_crc: bool) -> pa.RecordBatch:
    values = {"key": pa.array(list(map(_KEY, records)), pa.binary()),
              "value": pa.array(list(map(_VALUE, records)), pa.binary()),
              "offset": _int_array("q", map(_OFFSET, records), pa.int64()),
              "timestamp": _int_array("q", map(_TIMESTAMP, records), pa.int64()),
              "headers": _headers(list(map(_HEADERS, records)))}
    return _columns(split, len(records), values, batches, counts, check_crc)


def _buffer_columns(split: Split, fast: RecordBuffers, check_crc: bool) -> pa.RecordBatch:
    n = len(fast)
    values = fast.arrays(check_crc)
    offsets, entries = values["headers"]
    values["headers"] = pa.ListArray.from_arrays(offsets, entries, type=RECORD_SCHEMA.field("headers").type)
    values["timestamp"] = _spark_timestamps(values["timestamp"])
    values["topic"] = pa.repeat(pa.scalar(split.topic, pa.string()), n)
    values["partition"] = pa.repeat(pa.scalar(split.partition, pa.int32()), n)
    values["segment"] = pa.repeat(pa.scalar(split.segment or None, pa.string()), n)
    return pa.RecordBatch.from_arrays([values[name] for name in RECORD_SCHEMA.names], schema=RECORD_SCHEMA)


def _columns(split: Split, n: int, values: dict, batches: list, counts: list, check_crc: bool) -> pa.RecordBatch:
    which = _int_array("i", chain.from_iterable(map(repeat, range(len(batches)), counts)), pa.int32())
    per_batch = _batch_values(batches, check_crc)
    columns = [
        values["key"],
        values["value"],
        pa.repeat(pa.scalar(split.topic, pa.string()), n),
        pa.repeat(pa.scalar(split.partition, pa.int32()), n),
        values["offset"],
        _spark_timestamps(values["timestamp"]),
        per_batch["timestampType"].take(which),
        values["headers"],
        *(per_batch[name].take(which) for name in ("baseOffset", "producerId", "producerEpoch",
                                                    "isTransactional", "isControl", "compression")),
        pa.repeat(pa.scalar(split.segment or None, pa.string()), n),
        per_batch["position"].take(which),
        per_batch["isValid"].take(which),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=RECORD_SCHEMA)


MAX_TIMESTAMP_MS = (2**63 - 1) // 1000  # Spark timestamps are int64 microseconds


def _spark_timestamps(millis: pa.Array) -> pa.Array:
    """Epoch ms as Spark timestamps; one beyond their range (+-292,000 years: only in damaged
    batches; Spark's own Kafka source fails on them) is null."""
    bounds = pc.min_max(millis)
    if bounds["min"].as_py() < -MAX_TIMESTAMP_MS or bounds["max"].as_py() > MAX_TIMESTAMP_MS:
        in_range = pc.and_(pc.greater_equal(millis, -MAX_TIMESTAMP_MS), pc.less_equal(millis, MAX_TIMESTAMP_MS))
        millis = pc.if_else(in_range, millis, pa.scalar(None, pa.int64()))
    return pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC"))


def _batch_values(batches: list, check_crc: bool) -> dict[str, pa.Array]:
    """Per-batch values, from the header tuples' fields (position 0, base offset 1, length 2,
    magic 4, crc 5, attributes 6, producer id 10, producer epoch 11, computed crc 14)."""
    magics = [b[4] for b in batches]
    attributes = [b[6] for b in batches]
    v2 = all(magic >= 2 for magic in magics)
    if check_crc:
        valid = [b[5] == b[14] and b[2] >= (49 if b[4] >= 2 else 14) for b in batches]
    else:
        valid = [None] * len(batches)
    if v2:
        timestamp_types = [(a >> 3) & 1 for a in attributes]
        transactional = [bool(a & 0x10) for a in attributes]
        control = [bool(a & 0x20) for a in attributes]
        base_offsets = _int_array("q", map(_OFFSET_FIELD, batches), pa.int64())
    else:
        timestamp_types = [b.timestamp_type for b in batches]
        transactional = [b.is_transactional for b in batches]
        control = [b.is_control for b in batches]
        base_offsets = pa.array([b[1] if b[4] >= 2 else None for b in batches], pa.int64())
    return {
        "timestampType": pa.array(timestamp_types, pa.int32()),
        "baseOffset": base_offsets,
        "producerId": _int_array("q", map(_PRODUCER_ID, batches), pa.int64()),
        "producerEpoch": _int_array("i", map(_PRODUCER_EPOCH, batches), pa.int32()),
        "isTransactional": pa.array(transactional, pa.bool_()),
        "isControl": pa.array(control, pa.bool_()),
        "compression": pa.array([_CODEC_NAMES.get(a & 7) or codec_name(a & 7) for a in attributes], pa.string()),
        "position": _int_array("q", map(_POSITION, batches), pa.int64()),
        "isValid": pa.array(valid, pa.bool_()),
    }


def _headers(headers: list) -> pa.Array:
    """list<struct<key string, value binary>>; header keys as Java decodes them."""
    offsets = _int_array("i", chain((0,), accumulate(map(len, headers))), pa.int32())
    flat = list(chain.from_iterable(headers))
    entries = pa.StructArray.from_arrays(
        [pa.array([java_utf8(key) for key, _ in flat], pa.string()),
         pa.array([value for _, value in flat], pa.binary())],
        fields=list(HEADER))
    return pa.ListArray.from_arrays(offsets, entries, type=RECORD_SCHEMA.field("headers").type)


# -- batches ------------------------------------------------------------------------------------

def batch_batches(split: Split, options: ScanOptions) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the split's batch headers (schema :data:`BATCH_SCHEMA`)."""
    limit = options.max_records_per_batch
    with MappedFile(split.path) as mapped:
        pending: list = []
        for batch in _split_batches(mapped, split, options):
            pending.append(batch)
            if len(pending) >= limit:
                yield _batch_columns(split, pending, options.check_crc)
                pending = []
        if pending:
            yield _batch_columns(split, pending, options.check_crc)


def _batch_columns(split: Split, batches: list, check_crc: bool) -> pa.RecordBatch:
    n = len(batches)
    v2 = [b.magic >= 2 for b in batches]
    rows = {
        "topic": pa.repeat(pa.scalar(split.topic, pa.string()), n),
        "partition": pa.repeat(pa.scalar(split.partition, pa.int32()), n),
        "segment": pa.repeat(pa.scalar(split.segment or None, pa.string()), n),
        "position": [b.position for b in batches],
        "baseOffset": [b.base_offset if new else None for b, new in zip(batches, v2)],
        "lastOffset": [b.last_offset for b in batches],
        "count": [b.records_count if new else None for b, new in zip(batches, v2)],
        "baseSequence": [b.base_sequence if new else None for b, new in zip(batches, v2)],
        "lastSequence": [b.last_sequence if new else None for b, new in zip(batches, v2)],
        "producerId": [b.producer_id if new else None for b, new in zip(batches, v2)],
        "producerEpoch": [b.producer_epoch if new else None for b, new in zip(batches, v2)],
        "partitionLeaderEpoch": [b.partition_leader_epoch if new else None for b, new in zip(batches, v2)],
        "isTransactional": [b.is_transactional if new else None for b, new in zip(batches, v2)],
        "isControl": [b.is_control if new else None for b, new in zip(batches, v2)],
        "deleteHorizonMs": [b.delete_horizon_ms for b in batches],
        "timestampType": [b.timestamp_type_name for b in batches],
        "maxTimestamp": [b.max_timestamp for b in batches],
        "size": [b.size for b in batches],
        "magic": [b.magic for b in batches],
        "compression": [codec_name(b.compression) for b in batches],
        "crc": [b.crc for b in batches],
        "isValid": [b.is_valid if check_crc else None for b in batches],
    }
    columns = [value if isinstance(value, pa.Array) else pa.array(value, BATCH_SCHEMA.field(name).type)
               for name, value in rows.items()]
    return pa.RecordBatch.from_arrays(columns, schema=BATCH_SCHEMA)
