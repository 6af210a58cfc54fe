"""Deep iteration: the records inside a batch, for every magic and codec (§3, §5, §6).

:func:`read_records` mirrors Kafka's record iterators, including their failure modes:

* v2 uncompressed: records are decoded lazily from the batch bytes, so the records before a
  damaged one are returned before the :class:`InvalidRecordError` (like Kafka's iterator);
* v2 compressed: the stream is decompressed and every record decoded before the first is
  returned (Kafka's ``iterator()`` materialises compressed batches the same way);
* legacy uncompressed: the entry is its own single record;
* legacy compressed: the wrapper value is decompressed into inner entries, whose offsets are
  made absolute with Kafka's rules (v1 relative offsets, the librdkafka wrapper-offset-0 case).

Record timestamps follow Kafka: LogAppendTime batches report the batch max timestamp for every
record; inner v1 messages of a LogAppendTime wrapper report the wrapper's timestamp.

Error messages are Kafka's own where Kafka has one. The varint decoding is inlined for the
common one-byte case; it is checked against the construct schemas in the tests.
"""

from __future__ import annotations

import struct
import zlib
from operator import itemgetter
from typing import Iterable, Iterator

from seglog_cli.formats import layout
from seglog_cli.storage.log.batch_header import (CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE, RECORD_BATCH_OVERHEAD,
                                                 BatchHeader, increment_sequence, wrap_int64)
from seglog_cli.storage.log import native
from seglog_cli.storage.log.codecs import DecompressionError, decompress
from seglog_cli.storage.log.errors import CorruptRecordError, DecodeError, InvalidRecordError

PREMATURE_EOF = "Incorrect declared batch size, premature EOF reached"
RECORDS_REMAINING = "Incorrect declared batch size, records still remaining in file"
INVALID_STRUCTURE = "Found invalid record structure"

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_LEGACY_ENTRY = struct.Struct(">qiIbb")


class Record(tuple):
    """One record. ``key``/``value`` are ``bytes`` or ``None``; ``headers`` a tuple of
    ``(key_bytes, value_bytes_or_None)``. ``crc``/``is_valid`` are set for legacy records only
    (v2 records have no CRC of their own). A tuple underneath, so the compiled decoder can
    build it directly."""

    __slots__ = ()
    _fields = ("offset", "timestamp", "timestamp_type", "key", "value", "headers", "sequence",
               "size_in_bytes", "crc", "is_valid", "magic")

    def __new__(cls, offset, timestamp, timestamp_type, key, value, headers, sequence,
                size_in_bytes, crc=None, is_valid=True, magic=2):
        return tuple.__new__(cls, (offset, timestamp, timestamp_type, key, value, headers, sequence,
                                   size_in_bytes, crc, is_valid, magic))

    offset = property(itemgetter(0))
    timestamp = property(itemgetter(1))
    timestamp_type = property(itemgetter(2))
    key = property(itemgetter(3))
    value = property(itemgetter(4))
    headers = property(itemgetter(5))
    sequence = property(itemgetter(6))
    size_in_bytes = property(itemgetter(7))
    crc = property(itemgetter(8))
    is_valid = property(itemgetter(9))
    magic = property(itemgetter(10))

    def replace(self, **changes) -> "Record":
        values = dict(zip(self._fields, self))
        values.update(changes)
        return Record(**values)

    @property
    def key_size(self) -> int:
        return -1 if self[3] is None else len(self[3])

    @property
    def value_size(self) -> int:
        return -1 if self[4] is None else len(self[4])

    def __repr__(self) -> str:
        return f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r})"


NOT_KEPT = "not kept"  # a RecordRun section a decode process did not send back


class RecordRun:
    """Consecutive v2 data batches whose records all decode cleanly (checked by the compiled
    decoder's ``check_run``), records not built yet. Iterating gives each ``BatchHeader``
    followed by its ``Record`` items; ``sections[i]`` is the decompressed records section of
    ``headers[i]`` when it is compressed, else None (the records are read from ``buffer``), or
    ``NOT_KEPT`` when a decode process formatted the batch and did not send its section back
    (it is decompressed again if anything asks for the records)."""

    __slots__ = ("buffer", "headers", "sections", "formatted")

    def __init__(self, buffer, headers: list[BatchHeader], sections: list):
        self.buffer, self.headers, self.sections = buffer, headers, sections
        self.formatted = None  # what DumpOptions.format_run made of it in a decode worker

    def __len__(self) -> int:
        return len(self.headers)

    def __iter__(self) -> Iterator[BatchHeader | Record]:
        for batch, section in zip(self.headers, self.sections):
            yield batch
            yield from self.records(batch, section)

    def records(self, batch: BatchHeader, section) -> list[Record]:
        compiled = native.module
        if compiled is None or not batch.records_count or section is NOT_KEPT:
            return list(read_records(self.buffer, batch)) if batch.records_count else []
        if section is None:
            return compiled.decode_v2_batch(Record, self.buffer, batch)
        log_append_time = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
        return compiled.decode_v2(Record, section, batch.records_count, batch.base_offset, batch.base_timestamp,
                                  batch.base_sequence, log_append_time, batch.timestamp_type, True)


