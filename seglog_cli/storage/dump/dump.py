"""The engine behind ``seglog dump``: DumpLogSegments' traversal, without its dead ends.

:func:`dump` walks the given files in order and yields the events of
:mod:`seglog_cli.storage.dump.dump_events`. It makes the same checks, in the same order, as Kafka's
``kafka.tools.DumpLogSegments`` (§19), so the text renderer can print the same lines; where
Kafka's tool dies (a size field below 14, a zero-filled tail, a record it cannot decode) the
dump reports Kafka's message as a :class:`Problem` and carries on: past the damage when a valid
batch follows (resync), else with the next file.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Iterator

from seglog_cli.storage.dump import dump_indexes
from seglog_cli.storage.log import decode_pool, native
from seglog_cli.storage.log.batch_header import BatchHeader
from seglog_cli.storage.log.batches import BatchRun, LogScan
from seglog_cli.storage.log.codecs import decompress
from seglog_cli.storage.log.control import parse_control_record
from seglog_cli.storage.dump.dump_events import (
    CHECKPOINT,
    INDEX,
    LOG,
    SNAPSHOT,
    TIME_INDEX,
    TXN_INDEX,
    UNKNOWN,
    ControlRecordEntry,
    DumpReport,
    FileEnd,
    FileStart,
    Notice,
    Problem,
    TrailingBytes,
    UnknownFile,
)
from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.log.files import MappedFile, regular_file_problem
from seglog_cli.storage.log.findings import Code
from seglog_cli.storage.log.naming import (
    BOOTSTRAP_CHECKPOINT,
    OFFSET_OUT_OF_RANGE,
    offset_out_of_range,
    parse_kraft_snapshot_name,
    parse_partition_dir_name,
    parse_segment_file_name,
)
from seglog_cli.storage.log.partition_log import LogDir, PartitionLog, looks_like_partition_dir
from seglog_cli.storage.log.records import NOT_KEPT, RecordRun, read_records
from seglog_cli.storage.log.segments import LogSegment

INT32_MAX = 2**31 - 1
KIND_BY_SUFFIX = {".log": LOG, ".checkpoint": CHECKPOINT, ".index": INDEX, ".timeindex": TIME_INDEX,
                  ".snapshot": SNAPSHOT, ".txnindex": TXN_INDEX}


@dataclass(frozen=True)
class DumpOptions:
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = 5 * 1024 * 1024
    max_bytes: int = INT32_MAX
    resync: bool = True
    from_offset: int | None = None
    to_offset: int | None = None
    from_timestamp: int | None = None
    to_timestamp: int | None = None
    # deep iteration: workers decoding batches at once (1: this process alone)
    jobs: int = 1
    # called by the decode workers with each RecordRun; its result is kept in ``run.formatted``
    # (the text renderer formats the lines there, in parallel: TextDumpRenderer.format_run)
    format_run: Callable[[RecordRun], object] | None = None

    @property
    def has_range(self) -> bool:
        return any(v is not None for v in (self.from_offset, self.to_offset, self.from_timestamp,
                                           self.to_timestamp))


def file_kind(name: str) -> str:
    """DumpLogSegments' dispatch: the text after the LAST dot decides."""
    dot = name.rfind(".")
    return UNKNOWN if dot < 0 else KIND_BY_SUFFIX.get(name[dot:], UNKNOWN)


def dump(paths: Iterable[str], options: DumpOptions) -> Iterator[object]:
    """Dump every path (a file path, as given) in order; the last item is the DumpReport."""
    report = DumpReport()
    for path in paths:
        report.files += 1
        yield from _dump_file(path, options, report)
    yield report


def _dump_file(path: str, options: DumpOptions, report: DumpReport) -> Iterator[object]:
    name = Path(path).name
    kind = file_kind(name)
    start = _file_start(path, name, kind)
    yield start
    if kind == UNKNOWN and os.path.exists(path) and not os.path.isdir(path):
        yield UnknownFile(path)
        return
    problems = 0
    findings: list = []
    try:
        if kind == UNKNOWN or not os.path.exists(path):
            raise _nothing_to_dump(path)
        if offset_out_of_range(name):  # kafka-dump-log dies on it (NumberFormatException)
            raise UnreadableInputError(OFFSET_OUT_OF_RANGE, path)
        if kind in (LOG, CHECKPOINT):
            body = _dump_log(path, start, options, report, findings)
        elif kind == INDEX:
            body = dump_indexes.dump_offset_index(path, start.base_offset, options, report)
        elif kind == TIME_INDEX:
            body = dump_indexes.dump_time_index(path, start.base_offset, options, report)
        elif kind == SNAPSHOT:
            body = dump_indexes.dump_snapshot(path)
        else:
            body = dump_indexes.dump_txn_index(path, start.base_offset)
        for item in body:
            if type(item) is Problem:
                problems += 1
            yield item
    except SeglogError as exc:
        problems += 1
        if isinstance(exc, UnreadableInputError):
            report.unreadable_files.append(path)
        yield Problem(exc.kafka_line() if exc.kafka_class else f"seglog: {exc}", exc)
    if problems and path not in report.unreadable_files:
        report.damaged_files.append(path)
    yield FileEnd(path, kind, tuple(findings))


