"""seglog transactions' engine on generated partitions (commit, abort, open and hanging
transactions, __transaction_state) and on the corpus's txn-0 (35 COMMIT, 14 ABORT markers,
counted independently from kafka-dump-log's golden output)."""

from __future__ import annotations

import re

import pytest

from seglog_cli.storage.coordinator.transactions import read_transactions
from seglog_cli.storage.write.writer import PartitionWriter
from tests.conftest import requires_corpus
from tests.coordinator_bytes import batch, marker, txn_key, txn_value_v1


def write_partition(directory, batches):
    writer = PartitionWriter(directory)
    for data in batches:
        writer.append(data)
    writer.close()


START = 1_000_000


@pytest.fixture
def log_dir(tmp_path):
    write_partition(tmp_path / "orders-0", [
        batch(0, b"k", b"v", producer_id=1, transactional=True, timestamp=START),
        batch(1, b"k", b"v", producer_id=1, transactional=True, timestamp=START + 1),
        marker(2, 1, commit=True, timestamp=START + 2),
        batch(3, b"k", b"v", producer_id=2, transactional=True, timestamp=START + 3),
        batch(4, b"k", b"v", timestamp=START + 4),  # not transactional
        marker(5, 2, commit=False, timestamp=START + 5),
        batch(6, b"k", b"v", producer_id=3, transactional=True, timestamp=START + 6),  # never ends
        batch(7, b"k", b"v", producer_id=4, transactional=True, timestamp=START + 7),  # never ends
    ])
    write_partition(tmp_path / "__transaction_state-0", [
        batch(0, txn_key("app-3"), txn_value_v1(3, 0, 1, [("orders", [0])], START + 6, START + 6)),
        batch(1, txn_key("app-1"), txn_value_v1(1, 0, 4, [], START, START + 2)),
        batch(2, txn_key("gone"), txn_value_v1(9, 0, 4, [], START, START)),
        batch(3, txn_key("gone"), None),  # tombstone: expired transactional id
    ])
    return tmp_path


def test_states(log_dir):
    report = read_transactions(log_dir, now_ms=START + 10_000)
    by_pid = {t.producer_id: t for t in report.transactions}
    assert {pid: t.state for pid, t in by_pid.items()} == {1: "committed", 2: "aborted", 3: "open", 4: "open"}
    assert (by_pid[1].first_offset, by_pid[1].last_offset, by_pid[1].marker_offset, by_pid[1].batches) == (0, 1, 2, 2)
    assert (by_pid[2].first_offset, by_pid[2].marker_offset) == (3, 5)
    assert by_pid[1].transactional_id == "app-1" and by_pid[3].transactional_id == "app-3"
    assert by_pid[3].age_ms == 10_000 - 6
    assert by_pid[3].hanging is False  # the coordinator has it Ongoing, within its 60 s timeout
    assert by_pid[4].hanging is True  # no coordinator transaction for producer 4
    assert [s.transactional_id for s in report.coordinator] == ["app-1", "app-3"]
    assert report.coordinator[1].status == "Ongoing" and report.coordinator[1].partitions == ["orders-0"]


def test_open_transaction_past_its_timeout_hangs(log_dir):
    report = read_transactions(log_dir, now_ms=START + 6 + 60_001)
    assert {t.producer_id: t.hanging for t in report.transactions if t.state == "open"} == {3: True, 4: True}


def test_topic_filter(log_dir):
    assert read_transactions(log_dir, topic="other").transactions == []


GOLDEN_MARKER = re.compile(r"endTxnMarker: (COMMIT|ABORT)")


