"""The segment writer: appending batches exactly as Kafka's ``LogSegment.append`` does (§10.2).

:class:`SegmentWriter` appends one message set at a time to a new segment and keeps its
``.index`` and ``.timeindex`` in memory by Kafka's rules: an index entry is added only when more
than ``index.interval.bytes`` were written since the previous one, it maps the set's LAST offset
to the position of its FIRST batch, and the time index entry carries the largest timestamp so
far with the (shallow) offset of the batch holding it. :meth:`SegmentWriter.close` does what
``onBecomeInactiveSegment`` does: a final time index entry, then both indexes written trimmed.

Files are written crash-safe: the ``.log`` is fsynced, index files go through a temporary file,
fsync and an atomic rename, and the directory is fsynced.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.batches import V2_HEADER
from seglog_cli.storage.checkpoints import EpochEntry, write_leader_epoch_checkpoint
from seglog_cli.storage.files import fsync_dir, write_atomically
from seglog_cli.storage.naming import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, format_offset
from seglog_cli.storage.snapshots import format_snapshot

INT32_MAX = 2**31 - 1
NO_TIMESTAMP = -1


class WriterError(Exception):
    """An append Kafka itself would refuse (offset out of order, index full, overflow)."""


@dataclass(frozen=True)
class SegmentConfig:
    """The topic configs that shape segments (Kafka defaults)."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0


@dataclass(frozen=True)
class MessageSetInfo:
    """What ``UnifiedLog`` passes to ``LogSegment.append`` for one message set."""

    first_offset: int
    largest_offset: int
    largest_timestamp: int
    shallow_offset_of_max_timestamp: int
    size: int


def describe_v2_message_set(data: bytes) -> MessageSetInfo:
    """Offsets and timestamps of a run of v2 batches, as UnifiedLog computes them."""
    pos = 0
    first = None
    largest_offset = -1
    max_timestamp, offset_of_max = NO_TIMESTAMP, -1
    while pos < len(data):
        fields = V2_HEADER.unpack_from(data, pos)
        base_offset, length, last_delta, batch_max_ts = fields[0], fields[1], fields[6], fields[8]
        last_offset = base_offset + last_delta
        first = base_offset if first is None else first
        largest_offset = last_offset
        if batch_max_ts > max_timestamp:
            max_timestamp, offset_of_max = batch_max_ts, last_offset
        pos += length + 12
    if first is None:
        raise WriterError("empty message set")
    return MessageSetInfo(first, largest_offset, max_timestamp, offset_of_max, len(data))


