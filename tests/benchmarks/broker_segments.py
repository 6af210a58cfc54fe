"""A partition's segments as a Kafka 4.2 broker leaves them on disk, for ``make_broker_logdir.py``.

Files written per segment (``<base>`` is the base offset as 20 digits)::

    <base>.log        the v2 batches, back to back
    <base>.index      8-byte entries: relative offset int32, position int32. LogSegment.append's
                      rule with one append per batch (a leader's produce request): when more than
                      index.interval.bytes (4096) were appended since the last entry, the batch's
                      LAST offset at the batch's position, before the batch's size is counted
    <base>.timeindex  12-byte entries: max timestamp so far int64, relative offset int32 of the
                      batch holding it; at the same moments, if the max grew; then the entry
                      onBecomeInactiveSegment/close appends (the segment's max timestamp)
    <base>.txnindex   34-byte AbortedTxn entries, only in a segment holding an ABORT marker
    <offset>.snapshot producer state (ProducerSnapshot v1) at every later segment's base offset,
                      and at the log end offset after a clean shutdown

seglog's own rules make them: ``SegmentIndexer`` (the one implementation of Kafka's index rules)
for the indexes, a ``ProducerStateManager`` replay of each written segment for the snapshots and
the ``.txnindex``. A running broker's active segment (``clean=False``: the broker was killed)
keeps its indexes preallocated, 10485760 and 10485756 bytes zero-filled (sparse), and misses
the close-time time index entry; no snapshot at the log end offset.

Batches come from a few templates re-stamped (:class:`BatchStamper`): base offset,
partition leader epoch, timestamps (records hold deltas), base sequence, then the CRC-32C of
bytes 21..end, as ``make_segment.py`` does.
"""

from __future__ import annotations

import os
import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log.checkpoints import (
    EpochEntry, PartitionMetadata, format_leader_epoch_checkpoint, format_partition_metadata)
from seglog_cli.storage.log.checksums import crc32c
from seglog_cli.storage.log.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD
from seglog_cli.storage.log.producer_state import ProducerStateManager, replay_segment
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker
from seglog_cli.storage.write.writer import SegmentIndexer, describe_v2_message_set
from tests.benchmarks.broker_records import uuid_text
from tests.benchmarks.make_segment import random_record

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z: the first data batch
ROLL_MS = 3_600_000  # segment.ms of the data topics: segment k starts k hours and k seconds after T0
INDEX_BYTES = 10 * 1024 * 1024  # segment.index.bytes: a new .index is preallocated to this
TIME_INDEX_BYTES = INDEX_BYTES // 12 * 12  # rounded down to whole entries: 10485756
PRODUCERS = (1001, 1002, 1003)  # idempotent producers (Kafka 4's default)
TXN_PRODUCER = 5000  # the transactional producer (transactional.id txn-app-0)
CODECS = (NONE, LZ4, ZSTD, SNAPPY, GZIP)
CODEC_WEIGHTS = (40, 25, 15, 12, 8)

_I64, _I32, _U32 = struct.Struct(">q"), struct.Struct(">i"), struct.Struct(">I")
_LEADER_EPOCH_AT, _CRC_AT, _CRC_FROM, _LAST_DELTA_AT = 12, 17, 21, 23
_BASE_TS_AT, _MAX_TS_AT, _PRODUCER_AT, _SEQUENCE_AT = 27, 35, 43, 53


def _records(rng: random.Random, batch_bytes: int) -> list[NewRecord]:
    """Records while their encoded size stays within ``batch_bytes`` (at least one)."""
    records, size, timestamp = [], 0, 0
    while not records or size < batch_bytes:
        record = random_record(rng, timestamp)
        grow = 20 + len(record.key or b"") + len(record.value) + (70 if record.headers else 0)
        if records and size + grow > batch_bytes:
            break
        records.append(record)
        size += grow
        timestamp += rng.randint(0, 3)
    return records


def batch_pool(rng: random.Random, batch_bytes: int, count: int, transactional: bool = False) -> list[bytes]:
    """``count`` batch templates at offset 0: mixed codecs, 80 % from idempotent producers."""
    pool = []
    for _ in range(count):
        codec = rng.choices(CODECS, CODEC_WEIGHTS)[0]
        producer = TXN_PRODUCER if transactional else rng.choice(PRODUCERS) if rng.random() < 0.8 else -1
        pool.append(build_batch(_records(rng, batch_bytes), compression=codec, producer_id=producer,
                                producer_epoch=0 if producer >= 0 else -1, base_sequence=0 if producer >= 0 else -1,
                                transactional=transactional, partition_leader_epoch=0))
    return pool


