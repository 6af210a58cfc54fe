"""How far behind each committed consumer-group offset is: the topic partition's log start
offset, log end offset and high watermark, read offline from the same log dir(s), as
``kafka-consumer-groups.sh --describe`` shows CURRENT-OFFSET, LOG-END-OFFSET and LAG.

Kafka's rules this follows (Apache Kafka source):

* LOG-END-OFFSET in ``kafka-consumer-groups`` is what ``Admin.listOffsets(OffsetSpec.latest())``
  returns with the default ``ListOffsetsOptions`` (``IsolationLevel.READ_UNCOMMITTED``), and the
  leader answers that with its *high watermark* (``Partition.fetchOffsetForTimestamp``:
  ``READ_UNCOMMITTED => localLog.highWatermark``). Lag is ``end - offset``, unclamped
  (``ConsumerGroupCommand.getLag``; a negative lag is shown as it is).
* Offline, the high watermark is the log dir's ``replication-offset-checkpoint`` entry, as the
  broker loads it (``Partition.createLog`` -> ``UnifiedLog.updateHighWatermark``): clamped to
  ``[log start offset, log end offset]``. Without an entry the lag is taken against the log end
  offset (what a leader's high watermark reaches once its followers have caught up).
* The log end offset is the last segment's next offset (``LogSegment.readNextOffset``: header
  scan from the last ``.index`` entry); a partition with no segment starts an empty one at its
  ``log-start-offset-checkpoint`` offset (``LogLoader.recoverLog``).
* The log start offset is ``max(log-start-offset-checkpoint, first segment's base offset)``
  (``LogLoader.load``), or the checkpoint alone for a tiered topic (remote storage). The broker
  checkpoints a log start below the first local segment only for those
  (``LogManager.checkpointLogStartOffsetsInDir``), so such an entry is taken as tiered.
* A fetch below the log start offset (``UnifiedLog.checkLogStartOffset``) or beyond the log end
  offset (``LocalLog.read``: ``startOffset > endOffset``) fails with OFFSET_OUT_OF_RANGE; the
  consumer then resets its position by ``auto.offset.reset``, or fails with
  ``OffsetOutOfRangeException`` when it is ``none`` (``FetchCollector.handleInitializeErrors``).
  Those two cases are the flags below.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.log.checkpoints import TopicPartition, read_offset_checkpoint
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.log_dir_files import LOG_START_OFFSET_CHECKPOINT, REPLICATION_CHECKPOINT
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.naming import parse_partition_dir_name

# logEndSource: where the log end offset came from (stable values, in JSON)
FROM_SEGMENTS = "segments"
NO_SEGMENTS = "no segments"  # the broker opens an empty segment at the log start offset
NOT_HERE = "not in these log dirs"  # hosted by another broker (or another log dir not given)
UNREADABLE = "unreadable"  # the partition directory could not be read; note says why

# flags (stable codes, in JSON)
BELOW_LOG_START = "COMMITTED_BELOW_LOG_START"
BEYOND_LOG_END = "COMMITTED_BEYOND_LOG_END"


@dataclass(frozen=True)
class PartitionEnd:
    """One topic partition's offsets as the broker would load them from these files."""

    topic: str
    partition: int
    directory: str | None
    log_start_offset: int | None
    log_end_offset: int | None
    high_watermark: int | None  # None: no replication-offset-checkpoint entry (or no partition)
    end_source: str
    start_source: str | None = None
    high_watermark_source: str | None = None
    note: str | None = None  # why a value is missing (an unreadable file), or other detail

    @property
    def end_for_lag(self) -> int | None:
        """The offset lag is measured against: the high watermark, else the log end offset."""
        return self.high_watermark if self.high_watermark is not None else self.log_end_offset


@dataclass(frozen=True)
class Position:
    """A committed offset against its partition: lag and flags (codes) with their explanations."""

    end: PartitionEnd
    lag: int | None
    lag_basis: str | None  # "highWatermark" or "logEndOffset"
    flags: tuple[str, ...]
    explanations: tuple[str, ...]


def position_of(offset: int, end: PartitionEnd) -> Position:
    """Where ``offset`` (a group's committed next offset) stands in its partition."""
    basis = None
    if end.high_watermark is not None:
        basis = "highWatermark"
    elif end.log_end_offset is not None:
        basis = "logEndOffset"
    reference = end.end_for_lag
    lag = None if reference is None or offset < 0 else reference - offset
    flags, why = [], []
    if end.log_start_offset is not None and 0 <= offset < end.log_start_offset:
        flags.append(BELOW_LOG_START)
        why.append(f"committed offset {offset} is below the log start offset {end.log_start_offset} "
                   f"({end.start_source}): the {end.log_start_offset - offset} offset(s) between were deleted "
                   "before the group read them; its next fetch is out of range and auto.offset.reset decides "
                   "(earliest skips to the log start, latest to the end, none fails the consumer)")
    if end.log_end_offset is not None and offset > end.log_end_offset:
        flags.append(BEYOND_LOG_END)
        why.append(f"committed offset {offset} is beyond the log end offset {end.log_end_offset}: its next fetch "
                   "is out of range (the log was truncated below it, e.g. an unclean leader election, or "
                   "these files are older than the commit) and auto.offset.reset decides")
    return Position(end, lag, basis, tuple(flags), tuple(why))


