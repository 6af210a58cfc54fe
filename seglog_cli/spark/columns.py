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

With ``failOnDamage`` a batch failing its CRC (unless ``onCrcMismatch=skip``) and the last two raise a :class:`SeglogError` naming the file, position and
offset instead (Spark then fails the task).

Rows gather in :class:`~seglog_cli.spark.record_buffers.RecordBuffers` (Arrow-ready column
buffers, filled by the compiled ``columns_run`` for clean v2 data batches and from the general
decoder's records for the rest) and become an Arrow batch at ``maxRecordsPerBatch`` rows or
:data:`MAX_BATCH_BYTES` of batches, never splitting a Kafka batch unless it alone is bigger.
"""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from seglog_cli.spark.plan import FAIL, KEEP, ScanOptions, Split
from seglog_cli.spark.record_buffers import RUN_CHUNK, RUN_END, RUN_FULL, RecordBuffers, compiled_columns, const
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.codecs import codec_label
from seglog_cli.storage.log.control import parse_control_record
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.findings import Severity
from seglog_cli.storage.log import native
from seglog_cli.storage.log.records import Record, read_records

HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
RECORD_SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
    ("headers", pa.list_(pa.field("element", HEADER))),
    ("baseOffset", pa.int64()), ("producerId", pa.int64()), ("producerEpoch", pa.int32()),
    ("isTransactional", pa.bool_()), ("isControl", pa.bool_()), ("compression", pa.string()),
    ("segment", pa.string()), ("position", pa.int64()), ("isValid", pa.bool_()),
    ("controlType", pa.string()), ("logDir", pa.string()),
])
BATCH_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("segment", pa.string()), ("position", pa.int64()),
    ("baseOffset", pa.int64()), ("lastOffset", pa.int64()), ("count", pa.int32()),
    ("baseSequence", pa.int32()), ("lastSequence", pa.int32()), ("producerId", pa.int64()),
    ("producerEpoch", pa.int32()), ("partitionLeaderEpoch", pa.int32()), ("isTransactional", pa.bool_()),
    ("isControl", pa.bool_()), ("deleteHorizonMs", pa.int64()), ("timestampType", pa.string()),
    ("maxTimestamp", pa.int64()), ("size", pa.int32()), ("magic", pa.int32()), ("compression", pa.string()),
    ("crc", pa.int64()), ("isValid", pa.bool_()), ("logDir", pa.string()),
])
MAX_BATCH_BYTES = 32 * 1024 * 1024  # payload bytes per Arrow batch: bounds a worker's memory


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
    if options.read_committed and batch.magic >= 2:
        if split.last_stable_offset is not None and batch.last_offset >= split.last_stable_offset:
            # a read_committed fetch ends where the batch holding the last stable offset starts
            # (LocalLog.read's maxPosition, LogSegment.translateOffset): no record of it is returned
            return _STOP
        if batch.is_control or (batch.is_transactional and _aborted(split.aborted, batch)):
            return _SKIP
    if not batch.is_valid and (options.on_crc_mismatch != KEEP or options.fail_on_damage):
        if options.on_crc_mismatch == FAIL or (options.fail_on_damage and options.on_crc_mismatch == KEEP):
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


def _aborted(aborted: tuple, batch) -> bool:
    """Whether ``batch`` (transactional data) belongs to an aborted transaction: one of its
    producer's ``.txnindex`` entries spans its base offset (a read_committed consumer drops the
    producer's batches from the entry's first offset up to its ABORT marker)."""
    producer, offset = batch.producer_id, batch.base_offset
    return any(pid == producer and first <= offset <= last for pid, first, last in aborted)


def _raise_damage(findings, split: Split) -> None:
    """failOnDamage: the first damage inside the split stops the read, with the severity
    ``seglog verify`` gives it (:func:`~seglog_cli.storage.verify.verify_segment.framing_severity`): a
    torn, zero-filled or garbage tail of the partition's active segment, which a broker
    truncates by itself at start-up, does not; the same tail in a rolled segment, a corrupt
    region, does."""
    from seglog_cli.storage.verify.verify_segment import framing_severity  # failOnDamage only: workers start fast

    for finding in findings:
        if (framing_severity(finding, split.active) is Severity.ERROR
                and split.start <= (finding.position or 0) < split.end):
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


def _control_records(records: list, batch, path: str, fail: bool) -> tuple[list, list]:
    """The records of a control batch up to the first that is no valid control record (Kafka's
    ``ControlRecordType.parse``/``EndTransactionMarker``: the dump stops there too), and their
    control types as the dump names them (``COMMIT``, ``ABORT``, ...)."""
    types = []
    for i, record in enumerate(records):
        try:
            types.append(parse_control_record(record, path, batch.position).type_name)
        except SeglogError:
            if fail:
                raise
            return records[:i], types
    return records, types


# -- records ------------------------------------------------------------------------------------

def record_batches(split: Split, options: ScanOptions) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the split's records (schema :data:`RECORD_SCHEMA`).

    Clean v2 data batches go through the compiled ``columns_run`` a chunk at a time; every
    other batch (and every batch without the compiled module, or in an offset range) through
    the general decoder (:func:`_decoded`). Both fill the same :class:`RecordBuffers`, in file
    order."""
    # the compiled path reads every clean data batch: not for an offset range, nor where
    # read_committed has aborted transactions or a last stable offset to honour
    filtered = split.ranged or (options.read_committed and (split.aborted or split.last_stable_offset is not None))
    with MappedFile(split.path) as mapped:
        rows = RecordBuffers(None if filtered else compiled_columns(), max_rows=options.max_records_per_batch,
                             max_payload=MAX_BATCH_BYTES,
                             skip_invalid=options.on_crc_mismatch != KEEP or options.fail_on_damage)
        yield from _fill(rows, mapped, split, options)
        yield from _flush(rows, split, options)


