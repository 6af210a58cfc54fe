"""Verifying a partition directory: its segments in order, and what ties them together.

Beyond each segment (``verify_segment``): offsets across segments, orphan index files,
``.deleted``/``.cleaned``/``.swap`` leftovers, producer snapshots (CRC, version, the stray and
past-the-end ones Kafka deletes at start-up), the ``.txnindex`` files against the ABORT markers
in the log (Kafka's ``ProducerStateManager`` rules, §11-§12), the leader-epoch-checkpoint and
``partition.metadata``.
"""

from __future__ import annotations

import bisect
import os
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.control import parse_control_record
from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.log.findings import Code, Finding, Severity
from seglog_cli.storage.log.indexes import TransactionIndex
from seglog_cli.storage.log.naming import parse_partition_dir_name, parse_segment_file_name
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.log.segments import join_name
from seglog_cli.storage.log.snapshots import check_snapshot
from seglog_cli.storage.verify.verify_files import read_text_file, verify_batch_file
from seglog_cli.storage.verify.verify_segment import SHALLOW, SegmentSummary, SegmentVerifier, TxnEvent

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
JOURNAL_POINTER = ".seglog-journal"  # journal.POINTER (not imported: verify stays off the write path)
TEMP_FILE_SEVERITY = {
    ".deleted": (INFO, "scheduled for deletion (removed after file.delete.delay.ms)"),
    ".cleaned": (WARNING, "left by an interrupted log cleaning or segment split; Kafka deletes it at start-up"),
    ".swap": (WARNING, "left by an interrupted segment swap; Kafka completes the swap at start-up"),
    ".tmp": (INFO, "left by a checkpoint write interrupted before its rename; harmless, Kafka overwrites it"),
}


@dataclass
class PartitionReport:
    path: str
    topic: str | None
    partition: int | None
    segments: int = 0
    batches: int = 0
    records: int = 0
    bytes: int = 0
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    findings: list[Finding] = field(default_factory=list)
    remote_path: str | None = None  # a tiered partition's remote directory, read with ``path``

    def as_dict(self) -> dict:
        out = {"path": self.path, "topic": self.topic, "partition": self.partition, "segments": self.segments,
               "batches": self.batches, "records": self.records, "bytes": self.bytes,
               "logStartOffset": self.log_start_offset, "logEndOffset": self.log_end_offset,
               "findings": [finding.as_dict() for finding in self.findings]}
        if self.remote_path is not None:
            out["remotePath"] = self.remote_path
        return out


def verify_partition(path: str | Path, level: str = SHALLOW, progress=None, deep_jobs: int = 1) -> PartitionReport:
    """Verify the partition directory at ``path``; ``progress(bytes)`` is called per segment.
    ``deep_jobs``: processes decoding each segment's records at the deep level."""
    return verify_partition_log(path, level, progress, deep_jobs)[0]


def verify_partition_log(path: str | Path, level: str = SHALLOW, progress=None,
                         deep_jobs: int = 1) -> tuple[PartitionReport, PartitionLog | None, list[SegmentSummary]]:
    """:func:`verify_partition`, also returning the partition read and each segment's summary
    (for checks across directories: a tiered partition's remote and local logs)."""
    report, log = open_partition_report(path)
    if log is None:
        return report, None, []
    results = []
    for i in range(len(log.segments)):
        results.append(verify_segment_at(log, i, level, deep_jobs))
        if progress is not None:
            progress(results[-1][0].size, results[-1][0].batches)
    summaries = finish_partition(report, log, results, level)
    return report, log, summaries


