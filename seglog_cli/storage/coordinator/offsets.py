"""Committed consumer-group offsets, materialised offline from ``__consumer_offsets``.

The group coordinator rebuilds its offsets by replaying its partition in offset order
(``OffsetMetadataManager.replay`` / ``replayEndTransactionMarker``); this does the same:

* an offset commit record (record type 0 or 1) outside a transaction sets the offset of its
  (group, topic, partition) key; a tombstone deletes it, and drops any pending transactional
  commit of that key;
* a commit inside a transactional batch is held per producer id until the producer's marker:
  COMMIT applies each held commit unless the key already has one written later in the log,
  ABORT drops them. Commits still held at the end of the log are *pending* (no marker yet:
  an open, or hanging, transaction), reported apart and not counted as committed.

Other record types (group metadata, KIP-848 records) are read and skipped; records that cannot
be read are counted with Kafka's message.

Each committed offset is then set against its topic partition in the same log dir(s): log start
and end offsets, high watermark, lag and flags (:mod:`seglog_cli.storage.coordinator.consumer_lag`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.formats.group_coordinator import OFFSET_COMMIT_TYPES
from seglog_cli.storage.coordinator.consumer_lag import PartitionEnds, Position, position_of
from seglog_cli.storage.coordinator.coordinator_log import (
    CONSUMER_OFFSETS,
    WalkProblem,
    partition_dirs,
    partition_entries,
    sorted_partitions,
    topic_of,
)
from seglog_cli.storage.serde.coordinator_records import (
    GROUP_RECORD_TYPES,
    CoordinatorRecordError,
    read_coordinator_record,
)
from seglog_cli.storage.log.errors import UnreadableInputError

COMMIT = 1  # control record type of a COMMIT marker (ABORT is 0)
REPORT_VERSION = 1  # of the JSON document (OffsetsReport.as_dict)


@dataclass(frozen=True)
class CommittedOffset:
    """One group's committed position in one topic partition."""

    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None
    value_version: int
    coordinator_partition: str  # the __consumer_offsets-N directory it was read from
    record_offset: int  # the commit record's offset there
    producer_id: int | None  # set for a transactional offset commit

    @property
    def key(self) -> tuple[str, str, int]:
        return self.group, self.topic, self.partition

    def as_dict(self) -> dict:
        """The JSON form (OffsetCommitKey/OffsetCommitValue's own field names)."""
        return {"group": self.group, "topic": self.topic, "partition": self.partition, "offset": self.offset,
                "leaderEpoch": self.leader_epoch, "metadata": self.metadata,
                "commitTimestamp": self.commit_timestamp, "expireTimestamp": self.expire_timestamp,
                "valueVersion": self.value_version, "coordinatorPartition": self.coordinator_partition,
                "recordOffset": self.record_offset, "producerId": self.producer_id}


@dataclass(frozen=True)
class Unreadable:
    coordinator_partition: str
    record_offset: int
    message: str

    def as_dict(self) -> dict:
        return {"coordinatorPartition": self.coordinator_partition, "recordOffset": self.record_offset,
                "message": self.message}


@dataclass
class OffsetsReport:
    committed: list[CommittedOffset] = field(default_factory=list)
    pending: list[CommittedOffset] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)
    problems: list[WalkProblem] = field(default_factory=list)
    partitions_read: int = 0
    records_read: int = 0
    # of the committed offsets, by (group, topic, partition, offset)
    positions: dict[tuple[str, str, int, int], Position] = field(default_factory=dict)

    @property
    def flagged_groups(self) -> list[str]:
        return sorted({key[0] for key, position in self.positions.items() if position.flags})

    def committed_dict(self, commit: CommittedOffset) -> dict:
        """A committed offset's JSON form with its partition's offsets, lag and flags."""
        position = self.positions.get((*commit.key, commit.offset))
        if position is None:
            return commit.as_dict()
        end = position.end
        notes = list(position.explanations) + ([end.note] if end.note else [])
        return {**commit.as_dict(), "logStartOffset": end.log_start_offset, "logEndOffset": end.log_end_offset,
                "highWatermark": end.high_watermark, "lag": position.lag, "lagBasis": position.lag_basis,
                "logEndSource": end.end_source, "partitionDir": end.directory, "flags": list(position.flags),
                "notes": notes}

    def as_dict(self) -> dict:
        return {"version": REPORT_VERSION, "committed": [self.committed_dict(c) for c in self.committed],
                "pending": [c.as_dict() for c in self.pending],
                "unreadable": [u.as_dict() for u in self.unreadable],
                "problems": [p.as_dict() for p in self.problems],
                "partitionsRead": self.partitions_read, "recordsRead": self.records_read,
                "flaggedGroups": self.flagged_groups}


