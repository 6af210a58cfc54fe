"""How fast ``seglog verify`` checks big segments, against baselines measured in the same run.

Each generated segment (``make_segment.py``, cached in ``--cache-dir``) becomes a partition
directory with the ``.index`` and ``.timeindex`` Kafka would have written for it (seglog's
segment writer, replaying the batches one append at a time), and a log dir holding two such
partitions (hard links) for ``--jobs``. Every step runs in a fresh process, best of
``--repeat``, page cache warm. Peak RSS is the step process's own ``VmHWM`` (``os.wait4``'s
figure would include the parent's pages at fork time, so the partitions are also built in a
child process and the orchestrator stays small):

    crc_all            CRC-32C (the ``crc32c`` package) of the whole mmap'd ``.log``: the floor
    kafka_python_crc   kafka-python's ``MemoryRecords`` over 1 MiB windows, ``validate_crc()``
                       of every batch (its CRC validation, records not decoded)
    kafka_python       the same, every record decoded (key, value, headers touched)
    verify_shallow     ``verify([partition], level="shallow")`` in process: framing, CRC,
                       offsets, the offset and time index checked against the log, snapshots
    verify_deep        the same at ``level="deep"``: every record decompressed and decoded
    jobs1_shallow ...  ``verify([log dir of 2 partitions], jobs=1|2)`` at both levels
    crc2_jobs1/2       CRC-32C of both partitions' ``.log`` in one process, then in two (the same
                       scheduler as ``--jobs``): the speed-up the machine's memory allows at all
    cli_shallow        ``seglog verify --format json PARTITION > /dev/null``, wall (start-up incl.)

Goals (issue 3), from the in-process times (the CLI's start-up is shown beside them):

* shallow verify >= 40 % of the raw crc32c throughput on ~3 KB batches (``multi-none``);
* shallow verify >= 3x kafka-python's CRC validation on one-record batches (``one-none``);
* deep verify >= 2.5x kafka-python's decode rate (every variant);
* ``--jobs 2`` on two partitions >= 1.7x one job (both levels, every variant);
* memory flat: verify's peak RSS grows by < 16 MB from 256 MiB to 1 GiB and stays < 150 MB.

Usage (from the repository root)::

    python tests/benchmarks/bench_verify.py --sizes 256,1024 --json bench-verify.json

Not a test: nothing here asserts a time. ``test_bench_smoke.py`` only checks it still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks import bench_dump  # noqa: E402

MIB = bench_dump.MIB
MIN_SEGMENT_MIB = bench_dump.MIN_SEGMENT_MIB
DEFAULT_VARIANTS = ("multi-none", "one-none", "multi-lz4")
GOAL_SHALLOW_VS_CRC = 0.40
GOAL_ONE_RECORD_VS_KAFKA_CRC = 3.0
GOAL_DEEP_VS_KAFKA = 2.5
GOAL_JOBS2_SPEEDUP = 1.7
GOAL_RSS_GROWTH_MB = 16
GOAL_PEAK_RSS_MB = 150
LOG_STEPS = ("crc_all", "kafka_python_crc", "kafka_python")
PARTITION_STEPS = ("verify_shallow", "verify_deep", "cli_shallow")
LOG_DIR_STEPS = ("jobs1_shallow", "jobs2_shallow", "jobs1_deep", "jobs2_deep", "crc2_jobs1", "crc2_jobs2")
ALL_STEPS = LOG_STEPS + PARTITION_STEPS + LOG_DIR_STEPS
VERIFY_STEPS = ("verify_shallow", "verify_deep", "jobs1_shallow", "jobs2_shallow", "jobs1_deep", "jobs2_deep")


# -- the measured steps ------------------------------------------------------------------------

def step_crc_all(path: str) -> dict:
    return bench_dump.step_crc_all(path)


def step_kafka_python(path: str) -> dict:
    return bench_dump.step_kafka_python(path)


def step_kafka_python_crc(path: str, window: int = MIB) -> dict:
    """kafka-python's CRC validation of every batch (what its consumer's check_crcs does)."""
    started = time.perf_counter()
    batches = 0
    crc_ok = True
    for batch in bench_dump.kafka_python_batches(path, window):
        crc_ok &= batch.validate_crc()
        batches += 1
    return {"seconds": time.perf_counter() - started, "batches": batches, "crc_ok": crc_ok}


def _verify(path: str, level: str, jobs: int = 1) -> dict:
    from seglog_cli.storage.verify.verify import VerifyOptions, verify

    started = time.perf_counter()
    report = verify([path], VerifyOptions(level=level, jobs=jobs))
    seconds = time.perf_counter() - started
    summary = report.as_dict()["summary"]
    return {"seconds": seconds, "status": report.status, "batches": summary["batches"],
            "records": summary["records"], "bytes": summary["bytes"], "errors": summary["errors"],
            "warnings": summary["warnings"]}


def step_verify_shallow(path: str) -> dict:
    return _verify(path, "shallow")


def step_verify_deep(path: str) -> dict:
    return _verify(path, "deep")


def step_jobs1_shallow(path: str) -> dict:
    return _verify(path, "shallow", 1)


def step_jobs2_shallow(path: str) -> dict:
    return _verify(path, "shallow", 2)


def step_jobs1_deep(path: str) -> dict:
    return _verify(path, "deep", 1)


def step_jobs2_deep(path: str) -> dict:
    return _verify(path, "deep", 2)


def _crc_logs(log_dir: str, jobs: int) -> dict:
    from seglog_cli.storage.log.parallel import parallel_map

    logs = sorted(str(p) for p in Path(log_dir).glob("*/*.log"))
    started = time.perf_counter()
    crcs = parallel_map(lambda path: step_crc_all(path)["crc"], logs, jobs)
    return {"seconds": time.perf_counter() - started, "files": len(logs), "crcs": crcs}


def step_crc2_jobs1(path: str) -> dict:
    return _crc_logs(path, 1)


def step_crc2_jobs2(path: str) -> dict:
    return _crc_logs(path, 2)


def print_step(function, argument) -> dict:
    """The child side of :func:`measure_step`: run one step, print its result with this
    process's peak RSS as one JSON line."""
    result = function(argument)
    result["own_peak_rss_mb"] = own_peak_rss_mb()
    print(json.dumps(result))
    return {}