@requires_corpus
def test_corpus_txn_0(corpus):
    golden = corpus / "kafka-4.2.0" / "golden" / "txn-0"
    markers = [m.group(1) for out in sorted(golden.glob("*.log.deep-iteration+print-data-log.out"))
               for m in GOLDEN_MARKER.finditer(out.read_text())]
    assert (markers.count("COMMIT"), markers.count("ABORT")) == (35, 14)
    report = read_transactions(corpus / "kafka-4.2.0" / "data", topic="txn", now_ms=0)
    states = [t.state for t in report.transactions]
    assert (states.count("committed"), states.count("aborted"), states.count("open")) == (35, 14, 0)
    aborted = [t for t in report.transactions if t.state == "aborted"]
    assert all(t.in_txn_index for t in aborted)
    assert report.txn_index_mismatches == [] and report.problems == []
    assert {t.transactional_id for t in report.transactions} == {"corpus-txn-1", "corpus-txn-2"}


@requires_corpus
def test_corpus_aborts_match_the_txnindex_dump(corpus):
    """Each aborted transaction equals an entry kafka-dump-log printed from the .txnindex."""
    golden = corpus / "kafka-4.2.0" / "golden" / "txn-0"
    entries = set()
    for out in golden.glob("*.txnindex.*.out"):
        for line in out.read_text().splitlines():
            match = re.match(r"version: 0 producerId: (\d+) firstOffset: (\d+) lastOffset: (\d+)", line)
            if match:
                entries.add(tuple(int(g) for g in match.groups()))
    if not entries:
        pytest.skip("no .txnindex golden for txn-0")
    report = read_transactions(corpus / "kafka-4.2.0" / "data", topic="txn", now_ms=0)
    aborted = {(t.producer_id, t.first_offset, t.marker_offset) for t in report.transactions if t.state == "aborted"}
    assert aborted == entries


# -- read_committed_view: the last stable offset, capped by the high watermark ------------------

def _txn_copy(corpus, tmp_path, high_watermark=None):
    """txn-0 copied into a fresh log dir, with a replication-offset-checkpoint giving it
    ``high_watermark`` (none written when None)."""
    import shutil

    from seglog_cli.storage.log.checkpoints import TopicPartition, write_offset_checkpoint

    target = tmp_path / "data" / "txn-0"
    shutil.copytree(corpus / "kafka-4.2.0" / "data" / "txn-0", target)
    if high_watermark is not None:
        write_offset_checkpoint(target.parent / "replication-offset-checkpoint",
                                {TopicPartition("txn", 0): high_watermark})
    return target


@requires_corpus
def test_read_committed_view_of_the_corpus_is_bounded_by_its_high_watermark(corpus):
    """txn-0 as the broker left it: no open transaction, high watermark 339 = log end, so
    nothing past the log end is held back; the 14 aborted transactions are the .txnindex's."""
    from seglog_cli.storage.coordinator.transactions import read_committed_view

    view = read_committed_view(corpus / "kafka-4.2.0" / "data" / "txn-0")
    assert view.high_watermark == 339
    assert view.last_stable_offset is None
    assert len(view.aborted) == 14


@requires_corpus
def test_read_committed_view_caps_the_last_stable_offset_at_the_high_watermark(corpus, tmp_path):
    """A high watermark below the log end (followers behind): the last stable offset is the
    high watermark (UnifiedLog.lastStableOffset), and aborted transactions starting at or past
    it are not listed; without a checkpoint entry only open transactions bound it."""
    from seglog_cli.storage.coordinator.transactions import read_committed_view

    whole = read_committed_view(_txn_copy(corpus, tmp_path / "none"))
    assert whole.high_watermark is None and whole.last_stable_offset is None
    view = read_committed_view(_txn_copy(corpus, tmp_path / "hw", high_watermark=100))
    assert view.high_watermark == 100 and view.last_stable_offset == 100
    assert [t.first_offset for t in view.aborted] == [t.first_offset for t in whole.aborted if t.first_offset < 100]
    assert 0 < len(view.aborted) < len(whole.aborted)
    # at or past the log end the high watermark holds nothing back
    assert read_committed_view(_txn_copy(corpus, tmp_path / "end", high_watermark=500)).last_stable_offset is None