def read_records(buf, batch: BatchHeader, path: str | None = None) -> Iterator[Record]:
    """Iterate the records of ``batch``, whose bytes are ``buf[batch.position:batch.end_position]``."""
    if batch.magic >= 2:
        return _v2_records(buf, batch, path)
    return _legacy_records(buf, batch, path)


# -- magic v2 --------------------------------------------------------------------------------

def _v2_records(buf, batch: BatchHeader, path) -> Iterator[Record]:
    count = batch.records_count
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v{batch.magic} batch",
                                 path, batch.position, batch.base_offset)
    if count == 0:
        return iter(())
    compiled = native.module
    if compiled is not None and not batch.compression:  # straight from the mapped file
        records = compiled.decode_v2_batch(Record, buf, batch)
        if records is not None:
            return iter(records)
    start = batch.position + RECORD_BATCH_OVERHEAD
    data = buf[start:batch.end_position]
    log_append_time = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
    args = (batch.base_offset, batch.base_timestamp, batch.base_sequence, log_append_time,
            batch.timestamp_type)
    codec = batch.compression
    stream = codec != 0
    if stream:
        data = _decompress(codec, data, batch, path)
    if compiled is not None and stream:
        records = compiled.decode_v2(Record, data, count, *args, stream)
        if records is not None:
            return iter(records)
        # not clean: the Python decoder below finds Kafka's exact error (or Java's wrap-around)
    records = _decode_v2(data, count, *args, stream, path, batch.position)
    if not (-2**62 < batch.base_offset < 2**62 and -2**62 < batch.base_timestamp < 2**62):
        records = _with_java_long_wrap(records)
    # uncompressed records come lazily (those before a damaged one are returned first, as in
    # Kafka); a compressed batch is decoded whole before the first record, as Kafka does
    return records if not stream else iter(list(records))


def _decompress(codec: int, data: bytes, batch: BatchHeader, path) -> bytes:
    try:
        return decompress(codec, data, batch.magic)
    except DecompressionError as exc:
        raise DecodeError(f"Failed to decompress record stream: {exc}", path, batch.position,
                          batch.base_offset) from None


def _with_java_long_wrap(records: Iterable[Record]) -> Iterator[Record]:
    """Offsets and timestamps past the int64 range wrap as Java longs do (corrupt headers)."""
    for record in records:
        yield record.replace(offset=wrap_int64(record.offset), timestamp=wrap_int64(record.timestamp))


def _varint_tail(data, pos: int, raw: int, max_bytes: int):
    """Continue a varint whose first byte ``raw`` had the continuation bit; returns (raw, pos)."""
    raw &= 0x7F
    shift = 7
    for _ in range(max_bytes - 1):
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return raw, pos
        shift += 7
    raise ValueError("varint is too long")


