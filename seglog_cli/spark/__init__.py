"""Reading and verifying Kafka log dirs with Spark (the optional extra: ``pip install 'seglog[spark]'``).

* :func:`register` adds the data sources ``seglog`` and ``seglog-batches`` (Spark 4.x,
  ``pyspark.sql.datasource``) to a session: ``spark.read.format("seglog").load(path)``.
* :func:`seglog_cli.spark.verify.verify_findings`: ``seglog verify`` with the partitions
  verified by Spark tasks; a DataFrame of findings with the CLI's codes.
* :func:`seglog_cli.spark.compat.read_records`: the same rows on Spark 3.5 (no Python data
  sources there) through ``binaryFile`` listing and ``mapInArrow``.

The planning and reading logic lives in :mod:`seglog_cli.spark.plan` and
:mod:`seglog_cli.spark.columns`, which need no JVM; the engine never imports this package.
"""

from __future__ import annotations


def register(spark) -> None:
    """Register ``seglog`` and ``seglog-batches`` with ``spark`` (a Spark 4.x SparkSession),
    and turn on ``spark.sql.python.filterPushdown.enabled`` (false by default; Spark refuses to
    plan a Python source that takes pushed-down filters while it is off)."""
    from seglog_cli.spark.source import SeglogBatchesDataSource, SeglogDataSource

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(SeglogDataSource)
    spark.dataSource.register(SeglogBatchesDataSource)
