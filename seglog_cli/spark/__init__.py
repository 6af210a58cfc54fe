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


def register(spark, pushdown: bool = False) -> None:
    """Register ``seglog`` and ``seglog-batches`` with ``spark`` (a Spark 4.x SparkSession).

    ``pushdown=True``: ``where()`` filters on topic, partition, offset and timestamp become the
    options' seeks; it turns on ``spark.sql.python.filterPushdown.enabled`` (Spark plans no
    Python source that takes filters while it is off). Off by default because Spark 4.3.0 keeps
    the plan of a filtered query on the DataFrame it came from: a later unfiltered query of the
    same DataFrame silently reads only what the filtered one read (a wrong count is worse than a
    slow one); with pushdown on, load again for each differently filtered query."""
    from seglog_cli.spark import source

    if pushdown:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        spark.dataSource.register(source.SeglogPushdownDataSource)
        spark.dataSource.register(source.SeglogPushdownBatchesDataSource)
    else:
        spark.dataSource.register(source.SeglogDataSource)
        spark.dataSource.register(source.SeglogBatchesDataSource)
