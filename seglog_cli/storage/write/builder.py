"""Encoding batches: the bytes Kafka's ``MemoryRecordsBuilder`` writes (§2-§6).

:func:`build_batch` makes one v2 record batch (any codec, transactional/idempotent fields,
LogAppendTime, control records); :func:`build_legacy_entry` and :func:`build_legacy_wrapper`
make v0/v1 messages and compressed wrapper sets, which Kafka 4 no longer writes but still reads
(used for tests and fixtures). The segment writer appends what these functions return.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from seglog_cli.storage.log.checksums import crc32c

from seglog_cli.formats import control as control_format
from seglog_cli.formats.varint import encode_unsigned, zigzag_encode
from seglog_cli.storage.log.batch_header import CREATE_TIME, LOG_APPEND_TIME, V2_HEADER
from seglog_cli.storage.log.codecs import NONE, compress

_HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. records_count (bytes 21-60)


@dataclass(frozen=True)
class NewRecord:
    """A record to encode. ``timestamp`` None means "the batch timestamp" (for control records)."""

    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[tuple[bytes | str, bytes | None]] = field(default_factory=tuple)
    timestamp: int | None = None
    offset_delta: int | None = None  # default: the record's position in the batch


def varint(value: int) -> bytes:
    return encode_unsigned(zigzag_encode(value, 32) & 0xFFFFFFFF)


def varlong(value: int) -> bytes:
    return encode_unsigned(zigzag_encode(value, 64) & 0xFFFFFFFFFFFFFFFF)


def _nullable(data: bytes | None) -> bytes:
    return b"\x01" if data is None else varint(len(data)) + data


def encode_record(record: NewRecord, offset_delta: int, timestamp_delta: int) -> bytes:
    """One v2 record (§3): length varint, then the body."""
    parts = [b"\x00", varlong(timestamp_delta), varint(offset_delta), _nullable(record.key),
             _nullable(record.value), varint(len(record.headers))]
    for key, value in record.headers:
        key = key.encode("utf-8") if isinstance(key, str) else key
        parts.append(varint(len(key)) + key)
        parts.append(_nullable(value))
    body = b"".join(parts)
    return varint(len(body)) + body


def attributes(compression: int = NONE, timestamp_type: int = CREATE_TIME, transactional: bool = False,
               control: bool = False, delete_horizon: bool = False) -> int:
    return (compression | (0x08 if timestamp_type == LOG_APPEND_TIME else 0) | (0x10 if transactional else 0)
            | (0x20 if control else 0) | (0x40 if delete_horizon else 0))


def build_batch(records: Sequence[NewRecord], *, base_offset: int = 0, compression: int = NONE,
                timestamp_type: int = CREATE_TIME, log_append_time: int | None = None,
                producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                transactional: bool = False, control: bool = False, partition_leader_epoch: int = -1,
                delete_horizon_ms: int | None = None, last_offset_delta: int | None = None,
                base_timestamp: int | None = None, max_timestamp: int | None = None) -> bytes:
    """A complete v2 batch with its CRC-32C. Empty ``records`` gives the cleaner's empty batch
    shape (base timestamp -1) when ``last_offset_delta`` is given."""
    timestamps = [r.timestamp for r in records if r.timestamp is not None]
    if base_timestamp is None:
        base_timestamp = delete_horizon_ms if delete_horizon_ms is not None else (
            timestamps[0] if timestamps else -1)
    first_timestamp = timestamps[0] if timestamps else base_timestamp
    deltas = [r.offset_delta if r.offset_delta is not None else i for i, r in enumerate(records)]
    encoded = b"".join(
        encode_record(r, d, (r.timestamp if r.timestamp is not None else first_timestamp) - base_timestamp)
        for r, d in zip(records, deltas))
    body = compress(compression, encoded, 2) if compression != NONE and records else encoded
    if max_timestamp is None:
        if timestamp_type == LOG_APPEND_TIME and log_append_time is not None:
            max_timestamp = log_append_time
        else:
            max_timestamp = max(timestamps) if timestamps else base_timestamp
    if last_offset_delta is None:
        last_offset_delta = deltas[-1] if deltas else 0
    attrs = attributes(compression if records else NONE, timestamp_type, transactional, control,
                       delete_horizon_ms is not None)
    after_crc = _HEADER_AFTER_CRC.pack(attrs, last_offset_delta, base_timestamp, max_timestamp,
                                       producer_id, producer_epoch, base_sequence, len(records)) + body
    length = 4 + 1 + 4 + len(after_crc)  # partition_leader_epoch + magic + crc + the rest
    head = struct.pack(">qiib", base_offset, length, partition_leader_epoch, 2)
    return head + struct.pack(">I", crc32c(after_crc)) + after_crc


def build_end_txn_marker(*, commit: bool, base_offset: int, producer_id: int, producer_epoch: int,
                         coordinator_epoch: int = 0, timestamp: int, partition_leader_epoch: int = 0) -> bytes:
    """A COMMIT/ABORT control batch as the transaction coordinator writes it (78 bytes)."""
    marker_type = control_format.COMMIT if commit else control_format.ABORT
    record = NewRecord(key=struct.pack(">hh", 0, marker_type),
                       value=struct.pack(">hi", 0, coordinator_epoch), timestamp=timestamp)
    return build_batch([record], base_offset=base_offset, producer_id=producer_id,
                       producer_epoch=producer_epoch, transactional=True, control=True,
                       partition_leader_epoch=partition_leader_epoch)


def build_legacy_entry(offset: int, key: bytes | None, value: bytes | None, *, magic: int = 1,
                       timestamp: int = -1, attributes_byte: int = 0) -> bytes:
    """One v0/v1 log entry (12-byte overhead + message) with its CRC-32."""
    after_crc = struct.pack(">bB", magic, attributes_byte)
    if magic >= 1:
        after_crc += struct.pack(">q", timestamp)
    for part in (key, value):
        after_crc += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    message = struct.pack(">I", zlib.crc32(after_crc)) + after_crc
    return struct.pack(">qi", offset, len(message)) + message


def build_legacy_wrapper(records: Sequence[NewRecord], *, last_offset: int, magic: int = 1,
                         compression: int = 1, timestamp_type: int = CREATE_TIME,
                         wrapper_timestamp: int | None = None) -> bytes:
    """A compressed legacy message set: inner offsets relative (v1) or absolute (v0)."""
    count = len(records)
    inner = b"".join(
        build_legacy_entry(i if magic == 1 else last_offset - count + 1 + i, r.key, r.value, magic=magic,
                           timestamp=r.timestamp if r.timestamp is not None else -1)
        for i, r in enumerate(records))
    if wrapper_timestamp is None:
        wrapper_timestamp = max((r.timestamp for r in records if r.timestamp is not None), default=-1)
    ts_bit = 0x08 if (magic == 1 and timestamp_type == LOG_APPEND_TIME) else 0
    return build_legacy_entry(last_offset, None, compress(compression, inner, magic), magic=magic,
                              timestamp=wrapper_timestamp, attributes_byte=compression | ts_bit)




BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD


# -- produce requests ---------------------------------------------------------------------------------------

def _varint_size(value: int) -> int:
    """Bytes of ``value`` as a zigzag varint (``ByteUtils.sizeOfVarlong``)."""
    return ((((value << 1) ^ (value >> 63)).bit_length() + 6) // 7) or 1


def record_size(record: NewRecord, offset_delta: int, timestamp_delta: int) -> int:
    """``DefaultRecord.sizeInBytes``: the encoded record, its length varint included. (A length
    ``n >= 0`` takes ``(n.bit_length() + 7) // 7`` varint bytes, at least one.)"""
    key, value = record.key, record.value
    body = (2 + _varint_size(timestamp_delta) + _varint_size(offset_delta)
            + (1 if key is None else ((len(key).bit_length() + 7) // 7 or 1) + len(key))
            + (1 if value is None else ((len(value).bit_length() + 7) // 7 or 1) + len(value)))
    headers = record.headers
    if headers:
        body += ((len(headers).bit_length() + 7) // 7) - 1
        for name, data in headers:
            if isinstance(name, str):
                name = name.encode("utf-8")
            body += ((len(name).bit_length() + 7) // 7 or 1) + len(name)
            body += 1 if data is None else ((len(data).bit_length() + 7) // 7 or 1) + len(data)
    return ((body.bit_length() + 7) // 7) + body


def group_batches(records: Iterable[NewRecord], batch_size: int, linger_records: int | None) -> Iterator[list]:
    """Produce requests as Kafka's producer fills them (``MemoryRecordsBuilder.hasRoomFor``): a
    record joins the open batch unless the batch's estimated uncompressed size would pass
    ``batch_size``; a first record always fits. ``linger_records`` closes a batch after N."""
    batch: list[NewRecord] = []
    size = BATCH_OVERHEAD
    base_timestamp = None
    for record in records:
        if batch:
            delta = (record.timestamp - base_timestamp
                     if record.timestamp is not None and base_timestamp is not None else 0)
            grow = record_size(record, len(batch), delta)
            if size + grow > batch_size:
                yield batch
                batch = []
        if not batch:
            size, base_timestamp = BATCH_OVERHEAD, record.timestamp
            grow = record_size(record, 0, 0)
        batch.append(record)
        size += grow
        if linger_records is not None and len(batch) >= linger_records:
            yield batch
            batch = []
    if batch:
        yield batch


__all__ = ["BATCH_OVERHEAD", "NewRecord", "V2_HEADER", "attributes", "build_batch", "build_end_txn_marker",
           "group_batches", "record_size", "build_legacy_entry", "build_legacy_wrapper", "encode_record", "varint", "varlong"]
