"""The ``seglog`` Spark data source against the plain engine, on the same files, in the same run.

A log dir with one partition holding one big segment (``--segment-mb``, default 600, from
``make_segment.py``, uncompressed batches unless ``--compression`` names a codec, with the
indexes Kafka's recovery writes) is read by:

    engine       one plain Python process: LogScan + read_records over the segment, touching
                 key, value and headers (the engine's own record loop; records/s)
    reader       one plain Python process: the data source's reader without Spark
                 (plan_splits + columns.record_batches into Arrow batches): the adapter's cost
    spark[N]     ``spark.read.format("seglog").load(dir).write.format("noop")`` (every column
                 of every row materialised in the JVM) in a local[N] session, N = 1 and 2;
                 the query only, session start-up excluded, best of ``--repeat``
    parquet[N]   the same rows written once to Parquet and read back with the noop sink in the
                 same session: what the JVM alone spends on these rows (a floor no Python
                 source can go under)
    passthrough[N]  the same rows (``plan_splits`` + ``columns.record_batches`` with the default
                 ``ScanOptions``, so the source's own Arrow batch sizes) written once, before the
                 Spark steps, to Arrow IPC files, one per input split, then read in the same
                 session through a minimal Python Data Source (``passthrough_source.py``) whose
                 partitions are those files and whose ``read()`` memory-maps one and yields its
                 batches unchanged, with the noop sink as spark[N]: what any Python source with
                 seglog's record schema pays in Spark whatever its decoder (the Python source
                 floor); spark[N] minus this is what seglog's own reading adds

CPU-seconds are the whole process tree's (the JVM, the Python driver and the Python workers,
from /proc/<pid>/stat before and after the query; plain steps: the process's own rusage).
The CPU goal compares CPU-seconds per million records (spark[2] / engine, goal <= 1.3);
``adapter_cpu_per_record_vs_engine`` is (spark[2] - passthrough[2]) / engine in CPU-seconds per
million records: what seglog's reading adds over the Python source floor. The IPC files live in
a temporary directory under ``<--cache-dir>/tmp`` (``SEGLOG_BENCH_DIR``), removed afterwards. The
scaling line compares spark[1] and spark[2] wall times. Each Python worker's peak RSS
(VmHWM) is read after the query, with the number of input partitions the segment was cut
into (goal: more than one; worker memory under 400 MB).

Usage (from the repository root, with the spark extra installed and Java 17+)::

    python tests/benchmarks/bench_spark.py --segment-mb 600 --json bench-spark.json
    python tests/benchmarks/bench_spark.py --segment-mb 600 --compression zstd

Not a test: nothing asserts a time. Numbers on a shared machine are noisy: ratios are within
one run and every step is the best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.bench_dump import fmt, machine_info, progress  # noqa: E402

MIB = 1024 * 1024
GOAL_CPU_RATIO = 1.3
GOAL_WORKER_RSS_MB = 400
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def step_engine(log_dir: str) -> dict:
    from seglog_cli.spark.plan import ScanOptions, plan_splits
    from seglog_cli.storage.log.batches import LogScan
    from seglog_cli.storage.log.files import MappedFile
    from seglog_cli.storage.log.records import read_records

    paths = sorted({split.path for split in plan_splits([log_dir], ScanOptions(split_bytes=0))})
    cpu, started = _cpu(), time.perf_counter()
    records = payload = 0
    for path in paths:
        with MappedFile(path) as mapped:
            buf = mapped.buffer
            for batch in LogScan(mapped):
                for record in read_records(buf, batch, path):
                    key, value, headers = record.key, record.value, record.headers
                    records += 1
                    payload += (len(key) if key is not None else 0) + (len(value) if value is not None else 0)
    return {"seconds": time.perf_counter() - started, "cpu": _cpu() - cpu, "records": records}


def step_reader(log_dir: str) -> dict:
    import pyarrow  # noqa: F401  (imported before the clock, as a Spark worker has it)

    from seglog_cli.spark.columns import record_batches
    from seglog_cli.spark.plan import ScanOptions, plan_splits

    options = ScanOptions()
    next(iter(record_batches(plan_splits([log_dir], options)[0], options)), None)  # pyarrow's lazy imports
    cpu, started = _cpu(), time.perf_counter()
    records = 0
    splits = plan_splits([log_dir], options)
    for split in splits:
        for batch in record_batches(split, options):
            records += batch.num_rows
    return {"seconds": time.perf_counter() - started, "cpu": _cpu() - cpu, "records": records,
            "splits": len(splits)}


def write_passthrough_files(log_dir: str, directory: str) -> dict:
    """The rows the ``seglog`` source returns for ``log_dir`` (default options), as Arrow IPC files
    in ``directory``: one per input split, holding that split's record batches as the reader cut
    them. Read back by ``passthrough_source.py``."""
    import pyarrow as pa

    from seglog_cli.spark.columns import RECORD_SCHEMA, record_batches
    from seglog_cli.spark.plan import ScanOptions, plan_splits

    options = ScanOptions()
    splits = plan_splits([log_dir], options)
    records = 0
    for index, split in enumerate(splits):
        with pa.OSFile(str(Path(directory) / f"split-{index:05d}.arrow"), "wb") as sink, \
                pa.ipc.new_file(sink, RECORD_SCHEMA) as writer:
            for batch in record_batches(split, options):
                writer.write_batch(batch)
                records += batch.num_rows
    return {"files": len(splits), "records": records}


def _tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _tree_cpu(root: int) -> float:
    total = 0
    for pid in _tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (children not reaped are not counted)
    return total / TICKS


def _python_workers(root: int) -> list[dict]:
    workers = []
    for pid in _tree(root):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if "pyspark.daemon" in cmdline or "pyspark.worker" in cmdline:
            peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
            workers.append({"pid": pid, "peak_rss_mb": peak / 1024})
    return workers


def step_spark(log_dir: str, cores: int, repeat: int, passthrough: str | None = None) -> dict:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    # the Python workers import tests.benchmarks.passthrough_source: the repository root on their path
    root = str(Path(__file__).resolve().parents[2])
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    from pyspark.sql import SparkSession

    from seglog_cli.spark import register
    from tests.benchmarks.passthrough_source import PassthroughDataSource

    spark = (SparkSession.builder.master(f"local[{cores}]").appName("seglog-bench")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    try:
        frame = spark.read.format("seglog").load(log_dir)
        partitions = frame.rdd.getNumPartitions()
        records = frame.count()  # also the warm-up: JIT, Python workers started
        best = _best_noop(frame, repeat)
        workers = _python_workers(os.getpid())
        with tempfile.TemporaryDirectory(dir=os.environ.get("SEGLOG_BENCH_DIR", "/tmp")) as parquet:
            frame.write.mode("overwrite").parquet(parquet)  # the same rows, for the JVM-only floor
            floor = _best_noop(spark.read.parquet(parquet), repeat)
        if passthrough:  # the same rows from IPC files through a Python source that only hands them on
            spark.dataSource.register(PassthroughDataSource)
            files = spark.read.format("seglog-passthrough").load(passthrough)
            through = {"partitions": files.rdd.getNumPartitions(), "records": files.count()}  # + warm-up
            through.update(_best_noop(files, repeat))
    finally:
        spark.stop()
    result = {**best, "records": records, "partitions": partitions, "cores": cores,
              "worker_peak_rss_mb": max((w["peak_rss_mb"] for w in workers), default=None),
              "workers": len(workers), "parquet_floor": floor}
    if passthrough:
        result["passthrough"] = through
    return result


def _best_noop(frame, repeat: int) -> dict:
    """Every column of every row materialised (the noop sink), best of ``repeat``; CPU of the
    whole process tree. One untimed run first: ``count()`` does not convert the rows, so the
    JVM's code for this plan's row conversion is only compiled (JIT) by a full run, and each
    source must get its own, or the one measured first pays for it."""
    frame.write.format("noop").mode("overwrite").save()
    best = None
    for _ in range(repeat):
        cpu, started = _tree_cpu(os.getpid()), time.perf_counter()
        frame.write.format("noop").mode("overwrite").save()
        run = {"seconds": time.perf_counter() - started, "cpu": _tree_cpu(os.getpid()) - cpu}
        best = run if best is None or run["seconds"] < best["seconds"] else best
    return best


def run_step(argv: list[str], script: str | Path = __file__) -> dict:
    """Run ``script`` (this one by default) with ``argv`` in a fresh process (a step of its own:
    a Spark session or a plain engine loop, measured alone); the JSON its last line prints."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.run([sys.executable, str(Path(script).resolve()), *argv], stdout=out, stderr=err)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"{argv} failed: {err.read().decode()[-3000:]}")
        return json.loads(out.read().decode().strip().splitlines()[-1])


