"""Walking an internal topic's partitions record by record, in offset order, for the offline
coordinator views (``seglog offsets``, ``seglog transactions``).

:func:`internal_partitions` finds ``<topic>-<n>`` directories of one internal topic under a
log dir (or a tree of log dirs); :func:`partition_entries` yields every record of a partition
with its batch, control records parsed. Damage stops the walk of that partition at the first
bad batch, as the broker's loader would stop, and is reported as a :class:`WalkProblem`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from seglog_cli.storage.log.batch_header import BatchHeader
from seglog_cli.storage.log.control import ControlRecord, parse_control_record
from seglog_cli.storage.log.findings import Severity
from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.log.partition_log import PartitionLog, is_log_dir, partition_dirs_under
from seglog_cli.storage.log.records import Record, read_records

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"


@dataclass(frozen=True)
class Entry:
    """One record of a partition; ``control`` is set for control records."""

    partition: str
    batch: BatchHeader
    record: Record
    control: ControlRecord | None


@dataclass(frozen=True)
class WalkProblem:
    """Why a partition's walk stopped early (file, byte position, Kafka-style message)."""

    path: str
    position: int | None
    message: str

    def as_dict(self) -> dict:
        return {"path": self.path, "position": self.position, "message": self.message}

    def __str__(self) -> str:
        where = self.path if self.position is None else f"{self.path}: position {self.position}"
        return f"{where}: {self.message}"


def partition_dirs(path: str | Path) -> list[Path]:
    """Every partition directory ``path`` stands for, found as verify, recover and
    rebuild-index find them (:func:`partition_dirs_under`): a partition dir, a log dir's
    partitions, or those of the log dirs in a tree (hidden dirs and symlinks not followed,
    no descent into a log dir). A directory that is none of these is unreadable input."""
    path = Path(path)
    if not path.exists():
        raise UnreadableInputError("no such file or directory", path)
    if not path.is_dir():
        raise UnreadableInputError("not a directory (give a log dir)", path)
    found = partition_dirs_under(path)
    if not found and not is_log_dir(path):
        raise UnreadableInputError("no Kafka log dir or partition directory in this directory", path)
    return found


def topic_of(directory: Path) -> str:
    name = directory.name
    return name.rsplit("-", 1)[0] if "-" in name else name


def internal_partitions(path: str | Path, topic: str) -> list[Path]:
    """The ``topic-<n>`` partition directories under ``path``, in partition order."""
    return sorted_partitions([d for d in partition_dirs(path) if topic_of(d) == topic])


def sorted_partitions(directories: list[Path]) -> list[Path]:
    """Partition directories by log dir, then partition number."""
    return sorted(directories, key=lambda d: (str(d.parent), _partition_number(d)))


def _partition_number(directory: Path) -> int:
    tail = directory.name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def partition_entries(directory: Path, problems: list[WalkProblem]) -> Iterator[Entry]:
    """Every record of the partition in ``directory``, segment by segment."""
    log = PartitionLog(directory)
    try:
        for segment in log.segments:
            path = str(segment.log_path)
            scan = segment.batches(resync=False)
            buf = segment.log.buffer
            for batch in scan:
                if not batch.is_valid:
                    problems.append(WalkProblem(path, batch.position, crc_message(batch)))
                    return
                try:
                    for record in read_records(buf, batch, path):
                        control = parse_control_record(record, path, batch.position) if batch.is_control else None
                        yield Entry(directory.name, batch, record, control)
                except SeglogError as exc:
                    problems.append(WalkProblem(path, batch.position, exc.message))
                    return
            damage = [f for f in scan.findings if f.severity is not Severity.INFO]
            if scan.kafka_error is not None or damage:
                message = scan.kafka_error.message if scan.kafka_error is not None else damage[0].message
                problems.append(WalkProblem(path, scan.end_position, message))
                return
    finally:
        log.close()


def crc_message(batch: BatchHeader) -> str:
    return (f"Record is corrupt (stored crc = {batch.crc}, computed crc = {batch.computed_crc}) "
            f"in the batch at offset {batch.base_offset}")
