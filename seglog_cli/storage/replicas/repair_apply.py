"""Carrying out a repair plan (``seglog repair --apply``): :func:`build_steps`.

Each repaired segment is assembled in a staging directory beside the backups (:func:`staging_dir`,
outside the log dir) from the plan's byte ranges of DAMAGED and HEALTHY, a chunk at a time, and
fsynced; its ``.index`` and ``.timeindex`` are rebuilt as Kafka's recovery builds them, or
HEALTHY's are copied when the segment came out HEALTHY's bytes. The result is the list of file
steps the command gives :class:`~seglog_cli.storage.write.write_session.WriteSession`: the
segments, their indexes and ``.txnindex``, HEALTHY's producer snapshots and the extended
``leader-epoch-checkpoint``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from seglog_cli.storage.config.topic_config import TopicConfig
from seglog_cli.storage.log.checkpoints import format_leader_epoch_checkpoint
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.log_dir_files import LEADER_EPOCH_CHECKPOINT
from seglog_cli.storage.replicas.replica_repair import RepairPlan, RepairRefused, SegmentRepair, index_paths
from seglog_cli.storage.write.file_steps import FileStep


COPY_CHUNK = 8 << 20


def build_steps(plan: RepairPlan, staging: Path, config: TopicConfig = TopicConfig()) -> list[FileStep]:
    """Assemble each repaired segment in ``staging`` (outside the log dir) and the file steps
    that put it, its rebuilt indexes, copied snapshots and the epoch checkpoint in place."""
    from seglog_cli.storage.write.rebuild_index import recover_indexes

    steps = []
    for n, repair in enumerate(plan.segments):
        if len(repair.pieces) == 1 and repair.pieces[0].healthy and repair.pieces[0].start == 0:
            assembled = repair.pieces[0].source
            if repair.pieces[0].end != os.path.getsize(assembled):
                assembled = _assemble(repair, staging / f"{n:04d}-{repair.path.name}")
        else:
            assembled = _assemble(repair, staging / f"{n:04d}-{repair.path.name}")
        with MappedFile(assembled) as mapped:
            indexes = recover_indexes(mapped, repair.base_offset, config)
        if indexes.stop is not None:
            raise RepairRefused(f"the repaired segment would still be damaged ({indexes.stop}); nothing was changed",
                                repair.path)
        offsets = (repair.ranges[0][0], repair.ranges[-1][1]) if repair.ranges else None
        steps.append(FileStep("write", repair.path, repair.why, source=assembled, offsets=offsets))
        index_path, time_index_path = index_paths(repair.path)
        if repair.healthy_segment is not None and _same_bytes(assembled, repair.healthy_segment):
            # the segment is now HEALTHY's byte for byte: its indexes (checked) are right for it
            healthy_index, healthy_time_index = index_paths(repair.healthy_segment)
            steps.append(FileStep("write", index_path, "HEALTHY's, for the same bytes", source=healthy_index))
            steps.append(FileStep("write", time_index_path, "HEALTHY's, for the same bytes", source=healthy_time_index))
            repair.indexes = "healthy"
        else:
            repair.indexes = "rebuilt"
            steps.append(FileStep("write", index_path, "rebuilt for the repaired segment", data=indexes.offset_index))
            steps.append(FileStep("write", time_index_path, "rebuilt for the repaired segment",
                                  data=indexes.time_index))
        if repair.txn_index is not None:
            steps.append(FileStep("write", repair.path.with_name(repair.path.name[:-len(".log")] + ".txnindex"),
                                  "HEALTHY's aborted transactions for the offsets copied", source=repair.txn_index))
    for snapshot in plan.snapshots:
        steps.append(FileStep("write", plan.damaged / snapshot.name, "HEALTHY's producer snapshot at that offset",
                              source=snapshot))
    if plan.epoch_checkpoint is not None:
        steps.append(FileStep("write", plan.damaged / LEADER_EPOCH_CHECKPOINT,
                              "the leader epochs of the batches copied from HEALTHY",
                              data=format_leader_epoch_checkpoint(plan.epoch_checkpoint)))
    return steps


def _assemble(repair: SegmentRepair, target: Path) -> Path:
    with open(target, "wb") as out:
        for piece in repair.pieces:
            with open(piece.source, "rb") as handle:
                handle.seek(piece.start)
                remaining = piece.end - piece.start
                while remaining:
                    chunk = handle.read(min(COPY_CHUNK, remaining))
                    if not chunk:
                        raise SeglogError(f"{piece.source} is shorter than planned; nothing was changed", piece.source)
                    out.write(chunk)
                    remaining -= len(chunk)
        out.flush()
        os.fsync(out.fileno())
    return target


def staging_dir(backup_root: Path) -> Path:
    backup_root.mkdir(parents=True, exist_ok=True)
    path = backup_root / f".repair-staging-{os.getpid()}"
    if path.exists():
        shutil.rmtree(path)
    path.mkdir()
    return path


def _same_bytes(a: Path, b: Path) -> bool:
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as x, open(b, "rb") as y:
        while True:
            chunk = x.read(COPY_CHUNK)
            if chunk != y.read(COPY_CHUNK):
                return False
            if not chunk:
                return True


__all__ = ["build_steps", "staging_dir"]
