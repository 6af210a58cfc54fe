"""The runbooks that report (examples/runbooks/05-09), run as an operator runs them against
copies of real broker data: retention what-ifs and blockers, hanging transactions, committed
offsets and topic exports, checked against kafka-dump-log's own output in the corpus goldens."""

from __future__ import annotations

import csv
import importlib
import json
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import requires_corpus, run_seglog
from tests.runbook_helpers import DATA, ENV, GOLDEN, NOW, copy_log_dir, run, run_json, tree

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


# -- 05 disk full -----------------------------------------------------------------------------

@requires_corpus
def test_05_proposed_retention_bytes(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "plain-0", "plain-1", "smallseg-0", "__consumer_offsets-38")
    before = tree(log_dir)
    status, document = run_json("05-disk-full.sh", "--config", "retention.bytes=2000000", "--now", NOW,
                                log_dir, cwd=tmp_path)
    assert status == 1
    # each plain partition (~3.3 MB) is over by ~1.3 MB: its oldest ~1 MB segment goes, the next one
    # would leave it under 2 MB; smallseg-0 (~0.6 MB) keeps everything
    first = [log_dir / p / "00000000000000000000.log" for p in ("plain-0", "plain-1")]
    assert document["freedBytes"] == sum(f.stat().st_size for f in first)
    assert [(s["partition"], s["file"]) for s in document["segments"]] == sorted(
        [("plain-0", "00000000000000000000.log"), ("plain-1", "00000000000000000000.log")],
        key=lambda x: next(s["largestTimestamp"] for s in document["segments"] if s["partition"] == x[0]))
    assert all(not p["partition"].startswith("__") for p in document["partitions"])
    assert document["commands"] == ["kafka-configs.sh --bootstrap-server localhost:9092 --alter --entity-type "
                                    "topics --entity-name plain --add-config retention.bytes=2000000"]
    assert tree(log_dir) == before

    short = run("05-disk-full.sh", "--config", "retention.ms=604800000", "--topic", "smallseg", "--now", NOW,
                log_dir, cwd=tmp_path)
    assert short.returncode == 3 and "frees nothing" in short.stdout
    enough = run("05-disk-full.sh", "--config", "retention.ms=3600000", "--need", "1K", "--now", NOW,
                 log_dir, cwd=tmp_path)
    assert enough.returncode == 0  # any test machine has a KiB free
    assert run("05-disk-full.sh", "--need", "12Q", log_dir, cwd=tmp_path).returncode == 2
    assert run("05-disk-full.sh", "--topic", "nosuch", log_dir, cwd=tmp_path).returncode == 4


@requires_corpus
def test_05_leaves_a_compact_only_topic_out(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "plain-0", "compacted-0", "__cluster_metadata-0")
    before = tree(log_dir)
    status, document = run_json("05-disk-full.sh", "--config", "retention.ms=1000", "--now", NOW, log_dir,
                                cwd=tmp_path)
    assert status == 1
    assert {s["partition"] for s in document["segments"]} == {"plain-0"}
    assert [line.split(":")[0] for line in document["compactOnly"]] == ["compacted-0"]
    assert "cleanup.policy=compact (topic config (__cluster_metadata-0 offset" in document["compactOnly"][0]
    assert all("--entity-name compacted" not in c for c in document["commands"])
    assert tree(log_dir) == before


# -- 06 retention not deleting ----------------------------------------------------------------

def _append(partition: Path, *args: str) -> None:
    result = run_seglog("append", "--apply", *args, str(partition))
    assert result.exit_code == 0, result.err


