"""Verifying a tiered partition: its remote segments (LocalTieredStorage layout) and, when
given, its local partition directory and the ``__remote_log_metadata`` records about it.

How Kafka joins the two logs (Kafka 4.2, core/src/main/java/kafka/log/remote/RemoteLogManager.java
and storage/.../internals/log/UnifiedLog): a rolled local segment is copied whole
(``copyLogSegment``: metadata ``startOffset`` = its base offset, ``endOffset`` = the next
segment's base offset - 1, ``segmentSizeInBytes`` = its ``.log`` size, ``segmentLeaderEpochs`` =
the epoch cache clipped to the segment), and local retention deletes a local segment only once
its offsets are in remote storage (``highestOffsetInRemoteStorage``), so the local log start
offset is at most the remote log's end + 1 and the two logs may overlap with identical
copies. Remote segments may overlap each other too (a new leader copies from its own log:
``isRemoteSegmentWithinLeaderEpochs``' comment), again with the same batches. A fetch below
the local log start offset is served from remote storage, so offsets in neither log are lost
(never compaction's doing: ``validateNoRemoteStorageForCompactedTopic`` in storage/src/main/java/
org/apache/kafka/storage/internals/log/LogConfig.java refuses remote storage on compacted topics).

Leader epochs: ``isRemoteSegmentWithinLeaderEpochs`` accepts a remote segment only when its
epochs are those of the partition's lineage (the leader epoch cache) over its offsets and it
ends below the log end offset; anything else is a segment from another history (an unclean
election, a fork), which Kafka's retention deletes and readers never see.

Checks, with their codes (docs/tiered-remote.md, "Tiered storage"): ``TIERED_OFFSET_GAP``, ``TIERED_OVERLAP``,
``TIERED_EPOCH_MISMATCH``, ``TIERED_REMOTE_PAST_LOG_END``, ``TIERED_TOPIC_ID_MISMATCH``,
``REMOTE_FILESET_INCOMPLETE`` and, with metadata, ``REMOTE_METADATA_MISMATCH``,
``REMOTE_METADATA_STATE``, ``REMOTE_SEGMENT_WITHOUT_METADATA``, ``REMOTE_METADATA_WITHOUT_SEGMENT``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.checkpoints import EpochEntry, read_leader_epoch_checkpoint, read_partition_metadata
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.findings import Code, Finding, Severity
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.remote_layout import (
    LEADER_EPOCH_CHECKPOINT,
    SEGMENT,
    RemoteFileset,
    group_filesets,
)
from seglog_cli.storage.tiered.remote_segments import COPY_SEGMENT_FINISHED, RemoteSegments
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.verify.verify_partition import PartitionReport, epochs_increasing, finding_order, verify_partition_log
from seglog_cli.storage.verify.verify_segment import SHALLOW, SegmentSummary

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
_REPLACED = (Code.OFFSET_GAP, Code.OVERLAPPING_SEGMENTS)  # judged here with tiered storage's rules


@dataclass
class _Remote:
    """One remote fileset with what its ``.log`` holds."""

    fileset: RemoteFileset
    segment: LogSegment
    summary: SegmentSummary

    @property
    def last_offset(self) -> int | None:
        return self.summary.last_offset

    @property
    def path(self) -> str:
        return str(self.segment.log_path)


def verify_tiered(remote_dir: Path, local_dir: Path | None = None, metadata: RemoteSegments | None = None,
                  level: str = SHALLOW, progress=None) -> PartitionReport:
    """One report for the partition: the remote directory's findings, the local directory's,
    and those of the two read as one log."""
    remote_report, remote_log, remote_summaries = verify_partition_log(remote_dir, level, progress)
    findings = [f for f in remote_report.findings if f.code not in _REPLACED]
    if remote_log is None:
        remote_report.findings = findings
        return remote_report
    remotes = _remotes(remote_log, remote_summaries, findings)
    local_report = local_log = None
    local_summaries: list[SegmentSummary] = []
    if local_dir is not None:
        local_report, local_log, local_summaries = verify_partition_log(local_dir, level, progress)
        findings.extend(local_report.findings)
    report = _joined_report(remote_report, local_report)
    _remote_continuity(remotes, findings)
    lineage = _lineage(local_log, remotes)
    if local_log is not None and local_report is not None:
        _topic_id(remote_log, local_log, findings)
        _boundary(remotes, local_log, local_summaries, local_report, findings)
    if lineage is not None:
        _epochs(remotes, lineage, findings)
    if metadata is not None:
        _metadata(remote_log, remotes, metadata, findings)
    findings.sort(key=finding_order)
    report.findings = findings
    return report


def _joined_report(remote: PartitionReport, local: PartitionReport | None) -> PartitionReport:
    if local is None:
        return remote
    report = PartitionReport(local.path, local.topic, local.partition)
    for part in (remote, local):
        report.segments += part.segments
        report.batches += part.batches
        report.records += part.records
        report.bytes += part.bytes
    starts = [s for s in (remote.log_start_offset, local.log_start_offset) if s is not None]
    report.log_start_offset = min(starts) if starts else None
    ends = [e for e in (remote.log_end_offset, local.log_end_offset) if e is not None]
    report.log_end_offset = local.log_end_offset if local.log_end_offset is not None else max(ends, default=None)
    report.remote_path = remote.path
    return report


def _remotes(log: PartitionLog, summaries: list[SegmentSummary], findings: list[Finding]) -> list[_Remote]:
    """The filesets of the remote directory, each with its segment's summary."""
    by_path = {summary.path: summary for summary in summaries}
    filesets, _others = group_filesets(entry.name for entry in log.path.iterdir())
    out = []
    for fileset in filesets:
        if fileset.missing:
            where = log.path / (fileset.name(SEGMENT) or next(iter(fileset.files.values())))
            findings.append(Finding(Code.REMOTE_FILESET_INCOMPLETE, ERROR, str(where), None,
                                    f"remote segment {fileset.segment_id} (offset {fileset.start_offset}) lacks its "
                                    f"{', '.join(fileset.missing)} file: LocalTieredStorage refuses the fileset "
                                    f"(\"Invalid fileset, missing files\") and fetches from it fail",
                                    offset=fileset.start_offset))
        name = fileset.name(SEGMENT)
        if name is None:
            continue
        path = log.path / name
        summary = by_path.get(str(path))
        if summary is not None:
            out.append(_Remote(fileset, LogSegment(path, fileset.start_offset), summary))
    return out


