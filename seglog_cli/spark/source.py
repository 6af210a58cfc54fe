"""The PySpark data sources ``seglog`` (one row per record) and ``seglog-batches`` (one row per
batch), for Spark 4's Python Data Source API (``pyspark.sql.datasource``).

A small adapter: :mod:`seglog_cli.spark.plan` cuts the segments into input partitions on the
driver, :mod:`seglog_cli.spark.columns` reads each one into Arrow record batches on a worker.

    from seglog_cli.spark import register
    register(spark)
    df = spark.read.format("seglog").option("topics", "orders").load("/var/lib/kafka/data")

Options (all optional): ``checkCrc`` (true), ``onCrcMismatch`` (keep | skip | fail),
``failOnDamage`` (false), ``fromOffset``, ``toOffset``, ``fromTimestamp``, ``toTimestamp``
(epoch ms or ISO-8601), ``topics`` (comma-separated), ``topicPattern`` (a regular expression
the whole topic name matches), ``splitBytes`` (134217728; 0: one partition per segment),
``maxRecordsPerBatch`` (8192), ``paths`` (more paths, comma-separated).
"""

from __future__ import annotations

from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

from seglog_cli.spark.plan import Split, option_paths, parse_options, plan_splits


class SplitPartition(InputPartition):
    """One :class:`Split`, shipped to a worker."""

    def __init__(self, split: Split):
        super().__init__(split)
        self.split = split


class _Reader(DataSourceReader):
    kind = "records"

    def __init__(self, options):
        self.paths = option_paths(options)
        self.options = parse_options(options)

    def partitions(self) -> list[SplitPartition]:
        splits = plan_splits(self.paths, self.options)
        return [SplitPartition(split) for split in splits]

    def read(self, partition: SplitPartition) -> Iterator:
        from seglog_cli.spark import columns

        if not isinstance(partition, SplitPartition):  # no split planned: Spark reads one empty partition
            return iter(())
        reader = columns.record_batches if self.kind == "records" else columns.batch_batches
        return iter(reader(partition.split, self.options))


class _BatchReader(_Reader):
    kind = "batches"


def _schema(name: str):
    from seglog_cli.spark import columns

    return from_arrow_schema(getattr(columns, name))


class SeglogDataSource(DataSource):
    """``spark.read.format("seglog").load(path)``: one row per record."""

    @classmethod
    def name(cls) -> str:
        return "seglog"

    def schema(self):
        return _schema("RECORD_SCHEMA")

    def reader(self, schema) -> DataSourceReader:
        return _Reader(self.options)


class SeglogBatchesDataSource(DataSource):
    """``spark.read.format("seglog-batches").load(path)``: one row per batch, records not decoded."""

    @classmethod
    def name(cls) -> str:
        return "seglog-batches"

    def schema(self):
        return _schema("BATCH_SCHEMA")

    def reader(self, schema) -> DataSourceReader:
        return _BatchReader(self.options)