def _nothing_to_dump(path: str) -> UnreadableInputError:
    """Why a path that is neither a file to dump nor an unknown file gives nothing."""
    if not os.path.isdir(path):
        problem = regular_file_problem(path) if os.path.lexists(path) else None  # a dangling link, a loop
        return UnreadableInputError(problem or "no such file or directory", path)
    try:
        os.listdir(path)
    except OSError as exc:
        return UnreadableInputError(f"cannot list directory: {exc.strerror}", path)
    return UnreadableInputError("no files to dump in this directory (--types selects the kinds)", path)


def _file_start(path: str, name: str, kind: str) -> FileStart:
    parsed = parse_segment_file_name(name)
    base = parsed.base_offset if parsed else None
    partition = parse_partition_dir_name(Path(path).absolute().parent.name)
    topic, number = (partition.topic, partition.partition) if partition else (None, None)
    if kind == CHECKPOINT:
        return FileStart(path, kind, base, parse_kraft_snapshot_name(name),
                         name == BOOTSTRAP_CHECKPOINT, topic, number)
    return FileStart(path, kind, base, None, False, topic, number)


# -- .log and KRaft .checkpoint -----------------------------------------------------------------

def _dump_log(path: str, start: FileStart, options: DumpOptions, report: DumpReport,
              findings: list) -> Iterator[object]:
    if start.kind == CHECKPOINT and not start.bootstrap and start.snapshot_id is None:
        raise SeglogError("not a KRaft snapshot name (<end offset>-<epoch>.checkpoint)", path)
    bounded = options.max_bytes != INT32_MAX
    with MappedFile(path) as mapped:
        first_position, from_offset, to_offset = _range(path, start, options)
        scan = LogScan(mapped, first_position, options.max_bytes if bounded else None,
                       resync=options.resync, bounded=bounded)
        yield from _log_body(path, mapped, scan, options, report, from_offset, to_offset, first_position)
        findings.extend(scan.findings)
        if scan.kafka_error is None and not bounded:
            trailing = scan.end - (scan.end_position if scan.resynced else scan.valid_bytes)
            if trailing > 0 and first_position == 0 and to_offset is None:
                yield TrailingBytes(trailing, Path(path).name, scan.end - trailing)


RUN_LENGTH = 2048  # batches and records passed on together, as one list


class _Offsets:
    """DumpLogSegments' non-consecutive offsets check over one file's records."""

    __slots__ = ("last", "pairs", "_key", "_report")

    def __init__(self, path: str, report: DumpReport):
        self.last = -1
        self.pairs: list | None = None
        self._key = path
        self._report = report

    def add(self, gaps: list) -> None:
        if self.pairs is None:
            self.pairs = self._report.non_consecutive.setdefault(str(Path(self._key).absolute()), [])
        self.pairs.extend(gaps)


def _batch_records(path, buf, batch, offsets: _Offsets, from_offset, to_offset):
    """The record events of one batch through the Python decoder, and the Problem that ended
    them early if any (records before a damaged one are kept, as Kafka prints them)."""
    items = []
    last = offsets.last
    gaps = []
    try:
        control = batch.is_control
        for record in read_records(buf, batch, path):
            offset = record[0]
            if (from_offset is not None and offset < from_offset) or (
                    to_offset is not None and offset > to_offset):
                continue
            if offset != last + 1 and last != -1:
                gaps.append((last, offset))
            last = offset
            items.append(ControlRecordEntry(record, parse_control_record(record, path, batch.position))
                         if control else record)
        problem = None
    except SeglogError as exc:
        problem = Problem(exc.kafka_line(), exc)
    offsets.last = last
    if gaps:
        offsets.add(gaps)
    return items, problem


