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

from seglog_cli.storage.log.batch_header import V2_HEADER
from seglog_cli.storage.log.checkpoints import EpochEntry, write_leader_epoch_checkpoint
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import fsync_dir, write_atomically
from seglog_cli.storage.log.naming import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, format_offset
from seglog_cli.storage.log.snapshots import format_snapshot

INT32_MAX = 2**31 - 1
NO_TIMESTAMP = -1


class WriterError(SeglogError):
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


OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")


class SegmentIndexer:
    """A segment's ``.index`` and ``.timeindex`` as ``LogSegment`` maintains them: the one
    implementation of Kafka's index rules, used by the appending writer, by ``seglog append``
    and by rebuild-index (recovery is the same rule applied batch by batch, §10.3).

    State (§10.1): ``bytes_since_last_index_entry`` starts at 0 for a new segment object,
    including a segment reopened after a restart; ``max_timestamp``/``offset_of_max`` start
    from the last time index entry (or (-1, base offset)). Entries are kept packed, exactly as
    the files hold them (trimmed).
    """

    def __init__(self, base_offset: int, index_interval_bytes: int = 4096, segment_index_bytes: int = 10 * 1024 * 1024,
                 offset_index: bytes = b"", time_index: bytes = b"", path=None):
        self.base_offset = base_offset
        self.interval = index_interval_bytes
        self.max_offset_entries = segment_index_bytes // OFFSET_ENTRY.size
        self.max_time_entries = segment_index_bytes // TIME_ENTRY.size
        self.offset_index = bytearray(offset_index)
        self.time_index = bytearray(time_index)
        self.path = path
        self.bytes_since_last_index_entry = 0
        self.changed = False
        self.transactional_batches = 0  # counted by recover(): only they make .txnindex entries
        self.next_offset = base_offset  # after recover(): the offset after the last batch kept
        if self.time_index:
            timestamp, relative = TIME_ENTRY.unpack_from(self.time_index, len(self.time_index) - TIME_ENTRY.size)
            self.max_timestamp, self.offset_of_max = timestamp, base_offset + relative
            self._last_time = (timestamp, base_offset + relative)
        else:
            self.max_timestamp, self.offset_of_max = NO_TIMESTAMP, base_offset
            self._last_time = (NO_TIMESTAMP, base_offset)
        self._last_index_offset = (base_offset + OFFSET_ENTRY.unpack_from(self.offset_index, len(self.offset_index) - 8)[0]
                                   if self.offset_index else None)

    @property
    def offset_entries(self) -> int:
        return len(self.offset_index) // OFFSET_ENTRY.size

    @property
    def time_entries(self) -> int:
        return len(self.time_index) // TIME_ENTRY.size

    @property
    def offset_index_full(self) -> bool:
        return self.offset_entries >= self.max_offset_entries

    @property
    def time_index_full(self) -> bool:
        return self.time_entries >= self.max_time_entries - 1

    def append(self, position: int, size: int, largest_offset: int, largest_timestamp: int,
               offset_of_max_timestamp: int) -> None:
        """``LogSegment.append`` of a message set of ``size`` bytes written at ``position``."""
        if largest_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max = largest_timestamp, offset_of_max_timestamp
        if self.bytes_since_last_index_entry > self.interval:
            self._append_offset_entry(largest_offset, position)
            self.maybe_append_time(self.max_timestamp, self.offset_of_max)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += size

    def recover(self, batches, start: int = 0) -> tuple[int, int, object]:
        """``LogSegment.recover``'s loop over ``batches`` (chunks of :class:`BatchHeader`, from
        position ``start``, where the segment is valid so far): the same rule as :meth:`append`
        once per batch, written for speed. Stops at
        the first batch failing ``ensureValid`` or whose offset does not fit the segment and
        returns (valid bytes, batches, the batch it stopped at or None); ``next_offset`` is then
        the offset after the last batch kept."""
        interval, base = self.interval, self.base_offset
        max_ts, offset_of_max = self.max_timestamp, self.offset_of_max
        since = self.bytes_since_last_index_entry
        valid, count = start, 0
        next_offset = self.next_offset
        for chunk in batches:
            for batch in chunk:
                # fields: 0 position, 1 base offset, 2 length, 4 magic, 5 crc, 7 last offset delta,
                # 9 max timestamp, 14 computed crc
                if not (batch[4] == 2 and batch[2] >= 49 and batch[5] == batch[14]) and not batch.is_valid:
                    self._finish(max_ts, offset_of_max, since, next_offset)
                    return valid, count, batch
                last = batch[1] + batch[7]
                if not 0 <= last - base <= INT32_MAX:
                    self._finish(max_ts, offset_of_max, since, next_offset)
                    return valid, count, batch
                if batch[9] > max_ts:
                    max_ts, offset_of_max = batch[9], last
                if since > interval:
                    self.max_timestamp, self.offset_of_max = max_ts, offset_of_max
                    self._append_offset_entry(last, valid)
                    self.maybe_append_time(max_ts, offset_of_max)
                    since = 0
                size = batch[2] + 12
                since += size
                valid += size
                count += 1
                next_offset = last + 1
                if batch[6] & 0x10 and batch[4] >= 2:  # transactional (data or marker)
                    self.transactional_batches += 1
        self._finish(max_ts, offset_of_max, since, next_offset)
        return valid, count, None

    def recover_compiled(self, buffer, start: int, end: int, compiled) -> tuple[int, int, list[int]]:
        """:meth:`recover`'s loop in C over the clean v2 batches of ``buffer[start:end]``: returns
        (position where it stopped, batches indexed, producer positions: see ``recover_walk`` in
        ``_native.c``). Python's loop carries on from the position returned; what it meets
        there (damage, a legacy batch, an index the rules refuse) it judges itself."""
        last_ts, last_time_offset = self._last_time
        state = (self.max_timestamp, self.offset_of_max, self.bytes_since_last_index_entry, self.next_offset,
                 -1 if self._last_index_offset is None else self._last_index_offset, last_ts, last_time_offset,
                 bool(self.time_index), self.offset_entries, self.time_entries)
        position, count, state, offsets, times, txn_batches, producers = compiled.recover_walk(
            buffer, start, end, self.base_offset, self.interval, self.max_offset_entries, self.max_time_entries,
            state)
        (self.max_timestamp, self.offset_of_max, self.bytes_since_last_index_entry, self.next_offset, last_index,
         last_ts, last_time_offset, _have_time, _entries, _time_entries) = state
        if offsets:
            self.offset_index += offsets
            self._last_index_offset = last_index
            self.changed = True
        if times:
            self.time_index += times
            self._last_time = (last_ts, last_time_offset)
            self.changed = True
        self.transactional_batches += txn_batches
        return position, count, producers

    def _finish(self, max_ts: int, offset_of_max: int, since: int, next_offset: int) -> None:
        self.max_timestamp, self.offset_of_max, self.bytes_since_last_index_entry = max_ts, offset_of_max, since
        self.next_offset = next_offset

    def _append_offset_entry(self, offset: int, position: int) -> None:
        if self.offset_index_full:
            raise WriterError(f"Attempt to append to a full index (size = {self.offset_entries})", self.path, position,
                              offset)
        if self._last_index_offset is not None and offset <= self._last_index_offset:
            raise WriterError(f"Attempt to append an offset ({offset}) to position {self.offset_entries} no larger than "
                              f"the last offset appended ({self._last_index_offset})", self.path, position, offset)
        self.offset_index += OFFSET_ENTRY.pack(offset - self.base_offset, position)
        self._last_index_offset = offset
        self.changed = True

    def maybe_append_time(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """``TimeIndex.maybeAppend``."""
        if not skip_full_check and self.time_index_full:
            raise WriterError(f"Attempt to append to a full time index (size = {self.time_entries})", self.path, None,
                              offset)
        last_timestamp, last_offset = self._last_time
        if self.time_index and offset < last_offset:
            raise WriterError(f"Attempt to append an offset ({offset}) smaller than the last offset appended "
                              f"({last_offset}) to the time index", self.path, None, offset)
        if self.time_index and timestamp < last_timestamp:
            raise WriterError(f"Attempt to append a timestamp ({timestamp}) smaller than the last timestamp appended "
                              f"({last_timestamp}) to the time index", self.path, None, offset)
        if timestamp > last_timestamp:
            self.time_index += TIME_ENTRY.pack(timestamp, offset - self.base_offset)
            self._last_time = (timestamp, offset)
            self.changed = True

    def close(self) -> None:
        """``onBecomeInactiveSegment`` / ``close``: the final time index entry, full check
        skipped (the indexes are kept trimmed)."""
        self.maybe_append_time(self.max_timestamp, self.offset_of_max, skip_full_check=True)


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
        self.indexer = SegmentIndexer(base_offset, config.index_interval_bytes, config.segment_index_bytes,
                                      path=self.log_path)
        self.rolling_based_timestamp: int | None = None
        self.next_offset = base_offset

    # -- Kafka's state predicates ----------------------------------------------------------

    @property
    def offset_index_full(self) -> bool:
        return self.indexer.offset_index_full

    @property
    def time_index_full(self) -> bool:
        return self.indexer.time_index_full

    @property
    def offset_entries(self) -> list[tuple[int, int]]:
        """(relative offset, position) of each ``.index`` entry so far."""
        return list(OFFSET_ENTRY.iter_unpack(self.indexer.offset_index))

    @property
    def time_entries(self) -> list[tuple[int, int]]:
        """(timestamp, relative offset) of each ``.timeindex`` entry so far."""
        return list(TIME_ENTRY.iter_unpack(self.indexer.time_index))

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
        self.indexer.append(physical_position, len(data), info.largest_offset, info.largest_timestamp,
                            info.shallow_offset_of_max_timestamp)
        self.next_offset = info.largest_offset + 1

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """``onBecomeInactiveSegment`` + close: final time entry, trimmed indexes, fsync."""
        self.indexer.close()
        self._log.flush()
        os.fsync(self._log.fileno())
        self._log.close()
        write_atomically(self.index_path, bytes(self.indexer.offset_index))
        write_atomically(self.time_index_path, bytes(self.indexer.time_index))
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


__all__ = ["MessageSetInfo", "PartitionWriter", "SegmentConfig", "SegmentIndexer", "SegmentWriter", "WriterError",
           "describe_v2_message_set"]