def _remote_continuity(remotes: list[_Remote], findings: list[Finding]) -> None:
    """Remote segments in offset order: no offset missing between them; where two overlap, the
    same batches in both."""
    covered = None  # highest offset held by the remote segments so far
    earlier: list[_Remote] = []
    for remote in remotes:
        if remote.last_offset is None:
            continue
        if covered is not None and remote.fileset.start_offset > covered + 1:
            findings.append(Finding(Code.TIERED_OFFSET_GAP, ERROR, remote.path, 0,
                                    f"offsets {covered + 1}..{remote.fileset.start_offset - 1} are in no remote "
                                    f"segment: fetches of them fail (a remote segment is missing)",
                                    offset=covered + 1))
        elif covered is not None and remote.fileset.start_offset <= covered:
            _compare_overlap(earlier, remote.segment, remote.fileset.start_offset, covered, findings)
        earlier.append(remote)
        covered = remote.last_offset if covered is None else max(covered, remote.last_offset)


def _batches_between(segment: LogSegment, lo: int, hi: int) -> dict[int, tuple]:
    """base offset -> (last offset, crc, leader epoch, position) of the batches of ``segment``
    holding offsets in ``lo..hi``."""
    out = {}
    for batch in LogScan(segment.log, 0, resync=False, check_crc=False):
        if batch.last_offset < lo:
            continue
        if batch.base_offset > hi:
            break
        out[batch.base_offset] = (batch.last_offset, batch.crc, batch.partition_leader_epoch, batch.position)
    segment.close()
    return out


