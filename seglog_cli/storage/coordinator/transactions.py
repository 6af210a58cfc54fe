"""Transactions, offline: what the data partitions' markers, their ``.txnindex`` files and the
transaction coordinator's ``__transaction_state`` say.

* Data partitions (every partition but ``__transaction_state`` and ``__cluster_metadata``) are
  walked batch header by batch header: a producer's transactional batches open a transaction
  in that partition at their first offset; its COMMIT or ABORT control batch closes it. What is
  still open at the log end is *open*; open for longer than its timeout (the coordinator's
  ``transactionTimeoutMs`` for that producer, else ``default_timeout_ms``) or with no ongoing
  coordinator transaction for that producer, it is *hanging* (the last stable offset is stuck).
* Each aborted transaction is looked up in its segment's ``.txnindex`` (producer id and first
  offset); entries that match no ABORT marker are listed as mismatches.
* ``__transaction_state``: the latest state of each transactional id (tombstones delete),
  and every producer id a transactional id was seen with (to name the producers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.formats.transaction_log import TRANSACTION_STATES
from seglog_cli.storage.coordinator.coordinator_log import (
    crc_message,
    TRANSACTION_STATE,
    Entry,
    WalkProblem,
    partition_dirs,
    partition_entries,
    topic_of,
)
from seglog_cli.storage.serde.coordinator_records import (
    TRANSACTION_RECORD_TYPES,
    CoordinatorRecordError,
    read_coordinator_record,
)
from seglog_cli.storage.log.control import parse_control_record
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.findings import Severity
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.records import read_records

SKIPPED_TOPICS = (TRANSACTION_STATE, "__cluster_metadata")
OPEN_STATES = {1, 2, 3, 7}  # Ongoing, PrepareCommit, PrepareAbort, PrepareEpochFence
DEFAULT_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms's default: no longer may a transaction run
COMMIT = 1
REPORT_VERSION = 1  # of the JSON document (TransactionsReport.as_dict)


@dataclass
class Transaction:
    """One transaction as one data partition saw it."""

    partition: str
    producer_id: int
    producer_epoch: int
    state: str  # committed, aborted, open
    first_offset: int | None
    last_offset: int | None  # the last data offset seen
    marker_offset: int | None = None
    coordinator_epoch: int | None = None
    first_timestamp: int | None = None
    end_timestamp: int | None = None  # the marker's timestamp
    batches: int = 0
    records: int = 0
    transactional_id: str | None = None
    in_txn_index: bool | None = None  # aborted transactions only
    age_ms: int | None = None  # open transactions only
    hanging: bool | None = None  # open transactions only

    def as_dict(self) -> dict:
        """The JSON form (producerId/firstOffset/lastOffset as in Kafka's AbortedTxn and producer state)."""
        return {"partition": self.partition, "producerId": self.producer_id, "producerEpoch": self.producer_epoch,
                "state": self.state, "firstOffset": self.first_offset, "lastOffset": self.last_offset,
                "markerOffset": self.marker_offset, "coordinatorEpoch": self.coordinator_epoch,
                "firstTimestamp": self.first_timestamp, "endTimestamp": self.end_timestamp,
                "batches": self.batches, "records": self.records, "transactionalId": self.transactional_id,
                "inTxnIndex": self.in_txn_index, "ageMs": self.age_ms, "hanging": self.hanging}


@dataclass(frozen=True)
class CoordinatorState:
    """The latest ``__transaction_state`` record of one transactional id."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    status: str
    partitions: list
    transaction_timeout_ms: int
    start_timestamp: int
    last_update_timestamp: int
    coordinator_partition: str
    record_offset: int

    def as_dict(self) -> dict:
        """The JSON form: TransactionLogValue's field names; the state and the partitions as
        ``kafka-transactions.sh describe`` names them (TransactionState, TopicPartitions)."""
        return {"transactionalId": self.transactional_id, "producerId": self.producer_id,
                "producerEpoch": self.producer_epoch, "transactionState": self.status,
                "topicPartitions": self.partitions, "transactionTimeoutMs": self.transaction_timeout_ms,
                "transactionStartTimestampMs": self.start_timestamp,
                "transactionLastUpdateTimestampMs": self.last_update_timestamp,
                "coordinatorPartition": self.coordinator_partition, "recordOffset": self.record_offset}


@dataclass(frozen=True)
class TxnIndexMismatch:
    path: str
    producer_id: int
    first_offset: int
    last_offset: int
    message: str

    def as_dict(self) -> dict:
        return {"path": self.path, "producerId": self.producer_id, "firstOffset": self.first_offset,
                "lastOffset": self.last_offset, "message": self.message}


@dataclass
class TransactionsReport:
    transactions: list[Transaction] = field(default_factory=list)
    coordinator: list[CoordinatorState] = field(default_factory=list)
    txn_index_mismatches: list[TxnIndexMismatch] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    problems: list[WalkProblem] = field(default_factory=list)
    partitions_read: int = 0

    def count(self, state: str) -> int:
        return sum(1 for t in self.transactions if t.state == state)

    def counts(self) -> dict:
        return {"committed": self.count("committed"), "aborted": self.count("aborted"),
                "open": self.count("open"), "hanging": sum(1 for t in self.transactions if t.hanging)}

    def as_dict(self) -> dict:
        return {"version": REPORT_VERSION, "transactions": [t.as_dict() for t in self.transactions],
                "coordinator": [s.as_dict() for s in self.coordinator],
                "txnIndexMismatches": [m.as_dict() for m in self.txn_index_mismatches],
                "unreadable": list(self.unreadable), "problems": [p.as_dict() for p in self.problems],
                "counts": self.counts(), "partitionsRead": self.partitions_read}


def read_transactions(log_dir: str | Path, topic: str | None = None, now_ms: int = 0,
                      default_timeout_ms: int = DEFAULT_TIMEOUT_MS,
                      remote: str | Path | None = None) -> TransactionsReport:
    """Every transaction under ``log_dir`` (data partitions of ``topic`` only, when given).
    ``remote``: tiered storage (LocalTieredStorage's root, or remote partition directories):
    each partition's remote segments are read before its local ones, as one log."""
    from seglog_cli.storage.tiered.tiered import ordered_partitions, partition_label
    report = TransactionsReport()
    directories = partition_dirs(log_dir) + (partition_dirs(remote) if remote is not None else [])
    names: dict[int, str] = {}
    for directory in directories:
        if topic_of(directory) == TRANSACTION_STATE:
            _read_transaction_state(directory, report, names)
    for directory, remote_dir in ordered_partitions(directories):
        name = partition_label(directory).rsplit("-", 1)[0]
        if name in SKIPPED_TOPICS or (topic is not None and name != topic):
            continue
        _read_partition(directory, report, remote_dir)
    latest = {state.producer_id: state for state in report.coordinator}
    for txn in report.transactions:
        txn.transactional_id = names.get(txn.producer_id)
        if txn.state == "open":
            _judge_open(txn, latest.get(txn.producer_id), now_ms, default_timeout_ms)
    report.coordinator.sort(key=lambda s: s.transactional_id)
    return report


def _judge_open(txn: Transaction, state: CoordinatorState | None, now_ms: int, default_timeout_ms: int) -> None:
    since = txn.first_timestamp if txn.first_timestamp is not None else now_ms
    txn.age_ms = max(0, now_ms - since)
    timeout = state.transaction_timeout_ms if state is not None else default_timeout_ms
    ongoing = state is not None and state.status in {TRANSACTION_STATES[s] for s in OPEN_STATES}
    txn.hanging = txn.age_ms > timeout or not ongoing


# -- __transaction_state ---------------------------------------------------------------------


def _read_transaction_state(directory: Path, report: TransactionsReport, names: dict[int, str]) -> None:
    report.partitions_read += 1
    latest: dict[str, CoordinatorState | None] = {}
    for entry in partition_entries(directory, report.problems):
        if entry.control is not None:
            continue
        record = entry.record
        try:
            if record.key is None:
                raise CoordinatorRecordError("the record has no key")
            decoded = read_coordinator_record(record.key, record.value, TRANSACTION_RECORD_TYPES)
        except CoordinatorRecordError as exc:
            report.unreadable.append(f"{entry.partition}@{record.offset}: {exc.message}")
            continue
        transactional_id = decoded.key["transactionalId"]
        if decoded.is_tombstone:
            latest[transactional_id] = None
            continue
        state = _state(transactional_id, decoded.value, entry)
        names[state.producer_id] = transactional_id
        latest[transactional_id] = state
    report.coordinator.extend(state for state in latest.values() if state is not None)


def _state(transactional_id: str, value: dict, entry: Entry) -> CoordinatorState:
    status = value["transactionStatus"]
    partitions = [f"{p['topic']}-{n}" for p in value["transactionPartitions"] or () for n in p["partitionIds"]]
    return CoordinatorState(
        transactional_id=transactional_id, producer_id=value["producerId"],
        producer_epoch=value["producerEpoch"], status=TRANSACTION_STATES.get(status, f"Unknown({status})"),
        partitions=partitions, transaction_timeout_ms=value["transactionTimeoutMs"],
        start_timestamp=value["transactionStartTimestampMs"],
        last_update_timestamp=value["transactionLastUpdateTimestampMs"],
        coordinator_partition=entry.partition, record_offset=entry.record.offset)


# -- data partitions ---------------------------------------------------------------------------


def _read_partition(directory: Path, report: TransactionsReport, remote: Path | None = None) -> None:
    from seglog_cli.storage.tiered.tiered import open_partition, partition_label
    report.partitions_read += 1
    log = open_partition(directory, remote)
    label = partition_label(directory)
    open_txns: dict[int, Transaction] = {}
    aborted: list[tuple[Transaction, str]] = []
    try:
        for segment in log.segments:
            path = str(segment.log_path)
            scan = segment.batches(resync=False)
            for batch in scan:
                if not batch.is_valid:
                    report.problems.append(WalkProblem(path, batch.position, crc_message(batch)))
                    break
                if not batch.is_transactional:
                    continue
                if batch.is_control:
                    done = _end(label, batch, segment, open_txns, report)
                    if done is not None:
                        report.transactions.append(done)
                        if done.state == "aborted":
                            aborted.append((done, path))
                    continue
                _data(label, batch, open_txns)
            damage = [f for f in scan.findings if f.severity is not Severity.INFO]
            if report.problems and report.problems[-1].path == path:
                break
            if scan.kafka_error is not None or damage:
                message = scan.kafka_error.message if scan.kafka_error is not None else damage[0].message
                report.problems.append(WalkProblem(path, scan.end_position, message))
                break
        report.transactions.extend(open_txns.values())
        _check_txn_indexes(log, aborted, report)
    except SeglogError as exc:
        report.problems.append(WalkProblem(exc.path or str(directory), exc.position, exc.message))
    finally:
        log.close()


def partition_transactions(directory: str | Path, remote: str | Path | None = None) -> TransactionsReport:
    """The transactions one partition's log holds (its tiered ``remote`` directory first when
    given), each committed, aborted or open as its markers say, in log order. The walk stops at
    the first damaged batch (``report.problems`` says where); transactions past it are unknown."""
    report = TransactionsReport()
    _read_partition(Path(directory), report, None if remote is None else Path(remote))
    return report


def _data(partition: str, batch, open_txns: dict[int, Transaction]) -> None:
    txn = open_txns.get(batch.producer_id)
    if txn is None:
        txn = open_txns[batch.producer_id] = Transaction(
            partition, batch.producer_id, batch.producer_epoch, "open", batch.base_offset, batch.last_offset,
            first_timestamp=batch.max_timestamp)
    txn.producer_epoch = batch.producer_epoch
    txn.last_offset = batch.last_offset
    txn.batches += 1
    txn.records += batch.records_count


def _end(partition: str, batch, segment, open_txns, report) -> Transaction | None:
    path = str(segment.log_path)
    for record in read_records(segment.log.buffer, batch, path):
        control = parse_control_record(record, path, batch.position)
        if not control.is_transaction_marker:
            continue
        txn = open_txns.pop(batch.producer_id, None) or Transaction(
            partition, batch.producer_id, batch.producer_epoch, "open", None, None)
        txn.state = "committed" if control.type_id == COMMIT else "aborted"
        txn.producer_epoch = batch.producer_epoch
        txn.marker_offset = record.offset
        txn.coordinator_epoch = control.coordinator_epoch
        txn.end_timestamp = record.timestamp
        return txn
    return None


def _check_txn_indexes(log: PartitionLog, aborted: list[tuple[Transaction, str]], report) -> None:
    """Each ABORT against the ``.txnindex`` of the segment holding its marker, and back."""
    indexed: dict[tuple[int, int], tuple[str, object]] = {}
    for segment in log.segments:
        index = segment.txn_index()
        if index is None:
            continue
        for entry in index.aborted_txns():
            indexed[(entry.producer_id, entry.first_offset)] = (index.path, entry)
    for txn, _ in aborted:
        if txn.first_offset is None:
            continue
        txn.in_txn_index = indexed.pop((txn.producer_id, txn.first_offset), None) is not None
    for path, entry in indexed.values():
        report.txn_index_mismatches.append(TxnIndexMismatch(
            path, entry.producer_id, entry.first_offset, entry.last_offset,
            "aborted transaction in the .txnindex has no ABORT marker in the log"))


@dataclass(frozen=True)
class CommittedView:
    """What a read_committed consumer of one partition is told, offline: the aborted
    transactions of the segments' ``.txnindex`` files (Kafka's ``collectAbortedTxns``) below the
    last stable offset, and that offset. As the broker's (``UnifiedLog.lastStableOffset``) it is
    the first offset of the earliest transaction still open at the log end when that lies below
    the high watermark, else the high watermark: a read_committed fetch never returns records
    the followers have not all copied. The high watermark is the log dir's
    ``replication-offset-checkpoint`` entry (what a broker starts from), raised to the log
    start offset as the broker does; without an entry (a partition dir copied on its own, an
    unreadable checkpoint) only open transactions bound the read. None: nothing bounds it
    before the log end."""

    aborted: tuple
    last_stable_offset: int | None
    high_watermark: int | None = None  # from replication-offset-checkpoint; None: no entry


def read_committed_view(directory: str | Path) -> CommittedView:
    """The :class:`CommittedView` of the partition in ``directory``: open transactions from the
    same walk as ``seglog transactions``, aborted ones from the ``.txnindex`` files (what the
    broker's fetch path reads; a read_committed consumer drops a producer's batches from an
    entry's first offset to its last, the ABORT marker)."""
    directory = Path(directory)
    report = TransactionsReport()
    _read_partition(directory, report)
    open_offsets = [t.first_offset for t in report.transactions if t.state == "open" and t.first_offset is not None]
    last_stable = min(open_offsets) if open_offsets else None
    aborted = []
    log = PartitionLog(directory)
    try:
        high_watermark = checkpointed_high_watermark(directory, log.log_start_offset)
        if high_watermark is not None and (last_stable is None or high_watermark < last_stable):
            end = log.log_end_offset()
            if end is None or high_watermark < end:  # at the log end it bounds nothing the log end does not
                last_stable = high_watermark
        for segment in log.segments:
            index = segment.txn_index()
            if index is None:
                continue
            aborted.extend(entry for entry in index.aborted_txns()
                           if last_stable is None or entry.first_offset < last_stable)
    finally:
        log.close()
    return CommittedView(tuple(aborted), last_stable, high_watermark)


def checkpointed_high_watermark(directory: Path, log_start_offset: int | None) -> int | None:
    """The partition's high watermark in its log dir's ``replication-offset-checkpoint``, at
    least the log start offset (``Partition.createLog`` then ``UnifiedLog.updateHighWatermark``
    bound it so); None when the file has no entry for it or cannot be read."""
    from seglog_cli.storage.log.checkpoints import TopicPartition, offset_checkpoint_view
    from seglog_cli.storage.log.log_dir_files import REPLICATION_CHECKPOINT
    from seglog_cli.storage.log.naming import parse_partition_dir_name

    name = parse_partition_dir_name(directory.name)
    path = directory.parent / REPLICATION_CHECKPOINT
    if name is None or not path.is_file():
        return None
    try:
        high_watermark = offset_checkpoint_view(path).get(TopicPartition(name.topic, name.partition))
    except (SeglogError, OSError):
        return None
    if high_watermark is None:
        return None
    return max(high_watermark, log_start_offset) if log_start_offset is not None else high_watermark
