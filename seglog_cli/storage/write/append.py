"""Appending records to a partition directory as a leader broker would.

One produce request per batch, as on the leader (``UnifiedLog.appendAsLeader``):

* offsets are assigned from the log end offset; the partition leader epoch is stamped; with
  ``LogAppendTime`` the batch's max timestamp becomes the broker clock;
* an idempotent or transactional batch is checked like ``ProducerAppendInfo`` checks a
  client's (fenced epochs, sequence gaps, duplicates, non-transactional writes inside an open
  transaction are refused) and its sequence continues from the producer state when not given;
* before each append the active segment rolls if Kafka's ``shouldRoll`` says so (§16: size,
  ``segment.ms`` + jitter on the batch timestamps, a full offset or time index, a relative
  offset past 2^31 - 1); the old segment gets its final time index entry and trimmed indexes,
  and a producer snapshot is written at the new base offset;
* ``LogSegment.append`` maintains the indexes (§10.2) - the reopened active segment starts with
  ``bytesSinceLastIndexEntry = 0`` and the max timestamp of its last time index entry, as a
  broker restarting does; completed ABORTs go to the ``.txnindex`` with Kafka's last stable
  offset;
* at the end the partition is closed as on a clean shutdown: final time index entry, trimmed
  indexes, a producer snapshot at the log end offset, and the leader-epoch-checkpoint and the
  log dir's recovery point brought up to date.

Everything is computed first (:func:`plan_append`, nothing written) and applied by
:func:`apply_append` through the write protocol (:mod:`seglog_cli.storage.write.write_session`), in an order where a
crash at any step leaves a directory Kafka loads as it is: the leader-epoch-checkpoint first (an
epoch starting at the log end offset is what a new leader writes), then the ``.log`` bytes (one
write and an fsync per segment), then indexes, snapshots and ``.txnindex``, the recovery point
last.

The options, the error and the plan's values are in :mod:`append_plan`; the active segment in
memory in :mod:`active_segment`; the checks of the producer fields in :mod:`producer_append`.
"""

from __future__ import annotations

import base64
import random
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from seglog_cli.storage.config.topic_config import TopicConfig
from seglog_cli.storage.log.batch_header import read_batch_header
from seglog_cli.storage.log.checkpoints import (EpochEntry, PartitionMetadata, TopicPartition,
                                                format_leader_epoch_checkpoint, format_offset_checkpoint,
                                                format_partition_metadata, read_leader_epoch_checkpoint,
                                                read_offset_checkpoint)
from seglog_cli.storage.log.codecs import CODEC_NAMES
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.indexes import ABORTED_TXN
from seglog_cli.storage.log.log_dir_files import CLEAN_SHUTDOWN, RECOVERY_POINT_CHECKPOINT
from seglog_cli.storage.log.naming import format_offset, parse_partition_dir_name, parse_segment_file_name
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.producer_state import ProducerStateManager, read_end_txn_marker, rebuild_producer_state
from seglog_cli.storage.write.active_segment import ActiveSegment
from seglog_cli.storage.write.append_plan import AppendError, AppendOptions, AppendPlan, FileWrite, PlannedBatch
from seglog_cli.storage.write.append_rerun import already_appended
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.write.durable import Spool, SpoolRange, Tally
from seglog_cli.storage.write.file_steps import FileStep
from seglog_cli.storage.write.producer_append import ProducerCursor
from seglog_cli.storage.write.write_session import WriteSession, plan_directories, take_fingerprint


NO_TIMESTAMP = -1
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
CODECS = {name: codec for codec, name in CODEC_NAMES.items()}
CREATE_TIME, LOG_APPEND_TIME = "CreateTime", "LogAppendTime"
NUM_BATCHES_TO_RETAIN = 5


