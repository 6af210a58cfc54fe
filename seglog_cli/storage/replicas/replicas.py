"""The replicas of a partition compared offline: by offset and batch, as Kafka replicates them.

Followers append the leader's batches byte for byte, so where replicas agree their batches have
the same offsets, ``partitionLeaderEpoch``, CRC and size. Files are not compared by bytes: a
replica that restarted in the middle of a segment indexes it with an entry fewer, and producer
snapshots are taken at each broker's own stops. Each replica is read with header-only scans
(:class:`~seglog_cli.storage.log.batches.LogScan`): once with CRCs computed, into small summaries
(epochs, damage, counts, index checks), then the reference and the replica again side by side,
a chunk of batch headers at a time, without computing CRCs again. Nothing is held per batch, so
memory does not grow with the log. Records are decoded only to export what a truncation
discards.

For every replica but the reference (``--leader``, else the highest leader epoch, then the
longest log) :func:`compare` says how far it agrees, where and why it stops agreeing (another
leader epoch; the same epoch but other bytes, naming the side whose CRC fails; a shorter log),
and the offset Kafka truncates it to when it rejoins (:mod:`epoch_truncation`).
"""

from __future__ import annotations

import operator
import sys
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log import native
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.checkpoints import (EpochEntry, TopicPartition, read_leader_epoch_checkpoint,
                                            read_offset_checkpoint, read_partition_metadata)
from seglog_cli.storage.replicas.epoch_truncation import Truncation, loaded_epochs, truncation_offset
from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.log.files import read_small_file
from seglog_cli.storage.log.findings import Code
from seglog_cli.storage.log.log_dir_files import (CLEAN_SHUTDOWN, LEADER_EPOCH_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                                              PARTITION_METADATA, RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT)
from seglog_cli.storage.log.partition_log import PartitionLog

# status of a replica against the reference, worst last
IN_SYNC, LAGGING, DIVERGENT, DAMAGED, NOT_A_REPLICA, REFERENCE = (
    "in-sync", "lagging", "divergent", "damaged", "not-a-replica", "reference")

CHECKPOINT_NAMES = {RECOVERY_POINT_CHECKPOINT: "recoveryPoint", REPLICATION_CHECKPOINT: "highWatermark",
                    LOG_START_OFFSET_CHECKPOINT: "logStartOffset"}


@dataclass
class Damage:
    code: str
    path: str
    position: int
    offset: int | None
    message: str

    def as_dict(self) -> dict:
        return {"code": self.code, "path": self.path, "position": self.position, "offset": self.offset,
                "message": self.message}


@dataclass
class IndexNote:
    segment: int
    kind: str  # "offset" or "time"
    severity: str  # "info" (entries missing) or "error" (an entry points wrong)
    message: str

    def as_dict(self) -> dict:
        return {"segment": self.segment, "index": self.kind, "severity": self.severity, "message": self.message}


@dataclass
class IndexSummary:
    """What the comparison needs of one index file without holding its entries: their count and
    the smallest and largest relative offset (the entries are read again, for the one segment
    where the common prefix ends inside them)."""

    path: Path
    entry_size: int
    word: tuple  # (first word, words per entry) of the relative offset
    count: int
    low: int
    high: int

    def below(self, relative: int) -> int:
        """``bisect_left`` of the relative offsets for ``relative``, as if they were held."""
        if not self.count or self.high < relative:
            return self.count
        if self.low >= relative:
            return 0
        entries, = _index_columns(self.path, self.entry_size, (self.word,))
        return bisect_left(entries, relative)


GROUP_ROWS = 65536  # batches per group of a segment: what the comparison can pass over unread


@dataclass
class Group:
    """Consecutive batches of a segment as :func:`scan_replica` read them: from the one at
    ``start`` to the end of the one ending at ``end`` (positions), how many, a digest of their
    header columns (valid flags included), whether all pass their checks, the last one's last offset."""

    start: int
    end: int
    rows: int
    digest: bytes
    clean: bool
    first_last: int
    last_last: int


@dataclass
class SegmentSummary:
    base: int
    groups: list = field(default_factory=list)


