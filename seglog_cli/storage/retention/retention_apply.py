"""Carrying out a retention plan the way the broker does, into seglog's quarantine.

Kafka (``deleteSegments`` -> ``LocalLog.removeAndDeleteSegments`` with ``asyncDelete``) renames a
deleted segment's ``.log``, ``.index``, ``.timeindex`` and ``.txnindex`` to ``*.deleted`` and removes
them ``file.delete.delay.ms`` later; the producer snapshot at the segment's base offset goes the
same way (``deleteProducerSnapshots``); the log start offset moves to the first surviving
segment and reaches ``log-start-offset-checkpoint``. When every segment goes, a new empty active
segment is rolled first at the log end offset.

Here the same deletions run through the write protocol (:mod:`seglog_cli.storage.write.write_session`):
each file is removed with its bytes kept in the backup directory (the quarantine, with
``manifest.json``), the ``.log`` first (a kill then leaves orphan indexes, which Kafka deletes at
start-up), the log start offset last; ``seglog undo <backup dir>`` puts everything back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.log.checkpoints import TopicPartition, format_offset_checkpoint, read_offset_checkpoint
from seglog_cli.storage.log.naming import SNAPSHOT_SUFFIX, format_offset, parse_partition_dir_name
from seglog_cli.storage.retention.retention import LOG_START_CHECKPOINT, RetentionPlan, read_partition_state
from seglog_cli.storage.write.file_steps import FileStep
from seglog_cli.storage.write.safety import PlanOutdatedError
from seglog_cli.storage.write.write_session import WriteSession

SEGMENT_FILE_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", SNAPSHOT_SUFFIX)

__all__ = ["PlanOutdatedError", "RetentionApplied", "RetentionDeletion", "apply_deletions", "apply_retention",
           "deletion_of"]


@dataclass(frozen=True)
class RetentionApplied:
    deleted: list[int]
    files: list[Path]
    new_log_start_offset: int
    backup_dir: Path | None


@dataclass
class RetentionDeletion:
    """What carrying out one partition's plan changes: the steps for its segments' files (the
    new empty active segment first when every segment goes, then each deleted segment's files,
    its ``.log`` first), the files removed, and its new log start offset (which reaches
    ``log-start-offset-checkpoint`` in one step per log dir: :func:`apply_deletions`)."""

    partition: Path
    deleted: list[int]
    steps: list[FileStep]
    files: list[Path]
    new_log_start_offset: int


def deletion_of(plan: RetentionPlan) -> RetentionDeletion:
    partition = plan.state.path
    steps: list[FileStep] = []
    if plan.rolled is not None:
        for suffix in (".index", ".timeindex", ".log"):
            steps.append(FileStep("write", partition / (format_offset(plan.rolled.base_offset) + suffix),
                                  "the new empty active segment Kafka rolls before deleting every segment", data=b""))
    removed = []
    for verdict in plan.deleted:
        base = verdict.segment.base_offset
        why = f"segment {base} deleted by retention"  # one string for the segment's files
        for suffix in SEGMENT_FILE_SUFFIXES:  # the .log first: what is left is an orphan index Kafka deletes
            path = partition / (format_offset(base) + suffix)
            if path.is_file():
                steps.append(FileStep("remove", path, why))
                removed.append(path)
    return RetentionDeletion(partition, [v.segment.base_offset for v in plan.deleted], steps, removed,
                             plan.new_log_start_offset)


def apply_retention(plan: RetentionPlan, backup_root: str | Path | None = None,
                    session: WriteSession | None = None) -> RetentionApplied:
    """Carry out the plan through the write protocol. ``session``: the command's, taken before it
    planned; without one the log dir is locked here. Either way the partition must still hold
    the segments the plan saw (else :class:`PlanOutdatedError`, nothing written)."""
    partition = plan.state.path
    if session is None:
        with WriteSession([partition.parent], "simulate-retention", backup_root) as session:
            return apply_retention(plan, backup_root, session)
    _check_unchanged(plan)
    deletion = deletion_of(plan)
    backups = apply_deletions([deletion], session)
    return RetentionApplied(deletion.deleted, deletion.files, deletion.new_log_start_offset,
                            backups.get(partition.parent.absolute()))


def apply_deletions(deletions: list[RetentionDeletion], session: WriteSession) -> dict[Path, Path]:
    """Carry out the deletions of many partitions (planned under ``session``'s locks) as one run:
    every partition's steps, then each log dir's ``log-start-offset-checkpoint`` written once
    with all its partitions' new log start offsets (not once per partition: a log dir of 10,000
    partitions would rewrite its 10,000 lines 10,000 times). One journal per log dir. Returns
    each log dir (as the partitions name it) -> its backup directory."""
    steps: list[FileStep] = [step for deletion in deletions for step in deletion.steps]
    by_log_dir: dict[Path, dict[Path, int]] = {}
    for deletion in deletions:
        by_log_dir.setdefault(deletion.partition.parent, {})[deletion.partition] = deletion.new_log_start_offset
    for log_dir, starts in by_log_dir.items():
        steps.extend(_log_start_steps(log_dir, starts))
    if not steps:
        return {}
    session.apply(steps)
    return {log_dir.absolute(): session.backup_dir_of(log_dir) for log_dir in by_log_dir}


def _log_start_steps(log_dir: Path, starts: dict[Path, int]) -> list[FileStep]:
    path = log_dir / LOG_START_CHECKPOINT
    offsets = None
    changed = []
    for partition, log_start in starts.items():
        name = parse_partition_dir_name(partition.name)
        if name is None:
            continue
        if offsets is None:
            offsets = dict(read_offset_checkpoint(path)) if path.is_file() else {}
        tp = TopicPartition(name.topic, name.partition)
        if offsets.get(tp) != log_start:
            offsets[tp] = log_start
            changed.append(log_start)
    if not changed:
        return []
    why = f"log start offset {changed[0]}" if len(changed) == 1 else f"log start offsets of {len(changed)} partitions"
    return [FileStep("write", path, why, data=format_offset_checkpoint(offsets))]


def _check_unchanged(plan: RetentionPlan) -> None:
    now = read_partition_state(plan.state.path, plan.state.high_watermark, plan.state.log_start_offset)
    planned = [(s.base_offset, s.size) for s in plan.state.segments]
    found = [(s.base_offset, s.size) for s in now.segments]
    if planned != found:
        raise PlanOutdatedError("the partition changed since it was planned; nothing was written", plan.state.path)
