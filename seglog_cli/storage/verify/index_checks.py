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

from seglog_cli.storage.log import native
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import read_small_file
from seglog_cli.storage.log.findings import Code, Severity
from seglog_cli.storage.log.indexes import OffsetIndex, TimeIndex

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


SMALL_INDEX = 64  # entries: an index up to this size is decoded with one struct call
_OFFSET_ENTRIES = [struct.Struct(f">{2 * n}i") for n in range(SMALL_INDEX + 1)]
_TIME_ENTRIES = [struct.Struct(">" + "qi" * n) for n in range(SMALL_INDEX + 1)]


def _first_zero_slot(relatives) -> int:
    """:func:`_entries` from every slot's relative offset: the first slot after the first whose
    relative offset is 0, else all of them."""
    try:
        return relatives.index(0, 1)
    except ValueError:
        return len(relatives)


def _relatives(data: bytes, width: int) -> array:
    """The big-endian int32 relative offset of each ``width``-byte slot of ``data``."""
    raw = array("i", data[:len(data) - len(data) % width])
    if sys.byteorder == "little":
        raw.byteswap()
    return raw[0::2] if width == 8 else raw[2::3]


def _time_entries(data: bytes, count: int) -> tuple[array, array]:
    """The timestamps and relative offsets of ``count`` 12-byte entries, gathered with strided
    slice copies (no Python object per entry: memory stays at a few bytes per entry)."""
    stamps, relatives = bytearray(8 * count), bytearray(4 * count)
    end = 12 * count
    for k in range(8):
        stamps[k::8] = data[k:end:12]
    for k in range(4):
        relatives[k::4] = data[8 + k:end:12]
    timestamps, offsets = array("q", bytes(stamps)), array("i", bytes(relatives))
    if sys.byteorder == "little":
        timestamps.byteswap()
        offsets.byteswap()
    return timestamps, offsets


def _increasing(values: array, strictly: bool = True) -> bool:
    """Whether ``values`` never goes down (strictly: always goes up)."""
    if len(values) < 2:
        return True
    if native.module is not None:
        return native.module.first_disorder(values, values.itemsize, strictly) < 0
    return all(map(operator.lt if strictly else operator.le, values, islice(values, 1, None)))


def _zero_filled(data: bytes) -> bool:
    """A file of zeros only: preallocated, no entry written. (DumpLogSegments counts its first
    slot as an entry, but Kafka never writes one at position 0: ``LogSegment.append`` and
    ``recover`` index a batch only once more than ``index.interval.bytes`` precede it, so a broker
    stopped before its active segment's first entry leaves exactly this, as every ``-stray`` dir
    does.)"""
    return data.count(0) == len(data)


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


MAX_ENTRY_FINDINGS = 20  # per index file and code; the rest are counted in one more finding


class _EntryChecker:
    """What both checkers share: order violations with their likely culprit, reporting with a
    cap, and the entries left unjudged at the end."""

    width = 8
    order_code = Code.INDEX_NOT_INCREASING

    def _init_common(self, path: str, base: int, owner, active: bool) -> None:
        self.path, self.base, self.owner, self.active = path, base, owner, active
        self.violations: list[list] = []  # [entry, message, explained]
        self.suspects: dict[int, list[int]] = {}  # entry -> violations it may explain
        self.reported: dict[str, int] = {}  # code -> findings so far
        self.suppressed: dict[str, list[int]] = {}  # code -> [count, first byte position]

    def _find_disorder(self, n: int, ordered) -> None:
        """Every entry not in order after the one before it is a violation; its suspects are
        the entries whose removal alone would restore the order (the one before, or itself)."""
        for i in range(1, n):
            if ordered(i - 1, i):
                continue
            candidates = [c for c, fine in ((i - 1, i - 2 < 0 or ordered(i - 2, i)),
                                            (i, i + 1 >= n or ordered(i - 1, i + 1))) if fine]
            number = len(self.violations)
            self.violations.append([i, self._disorder_message(i), False])
            for candidate in candidates:
                self.suspects.setdefault(candidate, []).append(number)

    def _report(self, code, severity, i: int, message: str, offset) -> None:
        for number in self.suspects.get(i, ()):
            self.violations[number][2] = True
        count = self.reported.get(code, 0)
        if count >= MAX_ENTRY_FINDINGS:
            self.suppressed.setdefault(code, [0, i * self.width])[0] += 1
            return
        self.reported[code] = count + 1
        self.owner.add(code, severity, i * self.width, message, path=self.path, offset=offset)

    def _finish_common(self) -> None:
        for i, message, explained in self.violations:
            if not explained:
                self._report(self.order_code, ERROR, i, message, self.base + self.relatives[i])
        for code, (count, position) in self.suppressed.items():
            self.owner.add(code, ERROR, position, f"{count} more entries of this index with the same problem",
                           path=self.path)

    def _trailing(self, unjudged: list[int], code, what) -> list[int]:
        """Entries left unjudged at the end of the log. Those at the end of the index, in one
        finding: what a crash leaves when the log loses its end but the index keeps it (a
        warning in the active segment, whose indexes Kafka rebuilds when it recovers it after
        an unclean shutdown; an error in a rolled one); nothing when a torn or damaged tail of
        the .log is already reported. Returns the others, to be judged one by one."""
        count = len(self.relatives)
        suffix = []
        for i in sorted(unjudged, reverse=True):
            if i != count - 1 - len(suffix):
                break
            suffix.append(i)
        suffix.reverse()
        if suffix and not self.owner.tail_damaged:
            first, last = suffix[0], suffix[-1]
            entries = f"entry {first}" if first == last else f"entries {first}..{last}"
            self.owner.add(code, WARNING if self.active else ERROR, first * self.width,
                           f"{entries} {what(first == last)}" + (" (the log lost its end: a crash?)" if self.active else ""),
                           path=self.path, offset=self.base + self.relatives[first])
        trailing = set(suffix)
        return [i for i in unjudged if i not in trailing]