def plan_append(partition_dir: str | Path, batches: Iterable[Sequence[NewRecord]], config: TopicConfig = TopicConfig(),
                options: AppendOptions = AppendOptions(), spool: Spool | Tally | None = None) -> AppendPlan:
    """What appending ``batches`` (one produce request each) to ``partition_dir`` writes.

    ``spool``: where each segment's new ``.log`` bytes go as they are made. None keeps them in
    memory; a :class:`~seglog_cli.storage.write.durable.Spool` (``WriteSession.spool()``) streams them
    to an unnamed scratch file of the backup root, so memory stays flat however many records
    come; a ``Tally`` keeps only their count (a plan that is only shown: it cannot be applied)."""
    directory = Path(partition_dir).absolute()
    name = parse_partition_dir_name(directory.name)
    if name is None or name.kind != "current":
        raise AppendError("not a partition directory name Kafka accepts (<topic>-<partition>)", directory)
    now = options.now_ms if options.now_ms is not None else int(time.time() * 1000)
    codec = CODECS.get(options.compression)
    if codec is None:
        raise AppendError(f"unknown compression {options.compression!r} (none, gzip, snappy, lz4, zstd)")
    timestamp_type = options.timestamp_type or config.message_timestamp_type
    jitter = random.Random(options.roll_jitter_seed)
    created = not directory.exists()
    if created and not options.create:
        raise AppendError("no such partition directory (use --create to make one)", directory)
    if created and not directory.parent.is_dir():
        raise AppendError("the log dir to create the partition in does not exist", directory.parent)
    if not created and not directory.is_dir():
        raise AppendError("not a directory", directory)

    fingerprint = take_fingerprint(plan_directories([directory]) if not created else [directory.parent])
    log = None if created else PartitionLog(directory)
    if log is not None and log.segments:
        active = ActiveSegment.reopen(directory, log.segments[-1], config, jitter, spool)
        manager = rebuild_producer_state(log).manager
        if log.files.snapshots:  # sorted by offset
            manager.last_snap_offset = parse_segment_file_name(log.files.snapshots[-1].name).base_offset
    else:
        active = ActiveSegment(directory, 0, config, jitter, spool)
        manager = ProducerStateManager(0)
    plan = AppendPlan(directory, directory.parent, active.next_offset, created=created, fingerprint=fingerprint)
    if log is not None and log.segments:
        _refuse_unrecovered(directory, active.next_offset)
    if config.segment_bytes < 1024 * 1024:
        plan.warnings.append(f"segment.bytes={config.segment_bytes}: Kafka 4.0+ refuses values below 1048576 "
                             "(KIP-1030); the files are what an older broker (or a test config) writes")
    epochs = _leader_epochs(directory)
    epoch = options.leader_epoch if options.leader_epoch is not None else (epochs[-1].epoch if epochs else 0)
    if epochs and epoch < epochs[-1].epoch:
        raise AppendError(f"leader epoch {epoch} is older than the partition's latest ({epochs[-1].epoch}): a broker "
                          "fenced at that epoch cannot append")
    new_epoch = not epochs or epoch > epochs[-1].epoch
    producer = ProducerCursor(options.producer, manager)
    if producer.repeats_sequences:
        plan.already_appended, batches = already_appended(log, producer.pid, producer.epoch, producer.sequence,
                                                          options.producer.transactional, options.end_transaction,
                                                          batches)
        if plan.already_appended is not None:
            plan.log_end_offset_after = plan.log_end_offset_before
            return plan

    closed: list[ActiveSegment] = []
    snapshots_to_write: list[tuple[int, bytes]] = []
    for records in batches:
        if not records:
            continue
        data = _encode(records, active.next_offset, codec, timestamp_type, now, epoch, producer, config)
        active = _append(plan, active, closed, snapshots_to_write, manager, data, config, jitter)
    if options.end_transaction is not None:
        marker = producer.marker(options.end_transaction, active.next_offset, now, epoch)
        active = _append(plan, active, closed, snapshots_to_write, manager, marker, config, jitter)
    if not plan.batches:
        raise AppendError("nothing to append: no records were given")
    active.close()
    plan.log_end_offset_after = active.next_offset
    manager.map_end_offset = active.next_offset
    final = manager.take_snapshot()
    if final is not None:
        snapshots_to_write.append(final)
    plan.warnings.extend(manager.warnings)
    _writes(plan, directory, closed + [active], snapshots_to_write, epochs, epoch, new_epoch, options)
    return plan


