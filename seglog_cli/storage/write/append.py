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
"""

from __future__ import annotations

import base64
import random
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from seglog_cli.storage.log.batch_header import read_batch_header
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker
from seglog_cli.storage.log.checkpoints import (EpochEntry, PartitionMetadata, TopicPartition, format_leader_epoch_checkpoint,
                                            format_offset_checkpoint, format_partition_metadata,
                                            read_leader_epoch_checkpoint, read_offset_checkpoint)
from seglog_cli.storage.log.codecs import CODEC_NAMES
from seglog_cli.storage.write.durable import Spool, SpoolRange, Tally
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.log_dir_files import CLEAN_SHUTDOWN, RECOVERY_POINT_CHECKPOINT
from seglog_cli.storage.log.indexes import ABORTED_TXN
from seglog_cli.storage.log.naming import format_offset, parse_partition_dir_name, parse_segment_file_name
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.producer_state import (ProducerStateManager, read_end_txn_marker, rebuild_producer_state)
from seglog_cli.storage.write.rebuild_index import RebuildError, recover_indexes
from seglog_cli.storage.write.writer import OFFSET_ENTRY, TIME_ENTRY, SegmentIndexer
from seglog_cli.storage.write.journal import FileStep
from seglog_cli.storage.write.write_session import WriteSession, plan_directories, take_fingerprint
from seglog_cli.storage.log.snapshots import increment_sequence
from seglog_cli.storage.config.topic_config import TopicConfig

INT32_MAX = 2**31 - 1
NO_TIMESTAMP = -1
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
CODECS = {name: codec for codec, name in CODEC_NAMES.items()}
CREATE_TIME, LOG_APPEND_TIME = "CreateTime", "LogAppendTime"
NUM_BATCHES_TO_RETAIN = 5


class AppendError(SeglogError):
    """An append Kafka would refuse, or a partition seglog will not append to as it is."""


@dataclass(frozen=True)
class ProducerOptions:
    """The producer fields of the batches (all -1: a plain producer)."""

    producer_id: int = -1
    producer_epoch: int | None = None  # None: the epoch in the producer state (0 for a new producer)
    base_sequence: int | None = None  # None: continue from the producer state (0 for a new producer);
    # without a producer id: every batch's base sequence as sent (None: -1, no sequence)
    transactional: bool = False
    coordinator_epoch: int | None = None  # markers; None: the producer state's (0 for a new producer)


@dataclass(frozen=True)
class AppendOptions:
    compression: str = "none"  # none, gzip, snappy, lz4, zstd (Kafka's framings)
    timestamp_type: str | None = None  # CreateTime or LogAppendTime; None: the topic's message.timestamp.type
    leader_epoch: int | None = None  # None: the latest in leader-epoch-checkpoint (0 when there is none)
    producer: ProducerOptions = ProducerOptions()
    end_transaction: str | None = None  # "commit" or "abort": a marker after the batches
    now_ms: int | None = None  # the broker clock; None: the wall clock
    create: bool = False  # create the partition directory when it does not exist
    topic_id: str | None = None  # partition.metadata for a created partition (default: a random id)
    update_recovery_point: bool = True  # the log dir's recovery-point-offset-checkpoint
    roll_jitter_seed: int | None = None  # segment.jitter.ms draws (None: random, as Kafka)


@dataclass
class PlannedBatch:
    base_offset: int
    last_offset: int
    records: int
    size: int
    segment: int  # base offset of the segment it goes to
    max_timestamp: int
    control: str | None = None  # "COMMIT"/"ABORT" for a marker

    def as_dict(self) -> dict:
        return {"baseOffset": self.base_offset, "lastOffset": self.last_offset, "records": self.records,
                "size": self.size, "segment": self.segment, "maxTimestamp": self.max_timestamp,
                "control": self.control}


@dataclass
class FileWrite:
    """One step of the plan: ``op`` is "append" (to a .log or .txnindex) or "replace". ``data``:
    bytes, or for a ``.log`` its part of the :class:`~seglog_cli.storage.write.durable.Spool` (or
    ``Tally``) the plan was made with."""

    op: str
    path: Path
    data: bytes | SpoolRange
    why: str

    def as_dict(self) -> dict:
        return {"op": self.op, "path": str(self.path), "bytes": len(self.data), "why": self.why}


@dataclass
class AppendPlan:
    partition_dir: Path
    log_dir: Path
    log_end_offset_before: int
    log_end_offset_after: int = 0
    batches: list[PlannedBatch] = field(default_factory=list)
    rolls: list[tuple[int, str]] = field(default_factory=list)  # (new base offset, reason)
    writes: list[FileWrite] = field(default_factory=list)
    created: bool = False
    warnings: list[str] = field(default_factory=list)
    fingerprint: dict = field(default_factory=dict)  # the directories as planned (write_session)

    @property
    def records(self) -> int:
        return sum(batch.records for batch in self.batches if batch.control is None)

    def as_dict(self) -> dict:
        return {"version": 1, "partitionDir": str(self.partition_dir), "create": self.created,
                "logEndOffsetBefore": self.log_end_offset_before, "logEndOffsetAfter": self.log_end_offset_after,
                "records": self.records, "batches": [b.as_dict() for b in self.batches],
                "rolls": [{"baseOffset": base, "reason": reason} for base, reason in self.rolls],
                "writes": [w.as_dict() for w in self.writes], "warnings": self.warnings}


# -- the active segment, in memory ---------------------------------------------------------------

class _Segment:
    """A segment being appended to: the bytes to add to its ``.log`` and its indexes as they
    will be (existing entries + new ones), with ``LogSegment``'s state."""

    def __init__(self, directory: Path, base_offset: int, config: TopicConfig, jitter: random.Random,
                 spool=None):
        self.directory = directory
        self.spool = spool
        self.base_offset = base_offset
        self.stem = format_offset(base_offset)
        self.config = config
        self.existing_size = 0
        self.log_exists = False  # a reopened segment, possibly empty (a broker rolled just before stopping)
        self.new_bytes = bytearray()  # without a spool
        self.spool_start = 0 if spool is None else len(spool)
        self.spooled = 0
        self.indexer = SegmentIndexer(base_offset, config.index_interval_bytes, config.segment_index_bytes,
                                      path=self.path(".log"))
        self.rolling_timestamp: int | None = None
        self.txn_entries = bytearray()
        jitter_limit = min(config.segment_jitter_ms, config.segment_ms)
        self.roll_jitter_ms = jitter.randrange(jitter_limit) if jitter_limit > 0 else 0
        self.next_offset = base_offset

    def path(self, suffix: str) -> Path:
        return self.directory / (self.stem + suffix)

    @classmethod
    def reopen(cls, directory: Path, segment, config: TopicConfig, jitter: random.Random, spool=None) -> "_Segment":
        """The active segment as a broker reopens it after a clean shutdown."""
        self = cls(directory, segment.base_offset, config, jitter, spool)
        mapped = segment.log
        try:  # recovery's own walk: every batch valid to the end of the file?
            walk = recover_indexes(mapped, segment.base_offset, config)
        except RebuildError as exc:
            raise AppendError(f"{exc.message}: run `seglog verify` and `seglog recover` first", segment.log_path,
                              exc.position, exc.offset) from None
        if walk.valid_bytes < mapped.size:
            raise AppendError(f"the active segment is valid only up to position {walk.valid_bytes} of {mapped.size} "
                              f"({walk.stop}): Kafka's recovery would truncate the rest; run `seglog recover` first",
                              segment.log_path, walk.valid_bytes)
        self.next_offset = walk.next_offset
        first = next(iter(LogScan(mapped, resync=False, check_crc=False)), None)
        self.rolling_timestamp = first.max_timestamp if first is not None else None  # loadFirstBatchTimestamp
        self.existing_size = mapped.size
        self.log_exists = True
        # a new segment object over the files: the counter at 0, the max timestamp from the time index
        self.indexer = SegmentIndexer(self.base_offset, config.index_interval_bytes, config.segment_index_bytes,
                                      _entries_of(segment.index_path, OFFSET_ENTRY.size),
                                      _entries_of(segment.time_index_path, TIME_ENTRY.size), path=segment.log_path)
        segment.close()
        return self

    @property
    def size(self) -> int:
        return self.existing_size + len(self.new_bytes) + self.spooled

    def roll_reason(self, size: int, max_timestamp: int, last_offset: int) -> str | None:
        """``LogSegment.shouldRoll`` for a batch of ``size`` bytes, or None."""
        if self.size > self.config.segment_bytes - size:
            return f"segment.bytes: {self.size} + {size} bytes would pass {self.config.segment_bytes}"
        if self.size > 0 and self.rolling_timestamp is not None and self.rolling_timestamp >= 0:
            waited = max_timestamp - self.rolling_timestamp
            if waited > self.config.max_segment_ms - self.roll_jitter_ms:
                return (f"segment.ms: the batch's timestamp is {waited} ms after the segment's first "
                        f"(limit {self.config.max_segment_ms} - jitter {self.roll_jitter_ms})")
        if self.indexer.offset_index_full:
            return f"the offset index is full ({self.indexer.offset_entries} entries of segment.index.bytes)"
        if self.indexer.time_index_full:
            return f"the time index is full ({self.indexer.time_entries} entries of segment.index.bytes)"
        if not 0 <= last_offset - self.base_offset <= INT32_MAX:
            return f"offset {last_offset} does not fit a relative offset of segment {self.base_offset}"
        return None

    def append(self, data: bytes, last_offset: int, max_timestamp: int, offset_of_max: int) -> None:
        """``LogSegment.append`` of one batch."""
        physical_position = self.size
        if physical_position == 0:
            self.rolling_timestamp = max_timestamp
        if self.spool is None:
            self.new_bytes += data
        else:
            self.spool.write(data)
            self.spooled += len(data)
        self.indexer.append(physical_position, len(data), last_offset, max_timestamp, offset_of_max)
        self.next_offset = last_offset + 1

    def close(self) -> None:
        """``onBecomeInactiveSegment`` / ``close``: the final time index entry (full check
        skipped); the indexes are kept trimmed."""
        self.indexer.close()

    def writes(self) -> list[FileWrite]:
        """This segment's steps, in an order where every intermediate state loads: for a new
        segment the index files first (an index without its ``.log`` is an interrupted roll;
        Kafka deletes it at start-up), then the ``.log`` whole; for the reopened
        active segment the ``.txnindex`` entries first (past the log end until the batches
        land), then the batches, then the indexes."""
        out = []
        txn = ([FileWrite("append", self.path(".txnindex"), bytes(self.txn_entries),
                          f"{len(self.txn_entries) // 34} aborted transaction(s)")] if self.txn_entries else [])
        indexer = self.indexer
        index = [FileWrite("replace", self.path(".index"), bytes(indexer.offset_index),
                           f"{indexer.offset_entries} offset index entries"),
                 FileWrite("replace", self.path(".timeindex"), bytes(indexer.time_index),
                           f"{indexer.time_entries} time index entries")]
        if self.spool is None:
            new_bytes = bytes(self.new_bytes)
        else:
            new_bytes = self.spool.range(self.spool_start, self.spool_start + self.spooled)
        if not self.log_exists:
            return index + txn + [FileWrite("create", self.path(".log"), new_bytes,
                                            f"a new segment: {len(new_bytes)} bytes of batches")]
        if new_bytes:
            out += txn + [FileWrite("append", self.path(".log"), new_bytes, f"{len(new_bytes)} bytes of batches")]
        if indexer.changed or not self.path(".index").exists():
            out.append(index[0])
        if indexer.changed or not self.path(".timeindex").exists():
            out.append(index[1])
        return out