def _log_body(path, mapped, scan, options, report, from_offset, to_offset, first_position=0) -> Iterator[object]:
    """Batches (and their records) in lists of up to RUN_LENGTH items: per-item generator hops
    would cost more than decoding them. Problems and notices come between lists, in order."""
    deep = options.deep_iteration
    if from_offset is None and to_offset is None and native.module is not None:
        if not deep:
            yield from _log_runs(scan)
        elif _decode_in_workers(mapped, first_position, options):
            yield from _log_deep_runs_parallel(path, mapped, scan, report, options)
        else:
            yield from _log_deep_runs(path, mapped, scan, report)
        return
    buf = mapped.data  # the batches LogScan yields lie in its present window
    offsets = _Offsets(path, report)
    reported = 0
    run = []
    for batch in scan:
        if len(scan.findings) != reported:
            if run:
                yield run
                run = []
            yield from _scan_problems(scan, reported)
            reported = len(scan.findings)
        if from_offset is not None and batch.last_offset < from_offset:
            continue
        if to_offset is not None and batch.magic >= 2 and batch.base_offset > to_offset:
            break
        run.append(batch)
        if deep:
            items, problem = _batch_records(path, buf, batch, offsets, from_offset, to_offset)
            run.extend(items)
            if problem is not None:
                yield run
                run = []
                yield problem
        if len(run) >= RUN_LENGTH:
            yield run
            run = []
    if run:
        yield run
    if len(scan.findings) != reported:
        yield from _scan_problems(scan, reported)


def _log_deep_runs(path, mapped, scan: LogScan, report: DumpReport) -> Iterator[object]:
    """Deep iteration with the compiled decoder: stretches of data batches whose records decode
    cleanly pass as RecordRun (records built only if a renderer asks); any other batch takes
    the Python path (``_batch_records``), which reports Kafka's exact errors."""
    check_run = native.module.check_run
    buf = mapped.data  # the chunks LogScan yields lie in its present window
    offsets = _Offsets(path, report)
    gaps: list = []
    reported = 0
    for chunk in scan.chunks():
        if len(scan.findings) != reported:
            yield from _scan_problems(scan, reported)
            reported = len(scan.findings)
        start, count = 0, len(chunk)
        while start < count:
            done, offsets.last, sections, _first = check_run(BatchHeader, buf, chunk, start, offsets.last, gaps,
                                                             decompress)
            if gaps:
                offsets.add(gaps)
                gaps.clear()
            if done > start:
                yield RecordRun(buf, chunk[start:done], sections)
            if done < count:
                batch = chunk[done]
                items, problem = _batch_records(path, buf, batch, offsets, None, None)
                yield [batch, *items]
                if problem is not None:
                    yield problem
            start = done + 1
    if len(scan.findings) != reported:
        yield from _scan_problems(scan, reported)


def _decode_in_workers(mapped, position: int, options: DumpOptions) -> bool:
    """Whether a file's deep iteration goes to decode workers: several jobs, the text renderer
    formatting there (JSON Lines is rendered here, from records: sending the sections back would
    cost what the workers save), and a file :func:`decode_pool.worth_workers` says so of."""
    return options.jobs > 1 and options.format_run is not None and decode_pool.worth_workers(mapped, position)


