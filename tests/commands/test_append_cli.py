"""``seglog append`` from the command line: inputs, batching, plan/apply, exit statuses, and the
result read back by seglog (dump, verify) and by an independent client (kafka-python)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seglog_cli.storage.write.builder import group_batches, record_size
from seglog_cli.storage.write.builder import NewRecord, encode_record
from tests.conftest import REPO, run_seglog

OK, PLANNED, USAGE, REFUSED, UNREADABLE, LOCKED = 0, 1, 2, 3, 4, 5
T = 1_700_000_000_000
STRIMZI = ["--config", "segment.bytes=16384", "--config", "index.interval.bytes=150",
           "--config", "segment.index.bytes=300"]
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def append(*args):
    result = run_seglog("append", *map(str, args))
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    return result


def write_jsonl(path: Path, objects) -> Path:
    path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in objects))
    return path


def tree(root: Path) -> dict:
    """Every file under ``root`` with its bytes (directories as None)."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in sorted(root.rglob("*"))}


def dumped_records(path: Path, encoding: str = "base64") -> list[dict]:
    result = run_seglog("dump", "--deep-iteration", "--format", "jsonl", "--payload-encoding", encoding, str(path))
    assert result.exit_code == 0, result.err
    return [o for o in map(json.loads, result.out.splitlines()) if o["type"] == "record"]


def dumped_batches(path: Path) -> list[dict]:
    result = run_seglog("dump", "--format", "jsonl", str(path))
    assert result.exit_code == 0, result.err
    return [o for o in map(json.loads, result.out.splitlines()) if o["type"] == "batch"]


def verify_status(path: Path) -> str:
    result = run_seglog("verify", "--level", "deep", "--format", "json", str(path))
    return json.loads(result.out)["status"]


@pytest.fixture
def log_dir(tmp_path) -> Path:
    directory = tmp_path / "data"
    directory.mkdir()
    return directory


# -- the Strimzi canary -------------------------------------------------------------------------------

def canary_objects(n: int) -> list[dict]:
    """The Strimzi canary's messages: ids 1, 4, 7, ..., one every 5 s, no key."""
    return [{"value": json.dumps({"producerId": "strimzi-canary-client", "messageId": 1 + 3 * k,
                                  "timestamp": T + 5000 * k}, separators=(",", ":")), "timestamp": T + 5000 * k}
            for k in range(n)]


def test_strimzi_canary_end_to_end(log_dir, tmp_path):
    source = write_jsonl(tmp_path / "canary.jsonl", canary_objects(60))
    partition = log_dir / "__strimzi_canary-0"
    result = append(partition, "--create", "--input", source, "--input-format", "jsonl", "--linger-records", "1",
                    *STRIMZI, "--apply")
    assert result.exit_code == OK, result.err
    assert "roll     new segment at offset 49: the time index is full" in result.out
    first = partition / "00000000000000000000"
    assert first.with_suffix(".log").stat().st_size == 7314
    assert first.with_suffix(".index").stat().st_size == 192
    assert first.with_suffix(".timeindex").stat().st_size == 288
    assert sorted(p.name for p in partition.glob("*.log")) == ["00000000000000000000.log", "00000000000000000049.log"]
    batches = dumped_batches(partition)
    assert len(batches) == 60 and all(b["count"] == 1 for b in batches)
    assert [b["maxTimestamp"] for b in batches] == [T + 5000 * k for k in range(60)]
    assert verify_status(log_dir) == "clean"


# The first batch of the real Strimzi canary's segment (a Sarama client: no idempotence, yet a base
# sequence of 0), as kafka-dump-log printed it: "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0
# lastSequence: 0 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false
# isControl: false ... CreateTime: 1639132508991 size: 148 magic: 2 compresscodec: NONE crc: 2142666254",
# value below, no key, no headers. The segment itself is not in ../shared/corpus: size and CRC-32C
# (which covers every byte after the CRC field) are the check.
CANARY_VALUE = '{"producerId":"strimzi-canary-client","messageId":1,"timestamp":1639132508991}'
CANARY_TIMESTAMP, CANARY_SIZE, CANARY_CRC = 1639132508991, 148, 2142666254


