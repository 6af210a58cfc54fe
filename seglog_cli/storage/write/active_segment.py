"""The segment an append writes to, in memory: Kafka's active ``LogSegment`` (:class:`ActiveSegment`).

It holds the bytes to add to the ``.log`` (in memory, or in the plan's spool) and the offset and
time indexes as they will be, existing entries and new ones
(:class:`~seglog_cli.storage.write.writer.SegmentIndexer`), with ``LogSegment``'s state:
``shouldRoll`` (:meth:`ActiveSegment.roll_reason`: ``segment.bytes``, ``segment.ms`` + jitter, a
full offset or time index, a relative offset past 2^31 - 1), ``append`` and ``close``. The
reopened active segment (:meth:`ActiveSegment.reopen`) is what a broker reopens after a clean
shutdown: valid to its end by recovery's own walk, ``bytesSinceLastIndexEntry`` at 0 and the max
timestamp of its last time index entry. :meth:`ActiveSegment.writes` gives its file steps in an
order where every intermediate state loads.
"""

from __future__ import annotations

import random
from pathlib import Path

from seglog_cli.storage.config.topic_config import TopicConfig
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.naming import format_offset
from seglog_cli.storage.write.append_plan import AppendError, FileWrite
from seglog_cli.storage.write.rebuild_index import RebuildError, recover_indexes
from seglog_cli.storage.write.writer import OFFSET_ENTRY, TIME_ENTRY, SegmentIndexer


INT32_MAX = 2**31 - 1