def _decode_v2(data, count, base_offset, base_timestamp, base_sequence, log_append_time,
               timestamp_type, stream, path, position) -> Iterator[Record]:
    """Decode ``count`` records from ``data``.

    ``stream`` selects Kafka's compressed-stream reader (each record body is read into a buffer
    of exactly its declared length) over its in-place buffer reader (the body may run on into
    the rest of the batch, and only the final size check notices).
    """
    n = len(data)
    pos = 0
    tail = _varint_tail
    for _ in range(count):
        # length (read outside Kafka's try block: underflow here is a premature EOF)
        try:
            raw = data[pos]
            pos += 1
            if raw >= 0x80:
                raw, pos = tail(data, pos, raw, 5)
                raw &= 0xFFFFFFFF
        except (IndexError, ValueError):
            raise InvalidRecordError(PREMATURE_EOF, path, position) from None
        length = (raw >> 1) ^ -(raw & 1)
        if stream:
            if length < 0:
                raise InvalidRecordError(PREMATURE_EOF, path, position)
            if n - pos < length:
                raise InvalidRecordError(
                    f"Invalid record size: expected {length} bytes in record payload, but the record "
                    f"payload reached EOF.", path, position)
            limit = pos + length
        else:
            if n - pos < length:
                raise InvalidRecordError(
                    f"Invalid record size: expected {length} bytes in record payload, but instead the "
                    f"buffer has only {n - pos} remaining bytes.", path, position)
            limit = n
        body_start = pos
        try:
            pos += 1  # attributes: unused
            raw = data[pos]
            pos += 1
            if raw >= 0x80:
                raw, pos = tail(data, pos, raw, 10)
                raw &= 0xFFFFFFFFFFFFFFFF
            timestamp_delta = (raw >> 1) ^ -(raw & 1)
            raw = data[pos]
            pos += 1
            if raw >= 0x80:
                raw, pos = tail(data, pos, raw, 5)
                raw &= 0xFFFFFFFF
            offset_delta = (raw >> 1) ^ -(raw & 1)
            raw = data[pos]
            pos += 1
            if raw >= 0x80:
                raw, pos = tail(data, pos, raw, 5)
                raw &= 0xFFFFFFFF
            size = (raw >> 1) ^ -(raw & 1)
            if size >= 0:
                if size > limit - pos:
                    raise ValueError("key runs past the record")
                key = data[pos:pos + size]
                pos += size
            else:
                key = None
            raw = data[pos]
            pos += 1
            if raw >= 0x80:
                raw, pos = tail(data, pos, raw, 5)
                raw &= 0xFFFFFFFF
            size = (raw >> 1) ^ -(raw & 1)
            if size >= 0:
                if size > limit - pos:
                    raise ValueError("value runs past the record")
                value = data[pos:pos + size]
                pos += size
            else:
                value = None
            raw = data[pos]
            pos += 1
            if raw >= 0x80:
                raw, pos = tail(data, pos, raw, 5)
                raw &= 0xFFFFFFFF
            header_count = (raw >> 1) ^ -(raw & 1)
            if header_count == 0:
                headers = ()
            else:
                headers, pos = _read_headers(data, pos, limit, header_count, path, position)
            if pos > limit:
                raise ValueError("record runs past its length")
        except (IndexError, ValueError):
            raise InvalidRecordError(INVALID_STRUCTURE, path, position) from None
        if pos - body_start != length:
            raise InvalidRecordError(
                f"Invalid record size: expected to read {length} bytes in record payload, but instead "
                f"read {pos - body_start}", path, position)
        yield Record(
            base_offset + offset_delta,
            log_append_time if log_append_time is not None else base_timestamp + timestamp_delta,
            timestamp_type,
            key,
            value,
            headers,
            increment_sequence(base_sequence, offset_delta) if base_sequence >= 0 else -1,
            pos - body_start + _varint_size(length),
        )
    if pos != n:
        raise InvalidRecordError(RECORDS_REMAINING, path, position)


def _read_headers(data, pos, limit, count, path, position):
    if count < 0:
        raise InvalidRecordError(f"Found invalid number of record headers {count}", path, position)
    if count > limit - pos:
        raise InvalidRecordError(
            f"Found invalid number of record headers. {count} is larger than the remaining size of "
            f"the buffer", path, position)
    headers = []
    for _ in range(count):
        size, pos = _read_varint(data, pos)
        if size < 0:
            raise InvalidRecordError(f"Invalid negative header key size {size}", path, position)
        if size > limit - pos:
            raise ValueError("header key runs past the record")
        header_key = data[pos:pos + size]
        pos += size
        size, pos = _read_varint(data, pos)
        if size >= 0:
            if size > limit - pos:
                raise ValueError("header value runs past the record")
            header_value = data[pos:pos + size]
            pos += size
        else:
            header_value = None
        headers.append((header_key, header_value))
    return tuple(headers), pos


def _read_varint(data, pos):
    raw = data[pos]
    pos += 1
    if raw >= 0x80:
        raw, pos = _varint_tail(data, pos, raw, 5)
        raw &= 0xFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def _varint_size(value: int) -> int:
    raw = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    size = 1
    while raw >= 0x80:
        raw >>= 7
        size += 1
    return size


# -- legacy v0/v1 ----------------------------------------------------------------------------

def _legacy_records(buf, batch: BatchHeader, path) -> Iterator[Record]:
    entry = buf[batch.position:batch.end_position]
    if batch.compression == 0:
        return iter((_legacy_record(entry, 0, len(entry), batch.base_offset, None, None, path,
                                    batch.position),))
    return _legacy_inner_records(entry, batch, path)


