"""Producer state (ProducerStateManager offline): snapshots and .txnindex rebuilt from the log.

Against the broker: every producer snapshot in the corpus is rebuilt from the log alone, byte
for byte, and txn-0's ``.txnindex`` is rebuilt from its ABORT markers. Against Kafka's rules:
hand-built batches for the last-stable-offset rule, epochs, the 5 retained batches, sequence
wrap, damage, and the ``HashMap`` order of the written entries.
"""

from __future__ import annotations

import struct

import pytest

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.indexes import AbortedTxn
from seglog_cli.storage.log.naming import format_offset, parse_segment_file_name
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.producer_state import (
    CompletedTxn,
    EndTransactionMarker,
    ProducerStateManager,
    rebuild_producer_state,
    replay_segment,
)
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.log.snapshots import BatchMetadata, ProducerStateEntry, format_snapshot, read_snapshot
from tests.conftest import CORPUS, CORPUS_MISSING, requires_corpus

T0 = 1_700_000_000_000
KAFKA_420 = CORPUS / "kafka-4.2.0"
# Written by a ZooKeeper-era broker built for Scala 2.12, whose ProducerStateManager iterated a
# scala.collection.mutable.HashMap (table walked from the top, byteswap32 hashing): same
# entries, another order. Kafka 4.2 would write them in java.util.HashMap order.
SCALA_212_ORDER = {"public/macsakini__KafkaCluster/kafka/data/tenitems-0/00000000000000000009.snapshot"}


def _snapshot_params(root):
    if not root.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=CORPUS_MISSING))]
    # tiered/: a tiered partition's snapshots cover offsets whose batches live in remote storage
    # (KIP-405), so the local log alone cannot replay them; remote-by-offset/ holds links
    return [pytest.param(path, id=str(path.relative_to(CORPUS))) for path in sorted(root.rglob("*.snapshot"))
            if "tiered" not in path.relative_to(root).parts]


# -- the broker's files --------------------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize("snapshot", _snapshot_params(KAFKA_420))
def test_snapshot_rebuilt_from_the_log_alone(snapshot):
    """No snapshot loaded: the state replayed from the log start up to the snapshot's offset is
    the file the broker wrote, byte for byte (entries in java.util.HashMap order)."""
    log = PartitionLog(snapshot.parent)
    offset = parse_segment_file_name(snapshot.name).base_offset
    try:
        manager, _ = rebuild_producer_state(log, offset, use_snapshots=False)
    finally:
        log.close()
    assert manager.map_end_offset == offset
    assert manager.snapshot_bytes() == snapshot.read_bytes()


@requires_corpus
def test_public_snapshots_rebuilt_from_the_log_alone():
    """233 snapshots from other brokers (Kafka 2.x-3.x, up to 33 producers, 64-bucket maps)."""
    checked = 0
    for snapshot in sorted((CORPUS / "public").rglob("*.snapshot")):
        log = PartitionLog(snapshot.parent)
        try:
            manager, _ = rebuild_producer_state(log, read_snapshot(snapshot).offset, use_snapshots=False)
        finally:
            log.close()
        name = str(snapshot.relative_to(CORPUS))
        if name in SCALA_212_ORDER:
            assert set(manager.entries()) == set(read_snapshot(snapshot).entries), name
        else:
            assert manager.snapshot_bytes() == snapshot.read_bytes(), name
        checked += 1
    assert checked >= 200


@pytest.mark.corpus
@pytest.mark.parametrize("area", ["data", "live-copy"])
def test_txn_index_rebuilt_from_the_markers(corpus, area):
    """txn-0: two interleaved transactional producers, 14 ABORT markers; recovery's entries are
    the broker's .txnindex, byte for byte (AbortedTxn >hqqqq)."""
    log = PartitionLog(corpus / "kafka-4.2.0" / area / "txn-0")
    segment = log.segments[0]
    try:
        replay = replay_segment(ProducerStateManager(), segment)
        _, by_segment = rebuild_producer_state(log, use_snapshots=False)
    finally:
        log.close()
    broker = segment.txn_index_path.read_bytes()
    assert len(replay.aborted_txns) == 14 and len(broker) == 14 * 34
    assert replay.txn_index_bytes() == broker
    assert by_segment == {0: replay.aborted_txns}
    assert (replay.stopped_at, replay.valid_bytes) == (None, segment.size)
    # an abort whose LSO is the other producer's earlier open transaction
    assert AbortedTxn(0, 0, 85, 96, 79) in replay.aborted_txns


