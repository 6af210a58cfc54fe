"""Checking a segment's ``.index`` and ``.timeindex`` against its batches, streaming.

The checkers load the index entries once (compact arrays: an index is at most
``segment.index.bytes``) and are fed the batches' positions, last offsets and max timestamps
stretch by stretch as the log scan passes them; they never hold the batches themselves.

Rules (Kafka's, §8-§10):

* ``.index`` entry (O, P): P is the start of a batch, and O is the last offset of that batch,
  or, for an index written by a follower appending several batches at once, of a later batch
  before the next entry's position. Offsets strictly increase, positions never decrease, and
  every position lies inside the ``.log``.
* ``.timeindex`` entry (T, O): O lies in a batch whose max timestamp is T (brokers since 3.8
  write the batch's last offset; some earlier versions, before KAFKA-16310/16341, wrote the
  offset of the record holding the max timestamp, inside its batch); timestamps strictly
  increase and offsets never decrease; the last entry of a rolled segment carries the segment's
  largest timestamp (time retention reads it).
* A zero-filled tail is preallocation: expected on the active segment, left over on a rolled one.
"""

from __future__ import annotations

import bisect
import operator
import struct
import sys
from array import array
from itertools import islice
from pathlib import Path

from seglog_cli.storage import native
from seglog_cli.storage.errors import SeglogError
from seglog_cli.storage.files import read_small_file
from seglog_cli.storage.findings import Code, Severity
from seglog_cli.storage.indexes import OffsetIndex, TimeIndex

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
_INDEX_LIMIT = 1 << 31


