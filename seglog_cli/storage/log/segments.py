"""A log segment: one ``.log`` with its optional ``.index``, ``.timeindex`` and ``.txnindex``.

Lookups follow Kafka's ``LogSegment``: an offset is found through the offset index (largest
entry <= target) and a forward scan to the first batch whose last offset >= target
(``FileRecords.searchForOffsetWithSize``); a timestamp through the time index, then the offset
index, then a scan and a record-level search (``LogSegment.findOffsetByTimestamp``).
"""

from __future__ import annotations

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


class LogSegment:
    """A segment identified by its ``.log`` path; index files are looked up beside it."""

    def __init__(self, log_path: str | Path, base_offset: int | None = None):
        self.log_path = Path(log_path)
        if base_offset is None:
            parsed = parse_segment_file_name(self.log_path.name)
            base_offset = parsed.base_offset if parsed else 0
        self.base_offset = base_offset
        stem = self.log_path.name[: -len(".log")] if self.log_path.name.endswith(".log") else self.log_path.stem
        self.index_path = self.log_path.with_name(stem + INDEX_SUFFIX)
        self.time_index_path = self.log_path.with_name(stem + TIME_INDEX_SUFFIX)
        self.txn_index_path = self.log_path.with_name(stem + TXN_INDEX_SUFFIX)
        self._log: MappedFile | None = None

    def __repr__(self) -> str:
        return f"LogSegment({str(self.log_path)!r}, base_offset={self.base_offset})"

    # -- files -----------------------------------------------------------------------------

    @property
    def log(self) -> MappedFile:
        if self._log is None:
            self._log = MappedFile(self.log_path)
        return self._log

    @property
    def size(self) -> int:
        return self.log_path.stat().st_size

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
                for record in read_records(buf, batch, str(self.log_path)):
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