def _entries_of(path: Path, size: int) -> bytes:
    """An index file's entries without its preallocated zero tail."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return b""
    end = len(data.rstrip(b"\0"))
    return data[:-(-end // size) * size]


# -- planning -------------------------------------------------------------------------------------

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
        active = _Segment.reopen(directory, log.segments[-1], config, jitter, spool)
        manager = rebuild_producer_state(log).manager
        if log.files.snapshots:  # sorted by offset
            manager.last_snap_offset = parse_segment_file_name(log.files.snapshots[-1].name).base_offset
    else:
        active = _Segment(directory, 0, config, jitter, spool)
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
    producer = _ProducerCursor(options.producer, manager)

    closed: list[_Segment] = []
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


def _append(plan: AppendPlan, active: _Segment, closed: list, snapshots: list, manager: ProducerStateManager,
            data: bytes, config: TopicConfig, jitter: random.Random) -> _Segment:
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
        active = _Segment(active.directory, new_base, config, jitter, active.spool)
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
            producer: "_ProducerCursor", config: TopicConfig = TopicConfig()) -> bytes:
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


class _ProducerCursor:
    """The producer fields of each batch, checked as ``ProducerAppendInfo`` checks a client."""

    def __init__(self, options: ProducerOptions, manager: ProducerStateManager):
        self.options = options
        self.pid = options.producer_id
        self.manager = manager
        entry = manager.producers.get(self.pid) if self.pid >= 0 else None
        self.entry = entry
        if self.pid < 0:
            # a plain (non-idempotent) producer: the broker checks no sequence and keeps the batch's
            # base sequence as sent (LogValidator refuses a negative one only with a producer id);
            # Sarama, for one, sends 0 in every batch, so a given base sequence is every batch's
            if options.transactional or options.producer_epoch is not None:
                raise AppendError("--transactional and --producer-epoch need --producer-id")
            self.epoch = -1
            self.sequence = -1 if options.base_sequence is None else options.base_sequence
            if self.sequence < -1:
                raise AppendError(f"base sequence {self.sequence} is negative")
            return
        current_epoch = entry.producer_epoch if entry is not None else None
        self.epoch = options.producer_epoch if options.producer_epoch is not None else (
            current_epoch if current_epoch is not None and current_epoch >= 0 else 0)
        if not 0 <= self.epoch <= 32767:
            raise AppendError(f"producer epoch {self.epoch} is out of range (0..32767)")
        if current_epoch is not None and self.epoch < current_epoch:
            raise AppendError(f"producer {self.pid} epoch {self.epoch} is older than its current epoch {current_epoch}: "
                              "Kafka fences it (InvalidProducerEpochException)")
        same_epoch = entry is not None and self.epoch == current_epoch
        last_seq = entry.last_seq if same_epoch else -1
        if options.base_sequence is None:
            self.sequence = increment_sequence(last_seq, 1) if same_epoch and last_seq >= 0 else 0
        else:
            self.sequence = options.base_sequence
            if self.sequence < 0:
                raise AppendError(f"base sequence {self.sequence} is negative")
            self._check_against = last_seq if same_epoch and last_seq >= 0 else None
            if not same_epoch and entry is not None and current_epoch is not None and current_epoch >= 0 \
                    and self.sequence != 0:
                raise AppendError(f"producer {self.pid} starts epoch {self.epoch} at sequence {self.sequence}; a new "
                                  "epoch must start at 0 (OutOfOrderSequenceException)")
        self._open_txn = entry.current_txn_first_offset if entry is not None and same_epoch else None

    def _check_txn_state(self) -> None:
        entry = self.entry
        if self._open_txn is not None and not self.options.transactional:
            raise AppendError(f"producer {self.pid} has an open transaction (from offset "
                              f"{entry.current_txn_first_offset}): a non-transactional write is refused "
                              "(InvalidTxnStateException); end it with --end-txn first")

    def next_batch(self, count: int, base_offset: int) -> dict:
        if self.pid >= 0:
            self._check_txn_state()
        last_seq = getattr(self, "_check_against", None)
        if last_seq is not None:  # the first batch of an explicit --base-sequence (ProducerAppendInfo.checkSequence)
            self._check_against = None
            if self.sequence != increment_sequence(last_seq, 1):
                last = increment_sequence(self.sequence, count - 1)
                if any(b.first_sequence == self.sequence and b.last_sequence == last for b in self.entry.batch_metadata):
                    raise AppendError(f"producer {self.pid} already wrote sequences {self.sequence}..{last} (a duplicate: "
                                      "Kafka would answer with the earlier offsets and append nothing)")
                raise AppendError(f"producer {self.pid} epoch {self.epoch}: sequence {self.sequence} does not follow "
                                  f"its last sequence {last_seq} (OutOfOrderSequenceException)")
        fields = {"producer_id": self.pid, "producer_epoch": self.epoch, "base_sequence": self.sequence,
                  "transactional": self.options.transactional}
        if self.pid >= 0:
            self.sequence = increment_sequence(self.sequence, count)
        return fields

    def marker(self, kind: str, offset: int, now: int, epoch: int) -> bytes:
        if self.pid < 0:
            raise AppendError("--end-txn needs --producer-id (and the producer's epoch)")
        if kind not in ("commit", "abort"):
            raise AppendError(f"--end-txn is commit or abort, not {kind!r}")
        current = self.entry.coordinator_epoch if self.entry is not None else -1
        coordinator_epoch = self.options.coordinator_epoch if self.options.coordinator_epoch is not None else max(current, 0)
        if coordinator_epoch < current:
            raise AppendError(f"coordinator epoch {coordinator_epoch} is older than producer {self.pid}'s "
                              f"({current}): Kafka fences the marker (TransactionCoordinatorFencedException)")
        return build_end_txn_marker(commit=kind == "commit", base_offset=offset, producer_id=self.pid,
                                    producer_epoch=self.epoch, coordinator_epoch=coordinator_epoch, timestamp=now,
                                    partition_leader_epoch=epoch)


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

def _writes(plan: AppendPlan, directory: Path, segments: list[_Segment], snapshots: list[tuple[int, bytes]],
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


__all__ = ["AppendError", "AppendOptions", "AppendPlan", "AppendResult", "FileWrite", "PlannedBatch",
           "ProducerOptions", "apply_append", "plan_append"]