@dataclass
class Replica:
    """One replica, scanned: summaries only (no per-batch state); the comparison reads the
    batch headers again, in step with the reference's (:class:`_Cursor`)."""

    path: Path
    label: str
    topic: str | None
    partition: int | None
    topic_id: str | None = None
    epoch_checkpoint: list[EpochEntry] = field(default_factory=list)
    checkpoints: dict = field(default_factory=dict)
    clean_shutdown: bool | None = None
    segment_bases: list[int] = field(default_factory=list)
    batches: int = 0
    first_base: int | None = None  # the first batch's base offset
    last_last: int | None = None  # the last batch's last offset
    invalid: dict = field(default_factory=dict)  # .log path -> positions of batches failing CRC/size checks
    segments: dict = field(default_factory=dict)  # segment base -> SegmentSummary (its groups)
    records: int = 0
    damage: list[Damage] = field(default_factory=list)
    index_counts: dict = field(default_factory=dict)  # segment base -> (IndexSummary of .index, of .timeindex)
    index_notes: list[IndexNote] = field(default_factory=list)
    batch_epochs: list[EpochEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable side files

    @property
    def log_start(self) -> int:
        return self.first_base if self.batches else (self.segment_bases[0] if self.segment_bases else 0)

    @property
    def log_end(self) -> int:
        return self.last_last + 1 if self.batches else (self.segment_bases[-1] if self.segment_bases else 0)

    @property
    def kafka_end(self) -> int:
        """The log end Kafka's recovery keeps: before the first damaged batch or region."""
        first = self.first_damage_offset()
        return self.log_end if first is None else max(self.log_start, first)

    def first_damage_offset(self) -> int | None:
        offsets = [d.offset for d in self.damage if d.offset is not None]
        return min(offsets) if offsets else (self.log_start if self.damage else None)

    def max_epoch(self) -> int:
        epochs = [e.epoch for e in self.epoch_checkpoint] + [e.epoch for e in self.batch_epochs]
        return max(epochs, default=-1)

    def loaded_epochs(self) -> list[EpochEntry]:
        return loaded_epochs(self.epoch_checkpoint, self.batch_epochs, self.log_start, self.kafka_end)

    def summary(self) -> dict:
        return {"path": str(self.path), "topicId": self.topic_id, "logStartOffset": self.log_start,
                "logEndOffset": self.log_end, "batches": self.batches, "records": self.records,
                "leaderEpochCheckpoint": [[e.epoch, e.start_offset] for e in self.epoch_checkpoint],
                "checkpoints": self.checkpoints, "cleanShutdown": self.clean_shutdown,
                "damage": [d.as_dict() for d in self.damage], "problems": self.problems}



def _read_if_present(path: Path, reader, replica: Replica, name: str):
    if not path.is_file():
        return None
    try:
        return reader(path)
    except (SeglogError, OSError) as exc:
        replica.problems.append(f"{name}: {exc}")
        return None


def scan_replica(path: str | Path, label: str | None = None) -> Replica:
    """Read a partition directory's batch headers (CRCs checked), indexes and checkpoints into
    the replica's summaries."""
    partition = PartitionLog(path)
    replica = Replica(Path(path), label or str(path), partition.topic, partition.partition)
    directory = partition.path
    metadata = _read_if_present(directory / PARTITION_METADATA, read_partition_metadata, replica, PARTITION_METADATA)
    replica.topic_id = metadata.topic_id if metadata is not None else None
    replica.epoch_checkpoint = _read_if_present(directory / LEADER_EPOCH_CHECKPOINT, read_leader_epoch_checkpoint,
                                                replica, LEADER_EPOCH_CHECKPOINT) or []
    log_dir = directory.parent
    if partition.topic is not None:
        tp = TopicPartition(partition.topic, partition.partition)
        for name, key in CHECKPOINT_NAMES.items():
            offsets = _read_if_present(log_dir / name, read_offset_checkpoint, replica, name)
            if offsets is not None:
                replica.checkpoints[key] = offsets.get(tp)
        replica.clean_shutdown = (log_dir / CLEAN_SHUTDOWN).is_file()
    try:
        for segment in partition.segments:
            replica.segment_bases.append(segment.base_offset)
            _scan_segment(replica, segment)
            segment.close()
    finally:
        partition.close()
    return replica


def column_chunks(scan: LogScan):
    """``scan``'s batch headers as ``(columns, legacy)``: an ``array("q")`` of 8 int64 per batch
    (position, base offset, last offset, partition leader epoch, stored CRC, size field, valid,
    records count) and the headers when the scan stepped entry by entry (else None). Also what
    ``seglog repair`` plans from (:mod:`replica_repair`)."""
    for chunk in scan.columns():
        if type(chunk) is list:
            yield _legacy_columns(chunk), chunk
        else:
            columns = array("q")
            columns.frombytes(chunk)
            yield columns, None


def _legacy_columns(chunk: list) -> array:
    """Entries read one at a time (legacy, or around damage) as the compiled scanner's columns."""
    columns = array("q")
    for batch in chunk:
        count = batch.records_count if batch.magic >= 2 and batch.records_count > 0 else \
            (1 if batch.magic < 2 else 0)
        columns.extend((batch.position, batch.base_offset, batch.last_offset, batch.partition_leader_epoch,
                        batch.crc, batch.length, 1 if batch.is_valid else 0, count))
    return columns


def _scan_segment(replica: Replica, segment) -> None:
    """One segment's batch headers, a chunk of the compiled scanner's columns (8 int64 per batch)
    at a time, folded into the replica's summaries; the indexes checked against each chunk."""
    from hashlib import blake2b

    path = str(segment.log_path)
    scan = LogScan(segment.log, 0, resync=True, check_crc=True)
    check = _IndexCheck(replica, segment)
    summary = replica.segments[segment.base_offset] = SegmentSummary(segment.base_offset)
    group = None
    for columns, legacy in column_chunks(scan):
        count = len(columns) // 8
        if not count:
            continue
        if group is None:
            group = [columns[0], 0, blake2b(digest_size=16), True, columns[2]]
        group[1] += count
        group[2].update(columns)
        group[3] = group[3] and 0 not in columns[6::8]
        if group[1] >= GROUP_ROWS:
            _close_group(summary, group, columns)
            group = None
        bases, lasts, epochs, valid = columns[1::8], columns[2::8], columns[3::8], columns[6::8]
        if not replica.batches:
            replica.first_base = bases[0]
        replica.batches += count
        replica.last_last = lasts[-1]
        counts = columns[7::8]
        replica.records += sum(counts) if min(counts) >= 0 else sum(c if c > 0 else (1 if c < 0 else 0) for c in counts)
        if 0 in valid:
            for k in (k for k, ok in enumerate(valid) if not ok):
                _invalid_row(replica, columns, k, path, legacy[k] if legacy is not None else None)
        _epoch_starts(replica, bases, epochs, valid)
        check.feed(columns[0::8], bases, lasts)
    for finding in scan.findings:
        replica.damage.append(Damage(finding.code, path, finding.position, finding.offset, finding.message))
    if not scan.findings and scan.kafka_error is not None:
        replica.damage.append(Damage(Code.CORRUPT_REGION, path, scan.kafka_error.position, None, str(scan.kafka_error)))
    if group is not None:
        _close_group(summary, group, columns)
    check.finish()


def _close_group(summary: SegmentSummary, group: list, columns: array) -> None:
    start, rows, digest, clean, first_last = group
    end = columns[-8] + 12 + columns[-3]  # the last batch's position + LOG_OVERHEAD + its size field
    summary.groups.append(Group(start, end, rows, digest.digest(), clean, first_last, columns[-6]))


def _epoch_starts(replica: Replica, bases: array, epochs: array, valid: array) -> None:
    """The first offset of each leader epoch above the latest seen, in one chunk of batches."""
    latest = replica.batch_epochs[-1].epoch if replica.batch_epochs else -1
    if max(epochs) <= latest:
        return
    for k in range(len(epochs)):
        if epochs[k] > latest and valid[k]:
            latest = epochs[k]
            replica.batch_epochs.append(EpochEntry(latest, bases[k]))


def _invalid_row(replica: Replica, columns: array, k: int, path: str, batch) -> None:
    position, base, last, crc = columns[8 * k], columns[8 * k + 1], columns[8 * k + 2], columns[8 * k + 4]
    replica.invalid.setdefault(path, set()).add(position)
    if batch is not None:
        message = (f"batch {base}-{last} at position {position}: stored CRC {crc}, computed {batch.computed_crc}")
    else:
        message = (f"batch {base}-{last} at position {position}: stored CRC {crc} does not match "
                   "its bytes (or the entry is too small)")
    replica.damage.append(Damage(Code.BATCH_CRC_MISMATCH, path, position, base, message))


class _IndexCheck:
    """One segment's index checks, fed the batches a chunk at a time (nothing per batch kept).
    Offset index entries must point at a batch start holding their offset (the batch's last
    offset, or an earlier offset of the same append); time index entries must name an offset of
    the segment. Entries confirmed in C (``index_odd``: position and last offset match a batch);
    only the others are looked at here. An entry is checked against the chunk whose last batch
    starts at or after its position (entries taken in position order: the file's when they
    ascend, as Kafka writes them, else sorted)."""

    def __init__(self, replica: Replica, segment) -> None:
        self.replica, self.base_offset = replica, segment.base_offset
        self.index_path, self.time_index_path = segment.index_path, segment.time_index_path
        self.relatives, self.entry_positions = _index_columns(segment.index_path, 8, ((0, 2), (1, 2)))
        positions = self.entry_positions
        self.order = None  # entries not in position order (a damaged index): (position << 32 | number), sorted
        if not all(map(operator.le, positions, positions[1:])):
            self.order = array("q", sorted((p << 32) | n for n, p in enumerate(positions)))
        self.done = 0  # entries checked (in position order)
        self.wrong = 0
        self.first_wrong = None  # (entry number, offset, position)
        self.next_offset = segment.base_offset

    def feed(self, positions: array, bases: array, lasts: array) -> None:
        self.next_offset = lasts[-1] + 1
        relatives, entry_positions, base_offset = self.relatives, self.entry_positions, self.base_offset
        start = self.done
        if start >= len(relatives):
            return
        if self.order is not None:
            stop = bisect_left(self.order, (positions[-1] + 1) << 32, start)
            numbers = [key & 0xFFFFFFFF for key in self.order[start:stop]]
        else:
            stop = bisect_right(entry_positions, positions[-1], start)
            numbers = range(start, stop)
        if stop == start:
            return
        self.done = stop
        count = len(positions)
        odd = numbers
        if native.module is not None and self.order is None:
            packed = array("q", bytes(40 * count))
            packed[0::5] = positions
            packed[1::5] = bases
            packed[2::5] = lasts
            odd = native.module.index_odd(packed, entry_positions, relatives, start, stop, base_offset)
        plist = None
        for n in odd:
            offset, position = base_offset + relatives[n], entry_positions[n]
            if plist is None:
                plist = positions.tolist()
            k = bisect_left(plist, position)
            if k == count or plist[k] != position or bases[k] > offset:
                self._wrong(n, offset, position)

    def _wrong(self, n: int, offset: int, position: int) -> None:
        self.wrong += 1
        if self.first_wrong is None or n < self.first_wrong[0]:
            self.first_wrong = (n, offset, position)

    def finish(self) -> None:
        replica, base_offset, relatives = self.replica, self.base_offset, self.relatives
        rest = range(self.done, len(relatives)) if self.order is None else \
            [key & 0xFFFFFFFF for key in self.order[self.done:]]
        for n in rest:  # past the last batch: point at none
            self._wrong(n, base_offset + relatives[n], self.entry_positions[n])
        time_relatives, = _index_columns(self.time_index_path, 12, ((2, 3),))
        next_offset = self.next_offset
        bad_time = [base_offset + r for r in time_relatives if not 0 <= r < next_offset - base_offset] \
            if time_relatives and (min(time_relatives) < 0 or base_offset + max(time_relatives) >= next_offset) else []
        replica.index_counts[base_offset] = (
            IndexSummary(self.index_path, 8, (0, 2), len(relatives), min(relatives, default=0),
                         max(relatives, default=0)),
            IndexSummary(self.time_index_path, 12, (2, 3), len(time_relatives), min(time_relatives, default=0),
                         max(time_relatives, default=0)))
        if self.wrong:
            _n, offset, position = self.first_wrong
            replica.index_notes.append(IndexNote(base_offset, "offset", "error",
                                                 f"{self.wrong} .index entries point at no batch holding their offset "
                                                 f"(first: offset {offset} -> position {position})"))
        if bad_time:
            replica.index_notes.append(IndexNote(base_offset, "time", "error",
                                                 f"{len(bad_time)} .timeindex entries name offsets outside the segment "
                                                 f"(first: {bad_time[0]})"))


def _index_columns(path: Path, entry_size: int, columns) -> tuple:
    """int32 columns (``(first word, words per entry)``) of an index file's entries, big-endian
    read, up to its last non-zero entry (a preallocated index ends in zeros); empty when absent."""
    try:
        data = read_small_file(path) if path.is_file() else b""
    except (SeglogError, OSError):
        data = b""
    used = len(data.rstrip(b"\0"))
    used = -(-used // entry_size) * entry_size
    words = array("i")
    words.frombytes(data[:used])
    if sys.byteorder == "little":
        words.byteswap()
    return tuple(words[start::step] for start, step in columns)


# -- comparing ------------------------------------------------------------------------------------

@dataclass
class Lost:
    """What a truncation discards from a replica: batches not on the reference."""

    first_offset: int
    last_offset: int
    batches: int = 0
    records: int = 0
    control_records: int = 0
    leader_epochs: list[int] = field(default_factory=list)
    producers: dict = field(default_factory=dict)  # producer id -> dict
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    below_high_watermark: int = 0

    def as_dict(self) -> dict:
        return {"firstOffset": self.first_offset, "lastOffset": self.last_offset, "batches": self.batches,
                "records": self.records, "controlRecords": self.control_records, "leaderEpochs": self.leader_epochs,
                "firstTimestamp": self.first_timestamp, "lastTimestamp": self.last_timestamp,
                "recordsBelowHighWatermark": self.below_high_watermark,
                "producers": [dict(producerId=pid, **info) for pid, info in sorted(self.producers.items())]}


@dataclass
class Comparison:
    replica: Replica
    status: str
    common_prefix_end: int  # offsets [log start, this) agree batch for batch
    divergence: dict | None = None  # offset, cause, this side's batch and the reference's
    corruption: list[dict] = field(default_factory=list)  # same batch, one side's CRC fails
    holes: list[dict] = field(default_factory=list)  # offsets one side lacks in the middle of its log
    truncation: Truncation | None = None
    discarded: int = 0  # records the truncation removes (some may be fetched back unchanged)
    lost: Lost | None = None
    notes: list[dict] = field(default_factory=list)  # checkpoints, indexes, epochs

    def as_dict(self) -> dict:
        out = {"path": str(self.replica.path), "status": self.status, "topicId": self.replica.topic_id,
               "logStartOffset": self.replica.log_start, "logEndOffset": self.replica.log_end,
               "commonPrefix": {"firstOffset": self.replica.log_start, "lastOffset": self.common_prefix_end - 1}
               if self.common_prefix_end > self.replica.log_start else None,
               "divergence": self.divergence, "corruption": self.corruption, "holes": self.holes,
               "truncation": self.truncation.as_dict() if self.truncation else None,
               "discardedRecords": self.discarded, "lost": self.lost.as_dict() if self.lost else None,
               "damage": [d.as_dict() for d in self.replica.damage], "notes": self.notes}
        return out


def _batch(row: tuple) -> dict:
    base, last, epoch, crc, size, ok = row
    return {"baseOffset": base, "lastOffset": last, "partitionLeaderEpoch": epoch, "crc": crc,
            "crcValid": bool(ok), "size": size + 12}


class _Cursor:
    """A replica's batch headers read again in order, from the first batch whose last offset is
    at least ``start``: a group of a segment (:class:`Group`) at a time, in chunks of columns
    (the compiled scanner's, CRCs not computed again: the batches failing them are known from
    :func:`scan_replica`). ``k`` is the current batch of the chunk; ``prev_last`` the last
    offset of the batch before it. Between groups, :func:`_skip_same_groups` can pass over
    groups without reading them."""

    def __init__(self, replica: Replica, start: int) -> None:
        self.replica = replica
        self.log = PartitionLog(replica.path)
        self.groups = [(segment, group) for segment in self.log.segments_from(start)
                       for group in self._groups_of(segment)]
        self.next_group = 0  # the group the next chunk comes from when _chunks is None
        self._chunks = None
        self.base = self.last = self.epoch = self.crc = self.size = array("q")
        self.ok = bytearray()
        self.k = self.n = 0
        self.prev_last = None
        while self.next_group < len(self.groups) and self.groups[self.next_group][1].last_last < start:
            self.next_group += 1  # every batch of the group ends before start
        if self.next_group < len(self.groups) and self.groups[self.next_group][1].first_last < start:
            while self.fill() and self.last[self.k] < start:
                if self.last[-1] < start:
                    self.k = self.n
                else:
                    self.k = bisect_left(self.last, start, self.k)

    def _groups_of(self, segment) -> list:
        summary = self.replica.segments.get(segment.base_offset)
        return summary.groups if summary is not None else []

    def _read(self, segment, group: Group):
        invalid = self.replica.invalid.get(str(segment.log_path), ())
        for columns, _ in column_chunks(LogScan(segment.log, group.start, group.end, resync=True, check_crc=False)):
            if not columns:
                continue
            ok = bytearray(b"\1") * (len(columns) // 8)
            if invalid:
                for k, position in enumerate(columns[0::8]):
                    if position in invalid:
                        ok[k] = 0
            yield columns, ok

    def fill(self) -> bool:
        """Whether there is a current batch (reading the next chunk when this one is done)."""
        while self.k >= self.n:
            if self._chunks is None:
                if self.next_group >= len(self.groups):
                    return False
                self._chunks = self._read(*self.groups[self.next_group])
                self.next_group += 1
            chunk = next(self._chunks, None)
            if chunk is None:
                self._chunks = None
                continue
            self._load(chunk)
        return True

    def _load(self, chunk) -> None:
        columns, self.ok = chunk
        self.base, self.last, self.epoch = columns[1::8], columns[2::8], columns[3::8]
        self.crc, self.size = columns[4::8], columns[5::8]
        self.k, self.n = 0, len(self.ok)

    def upcoming(self) -> Group | None:
        """The group whose first batch is the next one (None mid-group or at the end)."""
        if self.k < self.n:
            return None
        if self._chunks is not None:
            chunk = next(self._chunks, None)
            if chunk is not None:  # not at the end of the group after all
                self._load(chunk)
                return None
            self._chunks = None
        return self.groups[self.next_group][1] if self.next_group < len(self.groups) else None

    def skip_group(self, group: Group) -> None:
        self.next_group += 1
        self.prev_last = group.last_last

    def row(self) -> tuple:
        k = self.k
        return self.base[k], self.last[k], self.epoch[k], self.crc[k], self.size[k], self.ok[k]

    def advance(self, count: int = 1) -> None:
        self.k += count
        self.prev_last = self.last[self.k - 1]

    def close(self) -> None:
        if self._chunks is not None:
            self._chunks.close()
        self.log.close()


def _skip_same_groups(ri: _Cursor, fi: _Cursor) -> bool:
    """Pass over the groups that start both cursors' next batches when :func:`scan_replica`
    found them the same batch for batch (digest of their headers) and every batch valid: the walk
    would only agree all through them. Whether any was skipped."""
    skipped = False
    while True:
        mine, theirs = ri.upcoming(), fi.upcoming()
        if mine is None or theirs is None or mine.digest != theirs.digest or mine.rows != theirs.rows \
                or not mine.clean or not theirs.clean:
            return skipped
        ri.skip_group(mine)
        fi.skip_group(theirs)
        skipped = True


BLOCK = 4096


def _same_run(a: _Cursor, b: _Cursor) -> int:
    """How many batches from the cursors on are the same and valid on both sides (both advanced
    past them), counted a block at a time with C comparisons of array slices (0 when the first
    differs)."""
    n = 0
    size = BLOCK
    while True:
        if not (a.fill() and b.fill()):
            return n
        i, j = a.k, b.k
        k = min(size, a.n - i, b.n - j)
        x, y = slice(i, i + k), slice(j, j + k)
        if (a.base[x] == b.base[y] and a.last[x] == b.last[y] and a.epoch[x] == b.epoch[y] and a.crc[x] == b.crc[y]
                and a.size[x] == b.size[y] and 0 not in a.ok[x] and 0 not in b.ok[y]):
            a.advance(k)
            b.advance(k)
            n += k
            continue
        if k <= 8:
            same = 0
            while same < k and a.row() == b.row() and a.ok[a.k]:
                a.advance()
                b.advance()
                same += 1
            return n + same
        size = k // 8


def compare(reference: Replica, replica: Replica) -> Comparison:
    """``replica`` against ``reference`` (see the module doc): both read in step, a chunk at a time."""
    if reference.topic_id and replica.topic_id and reference.topic_id != replica.topic_id:
        return Comparison(replica, NOT_A_REPLICA, replica.log_start, notes=[{
            "severity": "error", "what": "topicId",
            "message": f"topic id {replica.topic_id} is not the reference's {reference.topic_id}: another topic "
                       "of the same name (deleted and created again), not a replica"}])
    r, f = reference, replica
    start = max(r.log_start, f.log_start)
    result = Comparison(f, IN_SYNC, start)
    ri, fi = _Cursor(r, start), _Cursor(f, start)
    try:
        _walk(ri, fi, result, damaged=bool(r.damage or f.damage))
    finally:
        ri.close()
        fi.close()
    _truncate(r, f, result)
    _notes(r, f, result)
    if f.damage or result.corruption or result.holes or any(n["severity"] == "error" for n in result.notes):
        result.status = DAMAGED
    elif result.divergence is not None or result.discarded:
        result.status = DIVERGENT
    elif f.log_end < r.log_end:
        result.status = LAGGING
    return result


def _walk(ri: _Cursor, fi: _Cursor, result: Comparison, damaged: bool) -> None:
    """The reference's and the replica's batches side by side: agreement, corruption, holes, and
    where (and why) they stop agreeing."""
    f = fi.replica
    agreed_to = result.common_prefix_end
    while True:
        if _skip_same_groups(ri, fi):
            agreed_to = fi.prev_last + 1
        if not (ri.fill() and fi.fill()):
            break
        run = _same_run(ri, fi)
        if run:
            agreed_to = fi.prev_last + 1
            continue
        if not (ri.fill() and fi.fill()):
            break
        rb, fb = ri.row(), fi.row()
        if rb[:5] == fb[:5]:
            if rb[5] and fb[5]:
                agreed_to = fb[1] + 1
            else:
                sides = [name for name, ok in (("replica", fb[5]), ("reference", rb[5])) if not ok]
                result.corruption.append({"firstOffset": fb[0], "lastOffset": fb[1], "crcFailsOn": sides,
                                          "batch": _batch(fb)})
            ri.advance()
            fi.advance()
            continue
        if rb[0] == fb[0] and (not rb[5] or not fb[5]):
            # a batch whose CRC fails says nothing about its epoch or offsets: damage, not divergence
            sides = [name for name, ok in (("replica", fb[5]), ("reference", rb[5])) if not ok]
            result.corruption.append({"firstOffset": fb[0], "lastOffset": fb[1], "crcFailsOn": sides,
                                      "batch": _batch(fb), "referenceBatch": _batch(rb)})
            if rb[1] == fb[1]:
                ri.advance()
                fi.advance()
            elif rb[1] < fb[1]:
                ri.advance()
            else:
                fi.advance()
            continue
        elif rb[0] != fb[0] and damaged:
            # a damaged region hid batches on one side: step the side behind past it
            (ri if rb[0] < fb[0] else fi).advance()
            continue
        elif _hole(ri, fi, result):
            # one side lacks a stretch the other has and then goes on identically: a lost segment
            continue
        cause = "leader-epoch" if rb[2] != fb[2] else "other-bytes"  # same epoch, both CRCs valid, other batches
        result.divergence = {"offset": min(rb[0], fb[0]), "cause": cause, "batch": _batch(fb),
                             "referenceBatch": _batch(rb)}
        break
    result.common_prefix_end = result.divergence["offset"] if result.divergence else min(agreed_to, f.log_end)
    if result.divergence is None and fi.fill():
        # the replica goes on past the reference's log end
        result.divergence = {"offset": fi.base[fi.k], "cause": "longer-than-reference", "batch": _batch(fi.row()),
                             "referenceBatch": None}


def _hole(ri: _Cursor, fi: _Cursor, result: Comparison) -> bool:
    """Whether the side with the lower offset here holds a stretch the other lacks, the other's
    batch turning up further on unchanged (the lower side is then past the stretch). When not,
    the lower side has been read on, and the comparison stops anyway (a divergence)."""
    rb, fb = ri.row(), fi.row()
    if rb[0] < fb[0]:
        a, target, side = ri, fb, "replica"
    elif fb[0] < rb[0]:
        a, target, side = fi, rb, "reference"
    else:
        return False
    first, skipped = a.base[a.k], 0
    while a.fill():
        k = bisect_left(a.base, target[0], a.k)
        skipped += k - a.k
        if k > a.k:
            a.advance(k - a.k)
        if k < a.n:
            break
    if not a.fill() or a.row()[:5] != target[:5]:
        return False
    result.holes.append({"missingOn": side, "firstOffset": first, "lastOffset": a.base[a.k] - 1,
                         "batches": skipped})
    return True


def _truncate(r: Replica, f: Replica, result: Comparison) -> None:
    high_watermark = f.checkpoints.get("highWatermark")
    result.truncation = truncation_offset(r.loaded_epochs(), r.log_start, r.kafka_end, f.loaded_epochs(),
                                          f.kafka_end, high_watermark)
    offset = result.truncation.offset
    if offset >= f.log_end:
        return
    result.discarded = _offsets_from(f, offset)
    # what the reference does not hold: from the divergence on (batches before it are fetched back)
    lost_from = max(offset, result.divergence["offset"] if result.divergence else r.log_end)
    if lost_from < f.log_end:
        result.lost = Lost(lost_from, f.log_end - 1)


def _offsets_from(f: Replica, offset: int) -> int:
    """The offsets (last - base + 1 of each batch) of the batches from the one holding ``offset`` on."""
    cursor = _Cursor(f, offset)
    total = 0
    try:
        while cursor.fill():
            k = cursor.k
            total += sum(cursor.last[k:]) - sum(cursor.base[k:]) + cursor.n - k
            cursor.k = cursor.n
    finally:
        cursor.close()
    return total


def _notes(r: Replica, f: Replica, result: Comparison) -> None:
    notes = result.notes
    for problem in f.problems:
        notes.append({"severity": "error", "what": "file", "message": problem})
    for key, value in f.checkpoints.items():
        other = r.checkpoints.get(key)
        if value != other and key in r.checkpoints:
            notes.append({"severity": "info", "what": key,
                          "message": f"{key} {value} (reference: {other})"})
    limit = min(f.kafka_end, r.kafka_end)
    mine = [(e.epoch, e.start_offset) for e in f.loaded_epochs() if e.start_offset < limit]
    theirs = [(e.epoch, e.start_offset) for e in r.loaded_epochs() if e.start_offset < limit]
    if mine != theirs:
        notes.append({"severity": "info", "what": "leaderEpochs",
                      "message": f"leader epochs below offset {limit} differ: {mine} (reference: {theirs})"})
    elif f.epoch_checkpoint != r.epoch_checkpoint:
        notes.append({"severity": "info", "what": "leaderEpochCheckpoint",
                      "message": "leader-epoch-checkpoint entries differ only past the common log end "
                                 "(each broker's own elections; Kafka drops them when it loads the log)"})
    for note in f.index_notes:
        notes.append({"severity": note.severity, "what": f"{note.kind}Index", "segment": note.segment,
                      "message": note.message})
    common = result.common_prefix_end
    for base, (entries, time_entries) in f.index_counts.items():
        other = r.index_counts.get(base)
        if other is None:
            continue
        for kind, mine, theirs in (("offsetIndex", entries, other[0]), ("timeIndex", time_entries, other[1])):
            mine_n = mine.below(common - base)  # relative offsets, ascending
            theirs_n = theirs.below(common - base)
            if mine_n != theirs_n:
                notes.append({"severity": "info", "what": kind, "segment": base,
                              "message": f"segment {base}: {mine_n} entries below offset {common} (reference: {theirs_n}); entries "
                                         "that are there point right (a broker that restarted mid-segment "
                                         "indexes it afresh)"})



def describe_lost(replica: Replica, lost: Lost, on_record=None) -> None:
    """Fill ``lost`` from the replica's batches (headers; records decoded only for ``on_record``,
    called as ``on_record(segment, batch, record_or_None, control)``)."""
    partition = PartitionLog(replica.path)
    high_watermark = replica.checkpoints.get("highWatermark")
    epochs = set()
    try:
        for segment in partition.segments_from(lost.first_offset):
            buf = segment.log.buffer
            for batch in LogScan(segment.log, segment.index_position(lost.first_offset), resync=True, check_crc=False):
                if batch.last_offset < lost.first_offset:
                    continue
                if batch.base_offset > lost.last_offset:
                    break
                count = batch.records_count if batch.magic >= 2 else 1
                lost.batches += 1
                epochs.add(batch.partition_leader_epoch)
                if batch.is_control:
                    lost.control_records += count
                else:
                    lost.records += count
                if high_watermark is not None and batch.base_offset < high_watermark:
                    lost.below_high_watermark += min(count, high_watermark - batch.base_offset)
                info = lost.producers.setdefault(batch.producer_id, {
                    "producerEpoch": batch.producer_epoch, "records": 0, "firstOffset": batch.base_offset,
                    "lastOffset": batch.last_offset, "firstSequence": batch.base_sequence,
                    "lastSequence": batch.last_sequence, "transactional": batch.is_transactional})
                info["records"] += count
                info["lastOffset"] = batch.last_offset
                info["lastSequence"] = batch.last_sequence
                first_ts = batch.base_timestamp if batch.magic >= 2 else batch.max_timestamp
                if first_ts >= 0:
                    lost.first_timestamp = first_ts if lost.first_timestamp is None else min(lost.first_timestamp, first_ts)
                if batch.max_timestamp >= 0:
                    lost.last_timestamp = max(lost.last_timestamp or batch.max_timestamp, batch.max_timestamp)
                if on_record is not None:
                    on_record(segment, batch, buf)
            segment.close()
    finally:
        partition.close()
    lost.leader_epochs = sorted(epochs)


# -- groups of partitions -------------------------------------------------------------------------

def choose_reference(replicas: list[Replica]) -> Replica:
    """The highest leader epoch, then the longest log, then an undamaged one, then the first given."""
    best = replicas[0]
    for replica in replicas[1:]:
        if (replica.max_epoch(), replica.log_end, not replica.damage) > (best.max_epoch(), best.log_end, not best.damage):
            best = replica
    return best


def partition_groups(paths: list[str]) -> list[list[tuple[str, Path]]]:
    """The inputs as groups of replicas: partition dirs given directly form one group; log dirs
    are matched by partition dir name (each group keeps its log dir's label)."""
    from seglog_cli.storage.log.partition_log import looks_like_partition_dir

    direct, by_name, order = [], {}, []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            raise UnreadableInputError("not a partition directory or log dir", path)
        if looks_like_partition_dir(path):
            direct.append((raw, path))
            continue
        from seglog_cli.storage.log.partition_log import partition_dirs_under
        for directory in partition_dirs_under(path):
            if directory.name not in by_name:
                by_name[directory.name] = []
                order.append(directory.name)
            by_name[directory.name].append((str(directory), directory))
    groups = [direct] if direct else []
    groups += [by_name[name] for name in order]
    return groups


__all__ = ["Comparison", "Damage", "Lost", "Replica", "choose_reference", "compare", "describe_lost",
           "partition_groups", "scan_replica"]


@dataclass
class GroupDiff:
    """One partition's replicas compared with its reference."""

    name: str
    reference: Replica | None
    comparisons: list[Comparison] = field(default_factory=list)
    unreadable: list[dict] = field(default_factory=list)  # path, message

    @property
    def status(self) -> str:
        statuses = {c.status for c in self.comparisons}
        for status in (NOT_A_REPLICA, DAMAGED, DIVERGENT, LAGGING):
            if status in statuses:
                return status
        return IN_SYNC

    def as_dict(self) -> dict:
        return {"partition": self.name, "status": self.status,
                "reference": self.reference.summary() if self.reference else None,
                "replicas": [c.as_dict() for c in self.comparisons], "unreadable": self.unreadable}


def diff_group(members: list[tuple[str, Path]], leader: str | None = None, describe: bool = True) -> GroupDiff:
    """Scan every replica of one partition, pick the reference and compare the others with it.
    ``leader`` (a path) names the reference; the reference's own damage is a comparison of its own."""
    import os

    replicas, unreadable = [], []
    for label, path in members:
        try:
            replicas.append(scan_replica(path, label))
        except (SeglogError, OSError) as exc:
            unreadable.append({"path": label, "message": str(exc)})
    name = Path(members[0][1]).name if members else "?"
    if not replicas:
        return GroupDiff(name, None, unreadable=unreadable)
    reference = None
    if leader is not None:
        wanted = os.path.realpath(leader)
        for replica in replicas:
            if os.path.realpath(replica.path) in (wanted, os.path.join(wanted, replica.path.name)):
                reference = replica
        if reference is None:
            raise UnreadableInputError("--leader is none of the replicas compared", leader)
    else:
        reference = choose_reference(replicas)
    group = GroupDiff(name, reference, unreadable=unreadable)
    if reference.damage:
        group.comparisons.append(Comparison(reference, DAMAGED, reference.log_start,
                                            notes=[{"severity": "error", "what": "reference",
                                                    "message": "the reference replica is damaged itself"}]))
    for replica in replicas:
        if replica is reference:
            continue
        comparison = compare(reference, replica)
        if describe and comparison.lost is not None:
            describe_lost(replica, comparison.lost)
        group.comparisons.append(comparison)
    return group


__all__ += ["GroupDiff", "diff_group"]
