"""A tiered partition read from the local file system: a remote partition directory in
LocalTieredStorage's layout (names in :mod:`remote_layout`), alone or joined with the local
partition directory of the same topic-partition.

A remote directory is read as a partition directory (:class:`PartitionLog` lists its
``<offset>-<uuid>.log`` segments with their ``.index``/``.timeindex``/``.txnindex`` beside
them), so every command that takes a partition takes it. :func:`pair_tiered` finds, among the
directories a command was given, the remote and local directories of one partition, and
:func:`joined_log` reads them as one log as a broker serves it: offsets below the local log
start offset from remote storage, the rest from the local log (Kafka 4.2
core/src/main/java/kafka/log/remote/RemoteLogManager.java, ``read``; UnifiedLog's
``localLogStartOffset``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.naming import parse_partition_dir_name
from seglog_cli.storage.log.partition_log import PartitionLog

REMOTE = "remote"


@dataclass(frozen=True)
class TieredPair:
    remote: Path
    local: Path | None


def is_remote_partition_dir(path: Path) -> bool:
    name = parse_partition_dir_name(path.name)
    return name is not None and name.kind == REMOTE


def pair_tiered(directories: list[Path]) -> tuple[list[Path], list[TieredPair]]:
    """``directories`` -> (those read on their own, in order; the remote directories each with
    the local directory of its topic-partition when one was given). A local directory whose
    ``partition.metadata`` names the remote directory's topic id is preferred."""
    remotes = [d for d in directories if is_remote_partition_dir(d)]
    if not remotes:
        return list(directories), []
    locals_by_tp: dict[tuple[str, int], list[Path]] = {}
    for directory in directories:
        name = parse_partition_dir_name(directory.name)
        if name is not None and name.kind == "current":
            locals_by_tp.setdefault((name.topic, name.partition), []).append(directory)
    pairs, taken = [], set()
    for remote in remotes:
        name = parse_partition_dir_name(remote.name)
        candidates = [d for d in locals_by_tp.get((name.topic, name.partition), []) if d not in taken]
        chosen = next((d for d in candidates if _topic_id(d) == name.unique_id), candidates[0] if candidates else None)
        if chosen is not None:
            taken.add(chosen)
        pairs.append(TieredPair(remote, chosen))
    alone = [d for d in directories if d not in taken and not is_remote_partition_dir(d)]
    return alone, pairs


def _topic_id(directory: Path) -> str | None:
    from seglog_cli.storage.log.checkpoints import read_partition_metadata
    try:
        return read_partition_metadata(directory / "partition.metadata").topic_id
    except (SeglogError, OSError):
        return None


def joined_log(remote: PartitionLog, local: PartitionLog) -> PartitionLog:
    """The local partition with the remote segments below its log start offset before its own:
    one log, read as a broker serves it."""
    start = local.log_start_offset
    below = [s for s in remote.segments if start is None or s.base_offset < start]
    return local.with_segments(below + list(local.segments))


def ordered_partitions(directories: list[Path]) -> list[tuple[Path, Path | None]]:
    """``directories`` as (directory, remote directory to read before it, or None), in their
    order: a tiered partition given both ways once, where its local directory is."""
    _alone, pairs = pair_tiered(directories)
    remote_of = {pair.local: pair.remote for pair in pairs if pair.local is not None}
    joined = set(remote_of.values())
    return [(d, remote_of.get(d)) for d in directories if d not in joined]


def open_partition(directory: Path, remote: Path | None = None) -> PartitionLog:
    """The partition at ``directory``, read after its remote segments when ``remote`` is given."""
    log = PartitionLog(directory)
    return joined_log(PartitionLog(remote), log) if remote is not None else log


def partition_label(directory: Path) -> str:
    """``<topic>-<partition>`` of a local or remote partition directory (its name otherwise)."""
    name = parse_partition_dir_name(directory.name)
    return f"{name.topic}-{name.partition}" if name is not None else directory.name
