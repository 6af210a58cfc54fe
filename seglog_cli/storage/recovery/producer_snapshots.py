"""The producer snapshots Kafka's loader leaves (``removeStraySnapshots``,
``rebuildProducerState``, ``takeSnapshot``): which ``.snapshot`` files exist as it goes, and the
steps that take the directory there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seglog_cli.storage.log.naming import format_offset
from seglog_cli.storage.log.producer_state import rebuild_producer_state
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.recovery.plan import Step

if TYPE_CHECKING:  # segment_recovery imports this module
    from seglog_cli.storage.recovery.segment_recovery import Work


class SnapshotModel:
    """Which ``<offset>.snapshot`` files exist as Kafka's loader goes (offsets only; their
    contents are the producer state at those offsets, computed at the end)."""

    def __init__(self, present: set[int], log_start: int):
        self.present = set(present)
        self.original = set(present)
        self.written: set[int] = set()
        self.log_start = log_start
        self.last_snap = max(present, default=log_start)

    def rebuild_to(self, last: int, bases: list[int]) -> None:
        """``rebuildProducerState(lastOffset)``: snapshots above ``last`` or at/below the log
        start deleted; the newest remaining one loaded; snapshots taken at the last two segment
        bases passed while replaying, and at ``last``."""
        self.present = {o for o in self.present if self.log_start < o <= last}
        self.written &= self.present
        loaded = max(self.present, default=None)
        end = loaded if loaded is not None else self.log_start
        self.last_snap = end
        if last > end and bases:
            wanted = {bases[-1], last} | ({bases[-2]} if len(bases) > 1 else set())
            floor = max((b for b in bases if b <= end), default=bases[0])
            for base in bases:
                if floor <= base < last and base in wanted:
                    self.take(max(base, end, self.log_start))
        self.take(last)

    def take(self, offset: int) -> None:
        """``takeSnapshot`` at the map end offset ``offset`` (only when it moved past the last)."""
        if offset > self.last_snap:
            self.present.add(offset)
            self.written.add(offset)
            self.last_snap = offset

    def remove_strays(self, bases: set[int]) -> None:
        strays = sorted(o for o in self.present if o not in bases)
        highest = strays[-1] if strays and bases and strays[-1] >= max(bases) else None
        self.present = {o for o in self.present if o in bases or o == highest}
        self.written &= self.present


def plan_snapshots(work: Work, kept: list[LogSegment]) -> None:
    """``removeStraySnapshots`` then ``rebuildProducerState`` to the log end offset; then the
    steps that take the directory from its snapshots to the model's."""
    out, model, directory = work.out, work.snapshots, work.directory
    bases = [s.base_offset for s in kept]
    model.remove_strays(set(bases))
    model.rebuild_to(out.log_end_offset, bases)
    unknown = {o for o in model.written if work.salvaged_from is not None and o > work.salvaged_from
               and o not in work.snapshot_data}
    if unknown:  # a state above a salvaged segment that the walk did not replay: Kafka's to rebuild from the log
        model.present = {o for o in model.present if o <= work.salvaged_from or o in work.snapshot_data}
        model.written -= unknown
        out.notes.append(f"salvage: no producer snapshot at offset(s) {', '.join(map(str, sorted(unknown)))}; the "
                         "broker rebuilds the producer state from the log at its next start")
    for offset in sorted(model.original - model.present):
        out.steps.append(Step("remove", directory / f"{format_offset(offset)}.snapshot",
                              "a producer snapshot Kafka's loader deletes (stray, or above a recovered segment)"))
    for offset in sorted(model.written):
        data = work.snapshot_data.get(offset)
        if data is None:
            data = rebuild_producer_state(work.log(kept), up_to_offset=offset).manager.snapshot_bytes()
        out.steps.append(Step("replace", directory / f"{format_offset(offset)}.snapshot",
                              "the producer state Kafka's loader snapshots here", data=data))
