"""Producer state snapshots (``<offset>.snapshot``, §12) read as Kafka's
``ProducerStateManager.readSnapshot`` reads them: version check, schema check, CRC-32C over
bytes [6, end of file), then one :class:`ProducerStateEntry` per producer in file order.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.log.checksums import crc32c

from seglog_cli.formats import layout
from seglog_cli.storage.log.batch_header import increment_sequence
from seglog_cli.storage.log.errors import CorruptSnapshotError
from seglog_cli.storage.log.files import read_small_file

_ENTRY = struct.Struct(">qhiqiqiq")
assert _ENTRY.size == layout.PRODUCER_ENTRY_SIZE


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's ``DefaultRecordBatch.decrementSequence`` (31-bit wrap)."""
    if sequence < decrement:
        return 2**31 - 1 - (decrement - sequence) + 1
    return sequence - decrement


@dataclass(frozen=True)
class BatchMetadata:
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_sequence(self) -> int:
        return decrement_sequence(self.last_sequence, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(frozen=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    last_timestamp: int
    current_txn_first_offset: int | None
    batch_metadata: BatchMetadata | None


@dataclass(frozen=True)
class ProducerSnapshot:
    path: str
    offset: int
    version: int
    crc: int
    entries: tuple[ProducerStateEntry, ...]


def read_snapshot(path: str | Path, data: bytes | None = None) -> ProducerSnapshot:
    """Read and check a producer snapshot; damage raises :class:`CorruptSnapshotError` with
    Kafka's message."""
    path = str(path)
    if data is None:
        data = read_small_file(path)
    version, crc, count = _checked_header(data, path)
    entries = tuple(_entry(data, layout.SNAPSHOT_HEADER_SIZE + n * _ENTRY.size)
                    for n in range(count))
    return ProducerSnapshot(path, _offset_from_name(path), version, crc, entries)


def check_snapshot(path: str) -> int:
    """:func:`read_snapshot`'s checks without building its entries: the snapshot's offset
    (from its name), or :class:`CorruptSnapshotError` with Kafka's message."""
    _checked_header(read_small_file(path), path)
    return _offset_from_name(path)


def _checked_header(data: bytes, path: str) -> tuple[int, int, int]:
    """The header of a snapshot whose schema and CRC are good: (version, crc, count)."""
    version, crc, count = _parse_header(data, path)
    computed = crc32c(memoryview(data)[layout.SNAPSHOT_CRC_COVERED_START:])
    if crc != computed:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}",
            path)
    return version, crc, count


def _parse_header(data: bytes, path: str) -> tuple[int, int, int]:
    if len(data) < 2:
        raise CorruptSnapshotError("Snapshot failed schema validation: null", path, 0)
    (version,) = struct.unpack_from(">h", data, 0)
    if version != layout.SNAPSHOT_VERSION:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: Snapshot contained an unknown file version {version}",
            path, 0)
    if len(data) < layout.SNAPSHOT_HEADER_SIZE:
        raise CorruptSnapshotError("Snapshot failed schema validation: null", path, 2)
    _, crc, count = struct.unpack_from(">hIi", data, 0)
    remaining = len(data) - layout.SNAPSHOT_HEADER_SIZE
    if count < 0:
        raise CorruptSnapshotError(
            "Snapshot failed schema validation: non-nullable field producerEntries was serialized as null",
            path, 6)
    if count > remaining:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: Tried to allocate a collection of size {count}, but "
            f"there are only {remaining} bytes remaining.", path, 6)
    if count * _ENTRY.size > remaining:
        raise CorruptSnapshotError("Snapshot failed schema validation: null", path,
                                   layout.SNAPSHOT_HEADER_SIZE + remaining)
    return version, crc, count


def _entry(data: bytes, position: int) -> ProducerStateEntry:
    (producer_id, epoch, last_sequence, last_offset, offset_delta, timestamp, coordinator_epoch,
     txn_first_offset) = _ENTRY.unpack_from(data, position)
    metadata = (BatchMetadata(last_sequence, last_offset, offset_delta, timestamp)
                if last_offset >= 0 else None)
    return ProducerStateEntry(producer_id, epoch, coordinator_epoch, timestamp,
                              txn_first_offset if txn_first_offset >= 0 else None, metadata)


def _offset_from_name(path: str) -> int:
    name = path.rpartition("/")[2] if "/" in path and not path.endswith("/") else Path(path).name
    try:
        return int(name.split(".", 1)[0])
    except ValueError:
        return -1


__all__ = ["BatchMetadata", "ProducerSnapshot", "ProducerStateEntry", "check_snapshot", "decrement_sequence",
           "increment_sequence", "read_snapshot"]


def format_snapshot(entries: tuple[ProducerStateEntry, ...] | list[ProducerStateEntry] = ()) -> bytes:
    """The bytes ``ProducerStateManager.writeSnapshot`` writes for ``entries`` (in that order)."""
    body = struct.pack(">i", len(entries)) + b"".join(
        _ENTRY.pack(e.producer_id, e.producer_epoch,
                    e.batch_metadata.last_sequence if e.batch_metadata else -1,
                    e.batch_metadata.last_offset if e.batch_metadata else -1,
                    e.batch_metadata.offset_delta if e.batch_metadata else 0,
                    e.last_timestamp, e.coordinator_epoch,
                    -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
        for e in entries)
    return struct.pack(">hI", layout.SNAPSHOT_VERSION, crc32c(body)) + body
