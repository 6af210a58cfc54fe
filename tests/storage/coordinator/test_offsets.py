"""seglog offsets' engine: committed offsets replayed from __consumer_offsets, on generated
partitions (tombstones, transactional commits with COMMIT, ABORT and no marker) and on the
broker-written corpus (expectations read from the golden dump, not from seglog)."""

from __future__ import annotations

import json
import re

import pytest

from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.coordinator.offsets import read_committed_offsets
from seglog_cli.storage.write.writer import PartitionWriter
from tests.conftest import requires_corpus
from tests.coordinator_bytes import batch, i16, i32, marker, offset_commit_key, offset_commit_value, s

K = offset_commit_key
V = offset_commit_value


def write_partition(directory, batches):
    writer = PartitionWriter(directory)
    for data in batches:
        writer.append(data)
    writer.close()


@pytest.fixture
def log_dir(tmp_path):
    group_metadata = i16(2) + s("g1")
    write_partition(tmp_path / "__consumer_offsets-0", [
        batch(0, K("g1", "t", 0), V(5, "first", 100)),
        batch(1, K("g1", "t", 1), V(7, "", 101)),
        batch(2, K("g1", "t", 1), None),  # tombstone: g1/t/1 deleted
        batch(3, K("g1", "t", 0), V(9, "txn", 103), producer_id=10, transactional=True),
        batch(4, K("g2", "t", 0), V(3, "", 104), producer_id=11, transactional=True),
        marker(5, 10, commit=True),
        marker(6, 11, commit=False),  # g2's commit aborted
        batch(7, K("g1", "t", 2), V(100, "", 107), producer_id=12, transactional=True),  # never ends
        batch(8, group_metadata, None),  # another record type: skipped
        batch(9, b"\x7f", b"junk"),  # unreadable
        batch(10, K("g3", "t", 0), V(1, "", 110), producer_id=13, transactional=True),
        batch(11, K("g3", "t", 0), V(2, "later", 111)),  # written after the txn commit record
        marker(12, 13, commit=True),  # ... so the COMMIT does not override it
        batch(13, K("g4", "u", 0), V(8, "", 113, version=1, expire=999)),
    ])
    write_partition(tmp_path / "__consumer_offsets-1", [
        batch(0, K("g5", "t", 0), V(1, "", 1), producer_id=20, transactional=True),
        batch(1, K("g5", "t", 0), None),  # a tombstone drops the pending transactional commit
        marker(2, 20, commit=True),
    ])
    (tmp_path / "orders-0").mkdir()
    return tmp_path


def _by_key(commits):
    return {(c.group, c.topic, c.partition): c for c in commits}


def test_replay_rules(log_dir):
    report = read_committed_offsets(log_dir)
    committed = _by_key(report.committed)
    assert {k: c.offset for k, c in committed.items()} == {
        ("g1", "t", 0): 9, ("g3", "t", 0): 2, ("g4", "u", 0): 8}
    assert committed[("g1", "t", 0)].producer_id == 10
    assert committed[("g1", "t", 0)].metadata == "txn"
    assert committed[("g3", "t", 0)].metadata == "later"
    assert committed[("g4", "u", 0)].expire_timestamp == 999
    assert committed[("g4", "u", 0)].value_version == 1
    assert [(c.group, c.offset, c.producer_id) for c in report.pending] == [("g1", 100, 12)]
    assert [(u.coordinator_partition, u.record_offset) for u in report.unreadable] == [("__consumer_offsets-0", 9)]
    assert report.partitions_read == 2
    assert report.problems == []


def test_filters(log_dir):
    assert {c.group for c in read_committed_offsets(log_dir, group="g1").committed} == {"g1"}
    assert {c.topic for c in read_committed_offsets(log_dir, topic="u").committed} == {"u"}
    assert read_committed_offsets(log_dir, group="nope").committed == []


def test_no_consumer_offsets(tmp_path):
    (tmp_path / "orders-0").mkdir()
    with pytest.raises(UnreadableInputError, match="no __consumer_offsets partitions"):
        read_committed_offsets(tmp_path)


def test_damage_stops_the_partition_and_is_reported(log_dir):
    log = log_dir / "__consumer_offsets-1" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[-10] ^= 0xFF  # inside the last batch (the COMMIT marker)
    log.write_bytes(bytes(data))
    report = read_committed_offsets(log_dir)
    assert len(report.problems) == 1 and "__consumer_offsets-1" in report.problems[0].path


GOLDEN_LINE = re.compile(r'key: (\{"type":"1".*\}) payload: (\{.*\})$')


def _golden_offsets(golden_dir):
    """The committed offsets read off kafka-dump-log's own --offsets-decoder output: the last
    commit per key, transactional ones only when the golden shows their COMMIT marker."""
    latest = {}
    for out in sorted(golden_dir.glob("__consumer_offsets-*/*.offsets-decoder.out")):
        pending, transactional = {}, False
        for line in out.read_text().splitlines():
            if line.startswith("baseOffset:"):
                transactional = "isTransactional: true" in line
                continue
            if "endTxnMarker: COMMIT" in line:
                latest.update(pending)
                pending = {}
                continue
            match = GOLDEN_LINE.search(line)
            if not match:
                continue
            key = json.loads(match.group(1))["data"]
            value = json.loads(match.group(2))["data"]
            entry = (key["group"], key["topic"], key["partition"])
            (pending if transactional else latest)[entry] = (value["offset"], value["metadata"],
                                                              value["commitTimestamp"])
    return latest


@requires_corpus
def test_corpus_matches_the_golden_dump(corpus):
    expected = _golden_offsets(corpus / "kafka-4.2.0" / "golden")
    assert {g for g, _, _ in expected} == {"corpus-group", "corpus-txn-group"}
    report = read_committed_offsets(corpus / "kafka-4.2.0" / "data")
    actual = {c.key: (c.offset, c.metadata, c.commit_timestamp) for c in report.committed}
    assert actual == expected
    assert report.pending == [] and report.unreadable == [] and report.problems == []
    txn = _by_key(report.committed)[("corpus-txn-group", "plain", 0)]
    assert txn.producer_id is not None and txn.metadata == "txn-meta"
