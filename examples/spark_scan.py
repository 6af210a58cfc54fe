"""Read a Kafka log dir with Spark, count the records of each topic-partition, write Parquet.

The records a read_committed consumer would get (no control records, no records of aborted or
still open transactions) of every topic but Kafka's internal ones (``__consumer_offsets``...).

    pip install 'seglog[spark]'
    python examples/spark_scan.py examples/logdir /tmp/records.parquet

Runs on a local Spark 4.x session (``--master`` for another); prints one line per partition:
``orders-0: 300 records, offsets 0..299``.
"""

from __future__ import annotations

import argparse
import os
import sys


def scan(spark, log_dir: str, output: str) -> list:
    """The per-partition counts (sorted by topic and partition); the records go to ``output``."""
    from pyspark.sql import functions as F

    from seglog_cli.spark import register

    register(spark)
    records = (spark.read.format("seglog").option("isolationLevel", "read_committed").load(log_dir)
               .where(~F.col("topic").startswith("__")))
    counts = (records.groupBy("topic", "partition")
              .agg(F.count("*").alias("records"), F.min("offset").alias("firstOffset"),
                   F.max("offset").alias("lastOffset"))
              .orderBy("topic", "partition")
              .collect())
    records.write.mode("overwrite").partitionBy("topic").parquet(output)
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log_dir")
    parser.add_argument("output", help="Parquet directory to write (replaced)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master).appName("seglog-spark-scan")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        for row in scan(spark, args.log_dir, args.output):
            print(f"{row.topic}-{row.partition}: {row.records} records, offsets {row.firstOffset}..{row.lastOffset}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    if __package__ in (None, ""):
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
