"""The history of a partition or a broker, read from the metadata log, each change with why.

:func:`partition_history` lists every registration a partition went through (offset, batch
time, leader and leader epoch, ISR, replicas) and names the cause as the controller's records
show it: creation, an election (clean, or unclean when the new leader was not in the ISR or
the leader recovery state is RECOVERING), the leader lost (no replica eligible), a
reassignment step (adding / removing replicas, then completed), an ISR shrink (and the broker
fencing, controlled shutdown or unregistration of the same batch that caused it), an ISR
expansion, ELR changes, directory assignments, and the topic's deletion.

:func:`broker_history` lists a broker's registrations (with epoch and incarnation), fencing,
unfencing, controlled shutdown and unregistration, and the partitions whose leadership it
gained or lost.

Both replay the log from its first offset (a snapshot only when the log no longer starts at 0),
streaming, keeping only the events asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from seglog_cli.storage.metadata.image import NO_LEADER, RECOVERING, BrokerRegistration, PartitionRegistration
from seglog_cli.storage.metadata.loader import load_image

BROKER_CAUSES = ("fenced", "in controlled shutdown", "unregistered")


@dataclass(frozen=True)
class PartitionChange:
    """One registration of a partition and why it changed (``reasons``, in words)."""

    offset: int
    timestamp: int
    topic: str
    partition: int
    registration: PartitionRegistration | None  # None: the topic was deleted
    reasons: tuple[str, ...]
    record: str  # the record type that made the change

    def as_dict(self) -> dict:
        out = {"offset": self.offset, "timestamp": self.timestamp, "topic": self.topic, "partition": self.partition,
               "record": self.record, "reasons": list(self.reasons)}
        if self.registration is not None:
            out.update(self.registration.as_dict())
        return out


@dataclass(frozen=True)
class BrokerEvent:
    """Something that happened to a broker: ``event`` in words, and the broker's epoch then."""

    offset: int
    timestamp: int
    broker_id: int
    event: str
    epoch: int | None = None

    def as_dict(self) -> dict:
        return {"offset": self.offset, "timestamp": self.timestamp, "brokerId": self.broker_id,
                "event": self.event, "epoch": self.epoch}


def _ids(values) -> str:
    return "[" + ",".join(str(v) for v in values) + "]"


def change_reasons(before: PartitionRegistration | None, after: PartitionRegistration | None) -> list[str]:
    """Why ``before`` became ``after`` (both None-able: created, deleted)."""
    if before is None:
        return [f"created: leader {after.leader}, replicas {_ids(after.replicas)}, isr {_ids(after.isr)}"]
    if after is None:
        return ["topic deleted"]
    reasons = _reassignment(before, after)
    if after.leader_epoch != before.leader_epoch or after.leader != before.leader:
        reasons.append(_election(before, after))
    elif after.leader_recovery_state != before.leader_recovery_state:
        reasons.append("leader recovered" if after.leader_recovery_state != RECOVERING else "leader recovering")
    removed = [b for b in before.isr if b not in after.isr]
    added = [b for b in after.isr if b not in before.isr]
    if removed:
        reasons.append(f"ISR shrink: {_ids(removed)} out")
    if added:
        new = set(added) <= set(before.adding_replicas)
        reasons.append(f"ISR expand: {_ids(added)} " + ("caught up (added by the reassignment)" if new else "back"))
    if after.elr != before.elr or after.last_known_elr != before.last_known_elr:
        reasons.append(f"ELR {_ids(after.elr)}, last known ELR {_ids(after.last_known_elr)}")
    if after.directories != before.directories and after.replicas == before.replicas:
        reasons.append("directory assignment")
    return reasons or ["no change but the partition epoch"]


def _reassignment(before: PartitionRegistration, after: PartitionRegistration) -> list[str]:
    moving = (after.adding_replicas, after.removing_replicas)
    if moving == (before.adding_replicas, before.removing_replicas):
        return [] if after.replicas == before.replicas else [f"replicas {_ids(before.replicas)} -> {_ids(after.replicas)}"]
    if after.adding_replicas or after.removing_replicas:
        return [f"reassignment: replicas {_ids(after.replicas)}, adding {_ids(after.adding_replicas)}, "
                f"removing {_ids(after.removing_replicas)}"]
    return [f"reassignment completed: replicas {_ids(after.replicas)}"]


def election_kind(before: PartitionRegistration | None, after: PartitionRegistration | None) -> str | None:
    """What gave ``after`` its leader epoch: ``created``, ``offline`` (no leader), ``leader kept``
    (a new epoch for the same leader), ``unclean`` (a leader out of the ISR and the ELR, or
    RECOVERING), ``preferred`` (the first replica) or ``clean``; None when neither the leader
    nor the leader epoch changed (or the topic was deleted)."""
    if before is None:
        return "created"
    if after is None or (after.leader_epoch == before.leader_epoch and after.leader == before.leader):
        return None
    if after.leader == NO_LEADER:
        return "offline"
    if after.leader == before.leader:
        return "leader kept"
    if (after.leader not in before.isr and after.leader not in before.elr) or after.leader_recovery_state == RECOVERING:
        return "unclean"
    return "preferred" if after.leader == after.replicas[0] else "clean"