def own_peak_rss_mb() -> float | None:
    """This process's high-water RSS since its exec (``VmHWM``), in MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


STEP_FUNCTIONS = {name: globals()[f"step_{name}"] for name in ALL_STEPS if name != "cli_shallow"}


def measure_once(step: str, path: str) -> dict:
    if step == "cli_shallow":
        run = bench_dump.run_process(bench_dump.seglog_command() + ["verify", "--format", "json", path])
        if run["returncode"] != 0:
            raise RuntimeError(f"seglog verify failed ({run['returncode']}): {run['stderr'][-2000:]}")
        return {"seconds": run["wall"], "wall": run["wall"], "peak_rss_mb": run["peak_rss_mb"]}
    return measure_step(__file__, step, path)


def run_json(argv: list[str], what: str) -> tuple[dict, dict]:
    """``argv`` in a fresh process that prints one JSON document: (the document, the run)."""
    with tempfile.TemporaryFile() as out:
        run = bench_dump.run_process(argv, stdout=out)
        if run["returncode"] != 0:
            raise RuntimeError(f"{what} failed ({run['returncode']}): {run['stderr'][-2000:]}")
        out.seek(0)
        return json.loads(out.read()), run


def measure_step(script: str, step: str, argument: str) -> dict:
    """``script --step STEP ARGUMENT`` in a fresh process: its JSON result, wall time and own
    peak RSS."""
    result, run = run_json([sys.executable, str(Path(script).resolve()), "--step", step, argument], step)
    own = result.pop("own_peak_rss_mb", None)
    result.update(wall=run["wall"], peak_rss_mb=own if own is not None else run["peak_rss_mb"])
    return result


def measure(plan: list[tuple[str, str]], repeat: int, once=None) -> dict:
    """Best of ``repeat`` runs of each (step, path) by ``once`` (default :func:`measure_once`)."""
    return bench_dump.best_of(plan, repeat, once or measure_once)


# -- partition directories -----------------------------------------------------------------------

def partition_dirs(meta: dict) -> tuple[str, str]:
    """(partition dir, log dir of two partitions) for a cached segment, built once."""
    from seglog_cli.storage.log.batches import LogScan
    from seglog_cli.storage.log.files import MappedFile
    from seglog_cli.storage.write.writer import SegmentConfig, SegmentWriter

    log = Path(meta["path"])
    log_dir = log.parent / "logdir"
    first, second = log_dir / "bench-0", log_dir / "bench-1"
    names = ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex")
    if all((second / name).is_file() for name in names):
        return str(first), str(log_dir)
    shutil.rmtree(log_dir, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=log.parent) as scratch:
        writer = SegmentWriter(scratch, 0, SegmentConfig(segment_bytes=1 << 31))
        with MappedFile(log) as mapped:
            for batch in LogScan(mapped):
                writer.append(bytes(mapped.view[batch.position:batch.end_position]))
        writer.close()
        for directory in (first, second):
            directory.mkdir(parents=True)
            os.link(log, directory / names[0])
            for name in names[1:]:
                shutil.copyfile(Path(scratch) / name, directory / name)
    return str(first), str(log_dir)


def prepared_partition_dirs(meta: dict) -> tuple[str, str]:
    """:func:`partition_dirs` in a child process, so its pages never count in a step's RSS."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--prepare", json.dumps(meta)],
                          capture_output=True, text=True, check=True)
    partition, log_dir = json.loads(done.stdout)
    return partition, log_dir


