"""``seglog verify`` as a Spark job: segments verified by Spark tasks, findings as a DataFrame.

The engine's :func:`seglog_cli.storage.verify.verify` does everything it does for the CLI
(classifying the paths, the log-dir files, checkpoints against each partition's offsets);
only the per-partition work runs through Spark, split by segment: each segment's own checks
(``verify_partition.verify_segment_at``: batches, CRCs, records, its indexes) run as Spark
tasks through ``mapInArrow`` (Spark 3.5 and 4.x, classic or Connect), a big segment alone, small
consecutive segments of a partition together up to :data:`GROUP_BYTES`; the checks across a
partition's segments and files (offsets between segments, snapshots, leader epochs, the
``.txnindex`` files against the markers: ``verify_partition.finish_partition``) run once per
partition on the driver, from the tasks' summaries, as the local run does. The findings, their
codes, severities, messages and order are the CLI's: ``verify_findings`` gives the rows
``seglog verify --format jsonl`` prints.

    from seglog_cli.spark.verify import verify_findings
    findings = verify_findings(spark, ["/var/lib/kafka/data"], level="deep")
    findings.where("severity = 'error'").show()
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from seglog_cli.storage.verify.verify import VerifyOptions, VerifyReport, verify

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
    """One PartitionReport per directory, in order: the segments verified by Spark tasks, the
    rest of each partition's checks here."""
    from seglog_cli.storage.verify.verify_partition import finish_partition, open_partition_report

    opened = [open_partition_report(d) for d in directories]
    # a relative path means the driver's working directory; an executor runs in its own
    here = os.getcwd()
    tasks = []  # (task, directory index, path, first segment, stop)
    for number, (_, log) in enumerate(opened):
        if log is not None:
            where = _task_path(log, here)
            for first, stop in segment_groups([s.size for s in log.segments]):
                tasks.append((len(tasks), number, where, first, stop))
    results: dict[int, list] = {}
    if tasks:
        listed = spark.createDataFrame(tasks, "task int, directory int, path string, first int, stop int")
        spread = listed.repartitionByRange(min(len(tasks), MAX_TASKS), "task")
        done = spread.mapInArrow(partial(_verify_segments, level), "task int, results binary").collect()
        by_task = {row["task"]: pickle.loads(row["results"]) for row in done}
        for task, number, absolute, *_ in tasks:
            given = str(opened[number][1].path)
            results.setdefault(number, []).extend(_named_as_given(result, absolute, given)
                                                  for result in by_task[task])
    reports = []
    for number, (report, log) in enumerate(opened):
        if log is not None:
            try:
                finish_partition(report, log, results.get(number, []), level)
            finally:
                log.close()
        reports.append(report)
    return reports


GROUP_BYTES = 128 * 1024 * 1024


def segment_groups(sizes: list[int], group_bytes: int | None = None) -> list[tuple[int, int]]:
    """``[first, stop)`` ranges of consecutive segments, one task each: a segment of
    ``group_bytes`` (:data:`GROUP_BYTES`) or more alone, smaller ones together while they stay
    under it."""
    group_bytes = GROUP_BYTES if group_bytes is None else group_bytes
    groups: list[tuple[int, int]] = []
    first, total = 0, 0
    for i, size in enumerate(sizes):
        if i > first and total + size > group_bytes:
            groups.append((first, i))
            first, total = i, 0
        total += size
    if sizes:
        groups.append((first, len(sizes)))
    return groups


def _verify_segments(level: str, batches):
    """mapInArrow body (on a worker): each row's segments ``[first, stop)`` of its partition
    verified, their (summary, findings) pickled in segment order."""
    import pyarrow as pa

    from seglog_cli.storage.log.partition_log import PartitionLog
    from seglog_cli.storage.verify.verify_partition import verify_segment_at

    for batch in batches:
        rows = batch.to_pydict()
        out = []
        for path, first, stop in zip(rows["path"], rows["first"], rows["stop"]):
            with _partition_here(path) as (local, to_url):
                log = PartitionLog(local)
                try:
                    results = [verify_segment_at(log, i, level) for i in range(first, stop)]
                finally:
                    log.close()
                out.append(pickle.dumps([_renamed(result, to_url) for result in results]))
        yield pa.RecordBatch.from_arrays([pa.array(rows["task"], pa.int32()), pa.array(out, pa.binary())],
                                         names=["task", "results"])


def _task_path(log, here: str) -> str:
    """Where a task finds the partition: its URL when the driver reads it through an object
    store view (``s3://...``: the driver's temporary view never reaches a task), else its
    absolute path (a relative path means the driver's working directory; a task runs in the
    executor's own)."""
    from seglog_cli.storage.objectstore.remote_view import url_of

    for segment in log.segments:
        url = url_of(segment.log_path)
        if url is not None:
            return url.rsplit("/", 1)[0]
    return os.path.join(here, str(log.path))


@contextmanager
def _partition_here(path: str):
    """(local path, rename) for a task's partition: a local path as it is, a URL through a
    view of that partition alone on this executor, with the view's paths renamed to the URL."""
    from seglog_cli.storage.objectstore.remote_urls import is_remote

    if not is_remote(path):
        yield path, None
        return
    from seglog_cli.storage.objectstore.remote_view import RemoteView

    with RemoteView() as view:
        yield str(view.add(path, context=False)), view.to_url


def _renamed(result, rename):
    """A ``(summary, findings)`` with ``rename`` applied to every path and message."""
    if rename is None:
        return result

    def apply(text):
        return None if text is None else rename(text)

    summary, findings = result
    findings = [dataclasses.replace(f, path=apply(f.path), message=apply(f.message),
                                    kafka_message=apply(f.kafka_message)) for f in findings]
    return dataclasses.replace(summary, path=apply(summary.path)), findings


def _named_as_given(result, absolute: str, given: str):
    """A task's ``(summary, findings)`` with the paths under ``absolute`` (an absolute path or
    a URL) written as under ``given`` again (the report names a partition as the command line
    did; the command's output maps a view path to its URL)."""
    if absolute == given:
        return result
    return _renamed(result, lambda text: text.replace(absolute, given))


def verify_with_spark(paths: list[str], level: str, master: str) -> VerifyReport:
    """``seglog verify --spark MASTER``: the report, partitions verified as Spark tasks. A
    session already running in this process is used as it is (and left running); else one is
    started on ``master`` and stopped at the end."""
    import sys
    import warnings

    from pyspark.sql import SparkSession

    from seglog_cli.spark import EXECUTOR_PYTHON_CONF

    given = os.environ.get("PYSPARK_PYTHON")
    # no interpreter named: this one (nodes with seglog at the same path, and every local master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    running = SparkSession.getActiveSession()
    spark = running or (SparkSession.builder.master(master).appName("seglog-verify")
                        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                        .getOrCreate())
    if running is None:
        spark.sparkContext.setLogLevel("ERROR")
        configured = spark.sparkContext.getConf().get("spark.pyspark.python", None)
        if given is None and configured and spark.conf.get(EXECUTOR_PYTHON_CONF, None) is None:
            # spark.pyspark.python (spark-defaults.conf, PYSPARK_SUBMIT_ARGS) is what a Python
            # started by spark-submit gets as PYSPARK_PYTHON; a session started here does not
            spark.conf.set(EXECUTOR_PYTHON_CONF, configured)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
            return verify_report(spark, paths, level)
    finally:
        if running is None:
            spark.stop()
