"""The replicas of a partition compared offline: by offset and batch, as Kafka replicates them.

Followers append the leader's batches byte for byte, so where replicas agree their batches have
the same offsets, ``partitionLeaderEpoch``, CRC and size. Files are not compared by bytes: a
replica that restarted in the middle of a segment indexes it with an entry fewer, and producer
snapshots are taken at each broker's own stops. Each replica is read once with header-only
scans (:class:`~seglog_cli.storage.batches.LogScan`, CRCs computed), into compact arrays; the
comparison then works on the arrays. Records are decoded only to export what a truncation
discards.

For every replica but the reference (``--leader``, else the highest leader epoch, then the
longest log) :func:`compare` says how far it agrees, where and why it stops agreeing (another
leader epoch; the same epoch but other bytes, naming the side whose CRC fails; a shorter log),
and the offset Kafka truncates it to when it rejoins (:mod:`epoch_truncation`).
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage import native
from seglog_cli.storage.batches import LogScan
from seglog_cli.storage.checkpoints import (EpochEntry, TopicPartition, read_leader_epoch_checkpoint,
                                            read_offset_checkpoint, read_partition_metadata)
from seglog_cli.storage.epoch_truncation import Truncation, loaded_epochs, truncation_offset
from seglog_cli.storage.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.files import read_small_file
from seglog_cli.storage.findings import Code
from seglog_cli.storage.log_dir_files import (CLEAN_SHUTDOWN, LEADER_EPOCH_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                                              PARTITION_METADATA, RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT)
from seglog_cli.storage.partition_log import PartitionLog

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
class Replica:
    """One replica, scanned: batch headers as arrays (base, last, epoch, crc, size, ok)."""

    path: Path
    label: str
    topic: str | None
    partition: int | None
    topic_id: str | None = None
    epoch_checkpoint: list[EpochEntry] = field(default_factory=list)
    checkpoints: dict = field(default_factory=dict)
    clean_shutdown: bool | None = None
    segment_bases: list[int] = field(default_factory=list)
    base: array = field(default_factory=lambda: array("q"))
    last: array = field(default_factory=lambda: array("q"))
    epoch: array = field(default_factory=lambda: array("q"))
    crc: array = field(default_factory=lambda: array("q"))
    size: array = field(default_factory=lambda: array("q"))  # the size field (bytes after it)
    ok: bytearray = field(default_factory=bytearray)  # 1: the batch passes its CRC and size checks
    records: int = 0
    damage: list[Damage] = field(default_factory=list)
    index_counts: dict = field(default_factory=dict)  # segment base -> offsets of (.index, .timeindex) entries
    index_notes: list[IndexNote] = field(default_factory=list)
    batch_epochs: list[EpochEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # unreadable side files

    @property
    def log_start(self) -> int:
        return self.base[0] if self.base else (self.segment_bases[0] if self.segment_bases else 0)

    @property
    def log_end(self) -> int:
        return self.last[-1] + 1 if self.last else (self.segment_bases[-1] if self.segment_bases else 0)

    @property
    def kafka_end(self) -> int:
        """The log end Kafka's recovery keeps: before the first damaged batch or region."""
        first = self.first_damage_offset()
        return self.log_end if first is None else max(self.log_start, first)

    def first_damage_offset(self) -> int | None:
        offsets = [d.offset for d in self.damage if d.offset is not None]
        return min(offsets) if offsets else (self.log_start if self.damage else None)

    def valid(self, i: int) -> bool:
        return bool(self.ok[i])

    def max_epoch(self) -> int:
        epochs = [e.epoch for e in self.epoch_checkpoint] + [e.epoch for e in self.batch_epochs]
        return max(epochs, default=-1)

    def loaded_epochs(self) -> list[EpochEntry]:
        return loaded_epochs(self.epoch_checkpoint, self.batch_epochs, self.log_start, self.kafka_end)

    def index_of_offset(self, offset: int) -> int:
        """Index of the first batch whose last offset >= ``offset``."""
        return bisect_left(self.last, offset)

    def summary(self) -> dict:
        return {"path": str(self.path), "topicId": self.topic_id, "logStartOffset": self.log_start,
                "logEndOffset": self.log_end, "batches": len(self.base), "records": self.records,
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
    """Read a partition directory's batch headers (CRCs checked), indexes and checkpoints."""
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


def _scan_segment(replica: Replica, segment) -> None:
    """One segment's batch headers into the replica's arrays: the compiled scanner's columns
    (8 int64 per batch) sliced into them, no Python object per batch."""
    path = str(segment.log_path)
    positions = array("q")
    first = len(replica.base)
    scan = LogScan(segment.log, 0, resync=True, check_crc=True)
    for chunk in scan.columns():
        if type(chunk) is list:  # entry by entry (no compiled module, or around damage)
            for batch in chunk:
                _add_batch(replica, batch, path, positions)
            continue
        columns = array("q")
        columns.frombytes(chunk)
        offset_in = len(replica.base)
        positions.extend(columns[0::8])
        replica.base.extend(columns[1::8])
        replica.last.extend(columns[2::8])
        epochs = columns[3::8]
        replica.epoch.extend(epochs)
        replica.crc.extend(columns[4::8])
        replica.size.extend(columns[5::8])
        valid = columns[6::8]
        replica.ok.extend(valid.tolist())
        counts = columns[7::8]
        replica.records += sum(counts) if min(counts) >= 0 else sum(c if c > 0 else (1 if c < 0 else 0) for c in counts)
        if 0 in valid:
            for k in (k for k, ok in enumerate(valid) if not ok):
                _invalid_row(replica, offset_in + k, columns, k, path)
        _epoch_starts(replica, offset_in)
    for finding in scan.findings:
        replica.damage.append(Damage(finding.code, path, finding.position, finding.offset, finding.message))
    if not scan.findings and scan.kafka_error is not None:
        replica.damage.append(Damage(Code.CORRUPT_REGION, path, scan.kafka_error.position, None, str(scan.kafka_error)))
    _check_indexes(replica, segment, positions, first)


def _epoch_starts(replica: Replica, start: int) -> None:
    """The first offset of each leader epoch above the latest seen, from batch ``start`` on."""
    epochs, ok = replica.epoch, replica.ok
    latest = replica.batch_epochs[-1].epoch if replica.batch_epochs else -1
    if max(epochs[start:], default=-1) <= latest:
        return
    for k in range(start, len(epochs)):
        if epochs[k] > latest and ok[k]:
            latest = epochs[k]
            replica.batch_epochs.append(EpochEntry(latest, replica.base[k]))


def _invalid_row(replica: Replica, index: int, columns: array, k: int, path: str) -> None:
    replica.ok[index] = 0
    position, base, last, crc = columns[8 * k], columns[8 * k + 1], columns[8 * k + 2], columns[8 * k + 4]
    replica.damage.append(Damage(Code.BATCH_CRC_MISMATCH, path, position, base,
                                 f"batch {base}-{last} at position {position}: stored CRC {crc} does not match "
                                 "its bytes (or the entry is too small)"))


def _add_batch(replica: Replica, batch, path: str, positions: array) -> None:
    """A legacy (v0/v1) entry, one at a time."""
    index = len(replica.base)
    replica.base.append(batch.base_offset)
    replica.last.append(batch.last_offset)
    replica.epoch.append(batch.partition_leader_epoch)
    replica.crc.append(batch.crc)
    replica.size.append(batch.length)
    replica.ok.append(1)
    positions.append(batch.position)
    replica.records += batch.records_count if batch.magic >= 2 and batch.records_count > 0 else (batch.magic < 2)
    if not batch.is_valid:
        _invalid(replica, index, batch, path)
    _epoch_starts(replica, index)


def _invalid(replica: Replica, index: int, batch, path: str) -> None:
    replica.ok[index] = 0
    replica.damage.append(Damage(Code.BATCH_CRC_MISMATCH, path, batch.position, batch.base_offset,
                                 f"batch {batch.base_offset}-{batch.last_offset} at position {batch.position}: "
                                 f"stored CRC {batch.crc}, computed {batch.computed_crc}"))


def _check_indexes(replica: Replica, segment, positions: array, first: int) -> None:
    """Offset index entries must point at a batch start holding their offset (the batch's last
    offset, or an earlier offset of the same append); time index entries must name an offset of
    the segment. Entries confirmed in C (``index_odd``: position and last offset match a batch);
    only the others are looked at here."""
    base_offset = segment.base_offset
    relatives, entry_positions = _index_columns(segment.index_path, 8, ((0, 2), (1, 2)))
    time_relatives, = _index_columns(segment.time_index_path, 12, ((2, 3),))
    count = len(positions)
    bases = replica.base[first:]
    lasts = replica.last[first:]
    odd = range(len(relatives))
    if native.module is not None and count:
        packed = array("q", bytes(40 * count))
        packed[0::5] = positions
        packed[1::5] = bases
        packed[2::5] = lasts
        odd = native.module.index_odd(packed, entry_positions, relatives, 0, len(relatives), base_offset)
    wrong = []
    plist = None
    for n in odd:
        offset, position = base_offset + relatives[n], entry_positions[n]
        if plist is None:
            plist = positions.tolist()
        k = bisect_left(plist, position)
        if k == count or plist[k] != position or bases[k] > offset:
            wrong.append((offset, position))
    next_offset = lasts[-1] + 1 if count else base_offset
    bad_time = [base_offset + r for r in time_relatives if not 0 <= r < next_offset - base_offset] \
        if time_relatives and (min(time_relatives) < 0 or base_offset + max(time_relatives) >= next_offset) else []
    replica.index_counts[base_offset] = (relatives, time_relatives)
    if wrong:
        offset, position = wrong[0]
        replica.index_notes.append(IndexNote(base_offset, "offset", "error",
                                             f"{len(wrong)} .index entries point at no batch holding their offset "
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


def _batch(replica: Replica, i: int) -> dict:
    return {"baseOffset": replica.base[i], "lastOffset": replica.last[i], "partitionLeaderEpoch": replica.epoch[i],
            "crc": replica.crc[i], "crcValid": replica.valid(i), "size": replica.size[i] + 12}


def _same_header(a: Replica, i: int, b: Replica, j: int) -> bool:
    return (a.base[i] == b.base[j] and a.last[i] == b.last[j] and a.epoch[i] == b.epoch[j]
            and a.crc[i] == b.crc[j] and a.size[i] == b.size[j])


BLOCK = 4096


def _same_run(a: Replica, i: int, b: Replica, j: int) -> int:
    """How many batches from ``a[i]``/``b[j]`` on are the same and valid on both sides, counted a
    block at a time with C comparisons of array slices (0 when the first differs)."""
    n = 0
    size = BLOCK
    while True:
        k = min(size, len(a.base) - i - n, len(b.base) - j - n)
        if k <= 0:
            return n
        x, y = slice(i + n, i + n + k), slice(j + n, j + n + k)
        if (a.base[x] == b.base[y] and a.last[x] == b.last[y] and a.epoch[x] == b.epoch[y] and a.crc[x] == b.crc[y]
                and a.size[x] == b.size[y] and 0 not in a.ok[x] and 0 not in b.ok[y]):
            n += k
            continue
        if k <= 8:
            while k and _same_header(a, i + n, b, j + n) and a.ok[i + n] and b.ok[j + n]:
                n += 1
                k -= 1
            return n
        size = k // 8


def compare(reference: Replica, replica: Replica) -> Comparison:
    """``replica`` against ``reference`` (see the module doc)."""
    if reference.topic_id and replica.topic_id and reference.topic_id != replica.topic_id:
        return Comparison(replica, NOT_A_REPLICA, replica.log_start, notes=[{
            "severity": "error", "what": "topicId",
            "message": f"topic id {replica.topic_id} is not the reference's {reference.topic_id}: another topic "
                       "of the same name (deleted and created again), not a replica"}])
    r, f = reference, replica
    i, j = 0, 0
    start = max(r.log_start, f.log_start)
    i, j = r.index_of_offset(start), f.index_of_offset(start)
    result = Comparison(f, IN_SYNC, start)
    agreed_to = start
    while i < len(r.base) and j < len(f.base):
        run = _same_run(r, i, f, j)
        if run:
            i, j = i + run, j + run
            agreed_to = f.last[j - 1] + 1
            continue
        if _same_header(r, i, f, j):
            if r.valid(i) and f.valid(j):
                agreed_to = f.last[j] + 1
            else:
                sides = [name for name, ok in (("replica", f.valid(j)), ("reference", r.valid(i))) if not ok]
                result.corruption.append({"firstOffset": f.base[j], "lastOffset": f.last[j], "crcFailsOn": sides,
                                          "batch": _batch(f, j)})
            i, j = i + 1, j + 1
            continue
        if r.base[i] == f.base[j] and (not r.valid(i) or not f.valid(j)):
            # a batch whose CRC fails says nothing about its epoch or offsets: damage, not divergence
            sides = [name for name, ok in (("replica", f.valid(j)), ("reference", r.valid(i))) if not ok]
            result.corruption.append({"firstOffset": f.base[j], "lastOffset": f.last[j], "crcFailsOn": sides,
                                      "batch": _batch(f, j), "referenceBatch": _batch(r, i)})
            if r.last[i] == f.last[j]:
                i, j = i + 1, j + 1
            elif r.last[i] < f.last[j]:
                i += 1
            else:
                j += 1
            continue
        elif r.base[i] != f.base[j] and (r.damage or f.damage):
            # a damaged region hid batches on one side: step the side behind past it
            if r.base[i] < f.base[j]:
                i += 1
            else:
                j += 1
            continue
        elif _hole(r, i, f, j, result):
            # one side lacks a stretch the other has and then goes on identically: a lost segment
            i, j = result.holes[-1].pop("_resume")
            continue
        elif r.epoch[i] != f.epoch[j]:
            cause = "leader-epoch"
        else:
            cause = "other-bytes"  # same epoch, both CRCs valid, other batches
        offset = min(r.base[i], f.base[j])
        result.divergence = {"offset": offset, "cause": cause, "batch": _batch(f, j), "referenceBatch": _batch(r, i)}
        break
    result.common_prefix_end = result.divergence["offset"] if result.divergence else min(agreed_to, f.log_end)
    if result.divergence is None and j < len(f.base):
        # the replica goes on past the reference's log end
        result.divergence = {"offset": f.base[j], "cause": "longer-than-reference", "batch": _batch(f, j),
                             "referenceBatch": None}
    _truncate(r, f, result)
    _notes(r, f, result)
    if f.damage or result.corruption or result.holes or any(n["severity"] == "error" for n in result.notes):
        result.status = DAMAGED
    elif result.divergence is not None or result.discarded:
        result.status = DIVERGENT
    elif f.log_end < r.log_end:
        result.status = LAGGING
    return result


def _hole(r: Replica, i: int, f: Replica, j: int, result: "Comparison") -> bool:
    """Whether the side with the lower offset here holds a stretch the other lacks, the other's
    batch turning up further on unchanged; the hole is recorded with where to resume."""
    import bisect

    for (a, k0, b, k1, side) in ((r, i, f, j, "replica"), (f, j, r, i, "reference")):
        if a.base[k0] < b.base[k1]:
            k = bisect.bisect_left(a.base, b.base[k1], k0)
            if k < len(a.base) and a.base[k] == b.base[k1] and _same_header(a, k, b, k1):
                hole = {"missingOn": side, "firstOffset": a.base[k0], "lastOffset": a.base[k] - 1,
                        "batches": k - k0}
                hole["_resume"] = (k, j) if side == "replica" else (i, k)
                result.holes.append(hole)
                return True
    return False


def _truncate(r: Replica, f: Replica, result: Comparison) -> None:
    high_watermark = f.checkpoints.get("highWatermark")
    result.truncation = truncation_offset(r.loaded_epochs(), r.log_start, r.kafka_end, f.loaded_epochs(),
                                          f.kafka_end, high_watermark)
    offset = result.truncation.offset
    if offset >= f.log_end:
        return
    k = f.index_of_offset(offset)
    result.discarded = sum(_count(f, n) for n in range(k, len(f.base)))
    # what the reference does not hold: from the divergence on (batches before it are fetched back)
    lost_from = max(offset, result.divergence["offset"] if result.divergence else r.log_end)
    if lost_from < f.log_end:
        result.lost = Lost(lost_from, f.log_end - 1)


def _count(f: Replica, n: int) -> int:
    return f.last[n] - f.base[n] + 1


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
            mine_n = bisect_left(mine, common - base)  # relative offsets, ascending
            theirs_n = bisect_left(theirs, common - base)
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
    from seglog_cli.storage.partition_log import looks_like_partition_dir

    direct, by_name, order = [], {}, []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            raise UnreadableInputError("not a partition directory or log dir", path)
        if looks_like_partition_dir(path):
            direct.append((raw, path))
            continue
        from seglog_cli.storage.partition_log import partition_dirs_under
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
