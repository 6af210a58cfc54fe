"""The producer fields of appended batches, checked as Kafka's ``ProducerAppendInfo`` checks a
client's (:class:`ProducerCursor`).

Starting from the producer state rebuilt from the log: the producer epoch (an older one is
fenced), each batch's base sequence (continued from the producer's last sequence when not given;
a gap, a duplicate or a new epoch not starting at 0 is refused), a non-transactional write while
the producer's transaction is open (refused), and the end-transaction marker with its
coordinator epoch (an older one is fenced). A plain producer (no producer id) gets -1 for its id
and epoch, and every batch keeps the base sequence it was sent with.
"""

from __future__ import annotations

from seglog_cli.storage.log.batch_header import increment_sequence
from seglog_cli.storage.log.producer_state import ProducerStateManager
from seglog_cli.storage.write.append_plan import AppendError, ProducerOptions
from seglog_cli.storage.write.builder import build_end_txn_marker


class ProducerCursor:
    """The producer fields of each batch, checked as ``ProducerAppendInfo`` checks a client."""

    def __init__(self, options: ProducerOptions, manager: ProducerStateManager):
        self.options = options
        self.pid = options.producer_id
        self.manager = manager
        entry = manager.producers.get(self.pid) if self.pid >= 0 else None
        self.entry = entry
        if self.pid < 0:
            # a plain (non-idempotent) producer: the broker checks no sequence and keeps the batch's
            # base sequence as sent (LogValidator refuses a negative one only with a producer id);
            # Sarama, for one, sends 0 in every batch, so a given base sequence is every batch's
            if options.transactional or options.producer_epoch is not None:
                raise AppendError("--transactional and --producer-epoch need --producer-id")
            self.epoch = -1
            self.sequence = -1 if options.base_sequence is None else options.base_sequence
            if self.sequence < -1:
                raise AppendError(f"base sequence {self.sequence} is negative")
            return
        current_epoch = entry.producer_epoch if entry is not None else None
        self.epoch = options.producer_epoch if options.producer_epoch is not None else (
            current_epoch if current_epoch is not None and current_epoch >= 0 else 0)
        if not 0 <= self.epoch <= 32767:
            raise AppendError(f"producer epoch {self.epoch} is out of range (0..32767)")
        if current_epoch is not None and self.epoch < current_epoch:
            raise AppendError(f"producer {self.pid} epoch {self.epoch} is older than its current epoch {current_epoch}: "
                              "Kafka fences it (InvalidProducerEpochException)")
        same_epoch = entry is not None and self.epoch == current_epoch
        last_seq = entry.last_seq if same_epoch else -1
        if options.base_sequence is None:
            self.sequence = increment_sequence(last_seq, 1) if same_epoch and last_seq >= 0 else 0
        else:
            self.sequence = options.base_sequence
            if self.sequence < 0:
                raise AppendError(f"base sequence {self.sequence} is negative")
            self._check_against = last_seq if same_epoch and last_seq >= 0 else None
            if not same_epoch and entry is not None and current_epoch is not None and current_epoch >= 0 \
                    and self.sequence != 0:
                raise AppendError(f"producer {self.pid} starts epoch {self.epoch} at sequence {self.sequence}; a new "
                                  "epoch must start at 0 (OutOfOrderSequenceException)")
        self._open_txn = entry.current_txn_first_offset if entry is not None and same_epoch else None

    @property
    def repeats_sequences(self) -> bool:
        """The given base sequence does not follow the producer's last one (a rerun, or refused)."""
        last_seq = getattr(self, "_check_against", None)
        return last_seq is not None and self.sequence != increment_sequence(last_seq, 1)

    def _check_txn_state(self) -> None:
        entry = self.entry
        if self._open_txn is not None and not self.options.transactional:
            raise AppendError(f"producer {self.pid} has an open transaction (from offset "
                              f"{entry.current_txn_first_offset}): a non-transactional write is refused "
                              "(InvalidTxnStateException); end it with --end-txn first")

    def next_batch(self, count: int, base_offset: int) -> dict:
        if self.pid >= 0:
            self._check_txn_state()
        last_seq = getattr(self, "_check_against", None)
        if last_seq is not None:  # the first batch of an explicit --base-sequence (ProducerAppendInfo.checkSequence)
            self._check_against = None
            if self.sequence != increment_sequence(last_seq, 1):
                last = increment_sequence(self.sequence, count - 1)
                if any(b.first_sequence == self.sequence and b.last_sequence == last for b in self.entry.batch_metadata):
                    raise AppendError(f"producer {self.pid} already wrote sequences {self.sequence}..{last} (a duplicate: "
                                      "Kafka would answer with the earlier offsets and append nothing)")
                raise AppendError(f"producer {self.pid} epoch {self.epoch}: sequence {self.sequence} does not follow "
                                  f"its last sequence {last_seq} (OutOfOrderSequenceException)")
        fields = {"producer_id": self.pid, "producer_epoch": self.epoch, "base_sequence": self.sequence,
                  "transactional": self.options.transactional}
        if self.pid >= 0:
            self.sequence = increment_sequence(self.sequence, count)
        return fields

    def marker(self, kind: str, offset: int, now: int, epoch: int) -> bytes:
        if self.pid < 0:
            raise AppendError("--end-txn needs --producer-id (and the producer's epoch)")
        if kind not in ("commit", "abort"):
            raise AppendError(f"--end-txn is commit or abort, not {kind!r}")
        current = self.entry.coordinator_epoch if self.entry is not None else -1
        coordinator_epoch = self.options.coordinator_epoch if self.options.coordinator_epoch is not None else max(current, 0)
        if coordinator_epoch < current:
            raise AppendError(f"coordinator epoch {coordinator_epoch} is older than producer {self.pid}'s "
                              f"({current}): Kafka fences the marker (TransactionCoordinatorFencedException)")
        return build_end_txn_marker(commit=kind == "commit", base_offset=offset, producer_id=self.pid,
                                    producer_epoch=self.epoch, coordinator_epoch=coordinator_epoch, timestamp=now,
                                    partition_leader_epoch=epoch)


__all__ = ["ProducerCursor"]
