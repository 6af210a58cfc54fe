"""How ``seglog metadata`` shows the cluster metadata image and histories: text that fits 80
columns, or one JSON document.

JSON document of an image: ``{"version": 1, "directory", "node_id", "snapshot", "end_offset",
"undecodable", "aborted", "open_transaction", "image": {...}}`` where ``image`` is
:meth:`MetadataImage.as_dict` (provenance, features, brokers, controllers, topics with their
partitions, configs, client_quotas, scram_users (mechanisms only), acls (a count),
delegation_tokens (ids), next_producer_id). Of a history: ``{"version": 1, "directory",
"node_id", "subject", "changes": [...]}``, each change :meth:`PartitionChange.as_dict` or
:meth:`BrokerEvent.as_dict`.
"""

from __future__ import annotations

import json
import textwrap
from typing import TextIO

from seglog_cli.render.tabular import iso_time
from seglog_cli.storage.metadata.image import CONFIG_RESOURCE_TYPES, MetadataImage
from seglog_cli.storage.metadata.loader import LoadedImage

WIDTH = 80


def _ids(values) -> str:
    return ",".join(str(v) for v in values) or "-"


def _fit(line: str, indent: str = "      ") -> list[str]:
    if len(line) <= WIDTH:
        return [line]
    lead = " " * (len(line) - len(line.lstrip(" ")))
    return textwrap.wrap(line.lstrip(" "), WIDTH, initial_indent=lead, subsequent_indent=lead + indent,
                         break_on_hyphens=False,
                         break_long_words=False) or [line]


def image_lines(loaded: LoadedImage, topic: str | None = None, broker: int | None = None) -> list[str]:
    image = loaded.image
    source = f"snapshot {loaded.snapshot}, then the log" if loaded.snapshot else "the log from its start"
    last = image.provenance
    node = "" if loaded.node_id is None else f" of node {loaded.node_id}"
    lines = [f"metadata image{node} below offset {loaded.end_offset}", f"  {loaded.directory}", f"  read from {source}"]
    if last.offset >= 0:
        lines.append(f"  last record applied: offset {last.offset}" +
                     (f", {iso_time(last.timestamp)}" if last.timestamp >= 0 else ""))
    for count, what in ((loaded.undecodable, "record(s) Kafka cannot decode, skipped"),
                        (loaded.aborted, "record(s) of aborted metadata transactions, not applied"),
                        (loaded.open_transaction, "record(s) of a metadata transaction not ended, not applied")):
        if count:
            lines.append(f"  {count} {what}")
    lines += _features(image) + _brokers(image, broker) + _topics(image, topic, broker)
    if topic is None and broker is None:
        lines += _configs(image) + _rest(image)
    elif topic is not None:
        lines += _configs(image, (2, topic))
    elif broker is not None:
        lines += _configs(image, (4, str(broker)))
    return [fitted for line in lines for fitted in _fit(line)]


def _features(image: MetadataImage) -> list[str]:
    others = " ".join(f"{name}={level}" for name, level in sorted(image.features.items()) if name != "metadata.version")
    return [f"metadata.version: {image.metadata_version or '-'}", f"features: {others or '-'}"]


def _brokers(image: MetadataImage, only: int | None) -> list[str]:
    lines = ["brokers:"]
    for broker_id, broker in sorted(image.brokers.items()):
        if only is not None and broker_id != only:
            continue
        state = "fenced" if broker.fenced else "unfenced"
        state += ", in controlled shutdown" if broker.in_controlled_shutdown else ""
        listeners = " ".join(f"{e.name}://{e.host}:{e.port}" for e in broker.listeners)
        lines.append(f"  {broker_id}: epoch {broker.epoch}, {state}, {listeners}"
                     + (f", rack {broker.rack}" if broker.rack else ""))
        lines.append(f"      incarnation {broker.incarnation_id}, log dirs {' '.join(broker.directories) or '-'}")
    if only is None:
        for controller_id, controller in sorted(image.controllers.items()):
            listeners = " ".join(f"{e.name}://{e.host}:{e.port}" for e in controller.listeners)
            lines.append(f"  controller {controller_id}: {listeners}")
    return lines if len(lines) > 1 else ["brokers: none"]


def _topics(image: MetadataImage, only: str | None, broker: int | None) -> list[str]:
    lines = ["topics:"]
    for topic in sorted(image.topics_by_id.values(), key=lambda t: t.name):
        if only is not None and topic.name != only:
            continue
        partitions = [(p, r) for p, r in sorted(topic.partitions.items()) if broker is None or broker in r.replicas]
        if broker is not None and not partitions:
            continue
        lines.append(f"  {topic.name} ({topic.topic_id}), {len(topic.partitions)} partition(s)")
        for p, r in partitions:
            line = (f"    {p}: leader {r.leader if r.has_leader else 'none'} (epoch {r.leader_epoch}), "
                    f"replicas {_ids(r.replicas)}, isr {_ids(r.isr)}, partition epoch {r.partition_epoch}")
            extra = [f"elr {_ids(r.elr)}" if r.elr else "", f"last known elr {_ids(r.last_known_elr)}" if r.last_known_elr
                     else "", f"adding {_ids(r.adding_replicas)}" if r.adding_replicas else "",
                     f"removing {_ids(r.removing_replicas)}" if r.removing_replicas else "",
                     r.recovery_state_name if r.recovery_state_name != "RECOVERED" else ""]
            lines.append(line + "".join(f", {e}" for e in extra if e))
    return lines if len(lines) > 1 else ["topics: none"]


