"""Carrying out a retention plan the way the broker does, into seglog's quarantine.

Kafka (``deleteSegments`` -> ``LocalLog.removeAndDeleteSegments`` with ``asyncDelete``) renames a
deleted segment's ``.log``, ``.index``, ``.timeindex`` and ``.txnindex`` to ``*.deleted`` and removes
them ``file.delete.delay.ms`` later; the producer snapshot at the segment's base offset goes the
same way (``deleteProducerSnapshots``); the log start offset moves to the first surviving
segment and reaches ``log-start-offset-checkpoint``. When every segment goes, a new empty active
segment is rolled first at the log end offset.

Here the same steps run under the log dir's ``.lock`` through one :class:`ChangeSet`: each file is
renamed to ``.deleted``, then removed with its bytes kept in the backup directory (the quarantine,
with ``manifest.json``), so ``seglog undo <backup dir>`` puts everything back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.checkpoints import TopicPartition, format_offset_checkpoint, read_offset_checkpoint
from seglog_cli.storage.errors import SeglogError
from seglog_cli.storage.naming import DELETED_SUFFIX, SNAPSHOT_SUFFIX, format_offset, parse_partition_dir_name
from seglog_cli.storage.retention import LOG_START_CHECKPOINT, RetentionPlan, read_partition_state
from seglog_cli.storage.safety import ChangeSet, held_log_dir

SEGMENT_FILE_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", SNAPSHOT_SUFFIX)


class PlanOutdatedError(SeglogError):
    """The partition changed between planning and applying: nothing was written."""


@dataclass(frozen=True)
class RetentionApplied:
    deleted: list[int]
    files: list[Path]
    new_log_start_offset: int
    backup_dir: Path | None


def apply_retention(plan: RetentionPlan, backup_root: str | Path | None = None) -> RetentionApplied:
    partition = plan.state.path
    log_dir = partition.parent
    with held_log_dir(log_dir):
        _check_unchanged(plan)
        with ChangeSet(log_dir, "simulate-retention", Path(backup_root) if backup_root else None) as changes:
            if plan.rolled is not None:
                for suffix in (".log", ".index", ".timeindex"):
                    changes.replace(partition / (format_offset(plan.rolled.base_offset) + suffix), b"")
            removed = []
            for verdict in plan.deleted:
                for suffix in SEGMENT_FILE_SUFFIXES:
                    path = partition / (format_offset(verdict.segment.base_offset) + suffix)
                    if path.is_file():
                        renamed = path.with_name(path.name + DELETED_SUFFIX)
                        changes.rename(path, renamed)
                        changes.remove(renamed)
                        removed.append(path)
            _write_log_start(changes, partition, plan.new_log_start_offset)
        return RetentionApplied([v.segment.base_offset for v in plan.deleted], removed, plan.new_log_start_offset,
                                changes.backup_dir)


def _write_log_start(changes: ChangeSet, partition: Path, log_start: int) -> None:
    name = parse_partition_dir_name(partition.name)
    if name is None:
        return
    path = partition.parent / LOG_START_CHECKPOINT
    offsets = read_offset_checkpoint(path) if path.is_file() else {}
    tp = TopicPartition(name.topic, name.partition)
    if offsets.get(tp) == log_start:
        return
    offsets[tp] = log_start
    changes.replace(path, format_offset_checkpoint(offsets))


def _check_unchanged(plan: RetentionPlan) -> None:
    now = read_partition_state(plan.state.path, plan.state.high_watermark, plan.state.log_start_offset)
    planned = [(s.base_offset, s.size) for s in plan.state.segments]
    found = [(s.base_offset, s.size) for s in now.segments]
    if planned != found:
        raise PlanOutdatedError("the partition changed since it was planned; nothing was written", plan.state.path)
