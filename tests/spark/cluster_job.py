"""The PySpark job the cluster tests submit (``spark-submit ... cluster_job.py OUT DATA TXN BROKER...``).

Reads with the ``seglog`` source what the tests compare with ``seglog dump``, each result an
Arrow IPC file in OUT, and ``summary.json`` (the interpreters, partition and task counts).
Paths are passed as given on the command line (relative ones: to the driver's working dir).
"""

import json
import sys
from pathlib import Path

import pyarrow as pa
from pyspark.sql import SparkSession

from seglog_cli.spark import EXECUTOR_PYTHON_CONF, register


def save(table, path: Path) -> None:
    with pa.ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)


def tasks_of(context, group: str) -> int:
    tracker = context.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds]
    return sum(tracker.getStageInfo(s).numTasks for s in stages)


def main(out: Path, data: str, txn: str, brokers: list[str], mode: str) -> None:
    spark = SparkSession.builder.appName("seglog-cluster-test-" + mode).getOrCreate()
    context = spark.sparkContext
    register(spark)
    summary = {"pythonExec": context.pythonExec, "driver": sys.executable,
               "executorPython": spark.conf.get(EXECUTOR_PYTHON_CONF, None)}

    save(spark.read.format("seglog").load(data).toArrow(), out / "records.arrow")
    if mode == "archive":
        committed = spark.read.format("seglog").option("isolationLevel", "read_committed").load(txn)
        save(committed.toArrow(), out / "committed.arrow")
        save(spark.read.format("seglog").load(brokers).toArrow(), out / "replicas.arrow")

    register(spark, pushdown=True)
    frame = spark.read.format("seglog").option("splitBytes", "65536").load(data)
    summary["allPartitions"] = frame.rdd.getNumPartitions()
    where = frame.where("topic = 'plain' and partition = 1 and offset between 2000 and 2099")
    summary["wherePartitions"] = where.rdd.getNumPartitions()
    context.setJobGroup("where", "one partition, one offset range")
    save(where.toArrow(), out / "where.arrow")
    summary["whereTasks"] = tasks_of(context, "where")
    (out / "summary.json").write_text(json.dumps(summary))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:-1], sys.argv[-1])
