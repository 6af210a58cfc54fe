"""seglog offsets and seglog transactions through the CLI: formats, filters, exit statuses."""

from __future__ import annotations

import csv
import io
import json

import pytest

from seglog_cli.storage.write.writer import PartitionWriter
from tests.conftest import requires_corpus, run_seglog
from tests.coordinator_bytes import batch, marker, offset_commit_key, offset_commit_value, txn_key, txn_value_v1


def write_partition(directory, batches):
    writer = PartitionWriter(directory)
    for data in batches:
        writer.append(data)
    writer.close()


@pytest.fixture
def log_dir(tmp_path):
    write_partition(tmp_path / "__consumer_offsets-3", [
        batch(0, offset_commit_key("app", "orders", 0), offset_commit_value(42, "meta", 1_700_000_000_000)),
        batch(1, offset_commit_key("app", "orders", 1), offset_commit_value(7, "", 1_700_000_000_001),
              producer_id=5, transactional=True, timestamp=1_700_000_000_001),
    ])
    write_partition(tmp_path / "orders-0", [
        batch(0, b"k", b"v", producer_id=5, transactional=True, timestamp=1_700_000_000_000),
    ])
    write_partition(tmp_path / "__transaction_state-0", [
        batch(0, txn_key("writer"), txn_value_v1(5, 0, 1, [("orders", [0])], 1_700_000_000_000, 1_700_000_000_000)),
    ])
    return tmp_path


def test_offsets_formats(log_dir):
    table = run_seglog("offsets", str(log_dir))
    # orders-0 holds one record (log end offset 1): the commit at 42 is beyond its end, a warning
    assert table.exit_code == 1, table.err
    assert "app" in table.out and "42" in table.out and "2023-11-14T22:13:20.000Z" in table.out
    assert "Pending transactional commits" in table.out
    assert "BEYOND-END" in table.out and "flagged app orders-0: COMMITTED_BEYOND_LOG_END" in table.out
    document = json.loads(run_seglog("offsets", str(log_dir), "--format", "json").out)
    assert set(document) == {"version", "committed", "pending", "unreadable", "problems", "partitionsRead",
                             "recordsRead", "flaggedGroups"}
    assert (document["version"], document["partitionsRead"], document["recordsRead"]) == (1, 1, 2)
    assert document["flaggedGroups"] == ["app"]
    [committed] = document["committed"]
    [note] = committed.pop("notes")
    assert "committed offset 42 is beyond the log end offset 1" in note
    assert committed == {"group": "app", "topic": "orders", "partition": 0, "offset": 42, "leaderEpoch": -1,
                         "metadata": "meta", "commitTimestamp": 1_700_000_000_000, "expireTimestamp": None,
                         "valueVersion": 3, "coordinatorPartition": "__consumer_offsets-3", "recordOffset": 0,
                         "producerId": None, "logStartOffset": 0, "logEndOffset": 1, "highWatermark": None,
                         "lag": -41, "lagBasis": "logEndOffset", "logEndSource": "segments",
                         "partitionDir": str(log_dir / "orders-0"), "flags": ["COMMITTED_BEYOND_LOG_END"]}
    committed["notes"] = [note]
    assert [(c["offset"], c["producerId"], c["recordOffset"]) for c in document["pending"]] == [(7, 5, 1)]
    lines = [json.loads(line) for line in run_seglog("offsets", str(log_dir), "--format", "jsonl").out.splitlines()]
    assert [line["type"] for line in lines] == ["committed", "pending"]
    assert lines[0] == {"type": "committed", **committed}
    csv_text = run_seglog("offsets", str(log_dir), "--format", "csv").out
    assert csv_text.splitlines()[0].split(",") == ["status"] + list(committed)
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert [(r["status"], r["offset"], r["metadata"], r["leaderEpoch"], r["producerId"]) for r in rows] == [
        ("committed", "42", "meta", "-1", ""), ("pending", "7", "", "-1", "5")]
    assert (rows[0]["lag"], rows[0]["flags"], rows[0]["notes"]) == ("-41", "COMMITTED_BEYOND_LOG_END", note)
    other = run_seglog("offsets", str(log_dir), "--group", "other", "--format", "json")
    assert (other.exit_code, json.loads(other.out)["committed"]) == (0, [])