class IndexChecker(_EntryChecker):
    """``<base>.index`` against the batches of its ``.log``."""

    width = 8
    order_code = Code.INDEX_NOT_INCREASING

    def __init__(self, path: str, base: int, log_size: int, relatives: array, positions: array, owner,
                 active: bool = False):
        self._init_common(path, base, owner, active)
        self.log_size = log_size
        self.relatives, self.positions = relatives, positions
        self.next = 0  # cursor: entries before it (in position order) are judged
        self.pending: list[tuple[int, int, int]] = []  # (entry, offset, next entry's position) awaiting batches
        self.by_position: list[int] | None = None  # entry numbers in position order, when not in index order
        self.following: dict[int, int] = {}

    @classmethod
    def open(cls, segment, log_size: int, owner, active: bool):
        path = segment.index_file
        if not segment.has_file(path):
            owner.add(Code.INDEX_MISSING, WARNING, None,
                      "no .index: Kafka recovers this segment at start-up (rebuilds its indexes)", path=path)
            return _NoIndex()
        try:
            data = read_small_file(path, _INDEX_LIMIT)
        except SeglogError as exc:
            owner.add(Code.UNREADABLE_FILE, ERROR, None, exc.message, path=path)
            return _NoIndex()
        count = len(data) >> 3
        if count <= SMALL_INDEX:  # decoded at once (a rolled segment's index is often a few entries)
            words = _OFFSET_ENTRIES[count].unpack_from(data)
            if len(data) & 7 or (count and words[-2] < 0):  # what Kafka's sanityCheck rejects
                _sanity(OffsetIndex, path, segment.base_offset, data, owner)
            valid = _first_zero_slot(words[0::2]) if not _zero_filled(data) else 0
            _tail(data, valid, 8, path, active, owner)
            relatives, positions = array("i", words[0:2 * valid:2]), array("i", words[1:2 * valid:2])
        else:
            _sanity(OffsetIndex, path, segment.base_offset, data, owner)
            valid = _entries(data, 8) if not _zero_filled(data) else 0
            _tail(data, valid, 8, path, active, owner)
            raw = array("i", data[:valid * 8])
            if sys.byteorder == "little":
                raw.byteswap()
            relatives, positions = raw[0::2], raw[1::2]
            del raw
        checker = cls(path, segment.base_offset, log_size, relatives, positions, owner, active)
        checker._order()
        return checker

    def _order(self) -> None:
        relatives, positions = self.relatives, self.positions
        if _increasing(relatives) and _increasing(positions, strictly=False):
            return
        keys = list(zip(relatives, positions))
        n = len(keys)

        def ordered(a, b):
            return keys[a][0] < keys[b][0] and keys[a][1] <= keys[b][1]

        self._find_disorder(n, ordered)
        self.by_position = sorted(range(n), key=lambda i: (positions[i], i))
        for k in range(n - 1):
            self.following[self.by_position[k]] = positions[self.by_position[k + 1]]

    def _disorder_message(self, i: int) -> str:
        return (f"entry {i} (offset {self.base + self.relatives[i]}, position {self.positions[i]}) does not follow "
                f"entry {i - 1} (offset {self.base + self.relatives[i - 1]}, position {self.positions[i - 1]})")

    def _error(self, code, i, message) -> None:
        self._report(code, ERROR, i, message, self.base + self.relatives[i])

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
        base = self.base
        if self.by_position is None:
            stop = bisect.bisect_left(self.positions, end, start)
            if stop == start:
                return
            self.next = stop
            if packed is not None and native.module is not None:
                odd = native.module.index_odd(packed, self.positions, self.relatives, start, stop, base)
            else:
                last_at = dict(zip(positions, lasts)).get
                odd = [i for i, position, relative in zip(range(start, stop), self.positions[start:stop],
                                                           self.relatives[start:stop])
                       if last_at(position) != base + relative]
        else:
            order = self.by_position
            stop = start
            while stop < count and self.positions[order[stop]] < end:
                stop += 1
            self.next = stop
            last_at = dict(zip(positions, lasts)).get
            odd = [i for i in order[start:stop] if last_at(self.positions[i]) != base + self.relatives[i]]
        for i in odd:
            self._entry(i, positions, lasts)

    def _following(self, i: int) -> int:
        if self.by_position is None:
            return self.positions[i + 1] if i + 1 < len(self.positions) else self.log_size
        return self.following.get(i, self.log_size)

    def _entry(self, i: int, positions, lasts) -> None:
        position, offset = self.positions[i], self.base + self.relatives[i]
        following = self._following(i)
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
        if not self.pending and self.next >= len(self.positions) and not self.violations and not self.suppressed:
            return  # every entry judged, nothing to report
        for i, offset, following in self.pending:
            if not self.owner.damaged_between(self.positions[i], following):
                self._error(Code.INDEX_OFFSET_MISMATCH, i, f"entry {i}: no batch ends at offset {offset}")
        self.pending = []
        order = self.by_position if self.by_position is not None else range(len(self.positions))
        unjudged = [i for i in list(order)[self.next:] if not self.owner.is_damaged_position(self.positions[i])]
        for i in self._trailing(unjudged, Code.INDEX_ENTRY_PAST_LOG_END,
                                lambda one: f"{'points' if one else 'point'} past the last batch, which ends at {end_position}"):
            position = self.positions[i]
            if position >= self.log_size:
                self._error(Code.INDEX_ENTRY_PAST_LOG_END, i,
                            f"entry {i} points at position {position}, past the end of the .log ({self.log_size} bytes)")
            else:
                self._error(Code.INDEX_ENTRY_NOT_BATCH_START, i,
                            f"entry {i} points at position {position}, after the last readable batch "
                            f"(which ends at {end_position})")
        self._finish_common()


