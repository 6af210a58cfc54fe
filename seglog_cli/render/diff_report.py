"""Output of ``seglog diff``: a table, text, one JSON document or JSON Lines."""

from __future__ import annotations

import json
from typing import TextIO

from seglog_cli.render.elections_report import election_document, election_lines
from seglog_cli.render.fit import counted
from seglog_cli.render.tabular import iso_time, write_table
from seglog_cli.storage.replicas.replicas import IN_SYNC

COLUMNS = [("partition", "PARTITION"), ("path", "REPLICA"), ("status", "STATUS"), ("end", "LOG END"),
           ("prefix", "AGREES TO"), ("divergence", "DIVERGES AT"), ("cause", "CAUSE"),
           ("truncate", "KAFKA TRUNCATES TO"), ("lost", "LOST RECORDS")]


def _rows(groups) -> list[dict]:
    rows = []
    for group in groups:
        if group.reference is not None:
            ref = group.reference
            rows.append({"partition": group.name, "path": str(ref.path), "status": "reference", "end": ref.log_end})
        for c in group.comparisons:
            if c.status == "damaged" and c.replica is group.reference:
                rows.append({"partition": group.name, "path": str(c.replica.path), "status": "damaged (reference)",
                             "end": c.replica.log_end})
                continue
            rows.append({"partition": group.name, "path": str(c.replica.path), "status": c.status,
                         "end": c.replica.log_end, "prefix": c.common_prefix_end - 1 if c.common_prefix_end else None,
                         "divergence": c.divergence["offset"] if c.divergence else None,
                         "cause": c.divergence["cause"] if c.divergence else None,
                         "truncate": c.truncation.offset if c.truncation else None,
                         "lost": c.lost.records + c.lost.control_records if c.lost else 0})
        for bad in group.unreadable:
            rows.append({"partition": group.name, "path": bad["path"], "status": "unreadable"})
    return rows


def _subject(group) -> tuple:
    ref = group.reference
    return (None, None, None) if ref is None else (ref.topic, ref.partition, ref.topic_id)


def group_election_lines(group, elections) -> list[str]:
    """The elections behind the group's leader epochs (none without a metadata log)."""
    if elections is None or group.reference is None:
        return []
    topic, partition, topic_id = _subject(group)
    return election_lines(elections, topic, partition, group.leader_epochs(), topic_id)


def _group_dict(group, elections) -> dict:
    out = group.as_dict()
    if elections is not None and group.reference is not None:
        topic, partition, topic_id = _subject(group)
        out["leaderElections"] = election_document(elections, topic, partition, group.leader_epochs(), topic_id)
    return out


def render_table(groups, out: TextIO, elections=None) -> None:
    """One row per replica; when log dirs are compared, the partitions in sync on every replica
    with nothing to say are counted in one line instead (``--format text`` lists them).
    ``elections`` (an :class:`~seglog_cli.storage.metadata.elections.ElectionLog`): each shown
    partition's leader epochs named with their elections."""
    quiet = [g for g in groups if _quiet(g)] if len(groups) > 1 else []
    shown = [g for g in groups if not _quiet(g)] if quiet else groups
    if shown or not quiet:
        write_table(_rows(shown), COLUMNS, out)
    for group in shown:
        for c in group.comparisons:
            for line in _detail_lines(c):
                out.write(f"{c.replica.path}: {line}\n")
        for line in group_election_lines(group, elections):
            out.write(f"{group.name}: {line}\n")
    if quiet:
        out.write(f"{counted(len(quiet), 'partition')} in sync on every replica (--format text lists them)\n")


def _quiet(group) -> bool:
    return (group.status == IN_SYNC and not group.unreadable and group.reference is not None
            and not any(_detail_lines(c) for c in group.comparisons))