class ActiveSegment:
    """A segment being appended to: the bytes to add to its ``.log`` and its indexes as they
    will be (existing entries + new ones), with ``LogSegment``'s state."""

    def __init__(self, directory: Path, base_offset: int, config: TopicConfig, jitter: random.Random,
                 spool=None):
        self.directory = directory
        self.spool = spool
        self.base_offset = base_offset
        self.stem = format_offset(base_offset)
        self.config = config
        self.existing_size = 0
        self.log_exists = False  # a reopened segment, possibly empty (a broker rolled just before stopping)
        self.new_bytes = bytearray()  # without a spool
        self.spool_start = 0 if spool is None else len(spool)
        self.spooled = 0
        self.indexer = SegmentIndexer(base_offset, config.index_interval_bytes, config.segment_index_bytes,
                                      path=self.path(".log"))
        self.rolling_timestamp: int | None = None
        self.txn_entries = bytearray()
        jitter_limit = min(config.segment_jitter_ms, config.segment_ms)
        self.roll_jitter_ms = jitter.randrange(jitter_limit) if jitter_limit > 0 else 0
        self.next_offset = base_offset

    def path(self, suffix: str) -> Path:
        return self.directory / (self.stem + suffix)

    @classmethod
    def reopen(cls, directory: Path, segment, config: TopicConfig, jitter: random.Random, spool=None) -> "ActiveSegment":
        """The active segment as a broker reopens it after a clean shutdown."""
        self = cls(directory, segment.base_offset, config, jitter, spool)
        mapped = segment.log
        try:  # recovery's own walk: every batch valid to the end of the file?
            walk = recover_indexes(mapped, segment.base_offset, config)
        except RebuildError as exc:
            raise AppendError(f"{exc.message}: run `seglog verify` and `seglog recover` first", segment.log_path,
                              exc.position, exc.offset) from None
        if walk.valid_bytes < mapped.size:
            raise AppendError(f"the active segment is valid only up to position {walk.valid_bytes} of {mapped.size} "
                              f"({walk.stop}): Kafka's recovery would truncate the rest; run `seglog recover` first",
                              segment.log_path, walk.valid_bytes)
        self.next_offset = walk.next_offset
        first = next(iter(LogScan(mapped, resync=False, check_crc=False)), None)
        self.rolling_timestamp = first.max_timestamp if first is not None else None  # loadFirstBatchTimestamp
        self.existing_size = mapped.size
        self.log_exists = True
        # a new segment object over the files: the counter at 0, the max timestamp from the time index
        self.indexer = SegmentIndexer(self.base_offset, config.index_interval_bytes, config.segment_index_bytes,
                                      _entries_of(segment.index_path, OFFSET_ENTRY.size),
                                      _entries_of(segment.time_index_path, TIME_ENTRY.size), path=segment.log_path)
        segment.close()
        return self

    @property
    def size(self) -> int:
        return self.existing_size + len(self.new_bytes) + self.spooled

    def roll_reason(self, size: int, max_timestamp: int, last_offset: int) -> str | None:
        """``LogSegment.shouldRoll`` for a batch of ``size`` bytes, or None."""
        if self.size > self.config.segment_bytes - size:
            return f"segment.bytes: {self.size} + {size} bytes would pass {self.config.segment_bytes}"
        if self.size > 0 and self.rolling_timestamp is not None and self.rolling_timestamp >= 0:
            waited = max_timestamp - self.rolling_timestamp
            if waited > self.config.max_segment_ms - self.roll_jitter_ms:
                return (f"segment.ms: the batch's timestamp is {waited} ms after the segment's first "
                        f"(limit {self.config.max_segment_ms} - jitter {self.roll_jitter_ms})")
        if self.indexer.offset_index_full:
            return f"the offset index is full ({self.indexer.offset_entries} entries of segment.index.bytes)"
        if self.indexer.time_index_full:
            return f"the time index is full ({self.indexer.time_entries} entries of segment.index.bytes)"
        if not 0 <= last_offset - self.base_offset <= INT32_MAX:
            return f"offset {last_offset} does not fit a relative offset of segment {self.base_offset}"
        return None

    def append(self, data: bytes, last_offset: int, max_timestamp: int, offset_of_max: int) -> None:
        """``LogSegment.append`` of one batch."""
        physical_position = self.size
        if physical_position == 0:
            self.rolling_timestamp = max_timestamp
        if self.spool is None:
            self.new_bytes += data
        else:
            self.spool.write(data)
            self.spooled += len(data)
        self.indexer.append(physical_position, len(data), last_offset, max_timestamp, offset_of_max)
        self.next_offset = last_offset + 1

    def close(self) -> None:
        """``onBecomeInactiveSegment`` / ``close``: the final time index entry (full check
        skipped); the indexes are kept trimmed."""
        self.indexer.close()

    def writes(self) -> list[FileWrite]:
        """This segment's steps, in an order where every intermediate state loads: for a new
        segment the index files first (an index without its ``.log`` is an interrupted roll;
        Kafka deletes it at start-up), then the ``.log`` whole; for the reopened
        active segment the ``.txnindex`` entries first (past the log end until the batches
        land), then the batches, then the indexes."""
        out = []
        txn = ([FileWrite("append", self.path(".txnindex"), bytes(self.txn_entries),
                          f"{len(self.txn_entries) // 34} aborted transaction(s)")] if self.txn_entries else [])
        indexer = self.indexer
        index = [FileWrite("replace", self.path(".index"), bytes(indexer.offset_index),
                           f"{indexer.offset_entries} offset index entries"),
                 FileWrite("replace", self.path(".timeindex"), bytes(indexer.time_index),
                           f"{indexer.time_entries} time index entries")]
        if self.spool is None:
            new_bytes = bytes(self.new_bytes)
        else:
            new_bytes = self.spool.range(self.spool_start, self.spool_start + self.spooled)
        if not self.log_exists:
            return index + txn + [FileWrite("create", self.path(".log"), new_bytes,
                                            f"a new segment: {len(new_bytes)} bytes of batches")]
        if new_bytes:
            out += txn + [FileWrite("append", self.path(".log"), new_bytes, f"{len(new_bytes)} bytes of batches")]
        if indexer.changed or not self.path(".index").exists():
            out.append(index[0])
        if indexer.changed or not self.path(".timeindex").exists():
            out.append(index[1])
        return out


def _entries_of(path: Path, size: int) -> bytes:
    """An index file's entries without its preallocated zero tail (and without a last entry cut
    short: Kafka's index counts the file's length in whole entries)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return b""
    data = data[:len(data) // size * size]
    end = len(data.rstrip(b"\0"))
    return data[:-(-end // size) * size]


__all__ = ["ActiveSegment"]