class TimeIndexChecker(_EntryChecker):
    """``<base>.timeindex`` against the batches' last offsets and max timestamps."""

    width = 12
    order_code = Code.TIME_INDEX_OUT_OF_ORDER

    def __init__(self, path: str, base: int, timestamps: array, relatives: array, owner, active: bool):
        self._init_common(path, base, owner, active)
        self.timestamps, self.relatives = timestamps, relatives
        self.next = 0
        self.by_offset: list[int] | None = None

    @classmethod
    def open(cls, segment, owner, active: bool):
        path = segment.time_index_file
        if not segment.has_file(path):
            owner.add(Code.TIME_INDEX_MISSING, WARNING, None,
                      "no .timeindex: Kafka creates an empty one and then dates the segment by the file's "
                      "mtime (time retention, timestamp lookups)", path=path)
            return _NoIndex()
        try:
            data = read_small_file(path, _INDEX_LIMIT)
        except SeglogError as exc:
            owner.add(Code.UNREADABLE_FILE, ERROR, None, exc.message, path=path)
            return _NoIndex()
        count = len(data) // 12
        words = _TIME_ENTRIES[count].unpack_from(data) if count <= SMALL_INDEX else None
        if _zero_filled(data):
            valid = 0
        else:
            valid = _first_zero_slot(words[1::2]) if words is not None else _entries(data, 12)
        _tail(data, valid, 12, path, active, owner)
        # the zero tail's own effect on the check is reported above as preallocation
        if words is None or len(data) % 12 or (valid and (words[2 * valid - 2] < words[0] or words[2 * valid - 1] < 0)):
            _sanity(TimeIndex, path, segment.base_offset, data[:valid * 12] + data[len(data) - len(data) % 12:],
                    owner)
        if words is not None:
            timestamps, relatives = array("q", words[0:2 * valid:2]), array("i", words[1:2 * valid:2])
        else:
            timestamps, relatives = _time_entries(data, valid)
        checker = cls(path, segment.base_offset, timestamps, relatives, owner, active)
        checker._order()
        return checker

    def _order(self) -> None:
        timestamps, relatives = self.timestamps, self.relatives
        if _increasing(timestamps) and _increasing(relatives, strictly=False):
            return
        n = len(timestamps)

        def ordered(a, b):
            return timestamps[a] < timestamps[b] and relatives[a] <= relatives[b]

        self._find_disorder(n, ordered)
        self.by_offset = sorted(range(n), key=lambda i: (relatives[i], i))

    def _disorder_message(self, i: int) -> str:
        return (f"entry {i} ({self.timestamps[i]}, offset {self.base + self.relatives[i]}) does not follow "
                f"entry {i - 1} ({self.timestamps[i - 1]}, offset {self.base + self.relatives[i - 1]})")

    def check(self, bases, lasts, max_timestamps, packed: bytes | None = None) -> None:
        """Entries naming offsets up to the last batch given. Fast path: an entry naming a
        batch's last offset with its max timestamp is right; only the others go through
        :meth:`_entry`."""
        if not len(lasts):
            return
        count, start = len(self.timestamps), self.next
        if start >= count:
            return
        top, base = lasts[-1], self.base
        if self.by_offset is None:
            stop = bisect.bisect_right(self.relatives, top - base, start)
            if stop == start:
                return
            self.next = stop
            if packed is not None and native.module is not None:
                odd = native.module.time_index_odd(packed, self.timestamps, self.relatives, start, stop, base)
            else:
                timestamp_of = dict(zip(lasts, max_timestamps)).get
                odd = [i for i, relative, timestamp in zip(range(start, stop), self.relatives[start:stop],
                                                            self.timestamps[start:stop])
                       if timestamp_of(base + relative) != timestamp]
        else:
            order = self.by_offset
            stop = start
            while stop < count and base + self.relatives[order[stop]] <= top:
                stop += 1
            self.next = stop
            timestamp_of = dict(zip(lasts, max_timestamps)).get
            odd = [i for i in order[start:stop] if timestamp_of(base + self.relatives[i]) != self.timestamps[i]]
        for i in odd:
            self._entry(i, bases, lasts, max_timestamps)

    def _entry(self, i: int, bases, lasts, max_timestamps) -> None:
        offset, timestamp = self.base + self.relatives[i], self.timestamps[i]
        if self.owner.is_unknown_offset(offset):
            return  # in a damaged batch or region, reported as such
        j = bisect.bisect_left(lasts, offset)
        if j >= len(lasts) or bases[j] > offset:
            self._report(Code.TIME_INDEX_OFFSET_NOT_FOUND, ERROR, i,
                         f"entry {i} names offset {offset}, which no batch holds", offset)
        elif max_timestamps[j] != timestamp:
            self._report(Code.TIME_INDEX_MISMATCH, ERROR, i,
                         f"entry {i} says {timestamp}, but the batch holding offset {offset} has max "
                         f"timestamp {max_timestamps[j]}", offset)

    def finish(self, segment_max_timestamp: int) -> None:
        if self.next < len(self.timestamps) or self.violations or self.suppressed:
            self._finish_entries()
        last = self.timestamps[-1] if self.timestamps else -1
        if segment_max_timestamp >= 0 and last < segment_max_timestamp:
            severity = INFO if self.active else WARNING
            self.owner.add(Code.TIME_INDEX_LAST_ENTRY_STALE, severity, None,
                           f"the last entry says {last} but the segment's largest timestamp is "
                           f"{segment_max_timestamp}" + (" (written when the segment rolls or the broker stops)"
                                                         if self.active else
                                                         " (time retention reads the last entry)"),
                           path=self.path)

    def _finish_entries(self) -> None:
        """The entries no batch was given for, and what :meth:`check` held back."""
        order = self.by_offset if self.by_offset is not None else range(len(self.timestamps))
        unjudged = [i for i in list(order)[self.next:] if not self.owner.is_unknown_offset(self.base + self.relatives[i])]
        for i in self._trailing(unjudged, Code.TIME_INDEX_OFFSET_NOT_FOUND,
                                lambda one: f"{'names an offset' if one else 'name offsets'} past the last batch"):
            offset = self.base + self.relatives[i]
            self._report(Code.TIME_INDEX_OFFSET_NOT_FOUND, ERROR, i,
                         f"entry {i} names offset {offset}, past the last batch", offset)
        self._finish_common()


def _sanity(index_class, path: str, base: int, data: bytes, owner) -> None:
    """Kafka's sanityCheck on ``data``, the bytes of the index at ``path``."""
    index = index_class(path, base, data=data)
    try:
        index.sanity_check()
    except SeglogError as exc:
        owner.add(Code.INDEX_SANITY_FAILED, ERROR, None, exc.message, path=path)
