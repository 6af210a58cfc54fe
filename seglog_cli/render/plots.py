"""Pictures of a log dir: the retention timeline and a partition's layout, as PNG or SVG.

matplotlib draws them (the ``plot`` extra: ``pip install 'seglog[plot]'``). It is imported only
when a picture is asked for, so no other command pays for it. Chosen over a diagram tool such as
Graphviz or Mermaid because both pictures are charts over numbers (time and bytes, offsets), it
writes PNG and SVG from one code path with no program outside Python, and its SVG output is made
reproducible byte for byte (``svg.hashsalt``, no date), so the docs build gives the same files on
every run.

``retention_figure`` draws :class:`~seglog_cli.storage.retention.retention_timeline.SegmentSchedule`
lists: one bar per segment (readable, deletable at the next check, renamed ``.deleted``, gone)
over time, and the bytes readable and on disk below it. ``layout_figure`` draws one partition
dir: its segments along the offset axis with their index files and producer snapshots, and the log
start offset, recovery point, high watermark and log end offset as the checkpoints have them.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import accumulate
from pathlib import Path

from seglog_cli.storage.log.checkpoints import TopicPartition, offset_checkpoint_view
from seglog_cli.storage.log.log_dir_files import RECOVERY_POINT_CHECKPOINT
from seglog_cli.storage.log.naming import format_offset, offset_from_name
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.retention.retention import PartitionState
from seglog_cli.storage.retention.retention_timeline import SegmentSchedule

FORMATS = ("png", "svg")
MAX_ROWS = 40  # segments drawn as bars; the disk-use panel counts them all
READABLE, DUE, DELETED = "#4c78a8", "#f58518", "#bab0ac"
MARKERS = (("log start offset", "#54a24b"), ("recovery point", "#b279a2"), ("high watermark", "#e45756"),
           ("log end offset", "#333333"))


class PlotError(Exception):
    """A picture cannot be made: matplotlib missing, or a file name with no known format."""


def picture_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in FORMATS:
        raise PlotError(f"{path}: the picture's format comes from its name: .png or .svg, not "
                        f"{'.' + suffix if suffix else 'no suffix'}")
    return suffix


def require_matplotlib() -> None:
    """Raise :class:`PlotError` when matplotlib is not installed (checked before any work)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotError("pictures need matplotlib: pip install 'seglog[plot]'") from None


def _pyplot():
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.hashsalt": "seglog", "svg.fonttype": "none", "font.size": 10,
                                "font.family": "sans-serif"})
    import matplotlib.pyplot as plt

    return plt


def _save(figure, out, fmt: str) -> None:
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    figure.savefig(out, format=fmt, metadata=metadata, dpi=120, bbox_inches="tight")


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


@dataclass(frozen=True)
class PartitionSchedule:
    """One partition's segments and when retention takes each (``schedule_segments``)."""

    name: str
    schedules: list[SegmentSchedule]


def disk_use(partitions: list[PartitionSchedule], times: list[int]) -> tuple[list[int], list[int]]:
    """Bytes of .log readable and on disk at each of ``times`` (no new data): a segment stops being
    readable by ``removed_by`` and leaves the disk by ``files_gone_by``, at the latest. One sort of
    the segments' end times and a bisect per time: linear in segments and times, up to the log."""
    schedules = [s for p in partitions for s in p.schedules]
    total = sum(s.segment.size for s in schedules)

    def left_by(ends: list[tuple[int | None, int]]):
        gone = sorted((end, size) for end, size in ends if end is not None)
        stamps, cumulative = [end for end, _ in gone], list(accumulate(size for _, size in gone))
        return [total - (cumulative[i - 1] if (i := bisect_right(stamps, at)) else 0) for at in times]

    return (left_by([(s.removed_by, s.segment.size) for s in schedules]),
            left_by([(s.files_gone_by, s.segment.size) for s in schedules]))


