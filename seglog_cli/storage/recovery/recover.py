"""Kafka's start-up log loading and recovery (§15), offline: planned, then applied with backups.

Per partition, in Kafka's order (``LogLoader.load``):

1. temp files: ``.deleted`` removed; ``.cleaned`` removed, and with them every ``.swap`` at or
   above the lowest cleaned base offset (an interrupted split); the remaining ``.swap`` files are
   completed: the segments they replace (names in [min swap base, max swap end)) are removed and
   the ``.swap`` suffixes dropped;
2. index files without their ``.log`` removed; a segment whose ``.index`` is missing (or whose
   ``.txnindex`` fails its sanity check) is recovered whatever the shutdown was;
3. without ``.kafka_cleanshutdown`` in the log dir, every segment from the one holding the
   recovery point on is recovered (``LogSegment.recover``: indexes rebuilt batch by batch, the
   ``.txnindex`` from the producer state, the ``.log`` truncated at the first invalid batch);
   when a segment loses bytes, every later segment is removed; a segment whose offsets overflow
   its base is split (``segment_split``) and the pieces recovered as Kafka's second load does;
4. the log end offset, the log start offset (``max(checkpoint, first base)``), the
   leader-epoch-checkpoint cut to the log end and the log start, producer snapshots (one at the
   end of each recovered segment, strays removed, one at the log end offset), the recovery point
   and the high watermark clamped into [log start, log end].

``mode="salvage"`` keeps what Kafka would throw away: the batches after a damaged region (the
region alone is cut out, found by the same resync as verify) and the later segments. The plan
names the offsets each mode loses.

Everything removed or replaced goes through the write protocol (:mod:`seglog_cli.storage.write.write_session`:
the log dir's lock taken before planning, a journal, the original bytes and a manifest in
``seglog-backups/`` beside the log dir); later segments are removed before a truncation, the last
first, so the log stays a valid prefix of itself at every instant.

The pieces: :mod:`~.plan` (the plan as values), :mod:`~.loading` (the passes around segment
recovery), :mod:`~.segment_recovery`, :mod:`~.producer_snapshots` and :mod:`~.apply`; this module
plans a log dir and re-exports the public names.
"""

from __future__ import annotations

import bisect
import shutil
from pathlib import Path
from typing import Mapping

from seglog_cli.storage.config.topic_config import TopicConfig, config_for
from seglog_cli.storage.log.checkpoints import TopicPartition
from seglog_cli.storage.log.naming import parse_partition_dir_name
from seglog_cli.storage.log.parallel import parallel_map
from seglog_cli.storage.recovery.apply import RecoveryResult, apply_recover
from seglog_cli.storage.recovery.loading import (
    LogDirState,
    checkpoint_steps,
    finish,
    has_file,
    housekeeping,
    list_files,
    log_dir_state,
    no_op,
    segments_of,
    txn_index_sane,
)
from seglog_cli.storage.recovery.plan import (
    DamagedRange,
    KAFKA,
    KeptBeyond,
    PartitionRecovery,
    RecoverError,
    RecoveryPlan,
    SALVAGE,
    Step,
)
from seglog_cli.storage.recovery.producer_snapshots import SnapshotModel
from seglog_cli.storage.recovery.segment_recovery import Refused, Work, count_kept_beyond, recover_segments
from seglog_cli.storage.write.write_session import plan_directories, take_fingerprint


# -- planning ---------------------------------------------------------------------------------------

def plan_recover(partition_dirs: list[Path], mode: str = KAFKA,
                 config: TopicConfig | Mapping[Path, TopicConfig] = TopicConfig(),
                 jobs: int = 1, on_partition=None, fingerprint: bool = True) -> RecoveryPlan:
    """The recovery of ``partition_dirs``; ``jobs`` partitions at a time in parallel processes
    (Kafka: ``num.recovery.threads.per.data.dir``; segments of a partition go in order).
    ``config``: one for all, or each partition dir's own (``config_for``).
    ``on_partition(partition_recovery)`` is called as each partition is planned (progress).
    ``fingerprint``: take the directories' fingerprint first, so that applying the plan later
    refuses when anything changed since; a caller planning under the log dirs' locks (a
    :class:`WriteSession`), or never applying, passes False: nothing can change under it."""
    if mode not in (KAFKA, SALVAGE):
        raise RecoverError(f"unknown mode {mode!r} (kafka or salvage)")
    plan = RecoveryPlan(mode)
    states: dict[Path, LogDirState] = {}
    directories = [Path(d).absolute() for d in partition_dirs]
    if fingerprint:
        plan.fingerprint = take_fingerprint(plan_directories(directories))
    for directory in directories:
        if directory.parent not in states:  # each log dir's files once, not once per partition
            states[directory.parent] = log_dir_state(directory.parent)
    deliver = None if on_partition is None else (lambda _index, result: on_partition(result))
    plan.partitions = parallel_map(lambda d: plan_partition(d, states[d.parent], mode, config_for(config, d)),
                                   directories, jobs,
                                   on_result=deliver)
    for log_dir, state in states.items():
        plan.log_dir_steps[log_dir] = checkpoint_steps(state, [p for p in plan.partitions if p.path.parent == log_dir])
    return plan


def plan_partition(directory: Path, state: LogDirState, mode: str, config: TopicConfig) -> PartitionRecovery:
    name = parse_partition_dir_name(directory.name)
    tp = TopicPartition(name.topic, name.partition) if name is not None else None
    recovery_point = state.recovery_points.get(tp, 0)
    log_start_checkpoint = state.log_starts.get(tp, 0)
    out = PartitionRecovery(directory, mode, state.clean_shutdown, recovery_point)
    listed = list_files(directory, out)
    if listed is None:
        return out
    files, parsed = listed
    housekeeping(directory, files, parsed, out)
    segments = segments_of(directory, files, parsed, out)
    # pass 4: segments whose .index is missing or whose .txnindex fails its check are recovered now
    must = {s.base_offset for s in segments if not has_file(files, s, ".index") or not txn_index_sane(files, s)}
    if not state.clean_shutdown:
        bases = [s.base_offset for s in segments]
        start = max(0, bisect.bisect_right(bases, recovery_point) - 1)
        must.update(bases[start:])
    snapshots = SnapshotModel({parsed[n].base_offset for n in files if n.endswith(".snapshot") and n in parsed},
                              log_start_checkpoint)
    work = Work(directory, out, config, files, None, snapshots)
    try:
        # salvage also cuts the damage out of segments Kafka would not look at (below the recovery
        # point, or after a clean shutdown): they are walked, and recovered only when damaged
        extra = {s.base_offset for s in segments} - must if mode == SALVAGE else set()
        kept = recover_segments(work, segments, sorted(must | extra), extra)
        if mode == SALVAGE:
            count_kept_beyond(work, kept)
        finish(work, kept, log_start_checkpoint)
    except Refused as exc:
        out.refused, out.steps, out.offsets_lost, out.bytes_truncated = str(exc), [], [], 0
        out.damaged_ranges, out.kept_beyond = [], KeptBeyond()
        out.removed_segments, out.removed_bytes = [], 0
        return out
    finally:
        if work.scratch_dir is not None:
            shutil.rmtree(work.scratch_dir, ignore_errors=True)
    out.steps = [step for step in out.steps if not no_op(step)]
    return out


# the public names of the recovery, importable from here as before the split
__all__ = ["KAFKA", "SALVAGE", "DamagedRange", "KeptBeyond", "PartitionRecovery", "RecoverError", "RecoveryPlan",
           "RecoveryResult", "Step", "apply_recover", "plan_partition", "plan_recover"]
