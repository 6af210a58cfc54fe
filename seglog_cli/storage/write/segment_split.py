"""Splitting a segment whose offsets overflow its base (``LocalLog.splitOverflowedSegment``, §15.4).

Before Kafka 0.11 the log cleaner could write a segment holding offsets more than 2^31 - 1 past
its base offset (KAFKA-6264): its ``.index`` cannot address them. When recovery meets one
(``LogSegmentOffsetOverflowException``), Kafka splits it and loads again:

* each new segment starts at the base offset of its first batch (for a compressed legacy
  wrapper, its first inner message's offset: ``AbstractLegacyRecordBatch.baseOffset``) and takes
  the following batches while their last offset fits ``[base, base + 2^31 - 1]``
  (``LogSegment.appendFromFile``);
* the batches are appended in chunks (``appendChunkFromFile``): as many batches as stay under
  the read buffer's capacity (1 MiB, or the largest chunk so far: the buffer supplier keeps the
  grown buffer), one ``LogSegment.append`` per chunk, so the new ``.index``/``.timeindex`` hold
  one entry per chunk under the ``index.interval.bytes`` rule; then ``onBecomeInactiveSegment``
  adds the final time index entry;
* the new segments replace the old one (``.cleaned`` -> ``.swap`` -> rename), and recovery
  starts over; segments from the one holding the recovery point on are recovered again, which
  rebuilds their indexes batch by batch.

This module computes the pieces; ``recover`` plans the files. A segment with a batch that
fails its checks, or bytes after its last complete batch, is not split here (Kafka would split
it and then truncate a piece, or fail): :class:`SplitRefused`.
"""

from __future__ import annotations

from dataclasses import dataclass

from seglog_cli.storage.log.batch_header import BatchHeader
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.config.topic_config import TopicConfig
from seglog_cli.storage.write.writer import INT32_MAX, SegmentIndexer

READ_BUFFER_BYTES = 1024 * 1024  # appendChunkFromFile's first buffer
LONG_MIN = -2**63


class SplitRefused(SeglogError):
    """An overflowed segment seglog does not split (the message says why)."""


@dataclass(frozen=True)
class SplitPiece:
    """One new segment: its base offset, its ``.log`` bytes and the indexes the split writes."""

    base_offset: int
    data: bytes
    offset_index: bytes
    time_index: bytes
    first_offset: int
    last_offset: int


def split_overflowed(mapped: MappedFile, config: TopicConfig = TopicConfig()) -> list[SplitPiece]:
    """The segments ``splitOverflowedSegment`` makes of ``mapped`` (a ``.log``)."""
    batches = list(LogScan(mapped, resync=False))
    if sum(batch.size for batch in batches) != mapped.size:
        raise SplitRefused("bytes after the last complete batch (Kafka's split would fail on them)", mapped.path)
    bad = next((batch for batch in batches if not batch.is_valid), None)
    if bad is not None:
        raise SplitRefused("a batch fails its checks (Kafka would split, then truncate a piece there)", mapped.path,
                           bad.position, bad.base_offset)
    pieces, i = [], 0
    while i < len(batches):
        base = _first_offset(mapped, batches[i])
        j = i
        while j < len(batches) and 0 <= batches[j].last_offset - base <= INT32_MAX:
            j += 1
        if j == i:
            raise SplitRefused(f"the batch at position {batches[i].position} spans more than 2^31 - 1 offsets "
                               "(Kafka's split fails on it)", mapped.path, batches[i].position, base)
        pieces.append(_piece(mapped, base, batches[i:j], config))
        i = j
    return pieces


def _first_offset(mapped: MappedFile, batch: BatchHeader) -> int:
    """``FileChannelRecordBatch.baseOffset``: a compressed legacy wrapper's first inner offset."""
    if batch.magic >= 2 or not batch.compression:
        return batch.base_offset
    first = next(iter(read_records(mapped.buffer, batch, str(mapped.path))), None)
    return batch.base_offset if first is None else first.offset


def _piece(mapped: MappedFile, base: int, run: list[BatchHeader], config: TopicConfig) -> SplitPiece:
    indexer = SegmentIndexer(base, config.index_interval_bytes, config.segment_index_bytes, path=mapped.path)
    capacity, position, k = READ_BUFFER_BYTES, 0, 0
    while k < len(run):
        size, max_timestamp, offset_of_max, largest = 0, LONG_MIN, LONG_MIN, LONG_MIN
        m = k
        while m < len(run) and (size == 0 or size + run[m].size < capacity):
            if run[m].max_timestamp > max_timestamp:
                max_timestamp, offset_of_max = run[m].max_timestamp, run[m].last_offset
            largest = run[m].last_offset
            size += run[m].size
            m += 1
        capacity = max(capacity, size)  # the grown buffer is kept for the next chunk
        indexer.append(position, size, largest, max_timestamp, offset_of_max)
        position += size
        k = m
    indexer.close()
    data = bytes(mapped.view[run[0].position:run[-1].end_position])
    return SplitPiece(base, data, bytes(indexer.offset_index), bytes(indexer.time_index),
                      run[0].base_offset, run[-1].last_offset)


__all__ = ["SplitPiece", "SplitRefused", "split_overflowed"]