class SegmentWriter:
    """A new segment being appended to."""

    def __init__(self, directory: str | Path, base_offset: int, config: SegmentConfig = SegmentConfig()):
        self.directory = Path(directory)
        self.base_offset = base_offset
        self.config = config
        stem = format_offset(base_offset)
        self.log_path = self.directory / (stem + LOG_SUFFIX)
        self.index_path = self.directory / (stem + INDEX_SUFFIX)
        self.time_index_path = self.directory / (stem + TIME_INDEX_SUFFIX)
        self._log = open(self.log_path, "xb")
        self.size = 0
        self.bytes_since_last_index_entry = 0
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = base_offset
        self.rolling_based_timestamp: int | None = None
        self.offset_entries: list[tuple[int, int]] = []  # (relative offset, position)
        self.time_entries: list[tuple[int, int]] = []  # (timestamp, relative offset)
        self.max_offset_entries = config.segment_index_bytes // 8
        self.max_time_entries = config.segment_index_bytes // 12
        self.next_offset = base_offset

    # -- Kafka's state predicates ----------------------------------------------------------

    @property
    def offset_index_full(self) -> bool:
        return len(self.offset_entries) >= self.max_offset_entries

    @property
    def time_index_full(self) -> bool:
        return len(self.time_entries) >= self.max_time_entries - 1

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def should_roll(self, info: MessageSetInfo, now_ms: int, max_segment_ms: int | None = None,
                    roll_jitter_ms: int = 0) -> bool:
        """``LogSegment.shouldRoll`` for the incoming set."""
        max_segment_ms = self.config.segment_ms if max_segment_ms is None else max_segment_ms
        if self.rolling_based_timestamp is not None and self.rolling_based_timestamp >= 0:
            waited = info.largest_timestamp - self.rolling_based_timestamp
        else:
            waited = 0  # a new segment object: created "now"
        return (self.size > self.config.segment_bytes - info.size
                or (self.size > 0 and waited > max_segment_ms - roll_jitter_ms)
                or self.offset_index_full or self.time_index_full
                or not self.can_convert_to_relative_offset(info.largest_offset))

    # -- appending -------------------------------------------------------------------------

    def append(self, data: bytes, info: MessageSetInfo | None = None) -> None:
        """``LogSegment.append`` of one message set (one or more whole batches)."""
        if not data:
            return
        info = info or describe_v2_message_set(data)
        physical_position = self.size
        if physical_position == 0:
            self.rolling_based_timestamp = info.largest_timestamp
        if not self.can_convert_to_relative_offset(info.largest_offset):
            raise WriterError(f"offset {info.largest_offset} does not fit segment {self.base_offset}")
        self._log.write(data)
        self.size += len(data)
        if info.largest_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = info.largest_timestamp
            self.offset_of_max_timestamp_so_far = info.shallow_offset_of_max_timestamp
        if self.bytes_since_last_index_entry > self.config.index_interval_bytes:
            self._append_offset_entry(info.largest_offset, physical_position)
            self._maybe_append_time_entry(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += len(data)
        self.next_offset = info.largest_offset + 1

    def _append_offset_entry(self, offset: int, position: int) -> None:
        if self.offset_index_full:
            raise WriterError(f"Attempt to append to a full index (size = {len(self.offset_entries)})")
        if self.offset_entries and offset <= self.base_offset + self.offset_entries[-1][0]:
            raise WriterError(f"Attempt to append an offset ({offset}) no larger than the last offset")
        self.offset_entries.append((offset - self.base_offset, position))

    def _maybe_append_time_entry(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        if not skip_full_check and self.time_index_full:
            raise WriterError("Attempt to append to a full time index")
        last_timestamp, last_offset = (
            (self.time_entries[-1][0], self.base_offset + self.time_entries[-1][1])
            if self.time_entries else (NO_TIMESTAMP, self.base_offset))
        if self.time_entries and offset < last_offset:
            raise WriterError(f"Attempt to append an offset ({offset}) smaller than the last offset")
        if self.time_entries and timestamp < last_timestamp:
            raise WriterError(f"Attempt to append a timestamp ({timestamp}) smaller than the last one")
        if timestamp > last_timestamp:
            self.time_entries.append((timestamp, offset - self.base_offset))

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """``onBecomeInactiveSegment`` + close: final time entry, trimmed indexes, fsync."""
        self._maybe_append_time_entry(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far,
                                      skip_full_check=True)
        self._log.flush()
        os.fsync(self._log.fileno())
        self._log.close()
        write_atomically(self.index_path, b"".join(struct.pack(">ii", *e) for e in self.offset_entries))
        write_atomically(self.time_index_path, b"".join(struct.pack(">qi", *e) for e in self.time_entries))
        fsync_dir(self.directory)


class PartitionWriter:
    """Appends message sets to a partition directory, rolling segments like ``UnifiedLog``.

    On every roll the old segment becomes inactive (final time index entry, trimmed indexes)
    and a producer snapshot is written at the new base offset; :meth:`close` is a clean
    shutdown: the active segment is closed the same way, a snapshot is written at the log end
    offset and the leader-epoch-checkpoint records the first offset of every epoch seen.
    Producer state is empty here: this writer does not yet track idempotent producers.
    """

    def __init__(self, directory: str | Path, config: SegmentConfig = SegmentConfig(), base_offset: int = 0):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.active = SegmentWriter(self.directory, base_offset, config)
        self.epochs: list[tuple[int, int]] = []  # (leader epoch, start offset)

    @property
    def log_end_offset(self) -> int:
        return self.active.next_offset

    def append(self, data: bytes, now_ms: int = 0) -> None:
        info = describe_v2_message_set(data)
        if info.first_offset < self.log_end_offset:
            raise WriterError(f"offset {info.first_offset} is below the log end offset {self.log_end_offset}")
        if self.active.should_roll(info, now_ms):
            self.roll(max(info.first_offset, self.log_end_offset))
        self._track_epochs(data)
        self.active.append(data, info)

    def roll(self, new_base_offset: int) -> None:
        self.active.close()
        write_atomically(self.directory / f"{format_offset(new_base_offset)}.snapshot", format_snapshot())
        self.active = SegmentWriter(self.directory, new_base_offset, self.config)

    def _track_epochs(self, data: bytes) -> None:
        pos = 0
        while pos < len(data):
            fields = V2_HEADER.unpack_from(data, pos)
            epoch = fields[2]
            if epoch >= 0 and (not self.epochs or epoch > self.epochs[-1][0]):
                self.epochs.append((epoch, fields[0]))
            pos += fields[1] + 12

    def close(self) -> None:
        end = self.log_end_offset
        self.active.close()
        write_atomically(self.directory / f"{format_offset(end)}.snapshot", format_snapshot())
        write_leader_epoch_checkpoint(self.directory / "leader-epoch-checkpoint",
                                      [EpochEntry(epoch, offset) for epoch, offset in self.epochs])


__all__ = ["MessageSetInfo", "PartitionWriter", "SegmentConfig", "SegmentWriter", "WriterError",
           "describe_v2_message_set"]
