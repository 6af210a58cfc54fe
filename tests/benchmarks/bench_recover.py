"""How fast ``seglog recover`` plans a log dir, against a shallow verify of the same data in the same run.

The log dir (built once in ``--cache-dir``) holds ``--partitions`` partitions of ``--segments``
segments each, every segment ``--segment-mb`` MiB from ``make_segment.py`` (an idempotent
producer in every batch, so the producer state is replayed and snapshots are written), with the
``.index``/``.timeindex`` Kafka writes, no ``.kafka_cleanshutdown`` and a recovery point of 0 for
every partition: the worst start-up, where Kafka recovers every segment. Every step runs in a
fresh process, best of ``--repeat``, page cache warm:

    crc_all        CRC-32C of every ``.log`` over its mmap: the floor for anything that checks CRCs
    verify         ``verify([log_dir], level="shallow")``: headers, CRCs, indexes, checkpoints
    recover        ``plan_recover(partitions)``: what ``seglog recover`` computes (every segment
                   walked, indexes rebuilt and compared, producer state replayed, snapshots)
    cli_verify     ``seglog verify --format json LOG_DIR > /dev/null``, wall (start-up incl.)
    cli_recover    ``seglog recover --format json LOG_DIR > /dev/null``, wall (start-up incl.)

Goal (issue 5): recover costs at most 1.5x a shallow verify of the same data
(``recover_vs_verify`` = recover seconds / verify seconds <= 1.5).

Usage (from the repository root)::

    python tests/benchmarks/bench_recover.py --json bench-recover.json

Not a test: nothing here asserts a time. ``test_bench_smoke.py`` only checks it still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks import bench_dump, bench_verify  # noqa: E402

MIB = bench_dump.MIB
DEFAULT_VARIANTS = ("multi-none", "one-none")
GOAL_RATIO = 1.5
ENGINE_STEPS = ("crc_all", "verify", "recover")
CLI_STEPS = ("cli_verify", "cli_recover")
ALL_STEPS = ENGINE_STEPS + CLI_STEPS
LAYOUT_VERSION = 1


# -- the log dir -------------------------------------------------------------------------------------

def build_log_dir(target: Path, variant: str, partitions: int, segments: int, segment_mib: float,
                  seed: int) -> dict:
    """Write the log dir (see the module docstring); returns its metadata."""
    from seglog_cli.storage.log.checkpoints import TopicPartition, format_offset_checkpoint
    from seglog_cli.storage.log.files import MappedFile
    from seglog_cli.storage.log.naming import format_offset
    from seglog_cli.storage.write.rebuild_index import recover_indexes
    from tests.benchmarks import make_segment

    params = bench_dump.variant_params(variant)
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    totals = {"batches": 0, "records": 0, "size_bytes": 0}
    ends = {}
    for p in range(partitions):
        directory = target / f"bench-{p}"
        base = 0
        for s in range(segments):
            log = directory / f"{format_offset(base)}.log"
            meta = make_segment.write_segment(log, int(segment_mib * MIB), base_offset=base,
                                              seed=seed + p * segments + s, **params)
            with MappedFile(log) as mapped:
                rebuilt = recover_indexes(mapped, base)
            (directory / f"{format_offset(base)}.index").write_bytes(rebuilt.offset_index)
            (directory / f"{format_offset(base)}.timeindex").write_bytes(rebuilt.time_index)
            for key in totals:
                totals[key] += meta[key]
            base = meta["next_offset"]
        ends[TopicPartition("bench", p)] = base
    (target / "recovery-point-offset-checkpoint").write_bytes(
        format_offset_checkpoint({tp: 0 for tp in ends}))
    (target / "replication-offset-checkpoint").write_bytes(format_offset_checkpoint(ends))
    (target / "log-start-offset-checkpoint").write_bytes(format_offset_checkpoint({}))
    return {"layout_version": LAYOUT_VERSION, "variant": variant, "partitions": partitions,
            "segments": segments, "segment_mib": segment_mib, "seed": seed, "path": str(target), **totals}


def cached_log_dir(cache_dir: Path, variant: str, partitions: int, segments: int, segment_mib: float,
                   seed: int) -> dict:
    """The log dir for these settings, built in a child process the first time."""
    name = f"recover-v{LAYOUT_VERSION}-{variant}-{partitions}x{segments}x{segment_mib:g}-{seed}"
    target = cache_dir / name
    meta_path = cache_dir / (name + ".json")
    if meta_path.is_file() and target.is_dir():
        return json.loads(meta_path.read_text())
    settings = json.dumps([str(target), variant, partitions, segments, segment_mib, seed])
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--build", settings],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building {target} failed: {done.stderr[-2000:]}")
    meta_path.write_text(done.stdout)
    return json.loads(done.stdout)


# -- the measured steps (each in its own process: ``--step NAME PATH``) ---------------------------------

def step_crc_all(log_dir: str) -> dict:
    logs = sorted(Path(log_dir).glob("*/*.log"))
    started = time.perf_counter()
    for log in logs:
        bench_dump.step_crc_all(str(log))
    return {"seconds": time.perf_counter() - started, "files": len(logs)}


def step_verify(log_dir: str) -> dict:
    from seglog_cli.storage.verify.verify import VerifyOptions, verify

    started = time.perf_counter()
    report = verify([log_dir], VerifyOptions(level="shallow"))
    seconds = time.perf_counter() - started
    summary = report.as_dict()["summary"]
    return {"seconds": seconds, "status": report.status, "batches": summary["batches"],
            "errors": summary["errors"]}


def step_recover(log_dir: str) -> dict:
    from seglog_cli.storage.log.partition_log import partition_dirs_under
    from seglog_cli.storage.recovery.recover import plan_recover

    started = time.perf_counter()
    plan = plan_recover(partition_dirs_under(Path(log_dir)))
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "partitions": len(plan.partitions),
            "recovered_segments": sum(len(p.recovered_segments) for p in plan.partitions),
            "steps": [s.as_dict()["op"] + " " + Path(s.path).name for s in plan.steps],
            "bytes_truncated": sum(p.bytes_truncated for p in plan.partitions)}


STEP_FUNCTIONS = {name: globals()[f"step_{name}"] for name in ENGINE_STEPS}


def measure_once(step: str, log_dir: str) -> dict:
    if step in CLI_STEPS:
        command = ["verify"] if step == "cli_verify" else ["recover"]
        run = bench_dump.run_process(bench_dump.seglog_command() + command + ["--format", "json", log_dir])
        if run["returncode"] not in (0, 1):  # recover: 1 = a plan
            raise RuntimeError(f"{step} failed ({run['returncode']}): {run['stderr'][-2000:]}")
        return {"seconds": run["wall"], "wall": run["wall"], "peak_rss_mb": run["peak_rss_mb"]}
    return bench_verify.measure_step(__file__, step, log_dir)


# -- results ------------------------------------------------------------------------------------------

def ratios(meta: dict, steps: dict) -> dict:
    mib = meta["size_bytes"] / MIB
    out = {f"{step}_mb_per_s": mib / steps[step]["seconds"] for step in ALL_STEPS if step in steps}
    if "recover" in steps and "verify" in steps:
        out["recover_vs_verify"] = steps["recover"]["seconds"] / steps["verify"]["seconds"]
    if "cli_recover" in steps and "cli_verify" in steps:
        out["cli_recover_vs_cli_verify"] = steps["cli_recover"]["seconds"] / steps["cli_verify"]["seconds"]
    if "verify" in steps and "crc_all" in steps:
        out["verify_vs_crc_all"] = steps["verify"]["seconds"] / steps["crc_all"]["seconds"]
    out["peak_rss_mb"] = max((s["peak_rss_mb"] for s in steps.values()), default=None)
    return out


def check_counts(meta: dict, steps: dict) -> list[str]:
    problems = []
    if "verify" in steps and (steps["verify"]["batches"] != meta["batches"] or steps["verify"]["errors"]):
        problems.append(f"verify saw {steps['verify']['batches']} batches and {steps['verify']['errors']} errors, "
                        f"expected {meta['batches']} and none")
    if "recover" in steps:
        recovered = steps["recover"]["recovered_segments"]
        if recovered != meta["partitions"] * meta["segments"]:
            problems.append(f"recover recovered {recovered} segments, expected every one "
                            f"({meta['partitions'] * meta['segments']})")
        if steps["recover"]["bytes_truncated"]:
            problems.append("recover planned a truncation of undamaged data")
    return problems


def goals(results: list[dict]) -> dict:
    values = [r["ratios"]["recover_vs_verify"] for r in results if "recover_vs_verify" in r["ratios"]]
    worst = max(values, default=None)
    return {"recover_vs_shallow_verify": {"goal": GOAL_RATIO, "worst": worst,
                                         "met": worst is not None and worst <= GOAL_RATIO}}


def print_table(results: list[dict], goal_status: dict, file=sys.stdout) -> None:
    fmt = bench_dump.fmt
    print(f"{'variant':>12} {'layout':>9} {'MiB':>6} {'batches':>9} {'CRC MB/s':>9} {'verify MB/s':>11} "
          f"{'recover MB/s':>12} {'recover/verify':>14} {'cli r/v':>8} {'RSS MB':>7}", file=file)
    for result in results:
        meta, r = result["log_dir"], result["ratios"]
        layout = f"{meta['partitions']}x{meta['segments']}"
        print(f"{meta['variant']:>12} {layout:>9} {meta['size_bytes'] / MIB:>6.0f} {meta['batches']:>9} "
              f"{fmt(r.get('crc_all_mb_per_s'), 1, 0):>9} {fmt(r.get('verify_mb_per_s'), 1, 0):>11} "
              f"{fmt(r.get('recover_mb_per_s'), 1, 0):>12} {fmt(r.get('recover_vs_verify')):>14} "
              f"{fmt(r.get('cli_recover_vs_cli_verify')):>8} {fmt(r.get('peak_rss_mb'), 1, 0):>7}", file=file)
    print("recover/verify = seconds of the recovery plan / seconds of a shallow verify of the same log dir "
          "(in process); cli r/v = the same for the two commands end to end.", file=file)
    bench_dump.print_goals(goal_status, file)


# -- command line ----------------------------------------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--segments", type=int, default=4, help="segments per partition (default 4)")
    parser.add_argument("--segment-mb", type=float, default=64.0, help="MiB per segment (default 64)")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                        help="<multi|one>-<codec>, comma-separated (default %(default)s)")
    parser.add_argument("--cache-dir", default=os.environ.get("SEGLOG_BENCH_DIR", "/tmp/seglog-bench"))
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--repeat", type=int, default=3, help="runs per step; the best is kept")
    parser.add_argument("--steps", default=",".join(ALL_STEPS), help="steps to run (default: all)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--step", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--build", metavar="SETTINGS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v]
    args.steps = [s for s in args.steps.split(",") if s]
    unknown = [s for s in args.steps if s not in ALL_STEPS]
    if unknown:
        parser.error(f"unknown steps {unknown} (known: {', '.join(ALL_STEPS)})")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.step:
        name, path = args.step
        return bench_verify.print_step(STEP_FUNCTIONS[name], path)
    if args.build:
        target, variant, partitions, segments, segment_mib, seed = json.loads(args.build)
        print(json.dumps(build_log_dir(Path(target), variant, partitions, segments, segment_mib, seed)))
        return {}
    cache_dir = Path(args.cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    log = bench_dump.progress(args.quiet)
    results = []
    for variant in args.variants:
        meta = cached_log_dir(cache_dir, variant, args.partitions, args.segments, args.segment_mb, args.seed)
        log(f"{meta['path']}: {meta['size_bytes'] / MIB:.0f} MiB, {meta['batches']} batches")
        measure_once("crc_all", meta["path"])  # warm the page cache
        load_before = os.getloadavg()
        steps = bench_verify.measure([(step, meta["path"]) for step in args.steps], args.repeat, measure_once)
        result = {"log_dir": meta, "steps": steps, "ratios": ratios(meta, steps),
                  "load_average": {"before": load_before, "after": os.getloadavg()}}
        result["problems"] = check_counts(meta, steps)
        for problem in result["problems"]:
            log(f"  PROBLEM: {problem}")
        results.append(result)
    report = {"machine": bench_dump.machine_info(),
              "settings": {"repeat": args.repeat, "partitions": args.partitions, "segments": args.segments,
                           "segment_mib": args.segment_mb, "variants": args.variants, "steps": args.steps,
                           "cache_dir": str(cache_dir)},
              "results": results, "goals": goals(results)}
    return bench_dump.finish_report(report, args, print_table)


if __name__ == "__main__":
    main()