def _election(before: PartitionRegistration, after: PartitionRegistration) -> str:
    epoch = f"leader epoch {after.leader_epoch}"
    kind = election_kind(before, after)
    if kind == "offline":
        return f"leader {before.leader} lost, no eligible replica: offline ({epoch})"
    if kind == "leader kept":
        return f"leader {after.leader} kept, {epoch}"
    if kind == "unclean":
        return (f"unclean election: leader {before.leader} -> {after.leader}, not in the ISR {_ids(before.isr)} "
                f"({epoch}, {after.recovery_state_name})")
    name = "preferred election" if kind == "preferred" else "election"
    return f"{name}: leader {before.leader} -> {after.leader} ({epoch})"


class _Recorder:
    """The observer :func:`load_image` feeds: keeps the changes of one partition, or of what
    concerns one broker."""

    def __init__(self, topic: str | None = None, partition: int | None = None, broker_id: int | None = None):
        self.topic, self.partition, self.broker_id = topic, partition, broker_id
        self.changes: list[PartitionChange] = []
        self.broker_events: list[BrokerEvent] = []  # every broker's (few): they explain ISR shrinks

    def partition_changed(self, offset, timestamp, topic, partition, before, after, record):
        if self.broker_id is not None:
            self._leadership(offset, timestamp, topic.name, partition, before, after)
        elif topic.name == self.topic and partition == self.partition:
            self.changes.append(PartitionChange(offset, timestamp, topic.name, partition, after,
                                                tuple(change_reasons(before, after)), record))

    def _leadership(self, offset, timestamp, topic, partition, before, after):
        old = NO_LEADER if before is None else before.leader
        new = NO_LEADER if after is None else after.leader
        name = f"{topic}-{partition}"
        if old == self.broker_id and new != old:
            self.broker_events.append(BrokerEvent(offset, timestamp, old, f"lost leadership of {name}"))
        if new == self.broker_id and new != old:
            self.broker_events.append(BrokerEvent(offset, timestamp, new,
                                                  f"became leader of {name} (leader epoch {after.leader_epoch})"))

    def broker_changed(self, offset, timestamp, broker_id, before, after, record):
        for event in _broker_events(before, after):
            self.broker_events.append(BrokerEvent(offset, timestamp, broker_id, event,
                                                  (after or before).epoch))


def _broker_events(before: BrokerRegistration | None, after: BrokerRegistration | None) -> list[str]:
    if after is None:
        return ["unregistered"]
    if before is None or after.epoch != before.epoch or after.incarnation_id != before.incarnation_id:
        state = "fenced" if after.fenced else "unfenced"
        return [f"registered (epoch {after.epoch}, incarnation {after.incarnation_id}, {state})"]
    events = []
    if after.fenced != before.fenced:
        events.append("fenced" if after.fenced else "unfenced")
    if after.in_controlled_shutdown != before.in_controlled_shutdown:
        events.append("in controlled shutdown" if after.in_controlled_shutdown else "controlled shutdown ended")
    if after.directories != before.directories:
        events.append(f"log dirs {', '.join(after.directories)}")
    return events


def partition_history(path: str | Path, topic: str, partition: int, at_offset: int | None = None,
                      at_time: int | None = None) -> list[PartitionChange]:
    """Every change of ``topic``-``partition`` in the metadata log of ``path``, up to the target."""
    recorder = _Recorder(topic, partition)
    load_image(path, at_offset, at_time, observer=recorder, from_start=True)
    return [_with_broker_cause(change, recorder.broker_events) for change in recorder.changes]


def _with_broker_cause(change: PartitionChange, events: list[BrokerEvent]) -> PartitionChange:
    """An ISR shrink caused by a broker fenced, in controlled shutdown or unregistered in the same
    batch (the controller writes those records together: ``handleBrokerFenced``,
    ``handleBrokerInControlledShutdown``) says so."""
    reasons = []
    for reason in change.reasons:
        if reason.startswith("ISR shrink: "):
            out = [int(b) for b in reason[len("ISR shrink: ["):].split("]")[0].split(",") if b]
            causes = [f"broker {e.broker_id} {e.event}" for e in events
                      if e.broker_id in out and e.timestamp == change.timestamp and e.event in BROKER_CAUSES]
            reason += f" ({', '.join(dict.fromkeys(causes))})" if causes else ""
        reasons.append(reason)
    return replace(change, reasons=tuple(reasons))


def broker_history(path: str | Path, broker_id: int, at_offset: int | None = None,
                   at_time: int | None = None) -> list[BrokerEvent]:
    """A broker's registrations, fencing, controlled shutdowns and leadership gained and lost."""
    recorder = _Recorder(broker_id=broker_id)
    load_image(path, at_offset, at_time, observer=recorder, from_start=True)
    return [event for event in recorder.broker_events if event.broker_id == broker_id]