def _log_deep_runs_parallel(path, mapped, scan: LogScan, report: DumpReport, options: DumpOptions) -> Iterator[object]:
    """:func:`_log_deep_runs` with the batches decoded by ``options.jobs`` workers, about
    ``decode_pool.UNIT_BYTES`` of the file per unit: each unit is decompressed, checked and
    formatted (``options.format_run``) by a worker, and the events come out in file order.

    A worker is sent only where its unit lies (it reads the headers again from the mapped
    file) and sends back the formatted lines, the offsets check's findings and, only where the
    lines stop short, the decompressed sections. The non-consecutive offsets check is joined
    across units here, as one pass makes it: a unit is checked from no previous offset and its
    first record compared with the last record before it. A batch the compiled decoder does
    not take goes through the Python path here, in order, exactly as in the one-worker walk."""
    compiled = native.module
    buf = mapped.data
    check_crc = scan.check_crc
    offsets = _Offsets(path, report)
    format_run = options.format_run
    unit_headers: deque = deque()  # the headers of the units in flight, in order

    def decode(unit: tuple[int, int, int]) -> list:
        first_position, end_position, count = unit
        headers, _next = compiled.scan(BatchHeader, buf, first_position, end_position, check_crc, count)
        if len(headers) != count:
            raise SeglogError(f"a decode worker read {len(headers)} batches where the scan found {count}",
                              path, first_position)
        pieces = []
        start = 0
        while start < count:
            gaps: list = []
            done, last, sections, first = compiled.check_run(BatchHeader, buf, headers, start, -1, gaps, decompress)
            if done > start:
                formatted = format_run(RecordRun(buf, headers[start:done], sections))
                if formatted is not None and formatted[1] == done - start:
                    sections = None  # every line is formatted: the sections need not travel
                pieces.append((start, done, formatted, gaps, first, last, sections))
            if done < count:
                pieces.append(done)
            start = done + 1
        mapped.release(first_position, end_position)  # a worker keeps no pages of the file resident
        return pieces

    def units() -> Iterator[object]:
        reported = 0
        cutter = decode_pool.UnitCutter()
        for chunk in scan.chunks():
            if len(scan.findings) != reported:
                yield from described(cutter.flush())
                yield decode_pool.Ready(list(_scan_problems(scan, reported)))
                reported = len(scan.findings)
            yield from described(cutter.add(chunk))
        yield from described(cutter.flush())
        if len(scan.findings) != reported:
            yield decode_pool.Ready(list(_scan_problems(scan, reported)))

    def described(cut: Iterator[list]) -> Iterator[tuple[int, int, int]]:
        for headers in cut:
            unit_headers.append(headers)
            yield headers[0].position, headers[-1].end_position, len(headers)

    for result in decode_pool.ordered_map(decode, units(), options.jobs):
        if type(result) is decode_pool.Ready:
            yield from result.value
            continue
        headers = unit_headers.popleft()
        for piece in result:
            if type(piece) is not tuple:
                batch = headers[piece]
                items, problem = _batch_records(path, buf, batch, offsets, None, None)
                yield [batch, *items]
                if problem is not None:
                    yield problem
                continue
            start, done, formatted, gaps, first, last, sections = piece
            if first is not None:
                if offsets.last != -1 and (first - offsets.last - 1) % _LONG_RANGE:
                    gaps.insert(0, (offsets.last, first))  # what one pass would have found
                offsets.last = last
            if gaps:
                offsets.add(gaps)
            run = RecordRun(buf, headers[start:done], [NOT_KEPT] * (done - start) if sections is None else sections)
            run.formatted = formatted
            yield run


_LONG_RANGE = 1 << 64  # offsets compare as Java longs: Long.MAX_VALUE + 1 wraps


def _log_runs(scan: LogScan) -> Iterator[object]:
    """Batch lines only: whole stretches of well-framed batches pass as BatchRun regions."""
    reported = 0
    for item in scan.runs():
        if len(scan.findings) != reported:
            yield from _scan_problems(scan, reported)
            reported = len(scan.findings)
        yield item if type(item) is BatchRun else [item]
    if len(scan.findings) != reported:
        yield from _scan_problems(scan, reported)


def _scan_problems(scan: LogScan, already: int) -> Iterator[object]:
    """Kafka's exception line for the first too-small size field, seglog notices otherwise."""
    for finding in scan.findings[already:]:
        error = scan.kafka_error
        if error is not None and finding.position == error.position:
            yield Problem(error.kafka_line(), error, finding)
        if finding.code == Code.CORRUPT_REGION:
            yield Notice(f"seglog: {finding}", finding)


def _range(path: str, start: FileStart, options: DumpOptions) -> tuple[int, int | None, int | None]:
    """(first position to read, from offset, to offset) for the requested range.

    Timestamps are resolved to offsets over the whole partition directory holding the file
    (Kafka's ListOffsets semantics: the first offset whose timestamp >= T), so every segment
    of a partition agrees on where the range starts and ends.
    """
    if not options.has_range or start.kind != LOG:
        return 0, None, None
    from_offset, to_offset = resolve_range(str(Path(path).absolute().parent), options)
    if from_offset is None:
        return 0, None, to_offset
    return LogSegment(path, start.base_offset).index_position(from_offset), from_offset, to_offset


@lru_cache(maxsize=64)
def resolve_range(directory: str, options: DumpOptions) -> tuple[int | None, int | None]:
    """Offsets bounding ``options``' range in the partition held by ``directory``."""
    from_offset, to_offset = options.from_offset, options.to_offset
    if options.from_timestamp is None and options.to_timestamp is None:
        return from_offset, to_offset
    partition = PartitionLog(directory)
    try:
        if options.from_timestamp is not None:
            found = partition.find_offset_by_timestamp(options.from_timestamp)
            if found is None:
                found = partition.log_end_offset() or 0
            from_offset = found if from_offset is None else max(from_offset, found)
        if options.to_timestamp is not None:
            after = partition.find_offset_by_timestamp(options.to_timestamp + 1)
            if after is not None:
                to_offset = after - 1 if to_offset is None else min(to_offset, after - 1)
    finally:
        partition.close()
    return from_offset, to_offset


