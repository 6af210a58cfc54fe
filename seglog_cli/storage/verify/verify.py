"""The engine behind ``seglog verify``: every kind of damage in files, partitions and log dirs.

:func:`verify` takes paths (segment and index files, snapshots, checkpoint files, partition
directories, log dirs), verifies each partition (in parallel processes with ``jobs > 1``) and
the log-dir files (checkpoints against each partition's log start and end offsets,
``meta.properties``, directories Kafka would refuse), and returns a :class:`VerifyReport`.
Nothing here prints; the exit status is derived from the findings' severities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log.checkpoints import TopicPartition
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.findings import Code, Finding, Severity
from seglog_cli.storage.log.files import NOT_A_FILE_DIRECTORY, regular_file_problem
from seglog_cli.storage.log.naming import OFFSET_OUT_OF_RANGE, offset_out_of_range, parse_segment_file_name
from seglog_cli.storage.log.partition_log import LogDir, find_kafka_dirs, is_log_dir, looks_like_partition_dir
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.log.snapshots import read_snapshot
from seglog_cli.storage.log.remote_layout import parse_remote_file_name
from seglog_cli.storage.tiered.tiered import pair_tiered
from seglog_cli.storage.verify.verify_partition import (
    JOURNAL_POINTER,
    TEMP_FILE_SEVERITY,
    PartitionReport,
    epochs_increasing,
    finding_order,
    verify_partition,
)
from seglog_cli.storage.log.indexes import TransactionIndex
from seglog_cli.storage.log.parallel import parallel_map
from seglog_cli.storage.verify.verify_files import OFFSET_CHECKPOINTS, TEXT_FILES, is_batch_file, read_text_file, verify_batch_file
from seglog_cli.storage.verify.verify_segment import SHALLOW, SegmentVerifier, is_last_segment

REPORT_VERSION = 1
ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
CLEAN, WARNINGS, DAMAGE, UNREADABLE = "clean", "warnings", "damage", "unreadable"


@dataclass
class VerifyReport:
    level: str
    paths: list[str]
    partitions: list[PartitionReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # outside any partition
    unreadable: list[str] = field(default_factory=list)  # inputs that could not be read at all
    files: PartitionReport = field(default_factory=lambda: PartitionReport("", None, None))  # files given alone

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for partition in self.partitions:
            out.extend(partition.findings)
        return out

    def counts(self) -> dict[str, int]:
        counts = {"error": 0, "warning": 0, "info": 0}
        for finding in self.all_findings():
            counts[finding.severity.value] += 1
        return counts

    @property
    def status(self) -> str:
        """damage > unreadable > warnings > clean. A file that cannot be read at all is not
        damage found (exit 4, not 3) unless damage was found elsewhere."""
        findings = self.all_findings()
        if any(f.severity is ERROR and f.code != Code.UNREADABLE_FILE for f in findings):
            return DAMAGE
        if self.unreadable or any(f.code == Code.UNREADABLE_FILE for f in findings):
            return UNREADABLE
        return WARNINGS if any(f.severity is WARNING for f in findings) else CLEAN

    def as_dict(self) -> dict:
        counts = self.counts()
        every = self.partitions + [self.files]
        return {
            "seglogVerifyReport": REPORT_VERSION,
            "level": self.level,
            "paths": self.paths,
            "status": self.status,
            "summary": {
                "partitions": len(self.partitions),
                "segments": sum(p.segments for p in every),
                "batches": sum(p.batches for p in every),
                "records": sum(p.records for p in every) if self.level != SHALLOW else None,
                "bytes": sum(p.bytes for p in every),
                "errors": counts["error"], "warnings": counts["warning"], "infos": counts["info"],
            },
            "unreadable": self.unreadable,
            "partitions": [partition.as_dict() for partition in self.partitions],
            "findings": [finding.as_dict() for finding in self.findings],
        }


@dataclass(frozen=True)
class VerifyOptions:
    """``jobs``: processes verifying partitions (1: this process alone); with one partition (or
    file), processes decoding its segments' records at the deep level. ``serial_seconds``:
    with several jobs, how long this process verifies alone before forking the others (so a
    run with little work never pays for their start-up)."""

    level: str = SHALLOW
    jobs: int = 1
    serial_seconds: float = 0.0


def verify(paths: list[str], options: VerifyOptions = VerifyOptions(), progress=None,
           run_partitions=None) -> VerifyReport:
    """Verify ``paths``; ``progress(bytes, batches)`` is called as work completes.
    ``run_partitions(directories, level)`` replaces the local partition verification (a Spark
    job: ``seglog_cli.spark.verify``); it returns one PartitionReport per directory, in order."""
    report = VerifyReport(options.level, list(paths))
    partition_dirs: list[Path] = []
    log_dirs: list[LogDir] = []
    for raw in paths:
        path = Path(raw)
        problem = regular_file_problem(path)
        if problem is not None and problem != NOT_A_FILE_DIRECTORY:
            report.unreadable.append(raw)
            report.findings.append(Finding(Code.UNREADABLE_FILE, ERROR, raw, None,
                                           "no such file or directory" if problem == "no such file" else problem))
        elif path.is_dir():
            if looks_like_partition_dir(path):
                partition_dirs.append(path)
            elif is_log_dir(path):
                log_dirs.append(LogDir(path))
            else:  # a tree holding log dirs (a copied disk, a backup)
                found_logs, found_partitions = find_kafka_dirs(path)
                if not found_logs and not found_partitions:
                    report.unreadable.append(raw)
                    report.findings.append(Finding(Code.UNREADABLE_FILE, ERROR, raw, None,
                                                   "no Kafka log dir or partition directory in this directory"))
                log_dirs.extend(LogDir(found) for found in found_logs)
                partition_dirs.extend(found_partitions)
        else:
            _verify_file(path, options.level, report, options.jobs)
    for log_dir in log_dirs:
        partition_dirs.extend(_log_dir_partitions(log_dir, report))
    alone, pairs = pair_tiered(partition_dirs)
    if run_partitions is not None:
        reports = list(run_partitions(alone, options.level))
    else:
        reports = _verify_partitions(alone, options, progress)
    report.partitions = _with_tiered(partition_dirs, alone, reports, pairs, options.level, progress)
    for log_dir in log_dirs:
        _log_dir_files(log_dir, report)
    report.findings.sort(key=finding_order)
    return report


def _with_tiered(directories: list[Path], alone: list[Path], reports: list[PartitionReport],
                 pairs: list, level: str, progress) -> list[PartitionReport]:
    """The reports in the order of ``directories``: a tiered partition (its remote directory,
    with its local one when given) verified as one, where its local (else remote) directory was."""
    if not pairs:
        return reports
    from seglog_cli.storage.tiered.remote_segments import REMOTE_LOG_METADATA_TOPIC, read_remote_segments
    from seglog_cli.storage.verify.verify_tiered import verify_tiered
    metadata_dirs = [d for d in alone if d.name.rsplit("-", 1)[0] == REMOTE_LOG_METADATA_TOPIC]
    metadata = None
    if metadata_dirs:
        try:
            metadata = read_remote_segments(metadata_dirs)
        except SeglogError:
            metadata = None  # the damage is reported by those partitions' own checks
    by_dir = dict(zip(alone, reports))
    for pair in pairs:
        by_dir[pair.local or pair.remote] = verify_tiered(pair.remote, pair.local, metadata, level, progress)
    return [by_dir[d] for d in directories if d in by_dir]


def _log_dir_partitions(log_dir: LogDir, report: VerifyReport) -> list[Path]:
    for directory in log_dir.unexpected_dirs():
        report.findings.append(Finding(Code.UNEXPECTED_DIRECTORY, ERROR, str(directory), None,
                                       "not named <topic>-<partition>: Kafka refuses to start with it in a log dir"))
    return log_dir.partition_dirs()


def _verify_partitions(directories: list[Path], options: VerifyOptions, progress) -> list[PartitionReport]:
    if options.jobs <= 1 or len(directories) <= 1:
        # one partition: its segments' records are decoded on every job instead (deep level)
        return [verify_partition(directory, options.level, progress, deep_jobs=options.jobs)
                for directory in directories]

    def arrived(_index: int, report: PartitionReport) -> None:
        if progress is not None:
            progress(report.bytes, report.batches)

    level = options.level
    return parallel_map(lambda directory: verify_partition(directory, level), [str(d) for d in directories],
                        options.jobs, arrived, serial_seconds=options.serial_seconds)


def _verify_file(path: Path, level: str, report: VerifyReport, deep_jobs: int = 1) -> None:
    """A file given on its own: a segment file (the segment is verified with its sibling
    indexes), a producer snapshot, a checkpoint or metadata file, a KRaft snapshot, a leftover."""
    name = path.name
    parsed = parse_segment_file_name(name)
    findings = report.findings
    stats = report.files
    if offset_out_of_range(name):
        report.unreadable.append(str(path))
        findings.append(Finding(Code.UNREADABLE_FILE, ERROR, str(path), None, OFFSET_OUT_OF_RANGE))
    elif name in TEXT_FILES:
        content = read_text_file(path, findings)
        if name == "leader-epoch-checkpoint" and content is not None:
            epochs_increasing(path, content, findings)
    elif is_batch_file(name):
        _count(stats, verify_batch_file(path, level, findings), segment=False)
    elif name.endswith(".leader_epoch_checkpoint") and parse_remote_file_name(name) is not None:
        from seglog_cli.storage.verify.verify_tiered import remote_epoch_checkpoint

        remote_epoch_checkpoint(path, findings)
    elif parsed is not None and parsed.is_temp or name.endswith(".tmp"):
        suffix = next((s for s in TEMP_FILE_SEVERITY if name.endswith(s)), ".deleted")
        severity, why = TEMP_FILE_SEVERITY[suffix]
        findings.append(Finding(Code.STRAY_TEMP_FILE, severity, str(path), None, f"{suffix} file: {why}"))
    elif parsed is not None and parsed.suffix in (".log", ".index", ".timeindex", ".txnindex"):
        log_path = path.with_name(name[: name.index(parsed.suffix)] + ".log")
        if not log_path.is_file():
            findings.append(Finding(Code.ORPHAN_INDEX, WARNING, str(path), None,
                                    "an index file without its .log: Kafka deletes it at start-up"))
            return
        segment = LogSegment(log_path)
        _count(stats, SegmentVerifier(segment, findings, active=is_last_segment(log_path), level=level,
                                      deep_jobs=deep_jobs).run())
        _txn_index_alone(segment, findings)
    elif parsed is not None and parsed.suffix == ".snapshot":
        try:
            read_snapshot(path)
        except SeglogError as exc:
            findings.append(Finding(Code.SNAPSHOT_CORRUPT, WARNING, str(path), exc.position,
                                    f"{exc.message} (Kafka deletes it and rebuilds the producer state from the log)"))
    else:
        report.unreadable.append(str(path))
        findings.append(Finding(Code.UNREADABLE_FILE, ERROR, str(path), None,
                                "not a file seglog verifies (segment, index, snapshot, checkpoint or metadata "
                                "files of a Kafka log dir)"))


def _count(stats: PartitionReport, summary, segment: bool = True) -> None:
    stats.segments += segment
    stats.batches += summary.batches
    stats.records += summary.records
    stats.bytes += summary.size


def _txn_index_alone(segment: LogSegment, findings: list[Finding]) -> None:
    """A segment's .txnindex on its own: readable and sane (matching it against the ABORT
    markers needs the whole partition)."""
    if not segment.txn_index_path.is_file():
        return
    try:
        index = TransactionIndex(segment.txn_index_path, segment.base_offset)
        list(index.aborted_txns())
        index.sanity_check()
    except SeglogError as exc:
        findings.append(Finding(Code.TXN_INDEX_SANITY_FAILED, WARNING, str(segment.txn_index_path), exc.position,
                                f"{exc.message} (Kafka recovers this segment at start-up)"))


# -- log-dir files ------------------------------------------------------------------------------

def _log_dir_files(log_dir: LogDir, report: VerifyReport) -> None:
    ranges = {}
    for partition in report.partitions:
        if partition.topic is not None and Path(partition.path).parent == log_dir.path:
            ranges[TopicPartition(partition.topic, partition.partition)] = (partition.log_start_offset,
                                                                           partition.log_end_offset)
    checkpoints = {}
    for path, why in log_dir.unusable_root_files():
        report.findings.append(Finding(Code.UNREADABLE_FILE, ERROR, str(path), None, why))
    for path in log_dir.root_files():
        name = path.name
        if name in OFFSET_CHECKPOINTS:
            content = read_text_file(path, report.findings)
            if content is not None:
                checkpoints[path] = content
        elif name in TEXT_FILES:
            read_text_file(path, report.findings)
        elif is_batch_file(name):
            _count(report.files, verify_batch_file(path, report.level, report.findings), segment=False)
        elif name == JOURNAL_POINTER:
            report.findings.append(Finding(Code.INTERRUPTED_SEGLOG_RUN, WARNING, str(path), None,
                                           "a seglog run that writes was interrupted here; the next writing seglog "
                                           "command (or seglog undo) rolls it back first (a broker ignores this "
                                           "file and recovers what the run was changing)"))
        elif name.endswith(".tmp"):
            severity, why = TEMP_FILE_SEVERITY[".tmp"]
            report.findings.append(Finding(Code.STRAY_TEMP_FILE, severity, str(path), None, f".tmp file: {why}"))
    log_starts = next((content for path, content in checkpoints.items()
                       if path.name == "log-start-offset-checkpoint"), {})
    for path, content in checkpoints.items():
        _check_offsets(path, content, ranges, log_starts, report.findings)


_PAST_END = {
    "log-start-offset-checkpoint": (ERROR, "Kafka deletes every segment of a log whose end is below its log start offset"),
    "recovery-point-offset-checkpoint": (WARNING, "Kafka recovers from the log end instead"),
    "replication-offset-checkpoint": (WARNING, "the high watermark is beyond the data on this disk"),
    "cleaner-offset-checkpoint": (WARNING, "the cleaner resets it to the log start"),
}


def _check_offsets(path: Path, offsets: dict, ranges: dict, log_starts: dict, findings: list[Finding]) -> None:
    """Each entry against its partition's offsets on disk. The log start offset is Kafka's:
    ``max(log-start-offset-checkpoint, first segment's base offset)`` (LogLoader; with tiered
    storage the checkpoint alone, which offline we cannot know)."""
    name = path.name
    for tp, offset in offsets.items():
        if tp not in ranges:
            findings.append(Finding(Code.CHECKPOINT_UNKNOWN_PARTITION, INFO, str(path), None,
                                    f"{tp.topic}-{tp.partition}: no such partition directory in this log dir"))
            continue
        first_base, end = ranges[tp]
        if end is None:
            continue
        start = first_base
        if tp in log_starts and log_starts[tp] <= end:  # (past the end is reported on its own)
            start = max(first_base, log_starts[tp])
        label = f"{tp.topic}-{tp.partition} {offset}"
        if offset > end:
            severity, why = _PAST_END[name]
            findings.append(Finding(Code.CHECKPOINT_PAST_LOG_END, severity, str(path), None,
                                    f"{label} is past the log end offset {end}: {why}", offset=offset))
        elif start is None or offset >= start:
            continue
        elif name == "cleaner-offset-checkpoint":
            findings.append(Finding(Code.CHECKPOINT_BEFORE_LOG_START, WARNING, str(path), None,
                                    f"{label} is below the log start offset {start}: the cleaner resets it",
                                    offset=offset))
        elif name == "replication-offset-checkpoint":
            findings.append(Finding(Code.CHECKPOINT_BEFORE_LOG_START, WARNING, str(path), None,
                                    f"{label} is below the log start offset {start}: Kafka raises the high "
                                    "watermark to the log start (a stale checkpoint, or segments removed by hand)",
                                    offset=offset))
        elif name == "log-start-offset-checkpoint":
            findings.append(Finding(Code.CHECKPOINT_BEFORE_LOG_START, INFO, str(path), None,
                                    f"{label} is below the first segment's base offset {first_base}: Kafka starts "
                                    "the log at the segment (normal for a tiered topic; otherwise segments were "
                                    "removed outside Kafka or the checkpoint is stale)", offset=offset))


__all__ = ["CLEAN", "DAMAGE", "UNREADABLE", "WARNINGS", "VerifyOptions", "VerifyReport", "verify"]
