"""Output of ``seglog repair``: the plan (or what was applied) as text lines or one JSON document.

Besides the segments written, it says two things that are no damage: where DAMAGED diverges from
HEALTHY (another history after an unclean leader election: :func:`divergence_lines`, with the
``seglog diff`` and ``seglog replay`` commands that keep what DAMAGED alone holds), and the
offsets DAMAGED lacks at its end (it lags: :func:`missing_line`), copied by ``--tail``.
"""

from __future__ import annotations

import shlex
from typing import TextIO

from seglog_cli.render.elections_report import election_document, election_lines

INDEXES = {"rebuilt": "rebuild its .index and .timeindex",
           "healthy": "copy HEALTHY's .index and .timeindex",
           "healthy-if-identical": "copy HEALTHY's .index and .timeindex if it comes out HEALTHY's bytes, else "
                                   "rebuild them"}


def _range(first: int, last: int) -> str:
    return f"{first}-{last}" if last > first else str(first)


def divergence_commands(plan) -> dict:
    """The commands that compare the two replicas and carry over what DAMAGED alone holds
    (``exportLost`` and ``replay`` are None when Kafka's truncation discards nothing)."""
    healthy, damaged = shlex.quote(str(plan.healthy)), shlex.quote(str(plan.damaged))
    commands = {"diff": f"seglog diff --leader {healthy} {healthy} {damaged}", "exportLost": None, "replay": None}
    if plan.divergence.lost is not None:
        lost = shlex.quote(f"{plan.damaged.name}-only-here.jsonl")
        commands["exportLost"] = f"seglog diff --leader {healthy} --export-lost {lost} {healthy} {damaged}"
        commands["replay"] = f"seglog replay {lost} --bootstrap-server HOST:PORT"
    return commands


def divergence_statement(plan, applied: bool = False) -> str:
    """One statement: where and why DAMAGED diverges from HEALTHY, what it holds from there on,
    what Kafka's truncation does with it, and what the repair did below it."""
    v = plan.divergence
    if v.cause == "leader-epoch":
        why = f"leader epoch {v.leader_epoch} vs {v.healthy_leader_epoch}"
    else:
        why = (f"the same leader epoch {v.leader_epoch} but other bytes: CRC {v.batch['crc']} vs "
               f"{v.healthy_batch['crc']}")
    theirs = f"{_range(v.offset, v.healthy_log_end - 1)}" if v.healthy_log_end > v.offset else "none"
    text = (f"DAMAGED {plan.damaged} diverges from HEALTHY {plan.healthy} at offset {v.offset} ({why}): this is no "
            f"damage repair can fix; the records from offset {v.offset} on differ (DAMAGED: offsets "
            f"{_range(v.offset, v.log_end - 1)}, HEALTHY: {theirs}).")
    if v.lost is not None:
        lost = v.lost
        control = f" and {lost.control_records} control records" if lost.control_records else ""
        epochs = ", ".join(map(str, lost.leader_epochs))
        text += (f" Kafka truncates DAMAGED to offset {v.truncation_offset} when it follows a leader with HEALTHY's "
                 f"log, and the {lost.records} records{control} at offsets "
                 f"{_range(lost.first_offset, lost.last_offset)} (leader epoch{'s' if len(lost.leader_epochs) > 1 else ''}"
                 f" {epochs}) that only DAMAGED holds are then lost.")
    else:
        text += (" Kafka does not truncate DAMAGED (no leader epoch tells the two apart): both keep serving "
                 "different records for those offsets; decide which copy is right before a broker starts on it.")
    if plan.segments:
        text += f" Only the damage below offset {v.offset} {'was' if applied else 'is'} repaired (above)."
    return text


def divergence_lines(plan, applied: bool = False) -> list[str]:
    commands = divergence_commands(plan)
    lines = [divergence_statement(plan, applied), f"  compare them:                    {commands['diff']}"]
    if commands["exportLost"] is not None:
        lines.append(f"  export what DAMAGED alone holds: {commands['exportLost']}")
        lines.append(f"  put it back into the cluster:    {commands['replay']}  (a plan; --apply sends)")
    else:
        lines.append("  (`seglog diff --export-lost` and `seglog replay` have nothing to carry over: Kafka keeps "
                     "those records on DAMAGED)")
    return lines


def missing_line(plan) -> str:
    first, last = plan.missing_at_end
    if plan.missing_copied:
        return (f"  missing at its end: offsets {_range(first, last)}, which HEALTHY holds (this replica lags; they "
                "are not damaged): copied from HEALTHY")
    return (f"  missing at its end: offsets {_range(first, last)}, which HEALTHY holds (this replica lags; they are "
            "not damaged): Kafka fetches them when it rejoins, --tail copies them now")


def _subject(plan) -> tuple:
    from seglog_cli.storage.log.naming import parse_partition_dir_name

    name = parse_partition_dir_name(plan.damaged.resolve().name)
    return (None, None) if name is None else (name.topic, name.partition)


def render_text(plan, applied, apply: bool, out: TextIO, elections=None) -> None:
    """The plan or what was applied, then what is no damage: a divergence, a lagging end, HEALTHY
    ending first; with ``elections``, the election behind each leader epoch of the two replicas."""
    if plan.empty and plan.divergence is None:
        out.write(f"{plan.damaged}: nothing to repair from {plan.healthy}\n")
    elif not plan.empty:
        out.write(f"repair {plan.damaged} from {plan.healthy}:\n")
        for segment in plan.segments:
            verb = "create" if segment.new else "rewrite"
            out.write(f"  {verb} {segment.path.name} ({segment.size} bytes): {segment.why}; "
                      f"{INDEXES[segment.index_plan]}\n")
        for snapshot in plan.snapshots:
            out.write(f"  copy producer snapshot {snapshot.name}\n")
        if plan.epoch_checkpoint is not None:
            out.write(f"  leader-epoch-checkpoint: {[[e.epoch, e.start_offset] for e in plan.epoch_checkpoint]}\n")
    if plan.missing_at_end is not None:
        out.write(missing_line(plan) + "\n")
    if plan.past_healthy_end is not None:
        first, last = plan.past_healthy_end
        out.write(f"  HEALTHY ends at offset {first}: this replica's offsets {_range(first, last)} are past it and "
                  "were not compared (HEALTHY lags; that is no divergence)\n")
    if not plan.empty:
        if applied is not None:
            out.write(f"applied; backup in {applied} (seglog undo --apply {applied})\n")
        elif not apply:
            out.write("plan only: --apply carries it out\n")
    if plan.divergence is not None:
        for line in divergence_lines(plan, applied is not None):
            out.write(line + "\n")
    if elections is not None:
        for line in election_lines(elections, *_subject(plan), plan.leader_epochs):
            out.write(line + "\n")


def document(plan, applied, status: int, elections=None) -> dict:
    """The JSON document's own fields (the command adds the config report's)."""
    plan_fields = plan.as_dict()
    if plan.divergence is not None:
        plan_fields["divergence"]["message"] = divergence_statement(plan, applied is not None)
        plan_fields["divergence"]["commands"] = divergence_commands(plan)
    if plan.missing_at_end is not None:
        plan_fields["missingAtEnd"]["message"] = missing_line(plan).strip()
    out = {"version": 1, "exitStatus": status, "plan": plan_fields, "empty": plan.empty,
           "applied": None if applied is None else {"backupDir": str(applied)}}
    if elections is not None:
        out["leaderElections"] = election_document(elections, *_subject(plan), plan.leader_epochs)
    return out