def _compare_overlap(earlier: list, later: LogSegment, lo: int, hi: int, findings: list[Finding]) -> None:
    """The batches of ``later`` in ``lo..hi`` against those of the ``earlier`` segments (remote
    ones, or local ones for the boundary): an identical copy is what Kafka leaves; anything else
    is two histories for the same offsets."""
    before: dict[int, tuple] = {}
    for other in earlier:
        segment = other.segment if isinstance(other, _Remote) else other
        before.update(_batches_between(segment, lo, hi))
    mine = _batches_between(later, lo, hi)
    path = str(later.log_path)
    for base in sorted(mine):
        last, crc, epoch, position = mine[base]
        theirs = before.get(base)
        if theirs is not None and theirs[:2] == (last, crc) and theirs[2] != epoch:
            findings.append(Finding(Code.TIERED_EPOCH_MISMATCH, ERROR, path, position,
                                    f"the batch at offsets {base}..{last} carries leader epoch {epoch} here and "
                                    f"{theirs[2]} in the other copy of these offsets", offset=base))
            return
        if theirs is None or theirs[:2] != (last, crc):
            said = ("no batch of the earlier copy starts there" if theirs is None
                    else f"the earlier copy's batch there is {base}..{theirs[0]} with CRC {theirs[1]}")
            findings.append(Finding(Code.TIERED_OVERLAP, ERROR, path, position,
                                    f"offsets {lo}..{hi} are also in an earlier segment, with other batches: here "
                                    f"{base}..{last} with CRC {crc}; {said}", offset=base))
            return


def _topic_id(remote: PartitionLog, local: PartitionLog, findings: list[Finding]) -> None:
    path = local.path / "partition.metadata"
    if not path.is_file() or remote.name is None:
        return
    try:
        topic_id = read_partition_metadata(path).topic_id
    except SeglogError:
        return  # reported by the local partition's checks
    if topic_id != remote.name.unique_id:
        findings.append(Finding(Code.TIERED_TOPIC_ID_MISMATCH, ERROR, str(remote.path), None,
                                f"the remote directory is for topic id {remote.name.unique_id}, the local partition "
                                f"({path}) for {topic_id}: they are two different topics of the same name"))


def _boundary(remotes: list[_Remote], local: PartitionLog, local_summaries: list[SegmentSummary],
              local_report: PartitionReport, findings: list[Finding]) -> None:
    """Remote log end against local log start (``localLogStartOffset``) and end."""
    held = [r for r in remotes if r.last_offset is not None]
    local_start = local_report.log_start_offset
    if not held or local_start is None:
        return
    remote_end = max(r.last_offset for r in held)
    first_local = local.segments[0]
    if local_start > remote_end + 1:
        findings.append(Finding(Code.TIERED_OFFSET_GAP, ERROR, str(first_local.log_path), 0,
                                f"offsets {remote_end + 1}..{local_start - 1} are neither in remote storage (it ends "
                                f"at {remote_end}) nor in the local log (it starts at {local_start})",
                                offset=remote_end + 1))
    elif local_start <= remote_end:
        for segment in local.segments:
            if segment.base_offset > remote_end:
                break
            covering = [r for r in held if r.last_offset >= segment.base_offset]
            _compare_overlap(covering, segment, segment.base_offset, remote_end, findings)
    local_end = local_report.log_end_offset
    for remote in held:
        if local_end is not None and remote.last_offset >= local_end:
            findings.append(Finding(Code.TIERED_REMOTE_PAST_LOG_END, ERROR, remote.path, None,
                                    f"the remote segment ends at offset {remote.last_offset}, at or past the local log "
                                    f"end offset {local_end}: not part of this partition's history (Kafka's "
                                    f"isRemoteSegmentWithinLeaderEpochs rejects it)", offset=remote.last_offset))
    below = [r for r in held if r.fileset.start_offset < local_start]
    if below and local_summaries and local_summaries[0].epochs and below[-1].summary.epochs:
        last_epoch = below[-1].summary.epochs[-1][1]
        first_epoch = local_summaries[0].epochs[0][1]
        if first_epoch < last_epoch:
            findings.append(Finding(Code.TIERED_EPOCH_MISMATCH, ERROR, str(first_local.log_path), 0,
                                    f"the local log starts in leader epoch {first_epoch}, below epoch {last_epoch} of "
                                    f"the remote segment before it ({below[-1].path})", offset=local_start))