# -- results -----------------------------------------------------------------------------------

def ratios(meta: dict, steps: dict) -> dict:
    batches, records, size = meta["batches"], meta["records"], meta["size_bytes"]
    out = {}

    def rate(step, count):
        return count / steps[step]["seconds"] if step in steps else None

    out["crc_all_mb_per_s"] = rate("crc_all", size / MIB)
    out["verify_shallow_mb_per_s"] = rate("verify_shallow", size / MIB)
    out["verify_shallow_batches_per_s"] = rate("verify_shallow", batches)
    out["kafka_python_crc_batches_per_s"] = rate("kafka_python_crc", batches)
    out["verify_deep_records_per_s"] = rate("verify_deep", records)
    out["kafka_python_records_per_s"] = rate("kafka_python", records)
    if out["crc_all_mb_per_s"] and out["verify_shallow_mb_per_s"]:
        out["shallow_vs_crc"] = out["verify_shallow_mb_per_s"] / out["crc_all_mb_per_s"]
    if out["kafka_python_crc_batches_per_s"] and out["verify_shallow_batches_per_s"]:
        out["shallow_vs_kafka_python_crc"] = out["verify_shallow_batches_per_s"] / out["kafka_python_crc_batches_per_s"]
    if out["kafka_python_records_per_s"] and out["verify_deep_records_per_s"]:
        out["deep_vs_kafka_python"] = out["verify_deep_records_per_s"] / out["kafka_python_records_per_s"]
    if "cli_shallow" in steps and out["crc_all_mb_per_s"]:
        out["cli_shallow_vs_crc"] = size / MIB / steps["cli_shallow"]["wall"] / out["crc_all_mb_per_s"]
    if "crc2_jobs1" in steps and "crc2_jobs2" in steps:
        out["crc2_jobs2_speedup"] = steps["crc2_jobs1"]["seconds"] / steps["crc2_jobs2"]["seconds"]
    for level in ("shallow", "deep"):
        one, two = steps.get(f"jobs1_{level}"), steps.get(f"jobs2_{level}")
        if one and two:
            out[f"jobs2_speedup_{level}"] = one["seconds"] / two["seconds"]
    out["verify_peak_rss_mb"] = max((steps[s]["peak_rss_mb"] for s in VERIFY_STEPS if s in steps), default=None)
    return {key: value for key, value in out.items() if value is not None}