class PartitionEnds:
    """The topic partitions under the log dir(s) given, read lazily and once each."""

    def __init__(self, partition_dirs: list[Path]):
        self._dirs: dict[tuple[str, int], list[Path]] = {}
        self._log_dirs = sorted({directory.parent for directory in partition_dirs})
        for directory in partition_dirs:
            name = parse_partition_dir_name(directory.name)
            if name is not None and name.kind == "current":
                self._dirs.setdefault((name.topic, name.partition), []).append(directory)
        self._checkpoints: dict[Path, tuple[dict, str | None]] = {}
        self._ends: dict[tuple[str, int], PartitionEnd] = {}

    def end(self, topic: str, partition: int) -> PartitionEnd:
        key = (topic, partition)
        if key not in self._ends:
            self._ends[key] = self._read(topic, partition)
        return self._ends[key]

    def _read(self, topic: str, partition: int) -> PartitionEnd:
        directories = self._dirs.get((topic, partition))
        if not directories:
            return PartitionEnd(topic, partition, None, None, None, None, NOT_HERE, note=self._stale_entry(topic, partition))
        replicas = [self._read_replica(topic, partition, d) for d in directories]
        # several replicas (a tree of brokers' log dirs): the leader's high watermark is the highest
        # any replica has; take that replica, then the longest log
        return max(replicas, key=lambda r: (r.end_source != UNREADABLE,
                                            -1 if r.high_watermark is None else r.high_watermark,
                                            -1 if r.log_end_offset is None else r.log_end_offset))

    def _stale_entry(self, topic: str, partition: int) -> str | None:
        """A replication-offset-checkpoint entry for a partition with no directory here (the
        broker ignores it: it takes a high watermark from the checkpoint only for a log it loads)."""
        for log_dir in self._log_dirs:
            path = log_dir / REPLICATION_CHECKPOINT
            hw = self._checkpoint(path)[0].get(TopicPartition(topic, partition))
            if hw is not None:
                return (f"{path.name} lists {topic}-{partition} at {hw}, but the partition directory is not there "
                        "(moved, deleted or not copied): no lag computed from it")
        return None

    def _checkpoint(self, path: Path) -> tuple[dict, str | None]:
        if path not in self._checkpoints:
            if not path.is_file():
                self._checkpoints[path] = ({}, None)
            else:
                try:
                    self._checkpoints[path] = (read_offset_checkpoint(path), None)
                except (SeglogError, OSError) as exc:
                    self._checkpoints[path] = ({}, f"{path.name} unreadable: {getattr(exc, 'message', exc)}")
        return self._checkpoints[path]

    def _read_replica(self, topic: str, partition: int, directory: Path) -> PartitionEnd:
        tp = TopicPartition(topic, partition)
        notes = []
        starts, problem = self._checkpoint(directory.parent / LOG_START_OFFSET_CHECKPOINT)
        notes += [problem] if problem else []
        checkpoint_start = starts.get(tp)
        try:
            log = PartitionLog(directory)
            try:
                first_base = log.log_start_offset
                log_end = log.log_end_offset()
            finally:
                log.close()
        except (SeglogError, OSError) as exc:
            return PartitionEnd(topic, partition, str(directory), None, None, None, UNREADABLE,
                                note=str(exc))
        if first_base is None or (checkpoint_start is not None and log_end < checkpoint_start):
            # LogLoader: no segment (or all of them below the checkpointed log start, which it
            # deletes) -> an empty segment at the checkpointed log start offset
            start = end = checkpoint_start if checkpoint_start is not None else 0
            source = NO_SEGMENTS
            start_source = LOG_START_OFFSET_CHECKPOINT if checkpoint_start is not None else "empty log"
        else:
            source, end = FROM_SEGMENTS, log_end
            if checkpoint_start is None:
                start, start_source = first_base, "first segment"
            elif checkpoint_start >= first_base:
                start, start_source = checkpoint_start, LOG_START_OFFSET_CHECKPOINT
            else:
                # LogManager.checkpointLogStartOffsetsInDir writes an entry below the first segment
                # only for a log with remote storage, whose log start is the checkpoint
                # (LogLoader: isRemoteLogEnabled ? checkpoint : max(checkpoint, first segment))
                start, start_source = checkpoint_start, f"{LOG_START_OFFSET_CHECKPOINT}, tiered"
                notes.append(f"tiered storage: offsets {checkpoint_start} to {first_base - 1} are in remote storage "
                             f"(the first local segment starts at {first_base})")
        hws, problem = self._checkpoint(directory.parent / REPLICATION_CHECKPOINT)
        notes += [problem] if problem else []
        hw, hw_source = hws.get(tp), None
        if hw is not None:
            clamped = min(max(hw, start), end)  # UnifiedLog.updateHighWatermark
            hw_source = REPLICATION_CHECKPOINT if clamped == hw else f"{REPLICATION_CHECKPOINT}, clamped from {hw}"
            hw = clamped
        return PartitionEnd(topic, partition, str(directory), start, end, hw, source, start_source, hw_source,
                            "; ".join(notes) or None)
