"""``seglog verify`` as a Spark job: partitions verified by Spark tasks, findings as a DataFrame.

The engine's :func:`seglog_cli.storage.verify.verify` does everything it does for the CLI
(classifying the paths, the log-dir files, checkpoints against each partition's offsets);
only the per-partition work (``verify_partition``: segments, indexes, snapshots, epochs,
transactions) runs as one Spark task per partition directory, through ``mapInArrow`` (Spark
3.5 and 4.x, classic or Connect). The findings, their codes, severities and messages are the
CLI's: ``verify_findings`` gives the rows ``seglog verify --format jsonl`` prints.

    from seglog_cli.spark.verify import verify_findings
    findings = verify_findings(spark, ["/var/lib/kafka/data"], level="deep")
    findings.where("severity = 'error'").show()

A partition is one task whatever its size: the checks between batches, segments and index
entries need the whole partition in order.
"""

from __future__ import annotations

import pickle
from functools import partial
from pathlib import Path

from seglog_cli.storage.verify.verify import VerifyOptions, VerifyReport, verify
from seglog_cli.storage.verify.verify_partition import verify_partition

FINDING_SCHEMA = ("code string, severity string, path string, position bigint, length bigint, "
                  "offset bigint, message string, topic string, partition int")
MAX_TASKS = 256


def verify_report(spark, paths: list[str], level: str = "shallow") -> VerifyReport:
    """The engine's VerifyReport, the partitions verified by Spark tasks."""
    return verify([str(p) for p in paths], VerifyOptions(level=level),
                  run_partitions=partial(_spark_partitions, spark))


def verify_findings(spark, paths: list[str], level: str = "shallow"):
    """A DataFrame with one row per finding, as ``seglog verify --format jsonl``."""
    return findings_frame(spark, verify_report(spark, paths, level))


def findings_frame(spark, report: VerifyReport):
    where = {}
    for partition in report.partitions:
        for finding in partition.findings:
            where[id(finding)] = (partition.topic, partition.partition)
    rows = []
    for finding in report.all_findings():
        topic, number = where.get(id(finding), (None, None))
        rows.append((finding.code, finding.severity.value, finding.path, finding.position, finding.length,
                     finding.offset, finding.message, topic, number))
    return spark.createDataFrame(rows, FINDING_SCHEMA)


def _spark_partitions(spark, directories: list[Path], level: str) -> list:
    if not directories:
        return []
    listed = spark.createDataFrame([(i, str(d)) for i, d in enumerate(directories)], "index int, path string")
    tasks = listed.repartition(min(len(directories), MAX_TASKS), "index")
    done = tasks.mapInArrow(partial(_verify_rows, level), "index int, report binary").collect()
    reports = {row["index"]: pickle.loads(row["report"]) for row in done}
    return [reports[i] for i in range(len(directories))]


def _verify_rows(level: str, batches):
    """mapInArrow body (on a worker): each (index, path) row's PartitionReport, pickled."""
    import pyarrow as pa

    for batch in batches:
        indexes = batch.column("index").to_pylist()
        paths = batch.column("path").to_pylist()
        reports = [pickle.dumps(verify_partition(path, level)) for path in paths]
        yield pa.RecordBatch.from_arrays([pa.array(indexes, pa.int32()), pa.array(reports, pa.binary())],
                                         names=["index", "report"])


def verify_with_spark(paths: list[str], level: str, master: str) -> VerifyReport:
    """``seglog verify --spark MASTER``: the report, partitions verified as Spark tasks. A
    session already running in this process is used as it is (and left running); else one is
    started on ``master`` and stopped at the end."""
    import os
    import sys
    import warnings

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need seglog importable
    running = SparkSession.getActiveSession()
    spark = running or (SparkSession.builder.master(master).appName("seglog-verify")
                        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                        .getOrCreate())
    if running is None:
        spark.sparkContext.setLogLevel("ERROR")
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
            return verify_report(spark, paths, level)
    finally:
        if running is None:
            spark.stop()
