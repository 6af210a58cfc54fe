"""A replica compared with the reference, batch by batch: :func:`compare`.

The two replicas' batch headers are read again side by side (:class:`_Cursor`, CRCs not
computed again: :func:`~seglog_cli.storage.replicas.replica_scan.scan_replica` found the batches
failing them), a chunk of columns at a time. Groups the scan found identical on both sides are
passed over unread (:func:`_skip_same_groups`) and runs of identical batches are compared as
array slices (:func:`_same_run`). The :class:`Comparison` says how far the replica agrees with
the reference, where and why it stops agreeing (another leader epoch; the same epoch but other
bytes; a batch whose CRC fails on one side; a stretch one side lacks), the offset Kafka
truncates it to when it rejoins (:mod:`epoch_truncation`), what that truncation discards
(:class:`Lost`, described by :func:`describe_lost`) and notes on checkpoints, leader epochs and
indexes.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass, field

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.replicas.epoch_truncation import Truncation, truncation_offset
from seglog_cli.storage.replicas.replica_scan import Group, Replica, column_chunks


# status of a replica against the reference, worst last
IN_SYNC, LAGGING, DIVERGENT, DAMAGED, NOT_A_REPLICA, REFERENCE = (
    "in-sync", "lagging", "divergent", "damaged", "not-a-replica", "reference")


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


__all__ = ["Comparison", "Lost", "compare", "describe_lost"]