def open_partition_report(path: str | Path) -> tuple[PartitionReport, PartitionLog | None]:
    """The partition at ``path`` listed, and its report with the files it cannot use; no log
    (and the reason in the report) when the directory cannot be listed."""
    try:
        log = PartitionLog(path)
    except UnreadableInputError as exc:  # a directory that cannot be listed
        name = parse_partition_dir_name(Path(path).name)
        report = PartitionReport(str(path), name and name.topic, name and name.partition)
        report.findings.append(Finding(Code.UNREADABLE_FILE, ERROR, str(path), None, exc.message))
        return report, None
    report = PartitionReport(log.directory, log.topic, log.partition)
    for entry, why in log.files.unusable:
        report.findings.append(Finding(Code.UNREADABLE_FILE, ERROR, str(entry), None, why))
    return report, log


def verify_segment_at(log: PartitionLog, i: int, level: str = SHALLOW,
                      deep_jobs: int = 1) -> tuple[SegmentSummary, list[Finding]]:
    """The checks of the partition's ``i``-th segment alone (the last one is the active
    segment): its summary and findings. Independent of the other segments, so segments can be
    verified anywhere, in any order (``seglog verify --spark``), and handed to
    :func:`finish_partition` in order."""
    findings: list[Finding] = []
    segment = log.segments[i]
    summary = SegmentVerifier(segment, findings, active=i == len(log.segments) - 1, level=level,
                              deep_jobs=deep_jobs).run()
    segment.close()
    return summary, findings


def finish_partition(report: PartitionReport, log: PartitionLog, results: list[tuple[SegmentSummary, list[Finding]]],
                     level: str = SHALLOW) -> list[SegmentSummary]:
    """The partition's report from each segment's checks (:func:`verify_segment_at`, in
    segment order) and the checks across segments and files, done once: offsets between
    segments, totals, orphan and leftover files, snapshots, leader epochs, the ``.txnindex``
    files against the markers. Returns the summaries."""
    findings = report.findings
    summaries: list[SegmentSummary] = []
    for summary, found in results:
        findings.extend(found)
        if summaries:
            _between(summaries[-1], summary, findings)
        summaries.append(summary)
        report.segments += 1
        report.batches += summary.batches
        report.records += summary.records
        report.bytes += summary.size
    if log.segments:
        report.log_start_offset = log.segments[0].base_offset
        last = next((s for s in reversed(summaries) if s.last_offset is not None), None)
        report.log_end_offset = last.last_offset + 1 if last is not None else log.segments[-1].base_offset
    _files(log, report, level)
    _leader_epochs(log, report, summaries)
    _transactions(log, summaries, findings, report.log_end_offset)
    _rebuilt_at_start_up(log, findings)
    findings.sort(key=finding_order)
    return summaries


REBUILT_BY_RECOVERY = {Code.INDEX_MISSING, Code.TIME_INDEX_MISSING, Code.INDEX_SANITY_FAILED, Code.INDEX_NOT_TRIMMED,
                       Code.INDEX_ENTRY_NOT_BATCH_START, Code.INDEX_OFFSET_MISMATCH, Code.INDEX_NOT_INCREASING,
                       Code.INDEX_ENTRY_PAST_LOG_END, Code.TIME_INDEX_OUT_OF_ORDER, Code.TIME_INDEX_OFFSET_NOT_FOUND,
                       Code.TIME_INDEX_MISMATCH, Code.TIME_INDEX_LAST_ENTRY_STALE, Code.TXN_INDEX_MISMATCH,
                       Code.TXN_INDEX_SANITY_FAILED}