def test_offsets_exit_statuses(tmp_path):
    assert run_seglog("offsets", str(tmp_path / "missing")).exit_code == 4
    (tmp_path / "notes" / "2026").mkdir(parents=True)
    (tmp_path / "notes" / "orders-0.txt").write_text("not a partition")
    result = run_seglog("offsets", str(tmp_path / "notes"))
    assert result.exit_code == 4 and "no Kafka log dir or partition directory" in result.err
    (tmp_path / "orders-0").mkdir()
    result = run_seglog("offsets", str(tmp_path))
    assert result.exit_code == 4 and "no __consumer_offsets partitions" in result.err
    assert run_seglog("offsets", str(tmp_path), "--format", "xml").exit_code == 2


def test_transactions_open_and_hanging(log_dir):
    within = run_seglog("transactions", str(log_dir), "--now", "1700000030000", "--format", "json")
    document = json.loads(within.out)
    assert within.exit_code == 0
    assert set(document) == {"version", "transactions", "coordinator", "txnIndexMismatches", "unreadable",
                             "problems", "counts", "partitionsRead"}
    assert (document["version"], document["partitionsRead"]) == (1, 3)
    open_txns = [t for t in document["transactions"] if t["state"] == "open"]
    assert {(t["partition"], t["producerId"], t["producerEpoch"], t["firstOffset"], t["lastOffset"],
             t["transactionalId"]) for t in open_txns} == {
        ("orders-0", 5, 0, 0, 0, "writer"), ("__consumer_offsets-3", 5, 0, 1, 1, "writer")}
    assert {t["ageMs"] for t in open_txns} == {30_000, 29_999} and not any(t["hanging"] for t in open_txns)
    assert all(t["inTxnIndex"] is None and t["markerOffset"] is None for t in open_txns)
    [state] = document["coordinator"]
    assert state == {"transactionalId": "writer", "producerId": 5, "producerEpoch": 0,
                     "transactionState": "Ongoing", "topicPartitions": ["orders-0"], "transactionTimeoutMs": 60_000,
                     "transactionStartTimestampMs": 1_700_000_000_000,
                     "transactionLastUpdateTimestampMs": 1_700_000_000_000,
                     "coordinatorPartition": "__transaction_state-0", "recordOffset": 0}
    late = run_seglog("transactions", str(log_dir), "--now", "2023-11-14T22:15:00Z", "--state", "open")
    assert late.exit_code == 1 and "HANGING" in late.out
    lines = [json.loads(line) for line in
             run_seglog("transactions", str(log_dir), "--format", "jsonl", "--now", "0").out.splitlines()]
    assert sorted(line["type"] for line in lines) == ["coordinatorState", "transaction", "transaction"]
    assert {"type": "coordinatorState", **state} in lines
    csv_text = run_seglog("transactions", str(log_dir), "--format", "csv").out
    assert csv_text.splitlines()[0].split(",") == list(open_txns[0])
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert {(r["state"], r["producerId"], r["transactionalId"]) for r in rows} == {("open", "5", "writer")}


def test_transactions_without_a_log_dir_is_exit_4(tmp_path):
    (tmp_path / "home" / "user" / "projects").mkdir(parents=True)
    (tmp_path / "home" / "user" / "notes.txt").write_text("hello")
    (tmp_path / "home" / "user" / "build.log").write_text("make: ok\n")  # a .log, but no segment
    for path, message in [(tmp_path / "home", "no Kafka log dir or partition directory in this directory"),
                          (tmp_path / "home" / "user", "no Kafka log dir or partition directory in this directory"),
                          (tmp_path / "home" / "user" / "notes.txt", "not a directory"),
                          (tmp_path / "missing", "no such file or directory")]:
        result = run_seglog("transactions", str(path), "--format", "json")
        assert (result.exit_code, result.out) == (4, ""), (path, result.out, result.err)
        assert message in result.err and "Traceback" not in result.err
    empty_log_dir = tmp_path / "data"
    empty_log_dir.mkdir()
    (empty_log_dir / "meta.properties").write_text("version=1\n")
    result = run_seglog("transactions", str(empty_log_dir), "--format", "json")
    assert result.exit_code == 0 and json.loads(result.out)["partitionsRead"] == 0