def check_counts(result: dict) -> list[str]:
    meta, steps = result["segment"], result["steps"]
    problems = []
    for step in VERIFY_STEPS:
        if step not in steps:
            continue
        partitions = 2 if step.startswith("jobs") else 1
        if steps[step]["status"] != "clean":
            problems.append(f"{step}: status {steps[step]['status']}")
        if steps[step]["batches"] != partitions * meta["batches"]:
            problems.append(f"{step} saw {steps[step]['batches']} batches, expected {partitions * meta['batches']}")
        if step.endswith("deep") and steps[step]["records"] != partitions * meta["records"]:
            problems.append(f"{step} saw {steps[step]['records']} records")
    for step in ("kafka_python", "kafka_python_crc"):
        if step in steps and not steps[step].get("crc_ok", True):
            problems.append(f"{step} found a CRC mismatch")
    return problems


def goals(results: list[dict]) -> dict:
    def worst(key, shape=None, codec=None, highest=False):
        values = [r["ratios"][key] for r in results if key in r["ratios"]
                  and (shape is None or r["segment"]["shape"] == shape)
                  and (codec is None or r["segment"]["compression"] == codec)]
        return (max if highest else min)(values, default=None)

    rss_by_size: dict[float, float] = {}
    for r in results:
        size = round(r["segment"]["size_bytes"] / MIB)
        if "verify_peak_rss_mb" in r["ratios"]:
            rss_by_size[size] = max(rss_by_size.get(size, 0.0), r["ratios"]["verify_peak_rss_mb"])
    growth = (rss_by_size[max(rss_by_size)] - rss_by_size[min(rss_by_size)]) if len(rss_by_size) > 1 else None
    table = {
        "shallow_vs_crc_3kb_batches": (worst("shallow_vs_crc", "multi", "none"), GOAL_SHALLOW_VS_CRC),
        "shallow_vs_kafka_python_crc_one_record": (worst("shallow_vs_kafka_python_crc", "one-record"),
                                                   GOAL_ONE_RECORD_VS_KAFKA_CRC),
        "deep_vs_kafka_python": (worst("deep_vs_kafka_python"), GOAL_DEEP_VS_KAFKA),
        "jobs2_speedup_shallow": (worst("jobs2_speedup_shallow"), GOAL_JOBS2_SPEEDUP),
        "jobs2_speedup_deep": (worst("jobs2_speedup_deep"), GOAL_JOBS2_SPEEDUP),
    }
    out = {name: {"goal": goal, "worst": value, "met": value is not None and value >= goal}
           for name, (value, goal) in table.items()}
    peak = worst("verify_peak_rss_mb", highest=True)
    out["peak_rss_mb"] = {"goal": GOAL_PEAK_RSS_MB, "worst": peak, "met": peak is not None and peak < GOAL_PEAK_RSS_MB}
    out["rss_growth_mb"] = {"goal": GOAL_RSS_GROWTH_MB, "worst": growth,
                            "met": growth is not None and growth < GOAL_RSS_GROWTH_MB,
                            "by_size_mib": rss_by_size}
    return out


_fmt = bench_dump.fmt