def _legacy_record(data, start, end, offset, wrapper_type, wrapper_timestamp, path, position) -> Record:
    """The message of the log entry at ``data[start:end]`` (12-byte overhead included)."""
    message = data[start + 12:end]
    try:
        crc, magic, attributes = struct.unpack_from(">IbB", message, 0)
        if magic == 0:
            key_size_at, timestamp, timestamp_type = 6, -1, NO_TIMESTAMP_TYPE
        else:
            key_size_at = 14
            if wrapper_type is not None:
                timestamp_type = wrapper_type
            else:
                timestamp_type = LOG_APPEND_TIME if attributes & 0x08 else CREATE_TIME
            if wrapper_type == LOG_APPEND_TIME and wrapper_timestamp is not None:
                timestamp = wrapper_timestamp
            else:
                timestamp = _INT64.unpack_from(message, 6)[0]
        key, value_size_at = _sized(message, key_size_at)
        value, _ = _sized(message, value_size_at)
    except (struct.error, ValueError):
        raise InvalidRecordError(f"Found invalid legacy message structure at offset {offset}", path,
                                 position, offset) from None
    valid = len(message) >= layout.RECORD_OVERHEAD_V0 and crc == zlib.crc32(message[4:])
    return Record(offset, timestamp, timestamp_type, key, value, (), -1, end - start, crc, valid, magic)


def _sized(message: bytes, at: int):
    """Kafka's ``Utils.sizeDelimited``: int32 size at ``at``, then the bytes (negative = null)."""
    size = _INT32.unpack_from(message, at)[0]
    if size < 0:
        return None, at + 4
    if at + 4 + size > len(message):
        raise ValueError("field runs past the message")
    return message[at + 4:at + 4 + size], at + 4 + size


def _legacy_inner_records(entry: bytes, batch: BatchHeader, path) -> Iterator[Record]:
    """Kafka's ``DeepRecordsIterator``: everything is checked up front except the "inner
    message is compressed" rule, which fails only when that record is reached."""
    wrapper = _legacy_record(entry, 0, len(entry), batch.base_offset, None, None, path, batch.position)
    magic = wrapper.magic
    if magic not in (0, 1):
        raise InvalidRecordError(f"Invalid wrapper magic found in legacy deep record iterator {magic}",
                                 path, batch.position, batch.base_offset)
    if batch.compression == 4:
        raise InvalidRecordError(
            f"Invalid wrapper compressionType found in legacy deep record iterator {magic}", path,
            batch.position, batch.base_offset)
    if wrapper.value is None:
        raise InvalidRecordError(
            f"Found invalid compressed record set with null value (magic = {magic})", path,
            batch.position, batch.base_offset)
    try:
        stream = decompress(batch.compression, wrapper.value, magic)
    except DecompressionError as exc:
        raise DecodeError(f"java.io.IOException: {exc}", path, batch.position, batch.base_offset) from None
    wrapper_type = wrapper.timestamp_type
    inner = list(_inner_entries(stream, path, batch.position))
    if not inner:
        raise InvalidRecordError("Found invalid compressed record set with no inner records", path,
                                 batch.position, batch.base_offset)
    records = [_legacy_record(stream, start, end, offset, wrapper_type if stream[start + 16] == 1 else None,
                              wrapper.timestamp, path, batch.position)
               for offset, start, end in inner]
    if magic == 1:
        wrapper_offset = batch.base_offset
        if wrapper_offset == 0:
            base = 0  # some librdkafka versions write wrapper offset 0
        else:
            last_inner = inner[-1][0]
            if wrapper_offset < last_inner:
                raise InvalidRecordError(
                    f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{wrapper_offset}' is less than the last inner message offset '{last_inner}' "
                    f"and it is not zero.", path, batch.position, wrapper_offset)
            base = wrapper_offset - last_inner
        records = [record.replace(offset=record.offset + base) for record in records]
    return _check_inner_uncompressed(records, inner, stream, path, batch.position)


def _check_inner_uncompressed(records, inner, stream, path, position) -> Iterator[Record]:
    for record, (_, start, _) in zip(records, inner):
        if stream[start + 17] & layout.COMPRESSION_CODEC_MASK:
            raise InvalidRecordError("Inner messages must not be compressed", path, position,
                                     record.offset)
        yield record


def _inner_entries(stream: bytes, path, position) -> Iterable[tuple[int, int, int]]:
    """(offset, start, end) of each whole inner entry; a truncated last entry ends the set."""
    pos = 0
    n = len(stream)
    while n - pos >= 12:
        offset, size = struct.unpack_from(">qi", stream, pos)
        if size < layout.RECORD_OVERHEAD_V0:
            raise CorruptRecordError(
                f"Record size is less than the minimum record overhead ({layout.RECORD_OVERHEAD_V0})",
                path, position)
        if n - pos - 12 < size:
            return
        yield offset, pos, pos + 12 + size
        pos += 12 + size
