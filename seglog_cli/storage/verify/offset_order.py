"""The order of offsets and partition leader epochs over a segment's batches, judged batch by
batch as ``seglog verify`` passes them (:class:`OffsetOrder`)."""

from __future__ import annotations

from seglog_cli.storage.log.batch_header import INT32_MAX, wrap_int64


class OffsetOrder:
    """The order of offsets and partition leader epochs over a segment's batches.

    The compiled walker (``verify_walk`` in ``_native_framing.c``) runs the same machine over the
    same ``state``; :meth:`step` is its Python twin (for entries the walker leaves to Python,
    and for machines without the compiled module). Only batches whose headers are trusted (CRC
    and magic good) take part. A batch whose offsets do not follow the previous one is blamed
    (``order``), unless it does follow the one before that and either lies below the previous
    batch's first offset, or starts exactly where the previous batch would have ended had it
    followed on without a gap: then the previous batch is the odd one (``outlier``: its base
    offset, which no CRC covers, is damaged; its last offset delta is CRC-covered). Leader epochs (not covered by the CRC either) never go
    back; a single batch whose epoch is above both neighbours', which agree, is blamed itself
    (``epoch_outlier``), any other step back (or an epoch below -1) on the later batch.

    state: (prev_last|None, before_last, prev_pos, prev_first, prev_epoch, before_epoch,
    prev_epoch_pos, epoch_start_pos).
    """

    def __init__(self, segment_base: int):
        self.state = (None, segment_base - 1, -1, 0, -1, -1, -1, -1)

    @property
    def expected_offset(self) -> int | None:
        """The offset the next batch should start at or after (None before the first)."""
        prev = self.state[0]
        return None if prev is None else wrap_int64(prev + 1)

    def step(self, position, magic, first, last, epoch, segment_base, anomalies: list, epochs: list) -> None:
        (prev_last, before_last, prev_pos, prev_first, prev_epoch, before_epoch, prev_epoch_pos,
         epoch_start_pos) = self.state
        in_order = True
        if last < first:  # a negative last offset delta
            anomalies.append(("delta", position, first, last, first))
            in_order = False
        elif prev_last is not None and first <= prev_last:
            if before_last < first and (first < prev_first or (prev_first != before_last + 1 and
                                                               first == before_last + 1 + (prev_last - prev_first) + 1)):
                anomalies.append(("outlier", prev_pos, prev_first, before_last, first))
            else:
                anomalies.append(("order", position, first, prev_last, first))
                in_order = False
        elif prev_last is not None:
            before_last = prev_last
        if in_order:
            relative = wrap_int64(last - segment_base)
            if not 0 <= relative <= INT32_MAX:
                anomalies.append(("overflow", position, last, relative, 0))
            prev_last, prev_first, prev_pos = last, first, position
        if magic >= 2 and epoch != -1:
            if epoch < -1:
                anomalies.append(("epoch", position, first, epoch, prev_epoch))
            elif epoch < prev_epoch:
                if epoch == before_epoch and prev_epoch_pos == epoch_start_pos:
                    anomalies.append(("epoch_outlier", prev_epoch_pos, first, prev_epoch, epoch))
                    prev_epoch, prev_epoch_pos = epoch, position
                else:
                    anomalies.append(("epoch", position, first, epoch, prev_epoch))
            else:
                if epoch > prev_epoch:
                    epochs.append((position, epoch, first))
                    before_epoch, epoch_start_pos = prev_epoch, position
                prev_epoch, prev_epoch_pos = epoch, position
        self.state = (prev_last, before_last, prev_pos, prev_first, prev_epoch, before_epoch, prev_epoch_pos,
                      epoch_start_pos)


__all__ = ["OffsetOrder"]
