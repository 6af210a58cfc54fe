"""The leader elections behind a partition's leader epochs, read from the metadata log.

A partition's batches carry the leader epoch of the leader that appended them
(``partitionLeaderEpoch``), and its ``leader-epoch-checkpoint`` the first offset of each; the
controller gave that epoch in a ``PartitionRecord`` or ``PartitionChangeRecord``.
:func:`leader_elections` replays the metadata log once from its first offset (a snapshot only
when the log no longer starts at 0), keeping, for the partitions asked for, each leader epoch's
:class:`LeaderElection`: the leader, the metadata offset and batch time of the record, and what
kind of election it was (:func:`~seglog_cli.storage.metadata.history.election_kind`: created,
clean, preferred, unclean, the leader kept, offline). A topic deleted and created again has
another topic id: its epochs are kept apart (:meth:`PartitionElections.for_epoch`).

An epoch given before the log's first offset (only in the snapshot replayed) is known with its
leader but not when or how (``kind`` ``"before the log"``, no offset).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.metadata.history import change_reasons, election_kind
from seglog_cli.storage.metadata.loader import METADATA_DIR, api_keys, load_image

BEFORE_THE_LOG = "before the log"
_TOPIC_KEY, _PARTITION_KEYS = 2, (3, 5)  # TopicRecord; PartitionRecord, PartitionChangeRecord
ELECTION_TYPES = api_keys({"TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "REMOVE_TOPIC_RECORD",
                           "CLEAR_ELR_RECORD", "BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD",
                           "ABORT_TRANSACTION_RECORD"})


@dataclass(frozen=True)
class LeaderElection:
    """Who led ``leader_epoch`` of a partition, from which metadata record (offset, batch time)
    and why: ``kind`` in a word, ``reason`` as ``seglog metadata --history`` says it."""

    topic_id: str
    leader_epoch: int
    leader: int
    offset: int | None  # None: the epoch is older than the log (read from a snapshot)
    timestamp: int | None
    kind: str
    reason: str
    isr: tuple[int, ...] = ()

    def as_dict(self) -> dict:
        return {"topicId": self.topic_id, "leaderEpoch": self.leader_epoch, "leader": self.leader,
                "metadataOffset": self.offset, "timestamp": self.timestamp, "election": self.kind,
                "reason": self.reason, "isr": list(self.isr)}


@dataclass
class PartitionElections:
    """The elections of one partition (every topic id it had), in log order."""

    topic: str
    partition: int
    elections: list[LeaderElection] = field(default_factory=list)

    def for_epoch(self, leader_epoch: int, topic_id: str | None = None) -> LeaderElection | None:
        """The election that gave ``leader_epoch`` (of ``topic_id`` when known, else of the
        partition's latest topic id holding that epoch)."""
        found = None
        for election in self.elections:
            if election.leader_epoch == leader_epoch and (topic_id is None or election.topic_id == topic_id):
                found = election
        return found


@dataclass
class ElectionLog:
    """What :func:`leader_elections` read: the metadata directory, the offset it ends at and the
    snapshot it started from (when the log no longer starts at 0), and the partitions' elections."""

    directory: Path
    end_offset: int
    snapshot: str | None
    partitions: dict[tuple[str, int], PartitionElections]

    def of(self, topic: str, partition: int) -> PartitionElections | None:
        return self.partitions.get((topic, partition))


class _ElectionRecorder:
    """The observer :func:`load_image` feeds: each wanted partition's leader epochs as given."""

    def __init__(self, wanted: set[tuple[str, int]]):
        self.wanted = wanted
        self.found = {key: PartitionElections(*key) for key in wanted}

    def partition_changed(self, offset, timestamp, topic, partition, before, after, record):
        key = (topic.name, partition)
        if key not in self.wanted:
            return
        kind = election_kind(before, after)
        elections = self.found[key].elections
        if before is not None and not any(e.topic_id == topic.topic_id for e in elections):
            elections.append(_from_snapshot(topic.topic_id, before))  # the registration the snapshot held
        if kind is None:
            return
        reason = next((r for r in change_reasons(before, after) if kind == "created" or "lead" in r
                       or "election" in r), kind)
        elections.append(LeaderElection(topic.topic_id, after.leader_epoch, after.leader, offset, timestamp, kind,
                                        reason, after.isr))

    def broker_changed(self, *args):
        pass


class _TopicFilter:
    """``keep`` for :func:`load_image`: the partition records of the topics asked for only (their
    topic id read from the value, the ids learnt from the TopicRecords of those names), so a
    replay for one partition does not decode every partition of the cluster."""

    def __init__(self, names: set[str]):
        self.names = {name.encode() for name in names}
        self.ids: set[bytes] = set()

    def __call__(self, value) -> bool:
        api_key = value[1]
        if api_key in _PARTITION_KEYS and value[0] == 1 and value[2] < 0x80:
            return bytes(value[7:23]) in self.ids  # frame (3 bytes), int32 partition id, the topic id
        if api_key == _TOPIC_KEY and value[0] == 1 and value[2] < 0x80:
            start, length = 4, value[3]  # a compact string (unsigned varint length + 1) then the topic id
            if length >= 0x80:  # names of 127 bytes and more: a two-byte length (Kafka's are under 250)
                start, length = 5, (length & 0x7F) | (value[4] << 7)
            end = start + length - 1
            if bytes(value[start:end]) in self.names:
                self.ids.add(bytes(value[end:end + 16]))
        return True


def _from_snapshot(topic_id: str, registration) -> LeaderElection:
    return LeaderElection(topic_id, registration.leader_epoch, registration.leader, None, None, BEFORE_THE_LOG,
                          f"leader {registration.leader} (leader epoch {registration.leader_epoch}) in the snapshot "
                          "the log starts from", registration.isr)


def leader_elections(path: str | Path, partitions) -> ElectionLog:
    """The elections of ``partitions`` (``(topic, partition)`` pairs) in the metadata log of
    ``path`` (a ``__cluster_metadata-0`` dir or a log dir holding one), read in one replay of the
    record types elections need."""
    wanted = set(partitions)
    recorder = _ElectionRecorder(wanted)
    loaded = load_image(path, observer=recorder, types=ELECTION_TYPES, from_start=True,
                        keep=_TopicFilter({topic for topic, _ in wanted}))
    for (topic, partition), found in recorder.found.items():
        image = loaded.image.topic(topic)
        registration = None if image is None else image.partitions.get(partition)
        if registration is not None and not any(e.topic_id == image.topic_id for e in found.elections):
            found.elections.append(_from_snapshot(image.topic_id, registration))
    return ElectionLog(loaded.directory, loaded.end_offset, loaded.snapshot, recorder.found)


def metadata_dir_beside(directories) -> Path | None:
    """The first ``__cluster_metadata-0`` in the given log dirs (a broker's copy of the metadata
    log beside its partitions), else None."""
    for directory in directories:
        candidate = Path(directory) / METADATA_DIR
        if candidate.is_dir():
            return candidate
    return None


__all__ = ["ElectionLog", "LeaderElection", "PartitionElections", "leader_elections", "metadata_dir_beside"]