def retention_figure(partitions: list[PartitionSchedule], now_ms: int, at_ms: list[int], out,
                     fmt: str, title: str = "") -> None:
    """Draw the retention timeline of ``partitions`` into ``out`` (a path or a binary file)."""
    plt = _pyplot()
    rows = [(p.name, s) for p in partitions for s in p.schedules]
    ends = [t for _, s in rows for t in (s.eligible_at, s.removed_by, s.files_gone_by) if t is not None]
    end = max([now_ms, *ends, *at_ms])
    span = max(end - now_ms, 60_000)
    start, end = now_ms - span * 0.05, end + span * 0.08
    soonest = sorted(range(len(rows)), key=lambda i: (rows[i][1].eligible_at is None, rows[i][1].eligible_at or 0))
    shown = [rows[i] for i in sorted(soonest[:MAX_ROWS])]
    height = 1.2 + 0.28 * len(shown)
    figure, (bars, disk) = plt.subplots(2, 1, figsize=(7.2, height + 2.2), sharex=True,
                                        gridspec_kw={"height_ratios": [height, 2.2]})
    x0 = _time(int(start))
    for y, (_, schedule) in enumerate(reversed(shown)):
        segment = schedule.segment
        pieces = [(start, schedule.eligible_at, READABLE), (schedule.eligible_at, schedule.removed_by, DUE),
                  (schedule.removed_by, schedule.files_gone_by, DELETED)]
        if schedule.eligible_at is None:
            pieces = [(start, end, READABLE)]
            bars.text(_time(int(end)), y, "  kept: " + schedule.note, va="center", fontsize=7)
        for left, right, colour in pieces:
            bars.barh(y, _time(int(right)) - _time(int(left)), left=_time(int(left)), height=0.6, color=colour)
        if start <= segment.largest_timestamp <= end:
            bars.plot([_time(segment.largest_timestamp)], [y], marker="|", color="black", markersize=9)
    bars.set_yticks(range(len(shown)))
    bars.set_yticklabels([f"{name} {s.segment.base_offset}..{s.segment.next_offset - 1}  ({s.segment.size:,} B)"
                          for name, s in reversed(shown)], fontsize=8)
    bars.set_ylim(-0.8, len(shown) - 0.2)
    more = len(rows) - len(shown)
    bars.set_title((title + "\n" if title else "") + "segments by when retention deletes them"
                   + (f" ({len(shown)} of {len(rows)} shown, soonest first)" if more else ""))
    from matplotlib.patches import Patch

    from matplotlib.lines import Line2D

    figure.legend(handles=[Patch(color=READABLE, label="readable"),
                           Patch(color=DUE, label="deletable: removed at a retention check in this window"),
                           Patch(color=DELETED, label="renamed .deleted: waits file.delete.delay.ms"),
                           Line2D([], [], color="black", marker="|", linestyle="none", markersize=9,
                                  label="largest timestamp (the clock retention.ms reads)")],
                  loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, fontsize=8, frameon=False)
    times = sorted({int(start), int(end), now_ms, *ends})
    readable, on_disk = disk_use(partitions, times)
    disk.step([_time(t) for t in times], on_disk, where="post", color=DELETED, label="on disk (.log bytes)")
    disk.step([_time(t) for t in times], readable, where="post", color=READABLE, label="readable")
    disk.set_ylabel("bytes")
    disk.yaxis.set_major_formatter(lambda value, _: f"{value:,.0f}")
    disk.set_ylim(bottom=0)
    disk.legend(loc="upper right", fontsize=8, frameon=False)
    disk.set_title("log bytes over time, without new data (each step at the latest)", fontsize=9)
    for axis in (bars, disk):
        for at, label in [(now_ms, "now"), *[(t, "--at") for t in at_ms]]:
            axis.axvline(_time(at), color="black", linestyle="--", linewidth=0.8)
            if axis is bars:
                axis.text(_time(at), len(shown) - 0.3, f" {label}", fontsize=7, va="bottom")
        axis.set_xlim(x0, _time(int(end)))
    import matplotlib.dates as mdates

    disk.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d %H:%M", tz=timezone.utc))
    disk.set_xlabel("time (UTC)")
    figure.autofmt_xdate()
    _save(figure, out, fmt)
    plt.close(figure)