def test_a_non_idempotent_batch_with_a_base_sequence_is_stored_as_sent(log_dir):
    partition = log_dir / "__strimzi_canary-0"
    result = append(partition, "--create", "--value", CANARY_VALUE, "--timestamp", CANARY_TIMESTAMP,
                    "--leader-epoch", "0", "--base-sequence", "0", "--apply")
    assert result.exit_code == OK, result.err
    data = (partition / "00000000000000000000.log").read_bytes()
    assert len(data) == CANARY_SIZE
    assert int.from_bytes(data[17:21], "big") == CANARY_CRC
    [batch] = dumped_batches(partition)
    assert {k: batch[k] for k in ("baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId",
                                  "producerEpoch", "partitionLeaderEpoch", "isTransactional", "maxTimestamp",
                                  "size", "crc")} == {
        "baseOffset": 0, "lastOffset": 0, "count": 1, "baseSequence": 0, "lastSequence": 0, "producerId": -1,
        "producerEpoch": -1, "partitionLeaderEpoch": 0, "isTransactional": False, "maxTimestamp": CANARY_TIMESTAMP,
        "size": CANARY_SIZE, "crc": CANARY_CRC}
    [record] = dumped_records(partition, "utf8")
    assert (record["key"], record["value"], record["headers"]) == (None, CANARY_VALUE, [])
    assert verify_status(log_dir) == "clean"
    # no producer state is kept for producer id -1: the next batches carry the sequence as sent too
    # (Sarama sends 0 in every batch), and a batch of two records spans sequences 0..1
    assert append(partition, "--value", "a", "--value", "b", "--value", "c", "--linger-records", "2",
                  "--base-sequence", "0", "--timestamp", CANARY_TIMESTAMP + 5000, "--apply").exit_code == OK
    later = dumped_batches(partition)[1:]
    assert [(b["baseOffset"], b["baseSequence"], b["lastSequence"], b["producerId"]) for b in later] == [
        (1, 0, 1, -1), (3, 0, 0, -1)]
    assert verify_status(log_dir) == "clean"


def test_the_readme_canary_example_writes_that_batch(tmp_path):
    """The docs' command (docs/commands/append.md), run as written (the partition path aside),
    writes the canary's batch."""
    import re
    import shlex

    page = (REPO / "docs" / "commands" / "append.md").read_text()
    block = next(b for b in re.findall(r"```console\n(.*?)```", page, re.S) if "strimzi-canary-client" in b)
    command = block.split("$ ", 1)[1].replace("\\\n", " ").splitlines()[0]
    args = shlex.split(command.split(" > ")[0])  # the page sends the plan to /dev/null
    assert args[:2] == ["seglog", "append"]
    partition = tmp_path / "data" / "__strimzi_canary-0"
    partition.parent.mkdir()
    args[-1] = str(partition)
    assert append(*args[2:]).exit_code == OK
    data = (partition / "00000000000000000000.log").read_bytes()
    assert (len(data), int.from_bytes(data[17:21], "big")) == (CANARY_SIZE, CANARY_CRC)


# -- dump -> append round trip -----------------------------------------------------------------------

def _payload(record: dict) -> tuple:
    return record["key"], record["value"], record["headers"], record["timestamp"]


@pytest.mark.parametrize("name", ["plain-0", "codecs-0", "txn-0"])
def test_dump_append_round_trip(corpus, log_dir, tmp_path, name):
    source = corpus / "kafka-4.2.0" / "data" / name
    dump = run_seglog("dump", "--deep-iteration", "--format", "jsonl", "--payload-encoding", "base64", str(source))
    assert dump.exit_code == 0, dump.err
    (tmp_path / "dump.jsonl").write_bytes(dump.stdout)
    copy = log_dir / name
    result = append(copy, "--create", "--input", tmp_path / "dump.jsonl", "--input-format", "jsonl",
                    "--payload-encoding", "base64", "--apply")
    assert result.exit_code == OK, result.err
    expected = [_payload(r) for r in dumped_records(source) if not r["isControl"]]
    got = [_payload(r) for r in dumped_records(copy)]
    assert len(got) == len(expected) > 0
    assert got == expected
    assert [r["offset"] for r in dumped_records(copy)] == list(range(len(expected)))
    assert verify_status(copy) == "clean"


