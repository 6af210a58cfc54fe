"""Consumer groups carried over: each group's committed offset in a source partition,
translated through the replay's offset map to the destination offset of the first replayed
record at or after it (past the last replayed record: the offset after it), so a consumer
restarted on the destination reads on from the same record.

The committed offsets come from the source log dirs' ``__consumer_offsets``
(:func:`~seglog_cli.storage.coordinator.offsets.read_committed_offsets`; a partition of it
found in several log dirs, one per broker, gives the latest commit). With ``--repartition`` a
destination partition takes records of several source partitions: its offset is the lowest
of theirs, so no record the group had not consumed is skipped.

They are written as ``kafka-consumer-groups.sh --reset-offsets`` commands and as the CSV its
``--from-file`` reads (``group,topic,partition,offset``), and committed in the destination only
when asked, for groups with no active member there.
"""

from __future__ import annotations

from dataclasses import dataclass

from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.replay.progress import Progress


@dataclass(frozen=True)
class TranslatedOffset:
    group: str
    topic: str  # destination
    partition: int
    offset: int
    sources: tuple  # ((source topic, source partition, committed offset), ...)

    def as_dict(self) -> dict:
        return {"group": self.group, "topic": self.topic, "partition": self.partition, "offset": self.offset,
                "from": [{"topic": t, "partition": p, "committedOffset": o} for t, p, o in self.sources]}


def committed_in_sources(log_dirs: list[str], groups: set[str] | None) -> tuple[dict, list[str]]:
    """``(group, topic, partition) -> committed offset`` from the log dirs' ``__consumer_offsets``,
    and notes (log dirs without it, pending transactional commits)."""
    from seglog_cli.storage.coordinator.offsets import read_committed_offsets

    found: dict[tuple[str, str, int], tuple[int, int]] = {}  # key -> (commit timestamp, offset)
    notes = []
    any_read = False
    for log_dir in log_dirs:
        try:
            report = read_committed_offsets(log_dir)
        except UnreadableInputError:
            continue
        any_read = True
        for commit in report.committed:
            if groups is not None and commit.group not in groups:
                continue
            key = (commit.group, commit.topic, commit.partition)
            if key not in found or found[key][0] < commit.commit_timestamp:
                found[key] = (commit.commit_timestamp, commit.offset)
        pending = {c.group for c in report.pending if groups is None or c.group in groups}
        if pending:
            notes.append(f"{log_dir}: group(s) {', '.join(sorted(pending))} have offsets committed in transactions "
                         f"with no marker yet: not carried over")
    if not any_read and log_dirs:
        notes.append("no __consumer_offsets partitions in the source log dirs: no group offsets to carry over")
    return {key: offset for key, (_stamp, offset) in found.items()}, notes


def translate(committed: dict, progress: Progress) -> list[TranslatedOffset]:
    """The destination offsets of the committed source offsets, through ``progress``'s runs."""
    by_dest: dict[tuple[str, str, int], list] = {}
    for (group, topic, partition), offset in sorted(committed.items()):
        state = progress.sources.get(f"{topic}-{partition}")
        if state is None:
            continue  # a partition this replay did not send
        for index in sorted(state.delivered):
            dest = progress.destinations[index]
            position = state.first_at_or_after(index, offset)
            if position is None:
                continue
            by_dest.setdefault((group, dest.topic, dest.partition), []).append((position, (topic, partition, offset)))
    return [TranslatedOffset(group, topic, partition, min(p for p, _ in found), tuple(s for _, s in found))
            for (group, topic, partition), found in sorted(by_dest.items())]


def reset_commands(translated: list[TranslatedOffset], bootstrap: str) -> list[str]:
    """One ``kafka-consumer-groups.sh --reset-offsets`` command per group and partition."""
    return [f"kafka-consumer-groups.sh --bootstrap-server {bootstrap} --group {_quote(t.group)} --reset-offsets "
            f"--topic {_quote(f'{t.topic}:{t.partition}')} --to-offset {t.offset} --execute" for t in translated]


def reset_csv(translated: list[TranslatedOffset]) -> str:
    """The CSV ``kafka-consumer-groups.sh --reset-offsets --from-file`` reads with several groups."""
    return "".join(f"{_csv(t.group)},{_csv(t.topic)},{t.partition},{t.offset}\n" for t in translated)


def _quote(text: str) -> str:
    import shlex
    return shlex.quote(text)


def _csv(text: str) -> str:
    """A CSV field as Jackson's CSV reader (kafka-consumer-groups.sh) reads it: quoted when it
    holds a comma, a quote or a line break, a quote inside doubled."""
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\r\n') else text
