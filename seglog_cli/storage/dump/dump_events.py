"""What a dump produces: a stream of value objects, rendered by ``seglog_cli.render``.

A dump yields, in file order: :class:`FileStart`, then the file's content (``BatchHeader``,
``Record``, :class:`ControlRecordEntry`, ``OffsetPosition``, ``TimestampOffset``,
``AbortedTxn``, ``ProducerStateEntry``), interleaved with :class:`Problem` (an error line),
:class:`Notice` and one-off lines (:class:`IndexIsEmpty`, :class:`SanityCheckPassed`,
:class:`TrailingBytes`), then :class:`FileEnd`. The last item is the :class:`DumpReport`
holding the cross-file reports Kafka prints at the very end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from seglog_cli.storage.log.control import ControlRecord
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.findings import Finding
from seglog_cli.storage.log.naming import KRaftSnapshotId
from seglog_cli.storage.log.records import Record

LOG, CHECKPOINT, INDEX, TIME_INDEX, SNAPSHOT, TXN_INDEX, UNKNOWN = (
    "log", "checkpoint", "index", "timeindex", "snapshot", "txnindex", "unknown")
KIND_NAMES = (LOG, INDEX, TIME_INDEX, TXN_INDEX, SNAPSHOT, CHECKPOINT)


@dataclass(frozen=True)
class FileStart:
    path: str  # as given (what "Dumping" prints)
    kind: str
    base_offset: int | None = None
    snapshot_id: KRaftSnapshotId | None = None  # KRaft .checkpoint snapshots
    bootstrap: bool = False  # bootstrap.checkpoint
    topic: str | None = None
    partition: int | None = None


@dataclass(frozen=True)
class FileEnd:
    path: str
    kind: str
    findings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class ControlRecordEntry:
    record: Record
    control: ControlRecord


@dataclass(frozen=True)
class Problem:
    """Damage or a failure reported on stderr. ``text`` is exactly what Kafka's tool prints
    there in the same situation; ``kafka_stops`` tells whether kafka-dump-log ends at it."""

    text: str
    error: SeglogError | None = None
    finding: Finding | None = None
    kafka_stops: bool = True


@dataclass(frozen=True)
class Notice:
    """seglog's own remark about the dump (e.g. a resync past damage), printed on stderr."""

    text: str
    finding: Finding | None = None


@dataclass(frozen=True)
class UnknownFile:
    path: str


@dataclass(frozen=True)
class IndexIsEmpty:
    path: str


@dataclass(frozen=True)
class SanityCheckPassed:
    path: str


@dataclass(frozen=True)
class TrailingBytes:
    count: int
    file_name: str
    position: int


@dataclass
class TimeIndexErrors:
    mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    shallow_offset_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


@dataclass
class DumpReport:
    """Reports Kafka prints after all files, keyed by absolute path, each list in discovery order
    (the Scala tool prepends index mismatches and non-consecutive pairs, so it prints those
    newest first: the text renderer reverses them)."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_index: TimeIndexErrors = field(default_factory=TimeIndexErrors)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    damaged_files: list[str] = field(default_factory=list)
    unreadable_files: list[str] = field(default_factory=list)
    files: int = 0
