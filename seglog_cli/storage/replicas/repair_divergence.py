"""Where DAMAGED is another history than HEALTHY, for ``seglog repair``: :func:`divergence_of`.

A repair puts HEALTHY's bytes where DAMAGED is damaged. Where the two replicas hold different
batches at the same offset, both valid (after an unclean leader election: another leader epoch;
or the same epoch with other bytes), there is nothing damaged to repair: the records differ. The
first such offset and why are what ``seglog diff`` reports
(:func:`~seglog_cli.storage.replicas.replica_comparison.compare`, HEALTHY as the reference); this
module keeps them as a :class:`Divergence`, with what DAMAGED alone holds from there on and
Kafka's truncation of it (:mod:`epoch_truncation`) once the plan has repaired its damage below.
"""

from __future__ import annotations

from dataclasses import dataclass

from seglog_cli.storage.replicas.epoch_truncation import loaded_epochs, truncation_offset
from seglog_cli.storage.replicas.replica_comparison import Lost, describe_lost


@dataclass(frozen=True)
class Divergence:
    """Where DAMAGED stops holding HEALTHY's history, as ``seglog diff`` finds it
    (:func:`~seglog_cli.storage.replicas.replica_comparison.compare` with HEALTHY as the
    reference): another leader epoch, or the same epoch with other bytes, both CRCs valid. No
    damage: nothing a repair can put right. ``lost`` is what DAMAGED alone holds and Kafka's
    truncation discards when it follows a leader with HEALTHY's log (None when Kafka keeps it)."""

    offset: int
    cause: str  # "leader-epoch" or "other-bytes"
    batch: dict  # DAMAGED's batch at the divergence (as diff gives it)
    healthy_batch: dict
    log_end: int  # DAMAGED's log end offset
    healthy_log_end: int
    truncation_offset: int | None
    lost: Lost | None

    @property
    def leader_epoch(self) -> int:
        return self.batch["partitionLeaderEpoch"]

    @property
    def healthy_leader_epoch(self) -> int:
        return self.healthy_batch["partitionLeaderEpoch"]

    def as_dict(self) -> dict:
        return {"offset": self.offset, "cause": self.cause, "leaderEpoch": self.leader_epoch,
                "healthyLeaderEpoch": self.healthy_leader_epoch,
                "offsets": [self.offset, self.log_end - 1] if self.log_end > self.offset else None,
                "healthyOffsets": [self.offset, self.healthy_log_end - 1] if self.healthy_log_end > self.offset else None,
                "batch": self.batch, "healthyBatch": self.healthy_batch, "kafkaTruncatesTo": self.truncation_offset,
                "lost": None if self.lost is None else self.lost.as_dict()}


def divergence_of(comparison, healthy, damaged) -> Divergence | None:
    """The comparison's divergence when it is one of history (a longer DAMAGED is not: HEALTHY is
    behind), with what DAMAGED alone holds described as ``seglog diff`` describes it."""
    found = comparison.divergence
    if found is None or found["cause"] == "longer-than-reference":
        return None
    truncation = comparison.truncation.offset if comparison.truncation is not None else None
    lost = comparison.lost
    if damaged.damage:
        # the plan repairs every damage below the divergence (or is refused): Kafka's truncation
        # of the repaired replica, whose recovery no longer stops at the damage
        epochs = loaded_epochs(damaged.epoch_checkpoint, damaged.batch_epochs, damaged.log_start, damaged.log_end)
        truncation = truncation_offset(healthy.loaded_epochs(), healthy.log_start, healthy.kafka_end, epochs,
                                       damaged.log_end, damaged.checkpoints.get("highWatermark")).offset
        lost_from = max(truncation, found["offset"])
        lost = Lost(lost_from, damaged.log_end - 1) if truncation < damaged.log_end else None
    if lost is not None:
        describe_lost(damaged, lost)
    return Divergence(found["offset"], found["cause"], found["batch"], found["referenceBatch"], damaged.log_end,
                      healthy.log_end, truncation, lost)


__all__ = ["Divergence", "divergence_of"]