def test_partition_dirs_found_as_the_other_commands_find_them(log_dir, tmp_path_factory):
    """A tree holding a log dir is searched as verify/recover/rebuild-index search it: the log
    dir's partitions are read; hidden directories and symlinks are not followed."""
    from seglog_cli.storage.coordinator.coordinator_log import partition_dirs
    from seglog_cli.storage.log.partition_log import partition_dirs_under

    tree = tmp_path_factory.mktemp("disk")
    (tree / "srv" / "kafka").mkdir(parents=True)
    (tree / "srv" / "kafka" / "data").symlink_to(log_dir, target_is_directory=True)
    (tree / "var" / ".snapshot").mkdir(parents=True)
    (tree / "var" / ".snapshot" / "data").symlink_to(log_dir, target_is_directory=True)
    assert run_seglog("transactions", str(tree)).exit_code == 4  # only reachable through symlinks
    copy = tree / "backup" / "broker1" / "data"
    copy.parent.mkdir(parents=True)
    copy.symlink_to(log_dir, target_is_directory=True)
    assert partition_dirs_under(tree) == []
    real = tree / "backup" / "broker2" / "data"
    real.mkdir(parents=True)
    write_partition(real / "orders-0", [batch(0, b"k", b"v", producer_id=9, transactional=True,
                                              timestamp=1_700_000_000_000)])
    (tree / "var" / ".snapshot" / "hidden-0").mkdir()
    assert partition_dirs(tree) == partition_dirs_under(tree) == [real / "orders-0"]
    document = json.loads(run_seglog("transactions", str(tree), "--now", "0", "--format", "json").out)
    assert document["partitionsRead"] == 1
    assert [(t["partition"], t["producerId"]) for t in document["transactions"]] == [("orders-0", 9)]


@requires_corpus
def test_corpus_commands(corpus):
    data = corpus / "kafka-4.2.0" / "data"
    offsets = json.loads(run_seglog("offsets", str(data), "--format", "json").out)
    assert {c["group"] for c in offsets["committed"]} == {"corpus-group", "corpus-txn-group"}
    result = run_seglog("transactions", str(data), "--topic", "txn", "--format", "json")
    assert result.exit_code == 0
    document = json.loads(result.out)
    assert document["counts"] == {"committed": 35, "aborted": 14, "open": 0, "hanging": 0}
    assert all(t["inTxnIndex"] is True for t in document["transactions"] if t["state"] == "aborted")
    coordinator_partitions = len(list(data.glob("__transaction_state-*")))
    assert document["txnIndexMismatches"] == [] and document["partitionsRead"] == coordinator_partitions + 1


def test_dump_jsonl_with_the_decoders(log_dir):
    lines = [json.loads(line) for line in run_seglog(
        "dump", "--offsets-decoder", "--format", "jsonl", str(log_dir / "__consumer_offsets-3")).out.splitlines()]
    records = [line for line in lines if line["type"] == "record"]
    assert [r["coordinatorRecord"]["key"] for r in records] == [
        {"group": "app", "topic": "orders", "partition": 0}, {"group": "app", "topic": "orders", "partition": 1}]
    assert records[0]["coordinatorRecord"]["value"]["offset"] == 42
    assert records[0]["coordinatorRecord"]["valueVersion"] == 3
    lines = [json.loads(line) for line in run_seglog(
        "dump", "--transaction-log-decoder", "--format", "jsonl", str(log_dir / "__transaction_state-0")).out.splitlines()]
    (txn,) = [line["coordinatorRecord"] for line in lines if line["type"] == "record"]
    assert txn["key"] == {"transactionalId": "writer"}
    assert txn["value"]["transactionPartitions"] == [{"topic": "orders", "partitionIds": [0]}]
    # a transaction-state record read with the offsets decoder is an error, not a crash
    lines = [json.loads(line) for line in run_seglog(
        "dump", "--offsets-decoder", "--format", "jsonl", str(log_dir / "__transaction_state-0")).out.splitlines()]
    (bad,) = [line for line in lines if line["type"] == "record"]
    assert "coordinatorError" in bad and bad["coordinatorUnknown"] is False
