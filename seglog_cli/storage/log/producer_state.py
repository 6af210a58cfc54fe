"""Producer state (§11, §12, §15.3): Kafka's ``ProducerStateManager``, offline.

The model follows ``storage/.../log/ProducerStateManager.java``, ``ProducerAppendInfo.java``,
``ProducerStateEntry.java``, ``CompletedTxn.java``, ``AbortedTxn.java``, ``LogSegment.java``
(``recover``, ``updateProducerState``) and ``UnifiedLog.java`` (``rebuildProducerState``,
``loadProducersFromRecords``), append origin REPLICATION (what recovery and followers use):

* Only v2 batches with a producer id (>= 0) touch the state. A data batch records
  ``BatchMetadata(last sequence, last offset, last offset - base offset, max timestamp)``; the
  newest 5 are kept (``NUM_BATCHES_TO_RETAIN``), a new producer epoch clears them. Sequences are
  never checked (client origin only); an older epoch or coordinator epoch is only logged (here:
  ``warnings``). A transactional batch of a producer without an open transaction opens one at
  its base offset (``ongoing_txns``, ordered by first offset, Kafka's ``TreeMap``).
* A control batch's first record is an ``EndTransactionMarker``: if the producer has an open
  transaction it yields ``CompletedTxn(pid, first offset, marker offset, aborted)``; the entry
  takes the marker's epoch (clearing batch metadata when it changed), coordinator epoch and
  record timestamp, and its transaction is closed. An empty control batch (cleaned) changes
  nothing, but still creates an empty entry for an unknown producer (Kafka's ``update`` with an
  empty ``ProducerAppendInfo``).
* ``lastStableOffset(completed)``: the first offset of the earliest ongoing transaction of
  *another* producer (the completed one is still in ``ongoing_txns`` then), else the marker
  offset + 1. An aborted transaction becomes ``AbortedTxn(0, pid, first, marker, lso)`` in the
  ``.txnindex`` of the marker's segment, then ``completeTxn`` removes it from ``ongoing_txns``.
* Snapshots: loading keeps every entry (Kafka drops entries idle for ``producer.id.expiration.ms``
  only when given a clock: ``now_ms``) and rebuilds ``ongoing_txns`` from
  ``currentTxnFirstOffset``. Writing iterates Kafka's ``HashMap<Long, ProducerStateEntry>``: by
  bucket (``(h ^ h >>> 16) & (capacity - 1)``, ``h = (int)(pid ^ pid >>> 32)``), then insertion
  order within a bucket. :class:`_HashMapShape` replays the table's growth (16 buckets, doubled
  past 3/4 full or when a bucket reaches 9 entries below 64 buckets); a live broker's map may be
  larger than this replay (producers that expired since, ``clear`` keeps the table), and a
  bucket that turns into a tree (9 colliding ids, >= 64 buckets) has an order this model does
  not follow: ``hash_order_exact`` is then False.

Recovery (``LogSegment.recover``) updates the state batch by batch and stops at the first batch
failing ``ensureValid`` (CRC, size); a malformed transaction marker stops it too, *after* its
batch. ``rebuildProducerState`` applies each segment's batches grouped per producer and
completes transactions at the end; that reaches the same state unless a producer's epoch goes
back to an earlier value within one segment (only a zombie's batches could do that), so this
module applies batch by batch throughout.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log.batch_header import BatchHeader, read_batch_header, wrap_int32
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.control import parse_control_record
from seglog_cli.storage.log.errors import InvalidRecordError, SeglogError
from seglog_cli.storage.log.indexes import ABORTED_TXN, AbortedTxn, format_aborted_txns  # noqa: F401 - ABORTED_TXN: part of this module's interface
from seglog_cli.storage.log.naming import parse_segment_file_name
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.log.snapshots import (
    BatchMetadata,
    ProducerSnapshot,
    ProducerStateEntry,
    format_snapshot,
    read_snapshot,
)

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
TREEIFY_THRESHOLD, MIN_TREEIFY_CAPACITY = 8, 64  # java.util.HashMap
PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms default


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker: ``last_offset`` is the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(slots=True)
class TxnMetadata:
    producer_id: int
    first_offset: int
    last_offset: int | None = None


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """The first record of a control batch, as ``EndTransactionMarker.deserialize`` reads it."""

    control_type: str  # "ABORT" or "COMMIT"
    coordinator_epoch: int
    timestamp: int  # the record's timestamp: the producer's new last timestamp

    @property
    def is_abort(self) -> bool:
        return self.control_type == "ABORT"


def read_end_txn_marker(buf, batch: BatchHeader, path: str | None = None) -> EndTransactionMarker | None:
    """The marker of control ``batch`` (any codec), None for an empty control batch. A malformed
    marker, or a control record that is no marker, raises :class:`InvalidRecordError`."""
    record = next(iter(read_records(buf, batch, path)), None)
    if record is None:
        return None
    control = parse_control_record(record, path, batch.position)
    if not control.is_transaction_marker:
        raise InvalidRecordError(f"Invalid control record type for end transaction marker{control.type_name}",
                                 path, batch.position)
    return EndTransactionMarker(control.type_name, control.coordinator_epoch, record.timestamp)


def _batch_window(batches=()) -> deque[BatchMetadata]:
    return deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)  # appending a 6th drops the oldest


@dataclass(slots=True)
class ProducerEntry:
    """Kafka's mutable ``ProducerStateEntry``: up to 5 ``BatchMetadata``, oldest first."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    current_txn_first_offset: int | None = None
    batch_metadata: deque[BatchMetadata] = field(default_factory=_batch_window)

    @classmethod
    def from_snapshot_entry(cls, entry: ProducerStateEntry) -> "ProducerEntry":
        batches = (entry.batch_metadata,) if entry.batch_metadata is not None else ()
        return cls(entry.producer_id, entry.producer_epoch, entry.coordinator_epoch, entry.last_timestamp,
                   entry.current_txn_first_offset, _batch_window(batches))

    def to_snapshot_entry(self) -> ProducerStateEntry:
        """What ``writeSnapshot`` keeps: the last batch only."""
        last = self.batch_metadata[-1] if self.batch_metadata else None
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch,
                                  self.last_timestamp, self.current_txn_first_offset, last)

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_sequence if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_sequence if self.batch_metadata else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        if self.producer_epoch == producer_epoch:
            return False
        self.batch_metadata.clear()
        self.producer_epoch = producer_epoch
        return True

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int,
                  timestamp: int) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        self.batch_metadata.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def end_txn(self, producer_epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        """Kafka's ``update(producerEpoch, coordinatorEpoch, lastTimestamp)`` for a marker."""
        self.maybe_update_producer_epoch(producer_epoch)
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = None
        self.last_timestamp = timestamp


def _bucket_hash(producer_id: int) -> int:
    """``HashMap.hash(Long)``: ``h ^ (h >>> 16)`` with ``h = (int)(value ^ (value >>> 32))``."""
    h = (producer_id ^ (producer_id >> 32)) & 0xFFFFFFFF
    return h ^ (h >> 16)


class _HashMapShape:
    """The table size of a ``java.util.HashMap`` fed the same keys (no removals): what decides
    its iteration order."""

    __slots__ = ("capacity", "hashes", "bins", "treeified")

    def __init__(self):
        self.capacity = 0  # the table is allocated (16 buckets) on the first put
        self.hashes: list[int] = []
        self.bins: dict[int, int] = {}  # bucket -> entries, at the current capacity
        self.treeified = False

    def put(self, key: int) -> None:
        if self.capacity == 0:
            self._resize(16)
        spread = _bucket_hash(key)
        self.hashes.append(spread)
        bucket = spread & (self.capacity - 1)
        self.bins[bucket] = self.bins.get(bucket, 0) + 1
        if self.bins[bucket] > TREEIFY_THRESHOLD:
            if self.capacity < MIN_TREEIFY_CAPACITY:  # treeifyBin resizes a small table instead
                self._resize(self.capacity * 2)
            else:
                self.treeified = True
        if len(self.hashes) > self.capacity * 3 // 4:  # load factor 0.75
            self._resize(self.capacity * 2)

    def _resize(self, capacity: int) -> None:
        self.capacity = capacity
        self.bins = {}
        for spread in self.hashes:
            bucket = spread & (capacity - 1)
            self.bins[bucket] = self.bins.get(bucket, 0) + 1

    def clear(self) -> None:
        self.hashes.clear()  # HashMap.clear keeps the table
        self.bins.clear()

    def bucket(self, key: int) -> int:
        return _bucket_hash(key) & (self.capacity - 1)


class ProducerStateManager:
    """The producer state of one partition: ``producers`` (pid -> :class:`ProducerEntry`, in
    insertion order), ``ongoing_txns`` (first offset -> :class:`TxnMetadata`), ``map_end_offset``
    (the next offset to apply), ``last_snap_offset``; ``warnings`` holds what Kafka only logs."""

    def __init__(self, map_end_offset: int = 0):
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing_txns: dict[int, TxnMetadata] = {}
        self._ongoing_order: list[int] = []  # ongoing_txns' keys, sorted (Kafka's TreeMap)
        self.map_end_offset = map_end_offset
        self.last_snap_offset = map_end_offset
        self.warnings: list[str] = []
        self._shape = _HashMapShape()

    # -- snapshots -------------------------------------------------------------------------

    @classmethod
    def from_snapshot(cls, source: ProducerSnapshot | str | Path, *, now_ms: int | None = None,
                      producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> "ProducerStateManager":
        manager = cls()
        manager.load_snapshot(source, now_ms=now_ms, producer_id_expiration_ms=producer_id_expiration_ms)
        return manager

    def load_snapshot(self, source: ProducerSnapshot | str | Path, *, now_ms: int | None = None,
                      producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> None:
        """Replace the state with a snapshot's (``truncateAndReload`` + ``loadFromSnapshot``).
        Damage raises :class:`CorruptSnapshotError`; entries idle for the expiration time are
        dropped only when ``now_ms`` is given."""
        snapshot = source if isinstance(source, ProducerSnapshot) else read_snapshot(source)
        self.producers.clear()
        self._shape.clear()
        self.ongoing_txns.clear()
        self._ongoing_order.clear()
        for entry in snapshot.entries:
            expired = (entry.current_txn_first_offset is None and now_ms is not None
                       and now_ms - entry.last_timestamp >= producer_id_expiration_ms)
            if not expired:
                self.load_producer_entry(entry)
        self.map_end_offset = self.last_snap_offset = snapshot.offset

    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        self._put(ProducerEntry.from_snapshot_entry(entry))
        if entry.current_txn_first_offset is not None:
            self._add_ongoing(TxnMetadata(entry.producer_id, entry.current_txn_first_offset))

    def entries(self) -> tuple[ProducerStateEntry, ...]:
        """The entries as ``writeSnapshot`` writes them, in Kafka's ``HashMap`` order (by bucket;
        ``sorted`` is stable, so insertion order within a bucket)."""
        ordered = sorted(self.producers.values(), key=lambda e: self._shape.bucket(e.producer_id))
        return tuple(entry.to_snapshot_entry() for entry in ordered)

    def snapshot_bytes(self) -> bytes:
        return format_snapshot(self.entries())

    def take_snapshot(self) -> tuple[int, bytes] | None:
        """``takeSnapshot`` without the file: (offset, bytes) when the map end offset moved past
        the last snapshot, else None."""
        if self.map_end_offset <= self.last_snap_offset:
            return None
        self.last_snap_offset = self.map_end_offset
        return self.map_end_offset, self.snapshot_bytes()

    @property
    def hash_order_exact(self) -> bool:
        return not self._shape.treeified

    # -- applying batches ------------------------------------------------------------------

    def update(self, batch: BatchHeader, control_marker: EndTransactionMarker | None = None) -> CompletedTxn | None:
        """Apply one batch as ``LogSegment.updateProducerState`` does (origin REPLICATION);
        ``control_marker`` is a control batch's first record (None: an empty control batch)."""
        completed = None
        if batch.magic >= 2 and batch.producer_id >= 0:
            entry = self.producers.get(batch.producer_id)
            is_new = entry is None
            if is_new:
                entry = ProducerEntry(batch.producer_id)
            if batch.is_control:
                completed = (self._append_end_txn_marker(entry, batch, control_marker)
                             if control_marker is not None else None)
            elif not self._append_data_batch(entry, batch):
                return None  # InvalidTxnStateException: nothing applied, not even the end offset
            if is_new:
                self._put(entry)
        if batch.magic >= 2:
            self.map_end_offset = batch.last_offset + 1
        return completed

    def _append_data_batch(self, entry: ProducerEntry, batch: BatchHeader) -> bool:
        if entry.current_txn_first_offset is not None and not batch.is_transactional:
            self.warnings.append(f"Expected transactional write from producer {entry.producer_id} at offset "
                                 f"{batch.base_offset} (Kafka throws InvalidTxnStateException; batch not applied)")
            return False
        self._check_producer_epoch(entry, batch)
        entry.add_batch(batch.producer_epoch, batch.last_sequence, batch.last_offset,
                        wrap_int32(batch.last_offset - batch.base_offset), batch.max_timestamp)
        if entry.current_txn_first_offset is None and batch.is_transactional:
            entry.current_txn_first_offset = batch.base_offset
            self._add_ongoing(TxnMetadata(entry.producer_id, batch.base_offset))
        return True

    def _append_end_txn_marker(self, entry: ProducerEntry, batch: BatchHeader,
                               marker: EndTransactionMarker) -> CompletedTxn | None:
        self._check_producer_epoch(entry, batch)
        if entry.coordinator_epoch > marker.coordinator_epoch:
            self.warnings.append(f"Detected invalid coordinator epoch for producerId {entry.producer_id} at offset "
                                 f"{batch.base_offset}: {marker.coordinator_epoch} is older than previously known "
                                 f"coordinator epoch {entry.coordinator_epoch}")
        completed = None
        if entry.current_txn_first_offset is not None:  # a marker without data completes nothing
            completed = CompletedTxn(entry.producer_id, entry.current_txn_first_offset, batch.base_offset,
                                     marker.is_abort)
        entry.end_txn(batch.producer_epoch, marker.coordinator_epoch, marker.timestamp)
        return completed

    def _check_producer_epoch(self, entry: ProducerEntry, batch: BatchHeader) -> None:
        if batch.producer_epoch < entry.producer_epoch:
            self.warnings.append(f"Epoch of producer {entry.producer_id} at offset {batch.base_offset} is "
                                 f"{batch.producer_epoch}, which is smaller than the last seen epoch "
                                 f"{entry.producer_epoch}")

    # -- transactions ----------------------------------------------------------------------

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """``lastStableOffset``: the earliest ongoing transaction of another producer, else the
        marker offset + 1."""
        for first_offset in self._ongoing_order:
            if self.ongoing_txns[first_offset].producer_id != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """``completeTxn``: the transaction leaves ``ongoing_txns`` (Kafka keeps it as
        unreplicated until the high watermark passes; offline there is none)."""
        txn = self.ongoing_txns.pop(completed.first_offset, None)
        if txn is None:
            self.warnings.append(f"Attempted to complete transaction {completed} which was not started")
            return
        self._ongoing_order.remove(completed.first_offset)
        txn.last_offset = completed.last_offset

    def first_undecided_offset(self) -> int | None:
        return self._ongoing_order[0] if self._ongoing_order else None

    def _add_ongoing(self, txn: TxnMetadata) -> None:
        if txn.first_offset not in self.ongoing_txns:
            bisect.insort(self._ongoing_order, txn.first_offset)
        self.ongoing_txns[txn.first_offset] = txn  # TreeMap.put replaces

    def _put(self, entry: ProducerEntry) -> None:
        self.producers[entry.producer_id] = entry
        self._shape.put(entry.producer_id)


# -- recovery ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SegmentReplay:
    """One segment replayed: the ``.txnindex`` entries recovery writes for it, how far it got
    (``valid_bytes``; ``stopped_at``/``stop_reason`` when damage ended it: Kafka truncates the
    segment there) and the producer state after it."""

    base_offset: int
    aborted_txns: tuple[AbortedTxn, ...]
    valid_bytes: int
    stopped_at: int | None
    stop_reason: str | None
    state_after: tuple[ProducerStateEntry, ...]

    def txn_index_bytes(self) -> bytes:
        return format_aborted_txns(self.aborted_txns)


def replay_segment(manager: ProducerStateManager, segment: LogSegment, *, start_offset: int | None = None,
                   end_offset: int | None = None) -> SegmentReplay:
    """Replay ``segment``'s batches into ``manager`` (positioned at the segment's start) as
    ``LogSegment.recover`` does, from the first batch whose last offset >= ``start_offset`` to
    before the first whose last offset >= ``end_offset``."""
    mapped, path = segment.log, str(segment.log_path)
    aborted: list[AbortedTxn] = []
    scan = LogScan(mapped, resync=False)
    valid_bytes, stop, reason = 0, None, None
    for batch in scan:
        if end_offset is not None and batch.last_offset >= end_offset:
            break
        if not batch.is_valid:
            stop, reason = batch.position, _invalid_reason(batch)
            break
        valid_bytes = batch.end_position
        if start_offset is not None and batch.last_offset < start_offset:
            continue
        try:
            recover_batch(manager, mapped.buffer, batch, path, aborted)
        except SeglogError as exc:
            stop, reason = batch.end_position, f"{exc.message} (Kafka keeps this batch and truncates after it)"
            break
    else:
        if scan.end_position < mapped.size:
            stop = valid_bytes = scan.end_position
            reason = scan.findings[0].message if scan.findings else "the rest frames no batch"
    return SegmentReplay(segment.base_offset, tuple(aborted), valid_bytes, stop, reason, manager.entries())


def replay_positions(manager: ProducerStateManager, segment: LogSegment, positions: list[int],
                     valid_bytes: int) -> SegmentReplay | None:
    """:func:`replay_segment` of a segment whose valid prefix (``valid_bytes``) the compiled
    recovery walk checked, fed only the batches that walk listed (``recover_walk`` in
    ``_native.c``: markers, the first and last batch of each producer's runs, the last batch).
    The producer state, snapshots and ``.txnindex`` come out as a full replay's. Returns None,
    with ``manager`` untouched, when a marker cannot be read: the caller replays every batch,
    which finds where Kafka stops."""
    mapped, path = segment.log, str(segment.log_path)
    buf, view = mapped.buffer, mapped.view
    batches, markers = [], {}
    for position in positions:  # scattered reads: each one's pages are dropped at once (MappedFile.release)
        batch = read_batch_header(buf, view, position, valid_bytes, check_crc=False)
        batches.append(batch)
        try:
            if batch.is_control and batch.producer_id >= 0:
                markers[batch.position] = read_end_txn_marker(buf, batch, path)
        except SeglogError:
            return None
        finally:
            mapped.release(position, min(batch.end_position, valid_bytes))
    aborted: list[AbortedTxn] = []
    for batch in batches:
        _update(manager, batch, markers.get(batch.position), aborted)
    return SegmentReplay(segment.base_offset, tuple(aborted), valid_bytes, None, None, manager.entries())


def recover_batch(manager: ProducerStateManager, buf, batch: BatchHeader, path: str,
                   aborted: list[AbortedTxn]) -> None:
    """``LogSegment.updateProducerState``: update, then index an aborted transaction."""
    marker = None
    if batch.is_control and batch.producer_id >= 0:
        marker = read_end_txn_marker(buf, batch, path)
    _update(manager, batch, marker, aborted)


def _update(manager: ProducerStateManager, batch: BatchHeader, marker: EndTransactionMarker | None,
            aborted: list[AbortedTxn]) -> None:
    completed = manager.update(batch, marker)
    if completed is not None:
        if completed.is_aborted:
            aborted.append(AbortedTxn(0, completed.producer_id, completed.first_offset, completed.last_offset,
                                      manager.last_stable_offset(completed)))
        manager.complete_txn(completed)


def _invalid_reason(batch: BatchHeader) -> str:
    if batch.size < batch.min_size:
        return f"batch at position {batch.position} is {batch.size} bytes, smaller than {batch.min_size}"
    return (f"batch at position {batch.position} is corrupt (stored crc = {batch.crc}, computed crc = "
            f"{batch.computed_crc})")


@dataclass
class ProducerStateRebuild:
    """What :func:`rebuild_producer_state` did. Unpacks as ``(manager, aborted_txns_by_segment)``."""

    manager: ProducerStateManager
    aborted_txns_by_segment: dict[int, tuple[AbortedTxn, ...]] = field(default_factory=dict)
    snapshot: Path | None = None  # the snapshot loaded
    skipped_snapshots: list[tuple[Path, str]] = field(default_factory=list)  # unreadable: Kafka deletes them
    replays: list[SegmentReplay] = field(default_factory=list)

    def __iter__(self):
        return iter((self.manager, self.aborted_txns_by_segment))

    @property
    def stopped_at(self) -> tuple[int, int] | None:
        """(segment base offset, position) of the damage that ended the replay, if any."""
        return next(((r.base_offset, r.stopped_at) for r in self.replays if r.stopped_at is not None), None)


def rebuild_producer_state(log, up_to_offset: int | None = None, *, log_start_offset: int | None = None,
                           use_snapshots: bool = True, now_ms: int | None = None,
                           producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS) -> ProducerStateRebuild:
    """The producer state of ``log`` (a :class:`PartitionLog`) at ``up_to_offset`` (default:
    the log end offset), as Kafka's recovery builds it: the newest readable snapshot in
    (log start offset, ``up_to_offset``], then the segments' batches from there (from the log
    start without a snapshot, or with ``use_snapshots=False``).

    Kafka's ``rebuildProducerState`` runs after recovery has cut damage away and does not check
    CRCs itself; here a batch failing its CRC ends the replay as recovery would, and the state
    is the state at that point (``stopped_at``). Not modelled: after a clean shutdown with no
    snapshot file at all (or for message formats below v2) Kafka does not replay and starts
    with an empty state."""
    if up_to_offset is None:
        up_to_offset = log.log_end_offset() or 0
    if log_start_offset is None:
        log_start_offset = log.log_start_offset or 0
    rebuild = ProducerStateRebuild(ProducerStateManager(log_start_offset))
    manager = rebuild.manager
    if use_snapshots:
        _load_latest_snapshot(rebuild, log, log_start_offset, up_to_offset, now_ms, producer_id_expiration_ms)
    if up_to_offset > manager.map_end_offset:
        for segment in _segments_between(log, manager.map_end_offset, up_to_offset):
            manager.map_end_offset = max(segment.base_offset, manager.map_end_offset, log_start_offset)
            try:
                replay = replay_segment(manager, segment, start_offset=manager.map_end_offset,
                                        end_offset=up_to_offset)
            finally:
                segment.close()
            rebuild.replays.append(replay)
            rebuild.aborted_txns_by_segment[segment.base_offset] = replay.aborted_txns
            if replay.stopped_at is not None:
                return rebuild
    manager.map_end_offset = up_to_offset
    return rebuild


def _load_latest_snapshot(rebuild: ProducerStateRebuild, log, log_start_offset: int, up_to_offset: int,
                          now_ms: int | None, expiration_ms: int) -> None:
    """``truncateAndReload``: snapshots outside (log start, end] are ignored (Kafka deletes
    them), an unreadable one is skipped for the next older one."""
    in_range = [path for path in log.files.snapshots
                if log_start_offset < parse_segment_file_name(path.name).base_offset <= up_to_offset]
    for path in reversed(in_range):
        try:
            rebuild.manager.load_snapshot(path, now_ms=now_ms, producer_id_expiration_ms=expiration_ms)
        except SeglogError as exc:
            rebuild.skipped_snapshots.append((path, exc.message))
            continue
        rebuild.snapshot = path
        return


def _segments_between(log, from_offset: int, to_offset: int) -> list[LogSegment]:
    """``LogSegments.values(from, to)``: from the floor segment of ``from`` to those starting
    before ``to``."""
    if from_offset >= to_offset:
        return []
    return [segment for segment in log.segments_from(from_offset) if segment.base_offset < to_offset]


__all__ = ["ABORTED_TXN", "CompletedTxn", "EndTransactionMarker", "NUM_BATCHES_TO_RETAIN", "ProducerEntry",
           "ProducerStateManager", "ProducerStateRebuild", "SegmentReplay", "TxnMetadata", "read_end_txn_marker",
           "rebuild_producer_state", "recover_batch", "replay_positions", "replay_segment"]
