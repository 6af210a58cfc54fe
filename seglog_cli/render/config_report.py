"""How a partition's effective topic configs are shown: one line per value not at Kafka's
default with its source, the resolution's notes, and the JSON ``configs`` list."""

from __future__ import annotations

from typing import TextIO

from seglog_cli.storage.effective_config import EffectiveConfig


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


def render_all_text(resolved: list[EffectiveConfig], out: TextIO) -> None:
    """Many partitions: the values of those not at Kafka's defaults, each note once."""
    shown: set[str] = set()
    for effective in resolved:
        name = effective.partition.name
        for index, value in enumerate(effective.values):
            out.write(f"{name if index == 0 else ' ' * len(name)} configs: {value.describe()}\n")
        for note in effective.notes:
            if note not in shown:
                shown.add(note)
                out.write(f"{name} configs: note: {note}\n")


def json_fields(resolved: list[EffectiveConfig]) -> dict:
    """``configs`` ({partition, key, value, source}) and ``configNotes`` for a command's document."""
    return {"configs": all_json(resolved), "configNotes": all_notes_json(resolved)}


def all_json(resolved: list[EffectiveConfig]) -> list[dict]:
    """For commands over many partitions: ``{partition, key, value, source}`` per value."""
    return [dict(partition=str(e.partition), **value) for e in resolved for value in e.as_dict()]


def all_notes_json(resolved: list[EffectiveConfig]) -> list[dict]:
    return [{"partition": str(e.partition), "note": note} for e in resolved for note in e.notes]