def _lineage(local: PartitionLog | None, remotes: list[_Remote]) -> list[EpochEntry] | None:
    """The partition's leader epoch lineage: the local leader-epoch-checkpoint, else the newest
    remote segment's checkpoint (the cache up to that segment's end)."""
    candidates = []
    if local is not None:
        candidates.append(local.path / "leader-epoch-checkpoint")
    candidates.extend(remote.segment.log_path.with_name(remote.fileset.name(LEADER_EPOCH_CHECKPOINT))
                      for remote in reversed(remotes) if remote.fileset.name(LEADER_EPOCH_CHECKPOINT))
    for path in candidates:
        if path.is_file():
            try:
                return read_leader_epoch_checkpoint(path)
            except SeglogError:
                continue  # an unreadable checkpoint is reported where it is
    return None


def _epoch_at(lineage: list[EpochEntry], offset: int) -> int | None:
    index = bisect.bisect_right([e.start_offset for e in lineage], offset) - 1
    return lineage[index].epoch if index >= 0 else None


def _epochs(remotes: list[_Remote], lineage: list[EpochEntry], findings: list[Finding]) -> None:
    """Each remote segment's batches and its ``.leader_epoch_checkpoint`` against the lineage."""
    starts = [e.start_offset for e in lineage]
    for remote in remotes:
        runs = remote.summary.epochs
        for n, (position, epoch, first) in enumerate(runs):
            said = _epoch_at(lineage, first)
            end = runs[n + 1][2] - 1 if n + 1 < len(runs) else remote.last_offset
            # a lineage epoch starting inside the run: the segment's end is past where its epoch ended
            # (isRemoteSegmentWithinLeaderEpochs: "segment's end offset should be less than or equal to
            # the respective leader epoch's offset")
            later = next((lineage[i] for i in range(bisect.bisect_right(starts, first), len(lineage))
                          if end is not None and lineage[i].start_offset <= end), None)
            if said != epoch:
                message = (f"batches from offset {first} carry leader epoch {epoch}, but the partition's leader epoch "
                           f"lineage gives {'no epoch' if said is None else f'epoch {said}'} there")
            elif later is not None:  # where the histories part: offset known, batch position not looked up
                message = (f"batches {first}..{end} carry leader epoch {epoch}, but the partition's leader epoch "
                           f"lineage has epoch {later.epoch} from offset {later.start_offset}")
                position, first = None, later.start_offset
            else:
                continue
            findings.append(Finding(Code.TIERED_EPOCH_MISMATCH, ERROR, remote.path, position,
                                    f"{message}: a remote segment of another history", offset=first))
            break
        name = remote.fileset.name(LEADER_EPOCH_CHECKPOINT)
        if name is None or remote.last_offset is None:
            continue
        path = remote.segment.log_path.with_name(name)
        own = remote_epoch_checkpoint(path, findings)
        if own is None:
            continue
        if not _lineage_agrees(own, lineage, remote.last_offset + 1):
            findings.append(Finding(Code.TIERED_EPOCH_MISMATCH, ERROR, str(path), None,
                                    f"the segment's epochs {_show(own)} are not the partition's lineage up to its end "
                                    f"{_show([e for e in lineage if e.start_offset <= remote.last_offset])}"))


def remote_epoch_checkpoint(path: Path, findings: list[Finding]) -> list[EpochEntry] | None:
    """A remote segment's ``.leader_epoch_checkpoint``, readable and with epochs and offsets
    increasing; None (and a finding) where it is not."""
    try:
        entries = read_leader_epoch_checkpoint(path)
    except SeglogError as exc:
        findings.append(Finding(Code.CHECKPOINT_UNREADABLE, ERROR, str(path), exc.position,
                                f"{exc.message} (the broker reading this remote segment's epochs fails)"))
        return None
    return entries if epochs_increasing(path, entries, findings) else None


def _lineage_agrees(own: list[EpochEntry], lineage: list[EpochEntry], end_exclusive: int) -> bool:
    """``own`` (the cache when the segment was copied, up to its end) against the current
    lineage cut at the same end; the lineage may have lost its oldest epochs since (the log start
    moved: ``truncateFromStart`` keeps the epoch holding the new start, at that offset)."""
    expected = [e for e in lineage if e.start_offset < end_exclusive]
    if not expected:
        return True
    first = expected[0]
    got = [e for e in own if e.epoch >= first.epoch and e.start_offset < end_exclusive]  # (later ones: not this segment's)
    if got and got[0].epoch == first.epoch and got[0].start_offset <= first.start_offset:
        got = [first] + got[1:]
    return got == expected


