"""A minimal Python Data Source for ``bench_spark.py``'s ``passthrough[N]`` step: the floor any
Python source with seglog's record schema pays in Spark, whatever its decoder.

``spark.read.format("seglog-passthrough").load(ipc_dir)`` reads the Arrow IPC files (``*.arrow``,
one input partition each, in name order) that ``bench_spark.write_passthrough_files`` wrote from
the ``seglog`` source's own rows. A worker memory-maps its file and yields the record batches as
they are stored (no copy, no decoding), so what the step costs is Spark's Python Data Source path
(Arrow batches from a Python worker to the JVM, rows materialised there) and nothing else.

A module of its own so that Spark's Python workers can import it (the repository root has to be
on their ``PYTHONPATH``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

SUFFIX = ".arrow"


class FilePartition(InputPartition):
    """One Arrow IPC file."""

    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


class PassthroughReader(DataSourceReader):
    def __init__(self, directory: str):
        self.directory = directory

    def partitions(self) -> list[FilePartition]:
        files = sorted(Path(self.directory).glob(f"*{SUFFIX}"))
        return [FilePartition(str(path)) for path in files]

    def read(self, partition: FilePartition) -> Iterator:
        import pyarrow as pa

        if not isinstance(partition, FilePartition):  # no file: Spark reads one empty partition
            return
        source = pa.memory_map(partition.path)  # the batches' buffers point into the mapping
        reader = pa.ipc.open_file(source)
        for index in range(reader.num_record_batches):
            yield reader.get_batch(index)


class PassthroughDataSource(DataSource):
    """``spark.read.format("seglog-passthrough").load(ipc_dir)``: the stored batches, unchanged."""

    @classmethod
    def name(cls) -> str:
        return "seglog-passthrough"

    def schema(self):
        from seglog_cli.spark.columns import RECORD_SCHEMA

        return from_arrow_schema(RECORD_SCHEMA)

    def reader(self, schema) -> DataSourceReader:
        return PassthroughReader(self.options["path"])