@requires_corpus
def test_corrupt_latest_snapshot_falls_back_to_an_earlier_one(tmp_path):
    """idem-0 with its 5907 snapshot damaged: Kafka skips it, loads 4974 and replays the last
    segment; the result is the broker's 5907 snapshot."""
    source = KAFKA_420 / "data" / "idem-0"
    copy = tmp_path / "idem-0"
    copy.mkdir()
    for path in source.iterdir():
        (copy / path.name).symlink_to(path)
    latest = copy / "00000000000000005907.snapshot"
    latest.unlink()
    latest.write_bytes(b"\x00\x01" + bytes(8))
    log = PartitionLog(copy)
    try:
        rebuild = rebuild_producer_state(log)
    finally:
        log.close()
    assert rebuild.snapshot.name == "00000000000000004974.snapshot"
    assert [path.name for path, _ in rebuild.skipped_snapshots] == [latest.name]
    assert "CRC is no longer valid" in rebuild.skipped_snapshots[0][1]
    assert [r.base_offset for r in rebuild.replays] == [4974]
    assert rebuild.manager.snapshot_bytes() == (source / latest.name).read_bytes()


@requires_corpus
def test_snapshot_loads_and_writes_back_unchanged():
    for snapshot in sorted(KAFKA_420.rglob("*.snapshot")):
        if "remote-by-offset" in snapshot.parts:
            continue  # links to the remote files (a copy of the corpus may hold them as text files)
        manager = ProducerStateManager.from_snapshot(snapshot)
        assert manager.snapshot_bytes() == snapshot.read_bytes()
        assert (manager.map_end_offset, manager.last_snap_offset) == (read_snapshot(snapshot).offset,) * 2


# -- hand-built logs -----------------------------------------------------------------------------

def _data(offset, pid, epoch=0, seq=0, count=1, txn=False, ts=T0):
    records = [NewRecord(b"k", b"v", timestamp=ts + i) for i in range(count)]
    return build_batch(records, base_offset=offset, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       transactional=txn)


def _marker(offset, pid, commit, epoch=0, coordinator_epoch=0, ts=T0 + 500):
    return build_end_txn_marker(commit=commit, base_offset=offset, producer_id=pid, producer_epoch=epoch,
                                coordinator_epoch=coordinator_epoch, timestamp=ts)


def _segment(tmp_path, *batches, base=0) -> LogSegment:
    directory = tmp_path / "t-0"
    directory.mkdir(exist_ok=True)
    path = directory / f"{format_offset(base)}.log"
    path.write_bytes(b"".join(batches))
    return LogSegment(path)


def _replay(tmp_path, *batches):
    manager = ProducerStateManager()
    segment = _segment(tmp_path, *batches)
    try:
        return manager, replay_segment(manager, segment)
    finally:
        segment.close()


def test_abort_lso_is_the_other_producers_open_transaction(tmp_path):
    manager, replay = _replay(
        tmp_path,
        _data(0, 10, count=2, txn=True),       # P10 opens at 0
        _data(2, 20, count=2, txn=True),       # P20 opens at 2
        _data(4, 10, seq=2, txn=True),
        _marker(5, 10, commit=False),          # P10 aborts: P20 still open -> LSO 2
        _marker(6, 20, commit=True),           # commit: no .txnindex entry
        _data(7, 20, seq=2, txn=True),         # P20 opens at 7
        _data(8, 10, seq=3, txn=True),         # P10 opens at 8
        _marker(9, 20, commit=False),          # P20's own txn is the earliest: skipped -> LSO 8
        _marker(10, 10, commit=False),         # nothing else open -> marker + 1
    )
    assert replay.aborted_txns == (AbortedTxn(0, 10, 0, 5, 2), AbortedTxn(0, 20, 7, 9, 8),
                                   AbortedTxn(0, 10, 8, 10, 11))
    assert replay.txn_index_bytes() == struct.pack(">hqqqq", 0, 10, 0, 5, 2) + struct.pack(
        ">hqqqq", 0, 20, 7, 9, 8) + struct.pack(">hqqqq", 0, 10, 8, 10, 11)
    assert manager.ongoing_txns == {} and manager.map_end_offset == 11
    p10 = manager.producers[10]
    assert (p10.current_txn_first_offset, p10.coordinator_epoch, p10.last_timestamp) == (None, 0, T0 + 500)
    assert p10.last_data_offset == 8  # markers leave the batch metadata alone