@dataclass
class BatchStamper:
    """The next offset, timestamp, leader epoch and each producer's next sequence of one log."""

    rng: random.Random
    next_offset: int = 0
    timestamp: int = 0
    leader_epoch: int = 0
    sequences: dict[int, int] = field(default_factory=dict)
    markers: list[tuple[bool, int]] = field(default_factory=list)  # (commit, timestamp) written

    def stamp(self, template: bytes) -> bytes:
        out = bytearray(template)
        span = _I64.unpack_from(out, _MAX_TS_AT)[0] - _I64.unpack_from(out, _BASE_TS_AT)[0]
        last_delta = _I32.unpack_from(out, _LAST_DELTA_AT)[0]
        producer = _I64.unpack_from(out, _PRODUCER_AT)[0]
        _I64.pack_into(out, 0, self.next_offset)
        _I32.pack_into(out, _LEADER_EPOCH_AT, self.leader_epoch)
        _I64.pack_into(out, _BASE_TS_AT, self.timestamp)
        _I64.pack_into(out, _MAX_TS_AT, self.timestamp + span)
        if producer >= 0:
            sequence = self.sequences.get(producer, 0)
            _I32.pack_into(out, _SEQUENCE_AT, sequence)
            self.sequences[producer] = (sequence + last_delta + 1) % 2**31
        _U32.pack_into(out, _CRC_AT, crc32c(memoryview(out)[_CRC_FROM:]))
        self.next_offset += last_delta + 1
        self.timestamp += span + self.rng.randint(1, 40)
        return bytes(out)

    def marker(self, commit: bool) -> bytes:
        """The transaction coordinator's COMMIT/ABORT marker for the transactional producer."""
        batch = build_end_txn_marker(commit=commit, base_offset=self.next_offset, producer_id=TXN_PRODUCER,
                                     producer_epoch=0, timestamp=self.timestamp,
                                     partition_leader_epoch=self.leader_epoch)
        self.markers.append((commit, self.timestamp))
        self.next_offset += 1
        self.timestamp += self.rng.randint(1, 40)
        return batch


@dataclass(frozen=True)
class WrittenLog:
    """What :func:`write_log` wrote: file names, offsets, sizes, leader epochs (epoch, start offset)."""

    files: tuple[str, ...]
    segment_bases: tuple[int, ...]
    log_end_offset: int
    log_bytes: int
    epochs: tuple[tuple[int, int], ...]

    @property
    def active_base(self) -> int:
        return self.segment_bases[-1]


def write_log(directory: Path, segments: list[tuple[int, list[bytes]]], clean: bool = True) -> WrittenLog:
    """Write ``segments`` ((base offset, batches), in order) into ``directory`` with their indexes,
    ``.txnindex`` files and producer snapshots."""
    files: dict[str, bytes | None] = {}
    manager = ProducerStateManager()
    epochs: list[tuple[int, int]] = []
    end = 0
    for i, (base, batches) in enumerate(segments):
        active = i == len(segments) - 1
        stem = f"{base:020d}"
        log_path = directory / f"{stem}.log"
        log_path.write_bytes(b"".join(batches))
        files[f"{stem}.log"] = None
        files.update(_indexes(stem, base, batches, close=clean or not active))
        end = _track(batches, epochs, end)
        segment = LogSegment(log_path, base)
        replay = replay_segment(manager, segment)
        segment.close()
        if replay.aborted_txns:
            files[f"{stem}.txnindex"] = replay.txn_index_bytes()
        if not active:
            files[f"{segments[i + 1][0]:020d}.snapshot"] = manager.snapshot_bytes()
        elif clean and end > 0:
            files[f"{max(end, base):020d}.snapshot"] = manager.snapshot_bytes()
    for name, data in files.items():
        if data is not None:
            (directory / name).write_bytes(data)
    if not clean:
        stem = f"{segments[-1][0]:020d}"
        os.truncate(directory / f"{stem}.index", INDEX_BYTES)
        os.truncate(directory / f"{stem}.timeindex", TIME_INDEX_BYTES)
    return WrittenLog(tuple(files), tuple(base for base, _ in segments), max(end, segments[-1][0]),
                      sum(len(b) for _, batches in segments for b in batches), tuple(epochs))


def _indexes(stem: str, base: int, batches: list[bytes], close: bool) -> dict[str, bytes]:
    indexer = SegmentIndexer(base)
    position = 0
    for batch in batches:
        info = describe_v2_message_set(batch)
        indexer.append(position, len(batch), info.largest_offset, info.largest_timestamp,
                       info.shallow_offset_of_max_timestamp)
        position += len(batch)
    if close:
        indexer.close()
    return {f"{stem}.index": bytes(indexer.offset_index), f"{stem}.timeindex": bytes(indexer.time_index)}


def _track(batches: list[bytes], epochs: list[tuple[int, int]], end: int) -> int:
    """Record where each new leader epoch starts; returns the offset after the last batch."""
    for batch in batches:
        base_offset, epoch = _I64.unpack_from(batch, 0)[0], _I32.unpack_from(batch, _LEADER_EPOCH_AT)[0]
        if epoch >= 0 and (not epochs or epoch > epochs[-1][0]):
            epochs.append((epoch, base_offset))
        end = base_offset + _I32.unpack_from(batch, _LAST_DELTA_AT)[0] + 1
    return end


def write_partition_files(directory: Path, topic_id: bytes, epochs: tuple[tuple[int, int], ...]) -> None:
    """``partition.metadata`` (version 0, the topic id) and ``leader-epoch-checkpoint`` (each epoch's
    first offset; epoch 0 at 0 for a log without batches, assigned when the broker became leader)."""
    (directory / "partition.metadata").write_bytes(format_partition_metadata(PartitionMetadata(0, uuid_text(topic_id))))
    entries = [EpochEntry(epoch, offset) for epoch, offset in epochs or ((0, 0),)]
    (directory / "leader-epoch-checkpoint").write_bytes(format_leader_epoch_checkpoint(entries))


def batch_spans(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of every whole batch in ``data``."""
    spans, position = [], 0
    while position + 12 <= len(data):
        size = 12 + _I32.unpack_from(data, position + 8)[0]
        if position + size > len(data):
            break
        spans.append((position, size))
        position += size
    return spans