# -- expanding command-line paths ----------------------------------------------------------------

DEFAULT_DIR_KINDS = (LOG,)


def expand_paths(paths: Iterable[str], kinds: tuple[str, ...] = DEFAULT_DIR_KINDS,
                 options: DumpOptions | None = None) -> Iterator[str]:
    """Files to dump, in order: files as given, directories expanded (a partition dir to its
    files of the requested kinds in offset order, a log dir to each partition in turn). A
    tiered partition's remote directory given with its local one (directly or in log dirs, such
    as LocalTieredStorage's ``kafka-tiered-storage``) is read as one log, where the local one is:
    the remote segments below the local log start, then the local ones."""
    groups = [(raw, partition_dirs_of(raw)) for raw in paths]  # None: a file (or no directory)
    remote_of = tiered_pairs([p for _, partitions in groups for p in partitions or ()])
    joined = set(remote_of.values())
    for raw, partitions in groups:
        if partitions is None:
            yield raw
            continue
        found = False
        for partition in partitions:
            if partition in joined:
                found = True  # dumped with its local partition
                continue
            for name in readable_partition_files(partition, kinds, options, remote_of.get(partition)):
                found = True
                yield name
        if not found:
            yield raw  # _dump_file reports why nothing came out of it


def partition_dirs_of(raw: str) -> list[str] | None:
    """The partition directories a directory argument stands for (itself, or a log dir's)."""
    path = Path(raw)
    if not path.is_dir():
        return None
    if looks_like_partition_dir(path):
        return [raw]
    try:
        return [str(Path(raw) / partition_dir.name) for partition_dir in LogDir(path).partition_dirs()]
    except OSError:
        return []


def tiered_pairs(paths: list[str]) -> dict[str, str]:
    """local partition dir -> remote partition dir, for the tiered partitions given both ways."""
    from seglog_cli.storage.tiered.tiered import is_remote_partition_dir, pair_tiered
    dirs = {Path(raw): raw for raw in paths}
    if not any(is_remote_partition_dir(path) for path in dirs):
        return {}
    _alone, pairs = pair_tiered(list(dirs))
    return {dirs[pair.local]: dirs[pair.remote] for pair in pairs if pair.local is not None}


def readable_partition_files(raw: str, kinds, options: DumpOptions | None, remote: str | None = None) -> Iterator[str]:
    try:
        files = list(_partition_files(raw, kinds, options, remote))
    except UnreadableInputError:
        files = [raw]  # an unlistable partition directory: _dump_file reports it
    yield from files


def _partition_files(raw: str, kinds, options: DumpOptions | None, remote: str | None = None) -> Iterator[str]:
    partition = PartitionLog(raw)
    if remote is not None:
        from seglog_cli.storage.tiered.tiered import joined_log
        partition = joined_log(PartitionLog(remote), partition)
    segments = partition.segments
    if options is not None and options.from_offset is not None:
        segments = partition.segments_from(options.from_offset)
    to_offset = options.to_offset if options is not None else None
    wanted = []
    for segment in segments:
        if to_offset is not None and segment.base_offset > to_offset:
            break
        for kind, path in ((LOG, segment.log_path), (INDEX, segment.index_path),
                           (TIME_INDEX, segment.time_index_path), (TXN_INDEX, segment.txn_index_path)):
            if kind in kinds and path.is_file():
                wanted.append((segment.base_offset, _KIND_ORDER[kind], str(path)))
    if SNAPSHOT in kinds:
        wanted += [(parse_segment_file_name(p.name).base_offset, _KIND_ORDER[SNAPSHOT], str(Path(raw) / p.name))
                   for p in partition.files.snapshots]
    if CHECKPOINT in kinds:
        wanted += [(parse_kraft_snapshot_name(p.name).end_offset if parse_kraft_snapshot_name(p.name) else 0,
                    _KIND_ORDER[CHECKPOINT], str(Path(raw) / p.name)) for p in partition.files.kraft_snapshots]
    for _, _, name in sorted(wanted):
        yield name


_KIND_ORDER = {LOG: 0, INDEX: 1, TIME_INDEX: 2, TXN_INDEX: 3, SNAPSHOT: 4, CHECKPOINT: 5}