def _configs(image: MetadataImage, only: tuple | None = None) -> list[str]:
    lines = ["configs:"]
    for (kind, name), values in sorted(image.configs.items()):
        if only is not None and (kind, name) != only:
            continue
        label = CONFIG_RESOURCE_TYPES.get(kind, str(kind)).lower() + (f" {name}" if name else " (cluster default)")
        for key, value in sorted(values.items()):
            lines.append(f"  {label}: {key}={value}")
    return lines if len(lines) > 1 else ["configs: none"]


def _rest(image: MetadataImage) -> list[str]:
    lines = ["client quotas:" if image.client_quotas else "client quotas: none"]
    for entity, quotas in sorted(image.client_quotas.items(), key=repr):
        who = ",".join(f"{kind}={name if name is not None else '<default>'}" for kind, name in entity)
        lines += [f"  {who}: {key}={value}" for key, value in sorted(quotas.items())]
    lines.append("SCRAM users: " + (", ".join(f"{user} ({' '.join(sorted(m))})" for user, m in sorted(image.scram.items()))
                                    or "none"))
    lines.append(f"ACLs: {len(image.acls)}")
    lines.append("delegation tokens: " + (" ".join(sorted(image.delegation_tokens)) or "none"))
    lines.append(f"next producer id: {image.next_producer_id if image.next_producer_id >= 0 else '-'}")
    return lines


def history_lines(directory: str, node_id: int | None, subject: str, changes: list) -> list[str]:
    node = "" if node_id is None else f" seen by node {node_id}"
    lines = [f"history of {subject}{node}: {len(changes)} change(s)", f"  {directory}"]
    if changes and hasattr(changes[0], "registration"):
        lines.append(f"{'offset':<8}{'time':<26}{'leader':<8}{'epoch':<7}{'isr':<10}replicas")
        for change in changes:
            r = change.registration
            if r is None:
                lines.append(f"{change.offset:<8}{iso_time(change.timestamp):<26}-")
            else:
                leader = str(r.leader) if r.has_leader else "none"
                lines.append(f"{change.offset:<8}{iso_time(change.timestamp):<26}{leader:<8}{r.leader_epoch:<7}"
                             f"{_ids(r.isr):<10}{_ids(r.replicas)}")
            lines += [f"        {reason}" for reason in change.reasons]
    elif changes:
        lines.append(f"{'offset':<8}{'time':<26}event")
        for e in changes:  # a long event goes on under its column
            lines += _fit(f"{e.offset:<8}{iso_time(e.timestamp):<26}{e.event}", " " * 34)
        return [fitted for line in lines[:3] for fitted in _fit(line, "  ")] + lines[3:]
    return [fitted for line in lines for fitted in _fit(line, "  ")]


def render_image(loaded: LoadedImage, fmt: str, out: TextIO, topic: str | None = None,
                 broker: int | None = None) -> None:
    if fmt == "json":
        document = image_document(loaded, topic, broker)
        out.write(json.dumps(document, indent=2) + "\n")
    else:
        out.write("".join(line + "\n" for line in image_lines(loaded, topic, broker)))


def image_document(loaded: LoadedImage, topic: str | None = None, broker: int | None = None) -> dict:
    image = loaded.image.as_dict()
    if topic is not None:
        image["topics"] = [t for t in image["topics"] if t["name"] == topic]
    if broker is not None:
        image["brokers"] = [b for b in image["brokers"] if b["id"] == broker]
        for t in image["topics"]:
            t["partitions"] = {p: r for p, r in t["partitions"].items() if broker in r["replicas"]}
        image["topics"] = [t for t in image["topics"] if t["partitions"]]
    return {"version": 1, "directory": str(loaded.directory), "nodeId": loaded.node_id, "snapshot": loaded.snapshot,
            "endOffset": loaded.end_offset, "undecodable": loaded.undecodable, "aborted": loaded.aborted,
            "openTransaction": loaded.open_transaction, "image": image}


def render_history(directory: str, node_id: int | None, subject: str, changes: list, fmt: str, out: TextIO) -> None:
    if fmt == "json":
        out.write(json.dumps({"version": 1, "directory": directory, "nodeId": node_id, "subject": subject,
                              "changes": [c.as_dict() for c in changes]}, indent=2) + "\n")
    else:
        out.write("".join(line + "\n" for line in history_lines(directory, node_id, subject, changes)))
