"""An append run again: the same batches of an idempotent producer at the sequences it already wrote.

Kafka answers a produce request whose sequences the producer wrote last with the earlier offsets
and appends nothing (``DuplicateSequenceException`` inside the broker, success to the client).
seglog does the same for a whole run that names its sequences (``--producer-id`` with
``--base-sequence``): when, in order, every batch of the input is one of the producer's batches
in the log (same epoch, base sequence, transactional or not, and the same records: keys, values
and headers; timestamps aside, which a run without ``--timestamp`` takes from the clock), those
are the producer's last batches, and, with ``--end-txn``, its marker of that kind follows them,
the append is already done (:func:`already_appended`): nothing is planned, and the plan says
where they are. Anything else is refused as before by the producer's checks (a duplicate of older
batches or with other records, a sequence gap).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from itertools import chain
from typing import Iterable, Iterator, Sequence

from seglog_cli.storage.log.batch_header import BatchHeader, increment_sequence
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.producer_state import read_end_txn_marker
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.write.append_plan import AlreadyAppended
from seglog_cli.storage.write.builder import NewRecord


@dataclass(frozen=True, slots=True)
class _Logged:
    """One batch of the producer in the log (its records read only when compared)."""

    segment: LogSegment
    batch: BatchHeader
    marker: str | None  # "COMMIT"/"ABORT" for a control batch

    def same_records(self, records: Sequence[NewRecord]) -> bool:
        if self.batch.records_count != len(records):
            return False
        logged = read_records(self.segment.log.buffer, self.batch, str(self.segment.log_path))
        return _digest((r.key, r.value, r.headers) for r in logged) == \
            _digest((r.key, r.value, r.headers) for r in records)


def _digest(records) -> bytes:
    """The keys, values and headers of records, framed (None apart from empty)."""
    digest = hashlib.sha256()

    def part(data) -> None:
        data = data.encode() if isinstance(data, str) else data
        digest.update(b"-" if data is None else b"+" + len(data).to_bytes(8, "big") + bytes(data))

    for key, value, headers in records:
        part(key)
        part(value)
        digest.update(len(headers).to_bytes(4, "big"))
        for header_key, header_value in headers:
            part(header_key)
            part(header_value)
    return digest.digest()


def already_appended(log: PartitionLog, producer_id: int, producer_epoch: int, base_sequence: int,
                     transactional: bool, end_transaction: str | None,
                     batches: Iterable[Sequence[NewRecord]]) -> tuple[AlreadyAppended | None, Iterator]:
    """Whether ``batches`` (the run's, from ``base_sequence`` on) are the producer's last batches
    in ``log`` (see the module doc). Returns what was found (None: not a rerun) and the batches
    to plan instead: none for a rerun, else at least the first one (which the producer's checks
    then refuse: it does not follow the producer's last sequence)."""
    batches = iter(batches)
    first = next(batches, None)
    while first is not None and not first:
        first = next(batches, None)
    if first is None:
        return None, iter(())
    logged = _producer_batches(log, producer_id, producer_epoch, base_sequence)
    try:
        found = _match(logged, chain((first,), batches), base_sequence, transactional, end_transaction)
    finally:
        for segment in log.segments:
            segment.close()
    if found is None:
        return None, chain((first,), batches)
    data, total = found
    marker = logged[-1] if end_transaction is not None else None
    return AlreadyAppended(producer_id, producer_epoch, base_sequence, increment_sequence(base_sequence, total - 1),
                           logged[0].batch.base_offset, data.batch.last_offset, marker and marker.marker,
                           marker and marker.batch.base_offset), iter(())


def _match(logged: list[_Logged] | None, batches: Iterable[Sequence[NewRecord]], base_sequence: int,
           transactional: bool, end_transaction: str | None) -> tuple[_Logged, int] | None:
    """The last data batch and the number of records, when ``batches`` are ``logged`` (see the
    module doc); None at the first difference."""
    if logged is None:
        return None
    matched, sequence, total = 0, base_sequence, 0
    for records in batches:
        if not records:
            continue
        found = logged[matched] if matched < len(logged) else None
        if found is None or found.marker is not None or found.batch.base_sequence != sequence \
                or found.batch.is_transactional != transactional or not found.same_records(records):
            return None
        sequence = increment_sequence(sequence, len(records))
        matched, total = matched + 1, total + len(records)
    data = logged[matched - 1]
    if end_transaction is not None:
        if matched >= len(logged) or logged[matched].marker != end_transaction.upper():
            return None
        matched += 1
    if matched != len(logged):
        return None  # the producer wrote more since: these are not its last batches
    return data, total


def _producer_batches(log: PartitionLog, producer_id: int, producer_epoch: int,
                      base_sequence: int) -> list[_Logged] | None:
    """The producer's batches of that epoch from its data batch at ``base_sequence`` to the end
    of the log, oldest first (segments read from the newest back until that batch is found);
    None when it is not there."""
    found: list[list[_Logged]] = []
    for segment in reversed(log.segments):
        mine = _segment_batches(segment, producer_id, producer_epoch)
        start = next((i for i, b in enumerate(mine) if b.marker is None and b.batch.base_sequence == base_sequence), None)
        if start is not None:
            found.append(mine[start:])
            return [batch for part in reversed(found) for batch in part]
        found.append(mine)
    return None


def _segment_batches(segment: LogSegment, producer_id: int, producer_epoch: int) -> list[_Logged]:
    mapped, path = segment.log, str(segment.log_path)
    out = []
    try:
        for batch in LogScan(mapped, resync=False):
            if not batch.is_valid:
                break
            if batch.producer_id != producer_id or batch.producer_epoch != producer_epoch:
                continue
            marker = None
            if batch.is_control:
                try:
                    end = read_end_txn_marker(mapped.buffer, batch, path)
                except SeglogError:
                    end = None
                marker = end.control_type if end is not None else "EMPTY"
            out.append(_Logged(segment, batch, marker))
    finally:
        segment.close()
    return out


__all__ = ["already_appended"]