def _fill(rows: RecordBuffers, mapped: MappedFile, split: Split, options: ScanOptions) -> Iterator[pa.RecordBatch]:
    """Read the split into ``rows``, yielding an Arrow batch whenever they hold one."""
    buf = mapped.data  # remote files: only the chunks LogScan yields are read, inside its present window
    limit = options.max_records_per_batch
    decode = native.module.decode_v2_batch if native.module is not None else None
    for chunk in _split_chunks(mapped, split, options):
        index = 0
        while index < len(chunk):
            if rows.columns_run is not None:
                index, reason = rows.run(buf, chunk, index, split.end)
                if reason == RUN_CHUNK:
                    break
                if reason == RUN_FULL:
                    yield from _flush(rows, split, options)
                    continue
                if reason == RUN_END:
                    return
            batch = chunk[index]  # for the general decoder
            index += 1
            wanted = _wanted(batch, split, options)
            if wanted == _STOP:
                return
            if wanted == _SKIP:
                continue
            records, control_types = _decoded(buf, batch, split, options, decode)
            if not records:
                continue
            if len(rows) and len(rows) + len(records) > limit:
                yield from _flush(rows, split, options)  # full Arrow batches, not one slightly over and a sliver
            rows.add_records(batch, records, options.check_crc and batch.is_valid, control_types)
            if len(rows) >= limit or rows.payload >= MAX_BATCH_BYTES:
                yield from _flush(rows, split, options)


def _decoded(buf, batch, split: Split, options: ScanOptions, decode) -> tuple[list, list | None]:
    """The records of ``batch`` through the general decoder, as ``seglog dump`` reads them, and
    for a control batch their control types (None for a data batch)."""
    # the compiled decoder straight away for an uncompressed v2 batch (what read_records does
    # first); None (compressed, legacy, anything unclean) takes read_records' path
    records = decode(Record, buf, batch) if decode is not None else None
    if records is None:
        records = _records(buf, batch, split.path, options.fail_on_damage)
    control_types = None
    if batch[6] & 0x20 and batch[4] >= 2:  # a control batch: its records must parse as such
        records, control_types = _control_records(records, batch, split.path, options.fail_on_damage)
    if split.ranged:
        kept = _in_range(records, split.from_offset, split.to_offset)
        if control_types is not None and len(kept) != len(records):
            wanted = {id(r) for r in kept}
            control_types = [t for r, t in zip(records, control_types) if id(r) in wanted]
        records = kept
    return records, control_types