def test_round_trip_through_a_pipe(corpus, log_dir):
    """The README's pipeline, with stdin: ``seglog dump ... | seglog append --input - ...``."""
    source = corpus / "kafka-4.2.0" / "data" / "plain-0"
    seglog = [sys.executable, "-m", "seglog_cli"]
    dump = subprocess.Popen(seglog + ["dump", "--deep-iteration", "--format", "jsonl", "--payload-encoding", "base64",
                                      str(source)], stdout=subprocess.PIPE, cwd=REPO)
    done = subprocess.run(seglog + ["append", "--input", "-", "--input-format", "jsonl", "--payload-encoding", "base64",
                                    "--create", "--apply", "--compression", "lz4", str(log_dir / "plain-0")],
                          stdin=dump.stdout, capture_output=True, text=True, cwd=REPO)
    dump.stdout.close()
    assert dump.wait() == 0
    assert done.returncode == OK, done.stderr
    assert [_payload(r) for r in dumped_records(log_dir / "plain-0")] == [_payload(r) for r in dumped_records(source)]
    assert {r["compression"] for r in dumped_records(log_dir / "plain-0")} == {"lz4"}


# -- codecs, read back by kafka-python ------------------------------------------------------------------

def sample_records() -> list[dict]:
    out = []
    for i in range(300):
        out.append({"key": None if i % 7 == 0 else f"key-{i}", "value": None if i % 50 == 49 else "v" * (i % 40) + str(i),
                    "headers": [{"key": "trace", "value": f"t{i}"}, {"key": "empty", "value": None}] if i % 3 == 0 else [],
                    "timestamp": T + i * 10})
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_read_back_by_kafka_python(log_dir, tmp_path, codec):
    kafka_codec = pytest.importorskip("kafka.codec")
    from kafka.record import MemoryRecords

    if codec == "snappy" and not kafka_codec.has_snappy():
        pytest.skip("kafka-python's snappy codec needs python-snappy")
    objects = sample_records()
    source = write_jsonl(tmp_path / "in.jsonl", objects)
    partition = log_dir / "codec-0"
    result = append(partition, "--create", "--input", source, "--input-format", "jsonl", "--compression", codec,
                    "--batch-size", "2000", "--apply")
    assert result.exit_code == OK, result.err
    batches = dumped_batches(partition)
    assert len(batches) > 3 and {b["compresscodec"] for b in batches} == {codec}
    got = []
    for batch in MemoryRecords((partition / "00000000000000000000.log").read_bytes()):
        assert batch.validate_crc()
        for record in batch:
            got.append({"key": None if record.key is None else record.key.decode(),
                        "value": None if record.value is None else record.value.decode(),
                        "headers": [{"key": k, "value": None if v is None else v.decode()} for k, v in record.headers],
                        "timestamp": record.timestamp})
    assert got == objects
    assert verify_status(partition) == "clean"


# -- plan, apply, undo ------------------------------------------------------------------------------

def test_plan_writes_nothing_and_exits_1(log_dir):
    before = tree(log_dir.parent)
    result = append(log_dir / "t-0", "--create", "--value", "a", "--value", "b")
    assert result.exit_code == PLANNED
    assert "records  2 at offsets 0..1 in 1 batch(es)" in result.out and "run again with --apply" in result.out
    assert tree(log_dir.parent) == before
    assert append(log_dir / "t-0", "--create", "--value", "a", "--apply").exit_code == OK
    before = tree(log_dir.parent)
    result = append(log_dir / "t-0", "--value", "c", "--format", "json")
    assert result.exit_code == PLANNED and tree(log_dir.parent) == before
    document = json.loads(result.out)
    assert document["logEndOffsetBefore"] == 1 and document["logEndOffsetAfter"] == 2
    assert document["applied"] is None and document["records"] == 1


