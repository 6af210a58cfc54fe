"""The data sources, the Spark 3.5 helper and the distributed verify in a real local Spark
session: every DataFrame equals ``seglog dump --format jsonl`` (or ``seglog verify --format
jsonl``) row for row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import requires_corpus, run_seglog
from tests.spark.conftest import (
    arrow_batches,
    arrow_records,
    dump_batches,
    dump_records,
    log_partition_dirs,
    make_partition,
    requires_spark,
)

pytestmark = [requires_spark, pytest.mark.spark]


def corpus_dirs(corpus) -> list[Path]:
    return [d for d in log_partition_dirs(corpus) if "golden" not in str(d.relative_to(corpus))]


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    log_dir = tmp_path_factory.mktemp("source") / "logdir"
    make_partition(log_dir / "clicks-0", 3)
    make_partition(log_dir / "clicks-1", 1, "snappy")
    return log_dir


def test_schema_is_what_spark_expects(spark):
    from pyspark.sql.pandas.types import to_arrow_schema

    from seglog_cli.spark.columns import BATCH_SCHEMA, RECORD_SCHEMA

    records = spark.read.format("seglog").load("/nonexistent-is-not-read-for-the-schema")
    assert to_arrow_schema(records.schema, timezone="UTC").equals(RECORD_SCHEMA)
    assert records.columns[:8] == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                                   "headers"]
    batches = spark.read.format("seglog-batches").load("/nonexistent")
    assert to_arrow_schema(batches.schema, timezone="UTC").equals(BATCH_SCHEMA)


@requires_corpus
def test_corpus_dataframe_equals_jsonl(spark, corpus):
    dirs = corpus_dirs(corpus)
    expected = dump_records(dirs)
    frame = spark.read.format("seglog").option("paths", ",".join(map(str, dirs))).load()
    assert arrow_records(frame.toArrow()) == expected


@requires_corpus
def test_corpus_batches_equal_jsonl(spark, corpus):
    data = corpus / "kafka-4.2.0" / "data"
    frame = spark.read.format("seglog-batches").option("splitBytes", 65536).load(str(data))
    assert arrow_batches(frame.toArrow()) == dump_batches([data])


def test_generated_split_segments_equal_jsonl(spark, generated):
    frame = spark.read.format("seglog").option("splitBytes", 256 * 1024).load(str(generated))
    assert frame.rdd.getNumPartitions() >= 8
    assert arrow_records(frame.toArrow()) == dump_records([generated])


def test_filters_ranges_and_counts(spark, generated):
    expected = dump_records([generated])
    clicks0 = [r for r in expected if r[1] == 0]
    low, high = clicks0[500][4], clicks0[1500][4]
    frame = (spark.read.format("seglog").option("topicPattern", "click.").option("fromOffset", low)
             .option("toOffset", high).option("splitBytes", 256 * 1024).load(str(generated)))
    got = arrow_records(frame.toArrow())
    assert got == [r for r in expected if low <= r[4] <= high]
    counts = {(r.topic, r.partition): r["count"] for r in
              spark.read.format("seglog").load(str(generated)).groupBy("topic", "partition").count().collect()}
    assert counts == {("clicks", p): sum(1 for r in expected if r[1] == p) for p in (0, 1)}
    assert spark.read.format("seglog").option("topics", "other").load(str(generated)).count() == 0


def test_bad_option_fails_with_its_name(spark, generated):
    with pytest.raises(Exception, match="onCrcMismatch: 'drop' is not one of keep, skip, fail"):
        spark.read.format("seglog").option("onCrcMismatch", "drop").load(str(generated)).count()


@requires_corpus
def test_crc_failure_policy_in_spark(spark, corpus, tmp_path):
    target = tmp_path / "data" / "plain-0"
    shutil.copytree(corpus / "kafka-4.2.0" / "data" / "plain-0", target)
    log = sorted(target.glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    data[5000] ^= 0xFF
    log.write_bytes(bytes(data))
    kept = spark.read.format("seglog").load(str(target))
    assert arrow_records(kept.toArrow()) == dump_records([target])
    assert kept.where("isValid = false").count() > 0
    assert spark.read.format("seglog").option("onCrcMismatch", "skip").load(str(target)).where(
        "isValid = false").count() == 0
    with pytest.raises(Exception, match="batch fails its CRC"):
        spark.read.format("seglog").option("onCrcMismatch", "fail").load(str(target)).count()


def test_spark35_helper_gives_the_same_rows(spark, generated):
    from seglog_cli.spark.compat import read_batches, read_records

    frame = read_records(spark, str(generated), splitBytes=512 * 1024)
    assert frame.rdd.getNumPartitions() >= 4
    assert sorted(arrow_records(frame.toArrow()), key=lambda r: (r[1], r[4])) == sorted(
        dump_records([generated]), key=lambda r: (r[1], r[4]))
    batches = read_batches(spark, [str(generated)])
    assert sorted(arrow_batches(batches.toArrow())) == sorted(dump_batches([generated]))


def _verify_jsonl(*args) -> list[dict]:
    result = run_seglog("verify", "--format", "jsonl", "--no-progress", *args)
    assert result.exit_code in (0, 1, 3, 4), result.err
    return [json.loads(line) for line in result.out.splitlines()]


@requires_corpus
def test_distributed_verify_equals_the_cli(spark, corpus, tmp_path):
    from seglog_cli.spark.verify import verify_findings

    recovery = corpus / "kafka-4.2.0" / "recovery-cases"
    paths = [str(corpus / "kafka-4.2.0" / "data"), str(corpus / "public")] + sorted(
        str(p) for p in recovery.glob("*/before"))
    # the start-up preview (a KRaft broker's log dir judged against its metadata image) is the
    # CLI's, made on one machine from the whole log dir: the distributed job verifies partitions
    preview = {"PARTITION_GOES_STRAY", "PARTITION_CREATED_EMPTY", "PARTITION_WRONG_LOG_DIR",
               "PREVIEW_FROM_OWN_METADATA"}
    for level in ("shallow", "deep"):
        expected = [f for f in _verify_jsonl("--level", level, *paths) if f["code"] not in preview]
        got = [row.asDict() for row in verify_findings(spark, paths, level).collect()]
        assert got == expected
        assert any(f["severity"] != "info" for f in got)


def test_example_spark_scan_counts_and_writes_parquet(spark, tmp_path):
    """examples/spark_scan.py (examples are tests) on the bundled example log dir."""
    import runpy

    import pyarrow.parquet as pq

    from tests.conftest import REPO

    module = runpy.run_path(str(REPO / "examples" / "spark_scan.py"), run_name="example")
    counts = module["scan"](spark, str(REPO / "examples" / "logdir"), str(tmp_path / "out.parquet"))
    assert [(r.topic, r.partition, r.records, r.firstOffset, r.lastOffset) for r in counts] == [
        ("orders", 0, 300, 0, 299), ("orders", 1, 160, 0, 159),
        ("payments", 0, 2, 0, 1)]  # read_committed: not the aborted record (3), nor the open transaction's (5)
    written = pq.read_table(tmp_path / "out.parquet")
    assert written.num_rows == 462 and set(written.column("offset").to_pylist()) == set(range(300))


@requires_corpus
def test_verify_cli_with_spark_prints_the_same_findings(spark, corpus):
    """``seglog verify --spark`` (here in the test's session) equals the local run, exit status too."""
    paths = [str(corpus / "kafka-4.2.0" / "data"), str(corpus / "public")]
    local = run_seglog("verify", "--format", "jsonl", "--no-progress", *paths)
    distributed = run_seglog("verify", "--spark", "local[2]", "--format", "jsonl", "--no-progress", *paths)
    assert distributed.exit_code == local.exit_code and distributed.out == local.out
    assert local.out.count("\n") > 50


def test_segment_groups_cut_partitions_by_segment():
    from seglog_cli.spark.verify import segment_groups

    MiB = 1024 * 1024
    assert segment_groups([]) == []
    assert segment_groups([5 * MiB] * 3, 8 * MiB) == [(0, 1), (1, 2), (2, 3)]
    assert segment_groups([MiB] * 5, 3 * MiB) == [(0, 3), (3, 5)]
    assert segment_groups([MiB, 20 * MiB, MiB, MiB], 4 * MiB) == [(0, 1), (1, 2), (2, 4)]
    assert segment_groups([200 * MiB, 200 * MiB]) == [(0, 1), (1, 2)]


@requires_corpus
def test_verify_by_segment_equals_the_cli_with_damage_in_a_middle_segment(spark, corpus, tmp_path, monkeypatch):
    """Partitions of several segments, verified a segment per task (and small segments grouped),
    with damage in the middle segment of one (a corrupt region and a batch failing its CRC) and
    a stray snapshot and orphan index in another: ``seglog verify --spark`` prints what the
    local run prints, byte for byte, with the same exit status, at both levels."""
    import seglog_cli.spark.verify as spark_verify
    from seglog_cli.storage.write.builder import NewRecord, build_batch
    from seglog_cli.storage.write.writer import PartitionWriter, SegmentConfig

    log_dir = tmp_path / "logdir"
    for name in ("events-0", "events-1"):
        writer = PartitionWriter(log_dir / name, SegmentConfig(segment_bytes=48 * 1024))
        for offset in range(0, 1500, 10):
            records = [NewRecord(key=b"k%d" % (offset + i), value=b"%d" % (offset + i) * 40) for i in range(10)]
            writer.append(build_batch(records, base_offset=offset))
        writer.close()
    segments = sorted((log_dir / "events-0").glob("*.log"))
    assert len(segments) >= 5
    middle = segments[len(segments) // 2]
    data = bytearray(middle.read_bytes())
    data[9000:9300] = b"\xa5" * 300  # a corrupt region
    data[30000] ^= 0xFF  # a batch failing its CRC
    middle.write_bytes(bytes(data))
    other = log_dir / "events-1"
    (other / "00000000000000099999.index").write_bytes(b"")  # an orphan index
    (other / "00000000000000000007.snapshot").write_bytes(b"junk")  # a stray, unreadable snapshot
    paths = [str(log_dir), str(corpus / "kafka-4.2.0" / "data" / "txn-0")]
    planned = []
    grouped = spark_verify.segment_groups
    monkeypatch.setattr(spark_verify, "segment_groups", lambda sizes: planned.append(grouped(sizes)) or planned[-1])
    for group_bytes in (1, 100 * 1024):  # a task per segment, then two or three segments a task
        monkeypatch.setattr(spark_verify, "GROUP_BYTES", group_bytes)
        for level in ("shallow", "deep"):
            local = run_seglog("verify", "--level", level, "--format", "jsonl", "--no-progress", *paths)
            distributed = run_seglog("verify", "--spark", "local[2]", "--level", level, "--format", "jsonl",
                                     "--no-progress", *paths)
            assert local.exit_code == 3 and distributed.exit_code == local.exit_code
            assert distributed.out == local.out
            assert middle.name in local.out and "events-1" in local.out
            tasks = sum(len(groups) for groups in planned[-3:])  # events-0, events-1, txn-0
            per_partition = len(segments) if group_bytes == 1 else -(-len(segments) // 2)  # 48 KiB segments, pairs
            assert tasks == 2 * per_partition + 1
            text = run_seglog("verify", "--spark", "local[2]", "--level", level, "--no-progress", *paths)
            assert text.out == run_seglog("verify", "--level", level, "--no-progress", *paths).out


@requires_corpus
def test_verify_cli_with_spark_on_a_relative_dir(spark, corpus, tmp_path):
    """A relative dir means the driver's working directory (the tasks run elsewhere: here the
    JVM's); the findings name it as given, as the local run does."""
    (tmp_path / "logs").symlink_to(corpus / "kafka-4.2.0" / "recovery-cases" / "a-append-garbage-active-log" / "before")
    relative = "logs"  # no such dir in the JVM's working dir
    local = run_seglog("verify", "--format", "jsonl", "--no-progress", relative, cwd=tmp_path)
    distributed = run_seglog("verify", "--spark", "local[2]", "--format", "jsonl", "--no-progress", relative,
                             cwd=tmp_path)
    assert distributed.exit_code == local.exit_code != 70, distributed.err
    assert distributed.out == local.out and relative + "/plain-0/" in local.out