def test_update_returns_completed_txn_and_leaves_completion_to_the_caller(tmp_path):
    segment = _segment(tmp_path, _data(0, 1, txn=True), _data(1, 2, txn=True), _marker(2, 1, commit=False))
    manager = ProducerStateManager()
    with MappedFile(segment.log_path) as mapped:
        batches = list(LogScan(mapped))
    assert manager.update(batches[0]) is None and manager.update(batches[1]) is None
    assert manager.first_undecided_offset() == 0
    completed = manager.update(batches[2], EndTransactionMarker("ABORT", 0, T0 + 9))
    assert completed == CompletedTxn(1, 0, 2, True)
    assert sorted(manager.ongoing_txns) == [0, 1]  # still there until complete_txn
    assert manager.last_stable_offset(completed) == 1
    manager.complete_txn(completed)
    assert sorted(manager.ongoing_txns) == [1] and manager.first_undecided_offset() == 1
    assert manager.last_stable_offset(CompletedTxn(2, 1, 5, False)) == 6  # only its own txn left


def test_epoch_bump_clears_batch_metadata(tmp_path):
    manager, _ = _replay(tmp_path, _data(0, 7, seq=0), _data(1, 7, seq=1), _data(2, 7, seq=2),
                         _data(3, 7, epoch=1, seq=0, count=2))
    entry = manager.producers[7]
    assert entry.producer_epoch == 1
    assert list(entry.batch_metadata) == [BatchMetadata(1, 4, 1, T0 + 1)]
    assert (entry.first_seq, entry.last_seq) == (0, 1)
    assert manager.warnings == []


def test_marker_epoch_bump_and_fencing_only_logged(tmp_path):
    manager, replay = _replay(
        tmp_path,
        _data(0, 7, epoch=3, txn=True), _data(1, 7, epoch=3, seq=1, txn=True),
        _marker(2, 7, commit=True, epoch=4, coordinator_epoch=5),   # transactions v2: the marker bumps
        _data(3, 7, epoch=2, seq=9),                                  # a zombie: logged, applied
        _marker(4, 7, commit=True, epoch=4, coordinator_epoch=1),   # no open txn; older coordinator
    )
    entry = manager.producers[7]
    assert (entry.producer_epoch, entry.coordinator_epoch, len(entry.batch_metadata)) == (4, 1, 0)
    assert replay.aborted_txns == ()
    assert [w.split(" at offset")[0] for w in manager.warnings] == [
        "Epoch of producer 7", "Detected invalid coordinator epoch for producerId 7"]


def test_only_the_last_five_batches_are_retained(tmp_path):
    manager, replay = _replay(tmp_path, *[_data(i * 2, 3, seq=i * 2, count=2) for i in range(7)])
    entry = manager.producers[3]
    assert [b.last_offset for b in entry.batch_metadata] == [5, 7, 9, 11, 13]
    assert (entry.first_seq, entry.last_seq) == (4, 13)
    assert replay.state_after == (ProducerStateEntry(3, 0, -1, T0 + 1, None, BatchMetadata(13, 13, 1, T0 + 1)),)


def test_sequence_wrap(tmp_path):
    manager, _ = _replay(tmp_path, _data(0, 9, seq=2**31 - 2, count=4), _data(4, 9, seq=2, count=2))
    first, last = manager.producers[9].batch_metadata
    assert (first.first_sequence, first.last_sequence) == (2**31 - 2, 1)
    assert (last.first_sequence, last.last_sequence) == (2, 3)
    assert manager.entries()[0].batch_metadata == BatchMetadata(3, 5, 1, T0 + 1)


def test_empty_control_batch_changes_nothing_but_registers_the_producer(tmp_path):
    empty = build_batch([], base_offset=1, producer_id=6, producer_epoch=2, transactional=True, control=True,
                        last_offset_delta=0)
    manager, replay = _replay(tmp_path, _data(0, 5, txn=True), empty)
    assert manager.producers[5].current_txn_first_offset == 0
    assert manager.entries()[1] == ProducerStateEntry(6, -1, -1, -1, None, None)
    assert replay.aborted_txns == () and manager.map_end_offset == 2


def test_crc_damage_stops_the_replay(tmp_path):
    good = _data(0, 1, txn=True)
    bad = bytearray(_marker(1, 1, commit=False))
    bad[-1] ^= 0xFF
    manager, replay = _replay(tmp_path, good, bytes(bad), _data(2, 2))
    assert (replay.stopped_at, replay.valid_bytes) == (len(good), len(good))
    assert "is corrupt" in replay.stop_reason
    assert manager.producers[1].current_txn_first_offset == 0 and 2 not in manager.producers


