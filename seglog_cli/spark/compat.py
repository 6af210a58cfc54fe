"""The ``seglog`` and ``seglog-batches`` rows on Spark 3.5, which has no Python data sources.

The same planning and reading code as the data sources, driven by plain DataFrame operations:

1. ``binaryFile`` lists the ``.log`` files under the paths (Spark's own, distributed listing;
   only ``path`` is selected, so no file content is read);
2. ``mapInArrow`` plans each segment's splits (its ``.index``) on the workers;
3. the splits, one per Spark partition, go through ``mapInArrow`` over
   :func:`seglog_cli.spark.columns.record_batches`.

    from seglog_cli.spark.compat import read_records
    df = read_records(spark, "/var/lib/kafka/data", topics="orders", splitBytes=64 << 20)

Options are the data source's (``checkCrc``, ``onCrcMismatch``, ``failOnDamage``, offset and
time ranges, ``topics``, ``topicPattern``, ``splitBytes``, ``maxRecordsPerBatch``, ``isolationLevel``). Rows come
ordered by topic, partition and offset as far as Spark keeps partition order.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from seglog_cli.spark.plan import Split, parse_options, segment_splits
from seglog_cli.storage.log.naming import parse_partition_dir_name, parse_segment_file_name

SPLIT_SCHEMA = ("path string, topic string, partition int, base_offset bigint, start bigint, end bigint, "
                "from_offset bigint, to_offset bigint, segment string, active boolean, log_dir string, "
                "aborted string, last_stable_offset bigint")


def read_records(spark, paths, **options):
    """One row per record (the ``seglog`` data source's schema)."""
    return _read(spark, paths, options, "records")


def read_batches(spark, paths, **options):
    """One row per batch (the ``seglog-batches`` data source's schema)."""
    return _read(spark, paths, options, "batches")


def _read(spark, paths, options: dict, kind: str):
    from pyspark.sql.pandas.types import from_arrow_schema

    from seglog_cli.spark import columns

    strings = {key: str(value) for key, value in options.items()}
    parse_options(strings)  # bad options fail here, on the driver
    schema = from_arrow_schema(columns.RECORD_SCHEMA if kind == "records" else columns.BATCH_SCHEMA)
    paths = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]
    listing = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
               .option("pathGlobFilter", "*.log").load(paths).select("path"))
    planned = listing.mapInArrow(partial(_plan_rows, strings), SPLIT_SCHEMA).collect()
    splits = sorted(planned, key=lambda s: (s["topic"] or "", s["partition"] or 0, s["base_offset"], s["start"]))
    if not splits:
        return spark.createDataFrame([], schema)
    frame = _one_split_per_partition(spark, splits)
    return frame.mapInArrow(partial(_read_rows, strings, kind), schema)


def _one_split_per_partition(spark, splits: list):
    rows = [tuple(s) for s in splits]
    context = getattr(spark, "sparkContext", None)
    try:
        rdd = context.parallelize(rows, len(rows))
    except Exception:  # Spark Connect: no RDDs; a repartition spreads them instead
        return spark.createDataFrame(rows, SPLIT_SCHEMA).repartition(len(rows))
    return spark.createDataFrame(rdd, SPLIT_SCHEMA)


def _plan_rows(options: dict, batches):
    """mapInArrow body: the splits of each listed ``.log`` that lies in a partition directory."""
    import pyarrow as pa

    scan = parse_options(options)
    for batch in batches:
        splits = []
        for uri in batch.column("path").to_pylist():
            path = Path(uri.removeprefix("file://").removeprefix("file:"))
            if parse_segment_file_name(path.name) is None or parse_partition_dir_name(path.parent.name) is None:
                continue
            splits.extend(segment_splits(str(path), scan))
        yield pa.RecordBatch.from_pylist([_split_row(s) for s in splits], schema=_split_arrow_schema())


def _split_row(split: Split) -> dict:
    return {"path": split.path, "topic": split.topic, "partition": split.partition,
            "base_offset": split.base_offset, "start": split.start, "end": split.end,
            "from_offset": split.from_offset, "to_offset": split.to_offset, "segment": split.segment,
            "active": split.active, "log_dir": split.log_dir, "aborted": json.dumps(split.aborted),
            "last_stable_offset": split.last_stable_offset}


def _split_arrow_schema():
    import pyarrow as pa

    return pa.schema([("path", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
                      ("base_offset", pa.int64()), ("start", pa.int64()), ("end", pa.int64()),
                      ("from_offset", pa.int64()), ("to_offset", pa.int64()), ("segment", pa.string()),
                      ("active", pa.bool_()), ("log_dir", pa.string()), ("aborted", pa.string()),
                      ("last_stable_offset", pa.int64())])


def _read_rows(options: dict, kind: str, batches):
    """mapInArrow body: the rows of each split."""
    from seglog_cli.spark import columns

    scan = parse_options(options)
    reader = columns.record_batches if kind == "records" else columns.batch_batches
    for batch in batches:
        for row in batch.to_pylist():
            row["aborted"] = tuple(tuple(txn) for txn in json.loads(row["aborted"]))
            yield from reader(Split(**row), scan)
