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
from seglog_cli.storage.write.journal import FileStep
from seglog_cli.storage.write.safety import PlanOutdatedError
from seglog_cli.storage.write.write_session import WriteSession

SEGMENT_FILE_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", SNAPSHOT_SUFFIX)

__all__ = ["PlanOutdatedError", "RetentionApplied", "apply_retention"]


@dataclass(frozen=True)
class RetentionApplied:
    deleted: list[int]
    files: list[Path]
    new_log_start_offset: int
    backup_dir: Path | None


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
    steps: list[FileStep] = []
    if plan.rolled is not None:
        for suffix in (".index", ".timeindex", ".log"):
            steps.append(FileStep("write", partition / (format_offset(plan.rolled.base_offset) + suffix),
                                  "the new empty active segment Kafka rolls before deleting every segment", data=b""))
    removed = []
    for verdict in plan.deleted:
        base = verdict.segment.base_offset
        for suffix in SEGMENT_FILE_SUFFIXES:  # the .log first: what is left is an orphan index Kafka deletes
            path = partition / (format_offset(base) + suffix)
            if path.is_file():
                steps.append(FileStep("remove", path, f"segment {base} deleted by retention"))
                removed.append(path)
    steps.extend(_log_start_steps(partition, plan.new_log_start_offset))
    backup_dir = session.apply(steps)
    return RetentionApplied([v.segment.base_offset for v in plan.deleted], removed, plan.new_log_start_offset,
                            backup_dir)


def _log_start_steps(partition: Path, log_start: int) -> list[FileStep]:
    name = parse_partition_dir_name(partition.name)
    if name is None:
        return []
    path = partition.parent / LOG_START_CHECKPOINT
    offsets = read_offset_checkpoint(path) if path.is_file() else {}
    tp = TopicPartition(name.topic, name.partition)
    if offsets.get(tp) == log_start:
        return []
    offsets[tp] = log_start
    return [FileStep("write", path, f"log start offset {log_start}", data=format_offset_checkpoint(offsets))]


def _check_unchanged(plan: RetentionPlan) -> None:
    now = read_partition_state(plan.state.path, plan.state.high_watermark, plan.state.log_start_offset)
    planned = [(s.base_offset, s.size) for s in plan.state.segments]
    found = [(s.base_offset, s.size) for s in now.segments]
    if planned != found:
        raise PlanOutdatedError("the partition changed since it was planned; nothing was written", plan.state.path)