def _append(plan: AppendPlan, active: ActiveSegment, closed: list, snapshots: list, manager: ProducerStateManager,
            data: bytes, config: TopicConfig, jitter: random.Random) -> ActiveSegment:
    """One leader append of the batch ``data``, rolling first if Kafka would: the active
    segment afterwards."""
    header = read_batch_header(data, memoryview(data), 0, len(data))
    if len(data) > config.max_message_bytes:
        raise AppendError(f"the batch at offset {header.base_offset} is {len(data)} bytes, more than "
                          f"max.message.bytes ({config.max_message_bytes}): Kafka rejects it (RecordTooLargeException)")
    if len(data) > config.segment_bytes:
        raise AppendError(f"the batch at offset {header.base_offset} is {len(data)} bytes, larger than segment.bytes "
                          f"({config.segment_bytes}): Kafka rejects it")
    reason = active.roll_reason(len(data), header.max_timestamp, header.last_offset)
    if reason is not None:
        active.close()
        closed.append(active)
        new_base = max(header.base_offset, active.next_offset)
        plan.rolls.append((new_base, reason))
        manager.map_end_offset = new_base
        snapshot = manager.take_snapshot()
        if snapshot is not None:
            snapshots.append(snapshot)
        active = ActiveSegment(active.directory, new_base, config, jitter, active.spool)
        active.next_offset = new_base
    active.append(data, header.last_offset, header.max_timestamp, header.last_offset)
    marker = read_end_txn_marker(data, header) if header.is_control else None
    completed = manager.update(header, marker)
    if completed is not None:
        if completed.is_aborted:
            stable = manager.last_stable_offset(completed)
            active.txn_entries += ABORTED_TXN.pack(0, completed.producer_id, completed.first_offset,
                                                   completed.last_offset, stable)
        manager.complete_txn(completed)
    plan.batches.append(PlannedBatch(header.base_offset, header.last_offset, header.records_count, len(data),
                                     active.base_offset, header.max_timestamp,
                                     None if marker is None else ("ABORT" if marker.is_abort else "COMMIT")))
    return active


def _leader_epochs(directory: Path) -> list[EpochEntry]:
    path = directory / LEADER_EPOCH_CHECKPOINT
    if not path.exists():
        return []
    return read_leader_epoch_checkpoint(path)


def _encode(records: Sequence[NewRecord], base_offset: int, codec: int, timestamp_type: str, now: int, epoch: int,
            producer: "ProducerCursor", config: TopicConfig = TopicConfig()) -> bytes:
    stamped = [r if r.timestamp is not None else NewRecord(r.key, r.value, r.headers, now, r.offset_delta)
               for r in records]
    if timestamp_type == CREATE_TIME:
        _check_timestamps(stamped, base_offset, now, config)
    fields = producer.next_batch(len(stamped), base_offset)
    if timestamp_type == LOG_APPEND_TIME:
        from seglog_cli.storage.log.batch_header import LOG_APPEND_TIME as LAT

        return build_batch(stamped, base_offset=base_offset, compression=codec, timestamp_type=LAT,
                           log_append_time=now, partition_leader_epoch=epoch, **fields)
    return build_batch(stamped, base_offset=base_offset, compression=codec, partition_leader_epoch=epoch, **fields)


def _check_timestamps(records: Sequence[NewRecord], base_offset: int, now: int, config: TopicConfig) -> None:
    """``LogValidator.validateTimestamp`` for CreateTime records."""
    before, after = config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms
    for i, record in enumerate(records):
        difference = now - record.timestamp
        if record.timestamp != NO_TIMESTAMP and (difference > before or -difference > after):
            low = max(now - before, -2**63)
            high = min(now + after, 2**63 - 1)
            raise AppendError(f"Timestamp {record.timestamp} of message with offset {base_offset + i} is out of range. "
                              f"The timestamp should be within [{low}, {high}] (message.timestamp.before.max.ms, "
                              "message.timestamp.after.max.ms; Kafka refuses it: InvalidTimestampException)")