def _rebuilt_at_start_up(log: PartitionLog, findings: list[Finding]) -> None:
    """Index damage in segments Kafka's next start-up recovers is not an error: without
    ``.kafka_cleanshutdown`` every segment from the one holding the recovery point on is
    recovered (``LogSegment.recover`` resets and rebuilds its ``.index``, ``.timeindex`` and
    ``.txnindex``), so those files are never used as they are. Known only when the log dir has
    its ``recovery-point-offset-checkpoint`` (a partition copied alone stays judged strictly)."""
    log_dir = _log_dir_of(log)
    checkpoint = join_name(log_dir, "recovery-point-offset-checkpoint")
    if (log.name is None or os.path.exists(join_name(log_dir, ".kafka_cleanshutdown"))
            or not os.path.isfile(checkpoint)):
        return
    from seglog_cli.storage.log.checkpoints import TopicPartition, offset_checkpoint_view
    try:
        point = offset_checkpoint_view(checkpoint).get(TopicPartition(log.topic, log.partition), 0)
    except SeglogError:
        point = 0  # Kafka reads an unreadable checkpoint as empty
    bases = [segment.base_offset for segment in log.segments]
    if not bases:
        return
    floor = bases[max(0, bisect.bisect_right(bases, point) - 1)]
    for i, finding in enumerate(findings):
        parsed = parse_segment_file_name(Path(finding.path).name)
        if (finding.severity is ERROR and finding.code in REBUILT_BY_RECOVERY and parsed is not None
                and parsed.base_offset >= floor):
            findings[i] = replace(finding, severity=WARNING, message=(
                f"{finding.message} (Kafka rebuilds this segment's indexes at start-up: no clean shutdown, and the "
                f"segment is at or past the recovery point {point})"))


def finding_order(finding: Finding):
    """Findings by file, then position (whole-file findings first), then code: the same order
    whatever order the checks ran in."""
    return finding.path, -1 if finding.position is None else finding.position, finding.code


def _between(previous: SegmentSummary, current: SegmentSummary, findings: list[Finding]) -> None:
    if previous.last_offset is None:
        return
    if current.base_offset <= previous.last_offset:  # a first batch below its own base: SEGMENT_BASE_MISMATCH
        findings.append(Finding(Code.OVERLAPPING_SEGMENTS, ERROR, current.path, 0,
                                f"starts at offset {current.first_offset if current.first_offset is not None else current.base_offset} "
                                f"(base {current.base_offset}), not after the previous segment's last offset "
                                f"{previous.last_offset}", offset=current.base_offset))
    elif current.base_offset > previous.last_offset + 1:
        findings.append(Finding(Code.OFFSET_GAP, INFO, current.path, 0,
                                f"offsets {previous.last_offset + 1}..{current.base_offset - 1} are in no segment "
                                f"(removed by compaction)", offset=previous.last_offset + 1))


def _files(log: PartitionLog, report: PartitionReport, level: str) -> None:
    findings = report.findings
    bases = {segment.base_offset for segment in log.segments}
    stems = {segment.log_file[:-4] for segment in log.segments if segment.log_file.endswith(".log")}
    files = log.files
    for name, path in zip(files.names("index_files"), files.files("index_files")):
        if path.rpartition(".")[0] in stems:
            continue  # the index of a listed segment (same name up to the suffix: same base offset)
        parsed = parse_segment_file_name(name)
        if parsed is not None and parsed.base_offset not in bases:
            if (log.path.parent / JOURNAL_POINTER).is_file():  # seglog writes a new segment's .log last
                findings.append(Finding(Code.ORPHAN_INDEX, INFO, path, None,
                                        "an index file without its .log, in a log dir where a seglog run was "
                                        "interrupted (the next writing seglog command rolls it back; Kafka deletes "
                                        "the file at start-up)"))
                continue
            findings.append(Finding(Code.ORPHAN_INDEX, WARNING, path, None,
                                    "an index file without its .log: Kafka deletes it at start-up"))
    for name, path in zip(files.names("temp_files"), files.files("temp_files")):
        suffix = next((s for s in TEMP_FILE_SEVERITY if name.endswith(s)), None)
        if suffix is not None:
            severity, why = TEMP_FILE_SEVERITY[suffix]
            findings.append(Finding(Code.STRAY_TEMP_FILE, severity, path, None, f"{suffix} file: {why}"))
    for name, path in zip(files.names("other_files"), files.files("other_files")):
        if name.endswith(".tmp"):
            severity, why = TEMP_FILE_SEVERITY[".tmp"]
            findings.append(Finding(Code.STRAY_TEMP_FILE, severity, path, None, f".tmp file: {why}"))
    _snapshots(log, report)
    for name in ("partition.metadata", "quorum-state"):
        if log.has_file(name):
            read_text_file(join_name(log.directory, name), findings)
    for name, path in zip(files.names("kraft_snapshots"), files.files("kraft_snapshots")):
        if not name.endswith(".checkpoint"):
            continue  # .checkpoint.part / .checkpoint.deleted: temp files, listed above
        summary = verify_batch_file(path, level, findings)
        report.batches += summary.batches
        report.records += summary.records
        report.bytes += summary.size