def _entries(data: bytes, width: int) -> int:
    """DumpLogSegments' entry count: up to the first slot after the first with relative offset 0.

    Only the slots up to the first all-zero one past the non-zero bytes are decoded (a
    preallocated index is mostly zeros)."""
    count = len(data) // width
    if count <= 1:
        return count
    nonzero = len(data.rstrip(b"\0"))
    upto = min(count, max(1, -(-nonzero // width)) + 1)  # slot upto-1 is all zeros unless upto == count
    try:
        return _relatives(data[:upto * width], width).index(0, 1)
    except ValueError:
        return upto


def _relatives(data: bytes, width: int) -> array:
    """The big-endian int32 relative offset of each ``width``-byte slot of ``data``."""
    raw = array("i", data[:len(data) - len(data) % width])
    if sys.byteorder == "little":
        raw.byteswap()
    return raw[0::2] if width == 8 else raw[2::3]


def _increasing(values: array, strictly: bool = True) -> bool:
    """Whether ``values`` never goes down (strictly: always goes up)."""
    if native.module is not None:
        return native.module.first_disorder(values, values.itemsize, strictly) < 0
    return all(map(operator.lt if strictly else operator.le, values, islice(values, 1, None)))


def _tail(data: bytes, valid: int, width: int, path: str, active: bool, owner) -> None:
    """What lies past the valid entries: zeros (preallocation) or left-over entries."""
    rest = data[valid * width:len(data) - len(data) % width]
    if not rest:
        return
    if rest.count(0) == len(rest):
        if active:
            owner.add(Code.INDEX_PREALLOCATED, INFO, valid * width,
                      f"{len(rest) // width} zero-filled slots: the active segment's preallocated index", path=path)
        else:
            owner.add(Code.INDEX_NOT_TRIMMED, WARNING, valid * width,
                      f"{len(rest) // width} zero-filled slots in a rolled segment's index (not trimmed; Kafka "
                      f"counts them as entries until it rebuilds the index)", path=path)
    else:
        owner.add(Code.INDEX_NOT_INCREASING, ERROR, valid * width,
                  f"entry {valid} has relative offset 0 but non-zero entries follow it", path=path)


class _NoIndex:
    def check(self, *_args) -> None:
        pass

    def finish(self, *_args) -> None:
        pass


NO_INDEX = _NoIndex()


class IndexChecker:
    """``<base>.index`` against the batches of its ``.log``."""

    def __init__(self, path: str, base: int, log_size: int, relatives: array, positions: array, owner):
        self.path, self.base, self.log_size, self.owner = path, base, log_size, owner
        self.relatives, self.positions = relatives, positions
        self.next = 0  # next entry to match, by position
        self.pending: list[tuple[int, int, int]] = []  # (entry, offset, next entry's position) awaiting batches
        self.sorted = True  # entries in order (the fast path may bisect them)

    @classmethod
    def open(cls, segment, log_size: int, owner, active: bool):
        path = str(segment.index_path)
        if not Path(path).is_file():
            owner.add(Code.INDEX_MISSING, WARNING, None,
                      "no .index: Kafka recovers this segment at start-up (rebuilds its indexes)", path=path)
            return _NoIndex()
        try:
            data = read_small_file(path, _INDEX_LIMIT)
        except SeglogError as exc:
            owner.add(Code.UNREADABLE_FILE, ERROR, None, exc.message, path=path)
            return _NoIndex()
        _sanity(OffsetIndex, path, segment.base_offset, data, owner)
        valid = _entries(data, 8)
        _tail(data, valid, 8, path, active, owner)
        raw = array("i", data[:valid * 8])
        if sys.byteorder == "little":
            raw.byteswap()
        relatives, positions = raw[0::2], raw[1::2]
        del raw
        checker = cls(path, segment.base_offset, log_size, relatives, positions, owner)
        checker._order()
        return checker

    def _order(self) -> None:
        relatives, positions = self.relatives, self.positions
        if _increasing(relatives) and _increasing(positions, strictly=False):
            return
        self.sorted = False
        for i in range(1, len(relatives)):
            if relatives[i] <= relatives[i - 1] or positions[i] < positions[i - 1]:
                self.owner.add(Code.INDEX_NOT_INCREASING, ERROR, i * 8,
                               f"entry {i} (offset {self.base + relatives[i]}, position {positions[i]}) does not "
                               f"follow entry {i - 1} (offset {self.base + relatives[i - 1]}, position "
                               f"{positions[i - 1]})", path=self.path, offset=self.base + relatives[i])
                return

    def _error(self, code, i, message) -> None:
        self.owner.add(code, ERROR, i * 8, message, path=self.path, offset=self.base + self.relatives[i])

    def check(self, positions, lasts, end: int, packed: bytes | None = None) -> None:
        """Entries whose position is below ``end``, against the batches (positions, last offsets;
        ``packed``: the same batches as verify-run rows, for the compiled merge).

        Fast path: an entry whose position starts a batch ending at its offset is right; only
        the others go through :meth:`_entry`."""
        if self.pending:
            self.pending = [entry for entry in self.pending if not self._resolve(entry, positions, lasts, 0)]
        count, start = len(self.positions), self.next
        if start >= count:
            return
        if self.sorted:
            stop = bisect.bisect_left(self.positions, end, start)
        else:
            stop = start
            while stop < count and self.positions[stop] < end:
                stop += 1
        if stop == start:
            return
        self.next = stop
        base = self.base
        if packed is not None and native.module is not None:
            odd = native.module.index_odd(packed, self.positions, self.relatives, start, stop, base)
        else:
            last_at = dict(zip(positions, lasts)).get
            odd = [i for i, position, relative in zip(range(start, stop), self.positions[start:stop],
                                                       self.relatives[start:stop])
                   if last_at(position) != base + relative]
        for i in odd:
            self._entry(i, positions, lasts)

    def _entry(self, i: int, positions, lasts) -> None:
        count = len(self.positions)
        position, offset = self.positions[i], self.base + self.relatives[i]
        following = self.positions[i + 1] if i + 1 < count else self.log_size
        if self.owner.is_damaged_position(position):
            return  # the batch there is reported as damaged; the entry cannot be judged
        j = bisect.bisect_left(positions, position)
        if j >= len(positions) or positions[j] != position:
            self._error(Code.INDEX_ENTRY_NOT_BATCH_START, i,
                        f"entry {i} points at position {position}, which is not the start of a batch")
            return
        if lasts[j] == offset:
            return
        if lasts[j] > offset:
            self._error(Code.INDEX_OFFSET_MISMATCH, i,
                        f"entry {i} maps offset {offset} to a batch ending at {lasts[j]}")
            return
        if self.owner.damaged_between(position, following):
            return  # the batch ending at the entry's offset may be the damaged one
        entry = (i, offset, following)
        if not self._resolve(entry, positions, lasts, j + 1):
            self.pending.append(entry)

    def _resolve(self, entry, positions, lasts, j: int) -> bool:
        """An entry of a multi-batch append: one of the batches up to the next entry ends at its
        offset. True when settled (found, or reported), False while the batches are still to come."""
        i, offset, following = entry
        while j < len(positions) and positions[j] < following:
            if lasts[j] >= offset:
                if lasts[j] != offset:
                    self._unmatched(i, offset, following)
                return True
            j += 1
        if j < len(positions):  # reached the next entry's position without a match
            self._unmatched(i, offset, following)
            return True
        return False

    def _unmatched(self, i: int, offset: int, following: int) -> None:
        """No batch up to the next entry ends at the entry's offset: an error, unless a damaged
        batch or region lies there (it may be the one that ended there). Every byte below
        ``following`` has been scanned by now, so every such damage is known."""
        if self.owner.damaged_between(self.positions[i], following):
            return
        self._error(Code.INDEX_OFFSET_MISMATCH, i,
                    f"entry {i} maps offset {offset}, but no batch before the next entry ends there")

    def finish(self, end_position: int) -> None:
        for i, offset, following in self.pending:
            if not self.owner.damaged_between(self.positions[i], following):
                self._error(Code.INDEX_OFFSET_MISMATCH, i, f"entry {i}: no batch ends at offset {offset}")
        self.pending = []
        for i in range(self.next, len(self.positions)):
            position = self.positions[i]
            if self.owner.is_damaged_position(position):
                continue  # inside a damaged region or tail, reported as such
            if position >= self.log_size:
                self._error(Code.INDEX_ENTRY_PAST_LOG_END, i,
                            f"entry {i} points at position {position}, past the end of the .log ({self.log_size} bytes)")
            else:
                self._error(Code.INDEX_ENTRY_NOT_BATCH_START, i,
                            f"entry {i} points at position {position}, after the last readable batch "
                            f"(which ends at {end_position})")


class TimeIndexChecker:
    """``<base>.timeindex`` against the batches' last offsets and max timestamps."""

    def __init__(self, path: str, base: int, timestamps: array, relatives: array, owner, active: bool):
        self.path, self.base, self.owner, self.active = path, base, owner, active
        self.timestamps, self.relatives = timestamps, relatives
        self.next = 0
        self.sorted = True

    @classmethod
    def open(cls, segment, owner, active: bool):
        path = str(segment.time_index_path)
        if not Path(path).is_file():
            owner.add(Code.TIME_INDEX_MISSING, WARNING, None,
                      "no .timeindex: Kafka creates an empty one and then dates the segment by the file's "
                      "mtime (time retention, timestamp lookups)", path=path)
            return _NoIndex()
        try:
            data = read_small_file(path, _INDEX_LIMIT)
        except SeglogError as exc:
            owner.add(Code.UNREADABLE_FILE, ERROR, None, exc.message, path=path)
            return _NoIndex()
        valid = _entries(data, 12)
        _tail(data, valid, 12, path, active, owner)
        # the zero tail's own effect on the check is reported above as preallocation
        _sanity(TimeIndex, path, segment.base_offset, data[:valid * 12] + data[len(data) - len(data) % 12:],
                owner)
        fields = struct.unpack(f">{'qi' * valid}", data[:valid * 12])
        timestamps, relatives = array("q", fields[0::2]), array("i", fields[1::2])
        checker = cls(path, segment.base_offset, timestamps, relatives, owner, active)
        checker._order()
        return checker

    def _order(self) -> None:
        if _increasing(self.timestamps) and _increasing(self.relatives, strictly=False):
            return
        self.sorted = False
        for i in range(1, len(self.timestamps)):
            if self.timestamps[i] <= self.timestamps[i - 1] or self.relatives[i] < self.relatives[i - 1]:
                self.owner.add(Code.TIME_INDEX_OUT_OF_ORDER, ERROR, i * 12,
                               f"entry {i} ({self.timestamps[i]}, offset {self.base + self.relatives[i]}) does not "
                               f"follow entry {i - 1} ({self.timestamps[i - 1]}, offset "
                               f"{self.base + self.relatives[i - 1]})", path=self.path,
                               offset=self.base + self.relatives[i])
                return

    def check(self, bases, lasts, max_timestamps, packed: bytes | None = None) -> None:
        """Entries naming offsets up to the last batch given. Fast path: an entry naming a
        batch's last offset with its max timestamp is right; only the others go through
        :meth:`_entry`."""
        if not len(lasts):
            return
        count, start = len(self.timestamps), self.next
        if start >= count:
            return
        top = lasts[-1]
        if self.sorted:
            stop = bisect.bisect_right(self.relatives, top - self.base, start)
        else:
            stop = start
            while stop < count and self.base + self.relatives[stop] <= top:
                stop += 1
        if stop == start:
            return
        self.next = stop
        base = self.base
        if packed is not None and native.module is not None:
            odd = native.module.time_index_odd(packed, self.timestamps, self.relatives, start, stop, base)
        else:
            timestamp_of = dict(zip(lasts, max_timestamps)).get
            odd = [i for i, relative, timestamp in zip(range(start, stop), self.relatives[start:stop],
                                                        self.timestamps[start:stop])
                   if timestamp_of(base + relative) != timestamp]
        for i in odd:
            self._entry(i, bases, lasts, max_timestamps)

    def _entry(self, i: int, bases, lasts, max_timestamps) -> None:
        offset, timestamp = self.base + self.relatives[i], self.timestamps[i]
        if self.owner.is_unknown_offset(offset):
            return  # in a damaged batch or region, reported as such
        j = bisect.bisect_left(lasts, offset)
        if j >= len(lasts) or bases[j] > offset:
            self.owner.add(Code.TIME_INDEX_OFFSET_NOT_FOUND, ERROR, i * 12,
                           f"entry {i} names offset {offset}, which no batch holds", path=self.path,
                           offset=offset)
        elif max_timestamps[j] != timestamp:
            self.owner.add(Code.TIME_INDEX_MISMATCH, ERROR, i * 12,
                           f"entry {i} says {timestamp}, but the batch holding offset {offset} has max "
                           f"timestamp {max_timestamps[j]}", path=self.path, offset=offset)

    def finish(self, segment_max_timestamp: int) -> None:
        for i in range(self.next, len(self.timestamps)):
            offset = self.base + self.relatives[i]
            if self.owner.is_unknown_offset(offset):
                continue
            self.owner.add(Code.TIME_INDEX_OFFSET_NOT_FOUND, ERROR, i * 12,
                           f"entry {i} names offset {offset}, past the last batch", path=self.path, offset=offset)
        last = self.timestamps[-1] if self.timestamps else -1
        if segment_max_timestamp >= 0 and last < segment_max_timestamp:
            severity = INFO if self.active else WARNING
            self.owner.add(Code.TIME_INDEX_LAST_ENTRY_STALE, severity, None,
                           f"the last entry says {last} but the segment's largest timestamp is "
                           f"{segment_max_timestamp}" + (" (written when the segment rolls or the broker stops)"
                                                         if self.active else
                                                         " (time retention reads the last entry)"),
                           path=self.path)


def _sanity(index_class, path: str, base: int, data: bytes, owner) -> None:
    """Kafka's sanityCheck on ``data``, the bytes of the index at ``path``."""
    index = index_class(path, base, data=data)
    try:
        index.sanity_check()
    except SeglogError as exc:
        owner.add(Code.INDEX_SANITY_FAILED, ERROR, None, exc.message, path=path)
