"""Dumping ``.index``, ``.timeindex``, ``.snapshot`` and ``.txnindex`` files as DumpLogSegments
does (§19.2): the same entries, the same stop at the first zero slot, the same cross-checks
against the ``.log`` and the same report entries.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.dump.dump_events import DumpReport, IndexIsEmpty, Problem, SanityCheckPassed
from seglog_cli.storage.log.errors import CorruptSnapshotError, SeglogError, UnreadableInputError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.indexes import OffsetIndex, TimeIndex, TransactionIndex
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.log.snapshots import read_snapshot

NO_TIMESTAMP = -1


def _sibling(path: str, suffix: str) -> Path:
    file = Path(path)
    return file.absolute().parent / (file.name.split(".")[0] + suffix)


def _open_log(path: str) -> MappedFile:
    log_path = _sibling(path, ".log")
    try:
        return MappedFile(log_path)
    except UnreadableInputError as exc:
        raise UnreadableInputError(f"the segment's .log is needed to check this index: {exc.message}",
                                   log_path) from None


def dump_offset_index(path: str, base_offset: int | None, options, report: DumpReport) -> Iterator[object]:
    """``DumpLogSegments.dumpIndex``."""
    base_offset = _base_offset(path, base_offset)
    with _open_log(path) as log, OffsetIndex(path, base_offset) as index:
        if index.entries == 0:
            yield IndexIsEmpty(path)
            return
        if options.index_sanity_check:
            index.sanity_check()
            yield SanityCheckPassed(path)
            return
        absolute = str(Path(path).absolute())
        for i in range(index.entries):
            entry = index.entry(i)
            if entry.offset == base_offset and i > 0:
                return  # a zero slot of a preallocated index: stop like Kafka
            batch_last = _first_batch_last_offset(log, entry.position, options.max_message_size, path)
            log.release_behind(entry.position)  # entries go up the .log: drop what is behind them
            if isinstance(batch_last, Problem):
                yield batch_last
            elif batch_last != entry.offset:
                report.index_mismatches.setdefault(absolute, []).append((entry.offset, batch_last))
            if not options.verify_index_only:
                yield entry


def _first_batch_last_offset(log: MappedFile, position: int, window: int, path: str):
    """Last offset of the first batch in ``log[position:position + window]``."""
    if position < 0 or position > log.size:
        return Problem(f'Exception in thread "main" java.lang.IllegalArgumentException: Slice from '
                       f'position {position} exceeds end position of {log.path}',
                       SeglogError("index entry points past the end of the log", path, position))
    scan = LogScan(log, position, min(log.size, position + window), resync=False, bounded=True,
                   check_crc=False)
    for batch in scan:
        return batch.last_offset
    if scan.kafka_error is not None:
        raise scan.kafka_error
    return Problem('Exception in thread "main" java.util.NoSuchElementException',
                   SeglogError(f"no whole batch within {window} bytes of position {position} "
                               f"(raise --max-message-size)", path, position))


def dump_time_index(path: str, base_offset: int | None, options, report: DumpReport) -> Iterator[object]:
    """``DumpLogSegments.dumpTimeIndex``."""
    base_offset = _base_offset(path, base_offset)
    index_path = _sibling(path, ".index")
    with _open_log(path) as log, TimeIndex(path, base_offset) as time_index:
        offset_index = OffsetIndex(index_path, base_offset) if index_path.is_file() else None
        try:
            if options.index_sanity_check:
                time_index.sanity_check()
                yield SanityCheckPassed(path)
                return
            yield from _time_index_entries(path, base_offset, log, time_index, offset_index, options, report)
        finally:
            if offset_index is not None:
                offset_index.close()


def _time_index_entries(path, base_offset, log, time_index, offset_index, options, report):
    errors = report.time_index
    absolute = str(Path(path).absolute())
    previous = NO_TIMESTAMP
    last_search = (None, None, None)  # start position, offset and result of the previous search
    for i in range(time_index.entries):
        entry = time_index.entry(i)
        if entry.offset == base_offset and i > 0:
            return
        position = offset_index.lookup(entry.offset).position if offset_index is not None else 0
        start, searched, found = last_search
        if start == position and searched is not None and entry.offset >= searched:
            # The same walk as the previous search, further on: resume where that one stopped
            # (without an .index every search starts at 0, which made this quadratic).
            if found is not None and found.last_offset < entry.offset:
                found = _find_batch(log, found.position, entry.offset)
            batch = found
        else:
            batch = _find_batch(log, position, entry.offset)
        last_search = (position, entry.offset, batch)
        if batch is not None:
            log.release_behind(batch.position)  # entries go up the .log: drop what is behind them
        if batch is None:
            errors.shallow_offset_not_found.setdefault(absolute, []).append((entry.offset, -1))
        elif batch.last_offset != entry.offset:
            errors.shallow_offset_not_found.setdefault(absolute, []).append((entry.offset, batch.last_offset))
        else:
            max_timestamp = NO_TIMESTAMP
            for record in read_records(log.buffer, batch, path):
                max_timestamp = max(max_timestamp, record.timestamp)
            if max_timestamp != entry.timestamp:
                errors.mismatches.setdefault(absolute, []).append((entry.timestamp, max_timestamp))
            if previous >= entry.timestamp:
                errors.out_of_order.setdefault(absolute, []).append((entry.timestamp, previous))
        if not options.verify_index_only:
            yield entry
        previous = entry.timestamp


def _find_batch(log: MappedFile, position: int, offset: int):
    """First batch from ``position`` whose last offset >= ``offset`` (None when none)."""
    if not 0 <= position <= log.size:
        position = 0
    scan = LogScan(log, position, resync=False, check_crc=False)
    for batch in scan:
        if batch.last_offset >= offset:
            return batch
    if scan.kafka_error is not None:
        raise scan.kafka_error
    return None


def dump_snapshot(path: str) -> Iterator[object]:
    """``DumpLogSegments.dumpProducerIdSnapshot``: a corrupt snapshot prints only the message."""
    try:
        snapshot = read_snapshot(path)
    except CorruptSnapshotError as exc:
        yield Problem(exc.message, exc, kafka_stops=False)
        return
    yield from snapshot.entries


def dump_txn_index(path: str, base_offset: int | None) -> Iterator[object]:
    """``DumpLogSegments.dumpTxnIndex``."""
    yield from TransactionIndex(path, _base_offset(path, base_offset)).aborted_txns()


def _base_offset(path: str, base_offset: int | None) -> int:
    if base_offset is None:
        raise SeglogError("the file name does not start with a base offset", path)
    return base_offset
