"""Readers for ``.index``, ``.timeindex`` and ``.txnindex`` with Kafka's counting and checks.

Kafka never scans an existing index when it opens it: ``entries = file_length // entry_size``
(§8.2, §9.2), so a preallocated, zero-filled tail counts as entries decoding to relative offset
0. These readers keep that count (``entries``), Kafka's lookups over it (including the
warm-section binary search of ``AbstractIndex``) and Kafka's sanity checks, and add the
toolkit's own view of the real entries (``valid_entries``): stop at the first slot after the
first whose relative offset is 0, as DumpLogSegments does.
"""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from seglog_cli.formats import layout
from seglog_cli.storage.log.errors import CorruptIndexError, DecodeError
from seglog_cli.storage.log.files import MappedFile, read_small_file

WARM_SECTION_BYTES = 8192


@dataclass(frozen=True, slots=True)
class OffsetPosition:
    """An offset index entry: logical ``offset`` -> byte ``position`` of a batch start."""

    offset: int
    position: int


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A time index entry: ``timestamp`` is the largest timestamp up to and including the batch
    whose last offset is ``offset``."""

    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class _MappedIndex:
    """Common part of the offset and time index (Kafka ``AbstractIndex``)."""

    entry_size = 0
    _layout: struct.Struct

    def __init__(self, path: str | Path, base_offset: int, data: bytes | None = None):
        """The index at ``path``, or ``data`` when given (the bytes of such a file)."""
        self.path = str(path)
        self.base_offset = base_offset
        self._file = MappedFile(self.path) if data is None else None
        self._buf = self._file.buffer if data is None else data
        self.length = len(self._buf)
        self.entries = self.length // self.entry_size  # Kafka's count: the whole file

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def max_entries(self) -> int:
        return self.entries  # an existing file's length is its maximum size (§8.2)

    def _raw(self, n: int) -> tuple:
        return self._layout.unpack_from(self._buf, n * self.entry_size)

    def _key(self, n: int) -> int:
        raise NotImplementedError

    def _largest_lower_bound_slot(self, target: int) -> int:
        """``AbstractIndex.largestLowerBoundSlotFor``: -1 when no entry's key is <= target."""
        entries = self.entries
        if entries == 0:
            return -1
        first_hot = max(0, entries - 1 - WARM_SECTION_BYTES // self.entry_size)
        if self._key(first_hot) < target:
            return self._binary_search(target, first_hot, entries - 1)
        if self._key(0) > target:
            return -1
        return self._binary_search(target, 0, first_hot)

    def _binary_search(self, target: int, lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            key = self._key(mid)
            if key > target:
                hi = mid - 1
            elif key < target:
                lo = mid
            else:
                return mid
        return lo

    def _stop_at_zero_slot(self) -> int:
        """Entries DumpLogSegments shows: up to the first slot ``i > 0`` with relative offset 0."""
        for i in range(1, self.entries):
            if self._relative_offset(i) == 0:
                return i
        return self.entries

    def _relative_offset(self, n: int) -> int:
        raise NotImplementedError


def _absolute(path: str) -> str:
    """The absolute path Kafka's messages name (built only for a message)."""
    return str(Path(path).absolute())


class OffsetIndex(_MappedIndex):
    """``<base>.index``: 8-byte entries (relative offset, position)."""

    entry_size = layout.OFFSET_INDEX_ENTRY_SIZE
    _layout = struct.Struct(">ii")

    def entry(self, n: int) -> OffsetPosition:
        relative, position = self._raw(n)
        return OffsetPosition(self.base_offset + relative, position)

    def _key(self, n: int) -> int:
        return self.base_offset + self._raw(n)[0]

    def _relative_offset(self, n: int) -> int:
        return self._raw(n)[0]

    @property
    def last_entry(self) -> OffsetPosition:
        return self.entry(self.entries - 1) if self.entries else OffsetPosition(self.base_offset, 0)

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Largest entry with offset <= target, else (base offset, 0) (``OffsetIndex.lookup``)."""
        slot = self._largest_lower_bound_slot(target_offset)
        return OffsetPosition(self.base_offset, 0) if slot == -1 else self.entry(slot)

    def dump_entry_count(self) -> int:
        """Entries DumpLogSegments shows (:meth:`_stop_at_zero_slot`), found in one pass over the
        relative offsets read at once."""
        at, end = self.entry_size, self.entries * self.entry_size
        while True:  # four zero bytes at an entry's start: a search in C, not a read per entry
            at = self._buf.find(b"\0\0\0\0", at, end)
            if at < 0:
                return self.entries
            if at % self.entry_size == 0:
                return at // self.entry_size
            at += 1

    def dump_positions(self) -> array:
        """The positions of the entries DumpLogSegments shows, read at once (int32 array)."""
        return self.columns(self.dump_entry_count())[1]

    def columns(self, count: int) -> tuple[array, array]:
        """The relative offsets and the positions of the first ``count`` entries, two int32
        arrays read in one go (a 1 GiB segment's index has ~250,000 entries)."""
        words = array("i")
        words.frombytes(self._buf[:count * self.entry_size])
        if sys.byteorder == "little":
            words.byteswap()  # the file is big-endian
        return words[0::2], words[1::2]

    def iter_entries(self, count: int | None = None) -> Iterator[OffsetPosition]:
        for n in range(self.entries if count is None else count):
            yield self.entry(n)

    def sanity_check(self) -> None:
        """``OffsetIndex.sanityCheck``: raises :class:`CorruptIndexError` like Kafka."""
        last_offset = self.last_entry.offset
        if self.entries != 0 and last_offset < self.base_offset:
            raise CorruptIndexError(
                f"Corrupt index found, index file {_absolute(self.path)} has non-zero size but the last offset "
                f"is {last_offset} which is less than the base offset {self.base_offset}", self.path)
        if self.length % self.entry_size != 0:
            raise CorruptIndexError(
                f"Index file {_absolute(self.path)} is corrupt, found {self.length} bytes which is neither "
                f"positive nor a multiple of {self.entry_size}", self.path)


class TimeIndex(_MappedIndex):
    """``<base>.timeindex``: 12-byte entries (timestamp, relative offset)."""

    entry_size = layout.TIME_INDEX_ENTRY_SIZE
    _layout = struct.Struct(">qi")

    def entry(self, n: int) -> TimestampOffset:
        timestamp, relative = self._raw(n)
        return TimestampOffset(timestamp, self.base_offset + relative)

    def _key(self, n: int) -> int:
        return self._raw(n)[0]

    def _relative_offset(self, n: int) -> int:
        return self._raw(n)[1]

    @property
    def last_entry(self) -> TimestampOffset:
        return self.entry(self.entries - 1) if self.entries else TimestampOffset(-1, self.base_offset)

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries - 1  # the last slot is kept for the roll entry

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Largest entry with timestamp <= target, else (-1, base offset) (``TimeIndex.lookup``)."""
        slot = self._largest_lower_bound_slot(target_timestamp)
        return TimestampOffset(-1, self.base_offset) if slot == -1 else self.entry(slot)

    def dump_entry_count(self) -> int:
        return self._stop_at_zero_slot()

    def iter_entries(self, count: int | None = None) -> Iterator[TimestampOffset]:
        for n in range(self.entries if count is None else count):
            yield self.entry(n)

    def sanity_check(self) -> None:
        """``TimeIndex.sanityCheck``: raises :class:`CorruptIndexError` like Kafka."""
        last = self.last_entry
        if self.entries != 0:
            first_timestamp = self._raw(0)[0]
            if last.timestamp < first_timestamp:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({_absolute(self.path)}) has non-zero size "
                    f"but the last timestamp is {last.timestamp} which is less than the first timestamp "
                    f"{first_timestamp}", self.path)
            if last.offset < self.base_offset:
                raise CorruptIndexError(
                    f"Corrupt time index found, time index file ({_absolute(self.path)}) has non-zero size "
                    f"but the last offset is {last.offset} which is less than the first offset "
                    f"{self.base_offset}", self.path)
        if self.length % self.entry_size != 0:
            raise CorruptIndexError(
                f"Time index file {_absolute(self.path)} is corrupt, found {self.length} bytes which is neither "
                f"positive nor a multiple of {self.entry_size}", self.path)


_ABORTED_TXN = struct.Struct(">bxqqqq")  # read as Kafka reads it: only the first version byte counts
ABORTED_TXN = struct.Struct(">hqqqq")  # written as Kafka writes it (§11.1)
assert ABORTED_TXN.size == layout.ABORTED_TXN_ENTRY_SIZE


def format_aborted_txns(txns) -> bytes:
    """The ``.txnindex`` bytes for ``txns`` (:class:`AbortedTxn`), in order."""
    return b"".join(ABORTED_TXN.pack(t.version, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                    for t in txns)


class TransactionIndex:
    """``<base>.txnindex``: 34-byte aborted-transaction entries, read whole (files are small)."""

    entry_size = layout.ABORTED_TXN_ENTRY_SIZE

    def __init__(self, path: str | Path, base_offset: int, data: bytes | None = None):
        self.path = str(path)
        self.base_offset = base_offset
        self._data = read_small_file(self.path) if data is None else data

    @property
    def length(self) -> int:
        return len(self._data)

    @property
    def entries(self) -> int:
        return len(self._data) // self.entry_size  # a trailing partial entry is ignored

    def aborted_txns(self) -> Iterator[AbortedTxn]:
        """Entries in file order; a version byte above 0 stops with Kafka's error."""
        for n in range(self.entries):
            txn = AbortedTxn(*_ABORTED_TXN.unpack_from(self._data, n * self.entry_size))
            if txn.version > 0:
                raise DecodeError(
                    f"Unexpected aborted transaction version {txn.version} in transaction index "
                    f"{_absolute(self.path)}, current version is 0", self.path, n * self.entry_size)
            yield txn

    def sanity_check(self) -> None:
        """``TransactionIndex.sanityCheck``: every entry's last offset >= the base offset."""
        for txn in self.aborted_txns():
            if txn.last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {_txn_text(txn)} in index {_absolute(self.path)} is less "
                    f"than start offset {self.base_offset}", self.path)


def _txn_text(txn: AbortedTxn) -> str:
    return (f"AbortedTxn(version={txn.version}, producerId={txn.producer_id}, "
            f"firstOffset={txn.first_offset}, lastOffset={txn.last_offset}, "
            f"lastStableOffset={txn.last_stable_offset})")