def _refuse_unrecovered(directory: Path, log_end_offset: int) -> None:
    """A partition a broker would recover at its next start (no ``.kafka_cleanshutdown`` in the
    log dir and a recovery point below the log end): appending would move the recovery point
    past bytes nobody has checked, so recovery must run first."""
    log_dir = directory.parent
    if (log_dir / CLEAN_SHUTDOWN).exists():
        return
    checkpoint = log_dir / RECOVERY_POINT_CHECKPOINT
    name = parse_partition_dir_name(directory.name)
    try:
        points = read_offset_checkpoint(checkpoint) if checkpoint.is_file() else {}
    except SeglogError:
        points = {}  # Kafka reads an unreadable checkpoint as empty
    point = points.get(TopicPartition(name.topic, name.partition), 0)
    if point < log_end_offset:
        raise AppendError(f"the log dir was not shut down cleanly and this partition's recovery point {point} is below "
                          f"its log end offset {log_end_offset}: a broker would recover it first; run `seglog recover` "
                          "first (nothing was written)", directory)


# -- the file steps ---------------------------------------------------------------------------------

def _writes(plan: AppendPlan, directory: Path, segments: list[ActiveSegment], snapshots: list[tuple[int, bytes]],
            epochs: list[EpochEntry], epoch: int, new_epoch: bool, options: AppendOptions) -> None:
    """The steps, in an order where a crash after any of them leaves a directory Kafka loads
    (the write protocol adds the clean-shutdown marker's removal first and return last, and
    lowers the recovery point meanwhile: see write_session.kafka_order)."""
    writes = plan.writes
    if plan.created:
        writes.append(FileWrite("mkdir", directory, b"", "a new partition directory"))
        topic_id = options.topic_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        writes.append(FileWrite("replace", directory / PARTITION_METADATA,
                                format_partition_metadata(PartitionMetadata(0, topic_id)), "a new partition"))
    if new_epoch:
        entries = list(epochs) + [EpochEntry(epoch, plan.log_end_offset_before)]
        writes.append(FileWrite("replace", directory / LEADER_EPOCH_CHECKPOINT,
                                format_leader_epoch_checkpoint(entries),
                                f"leader epoch {epoch} from offset {plan.log_end_offset_before}"))
    pending = dict(snapshots)
    for segment in segments:
        writes.extend(segment.writes())
        if segment.base_offset in pending and not segment.log_exists:
            writes.append(_snapshot_write(directory, segment.base_offset, pending.pop(segment.base_offset)))
    for offset in sorted(pending):
        writes.append(_snapshot_write(directory, offset, pending[offset]))
    checkpoint = directory.parent / RECOVERY_POINT_CHECKPOINT
    name = parse_partition_dir_name(directory.name)
    if options.update_recovery_point and name is not None:
        offsets = dict(read_offset_checkpoint(checkpoint)) if checkpoint.exists() else {}
        offsets[TopicPartition(name.topic, name.partition)] = plan.log_end_offset_after
        writes.append(FileWrite("replace", checkpoint, format_offset_checkpoint(offsets),
                                f"recovery point {plan.log_end_offset_after}"))
    for i, write in enumerate(writes):  # say "create" for a file that is not there yet
        if write.op == "replace" and not write.path.exists():
            writes[i] = FileWrite("create", write.path, write.data, write.why)


def _snapshot_write(directory: Path, offset: int, data: bytes) -> FileWrite:
    return FileWrite("replace", directory / f"{format_offset(offset)}.snapshot", data,
                     f"producer snapshot at offset {offset}")


# -- applying -------------------------------------------------------------------------------------

@dataclass
class AppendResult:
    backup_dir: Path | None
    written: list[Path]


def apply_append(plan: AppendPlan, backup_root: str | Path | None = None,
                 session: WriteSession | None = None) -> AppendResult:
    """Carry out the plan through the write protocol (see the module doc). ``session``: the
    command's, taken before it planned; without one the log dir is locked here and the plan
    re-validated (nothing is written when the partition changed since)."""
    if session is None:
        with WriteSession([plan.log_dir], "append", backup_root) as session:
            return apply_append(plan, backup_root, session)
    if any(isinstance(step.data, SpoolRange) and isinstance(step.data.spool, Tally) for step in plan.writes):
        raise AppendError("internal: this plan was made to be shown only (plan_append(spool=Tally)); plan again "
                          "to apply it")
    ops = {"replace": "write", "create": "write"}
    steps = [FileStep(ops.get(step.op, step.op), step.path, step.why, data=step.data) for step in plan.writes]
    backup_dir = session.apply(steps, plan.fingerprint)
    return AppendResult(backup_dir, [step.path for step in plan.writes])


__all__ = ["AppendResult", "apply_append", "plan_append"]