class _PartitionState:
    """The replay state of one ``__consumer_offsets`` partition."""

    def __init__(self):
        self.offsets: dict[tuple, CommittedOffset] = {}
        self.pending: dict[int, dict[tuple, CommittedOffset | None]] = {}

    def commit(self, key: tuple, commit: CommittedOffset | None, producer_id: int | None) -> None:
        if producer_id is not None:
            self.pending.setdefault(producer_id, {})[key] = commit
        elif commit is not None:
            self.offsets[key] = commit
        else:
            self.offsets.pop(key, None)
            for held in self.pending.values():
                held.pop(key, None)

    def end_transaction(self, producer_id: int, committed: bool, marker_offset: int) -> None:
        held = self.pending.pop(producer_id, {})
        if not committed:
            return
        for key, commit in held.items():
            current = self.offsets.get(key)
            if commit is None:
                self.offsets.pop(key, None)
            elif current is None or current.record_offset < commit.record_offset:
                self.offsets[key] = commit


def read_committed_offsets(log_dir: str | Path, group: str | None = None,
                           topic: str | None = None) -> OffsetsReport:
    """The committed offsets as of the end of every ``__consumer_offsets`` partition under
    ``log_dir``, optionally for one group and/or one topic, each set against its topic
    partition in the same log dir(s) (``report.positions``)."""
    found = partition_dirs(log_dir)
    directories = sorted_partitions([d for d in found if topic_of(d) == CONSUMER_OFFSETS])
    if not directories:
        raise UnreadableInputError(f"no {CONSUMER_OFFSETS} partitions found (give a Kafka log dir)", log_dir)
    report = OffsetsReport()
    for directory in directories:
        state = _replay(directory, report)
        report.committed.extend(state.offsets.values())
        report.pending.extend(c for held in state.pending.values() for c in held.values() if c is not None)
    wanted = _matches(group, topic)
    report.committed = sorted(filter(wanted, report.committed), key=_order)
    report.pending = sorted(filter(wanted, report.pending), key=_order)
    ends = PartitionEnds(found)
    report.positions = {(*c.key, c.offset): position_of(c.offset, ends.end(c.topic, c.partition)) for c in report.committed}
    return report


def _replay(directory: Path, report: OffsetsReport) -> _PartitionState:
    state = _PartitionState()
    report.partitions_read += 1
    for entry in partition_entries(directory, report.problems):
        report.records_read += 1
        batch, record = entry.batch, entry.record
        if entry.control is not None:
            if entry.control.is_transaction_marker:
                state.end_transaction(batch.producer_id, entry.control.type_id == COMMIT, record.offset)
            continue
        if record.key is None:
            report.unreadable.append(Unreadable(entry.partition, record.offset, "the record has no key"))
            continue
        try:
            decoded = read_coordinator_record(record.key, record.value, GROUP_RECORD_TYPES)
        except CoordinatorRecordError as exc:
            report.unreadable.append(Unreadable(entry.partition, record.offset, exc.message))
            continue
        if decoded.record_type not in OFFSET_COMMIT_TYPES:
            continue
        key = (decoded.key["group"], decoded.key["topic"], decoded.key["partition"])
        producer_id = batch.producer_id if batch.is_transactional else None
        commit = None if decoded.is_tombstone else _commit(key, decoded, entry.partition, record.offset, producer_id)
        state.commit(key, commit, producer_id)
    return state


def _commit(key, decoded, partition: str, record_offset: int, producer_id) -> CommittedOffset:
    value = decoded.value
    return CommittedOffset(
        group=key[0], topic=key[1], partition=key[2], offset=value["offset"],
        leader_epoch=value.get("leaderEpoch", -1), metadata=value["metadata"],
        commit_timestamp=value["commitTimestamp"], expire_timestamp=value.get("expireTimestamp"),
        value_version=decoded.value_version, coordinator_partition=partition,
        record_offset=record_offset, producer_id=producer_id)


def _matches(group: str | None, topic: str | None):
    def wanted(commit: CommittedOffset) -> bool:
        return (group is None or commit.group == group) and (topic is None or commit.topic == topic)
    return wanted


def _order(commit: CommittedOffset):
    return commit.group, commit.topic, commit.partition, commit.record_offset