@dataclass(frozen=True)
class Layout:
    """What ``layout_figure`` draws of one partition dir."""

    name: str
    segments: list[tuple[int, int, int, tuple[str, ...]]]  # base, next offset, .log bytes, index suffixes
    snapshots: list[int]
    markers: dict[str, int]  # MARKERS' names -> offset


def read_layout(path: str | Path, state: PartitionState) -> Layout:
    """The layout of the partition dir ``path``; offsets from ``state`` and the recovery point
    from the log dir's ``recovery-point-offset-checkpoint`` (the log end offset without one)."""
    log = PartitionLog(path)
    try:
        segments = []
        for segment, facts in zip(log.segments, state.segments):
            files = ((".index", segment.index_file), (".timeindex", segment.time_index_file),
                     (".txnindex", segment.txn_index_file))
            suffixes = tuple(suffix for suffix, file in files if segment.has_file(file))
            segments.append((facts.base_offset, facts.next_offset, facts.size, suffixes))
        snapshots = [offset_from_name(name) for name in log.files.names("snapshots")]
        name = Path(path).name
        tp = TopicPartition(log.topic, log.partition) if log.name else None
    finally:
        log.close()
    checkpoint = Path(path).parent / RECOVERY_POINT_CHECKPOINT
    recovery = state.log_end_offset
    if tp is not None and checkpoint.is_file():
        recovery = offset_checkpoint_view(checkpoint).get(tp, recovery)
    markers = {"log start offset": state.log_start_offset, "recovery point": recovery,
               "high watermark": state.high_watermark, "log end offset": state.log_end_offset}
    return Layout(name, segments, snapshots, markers)


def layout_figure(layout: Layout, out, fmt: str) -> None:
    """Draw one partition's layout into ``out``: segments, index files, snapshots, offsets."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(7.5, 3.4))
    last = max([layout.markers["log end offset"], *(n for _, n, _, _ in layout.segments)], default=1)
    for i, (base, following, size, suffixes) in enumerate(layout.segments):
        width = max(following - base, last * 0.01)
        active = i == len(layout.segments) - 1
        axis.barh(2, width, left=base, height=0.8, color=READABLE if not active else "#72b7b2",
                  edgecolor="white", linewidth=2)
        axis.text(base + width / 2, 2, f"segment {base}" + (" (active)" if active else "")
                  + f"\n{base}..{following - 1}\n{size:,} B", ha="center", va="center", fontsize=7, color="white")
        axis.text(base + width / 2, 1.2, "  ".join(suffixes) or "(no index files)", ha="center", va="center",
                  fontsize=7)
    for offset in layout.snapshots:
        axis.plot([offset], [0.6], marker="v", color="#9d755d", markersize=7)
        axis.text(offset, 0.3, f"{offset}.snapshot", ha="center", va="top", fontsize=6)
    for level, (label, colour) in enumerate(MARKERS):
        offset = layout.markers[label]
        axis.axvline(offset, color=colour, linewidth=1.2, linestyle=(0, (4, 2)))
        axis.text(offset, 3.0 + 0.32 * level, f"{label} {offset}", color=colour, fontsize=7,
                  ha="right" if offset > last * 0.6 else "left")
    axis.set_ylim(-0.2, 3.0 + 0.32 * len(MARKERS))
    axis.set_xlim(-last * 0.02, last * 1.04)
    axis.set_yticks([0.6, 1.2, 2])
    axis.set_yticklabels(["producer snapshots", "index files", "segments"], fontsize=8)
    axis.set_xlabel("offset")
    axis.set_title(f"{layout.name}: segments, indexes, snapshots and the checkpointed offsets\n"
                   f"(each file is named by its base offset in 20 digits: {format_offset(layout.segments[-1][0] if layout.segments else 0)}.log)",
                   fontsize=9)
    for side in ("top", "right"):
        axis.spines[side].set_visible(False)
    _save(figure, out, fmt)
    plt.close(figure)