def test_torn_tail_stops_the_replay(tmp_path):
    good = _data(0, 1)
    _, replay = _replay(tmp_path, good, _data(1, 1, seq=1)[:40])
    assert (replay.stopped_at, replay.valid_bytes) == (len(good), len(good))


def test_malformed_marker_stops_after_its_batch(tmp_path):
    """InvalidRecordException from the marker: recover has already counted the batch as valid."""
    short_value = build_batch([NewRecord(struct.pack(">hh", 0, 0), b"\x00\x00", timestamp=T0)], base_offset=1,
                              producer_id=1, producer_epoch=0, transactional=True, control=True)
    first = _data(0, 1, txn=True)
    manager, replay = _replay(tmp_path, first, short_value, _data(2, 2))
    end = len(first) + len(short_value)
    assert (replay.stopped_at, replay.valid_bytes) == (end, end)
    assert "end transaction marker" in replay.stop_reason
    assert manager.producers[1].current_txn_first_offset == 0 and manager.map_end_offset == 1


def test_rebuild_stops_at_up_to_offset(tmp_path):
    segment = _segment(tmp_path, _data(0, 1, count=3), _data(3, 2, count=3), _data(6, 3))
    log = PartitionLog(segment.log_path.parent)
    try:
        manager, by_segment = rebuild_producer_state(log, 4)  # 4 is inside the second batch
    finally:
        log.close()
    assert list(manager.producers) == [1] and manager.map_end_offset == 4 and by_segment == {0: ()}


# -- java.util.HashMap order ---------------------------------------------------------------------

def _with_producers(pids):
    manager = ProducerStateManager()
    for pid in pids:
        manager.load_producer_entry(ProducerStateEntry(pid, 0, -1, T0, None, None))
    return manager


def test_entries_in_hash_bucket_then_insertion_order():
    manager = _with_producers([16, 1, 0, (1 << 32) | 3])  # the last folds to hash 2
    assert [e.producer_id for e in manager.entries()] == [16, 0, 1, (1 << 32) | 3]


def test_table_growth_changes_the_order():
    pids = [20, 4] + list(range(5, 15))  # 12 entries: 16 buckets, 20 and 4 share bucket 4
    assert [e.producer_id for e in _with_producers(pids).entries()][:2] == [20, 4]
    grown = _with_producers(pids + [15])  # the 13th entry doubles the table: 4 and 20 part
    assert [e.producer_id for e in grown.entries()] == list(range(4, 16)) + [20]


def test_colliding_ids_resize_a_small_table_then_treeify():
    manager = _with_producers([64 * k for k in range(10)])  # one bucket; 9th and 10th resize
    assert manager._shape.capacity == 64 and manager.hash_order_exact
    manager.load_producer_entry(ProducerStateEntry(640, 0, -1, T0, None, None))
    assert not manager.hash_order_exact


# -- snapshots -----------------------------------------------------------------------------------

def test_load_snapshot_rebuilds_ongoing_txns_and_expires_only_with_a_clock(tmp_path):
    entries = (ProducerStateEntry(1, 0, 2, T0, 40, BatchMetadata(5, 41, 1, T0)),
               ProducerStateEntry(2, 0, -1, T0 - 100, None, BatchMetadata(9, 30, 0, T0 - 100)))
    path = tmp_path / "00000000000000000050.snapshot"
    path.write_bytes(format_snapshot(entries))
    manager = ProducerStateManager.from_snapshot(path)
    assert (manager.map_end_offset, manager.last_snap_offset) == (50, 50)
    assert list(manager.ongoing_txns) == [40] and manager.ongoing_txns[40].producer_id == 1
    assert manager.entries() == entries and manager.snapshot_bytes() == path.read_bytes()
    manager.load_snapshot(path, now_ms=T0 - 100 + 86_400_000)  # producer 2 idle for a day
    assert list(manager.producers) == [1]


def test_take_snapshot_only_past_the_last_one():
    manager = ProducerStateManager(map_end_offset=10)
    assert manager.take_snapshot() is None
    manager.map_end_offset = 12
    assert manager.take_snapshot() == (12, format_snapshot(()))
    assert manager.last_snap_offset == 12 and manager.take_snapshot() is None