def _show(entries: list[EpochEntry]) -> str:
    return "{" + ", ".join(f"{e.epoch}={e.start_offset}" for e in entries) + "}"


def _metadata(log: PartitionLog, remotes: list[_Remote], metadata: RemoteSegments, findings: list[Finding]) -> None:
    """Each remote segment's metadata (state, offsets, epochs, size) against its files."""
    if log.name is None or log.name.unique_id is None:
        return
    known = {m.segment_id: m for m in metadata.for_partition(log.name.unique_id, log.name.partition)}
    if not known and remotes:
        findings.append(Finding(Code.REMOTE_SEGMENT_WITHOUT_METADATA, INFO, str(log.path), None,
                                "no record of this topic-partition in the __remote_log_metadata partitions given "
                                "(give all of them to cross-check its remote segments)"))
        return
    with_files = set()
    for remote in remotes:
        meta = known.get(remote.fileset.segment_id)
        with_files.add(remote.fileset.segment_id)
        if meta is None:
            findings.append(Finding(Code.REMOTE_SEGMENT_WITHOUT_METADATA, WARNING, remote.path, None,
                                    f"remote segment {remote.fileset.segment_id} has no record in __remote_log_metadata: "
                                    f"Kafka never reads it (left by a copy that failed before its metadata was written)",
                                    offset=remote.fileset.start_offset))
            continue
        if meta.state != COPY_SEGMENT_FINISHED:
            findings.append(Finding(Code.REMOTE_METADATA_STATE, WARNING, remote.path, None,
                                    f"remote segment {meta.segment_id} is {meta.state} ({meta.where}): Kafka does not "
                                    f"serve it (a copy not finished, or a deletion not done)",
                                    offset=remote.fileset.start_offset))
        for problem in _disagreements(meta, remote):
            findings.append(Finding(Code.REMOTE_METADATA_MISMATCH, ERROR, remote.path, None,
                                    f"metadata of segment {meta.segment_id} ({meta.where}) says {problem}",
                                    offset=remote.fileset.start_offset))
    for segment_id, meta in sorted(known.items(), key=lambda item: item[1].start_offset):
        if segment_id not in with_files and meta.state == COPY_SEGMENT_FINISHED:
            findings.append(Finding(Code.REMOTE_METADATA_WITHOUT_SEGMENT, ERROR, str(log.path), None,
                                    f"segment {segment_id} (offsets {meta.start_offset}..{meta.end_offset}) is "
                                    f"{meta.state} in __remote_log_metadata ({meta.where}) but its files are not "
                                    f"here: fetches of these offsets fail", offset=meta.start_offset))


def _disagreements(meta, remote: _Remote) -> list[str]:
    summary = remote.summary
    out = []
    if meta.start_offset != remote.fileset.start_offset:
        out.append(f"start offset {meta.start_offset}, the file name {remote.fileset.start_offset}")
    if summary.last_offset is not None and meta.end_offset != summary.last_offset:
        out.append(f"end offset {meta.end_offset}, the segment's last batch ends at {summary.last_offset}")
    if meta.segment_size_in_bytes != summary.size:
        out.append(f"size {meta.segment_size_in_bytes} bytes, the .log has {summary.size}")
    from_batches = []
    for _position, epoch, first in summary.epochs:
        if not from_batches or from_batches[-1][0] != epoch:
            from_batches.append((epoch, max(first, remote.fileset.start_offset)))
    written = sorted(meta.segment_leader_epochs)
    if from_batches and _filtered(written) != from_batches:
        out.append(f"leader epochs {_pairs(written)}, the batches {_pairs(from_batches)}")
    return out


def _filtered(epochs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``buildFilteredLeaderEpochMap``: an epoch starting where the next one starts holds no
    records and is dropped."""
    return [entry for n, entry in enumerate(epochs) if n + 1 == len(epochs) or epochs[n + 1][1] != entry[1]]


def _pairs(epochs) -> str:
    return "{" + ", ".join(f"{epoch}={offset}" for epoch, offset in epochs) + "}"
