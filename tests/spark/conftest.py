"""Spark test fixtures: one local[2] session for the whole run, and the comparison helpers that
turn ``seglog dump --format jsonl`` output and Arrow tables into the same rows."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import run_seglog

MAX_TIMESTAMP_MS = (2**63 - 1) // 1000
BATCH_V2_FIELDS = ("baseSequence", "lastSequence", "producerId", "producerEpoch", "partitionLeaderEpoch",
                   "isTransactional", "isControl")  # absent (null) for v0/v1 entries


def spark_missing() -> str | None:
    """Why a Spark session cannot be started here, or None."""
    for module in ("pyspark", "pyarrow"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'seglog[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and Path(java_home, "bin", "java").exists()):
        return "no java on PATH or in JAVA_HOME (Spark needs Java 17+)"
    return None


requires_spark = pytest.mark.skipif(spark_missing() is not None, reason=spark_missing() or "")


@pytest.fixture(scope="session")
def spark():
    reason = spark_missing()
    if reason is not None:
        pytest.skip(reason)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from seglog_cli.spark import register

    session = (SparkSession.builder.master("local[2]").appName("seglog-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


# -- comparison ---------------------------------------------------------------------------------

def _b64(text):
    return None if text is None else base64.b64decode(text)


def dump_records(paths) -> list[tuple]:
    """Rows from ``seglog dump --deep-iteration --format jsonl --payload-encoding base64``."""
    result = run_seglog("dump", "--deep-iteration", "--format", "jsonl", "--payload-encoding", "base64",
                        "--no-progress", *[str(p) for p in paths])
    assert result.exit_code in (0, 1), result.err
    rows, valid = [], None
    for line in result.out.splitlines():
        obj = json.loads(line)
        if obj["type"] == "batch":
            valid = obj["isvalid"]
        elif obj["type"] == "record":
            timestamp = obj["timestamp"] if abs(obj["timestamp"]) <= MAX_TIMESTAMP_MS else None  # Spark's range
            rows.append((obj["topic"], obj["partition"], obj["segment"], obj["position"], obj["offset"],
                         timestamp, obj["timestampType"], _b64(obj["key"]), _b64(obj["value"]),
                         tuple((h["key"], _b64(h["value"])) for h in obj["headers"]),
                         obj["baseOffset"], obj["producerId"], obj["producerEpoch"], obj["isTransactional"],
                         obj["isControl"], obj["compression"], valid))
    return rows


def dump_batches(paths) -> list[tuple]:
    """Batch rows from ``seglog dump --format jsonl``."""
    result = run_seglog("dump", "--format", "jsonl", "--no-progress", *[str(p) for p in paths])
    assert result.exit_code in (0, 1), result.err
    rows = []
    for line in result.out.splitlines():
        obj = json.loads(line)
        if obj["type"] == "batch":
            rows.append((Path(obj["path"]).name, obj["position"], obj.get("baseOffset"),
                         obj.get("lastOffset", obj.get("offset")), obj.get("count"), obj["timestampType"],
                         obj["maxTimestamp"], obj["size"], obj["magic"], obj["compresscodec"], obj["crc"],
                         obj["isvalid"], obj.get("deleteHorizonMs"),
                         *(obj.get(name) for name in BATCH_V2_FIELDS)))
    return rows


def arrow_records(table) -> list[tuple]:
    """The same rows from an Arrow table of the ``seglog`` schema (timestamps back to epoch ms)."""
    import pyarrow as pa

    table = table.set_column(table.schema.get_field_index("timestamp"), "timestamp",
                             table.column("timestamp").cast(pa.int64()))
    out = []
    for row in table.to_pylist():
        out.append((row["topic"], row["partition"], row["segment"], row["position"], row["offset"],
                    None if row["timestamp"] is None else row["timestamp"] // 1000, row["timestampType"], row["key"], row["value"],
                    tuple((h["key"], h["value"]) for h in row["headers"]), row["baseOffset"], row["producerId"],
                    row["producerEpoch"], row["isTransactional"], row["isControl"], row["compression"],
                    row["isValid"]))
    return out


def arrow_batches(table) -> list[tuple]:
    return [(row["segment"], row["position"], row["baseOffset"], row["lastOffset"], row["count"],
             row["timestampType"], row["maxTimestamp"], row["size"], row["magic"], row["compression"],
             row["crc"], row["isValid"], row["deleteHorizonMs"], *(row[name] for name in BATCH_V2_FIELDS))
            for row in table.to_pylist()]


def log_partition_dirs(root: Path) -> list[Path]:
    """Partition directories under ``root`` that hold at least one ``.log`` segment."""
    from seglog_cli.storage.log.partition_log import partition_dirs_under

    # segments named as Kafka names them: the corpus's metadata/*/node-logs/broker-N dirs (named
    # like partitions) hold the brokers' server.log files
    return [d for d in partition_dirs_under(root) if any(p.suffix == ".log" and p.stem.isdigit() for p in d.iterdir())]


def make_partition(directory: Path, size_mb: float, compression: str = "none", one_record: bool = False) -> dict:
    """A generated partition directory with one segment and the indexes recovery writes."""
    from tests.benchmarks.make_segment import write_segment

    meta = write_segment(directory / "00000000000000000000.log", int(size_mb * 1024 * 1024),
                         compression=compression, one_record=one_record)
    # the backups beside the log dir, never inside it (seglog refuses that)
    result = run_seglog("rebuild-index", "--apply", "--backup-dir", str(directory.parent.parent / "backups"),
                        str(directory))
    assert result.exit_code == 0, result.err
    return meta