def render_text(groups, out: TextIO, elections=None) -> None:
    for group in groups:
        ref = group.reference
        out.write(f"{group.name}: {group.status}\n")
        if ref is not None:
            out.write(f"  reference {ref.path}: offsets {ref.log_start}-{ref.log_end - 1}, leader epochs "
                      f"{[[e.epoch, e.start_offset] for e in ref.epoch_checkpoint]}\n")
        for c in group.comparisons:
            r = c.replica
            out.write(f"  {r.path}: {c.status}, offsets {r.log_start}-{r.log_end - 1}")
            if c.common_prefix_end > r.log_start:
                out.write(f", agrees with the reference up to {c.common_prefix_end - 1}")
            out.write("\n")
            for line in _detail_lines(c):
                out.write(f"    {line}\n")
        for bad in group.unreadable:
            out.write(f"  {bad['path']}: unreadable: {bad['message']}\n")
        for line in group_election_lines(group, elections):
            out.write(f"  {line}\n")


def _detail_lines(c) -> list[str]:
    lines = []
    if c.divergence:
        d = c.divergence
        ref = d.get("referenceBatch")
        mine = d["batch"]
        lines.append(f"diverges at offset {d['offset']} ({d['cause']}): this replica's batch {mine['baseOffset']}-"
                     f"{mine['lastOffset']} epoch {mine['partitionLeaderEpoch']} crc {mine['crc']}"
                     + (f", the reference's {ref['baseOffset']}-{ref['lastOffset']} epoch "
                        f"{ref['partitionLeaderEpoch']} crc {ref['crc']}" if ref else ", the reference ends before"))
    for bad in c.corruption:
        lines.append(f"corrupt batch {bad['firstOffset']}-{bad['lastOffset']}: CRC fails on the "
                     f"{' and the '.join(bad['crcFailsOn'])}")
    for hole in c.holes:
        lines.append(f"offsets {hole['firstOffset']}-{hole['lastOffset']} ({hole['batches']} batches) are missing "
                     f"on the {hole['missingOn']}, the batches after them identical (a lost segment)")
    for damage in c.replica.damage:
        lines.append(f"damage: {damage.code} at position {damage.position} of {damage.path}: {damage.message}")
    t = c.truncation
    if t is not None and t.offset < c.replica.log_end:
        last = t.steps[-1] if t.steps else None
        how = (f" (lastFetchedEpoch {last.fetch_epoch}, the leader's end offset for it {last.leader_end_offset} in "
               f"epoch {last.leader_epoch})" if last and last.leader_end_offset is not None else "")
        lines.append(f"Kafka truncates it to offset {t.offset} when it rejoins{how}: {c.discarded} records removed")
    if c.lost is not None:
        lost = c.lost
        producers = ", ".join(f"producer {pid} ({info['records']} records, offsets {info['firstOffset']}-"
                              f"{info['lastOffset']})" for pid, info in sorted(lost.producers.items()))
        lines.append(f"lost: {lost.records} records (+{lost.control_records} control) at offsets {lost.first_offset}-"
                     f"{lost.last_offset}, leader epochs {lost.leader_epochs}, written {iso_time(lost.first_timestamp)}"
                     f" to {iso_time(lost.last_timestamp)}; {producers}")
    for note in c.notes:
        lines.append(f"{note['severity']}: {note['message']}")
    return lines


def document(groups, status: int, elections=None) -> dict:
    return {"exitStatus": status, "partitions": [_group_dict(g, elections) for g in groups]}


def render_json(groups, status: int, out: TextIO, elections=None) -> None:
    json.dump(document(groups, status, elections), out, indent=2)
    out.write("\n")


def render_jsonl(groups, status: int, out: TextIO, elections=None) -> None:
    dumps = json.JSONEncoder(separators=(",", ":")).encode
    for group in groups:
        if group.reference is not None:
            out.write(dumps({"type": "reference", "partition": group.name, **group.reference.summary()}) + "\n")
        for c in group.comparisons:
            out.write(dumps({"type": "replica", "partition": group.name, **c.as_dict()}) + "\n")
        for bad in group.unreadable:
            out.write(dumps({"type": "unreadable", "partition": group.name, **bad}) + "\n")
        if elections is not None and group.reference is not None:
            out.write(dumps({"type": "leaderElections", "partition": group.name,
                             **_group_dict(group, elections)["leaderElections"]}) + "\n")
    out.write(dumps({"type": "summary", "exitStatus": status, "partitions": len(groups)}) + "\n")
