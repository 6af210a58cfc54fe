"""A log segment: one ``.log`` with its optional ``.index``, ``.timeindex`` and ``.txnindex``.

Lookups follow Kafka's ``LogSegment``: an offset is found through the offset index (largest
entry <= target) and a forward scan to the first batch whose last offset >= target
(``FileRecords.searchForOffsetWithSize``); a timestamp through the time index, then the offset
index, then a scan and a record-level search (``LogSegment.findOffsetByTimestamp``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.log.batch_header import BatchHeader
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.indexes import OffsetIndex, TimeIndex, TransactionIndex
from seglog_cli.storage.log.naming import (
    INDEX_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    parse_segment_file_name,
)
from seglog_cli.storage.log.records import read_records


@dataclass(frozen=True, slots=True)
class OffsetMatch:
    """Where an offset lives: the batch holding it (first batch with last offset >= target)."""

    batch: BatchHeader
    position: int


def join_name(directory: str, name: str) -> str:
    """``str(Path(directory) / name)`` for a ``directory`` that is already ``str(Path(...))``,
    without building a Path."""
    if directory == ".":
        return name
    return directory + name if directory.endswith("/") else directory + "/" + name


class LogSegment:
    """A segment identified by its ``.log`` path; index files are looked up beside it.

    The paths are built when first asked for (a log dir of 10^5 segments lists them all); the
    ``*_file`` properties give the same paths as ``str``. ``siblings``, when the segment comes
    from a directory listing (:class:`~seglog_cli.storage.log.partition_log.PartitionLog`), is
    the set of names of that directory's regular files: :meth:`has_file` answers from it
    without a ``stat``."""

    __slots__ = ("base_offset", "siblings", "_log", "_log_file", "_stem", "_log_path", "_index_path",
                 "_time_index_path", "_txn_index_path")

    def __init__(self, log_path: str | Path, base_offset: int | None = None, *, siblings: frozenset | None = None):
        if type(log_path) is str and not log_path.endswith("/") and "//" not in log_path and "/./" not in log_path \
                and not log_path.startswith("./") and not log_path.endswith("/.") and log_path not in ("", "."):
            self._log_file, self._log_path = log_path, None  # already as Path would print it
        else:
            self._log_path = Path(log_path)
            self._log_file = str(self._log_path)
        name = self._log_file.rsplit("/", 1)[-1]
        if base_offset is None:
            parsed = parse_segment_file_name(name)
            base_offset = parsed.base_offset if parsed else 0
        self.base_offset = base_offset
        self._stem = self._log_file[:-4] if name.endswith(".log") else None
        self._index_path = self._time_index_path = self._txn_index_path = None
        self.siblings = siblings
        self._log: MappedFile | None = None

    def __repr__(self) -> str:
        return f"LogSegment({self._log_file!r}, base_offset={self.base_offset})"

    # -- paths -----------------------------------------------------------------------------

    @property
    def log_path(self) -> Path:
        if self._log_path is None:
            self._log_path = Path(self._log_file)
        return self._log_path

    @property
    def log_file(self) -> str:
        """``str(self.log_path)``."""
        return self._log_file

    def _sibling(self, suffix: str) -> str:
        if self._stem is not None:
            return self._stem + suffix
        path = self.log_path
        return str(path.with_name(path.stem + suffix))

    @property
    def index_path(self) -> Path:
        if self._index_path is None:
            self._index_path = Path(self._sibling(INDEX_SUFFIX))
        return self._index_path

    @index_path.setter
    def index_path(self, path) -> None:
        self._index_path = Path(path)

    @property
    def time_index_path(self) -> Path:
        if self._time_index_path is None:
            self._time_index_path = Path(self._sibling(TIME_INDEX_SUFFIX))
        return self._time_index_path

    @time_index_path.setter
    def time_index_path(self, path) -> None:
        self._time_index_path = Path(path)

    @property
    def txn_index_path(self) -> Path:
        if self._txn_index_path is None:
            self._txn_index_path = Path(self._sibling(TXN_INDEX_SUFFIX))
        return self._txn_index_path

    @txn_index_path.setter
    def txn_index_path(self, path) -> None:
        self._txn_index_path = Path(path)

    @property
    def index_file(self) -> str:
        """``str(self.index_path)``."""
        return self._sibling(INDEX_SUFFIX) if self._index_path is None else str(self._index_path)

    @property
    def time_index_file(self) -> str:
        """``str(self.time_index_path)``."""
        return self._sibling(TIME_INDEX_SUFFIX) if self._time_index_path is None else str(self._time_index_path)

    @property
    def txn_index_file(self) -> str:
        """``str(self.txn_index_path)``."""
        return self._sibling(TXN_INDEX_SUFFIX) if self._txn_index_path is None else str(self._txn_index_path)

    def has_file(self, path: str) -> bool:
        """Whether ``path`` (one of this segment's files, as ``str``) is a regular file: from
        the directory listing when the segment has one, else a ``stat``."""
        siblings = self.siblings
        if siblings is not None:
            directory, _, name = path.rpartition("/")
            if directory == self._log_file.rpartition("/")[0]:
                return name in siblings
        return os.path.isfile(path)

    # -- files -----------------------------------------------------------------------------

    @property
    def log(self) -> MappedFile:
        if self._log is None:
            self._log = MappedFile(self._log_file)
        return self._log

    @property
    def size(self) -> int:
        return os.stat(self._log_file).st_size

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def offset_index(self) -> OffsetIndex | None:
        return OffsetIndex(self.index_path, self.base_offset) if self.index_path.is_file() else None

    def time_index(self) -> TimeIndex | None:
        return TimeIndex(self.time_index_path, self.base_offset) if self.time_index_path.is_file() else None

    def txn_index(self) -> TransactionIndex | None:
        return (TransactionIndex(self.txn_index_path, self.base_offset)
                if self.txn_index_path.is_file() else None)

    # -- iteration -------------------------------------------------------------------------

    def batches(self, start_position: int = 0, **scan_options) -> LogScan:
        return LogScan(self.log, start_position, **scan_options)

    # -- lookups ---------------------------------------------------------------------------

    def index_position(self, offset: int) -> int:
        """Position to start scanning for ``offset`` (offset index floor, else 0)."""
        index = self.offset_index()
        if index is None:
            return 0
        with index:
            position = index.lookup(offset).position
        return position if 0 <= position <= self.log.size else 0

    def translate_offset(self, offset: int, start_position: int | None = None) -> OffsetMatch | None:
        """First batch at or after the index floor whose last offset >= ``offset``."""
        if start_position is None:
            start_position = self.index_position(offset)
        for batch in LogScan(self.log, start_position, resync=False, check_crc=False):
            if batch.last_offset >= offset:
                return OffsetMatch(batch, batch.position)
        return None

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int | None = None) -> int | None:
        """Offset of the first record with timestamp >= ``timestamp`` and offset >= the start."""
        if starting_offset is None:
            starting_offset = self.base_offset
        time_index = self.time_index()
        if time_index is not None:
            with time_index:
                indexed_offset = time_index.lookup(timestamp).offset
        else:
            indexed_offset = self.base_offset
        position = self.index_position(max(indexed_offset, starting_offset))
        buf = self.log.buffer
        for batch in LogScan(self.log, position, resync=False, check_crc=False):
            if batch.max_timestamp >= timestamp:
                for record in read_records(buf, batch, self._log_file):
                    if record.timestamp >= timestamp and record.offset >= starting_offset:
                        return record.offset
        return None

    def read_next_offset(self) -> int:
        """Offset after the last batch (``LogSegment.readNextOffset``), base offset if empty."""
        index = self.offset_index()
        start = 0
        if index is not None:
            with index:
                count = index.dump_entry_count()
                if count:
                    start = index.entry(count - 1).position
                    start = start if 0 <= start <= self.log.size else 0
        next_offset = self.base_offset
        for batch in LogScan(self.log, start, resync=False, check_crc=False):
            next_offset = batch.next_offset
        return next_offset
