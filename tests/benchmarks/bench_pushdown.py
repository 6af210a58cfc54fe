"""The speed-up of a filtered ``where()`` with pushdown (``register(spark, pushdown=True)``)
over the same query on the default registration, where Spark reads every split and filters
the rows itself; one local[2] session, both queries, the same rows.

The log dir: ``--partitions`` partitions (default 4) of one ``--segment-mb`` segment each
(default 256 MiB, indexed as Kafka's recovery indexes it; the same ``.log`` hard-linked). The
query: ``topic = 'big' and partition = 1 and offset between X and X + --records - 1`` with X
in the middle of the partition (an ``.index`` entry's offset), as a consumer replaying a range
would. Each query is loaded afresh (pushdown keeps a filtered plan on its DataFrame), counted
once untimed, then timed (best of ``--repeat``, wall seconds of ``collect()`` of the offsets);
the input partitions each plans (``getNumPartitions``) are reported too.

    python tests/benchmarks/bench_pushdown.py --json bench-pushdown.json
    python tests/benchmarks/bench_pushdown.py --segment-mb 600 --partitions 8
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks import bench_spark  # noqa: E402
from tests.benchmarks.bench_plan import big_segments  # noqa: E402

TOPIC = "big"


def query_bounds(log_dir: str, records: int, partition: int = 1) -> tuple[int, int]:
    """X and X + records - 1, X the offset of the middle ``.index`` entry of the partition."""
    from seglog_cli.storage.log.indexes import OffsetIndex

    index = Path(log_dir) / f"{TOPIC}-{partition}" / "00000000000000000000.index"
    with OffsetIndex(index, 0) as entries:
        count = entries.dump_entry_count()
        low = entries.entry(count // 2).offset if count else 0
    return low, low + records - 1


def where_clause(low: int, high: int, partition: int = 1) -> str:
    return f"topic = '{TOPIC}' and partition = {partition} and offset between {low} and {high}"


def planned_splits(log_dir: str, low: int, high: int, partition: int = 1) -> dict:
    """Splits planned without Spark (no JVM): all of them, and those the pushed filters leave
    (the filters Spark hands ``pushFilters`` for :func:`where_clause`)."""
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, LessThanOrEqual

    from seglog_cli.spark.plan import ScanOptions, plan_splits
    from seglog_cli.spark.source import push_filters

    options = ScanOptions()
    pushed, remaining = push_filters(options, [
        EqualTo(("topic",), TOPIC), EqualTo(("partition",), partition),
        GreaterThanOrEqual(("offset",), low), LessThanOrEqual(("offset",), high)])
    return {"all": plan_splits([log_dir], options), "pushed": plan_splits([log_dir], pushed),
            "options": pushed, "remaining": remaining}


def step_spark(log_dir: str, records: int, repeat: int) -> dict:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from seglog_cli.spark import register

    low, high = query_bounds(log_dir, records)
    clause = where_clause(low, high)
    spark = (SparkSession.builder.master("local[2]").appName("seglog-bench-pushdown")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "1g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    out = {"where": clause}
    try:
        for name, pushdown in (("full_scan", False), ("pushdown", True)):
            register(spark, pushdown=pushdown)

            def query():
                return spark.read.format("seglog").load(log_dir).where(clause).select("offset")

            frame = query()
            run = {"input_partitions": frame.rdd.getNumPartitions(), "records": frame.count()}  # + warm-up
            best, offsets = None, None
            for _ in range(repeat):
                started = time.perf_counter()
                offsets = [row.offset for row in query().collect()]
                seconds = time.perf_counter() - started
                best = seconds if best is None else min(best, seconds)
            run.update(seconds=best, first=min(offsets, default=None), last=max(offsets, default=None))
            out[name] = run
    finally:
        spark.stop()
    return out


def run_step(argv: list[str]) -> dict:
    return bench_spark.run_step(argv, script=__file__)


def report(args) -> dict:
    root = Path(args.cache_dir)
    root.mkdir(parents=True, exist_ok=True)
    log_dir = str(big_segments(root, args.partitions, args.segment_mb))
    low, high = query_bounds(log_dir, args.records)
    planned = planned_splits(log_dir, low, high)
    result = run_step(["--step", log_dir, "--records", str(args.records), "--repeat", str(args.repeat)])
    full, pushed = result["full_scan"], result["pushdown"]
    out = {"log_dir": log_dir, "where": result["where"], "partitions": args.partitions,
           "segment_mb": args.segment_mb, "splits_all": len(planned["all"]),
           "splits_pushed": len(planned["pushed"]), "full_scan": full, "pushdown": pushed,
           "same_rows": full["records"] == pushed["records"] == args.records
           and (full["first"], full["last"]) == (pushed["first"], pushed["last"]),
           "speedup_pushdown_vs_full_scan": full["seconds"] / pushed["seconds"] if pushed["seconds"] else None}
    if not args.quiet:
        print(f"where {out['where']}  ({args.partitions} partitions x {args.segment_mb} MiB)")
        for name in ("full_scan", "pushdown"):
            run = out[name]
            print(f"{name:<10} {run['seconds']:8.2f} s  {run['records']:>8} rows  {run['input_partitions']:>4} input partitions")
        print(f"speedup_pushdown_vs_full_scan: {out['speedup_pushdown_vs_full_scan']:.1f}x  same rows: {out['same_rows']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return out


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=4, help="partitions of one segment each (default 4)")
    parser.add_argument("--segment-mb", type=int, default=256, help="segment size in MiB (default 256)")
    parser.add_argument("--records", type=int, default=1000, help="records the where() selects (default 1000)")
    parser.add_argument("--cache-dir", default=os.environ.get("SEGLOG_BENCH_DIR", "/tmp/seglog-bench") + "/plan")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per query; the best is kept")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--step", metavar="LOG_DIR", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.step:
        result = step_spark(args.step, args.records, args.repeat)
        print(json.dumps(result))
        return result
    return report(args)


if __name__ == "__main__":
    main()