def test_apply_keeps_a_backup_beside_the_log_dir_and_undo_restores(log_dir):
    partition = log_dir / "t-0"
    assert append(partition, "--create", "--value", "first", "--timestamp", T, "--apply").exit_code == OK
    before = tree(partition)
    result = append(partition, "--key", "k", "--header", "h=1", "--header", "nullh", "--value", "x", "--value", "y",
                    "--timestamp", "2023-11-14T22:13:20Z", "--apply")
    assert result.exit_code == OK, result.err
    manifests = sorted((log_dir.parent / "seglog-backups").glob("*-append-*/manifest.json"))
    assert len(manifests) == 2  # one per --apply
    (manifest,) = [m for m in manifests if f"in {m.parent} (" in result.out]
    assert not list(log_dir.glob("seglog-backups*"))
    document = json.loads(manifest.read_text())
    assert document["state"] == "complete" and document["command"] == "append"
    records = dumped_records(partition, "utf8")
    assert [(r["key"], r["value"], r["timestamp"]) for r in records] == [
        (None, "first", T), ("k", "x", T), ("k", "y", T)]
    assert records[1]["headers"] == [{"key": "h", "value": "1"}, {"key": "nullh", "value": None}]
    assert run_seglog("undo", "--apply", str(manifest.parent)).exit_code == OK
    assert tree(partition) == before


