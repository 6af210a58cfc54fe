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
``maxRecordsPerBatch`` (8192), ``isolationLevel`` (read_uncommitted | read_committed),
``paths`` (more paths, comma-separated; ``load([a, b])`` passes them as a JSON list),
``storageOptions`` (a JSON object of fsspec storage options for ``s3a://``, ``gs://``,
``abfss://``, ``hdfs://`` paths; see :mod:`seglog_cli.spark.remote`).

With ``register(spark, pushdown=True)``, filters on ``topic``, ``partition``, ``offset``
(=, IN, <, <=, >, >=) and a lower bound on ``timestamp`` are pushed down (``pushFilters``) and become the seeks the options make:
only the matching partitions' segments are planned, from the offset index floor. Filters on
``topic``, ``partition`` and ``offset`` are exact and consumed; timestamp filters and ``IN``
lists of offsets are also given back to Spark to evaluate on the rows.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

from seglog_cli.spark import remote
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
        self.storage = remote.storage_options(options)  # remote log dirs: see seglog_cli.spark.remote

    def partitions(self) -> list[SplitPartition]:
        splits = remote.plan(self.paths, self.options, plan_splits, self.storage)
        return [SplitPartition(split) for split in splits]

    def read(self, partition: SplitPartition) -> Iterator:
        from seglog_cli.spark import columns

        if not isinstance(partition, SplitPartition):  # no split planned: Spark reads one empty partition
            return iter(())
        reader = columns.record_batches if self.kind == "records" else columns.batch_batches
        return self._read(reader, partition.split)

    def _read(self, reader, split: Split) -> Iterator:
        with remote.local_split(split, self.storage) as local:  # a URL: a one-file view on this executor
            yield from reader(local, self.options)


class _BatchReader(_Reader):
    kind = "batches"


class _PushdownReader(_Reader):
    """A reader that takes ``where()`` filters (``register(spark, pushdown=True)``)."""

    def pushFilters(self, filters):
        """Turn filters on topic, partition, offset and timestamp into the options' seeks;
        yield back those Spark must still evaluate."""
        self.options, remaining = push_filters(self.options, filters)
        return remaining


class _PushdownBatchReader(_PushdownReader):
    kind = "batches"


def push_filters(options, filters) -> tuple:
    """``options`` narrowed by the pushed-down ``filters`` (an AND), and the filters Spark
    still has to evaluate (every one it cannot trust the seek with, by reference)."""
    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual

    remaining = []
    topics = set(options.topics) if options.topics else None
    partitions = set(options.partitions) if options.partitions is not None else None
    low, high = options.from_offset, options.to_offset
    low_ms = options.from_timestamp
    nothing = options.nothing
    for item in filters:
        attribute = getattr(item, "attribute", None)  # Not(...) has a child instead
        column = attribute[0] if attribute is not None and len(attribute) == 1 else None
        value = getattr(item, "value", None)
        if column == "topic" and isinstance(item, (EqualTo, In)):
            wanted = {value} if isinstance(item, EqualTo) else set(value)
            topics = wanted if topics is None else topics & wanted
        elif column == "partition" and isinstance(item, (EqualTo, In)):
            wanted = {value} if isinstance(item, EqualTo) else set(value)
            partitions = wanted if partitions is None else partitions & wanted
        elif column == "offset" and isinstance(item, (EqualTo, In, GreaterThan, GreaterThanOrEqual, LessThan,
                                                      LessThanOrEqual)):
            lo, hi = _offset_bounds(item, value)
            low = lo if low is None else (low if lo is None else max(low, lo))
            high = hi if high is None else (high if hi is None else min(high, hi))
            if isinstance(item, In):
                remaining.append(item)  # the seek covers min..max; Spark keeps only the listed ones
        elif column == "timestamp" and isinstance(item, (GreaterThan, GreaterThanOrEqual)) and isinstance(value, datetime):
            # the first offset whose timestamp reaches the bound (ListOffsets): no earlier record
            # can pass; later ones may be older (CreateTime), so Spark evaluates the filter too
            ms = _epoch_ms(value)
            low_ms = ms if low_ms is None else max(low_ms, ms)
            remaining.append(item)
        else:
            remaining.append(item)
    if topics is not None and not topics:
        nothing = True
    if partitions is not None and not partitions:
        nothing = True
    if low is not None and high is not None and low > high:
        nothing = True
    narrowed = dataclasses.replace(
        options, topics=tuple(sorted(topics)) if topics else options.topics,
        partitions=tuple(sorted(partitions)) if partitions else options.partitions,
        from_offset=low, to_offset=high, from_timestamp=low_ms, nothing=nothing)
    return narrowed, remaining


def _offset_bounds(item, value) -> tuple:
    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan

    if isinstance(item, EqualTo):
        return value, value
    if isinstance(item, In):
        return min(value), max(value)
    if isinstance(item, GreaterThan):
        return value + 1, None
    if isinstance(item, GreaterThanOrEqual):
        return value, None
    if isinstance(item, LessThan):
        return None, value - 1
    return None, value  # LessThanOrEqual


def _epoch_ms(moment: datetime) -> int:
    """Epoch milliseconds at or below ``moment`` (a timestamp filter's value; naive: UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds) // 1000


def _schema(name: str):
    from seglog_cli.spark import columns

    return from_arrow_schema(getattr(columns, name))


class _SeglogSource(DataSource):
    """What both sources share: the options a read gets."""

    # set on a subclass by register(spark): the session's Hadoop fs.s3a.* settings as the
    # storageOptions JSON every read gets unless it gives its own
    storage_defaults: str | None = None

    def _options(self) -> dict:
        options = dict(self.options)
        if self.storage_defaults and not any(key.lower() == remote.STORAGE_OPTIONS for key in options):
            options["storageOptions"] = self.storage_defaults
        return options


class SeglogDataSource(_SeglogSource):
    """``spark.read.format("seglog").load(path)``: one row per record."""

    @classmethod
    def name(cls) -> str:
        return "seglog"

    def schema(self):
        return _schema("RECORD_SCHEMA")

    def reader(self, schema) -> DataSourceReader:
        return _Reader(self._options())


class SeglogBatchesDataSource(_SeglogSource):
    """``spark.read.format("seglog-batches").load(path)``: one row per batch, records not decoded."""

    @classmethod
    def name(cls) -> str:
        return "seglog-batches"

    def schema(self):
        return _schema("BATCH_SCHEMA")

    def reader(self, schema) -> DataSourceReader:
        return _BatchReader(self._options())


class SeglogPushdownDataSource(SeglogDataSource):
    """``seglog`` with ``where()`` filters pushed down (``register(spark, pushdown=True)``)."""

    def reader(self, schema) -> DataSourceReader:
        return _PushdownReader(self._options())


class SeglogPushdownBatchesDataSource(SeglogBatchesDataSource):
    """``seglog-batches`` with ``where()`` filters pushed down."""

    def reader(self, schema) -> DataSourceReader:
        return _PushdownBatchReader(self._options())
