"""The elections behind the leader epochs ``seglog diff`` and ``seglog repair`` compare.

Each leader epoch a comparison holds (the replicas' ``leader-epoch-checkpoint`` entries and
batch epochs, with each replica's first offset in it) is named with the election the metadata
log records for it (:mod:`~seglog_cli.storage.metadata.elections`): the leader broker, the
metadata offset and batch time it became leader, and whether the election was clean,
preferred or unclean. As text lines (:func:`election_lines`) or a JSON object
(:func:`election_document`).
"""

from __future__ import annotations

from seglog_cli.render.tabular import iso_time

KINDS = {"created": "created with the partition", "clean": "clean election", "preferred": "preferred election",
         "unclean": "UNCLEAN election", "leader kept": "the same leader, a new epoch",
         "offline": "no leader (offline)", "before the log": "before the metadata log's first offset"}


def _first_offsets(firsts: dict[str, int]) -> str:
    offsets = set(firsts.values())
    if len(offsets) == 1:
        return f"first offset {offsets.pop()}"
    return "first offset " + ", ".join(f"{offset} on {path}" for path, offset in firsts.items())


def _detail(reason: str) -> str:
    """The reason's words after the election's name (``election: leader 3 -> 1 ...``)."""
    head, colon, rest = reason.partition(": ")
    return rest if colon and head in ("election", "preferred election", "unclean election", "created") else reason


def epoch_line(epoch: int, firsts: dict[str, int], election, log) -> str:
    if election is None:
        return (f"epoch {epoch} ({_first_offsets(firsts)}): not in the metadata log (read below offset "
                f"{log.end_offset})")
    if election.offset is None:
        return (f"epoch {epoch} ({_first_offsets(firsts)}): leader {election.leader}, "
                f"{KINDS[election.kind]} ({log.snapshot})")
    return (f"epoch {epoch} ({_first_offsets(firsts)}): leader {election.leader} from metadata offset "
            f"{election.offset} ({iso_time(election.timestamp)}), {KINDS.get(election.kind, election.kind)}: "
            f"{_detail(election.reason)}")


def election_lines(log, topic: str | None, partition: int | None, epochs: dict[int, dict[str, int]],
                   topic_id: str | None = None) -> list[str]:
    """A heading naming the metadata log, then a line per leader epoch."""
    found = log.of(topic, partition) if topic is not None else None
    lines = [f"leader epochs, as the metadata log {log.directory} names them:"]
    for epoch, firsts in epochs.items():
        election = None if found is None else found.for_epoch(epoch, topic_id)
        lines.append("  " + epoch_line(epoch, firsts, election, log))
    return lines


def election_document(log, topic: str | None, partition: int | None, epochs: dict[int, dict[str, int]],
                      topic_id: str | None = None) -> dict:
    found = log.of(topic, partition) if topic is not None else None
    out = []
    for epoch, firsts in epochs.items():
        election = None if found is None else found.for_epoch(epoch, topic_id)
        out.append({"leaderEpoch": epoch, "firstOffsets": dict(firsts),
                    "election": None if election is None else election.as_dict(),
                    "message": epoch_line(epoch, firsts, election, log)})
    return {"metadataLog": str(log.directory), "endOffset": log.end_offset, "snapshot": log.snapshot,
            "epochs": out}
