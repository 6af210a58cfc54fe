"""The replicas of a partition compared offline: by offset and batch, as Kafka replicates them.

Followers append the leader's batches byte for byte, so where replicas agree their batches have
the same offsets, ``partitionLeaderEpoch``, CRC and size. Files are not compared by bytes: a
replica that restarted in the middle of a segment indexes it with an entry fewer, and producer
snapshots are taken at each broker's own stops. Each replica is read with header-only scans
(:class:`~seglog_cli.storage.log.batches.LogScan`): once with CRCs computed, into small summaries
(epochs, damage, counts, index checks: :mod:`replica_scan`), then the reference and the replica
again side by side, a chunk of batch headers at a time, without computing CRCs again
(:mod:`replica_comparison`). Nothing is held per batch, so memory does not grow with the log.
Records are decoded only to export what a truncation discards.

This module is ``seglog diff``'s entry: the inputs as one group of replicas per partition
(:func:`partition_groups`), and for each group (:func:`diff_group`) the reference (``--leader``,
else the highest leader epoch, then the longest log: :func:`choose_reference`) and every other
replica compared with it: how far it agrees, where and why it stops agreeing (another leader
epoch; the same epoch but other bytes, naming the side whose CRC fails; a shorter log), and the
offset Kafka truncates it to when it rejoins (:mod:`epoch_truncation`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.replicas.replica_comparison import (DAMAGED, DIVERGENT, IN_SYNC, LAGGING, NOT_A_REPLICA,
                                                            Comparison, compare, describe_lost)
from seglog_cli.storage.replicas.replica_scan import Replica, scan_replica


def choose_reference(replicas: list[Replica]) -> Replica:
    """The highest leader epoch, then the longest log, then an undamaged one, then the first given."""
    best = replicas[0]
    for replica in replicas[1:]:
        if (replica.max_epoch(), replica.log_end, not replica.damage) > (best.max_epoch(), best.log_end, not best.damage):
            best = replica
    return best


def compared_epochs(replicas: list[Replica]) -> dict[int, dict[str, int]]:
    """Every leader epoch the replicas' ``leader-epoch-checkpoint`` files and batches hold, lowest
    first, each with its first offset on each replica holding it (by path)."""
    epochs: dict[int, dict[str, int]] = {}
    for replica in replicas:
        for entry in list(replica.epoch_checkpoint) + list(replica.batch_epochs):
            first = epochs.setdefault(entry.epoch, {})
            path = str(replica.path)
            first[path] = min(first.get(path, entry.start_offset), entry.start_offset)
    return dict(sorted(epochs.items()))


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

    def drop_segment_detail(self) -> "GroupDiff":
        """This group once compared, without the per-segment state of its replicas."""
        for replica in {id(c.replica): c.replica for c in self.comparisons}.values():
            replica.drop_segment_detail()
        if self.reference is not None:
            self.reference.drop_segment_detail()
        return self

    def leader_epochs(self) -> dict[int, dict[str, int]]:
        """The leader epochs compared (:func:`compared_epochs` of every replica)."""
        replicas = [] if self.reference is None else [self.reference]
        replicas += [c.replica for c in self.comparisons if c.replica is not self.reference]
        return compared_epochs(replicas)

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


__all__ = ["GroupDiff", "choose_reference", "compared_epochs", "diff_group", "partition_groups"]