def _snapshots(log: PartitionLog, report: PartitionReport) -> None:
    findings = report.findings
    bases = sorted(segment.base_offset for segment in log.segments)
    offsets = []
    for path in log.files.files("snapshots"):
        try:
            offset = check_snapshot(path)
        except SeglogError as exc:
            findings.append(Finding(Code.SNAPSHOT_CORRUPT, WARNING, path, exc.position,
                                    f"{exc.message} (Kafka deletes it and rebuilds the producer state from the log)"))
            continue
        offsets.append((offset, path))
    if not offsets or (log.name is not None and log.name.kind == "remote"):
        return  # a remote fileset's snapshot stands for its segment's end, not the offset in its name
    highest = max(offset for offset, _ in offsets)
    for offset, path in offsets:
        if report.log_end_offset is not None and offset > report.log_end_offset:
            findings.append(Finding(Code.SNAPSHOT_PAST_LOG_END, WARNING, path, None,
                                    f"snapshot at offset {offset} is past the log end offset {report.log_end_offset}: "
                                    f"Kafka deletes it at start-up", offset=offset))
        elif offset not in bases and not (offset == highest and bases and offset >= bases[-1]):
            findings.append(Finding(Code.SNAPSHOT_STRAY, INFO, path, None,
                                    f"snapshot at offset {offset} is at no segment's base offset: Kafka deletes it "
                                    f"at start-up", offset=offset))


def _log_start_offset(log: PartitionLog) -> int:
    """The partition's log start offset as far as the log dir's checkpoint says (0 when unknown)."""
    if log.name is None:
        return 0
    path = join_name(_log_dir_of(log), "log-start-offset-checkpoint")
    if not os.path.isfile(path):
        return 0
    from seglog_cli.storage.log.checkpoints import TopicPartition, offset_checkpoint_view
    try:
        return offset_checkpoint_view(path).get(TopicPartition(log.topic, log.partition), 0)
    except SeglogError:
        return 0


def _log_dir_of(log: PartitionLog) -> str:
    """``str(log.path.parent)``: the directory holding the partition directory."""
    return os.path.dirname(log.directory) or "."


