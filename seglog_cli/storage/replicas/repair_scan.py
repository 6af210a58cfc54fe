"""What a repair plan reads of one ``.log``, without holding its batches (``seglog repair``).

A segment is read once with a resyncing scan, CRCs checked, as chunks of batch header columns
(the scan ``seglog diff`` reads, :func:`~seglog_cli.storage.replicas.replica_scan.column_chunks`),
into its runs of valid batches each starting where the one before ends (:class:`SegmentRuns`,
built by :func:`segment_runs`) and a few single batches (:class:`BatchRow`: positions, offsets,
leader epoch, valid). HEALTHY's segment is walked forward once for the ranges a repair takes
(:class:`SegmentWalk`); :func:`batch_rows` gives every batch of a ``.log`` one at a time.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.replicas.replica_scan import column_chunks


@dataclass
class BatchRow:
    position: int
    end: int
    base: int
    last: int
    epoch: int
    valid: bool


def _row(columns, k: int) -> BatchRow:
    i = 8 * k
    position = columns[i]
    return BatchRow(position, position + 12 + columns[i + 5], columns[i + 1], columns[i + 2], columns[i + 3],
                  bool(columns[i + 6]))


def _chunks(mapped: MappedFile):
    """A resyncing scan of a ``.log`` (CRCs checked), as the diff reads it: chunks of header
    columns (:func:`~seglog_cli.storage.replicas.replica_scan.column_chunks`), no object per batch."""
    for columns, _ in column_chunks(LogScan(mapped, 0, resync=True, check_crc=True)):
        if columns:
            yield columns


def batch_rows(path: Path):
    """Every batch a resyncing scan finds in a ``.log`` (CRC checked), one at a time."""
    with MappedFile(path) as mapped:
        for columns in _chunks(mapped):
            for k in range(len(columns) // 8):
                yield _row(columns, k)


@dataclass
class SegmentRuns:
    """What a plan needs of one ``.log``, read in one pass without holding its batches: its
    size, first and last batch, last valid batch, first failing one, and the runs of valid
    batches each starting where the one before ends (``[start, end)`` positions, first base and
    last offsets): one run from 0 to the size when the segment is whole."""

    size: int
    count: int = 0
    first: BatchRow | None = None
    last: BatchRow | None = None
    last_good: BatchRow | None = None
    first_invalid: BatchRow | None = None
    runs: list = field(default_factory=list)  # [start, end, first base, last offset]

    @property
    def damaged(self) -> bool:
        """A batch failing its checks, or bytes no valid batch covers."""
        if self.first_invalid is not None:
            return True
        if not self.runs:
            return self.size != 0
        return len(self.runs) != 1 or self.runs[0][0] != 0 or self.runs[0][1] != self.size


def segment_runs(path: Path) -> SegmentRuns:
    with MappedFile(path) as mapped:
        summary = SegmentRuns(mapped.size)
        runs = summary.runs
        for columns in _chunks(mapped):
            count = len(columns) // 8
            if summary.first is None:
                summary.first = _row(columns, 0)
            summary.last = _row(columns, count - 1)
            summary.count += count
            first, end = columns[0], summary.last.end
            if 0 not in columns[6::8] and end - first == sum(columns[5::8]) + 12 * count:
                # all valid and back to back: one stretch
                if runs and runs[-1][1] == first:
                    runs[-1][1], runs[-1][3] = end, columns[-6]
                else:
                    runs.append([first, end, columns[1], columns[-6]])
                summary.last_good = summary.last
                continue
            for k in range(count):
                batch = _row(columns, k)
                if not batch.valid:
                    if summary.first_invalid is None:
                        summary.first_invalid = batch
                    continue
                if runs and runs[-1][1] == batch.position:
                    runs[-1][1], runs[-1][3] = batch.end, batch.last
                else:
                    runs.append([batch.position, batch.end, batch.base, batch.last])
                summary.last_good = batch
        return summary


class SegmentWalk:
    """HEALTHY's batches of one segment read forward once (as :func:`batch_rows` gives them), a chunk
    of header columns at a time: :meth:`seek` passes over the batches before a position."""

    def __init__(self, path: Path) -> None:
        self.mapped = MappedFile(path)
        self.size = self.mapped.size
        self._chunks = _chunks(self.mapped)
        self.columns, self.positions = array("q"), array("q")
        self.k = self.n = 0

    def current(self) -> BatchRow | None:
        while self.k >= self.n:
            columns = next(self._chunks, None)
            if columns is None:
                return None
            self.columns, self.positions = columns, columns[0::8]
            self.k, self.n = 0, len(columns) // 8
        return _row(self.columns, self.k)

    def advance(self) -> None:
        self.k += 1

    def seek(self, position: int) -> BatchRow | None:
        """The first batch at ``position`` or after it."""
        while self.current() is not None and self.positions[-1] < position:
            self.k = self.n
        if self.k < self.n:
            self.k = bisect_left(self.positions, position, self.k)
        return self.current()

    def close(self) -> None:
        self._chunks.close()
        self.mapped.close()


__all__ = ["BatchRow", "SegmentRuns", "SegmentWalk", "batch_rows", "segment_runs"]