@requires_corpus
def test_06_future_timestamp_blocks_later_segments_and_high_watermark(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0")
    part = log_dir / "smallseg-0"
    # a producer with a clock ten years ahead, then normal records in a later segment
    _append(part, "--value", "from-the-future", "--timestamp", "2036-01-01T00:00:00Z",
            "--config", "message.timestamp.after.max.ms=9223372036854775807")
    _append(part, "--value", "late-1", "--value", "late-2", "--timestamp", "2026-11-22T11:30:00Z",
            "--config", "segment.bytes=100")
    checkpoint = log_dir / "replication-offset-checkpoint"
    log_end = max(int(p.stem) for p in part.glob("*.snapshot"))
    checkpoint.write_text(re.sub(r"(?m)^smallseg 0 \d+$", f"smallseg 0 {log_end}", checkpoint.read_text()))

    status, document = run_json("06-retention-not-deleting.sh", "--config", "retention.ms=3600000", "--now", NOW,
                                part, cwd=tmp_path)
    assert status == 1 and "FUTURE_TIMESTAMP" in document["found"]
    rows = document["partitions"][0]["segments"]
    codes = [r["code"] for r in rows]
    future = codes.index("FUTURE_TIMESTAMP")
    assert rows[future]["largestTimestamp"] == 2082758400000  # 2036-01-01T00:00:00Z
    assert codes[:future] == ["DUE"] * future and codes[future + 1:] == ["WAITING_BEHIND"]

    checkpoint.write_text(re.sub(r"(?m)^smallseg 0 \d+$", "smallseg 0 1000", checkpoint.read_text()))
    stuck = run("06-retention-not-deleting.sh", "--config", "retention.ms=3600000", "--now", NOW, part, cwd=tmp_path)
    assert stuck.returncode == 1
    assert "smallseg-0: HIGH_WATERMARK: segment 900 holds offsets up to 1199" in stuck.stdout


@requires_corpus
def test_06_within_retention_and_compact_only(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0", "compacted-0")
    ok = run("06-retention-not-deleting.sh", "--now", NOW, log_dir / "smallseg-0", cwd=tmp_path)
    assert ok.returncode == 0 and "WITHIN_RETENTION" in ok.stdout and "deletable after 2026-11-29" in ok.stdout
    compact = run("06-retention-not-deleting.sh", "--config", "cleanup.policy=compact", "--now", NOW,
                  log_dir / "compacted-0", cwd=tmp_path)
    assert compact.returncode == 1 and "COMPACT_ONLY" in compact.stdout
    # with the broker's metadata log beside it, the topic's own cleanup.policy says it, with its source
    shutil.copytree(DATA / "__cluster_metadata-0", log_dir / "__cluster_metadata-0")
    shutil.copy(DATA / "meta.properties", log_dir / "meta.properties")
    known = run("06-retention-not-deleting.sh", "--now", NOW, log_dir / "compacted-0", cwd=tmp_path)
    assert known.returncode == 1
    assert re.search(r"compacted-0: COMPACT_ONLY: cleanup.policy=compact \(topic config "
                     r"\(__cluster_metadata-0 offset \d+\)\)", known.stdout)
    disabled = run("06-retention-not-deleting.sh", "--config", "retention.ms=-1", "--now", NOW,
                   log_dir / "smallseg-0", cwd=tmp_path)
    assert disabled.returncode == 1 and "smallseg-0: RETENTION_DISABLED" in disabled.stdout


# -- 07 hanging transaction -------------------------------------------------------------------

@requires_corpus
def test_07_open_transaction_of_an_unknown_producer_is_hanging(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "txn-0")
    healthy = run("07-hanging-transaction.sh", log_dir, cwd=tmp_path)
    assert healthy.returncode == 0 and "0 open (0 hanging)" in healthy.stdout
    log_end = json.loads(run_seglog("verify", "--format", "json", str(log_dir / "txn-0")).out)[
        "partitions"][0]["logEndOffset"]
    _append(log_dir / "txn-0", "--transactional", "--producer-id", "77", "--producer-epoch", "3",
            "--value", "a", "--value", "b", "--timestamp", "2026-11-22T11:40:00Z")

    status, document = run_json("07-hanging-transaction.sh", "--now", NOW, "--bootstrap-server", "kafka1:9092",
                                log_dir, cwd=tmp_path)
    assert status == 1
    [txn] = document["open"]
    assert (txn["producerId"], txn["producerEpoch"], txn["firstOffset"], txn["hanging"]) == (77, 3, log_end, True)
    assert document["lastStableOffsets"] == {"txn-0": log_end}
    assert document["abortCommands"] == [f"kafka-transactions.sh --bootstrap-server kafka1:9092 abort --topic txn "
                                         f"--partition 0 --start-offset {log_end}"]
    assert any(line.startswith(f"HANGING txn-0: producer id 77, epoch 3, first offset {log_end}")
               for line in document["summary"])


# -- 08 consumer offsets ----------------------------------------------------------------------

def _golden_committed() -> dict:
    """Replay kafka-dump-log --offsets-decoder output: the latest offset commit per key wins."""
    latest = {}
    for out in sorted(GOLDEN.glob("__consumer_offsets-*/*.log.offsets-decoder.out")):
        for line in out.read_text().splitlines():
            match = re.search(r"offset: (\d+) .* key: (\{.*?\}\}) payload: (.*)$", line)
            if not match or '"type":"1"' not in match.group(2):
                continue
            key = json.loads(match.group(2))["data"]
            ident = (key["group"], key["topic"], key["partition"])
            if match.group(3).startswith("<DELETE>"):
                latest.pop(ident, None)
            else:
                latest[ident] = json.loads(match.group(3))["data"]["offset"]
    return latest


@requires_corpus
def test_08_offsets_equal_kafka_dump_log_replay(tmp_path):
    partitions = sorted(p.name for p in DATA.glob("__consumer_offsets-*"))
    log_dir = copy_log_dir(tmp_path / "data", *partitions)
    out_csv = tmp_path / "offsets.csv"
    status, document = run_json("08-consumer-offsets.sh", "--out", out_csv, log_dir, cwd=tmp_path)
    assert status == 0 and document["undo"] == f"rm -- {shlex.quote(str(out_csv))}"
    expected = _golden_committed()
    assert expected
    assert {(r["group"], r["topic"], r["partition"]): r["offset"] for r in document["committed"]} == expected
    with open(out_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["group", "topic", "partition", "offset", "leaderEpoch", "metadata", "commitTimestamp"]
    assert {(r["group"], r["topic"], int(r["partition"])): int(r["offset"]) for r in rows} == expected
    group, topic, partition = next(iter(expected))
    assert (f"--group {group} --topic {topic}:{partition} --reset-offsets --to-offset "
            f"{expected[(group, topic, partition)]} --execute") in " ".join(document["restoreCommands"])

    assert run("08-consumer-offsets.sh", "--group", "no-such-group", log_dir, cwd=tmp_path).returncode == 4
    assert run("08-consumer-offsets.sh", "--out", out_csv, log_dir, cwd=tmp_path).returncode == 4
    (tmp_path / "not-kafka").mkdir()
    assert run("08-consumer-offsets.sh", tmp_path / "not-kafka", cwd=tmp_path).returncode == 4
    empty = [p for p in partitions if not any(f.stat().st_size for f in (DATA / p).glob("*.log"))]
    other_broker = copy_log_dir(tmp_path / "broker2", *empty[:3])
    none = run("08-consumer-offsets.sh", other_broker, cwd=tmp_path)
    assert none.returncode == 1 and "other brokers' log dirs" in none.stdout


@requires_corpus
def test_08_lag_and_a_group_below_the_log_start(tmp_path):
    """plain-0 beside its coordinator partitions: lag against the checkpointed high watermark;
    a log start moved past the commits (as DeleteRecords does) puts both groups out of range."""
    log_dir = copy_log_dir(tmp_path / "data", "plain-0", "__consumer_offsets-38", "__consumer_offsets-27")
    hw = int(next(line.split()[2] for line in (log_dir / "replication-offset-checkpoint").read_text().splitlines()
                  if line.startswith("plain 0 ")))
    status, document = run_json("08-consumer-offsets.sh", log_dir, cwd=tmp_path)
    assert status == 0 and document["flaggedGroups"] == []
    lags = {(r["group"], r["partition"]): r["lag"] for r in document["committed"]}
    offsets = {(r["group"], r["partition"]): r["offset"] for r in document["committed"]}
    assert lags[("corpus-group", 0)] == hw - offsets[("corpus-group", 0)]
    assert lags[("corpus-group", 1)] is None  # plain-1 is not in this log dir
    (log_dir / "log-start-offset-checkpoint").write_text("0\n1\nplain 0 3000\n")
    result = run("08-consumer-offsets.sh", log_dir, cwd=tmp_path)
    assert result.returncode == 1 and "out of range" in result.stdout
    assert "OUT OF RANGE (COMMITTED_BELOW_LOG_START): corpus-group plain-0" in result.stdout
    assert "OUT OF RANGE (COMMITTED_BELOW_LOG_START): corpus-txn-group plain-0" in result.stdout


@requires_corpus
def test_08_damaged_offsets_partition_needs_a_human(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "__consumer_offsets-38")
    segment = log_dir / "__consumer_offsets-38" / "00000000000000000000.log"
    body = bytearray(segment.read_bytes())
    body[200] ^= 0xFF
    segment.write_bytes(bytes(body))
    result = run("08-consumer-offsets.sh", log_dir, cwd=tmp_path)
    assert result.returncode == 3 and "damaged" in result.stdout


# -- 09 export a topic ------------------------------------------------------------------------

def _golden_record_offsets(partition: str) -> list[int]:
    offsets = []
    for out in sorted((GOLDEN / partition).glob("*.log.deep-iteration+print-data-log.out")):
        offsets += [int(m) for m in re.findall(r"^\| offset: (\d+)", out.read_text(), re.M)]
    return offsets


@requires_corpus
def test_09_export_equals_kafka_dump_log_and_skips_damage(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0", "txn-0")
    before = tree(log_dir)
    status, document = run_json("09-export-topic.sh", "--topic", "smallseg", "--out", tmp_path / "export",
                                log_dir, cwd=tmp_path)
    assert status == 0 and document["undo"] == f"rm -r -- {shlex.quote(str(tmp_path / 'export'))}"
    lines = (tmp_path / "export" / "smallseg-0.jsonl").read_text().splitlines()
    assert [json.loads(line)["offset"] for line in lines] == _golden_record_offsets("smallseg-0")
    assert tree(log_dir) == before
    # lossless by default, and every record says so; the help tells how records name their encoding
    assert {json.loads(line)["encoding"] for line in lines} == {"base64"}
    assert not any("lossy" in json.loads(line) for line in lines)
    help_text = " ".join(run("09-export-topic.sh", "-h", cwd=tmp_path).stdout.split())
    assert 'names its encoding ("encoding")' in help_text and '"lossy": true' in help_text

    # transaction markers are left out: the data records only
    txn = run("09-export-topic.sh", "--topic", "txn", "--out", tmp_path / "txn", log_dir, cwd=tmp_path)
    assert txn.returncode == 0
    exported = [json.loads(line) for line in (tmp_path / "txn" / "txn-0.jsonl").read_text().splitlines()]
    golden = (GOLDEN / "txn-0" / "00000000000000000000.log.deep-iteration+print-data-log.out").read_text()
    markers = set(int(m) for m in re.findall(r"^\| offset: (\d+) .*endTxnMarker", golden, re.M))
    assert markers and [r["offset"] for r in exported] == [o for o in _golden_record_offsets("txn-0")
                                                          if o not in markers]

    segment = log_dir / "smallseg-0" / "00000000000000000900.log"
    body = bytearray(segment.read_bytes())
    body[20_000:30_000] = bytes(10_000)
    segment.write_bytes(bytes(body))
    damaged = run("09-export-topic.sh", "--topic", "smallseg", "--out", tmp_path / "export2", log_dir, cwd=tmp_path)
    assert damaged.returncode == 3 and "SKIPPED" in damaged.stdout
    kept = [json.loads(line)["offset"] for line in (tmp_path / "export2" / "smallseg-0.jsonl").read_text().splitlines()]
    assert 0 < len(lines) - len(kept) < 300 and kept[-1] == _golden_record_offsets("smallseg-0")[-1]

    exists = run("09-export-topic.sh", "--topic", "smallseg", "--out", tmp_path / "export", log_dir, cwd=tmp_path)
    assert exists.returncode == 4 and "exists" in exists.stdout
    assert run("09-export-topic.sh", "--topic", "nosuch", "--out", tmp_path / "x", log_dir, cwd=tmp_path).returncode == 4


@requires_corpus
def test_09_parquet(tmp_path):
    pyarrow = pytest.importorskip("pyarrow.parquet")
    log_dir = copy_log_dir(tmp_path / "data", "codecs-0")
    result = run("09-export-topic.sh", "--topic", "codecs", "--format", "parquet", "--out", tmp_path / "pq",
                 log_dir, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    table = pyarrow.read_table(tmp_path / "pq" / "codecs-0.parquet")
    assert table.column("offset").to_pylist() == _golden_record_offsets("codecs-0")


@requires_corpus
def test_09_spark_is_only_called_when_pyspark_is_importable(tmp_path):
    bare = tmp_path / "python-without-site-packages"
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    bare.chmod(0o755)
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0")
    result = run("09-export-topic.sh", "--spark", "--topic", "smallseg", "--out", tmp_path / "sp", log_dir,
                 cwd=tmp_path, env=dict(ENV, PYTHON=str(bare)))
    assert result.returncode == 2 and "--spark needs pyspark" in result.stderr
    assert not (tmp_path / "sp").exists()


def _spark_export_missing() -> str | None:
    """Why the Spark export cannot run here (the test extra installs pyspark; Java comes from
    the machine), or None."""
    try:
        importlib.import_module("pyspark")
    except Exception as exc:  # an ImportError, or a broken install failing on import
        return f"pyspark cannot be imported ({type(exc).__name__}: {exc}); pip install -e '.[test]'"
    if shutil.which("java", path=ENV["PATH"]) is None:
        return "java is not on PATH (the Spark export starts a JVM: Java 17+)"
    return None


@requires_corpus
def test_09_spark_export_is_the_plain_export(tmp_path):
    """--spark on a damaged copy (a zeroed region in a rolled segment, a batch failing its CRC):
    the same exit status, SKIPPED lines, exported and set-aside offsets as the plain path;
    --topic honoured, transaction markers left out. Starts local Spark sessions (a JVM each)."""
    reason = _spark_export_missing()
    if reason is not None:
        pytest.skip(reason)
    import pyarrow.parquet as parquet

    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0", "txn-0")
    segment = log_dir / "smallseg-0" / "00000000000000000900.log"
    body = bytearray(segment.read_bytes())
    body[20_000:30_000] = bytes(10_000)
    segment.write_bytes(bytes(body))
    first = log_dir / "smallseg-0" / "00000000000000000000.log"
    body = bytearray(first.read_bytes())
    body[3000] ^= 0xFF  # inside a record: the batch fails its CRC, its records are still decoded
    first.write_bytes(bytes(body))

    plain = run("09-export-topic.sh", "--topic", "smallseg", "--out", tmp_path / "plain", log_dir, cwd=tmp_path)
    spark = run("09-export-topic.sh", "--spark", "--master", "local[2]", "--topic", "smallseg",
                "--out", tmp_path / "sp", log_dir, cwd=tmp_path)
    assert plain.returncode == 3, plain.stdout + plain.stderr
    assert spark.returncode == plain.returncode, spark.stdout + spark.stderr

    def report(result, prefix):
        return [line.split(" -> ")[0].split(" kept apart in ")[0] for line in result.stdout.splitlines()
                if "SKIPPED" in line or "record(s)" in line]  # the files' names differ (Parquet dirs)

    skipped = [line for line in plain.stdout.splitlines() if "SKIPPED" in line]
    assert skipped and skipped == [line for line in spark.stdout.splitlines() if "SKIPPED" in line]
    exported = [json.loads(line)["offset"] for line in (tmp_path / "plain" / "smallseg-0.jsonl").read_text().splitlines()]
    suspect = [json.loads(line)["offset"] for line in
               (tmp_path / "plain" / "smallseg-0.suspect.jsonl").read_text().splitlines()]
    assert suspect and exported
    spark_rows = parquet.read_table(tmp_path / "sp" / "spark" / "smallseg-0")
    assert sorted(spark_rows.column("offset").to_pylist()) == sorted(exported)
    spark_suspect = parquet.read_table(tmp_path / "sp" / "spark" / "smallseg-0.suspect")
    assert sorted(spark_suspect.column("offset").to_pylist()) == sorted(suspect)
    assert report(plain, tmp_path / "plain") == report(spark, tmp_path / "sp")
    assert sorted(p.name for p in (tmp_path / "sp" / "spark").iterdir()) == ["smallseg-0", "smallseg-0.suspect"]

    # --topic txn: only txn-0, without its 49 transaction markers; a clean partition exits 0
    txn_plain = run("09-export-topic.sh", "--topic", "txn", "--out", tmp_path / "txn", log_dir, cwd=tmp_path)
    txn = run("09-export-topic.sh", "--spark", "--topic", "txn", "--out", tmp_path / "txn-sp", log_dir, cwd=tmp_path)
    assert txn.returncode == txn_plain.returncode == 0, txn.stdout + txn.stderr
    offsets = sorted(parquet.read_table(tmp_path / "txn-sp" / "spark" / "txn-0").column("offset").to_pylist())
    assert offsets == [json.loads(line)["offset"] for line in (tmp_path / "txn" / "txn-0.jsonl").read_text().splitlines()]
    assert len(offsets) == 290
    assert "--master is for --spark" in run("09-export-topic.sh", "--master", "local[1]", "--topic", "txn", "--out",
                                            tmp_path / "x", log_dir, cwd=tmp_path).stderr