def _leader_epochs(log: PartitionLog, report: PartitionReport, summaries: list[SegmentSummary]) -> None:
    """The leader-epoch-checkpoint: readable, increasing, within the log, and naming the epoch of
    every batch (Kafka answers OffsetsForLeaderEpoch from it; a missing epoch makes followers
    truncate at the wrong offset). Kafka rebuilds it only for the segments it recovers."""
    if not log.has_file("leader-epoch-checkpoint"):
        return
    path = join_name(log.directory, "leader-epoch-checkpoint")
    entries = read_text_file(path, report.findings)
    if entries is None:
        return
    for previous, entry in zip(entries, entries[1:]):
        if entry.epoch <= previous.epoch or entry.start_offset < previous.start_offset:
            report.findings.append(Finding(
                Code.LEADER_EPOCH_NOT_INCREASING, ERROR, path, None,
                f"epoch {entry.epoch} at offset {entry.start_offset} follows epoch {previous.epoch} at offset "
                f"{previous.start_offset}", offset=entry.start_offset))
            return
    end = report.log_end_offset
    for entry in entries:
        if end is not None and entry.start_offset > end:
            report.findings.append(Finding(
                Code.LEADER_EPOCH_PAST_LOG_END, WARNING, path, None,
                f"epoch {entry.epoch} starts at offset {entry.start_offset}, past the log end offset {end}: Kafka "
                f"truncates the cache at start-up", offset=entry.start_offset))
    starts = [entry.start_offset for entry in entries]
    firsts = []  # (epoch, first offset) where each epoch starts, in log order
    seen = set()
    for summary in summaries:
        for _position, epoch, first in summary.epochs:
            if epoch not in seen:
                seen.add(epoch)
                firsts.append((epoch, first))
    log_start = _log_start_offset(log)
    for n, (epoch, first) in enumerate(firsts):
        # batches below the log start offset are no longer part of the log (DeleteRecords, the share
        # coordinator's pruning): Kafka cut the checkpoint back to the log start (truncateFromStart)
        ends = firsts[n + 1][1] if n + 1 < len(firsts) else None
        if ends is not None and ends <= log_start:
            continue
        first = max(first, log_start)
        i = bisect.bisect_right(starts, first) - 1
        if i >= 0 and entries[i].epoch == epoch:
            continue
        said = f"epoch {entries[i].epoch} from offset {starts[i]}" if i >= 0 else "no epoch"
        report.findings.append(Finding(
            Code.LEADER_EPOCH_NOT_IN_CHECKPOINT, WARNING, path, None,
            f"batches from offset {first} carry leader epoch {epoch}, but the checkpoint gives {said} there "
            f"(Kafka rebuilds it only when it recovers those segments)", offset=first))


# -- transaction index ---------------------------------------------------------------------------

def _transactions(log: PartitionLog, summaries: list[SegmentSummary], findings: list[Finding],
                  log_end: int | None = None) -> None:
    """Replay the transactional batches as ProducerStateManager does and compare the aborted
    transactions with each segment's ``.txnindex``. Batches that could not be read (damage
    reported on its own) leave the replay uncertain from there on: entries that may depend on
    them are not judged."""
    expected: dict[int, list[tuple]] = defaultdict(list)  # segment base -> (pid, first, last, lso)
    markers: dict[int, set[tuple[int, int]]] = defaultdict(set)  # segment base -> {(pid, marker offset)}
    ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
    uncertain_from: float = float("inf")  # the first offset the replay may have missed
    for segment, summary in zip(log.segments, summaries):
        if summary.unknown_offsets:
            uncertain_from = min(uncertain_from, min(lo for lo, _ in summary.unknown_offsets) + 1)
        events = summary.txn_events
        if not events:
            continue
        markers_of = _marker_types(segment, events, findings)
        for event in events:
            if not event.is_control:
                ongoing.setdefault(event.producer_id, event.base_offset)
                continue
            marker = markers_of.get(event.position)
            if marker is None:
                continue
            if marker == "ABORT":
                markers[segment.base_offset].add((event.producer_id, event.base_offset))
            first = ongoing.pop(event.producer_id, None)
            if first is not None and marker == "ABORT":
                stable = min(ongoing.values(), default=event.base_offset + 1)
                expected[segment.base_offset].append((event.producer_id, first, event.base_offset, stable))
    for segment, summary in zip(log.segments, summaries):
        _compare_txn_index(segment, expected.get(segment.base_offset, []), markers.get(segment.base_offset, set()),
                           summary.unknown_offsets, uncertain_from, findings, log_end)


def _marker_types(segment, events: list[TxnEvent], findings) -> dict[int, str]:
    """position -> "ABORT"/"COMMIT" for the control batches among ``events``."""
    out = {}
    controls = [event for event in events if event.is_control]
    if not controls:
        return out
    mapped = segment.log
    for event in controls:
        batch = next(iter(LogScan(mapped, event.position, resync=False, bounded=True)), None)
        if batch is None:
            continue
        try:
            for record in read_records(mapped.buffer, batch, str(segment.log_path)):
                control = parse_control_record(record)
                if control.is_transaction_marker:
                    out[event.position] = control.type_name
                break
        except SeglogError:
            continue  # reported by the deep level as CONTROL_RECORD_INVALID / RECORD_PARSE_ERROR
    segment.close()
    return out


