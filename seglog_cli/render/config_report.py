"""How a partition's effective topic configs are shown: one line per value not at Kafka's
default with its source, the resolution's notes, and the JSON ``configs`` list."""

from __future__ import annotations

import re
from typing import TextIO

from seglog_cli.storage.config.effective_config import EffectiveConfig
from seglog_cli.storage.log.naming import parse_partition_dir_name


def render_text(effective: EffectiveConfig, out: TextIO) -> None:
    """``compacted-0 configs: cleanup.policy=compact (topic config, __cluster_metadata-0 offset 72)``"""
    name = effective.partition.name
    if effective.values:
        out.write(f"{name} configs: {effective.values[0].describe()}\n")
        for value in effective.values[1:]:
            out.write(f"{' ' * len(name)} configs: {value.describe()}\n")
    else:
        out.write(f"{name} configs: Kafka's defaults\n")
    for note in effective.notes:
        out.write(f"{name} configs: note: {note}\n")


_QUOTED = re.compile(r"'[^']*'")  # the topic a note names
NAMED = 5  # topics named in a line that stands for the same note about many


def render_all_text(resolved: list[EffectiveConfig], out: TextIO) -> None:
    """Many partitions: the values not at Kafka's defaults, once per topic where all its
    partitions given share them (``__consumer_offsets (50 partitions) configs: ...``), each note once."""
    groups: dict[tuple, list[EffectiveConfig]] = {}
    for effective in resolved:
        parsed = parse_partition_dir_name(effective.partition.name)
        topic = parsed.topic if parsed is not None else effective.partition.name
        key = (topic, tuple(value.describe() for value in effective.values))
        groups.setdefault(key, []).append(effective)
    notes: dict[str, list[tuple[str, str]]] = {}  # the note with its quoted name left out -> (partition, note)
    for (topic, described), members in groups.items():
        name = members[0].partition.name if len(members) == 1 else f"{topic} ({len(members)} partitions)"
        for index, text in enumerate(described):
            out.write(f"{name if index == 0 else ' ' * len(name)} configs: {text}\n")
        for effective in members:
            for note in effective.notes:
                alike = notes.setdefault(_QUOTED.sub("''", note, count=1), [])
                if all(note != seen for _name, seen in alike):
                    alike.append((effective.partition.name, note))
    for alike in notes.values():  # the same note about many topics: once, then the others named
        first, note = alike[0]
        out.write(f"{first} configs: note: {note}\n")
        if len(alike) > 1:
            others = [_QUOTED.search(text).group(0) for _name, text in alike[1:]]
            listed = ", ".join(others[:NAMED]) + (f" and {len(others) - NAMED} more" if len(others) > NAMED else "")
            out.write(f"{' ' * len(first)} configs: note: the same for {listed} (--format json lists each)\n")


def json_fields(resolved: list[EffectiveConfig]) -> dict:
    """``configs`` ({partition, key, value, source}) and ``configNotes`` for a command's document."""
    return {"configs": all_json(resolved), "configNotes": all_notes_json(resolved)}


def all_json(resolved: list[EffectiveConfig]) -> list[dict]:
    """For commands over many partitions: ``{partition, key, value, source}`` per value."""
    return [dict(partition=str(e.partition), **value) for e in resolved for value in e.as_dict()]


def all_notes_json(resolved: list[EffectiveConfig]) -> list[dict]:
    return [{"partition": str(e.partition), "note": note} for e in resolved for note in e.notes]
