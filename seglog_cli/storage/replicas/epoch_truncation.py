"""Where Kafka truncates a replica that rejoins a leader: the leader-epoch arithmetic, offline.

Modelled on Apache Kafka (read in apache/kafka at commit 1eb7644, trunk towards 4.0: the stored
snapshot had no 4.2 tag; the Kafka 4.2.0 brokers of the replicas corpus truncated exactly as this
model says, ``TruncationState(offset=3900)`` after ``EpochEndOffset(leaderEpoch=2, endOffset=3900)``):

* ``storage/src/main/java/org/apache/kafka/storage/internals/epoch/LeaderEpochFileCache.java``:
  ``endOffsetFor(requestedEpoch, logEndOffset)`` (:func:`end_offset_for`),
  ``truncateFromEnd`` / ``truncateFromStart`` (:func:`loaded_epochs`, what ``LogLoader`` does to
  the checkpoint at start-up) and ``assign`` (epochs of batches recovered past the checkpoint);
* ``core/src/main/scala/kafka/cluster/Partition.scala`` ``readRecords``: the leader answers a
  fetch whose ``lastFetchedEpoch`` it cannot match with a diverging epoch when
  ``epochEndOffset.leaderEpoch < fetchEpoch || epochEndOffset.endOffset < fetchOffset``, and with
  OFFSET_OUT_OF_RANGE when the end offset is undefined or the fetch offset is below its log start;
* ``core/src/main/scala/kafka/server/AbstractFetcherThread.scala``: ``truncateOnFetchResponse``
  -> ``getOffsetTruncationState`` (the follower's own end offset for the leader's epoch; an
  intermediate truncation and another round when it does not know that epoch) and
  ``fetchOffsetAndTruncate`` (out of range: truncate to the leader's log end when the follower's
  is larger); ``ReplicaManager.initialFetchOffset`` (a follower with epochs fetches from its log
  end offset with its latest epoch; one without fetches from its high watermark and truncates
  to it, ``truncateToHighWatermark``).

When the replicas are offline no broker is leading: the broker that leads when they come back
gets a leader epoch above every epoch any replica has seen (the controller's epochs only grow),
started at its log end offset. :func:`truncation_offset` adds that epoch to the leader's cache
before answering, as the leader's ``makeLeader`` would have (``assign(leaderEpoch, logEndOffset)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seglog_cli.storage.log.checkpoints import EpochEntry

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
MAX_ROUNDS = 1000


def truncate_from_end(entries: list[EpochEntry], end_offset: int) -> list[EpochEntry]:
    """``LeaderEpochFileCache.truncateFromEnd``: drop the entries starting at or after ``end_offset``."""
    if end_offset >= 0 and entries and entries[-1].start_offset >= end_offset:
        return [e for e in entries if e.start_offset < end_offset]
    return list(entries)


def truncate_from_start(entries: list[EpochEntry], start_offset: int) -> list[EpochEntry]:
    """``LeaderEpochFileCache.truncateFromStart``: entries before ``start_offset`` go, the last of
    them moved up to start at ``start_offset`` (its epoch still covers the first offsets)."""
    before = [e for e in entries if e.start_offset <= start_offset]
    after = [e for e in entries if e.start_offset > start_offset]
    if not before:
        return list(entries)
    return [EpochEntry(before[-1].epoch, start_offset)] + after


def loaded_epochs(checkpoint: list[EpochEntry], batch_epochs: list[EpochEntry], log_start: int,
                  log_end: int) -> list[EpochEntry]:
    """The epoch cache a broker holds after loading the log: the checkpoint cut back to the log
    end and start (``LogLoader``), plus the epochs of batches past its latest (``assign`` during
    the recovery of segments the checkpoint had not caught up with)."""
    entries = truncate_from_start(truncate_from_end(checkpoint, log_end), log_start)
    for entry in batch_epochs:
        if entry.start_offset >= log_end:
            break
        if not entries or entry.epoch > entries[-1].epoch:
            entries.append(entry)
    return entries


def end_offset_for(entries: list[EpochEntry], requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
    """``LeaderEpochFileCache.endOffsetFor``: (epoch, end offset) for ``requested_epoch``."""
    if requested_epoch == UNDEFINED_EPOCH:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if entries and entries[-1].epoch == requested_epoch:
        # the latest epoch: the log end offset
        return requested_epoch, log_end_offset
    higher = next((e for e in entries if e.epoch > requested_epoch), None)
    if higher is None:
        # larger than any known epoch
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    floor = None
    for entry in entries:
        if entry.epoch <= requested_epoch:
            floor = entry
    if floor is None:
        # smaller than any known epoch: the start offset of the first epoch above it
        return requested_epoch, higher.start_offset
    return floor.epoch, higher.start_offset


@dataclass
class TruncationStep:
    """One exchange between the follower and the leader, as the broker logs it."""

    fetch_offset: int
    fetch_epoch: int | None
    leader_epoch: int | None  # the EpochEndOffset the leader answered
    leader_end_offset: int | None
    truncate_to: int
    completed: bool
    why: str

    def as_dict(self) -> dict:
        return {"fetchOffset": self.fetch_offset, "lastFetchedEpoch": self.fetch_epoch,
                "leaderEpoch": self.leader_epoch, "leaderEndOffset": self.leader_end_offset,
                "truncateTo": self.truncate_to, "completed": self.completed, "why": self.why}


@dataclass
class Truncation:
    offset: int  # the follower's log end after the truncation (== its log end: nothing truncated)
    steps: list[TruncationStep] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"offset": self.offset, "steps": [s.as_dict() for s in self.steps]}


def truncation_offset(leader_epochs: list[EpochEntry], leader_start: int, leader_end: int,
                      follower_epochs: list[EpochEntry], follower_end: int,
                      follower_high_watermark: int | None) -> Truncation:
    """The offset a follower with ``follower_epochs`` (its loaded cache) and log end
    ``follower_end`` is truncated to when it fetches from the leader (see the module doc)."""
    known = [e.epoch for e in leader_epochs + follower_epochs]
    current = max(known, default=-1) + 1
    leader = list(leader_epochs) + [EpochEntry(current, leader_end)]
    epochs, end = list(follower_epochs), follower_end
    result = Truncation(follower_end)
    for _ in range(MAX_ROUNDS):
        if not epochs:
            # ReplicaManager.initialFetchOffset: no epoch -> the high watermark; truncateToHighWatermark
            hw = end if follower_high_watermark is None else min(follower_high_watermark, end)
            result.steps.append(TruncationStep(hw, None, None, None, hw, True,
                                               "no leader epoch: truncated to the high watermark"))
            result.offset = min(hw, end)
            return result
        fetch_epoch, fetch_offset = epochs[-1].epoch, end
        answer_epoch, answer_offset = end_offset_for(leader, fetch_epoch, leader_end)
        if answer_offset == UNDEFINED_EPOCH_OFFSET or answer_epoch == UNDEFINED_EPOCH or fetch_offset < leader_start:
            # Partition.readRecords -> OffsetOutOfRangeException -> fetchOffsetAndTruncate
            if leader_end < end:
                to, why = leader_end, "out of range: truncated to the leader's log end offset"
            elif leader_start > end:
                to, why = leader_start, "out of range: the whole log replaced from the leader's log start offset"
            else:
                to, why = end, "out of range: fetching from the replica's log end offset"
            result.steps.append(TruncationStep(fetch_offset, fetch_epoch, answer_epoch, answer_offset, to, True, why))
            result.offset = to
            return result
        if not (answer_epoch < fetch_epoch or answer_offset < fetch_offset):
            result.steps.append(TruncationStep(fetch_offset, fetch_epoch, answer_epoch, answer_offset, end, True,
                                               "no diverging epoch: the replica's log is a prefix of the leader's"))
            result.offset = end
            return result
        # AbstractFetcherThread.getOffsetTruncationState
        own_epoch, own_offset = end_offset_for(epochs, answer_epoch, end)
        if own_offset == UNDEFINED_EPOCH_OFFSET:
            to, completed, why = min(answer_offset, end), True, "the leader's epoch is below every epoch of the replica"
        elif own_epoch != answer_epoch:
            to, completed, why = min(own_offset, end), False, "the leader's epoch is unknown to the replica: another round"
        else:
            to, completed, why = min(own_offset, answer_offset, end), True, "diverging epoch"
        result.steps.append(TruncationStep(fetch_offset, fetch_epoch, answer_epoch, answer_offset, to, completed, why))
        end = min(end, to)
        epochs = truncate_from_end(epochs, end)
        result.offset = end
        if completed:
            return result
    return result


__all__ = ["Truncation", "TruncationStep", "end_offset_for", "loaded_epochs", "truncate_from_end",
           "truncate_from_start", "truncation_offset"]