def test_recovery_point_moves_unless_told(log_dir):
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    assert append(log_dir / "t-0", "--value", "a", "--no-recovery-point", "--apply", "--create").exit_code == OK
    assert (log_dir / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 0\n"
    # no clean shutdown and a recovery point below the log end: a broker would recover first
    refused = append(log_dir / "t-0", "--value", "b", "--apply")
    assert refused.exit_code == REFUSED and "run `seglog recover` first" in refused.err
    (log_dir / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":7}')
    assert append(log_dir / "t-0", "--value", "b", "--apply").exit_code == OK
    assert (log_dir / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 2\n"


def test_created_partition_gets_the_topic_id(log_dir):
    topic_id = "AAAAAAAAAAAAAAAAAAAAAQ"
    assert append(log_dir / "t-0", "--create", "--topic-id", topic_id, "--value", "a", "--apply").exit_code == OK
    assert (log_dir / "t-0" / "partition.metadata").read_text() == f"version: 0\ntopic_id: {topic_id}"


# -- refusals -----------------------------------------------------------------------------------------

def test_torn_tail_refused(log_dir):
    partition = log_dir / "t-0"
    assert append(partition, "--create", "--value", "a", "--apply").exit_code == OK
    active = partition / "00000000000000000000.log"
    with open(active, "ab") as handle:
        handle.write(active.read_bytes()[:30])
    before = tree(log_dir.parent)
    result = append(partition, "--value", "b", "--apply")
    assert result.exit_code == REFUSED
    assert "seglog recover" in result.err and "torn" in result.err
    assert tree(log_dir.parent) == before


def test_locked_log_dir_exit_5(log_dir):
    partition = log_dir / "t-0"
    assert append(partition, "--create", "--value", "a", "--apply").exit_code == OK
    (log_dir / ".lock").touch()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
                               "fcntl.lockf(fd, fcntl.LOCK_EX); print('ok', flush=True); sys.stdin.read()",
                               str(log_dir / ".lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        before = tree(partition)
        result = append(partition, "--value", "b", "--apply")
        assert result.exit_code == LOCKED
        assert "locked" in result.err and str(log_dir / ".lock") in result.err
        assert tree(partition) == before
        assert append(partition, "--value", "b").exit_code == PLANNED  # planning only reads
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


def test_idempotent_producer_continues_its_sequences(log_dir):
    partition = log_dir / "idem-0"
    first = append(partition, "--create", "--producer-id", "7", "--value", "a", "--value", "b", "--value", "c",
                   "--apply")
    assert first.exit_code == OK, first.err
    second = append(partition, "--producer-id", "7", "--value", "d", "--value", "e", "--apply")
    assert second.exit_code == OK, second.err
    batches = dumped_batches(partition)
    assert [(b["producerId"], b["baseSequence"], b["lastSequence"]) for b in batches] == [(7, 0, 2), (7, 3, 4)]
    assert batches[1]["baseSequence"] == batches[0]["lastSequence"] + 1
    before = tree(log_dir.parent)
    gap = append(partition, "--producer-id", "7", "--base-sequence", "9", "--value", "f", "--apply")
    assert gap.exit_code == REFUSED and "OutOfOrderSequenceException" in gap.err
    rerun = append(partition, "--producer-id", "7", "--base-sequence", "3", "--value", "d", "--value", "e")
    assert rerun.exit_code == OK and "already appended: producer 7 epoch 0 wrote sequences 3..4" in rerun.out
    duplicate = append(partition, "--producer-id", "7", "--base-sequence", "3", "--value", "d", "--value", "x")
    assert duplicate.exit_code == REFUSED and "duplicate" in duplicate.err  # other records at those sequences
    earlier = append(partition, "--producer-id", "7", "--base-sequence", "0", "--value", "a", "--value", "b",
                     "--value", "c")
    assert earlier.exit_code == REFUSED  # not the producer's last batches
    fenced = append(partition, "--producer-id", "7", "--producer-epoch", "0", "--value", "f")
    assert fenced.exit_code == PLANNED  # the same epoch is fine
    assert tree(log_dir.parent) == before
    assert append(partition, "--producer-id", "7", "--producer-epoch", "1", "--value", "f", "--apply").exit_code == OK
    older = append(partition, "--producer-id", "7", "--producer-epoch", "0", "--value", "g")
    assert older.exit_code == REFUSED and "fences" in older.err
    assert verify_status(partition) == "clean"


def test_aborted_transaction_gets_its_txnindex_entry(log_dir):
    partition = log_dir / "txn-0"
    opened = append(partition, "--create", "--producer-id", "9", "--transactional", "--value", "a", "--value", "b",
                    "--apply")
    assert opened.exit_code == OK, opened.err
    plain = append(partition, "--producer-id", "9", "--value", "c")
    assert plain.exit_code == REFUSED and "open transaction" in plain.err
    aborted = append(partition, "--producer-id", "9", "--end-txn", "abort", "--apply")
    assert aborted.exit_code == OK, aborted.err
    assert "marker   ABORT at offset 2" in aborted.out
    txn_index = partition / "00000000000000000000.txnindex"
    assert txn_index.stat().st_size == 34
    assert verify_status(partition) == "clean"
    markers = [b for b in dumped_batches(partition) if b["isControl"]]
    assert len(markers) == 1 and markers[0]["baseOffset"] == 2


def test_committed_transaction_in_one_run(log_dir):
    partition = log_dir / "txn-0"
    result = append(partition, "--create", "--producer-id", "3", "--transactional", "--value", "a", "--end-txn",
                    "commit", "--coordinator-epoch", "2", "--apply")
    assert result.exit_code == OK, result.err
    assert not (partition / "00000000000000000000.txnindex").exists()
    records = dumped_records(partition, "hex")
    assert records[-1]["controlType"] == "COMMIT" and records[-1]["coordinatorEpoch"] == 2
    assert verify_status(partition) == "clean"


def test_batch_over_max_message_bytes_refused(log_dir):
    result = append(log_dir / "t-0", "--create", "--value", "x" * 2000, "--config", "max.message.bytes=1000")
    assert result.exit_code == REFUSED and "max.message.bytes" in result.err


# -- usage errors and unreadable inputs ----------------------------------------------------------------

@pytest.mark.parametrize("config", ["segment.bytes=1", "index.interval.bytes=x", "no.such.config=1", "segment.ms"])
def test_bad_config_is_a_usage_error(log_dir, config):
    result = append(log_dir / "t-0", "--create", "--value", "a", "--config", config)
    assert result.exit_code == USAGE and result.err.startswith("seglog: usage error:"), result.err


@pytest.mark.parametrize("lines, message", [
    (['{"value": "a"}', '{"value": "b"', '{"value": "c"}'], "line 2: not valid JSON"),
    (['{"value": "a"}', '[1, 2]'], "line 2: a JSON object was expected"),
    (['{"value": 3}'], "line 1: value must be a string or null"),
    (['{"value": "a", "timestamp": "soon"}'], "line 1: timestamp"),
    (['{"value": "a", "timestamp": 1.5}'], "line 1: timestamp must be epoch milliseconds"),
    (['{"value": "a", "headers": [1]}'], "line 1: headers must be"),
    (['{"value": "a"}', '', '{"value": "!!"}'], "line 3: value is not valid base64"),
])
def test_bad_jsonl_is_a_usage_error_naming_the_line(log_dir, tmp_path, lines, message):
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    encoding = "base64" if "base64" in message else "utf8"
    if encoding == "base64":
        source.write_text('{"value": "YQ=="}\n\n{"value": "!!"}\n')
    result = append(log_dir / "t-0", "--create", "--input", source, "--input-format", "jsonl",
                    "--payload-encoding", encoding)
    assert result.exit_code == USAGE, result.err
    assert result.err.startswith("seglog: usage error:") and message in result.err, result.err
    assert len(result.err.strip().splitlines()) == 1


def test_jsonl_skips_non_records_and_takes_headers_as_an_object(log_dir, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [
        {"type": "file", "path": "x"}, {"type": "batch", "baseOffset": 0},
        {"type": "record", "key": "6b", "value": "76", "headers": {"h": "00ff"}, "timestamp": T},
        {"type": "record", "isControl": True, "key": "0000", "value": "0000"},
        {"value": None, "timestamp": T + 1}])
    result = append(log_dir / "t-0", "--create", "--input", source, "--input-format", "jsonl",
                    "--payload-encoding", "hex", "--apply")
    assert result.exit_code == OK, result.err
    records = dumped_records(log_dir / "t-0", "hex")
    assert [(r["key"], r["value"], r["headers"], r["timestamp"]) for r in records] == [
        ("6b", "76", [{"key": "h", "value": "00ff"}], T), (None, None, [], T + 1)]


def test_lines_with_a_key_separator(log_dir, tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(b"k1:v1\r\nk2:v:2\n:empty key\nk4:\n")
    result = append(log_dir / "t-0", "--create", "--input", source, "--key-separator", ":", "--timestamp", T,
                    "--apply")
    assert result.exit_code == OK, result.err
    records = dumped_records(log_dir / "t-0", "utf8")
    assert [(r["key"], r["value"], r["timestamp"]) for r in records] == [
        ("k1", "v1", T), ("k2", "v:2", T), ("", "empty key", T), ("k4", "", T)]
    source.write_bytes(b"k1:v1\nno separator\n")
    missing = append(log_dir / "t-0", "--input", source, "--key-separator", ":")
    assert missing.exit_code == USAGE and "line 2: no key separator" in missing.err


def test_lines_are_values_byte_for_byte(log_dir, tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(b"plain\n\xff\xfe binary\n\nlast without newline")
    assert append(log_dir / "t-0", "--create", "--input", source, "--apply").exit_code == OK
    records = dumped_records(log_dir / "t-0", "base64")
    assert [base64.b64decode(r["value"]) for r in records] == [b"plain", b"\xff\xfe binary", b"",
                                                                 b"last without newline"]
    assert all(r["key"] is None for r in records)


@pytest.mark.parametrize("args, message", [
    (["--value", "a", "--input", "x"], "not both"),
    (["--key", "k"], "--key and --header go with --value"),
    ([], "nothing to append"),
    (["--value", "a", "--transactional"], "--transactional need(s) --producer-id"),
    (["--value", "a", "--producer-epoch", "0"], "--producer-epoch need(s) --producer-id"),
    (["--end-txn", "abort"], "--end-txn need(s) --producer-id"),
    (["--value", "a", "--producer-id", "1", "--coordinator-epoch", "1"], "--coordinator-epoch goes with --end-txn"),
    (["--value", "a", "--topic-id", "nope"], "--topic-id goes with --create"),
    (["--value", "a", "--create", "--topic-id", "nope"], "--topic-id"),
    (["--value", "a", "--key-separator", ":"], "--key-separator goes with --input"),
    (["--value", "zz", "--payload-encoding", "hex"], "--value is not valid hex"),
    (["--value", "a", "--compression", "brotli"], "brotli"),
    (["--value", "a", "--timestamp", "yesterday"], "--timestamp"),
    (["--value", "a", "--producer-epoch", "40000", "--producer-id", "1"], "40000"),
])
def test_bad_option_combinations_are_usage_errors(log_dir, args, message):
    result = append(log_dir / "t-0", *args)
    assert result.exit_code == USAGE, (result.out, result.err)
    assert message in result.err and result.err.startswith("seglog: usage error:"), result.err


def test_bad_partition_names_and_missing_paths(log_dir, tmp_path):
    named = append(log_dir / "nodash", "--create", "--value", "a")
    assert named.exit_code == USAGE and "not a partition directory name" in named.err
    missing = append(log_dir / "t-0", "--value", "a")
    assert missing.exit_code == UNREADABLE and "--create" in missing.err
    no_log_dir = append(tmp_path / "nowhere" / "t-0", "--create", "--value", "a")
    assert no_log_dir.exit_code == UNREADABLE
    unreadable = append(log_dir / "t-0", "--create", "--input", tmp_path / "no-such-file")
    assert unreadable.exit_code == UNREADABLE and "no-such-file" in unreadable.err
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert append(log_dir / "t-0", "--create", "--input", empty).exit_code == USAGE


# -- batching ----------------------------------------------------------------------------------------

def test_record_size_is_the_encoded_size():
    samples = [NewRecord(None, None, (), T), NewRecord(b"k" * 200, b"v" * 70000, ((b"h", b"x" * 130), (b"n", None)), T),
               NewRecord(b"", b"", (), None), NewRecord(b"k", b"v", (("cl\u00e9", b"x"),) * 70, T)]
    for record in samples:
        for offset_delta, timestamp_delta in ((0, 0), (63, -64), (64, 10**12), (5000, -(10**9))):
            assert record_size(record, offset_delta, timestamp_delta) == len(
                encode_record(record, offset_delta, timestamp_delta))


def test_batches_fill_batch_size_like_the_producer():
    records = [NewRecord(None, b"x" * 100, (), T + i) for i in range(1000)]
    batches = list(group_batches(records, 16384, None))
    assert sum(map(len, batches)) == 1000
    for batch in batches:
        size = 61 + sum(record_size(r, i, r.timestamp - batch[0].timestamp) for i, r in enumerate(batch))
        assert size <= 16384
    for batch, following in zip(batches, batches[1:]):  # the next record would not have fitted
        size = 61 + sum(record_size(r, i, r.timestamp - batch[0].timestamp) for i, r in enumerate(batch))
        assert size + record_size(following[0], len(batch), following[0].timestamp - batch[0].timestamp) > 16384
    big = [NewRecord(None, b"y" * 20000, (), T), NewRecord(None, b"z", (), T), NewRecord(None, b"y" * 20000, (), T)]
    assert [len(b) for b in group_batches(big, 16384, None)] == [1, 1, 1]
    assert [len(b) for b in group_batches(records[:10], 16384, 4)] == [4, 4, 2]
    assert [len(b) for b in group_batches(records[:3], 0, None)] == [1, 1, 1]


def test_batch_size_and_linger_through_the_cli(log_dir, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{'v' * 90}{i:04d}\n" for i in range(500)))
    result = append(log_dir / "t-0", "--create", "--input", source, "--format", "json")
    document = json.loads(result.out)
    assert document["records"] == 500 and len(document["batches"]) == 4  # ~110 B records in 16 KB batches
    result = append(log_dir / "t-0", "--create", "--input", source, "--batch-size", "1000000", "--linger-records", "128",
                    "--format", "json")
    assert [b["records"] for b in json.loads(result.out)["batches"]] == [128, 128, 128, 116]


def test_verbose_lists_every_batch_and_log_append_time(log_dir):
    result = append(log_dir / "t-0", "--create", "--value", "a", "--value", "b", "--linger-records", "1",
                    "--timestamp-type", "LogAppendTime", "--timestamp", T, "--leader-epoch", "4", "-v", "--apply")
    assert result.exit_code == OK, result.err
    assert result.out.count("batch    offsets") == 2
    batches = dumped_batches(log_dir / "t-0")
    assert {b["timestampType"] for b in batches} == {"LogAppendTime"}
    assert {b["partitionLeaderEpoch"] for b in batches} == {4}
    assert all(b["maxTimestamp"] > T for b in batches)  # the broker clock, not the records'
    assert (log_dir / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n1\n4 0\n"
    assert os.path.exists(log_dir / "t-0" / "partition.metadata")


def test_the_plan_says_create_for_new_files_and_replace_for_existing_ones(log_dir):
    planned = append(log_dir / "t-0", "--create", "--value", "a", "--verbose")
    ops = {line.split()[1].rstrip(":"): line.split()[0] for line in planned.out.splitlines()
           if line.split() and line.split()[0] in ("create", "replace", "append", "mkdir")}
    assert ops["t-0/00000000000000000000.log"] == "create" and ops["t-0/partition.metadata"] == "create"
    assert "replace" not in ops.values()
    assert append(log_dir / "t-0", "--create", "--value", "a", "--apply").exit_code == OK
    (log_dir / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":1}')
    again = append(log_dir / "t-0", "--value", "b", "--verbose")
    ops = {line.split()[1].rstrip(":"): line.split()[0] for line in again.out.splitlines()
           if line.split() and line.split()[0] in ("create", "replace", "append")}
    assert ops["t-0/00000000000000000000.log"] == "append" and ops["t-0/00000000000000000000.index"] == "replace"


def test_the_same_append_run_again_is_already_appended(log_dir):
    """An append that names its sequences (--producer-id, --base-sequence) run again: its batches
    and marker are the producer's last in the log, so it says so in one line, exits 0, writes
    nothing and makes no backup. Without --base-sequence a run is new data: it appends again."""
    partition = log_dir / "txn-0"
    assert append(partition, "--create", "--value", "first", "--timestamp", T, "--apply").exit_code == OK
    run = ["--producer-id", "4242", "--transactional", "--end-txn", "abort", "--linger-records", "2",
           "--timestamp", T, *(arg for i in range(5) for arg in ("--value", f"v{i}"))]
    args = [partition, "--base-sequence", "0", *run, "--apply"]
    first = append(*args)
    assert first.exit_code == OK, first.err
    written = tree(log_dir.parent)
    again = append(*args)
    assert again.exit_code == OK, again.out + again.err
    assert again.out.splitlines()[-1] == (
        f"{partition}: already appended: producer 4242 epoch 0 wrote sequences 0..4 at offsets 1..5, then its "
        "ABORT marker at offset 6 (Kafka answers a duplicate with the earlier offsets): nothing to do")
    assert tree(log_dir.parent) == written
    plan = append(*args[:-1], "--format", "json")  # the plan says it too
    assert plan.exit_code == OK and json.loads(plan.out)["alreadyAppended"]["offsets"] == [1, 5]
    assert append(partition, *run, "--apply").exit_code == OK  # sequences continue: appended again
    sequences = [b["baseSequence"] for b in dumped_batches(partition) if b["producerId"] == 4242 and not b["isControl"]]
    assert sequences == [0, 2, 4, 5, 7, 9]