def print_table(results: list[dict], goal_status: dict, file=sys.stdout) -> None:
    columns = (("segment", 16, None), ("MiB", 5, None), ("crc MB/s", 8, "crc_all_mb_per_s"),
               ("shal MB/s", 9, "verify_shallow_mb_per_s"), ("shal/crc", 8, "shallow_vs_crc"),
               ("cli/crc", 7, "cli_shallow_vs_crc"), ("shal kb/s", 9, "verify_shallow_batches_per_s"),
               ("kpcrc kb/s", 10, "kafka_python_crc_batches_per_s"), ("x", 5, "shallow_vs_kafka_python_crc"),
               ("deep kr/s", 9, "verify_deep_records_per_s"), ("kp kr/s", 7, "kafka_python_records_per_s"),
               ("x", 5, "deep_vs_kafka_python"), ("j2 shal", 7, "jobs2_speedup_shallow"),
               ("j2 deep", 7, "jobs2_speedup_deep"), ("j2 crc", 6, "crc2_jobs2_speedup"),
               ("RSS", 5, "verify_peak_rss_mb"))
    print(" ".join(f"{name:>{width}}" for name, width, _ in columns), file=file)
    for result in results:
        meta, r = result["segment"], result["ratios"]
        cells = [f"{meta['shape'] + '-' + meta['compression']:>16}", f"{meta['size_bytes'] / MIB:>5.0f}"]
        for _name, width, key in columns[2:]:
            value = r.get(key)
            scale, digits = ((1e3, 0) if key.endswith("_per_s") and not key.endswith("mb_per_s")
                             else (1, 0) if key.endswith("mb_per_s") or key.endswith("_mb") else (1, 2))
            cells.append(f"{_fmt(value, scale, digits):>{width}}")
        print(" ".join(cells), file=file)
    print("kb/s = thousand batches/s, kr/s = thousand records/s; shal/crc and x are throughput ratios "
          "(in process); cli/crc includes seglog's start-up; j2 = jobs 1 time / jobs 2 time (j2 crc: bare crc32c, the "
          "machine's ceiling); RSS in MB.",
          file=file)
    bench_dump.print_goals(goal_status, file)


# -- command line ----------------------------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    parser = bench_dump.segment_parser(__doc__, "256,1024", DEFAULT_VARIANTS, ALL_STEPS)
    parser.add_argument("--prepare", metavar="META_JSON", help=argparse.SUPPRESS)
    return bench_dump.segment_args(parser, parser.parse_args(argv), ALL_STEPS)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.step:
        name, path = args.step
        return print_step(STEP_FUNCTIONS[name], path)
    if args.prepare:
        print(json.dumps(partition_dirs(json.loads(args.prepare))))
        return {}
    cache_dir = Path(args.cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    log = bench_dump.progress(args.quiet)
    results = []
    for size in args.sizes:
        for variant in args.variants:
            meta = bench_dump.cached_segment(cache_dir, variant, size, args.seed)
            partition, log_dir = prepared_partition_dirs(meta)
            log(f"{partition}: {meta['size_bytes'] / MIB:.0f} MiB, {meta['batches']} batches, {meta['records']} records")
            bench_dump.measure_once("read", meta["path"])  # warm the page cache
            target = {step: meta["path"] if step in LOG_STEPS else partition if step in PARTITION_STEPS else log_dir
                      for step in args.steps}
            load_before = os.getloadavg()
            steps = measure([(step, target[step]) for step in args.steps], args.repeat)
            result = {"segment": meta, "partition": partition, "log_dir": log_dir, "steps": steps,
                      "ratios": ratios(meta, steps),
                      "load_average": {"before": load_before, "after": os.getloadavg()}}
            result["problems"] = check_counts(result)
            for problem in result["problems"]:
                log(f"  PROBLEM: {problem}")
            results.append(result)
    report = {
        "machine": bench_dump.machine_info(),
        "settings": {"repeat": args.repeat, "sizes_mib": args.sizes, "variants": args.variants,
                     "steps": list(args.steps), "cache_dir": str(cache_dir)},
        "results": results,
        "goals": goals(results),
    }
    return bench_dump.finish_report(report, args, print_table)


if __name__ == "__main__":
    main()