def _compare_txn_index(segment, expected: list[tuple], abort_markers: set, unknown: list, uncertain_from: float,
                       findings: list[Finding], log_end: int | None = None) -> None:
    path = segment.txn_index_file
    has_index = segment.has_file(path)
    if not expected and not has_index:
        return  # no entry expected and none written
    actual = []
    if has_index:
        index = TransactionIndex(path, segment.base_offset)
        try:
            actual = [(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in index.aborted_txns()]
            index.sanity_check()
        except SeglogError as exc:
            findings.append(Finding(Code.TXN_INDEX_SANITY_FAILED, WARNING, str(path), exc.position,
                                    f"{exc.message} (Kafka recovers this segment at start-up)"))
    by_marker = {(pid, last): (first, lso) for pid, first, last, lso in actual}
    for pid, first, last, lso in expected:
        found = by_marker.get((pid, last))
        if found is None:
            findings.append(Finding(Code.TXN_INDEX_MISMATCH, ERROR, str(path), None,
                                    f"the ABORT marker at offset {last} (producer {pid}, transaction from offset "
                                    f"{first}) has no .txnindex entry: read_committed consumers would read the "
                                    f"aborted records", offset=last))
        elif found[0] == first and lso == last + 1 and found[1] > lso:
            # A follower appends a fetched chunk of batches at once and computes the last stable
            # offset after updating every producer: a transaction another producer opened later
            # in the same chunk becomes the bound. Recovery (batch by batch) writes last + 1.
            findings.append(Finding(Code.TXN_INDEX_MISMATCH, INFO, str(path), None,
                                    f"entry for producer {pid} aborted at offset {last} has last stable offset "
                                    f"{found[1]} where recovery would write {lso}: written by a follower appending "
                                    f"several batches at once (both valid)", offset=last))
        elif found != (first, lso) and last < uncertain_from:
            findings.append(Finding(Code.TXN_INDEX_MISMATCH, ERROR, str(path), None,
                                    f"entry for producer {pid} aborted at offset {last} says first offset {found[0]}, "
                                    f"last stable offset {found[1]}; the log gives {first} and {lso}", offset=last))
    known = {(pid, last) for pid, _, last, _ in expected}
    for pid, first, last, lso in actual:
        if (pid, last) in known or (pid, last) in abort_markers:
            continue
        if log_end is not None and last >= log_end:
            findings.append(Finding(Code.TXN_INDEX_MISMATCH, INFO, str(path), None,
                                    f"entry for producer {pid} aborted at offset {last}, at or past the log end offset "
                                    f"{log_end} (an interrupted append); Kafka's recovery rebuilds the index",
                                    offset=last))
            continue
        if any(lo < last < hi for lo, hi in unknown):
            continue  # its marker may be in the damage reported on the .log
        findings.append(Finding(Code.TXN_INDEX_MISMATCH, ERROR, str(path), None,
                                f"entry for producer {pid} aborted at offset {last} has no ABORT marker there "
                                f"in the log", offset=last))


def epochs_increasing(path, entries, findings: list[Finding]) -> bool:
    """A leader-epoch checkpoint's entries with epochs and start offsets increasing, as Kafka's
    ``LeaderEpochFileCache`` requires; else one ``LEADER_EPOCH_NOT_INCREASING`` finding, False."""
    for previous, entry in zip(entries, entries[1:]):
        if entry.epoch <= previous.epoch or entry.start_offset < previous.start_offset:
            findings.append(Finding(Code.LEADER_EPOCH_NOT_INCREASING, ERROR, str(path), None,
                                    f"epoch {entry.epoch} at offset {entry.start_offset} follows epoch "
                                    f"{previous.epoch} at offset {previous.start_offset}", offset=entry.start_offset))
            return False
    return True