def prepare(cache_dir: Path, size_mib: float, compression: str = "none") -> Path:
    """A log dir with one partition, one ``size_mib`` segment of ``compression`` batches and its
    indexes (cached)."""
    from tests.benchmarks.make_segment import write_segment

    codec = "" if compression == "none" else f"-{compression}"
    log_dir = cache_dir / f"spark-{size_mib:g}mib{codec}" / "logdir"
    partition = log_dir / "events-0"
    if not (partition / "00000000000000000000.index").is_file():
        write_segment(partition / "00000000000000000000.log", int(size_mib * MIB), compression=compression)
        subprocess.run([sys.executable, "-m", "seglog_cli", "rebuild-index", "--apply", "--backup-dir",
                        str(cache_dir / "backups"), str(partition)], check=True, stdout=subprocess.DEVNULL)
    return log_dir


def per_million(step: dict) -> float:
    return step["cpu"] / step["records"] * 1e6


def report(args) -> dict:
    log_dir = prepare(Path(args.cache_dir), args.segment_mb, args.compression)
    log = progress(args.quiet)
    steps: dict = {}
    for _ in range(args.repeat):  # rounds interleave the plain steps; best of each
        for name in ("engine", "reader"):
            log(f"{name} ...")
            run = run_step(["--step", name, str(log_dir)])
            if name not in steps or run["seconds"] < steps[name]["seconds"]:
                steps[name] = run
    tmp = Path(args.cache_dir) / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    ipc_dir = tempfile.mkdtemp(prefix="passthrough-", dir=tmp)
    try:
        log("passthrough IPC files ...")
        written = write_passthrough_files(str(log_dir), ipc_dir)
        for cores in (1, 2):
            log(f"spark local[{cores}] ...")
            steps[f"spark{cores}"] = run_step(["--step", "spark", str(log_dir), "--cores", str(cores),
                                               "--repeat", str(args.repeat), "--passthrough", ipc_dir])
    finally:
        shutil.rmtree(ipc_dir, ignore_errors=True)
    for cores in (1, 2):  # the same rows read from Parquet by the JVM alone, in the same session
        steps[f"parquet{cores}"] = {**steps[f"spark{cores}"].pop("parquet_floor"),
                                    "records": steps[f"spark{cores}"]["records"]}
    for cores in (1, 2):  # the same rows through a Python source that decodes nothing, same session
        steps[f"passthrough{cores}"] = steps[f"spark{cores}"].pop("passthrough")
        if steps[f"passthrough{cores}"]["partitions"] != written["files"]:
            raise RuntimeError(f"passthrough{cores}: {steps[f'passthrough{cores}']['partitions']} "
                               f"input partitions for {written['files']} IPC files")
    counts = {**{name: step["records"] for name, step in steps.items()}, "passthrough_files": written["records"]}
    if len(set(counts.values())) != 1:
        raise RuntimeError(f"record counts differ: {counts}")
    engine = steps["engine"]
    ratios = {
        "cpu_per_record_spark2_vs_engine": per_million(steps["spark2"]) / per_million(engine),
        "cpu_per_record_reader_vs_engine": per_million(steps["reader"]) / per_million(engine),
        "cpu_per_record_parquet2_vs_engine": per_million(steps["parquet2"]) / per_million(engine),
        # against what any source that hands the rows to the JVM pays at least: the engine's decode
        # plus the JVM materialising the same rows (read from Parquet, no Python)
        "cpu_per_record_spark2_vs_engine_plus_jvm_floor":
            per_million(steps["spark2"]) / (per_million(engine) + per_million(steps["parquet2"])),
        "records_per_s_spark2_vs_engine": (engine["seconds"] / steps["spark2"]["seconds"]),
        "speedup_local2_vs_local1": steps["spark1"]["seconds"] / steps["spark2"]["seconds"],
        # what any Python source with this schema costs (IPC batches handed on unchanged), vs the engine
        "cpu_per_record_passthrough2_vs_engine": per_million(steps["passthrough2"]) / per_million(engine),
        "cpu_per_record_spark2_vs_passthrough2": per_million(steps["spark2"]) / per_million(steps["passthrough2"]),
        # what seglog's own reading adds over that floor, in units of the plain engine
        "adapter_cpu_per_record_vs_engine":
            (per_million(steps["spark2"]) - per_million(steps["passthrough2"])) / per_million(engine),
    }
    goals = {
        "cpu_per_record": {"goal": GOAL_CPU_RATIO, "worst": ratios["cpu_per_record_spark2_vs_engine"],
                           "met": ratios["cpu_per_record_spark2_vs_engine"] <= GOAL_CPU_RATIO},
        "split": {"goal": 2, "worst": steps["spark2"]["partitions"], "met": steps["spark2"]["partitions"] >= 2},
        "worker_rss_mb": {"goal": GOAL_WORKER_RSS_MB,
                          "worst": max(steps[s]["worker_peak_rss_mb"] or 0 for s in ("spark1", "spark2")),
                          "met": max(steps[s]["worker_peak_rss_mb"] or 0 for s in ("spark1", "spark2"))
                          < GOAL_WORKER_RSS_MB},
    }
    result = {"machine": machine_info(), "segment_mb": args.segment_mb, "compression": args.compression,
              "log_dir": str(log_dir),
              "passthrough_files": written, "steps": steps, "ratios": ratios, "goals": goals}
    if not args.quiet:
        print_table(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


def print_table(result: dict) -> None:
    steps = result["steps"]
    print(f"segment {result['segment_mb']:g} MiB ({result['compression']}), {steps['engine']['records']} records, "
          f"{steps['spark2']['partitions']} input partitions; load average {result['machine']['load_average']}")
    print(f"{'step':<13}{'wall s':>9}{'records/s':>12}{'CPU s':>8}{'CPU s/M rec':>13}{'worker RSS MB':>15}")
    for name, step in steps.items():
        print(f"{name:<13}{fmt(step['seconds']):>9}{step['records'] / step['seconds']:>12,.0f}{fmt(step['cpu']):>8}"
              f"{fmt(per_million(step)):>13}{fmt(step.get('worker_peak_rss_mb'), digits=0):>15}")
    for name, value in result["ratios"].items():
        print(f"{name}: {value:.2f}")
    for name, goal in result["goals"].items():
        print(f"goal {name}: {fmt(goal['worst'])} vs {goal['goal']:g} -> {'MET' if goal['met'] else 'MISSED'}")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segment-mb", type=float, default=600.0, help="segment size in MiB (default 600)")
    parser.add_argument("--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"],
                        help="the batches' codec (default none)")
    parser.add_argument("--cache-dir", default=os.environ.get("SEGLOG_BENCH_DIR", "/tmp/seglog-bench"))
    parser.add_argument("--repeat", type=int, default=2, help="runs per step; the best is kept")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--step", nargs=1, metavar="LOG_DIR", help=argparse.SUPPRESS)
    parser.add_argument("step_dir", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--cores", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--passthrough", help=argparse.SUPPRESS)  # the spark step's IPC file dir
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.step:
        name, log_dir = args.step[0], args.step_dir
        if name == "spark":
            result = step_spark(log_dir, args.cores, args.repeat, args.passthrough)
        else:
            result = {"engine": step_engine, "reader": step_reader}[name](log_dir)
        print(json.dumps(result))
        return result
    return report(args)


if __name__ == "__main__":
    main()
