"""One replica read into summaries, for ``seglog diff`` and ``seglog repair``: :func:`scan_replica`.

A partition directory's batch headers are read once with a resyncing header-only scan, CRCs
computed (:class:`~seglog_cli.storage.log.batches.LogScan`'s columns: 8 int64 per batch, see
:func:`column_chunks`), and folded into small summaries (:class:`Replica`): batch and record
counts, the first offset of each leader epoch, the damage found, the batches of each segment in
groups with a digest of their header columns (:class:`Group`: what the comparison may pass over
unread), and the offset and time indexes checked against the batches (:class:`_IndexCheck`).
The leader-epoch-checkpoint, partition.metadata and the log dir's checkpoints are read beside
them. Nothing is held per batch, so memory does not grow with the log.
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
                                                offset_checkpoint_view, read_partition_metadata)
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import read_small_file
from seglog_cli.storage.log.findings import Code
from seglog_cli.storage.log.log_dir_files import (CLEAN_SHUTDOWN, LEADER_EPOCH_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                                                  PARTITION_METADATA, RECOVERY_POINT_CHECKPOINT,
                                                  REPLICATION_CHECKPOINT)
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.replicas.epoch_truncation import loaded_epochs


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

    def drop_segment_detail(self) -> None:
        """Forget what only a comparison needs (per-segment summaries, index counts, invalid
        batch positions), so a diff of thousands of partitions keeps a few numbers per replica."""
        self.segments, self.index_counts, self.invalid = {}, {}, {}

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
            offsets = _read_if_present(log_dir / name, offset_checkpoint_view, replica, name)
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
    read, up to its last non-zero entry (a preallocated index ends in zeros); empty when absent.
    A partial entry at the end is none (Kafka counts ``length // entry_size``)."""
    try:
        data = read_small_file(path) if path.is_file() else b""
    except (SeglogError, OSError):
        data = b""
    used = len(data.rstrip(b"\0"))
    used = min(-(-used // entry_size), len(data) // entry_size) * entry_size
    words = array("i")
    words.frombytes(data[:used])
    if sys.byteorder == "little":
        words.byteswap()
    return tuple(words[start::step] for start, step in columns)


__all__ = ["Damage", "Replica", "scan_replica"]
