"""seglog as a library: the supported entry points, in one place.

The names below are seglog's public library interface: their parameters and the value objects
they return keep working from one version to the next. Every other module of ``seglog_cli``
(``seglog_cli.storage.*``, ``commands``, ``render``, ``spark``) is internal: importable, but free
to change. The engine never prints and never exits; every error it raises is a
:class:`SeglogError` naming the file, the byte position and the offset when known.

Reading
    :func:`open_log_dir`, :func:`open_partition`, :func:`find_offset`, :func:`find_timestamp`,
    :func:`batches`, :func:`records`
Checking
    :func:`verify` (damage comes back as findings with stable codes, never as an exception)
Changing: plan, then apply (every apply goes through the one write protocol: the log dir's
lock, a journal, the original bytes kept in a backup directory that :func:`undo` restores)
    :func:`plan_recover` / :func:`apply_recover`, :func:`plan_rebuild_index` /
    :func:`apply_rebuild_index`, :func:`plan_append` / :func:`apply_append`,
    :func:`plan_retention` / :func:`apply_retention`, :func:`undo`
The small files of a log dir
    :func:`read_offset_checkpoint`, :func:`read_leader_epoch_checkpoint`,
    :func:`read_partition_metadata`, :func:`read_producer_snapshot`, :func:`read_meta_properties`,
    :func:`read_clean_shutdown`, :func:`read_quorum_state`, :func:`open_offset_index`,
    :func:`open_time_index`, :func:`open_txn_index`

The examples run from the root of seglog's repository (``examples/logdir`` is a small log dir
made by seglog's writer: ``orders-0`` holds offsets 0-299 in three segments, ``orders-1``
offsets 0-159); ``tests/test_api.py`` runs each of them on a fresh copy.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from seglog_cli.storage.config.topic_config import TopicConfig
from seglog_cli.storage.log.batch_header import BatchHeader
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log import checkpoints, log_dir_files
from seglog_cli.storage.log.checkpoints import EpochEntry, PartitionMetadata, TopicPartition
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.findings import Finding, Severity
from seglog_cli.storage.log.indexes import OffsetIndex, TimeIndex, TransactionIndex
from seglog_cli.storage.log.log_dir_files import CleanShutdown, MetaProperties, QuorumState
from seglog_cli.storage.log.naming import parse_segment_file_name
from seglog_cli.storage.log.partition_log import LogDir, PartitionLog
from seglog_cli.storage.log.records import Record, read_records
from seglog_cli.storage.log.segments import LogSegment, OffsetMatch
from seglog_cli.storage.log.snapshots import ProducerSnapshot, read_snapshot
from seglog_cli.storage.write.builder import NewRecord

__all__ = [
    # reading
    "open_log_dir", "open_partition", "find_offset", "find_timestamp", "batches", "records",
    # checking
    "verify",
    # changing
    "plan_recover", "apply_recover", "plan_rebuild_index", "apply_rebuild_index", "plan_append", "apply_append",
    "plan_retention", "apply_retention", "undo",
    # small files
    "read_offset_checkpoint", "read_leader_epoch_checkpoint", "read_partition_metadata", "read_producer_snapshot",
    "read_meta_properties", "read_clean_shutdown", "read_quorum_state", "open_offset_index", "open_time_index",
    "open_txn_index",
    # value objects the entry points take or return
    "BatchHeader", "CleanShutdown", "EpochEntry", "Finding", "LogDir", "LogSegment", "MetaProperties", "NewRecord",
    "OffsetMatch", "PartitionLog", "PartitionMetadata", "ProducerSnapshot", "QuorumState", "Record", "SeglogError",
    "Severity", "TopicConfig", "TopicPartition",
]


# -- reading ------------------------------------------------------------------------------------

def open_log_dir(path: str | Path) -> LogDir:
    """A Kafka log dir (one ``log.dirs`` entry): its partitions in Kafka's order (topic, then
    partition number), and its checkpoint and metadata files. Nothing is read until asked.

    >>> from seglog_cli import api
    >>> log_dir = api.open_log_dir("examples/logdir")
    >>> [(log.topic, log.partition) for log in log_dir.partitions()]
    [('__consumer_offsets', 0), ('orders', 0), ('orders', 1), ('payments', 0)]
    """
    return LogDir(path)


def open_partition(path: str | Path) -> PartitionLog:
    """A partition directory (``<topic>-<partition>``): its segments in offset order, its log
    start and end offsets. The ``.log`` files are memory-mapped when first read; ``close()``
    unmaps them.

    >>> from seglog_cli import api
    >>> log = api.open_partition("examples/logdir/orders-0")
    >>> log.topic, log.partition, [segment.base_offset for segment in log.segments]
    ('orders', 0, [0, 120, 240])
    >>> log.log_start_offset, log.log_end_offset()        # a property (cheap), a method (reads)
    (0, 300)
    >>> log.close()
    """
    return PartitionLog(path)


def find_offset(log: PartitionLog, offset: int) -> tuple[LogSegment, OffsetMatch] | None:
    """The segment and the batch holding ``offset`` (Kafka's lookup: the segment floor, then the
    ``.index`` floor, then a scan), or None past the log end offset. ``match.position`` is the
    batch's byte position in the segment's ``.log``.

    >>> from seglog_cli import api
    >>> log = api.open_partition("examples/logdir/orders-0")
    >>> segment, match = api.find_offset(log, 130)
    >>> segment.base_offset, match.batch.base_offset <= 130 <= match.batch.last_offset
    (120, True)
    >>> api.find_offset(log, 300) is None
    True
    """
    return log.find_offset(offset)


def find_timestamp(log: PartitionLog, timestamp_ms: int) -> int | None:
    """The first offset whose record timestamp is at or after ``timestamp_ms`` (Kafka's
    ``ListOffsets`` by timestamp, through the ``.timeindex``), or None when every record is older.

    >>> from seglog_cli import api
    >>> log = api.open_partition("examples/logdir/orders-0")
    >>> first = next(api.records(log))
    >>> api.find_timestamp(log, first.timestamp)
    0
    >>> api.find_timestamp(log, 2**62) is None
    True
    """
    return log.find_offset_by_timestamp(timestamp_ms)


def batches(log: PartitionLog, from_offset: int | None = None) -> Iterator[tuple[LogSegment, BatchHeader]]:
    """Every batch of the partition in log order, from the one holding ``from_offset`` (default:
    the first), with its segment. A batch that fails its checks is yielded too, with
    ``is_valid`` False (the scan resynchronises after damage, as ``seglog verify`` does).

    >>> from seglog_cli import api
    >>> log = api.open_partition("examples/logdir/orders-0")
    >>> found = [(segment.base_offset, batch.base_offset, batch.is_valid) for segment, batch in api.batches(log, 250)]
    >>> found[0][0], found[0][1] <= 250, all(valid for *_, valid in found)
    (240, True, True)
    """
    segments = log.segments
    start_position = 0
    if from_offset is not None:
        found = log.find_offset(from_offset)
        if found is None:
            return
        first, match = found
        segments = [s for s in segments if s.base_offset >= first.base_offset]
        start_position = match.position
    for index, segment in enumerate(segments):
        for batch in LogScan(segment.log, start_position if index == 0 else 0):
            yield segment, batch


def records(log: PartitionLog, from_offset: int | None = None) -> Iterator[Record]:
    """Every record of the partition's valid batches in offset order, from ``from_offset`` on
    (decompressed; control records included, as Kafka stores them). Damaged batches are skipped:
    :func:`verify` reports them.

    >>> from seglog_cli import api
    >>> log = api.open_partition("examples/logdir/orders-0")
    >>> record = next(api.records(log, 120))
    >>> record.offset, record.key, record.value[:21]
    (120, b'c-001', b'{"order_id":"o-00120"')
    >>> sum(1 for _ in api.records(log))
    300
    """
    for segment, batch in batches(log, from_offset):
        if not batch.is_valid:
            continue
        for record in read_records(segment.log.buffer, batch, str(segment.log_path)):
            if from_offset is None or record.offset >= from_offset:
                yield record


# -- checking -----------------------------------------------------------------------------------

def verify(paths: Sequence[str | Path], deep: bool = False, jobs: int = 1):
    """Check files, partition directories, log dirs or trees of log dirs as ``seglog verify``
    does. Returns a report: ``status`` (clean, warnings, damage, unreadable), ``partitions`` and
    ``all_findings()``, each :class:`Finding` with a stable ``code``, a severity, the file, the
    byte position and the offset. ``deep`` also decodes every record; ``jobs`` partitions are
    checked in parallel processes.

    >>> from seglog_cli import api
    >>> report = api.verify(["examples/logdir"])
    >>> report.status, len(report.partitions), [f.code for f in report.all_findings() if f.severity.value != "info"]
    ('clean', 4, [])
    """
    from seglog_cli.storage.verify.verify import VerifyOptions
    from seglog_cli.storage.verify.verify import verify as run

    return run([str(p) for p in paths], VerifyOptions("deep" if deep else "shallow", jobs))


# -- changing: plan, then apply -----------------------------------------------------------------

def plan_recover(partition_dirs: Sequence[str | Path], salvage: bool = False,
                 config: TopicConfig | Mapping[Path, TopicConfig] = TopicConfig(), jobs: int = 1):
    """Kafka's start-up log recovery of ``partition_dirs``, planned: nothing is written. Without
    ``.kafka_cleanshutdown`` every segment from the recovery point on is recovered (indexes
    rebuilt, the ``.log`` truncated at the first invalid batch, every later segment removed);
    ``salvage`` cuts the damaged bytes alone out instead. ``plan.steps`` lists each change and why,
    ``plan.partitions`` the offsets each partition loses.

    >>> import os
    >>> from seglog_cli import api
    >>> active = "examples/logdir/orders-0/00000000000000000240.log"
    >>> size = os.path.getsize(active)
    >>> os.remove("examples/logdir/.kafka_cleanshutdown")          # as after a crash
    >>> with open(active, "ab") as log:
    ...     _ = log.write(b"torn")                                  # a torn write at the end
    >>> plan = api.plan_recover(["examples/logdir/orders-0"])
    >>> [(step.op, step.path.name, step.size == size) for step in plan.steps if step.op == "truncate"]
    [('truncate', '00000000000000000240.log', True)]
    >>> plan.partitions[0].log_end_offset
    300
    """
    from seglog_cli.storage.recovery.recover import KAFKA, SALVAGE
    from seglog_cli.storage.recovery.recover import plan_recover as plan

    return plan([Path(p) for p in partition_dirs], SALVAGE if salvage else KAFKA, config, jobs)


def apply_recover(plan, backup_root: str | Path | None = None):
    """Carry out a :func:`plan_recover` plan (the log dir is locked and the plan re-validated
    first: nothing is written when the files changed since). Returns ``backup_dir`` (default
    under ``seglog-backups/`` beside the log dir) and the number of steps.

    >>> import os
    >>> from seglog_cli import api
    >>> active = "examples/logdir/orders-0/00000000000000000240.log"
    >>> size = os.path.getsize(active)
    >>> os.remove("examples/logdir/.kafka_cleanshutdown")
    >>> with open(active, "ab") as log:
    ...     _ = log.write(b"torn")
    >>> result = api.apply_recover(api.plan_recover(["examples/logdir/orders-0"]))
    >>> os.path.getsize(active) == size, result.backup_dir.is_dir()
    (True, True)
    >>> api.plan_recover(["examples/logdir/orders-0"]).steps     # recovered: nothing left to do
    []
    """
    from seglog_cli.storage.recovery.apply import apply_recover as apply

    return apply(plan, backup_root)


def plan_rebuild_index(paths: Sequence[str | Path],
                       config: TopicConfig | Mapping[Path, TopicConfig] = TopicConfig()):
    """The ``.index``, ``.timeindex`` and ``.txnindex`` files of ``paths`` (segments, partition
    directories, log dirs) rebuilt batch by batch as Kafka's recovery does, planned: ``plan.changes``
    lists the files that would differ. ``config`` (``index.interval.bytes`` above all) must be the
    topic's: the example log dir was written with an index entry every 1024 bytes.

    >>> import os
    >>> from seglog_cli import api
    >>> config = api.TopicConfig(index_interval_bytes=1024)
    >>> api.plan_rebuild_index(["examples/logdir/orders-0"], config).changes
    []
    >>> os.remove("examples/logdir/orders-0/00000000000000000120.index")
    >>> [change.path.name for change in api.plan_rebuild_index(["examples/logdir/orders-0"], config).changes]
    ['00000000000000000120.index']
    """
    from seglog_cli.storage.write.rebuild_index import plan_rebuild

    return plan_rebuild([str(p) for p in paths], config)


def apply_rebuild_index(plan, backup_root: str | Path | None = None):
    """Write a :func:`plan_rebuild_index` plan (locked, journaled, backed up). Raises
    :class:`SeglogError` without writing anything when a segment cannot be rebuilt.

    >>> import os
    >>> from seglog_cli import api
    >>> os.remove("examples/logdir/orders-0/00000000000000000120.index")
    >>> config = api.TopicConfig(index_interval_bytes=1024)
    >>> result = api.apply_rebuild_index(api.plan_rebuild_index(["examples/logdir/orders-0"], config))
    >>> [path.name for path in result.written], api.plan_rebuild_index(["examples/logdir/orders-0"], config).changes
    (['00000000000000000120.index'], [])
    """
    from seglog_cli.storage.write.rebuild_index import apply_rebuild

    return apply_rebuild(plan, backup_root)


def plan_append(partition_dir: str | Path, batches: Iterable[Sequence[NewRecord]],
                config: TopicConfig = TopicConfig()):
    """Records appended to a partition as a leader broker appends a produce request (one batch
    per sequence of :class:`NewRecord`), planned: ``plan.batches`` holds the offsets each batch
    gets, ``plan.writes`` the files written.

    >>> from seglog_cli import api
    >>> plan = api.plan_append("examples/logdir/orders-0", [[api.NewRecord(b"k", b"v1"), api.NewRecord(b"k", b"v2")]])
    >>> [(batch.base_offset, batch.last_offset) for batch in plan.batches]
    [(300, 301)]
    """
    from seglog_cli.storage.write.append import plan_append as plan

    return plan(partition_dir, batches, config)


def apply_append(plan, backup_root: str | Path | None = None):
    """Write a :func:`plan_append` plan (locked, journaled, backed up; refused when the partition
    changed since it was planned).

    >>> from seglog_cli import api
    >>> _ = api.apply_append(api.plan_append("examples/logdir/orders-0", [[api.NewRecord(b"k", b"v")]]))
    >>> log = api.open_partition("examples/logdir/orders-0")
    >>> log.log_end_offset(), [r.value for r in api.records(log, 300)]
    (301, [b'v'])
    """
    from seglog_cli.storage.write.append import apply_append as apply

    return apply(plan, backup_root)


def plan_retention(partition_dir: str | Path, config: TopicConfig = TopicConfig(), now_ms: int | None = None):
    """One run of Kafka's retention (``UnifiedLog.deleteOldSegments``) at ``now_ms`` (default:
    now), planned: the segments deleted, by which rule (log start offset, ``retention.bytes``,
    ``retention.ms``) and why each later one is kept.

    The example's records were written one a second from 1767225600000 (offset 0) on; an hour
    and 200 seconds later, with ``retention.ms`` at one hour, only the first segment (offsets
    0-119) is old enough:

    >>> from seglog_cli import api
    >>> hour = 3_600_000
    >>> plan = api.plan_retention("examples/logdir/orders-0", api.TopicConfig(retention_ms=hour),
    ...                           now_ms=1767225600000 + hour + 200_000)
    >>> [verdict.segment.base_offset for verdict in plan.deleted], plan.new_log_start_offset
    ([0], 120)
    """
    from seglog_cli.storage.retention.retention import plan_retention as plan
    from seglog_cli.storage.retention.retention import read_partition_state

    return plan(read_partition_state(partition_dir), config, int(time.time() * 1000) if now_ms is None else now_ms)


def apply_retention(plan, backup_root: str | Path | None = None):
    """Delete what a :func:`plan_retention` plan deletes, and move the log start offset
    checkpoint (locked, journaled, backed up; refused when the segments changed since).

    >>> from seglog_cli import api
    >>> hour = 3_600_000
    >>> plan = api.plan_retention("examples/logdir/orders-0", api.TopicConfig(retention_ms=hour),
    ...                           now_ms=1767225600000 + hour + 200_000)
    >>> applied = api.apply_retention(plan)
    >>> applied.deleted, [s.base_offset for s in api.open_partition("examples/logdir/orders-0").segments]
    ([0], [120, 240])
    >>> api.read_offset_checkpoint("examples/logdir/log-start-offset-checkpoint")[api.TopicPartition("orders", 0)]
    120
    """
    from seglog_cli.storage.retention.retention_apply import apply_retention as apply

    return apply(plan, backup_root)


def undo(backup_dir: str | Path) -> Path | None:
    """Put back what one applied plan changed, from the backup directory it left (refused, with
    nothing done, when a file changed since). Returns the undo's own backup directory.

    >>> import filecmp, shutil
    >>> from seglog_cli import api
    >>> _ = shutil.copytree("examples/logdir", "before")
    >>> applied = api.apply_retention(api.plan_retention("examples/logdir/orders-0", api.TopicConfig(retention_ms=1)))
    >>> applied.deleted
    [0, 120, 240]
    >>> _ = api.undo(applied.backup_dir)
    >>> filecmp.dircmp("before/orders-0", "examples/logdir/orders-0").diff_files
    []
    >>> [s.base_offset for s in api.open_partition("examples/logdir/orders-0").segments]
    [0, 120, 240]
    """
    from seglog_cli.storage.write.undo import undo as run

    plan, backup, _finished = run(backup_dir)
    if plan.conflicts:
        raise SeglogError("files changed since that run; nothing was undone: " + "; ".join(plan.conflicts),
                          Path(backup_dir))
    return backup


# -- the small files of a log dir ---------------------------------------------------------------

def read_offset_checkpoint(path: str | Path) -> dict[TopicPartition, int]:
    """An offset checkpoint of the log dir (``recovery-point-offset-checkpoint``,
    ``replication-offset-checkpoint``, ``log-start-offset-checkpoint``,
    ``cleaner-offset-checkpoint``), read as Kafka's ``CheckpointFile`` reads it.

    >>> from seglog_cli import api
    >>> api.read_offset_checkpoint("examples/logdir/recovery-point-offset-checkpoint")[api.TopicPartition("orders", 1)]
    160
    """
    return checkpoints.read_offset_checkpoint(path)


def read_leader_epoch_checkpoint(path: str | Path) -> list[EpochEntry]:
    """A partition's ``leader-epoch-checkpoint``: (epoch, start offset) entries.

    >>> from seglog_cli import api
    >>> api.read_leader_epoch_checkpoint("examples/logdir/orders-0/leader-epoch-checkpoint")[0].start_offset
    0
    """
    return checkpoints.read_leader_epoch_checkpoint(path)


def read_partition_metadata(path: str | Path) -> PartitionMetadata:
    """A partition's ``partition.metadata``: its version and topic id.

    >>> from seglog_cli import api
    >>> api.read_partition_metadata("examples/logdir/orders-0/partition.metadata").version
    0
    """
    return checkpoints.read_partition_metadata(path)


def read_meta_properties(path: str | Path) -> MetaProperties:
    """The log dir's ``meta.properties`` (its version, cluster, node and directory ids).

    >>> from seglog_cli import api
    >>> api.read_meta_properties("examples/logdir/meta.properties").version
    1
    """
    return log_dir_files.read_meta_properties(path)


def read_clean_shutdown(path: str | Path) -> CleanShutdown:
    """The log dir's ``.kafka_cleanshutdown`` marker: whether the last shutdown was clean (the
    file exists) and the broker epoch it holds.

    >>> from seglog_cli import api
    >>> api.read_clean_shutdown("examples/logdir/.kafka_cleanshutdown").present
    True
    """
    return log_dir_files.read_clean_shutdown(path)


def read_quorum_state(path: str | Path) -> QuorumState:
    """A KRaft ``__cluster_metadata-0/quorum-state`` file (version 0 or 1), read as Kafka's
    ``FileQuorumStateStore`` reads it.

    >>> from pathlib import Path
    >>> from seglog_cli import api
    >>> _ = Path("quorum-state").write_text('{"leaderId":1,"leaderEpoch":8,"votedId":-1,'
    ...                                     '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}')
    >>> state = api.read_quorum_state("quorum-state")
    >>> state.leader_id, state.leader_epoch
    (1, 8)
    """
    return log_dir_files.read_quorum_state(path)


def read_producer_snapshot(path: str | Path) -> ProducerSnapshot:
    """A producer state ``<offset>.snapshot`` file: its producers, their epochs, last
    sequences and offsets (Kafka's ``ProducerStateManager`` format, CRC checked).

    >>> from seglog_cli import api
    >>> snapshot = api.read_producer_snapshot("examples/logdir/orders-0/00000000000000000300.snapshot")
    >>> len(snapshot.entries)
    0
    """
    return read_snapshot(path)


def open_offset_index(path: str | Path, base_offset: int | None = None) -> OffsetIndex:
    """A ``.index`` file: Kafka's entry count (``entries``: the whole file, preallocated or
    not), ``lookup(offset)`` (the floor entry: offset and byte position), ``sanity_check()``.
    ``base_offset`` defaults to the one in the file name.

    >>> from seglog_cli import api
    >>> index = api.open_offset_index("examples/logdir/orders-0/00000000000000000120.index")
    >>> entry = index.lookup(200)
    >>> 120 <= entry.offset <= 200, entry.position > 0
    (True, True)
    """
    return OffsetIndex(path, _base(path, base_offset))


def open_time_index(path: str | Path, base_offset: int | None = None) -> TimeIndex:
    """A ``.timeindex`` file: ``entries``, ``lookup(timestamp)`` (the floor entry: timestamp
    and offset) and ``sanity_check()``.

    >>> from seglog_cli import api
    >>> index = api.open_time_index("examples/logdir/orders-0/00000000000000000000.timeindex")
    >>> index.lookup(0).offset                      # before every entry: the base offset
    0
    """
    return TimeIndex(path, _base(path, base_offset))


def open_txn_index(path: str | Path, base_offset: int | None = None) -> TransactionIndex:
    """A ``.txnindex`` file: the aborted transactions of a segment (``aborted_txns()``: producer
    id, first, last and last stable offsets) and ``sanity_check()``.

    >>> from pathlib import Path
    >>> from seglog_cli import api
    >>> _ = Path("00000000000000000000.txnindex").write_bytes(
    ...     bytes.fromhex("0000" "00000000000003e8" "0000000000000005" "0000000000000009" "000000000000000a"))
    >>> [(t.producer_id, t.first_offset, t.last_offset) for t in api.open_txn_index("00000000000000000000.txnindex").aborted_txns()]
    [(1000, 5, 9)]
    """
    return TransactionIndex(path, _base(path, base_offset))


def _base(path: str | Path, base_offset: int | None) -> int:
    if base_offset is not None:
        return base_offset
    parsed = parse_segment_file_name(Path(path).name)
    return parsed.base_offset if parsed is not None else 0