def _flush(rows: RecordBuffers, split: Split, options: ScanOptions) -> Iterator[pa.RecordBatch]:
    if len(rows):
        yield from _sliced(_buffer_columns(split, rows, options.check_crc), options.max_records_per_batch)


def _sliced(batch: pa.RecordBatch, limit: int) -> Iterator[pa.RecordBatch]:
    """At most ``limit`` rows each. Rows are gathered a Kafka batch at a time and an Arrow batch
    is closed before a Kafka batch that would take it past ``limit``, so only a Kafka batch of
    more than ``limit`` records read alone is sliced here (slices share the buffers)."""
    if batch.num_rows <= limit:
        yield batch
        return
    for start in range(0, batch.num_rows, limit):
        yield batch.slice(start, limit)


def _in_range(records: list, from_offset, to_offset) -> list:
    low = -2**63 if from_offset is None else from_offset
    high = 2**63 if to_offset is None else to_offset
    return [r for r in records if low <= r[0] <= high]


def _buffer_columns(split: Split, fast: RecordBuffers, check_crc: bool) -> pa.RecordBatch:
    n = len(fast)
    values = fast.arrays(check_crc)
    offsets, entries = values["headers"]
    values["headers"] = pa.ListArray.from_arrays(offsets, entries, type=RECORD_SCHEMA.field("headers").type)
    values["timestamp"] = _spark_timestamps(values["timestamp"])
    values["topic"] = pa.repeat(const(pa.string(), split.topic), n)
    values["partition"] = pa.repeat(const(pa.int32(), split.partition), n)
    values["segment"] = pa.repeat(const(pa.string(), split.segment or None), n)
    values["logDir"] = pa.repeat(const(pa.string(), split.log_dir), n)
    return pa.RecordBatch.from_arrays([values[name] for name in RECORD_SCHEMA.names], schema=RECORD_SCHEMA)


MAX_TIMESTAMP_MS = (2**63 - 1) // 1000  # Spark timestamps are int64 microseconds


def _spark_timestamps(millis: pa.Array) -> pa.Array:
    """Epoch ms as Spark timestamps; one beyond their range (+-292,000 years: only in damaged
    batches; Spark's own Kafka source fails on them) is null."""
    bounds = pc.min_max(millis)
    if bounds["min"].as_py() < -MAX_TIMESTAMP_MS or bounds["max"].as_py() > MAX_TIMESTAMP_MS:
        in_range = pc.and_(pc.greater_equal(millis, const(pa.int64(), -MAX_TIMESTAMP_MS)),
                           pc.less_equal(millis, const(pa.int64(), MAX_TIMESTAMP_MS)))
        millis = pc.if_else(in_range, millis, const(pa.int64(), None))
    return pc.multiply(millis, const(pa.int64(), 1000)).cast(pa.timestamp("us", tz="UTC"))


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
        "topic": pa.repeat(const(pa.string(), split.topic), n),
        "partition": pa.repeat(const(pa.int32(), split.partition), n),
        "segment": pa.repeat(const(pa.string(), split.segment or None), n),
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
        "compression": [codec_label(b.compression) for b in batches],
        "crc": [b.crc for b in batches],
        "isValid": [b.is_valid if check_crc else None for b in batches],
        "logDir": pa.repeat(const(pa.string(), split.log_dir), n),
    }
    columns = [value if isinstance(value, pa.Array) else pa.array(value, BATCH_SCHEMA.field(name).type)
               for name, value in rows.items()]
    return pa.RecordBatch.from_arrays(columns, schema=BATCH_SCHEMA)
