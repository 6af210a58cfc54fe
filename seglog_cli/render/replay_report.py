"""``seglog replay``'s plan, result and progress bar (text or one JSON document)."""

from __future__ import annotations

import json

from seglog_cli.render.tabular import iso_time
from seglog_cli.render.text import codec_text


def _size(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return str(count)


def _skipped(skipped) -> str:
    parts = [f"{n} {what}" for what, n in (("aborted", skipped.aborted), ("in open transactions", skipped.open),
                                             ("of unknown outcome", skipped.unknown),
                                             ("in damaged batches", skipped.damaged)) if n]
    return ("; skipped " + ", ".join(parts)) if parts else ""


def render_plan(plan, options, out, fmt: str, heading_only: bool = False) -> None:
    if fmt == "json":
        out.write(json.dumps({"plan": plan.as_dict()}, indent=2) + "\n")
        return
    w = out.write
    w(f"replay {'plan' if not heading_only else 'of'}: {plan.records} record(s) of {len(plan.partitions)} "
      f"partition(s) ({_size(plan.bytes)} as stored) into {options.bootstrap}"
      f"{f' (cluster {plan.cluster_id})' if plan.cluster_id else ''}\n")
    if heading_only:
        w(f"progress file: {plan.progress_path}{' (resuming)' if plan.resumed else ''}\n")
        return
    for part in plan.partitions:
        source = part.source
        dest = f"{part.dest_topic}-{source.partition}" if not options.repartition else f"{part.dest_topic} (by key)"
        offsets = "-" if part.first_offset is None else f"{part.first_offset}..{part.last_offset}"
        codecs = ",".join(sorted({codec_text(c) for c in part.codecs})) or "-"
        done = f"; {part.delivered} already delivered" if part.delivered else ""
        w(f"  {source.label} -> {dest}: {part.records} record(s), offsets {offsets}, "
          f"{iso_time(part.first_timestamp)} .. {iso_time(part.last_timestamp)}, {_size(part.bytes)} ({codecs})"
          f"{_skipped(part.skipped)}{done}\n")
        w(f"      from {source.where}\n")
        for copy in source.copies:
            w(f"      (also in {copy}: not read, its log ends earlier or at the same offset)\n")
        for problem in part.skipped.problems[:3]:
            w(f"      damage: {problem}\n")
    for topic in plan.topics:
        if topic.create:
            configs = ", ".join(f"{k}={v}" for k, v in sorted(topic.configs.items())) or "no configs set"
            w(f"destination {topic.name}: missing, created with {topic.needed} partition(s) ({configs})\n")
        elif topic.exists:
            w(f"destination {topic.name}: {topic.partitions} partition(s), "
              f"message.timestamp.type={topic.timestamp_type or '?'}\n")
    w(f"progress file: {plan.progress_path}{' (resuming a previous run)' if plan.resumed else ' (new)'}\n")
    for note in plan.notes:
        w(f"note: {note}\n")
    for refusal in plan.refusals:
        w(f"refused: {refusal}\n")
    if not plan.refusals:
        w("this is a plan: nothing was sent. Run the same command with --apply to send.\n")
    else:
        w("nothing can be sent until the refusals above are resolved.\n")


def render_result(plan, options, result, progress, translated, group_notes, csv_path, committed, out,
                  fmt: str) -> None:
    from seglog_cli.storage.replay.groups import reset_commands

    if fmt == "json":
        out.write(json.dumps({
            "plan": plan.as_dict(),
            "result": {"sent": result.sent, "foundAfterKill": result.matched, "foreignRecords": result.foreign,
                       "alreadyDelivered": result.skipped_delivered, "unmappedRecords": result.unmapped,
                       "progress": progress.as_dict()},
            "groups": [t.as_dict() for t in translated], "groupsCsv": csv_path, "groupNotes": group_notes,
            "committedGroups": committed,
            "resetCommands": reset_commands(translated, options.bootstrap)}, indent=2) + "\n")
        return
    w = out.write
    total = sum(src.records() for src in progress.sources.values())
    w(f"replayed: {result.sent} record(s) sent now"
      f"{f', {result.matched} found already written by an earlier run' if result.matched else ''}"
      f"{f', {result.skipped_delivered} delivered before' if result.skipped_delivered else ''}; "
      f"{total} in all, exactly once\n")
    for dest in progress.destinations:
        if dest.end != dest.start:
            w(f"  {dest.label}: offsets {dest.start}..{dest.end - 1}\n")
    if result.unmapped:
        w(f"note: {result.unmapped} record(s) were acknowledged as already written (a resent batch) without "
          f"their offset: they are in the destination once, but not in the offset map\n")
    if result.foreign:
        w(f"note: {result.foreign} record(s) someone else wrote were left in place (--accept-foreign-writes)\n")
    for part in plan.partitions:
        if part.skipped.total():
            w(f"note: {part.source.label}{_skipped(part.skipped)}\n")
    for note in group_notes:
        w(f"note: {note}\n")
    if translated:
        w(f"consumer groups: {len({t.group for t in translated})} group(s), offsets translated to the destination "
          f"(CSV for kafka-consumer-groups.sh --from-file: {csv_path}):\n")
        for command in reset_commands(translated, options.bootstrap):
            w(f"  {command}\n")
        for group, what in sorted(committed.items()):
            w(f"  group {group}: {what}\n")


class _Bar:
    def __init__(self, total: int):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress = Progress(TextColumn("replay"), BarColumn(), MofNCompleteColumn(), TextColumn("records"),
                                  TimeRemainingColumn(), console=Console(stderr=True), transient=True)
        self._progress.start()
        self._task = self._progress.add_task("replay", total=total or None)

    def update(self, sent: int, acked: int) -> None:
        self._progress.update(self._task, completed=acked)

    def close(self) -> None:
        self._progress.stop()


def progress_bar(total: int) -> _Bar:
    return _Bar(total)
