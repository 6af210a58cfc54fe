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
from seglog_cli.spark.record_buffers import RecordBuffers, compiled_columns
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

def _split_batches(mapped: MappedFile, split: Split, options: ScanOptions) -> Iterator:
    """The batches starting in the split, filtered by offset range and CRC policy."""
    scan = LogScan(mapped, split.start, check_crc=options.check_crc)
    from_offset, to_offset = split.from_offset, split.to_offset
    reported = 0
    for chunk in scan.chunks():
        if options.fail_on_damage and len(scan.findings) != reported:
            _raise_damage(scan.findings[reported:], split)
            reported = len(scan.findings)
        for batch in chunk:
            if batch.position >= split.end:
                return
            if from_offset is not None and batch.last_offset < from_offset:
                continue
            if to_offset is not None and batch.magic >= 2 and batch.base_offset > to_offset:
                return
            if options.on_crc_mismatch != KEEP and not batch.is_valid:
                if options.on_crc_mismatch == FAIL:
                    raise SeglogError(f"batch fails its CRC (stored {batch.crc}, computed {batch.computed_crc})",
                                      split.path, batch.position, batch.base_offset)
                continue
            yield batch
    if options.fail_on_damage:
        _raise_damage(scan.findings[reported:], split)


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
    """Arrow batches of the split's records (schema :data:`RECORD_SCHEMA`)."""
    limit = options.max_records_per_batch
    with MappedFile(split.path) as mapped:
        buf = mapped.buffer
        records: list = []
        batches: list = []
        counts: list = []
        payload = 0
        compiled = native.module
        decode = compiled.decode_v2_batch if compiled is not None else None
        columns_v2 = compiled_columns()
        ranged = split.from_offset is not None or split.to_offset is not None
        fast = RecordBuffers(columns_v2) if columns_v2 is not None and not ranged else None
        for batch in _split_batches(mapped, split, options):
            if fast is not None:
                added = fast.add(buf, batch)
                if added is not None:  # records straight into column buffers
                    if records:  # what the general decoder read so far goes first
                        yield from _sliced(_record_columns(split, records, batches, counts, options.check_crc), limit)
                        records, batches, counts, payload = [], [], [], 0
                    batches.append(batch)
                    counts.append(added)
                    payload += batch[2]
                    if len(fast) >= limit or payload >= MAX_BATCH_BYTES:
                        yield from _sliced(_buffer_columns(split, fast, batches, counts, options.check_crc), limit)
                        batches, counts, payload = [], [], 0
                    continue
                if len(fast):
                    yield from _sliced(_buffer_columns(split, fast, batches, counts, options.check_crc), limit)
                    batches, counts, payload = [], [], 0
            # the compiled decoder straight away for an uncompressed v2 batch (what read_records
            # does first); None (compressed, legacy, anything unclean) takes read_records' path
            decoded = decode(Record, buf, batch) if decode is not None else None
            if decoded is None:
                decoded = _records(buf, batch, split.path, options.fail_on_damage)
            if batch[6] & 0x20 and batch[4] >= 2:  # a control batch: its records must parse as such
                decoded = _control_records(decoded, batch, split.path, options.fail_on_damage)
            if split.from_offset is not None or split.to_offset is not None:
                decoded = _in_range(decoded, split.from_offset, split.to_offset)
            if not decoded:
                continue
            records.extend(decoded)
            batches.append(batch)
            counts.append(len(decoded))
            payload += batch[2]
            if len(records) >= limit or payload >= MAX_BATCH_BYTES:
                yield from _sliced(_record_columns(split, records, batches, counts, options.check_crc), limit)
                records, batches, counts, payload = [], [], [], 0
        if records:
            yield from _sliced(_record_columns(split, records, batches, counts, options.check_crc), limit)
        elif fast is not None and len(fast):
            yield from _sliced(_buffer_columns(split, fast, batches, counts, options.check_crc), limit)


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


def _buffer_columns(split: Split, fast: RecordBuffers, batches: list, counts: list,
                    check_crc: bool) -> pa.RecordBatch:
    n = len(fast)
    values = fast.arrays()
    offsets, entries = values["headers"]
    values["headers"] = pa.ListArray.from_arrays(offsets, entries, type=RECORD_SCHEMA.field("headers").type)
    return _columns(split, n, values, batches, counts, check_crc)


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
