"""How fast ``seglog rebuild-index`` plans, against a bare header scan measured in the same run.

Each generated segment (``make_segment.py``, cached in ``--cache-dir``, shared with bench_dump
and bench_verify) becomes a partition directory with the ``.index``/``.timeindex`` Kafka writes
(``bench_verify.partition_dirs``: one append per batch, which is what recovery rebuilds, so every
plan says "identical"). Every step runs in a fresh process, best of ``--repeat``, page cache warm:

    scan_nocrc     ``LogScan`` over the ``MappedFile``, ``check_crc=False``, headers only
    scan_crc       the same with the CRC-32C of every batch (what recovery's ``ensureValid`` needs)
    walk           ``recover_indexes``: the batch walk of ``LogSegment.recover`` (CRC checked,
                   offset and time index entries built)
    plan_no_txn    ``plan_rebuild([partition], txn_index=False)``: the walk plus the comparison
                   with the index files on disk
    plan           ``plan_rebuild([partition])``: what ``seglog rebuild-index`` does; the segments
                   carry an idempotent producer, so the producer state is replayed as well for the
                   ``.txnindex``
    cli            ``seglog rebuild-index --format json PARTITION > /dev/null``, wall (start-up incl.)

Goal (issue): rebuild-index planning >= 1 M batches/s on one-record batches; the walk and the
whole plan are both judged. ``--profile`` adds a cProfile of ``plan`` per segment (the top
functions by own time) to the report: where the time goes.

Usage (from the repository root)::

    python tests/benchmarks/bench_rebuild_index.py --sizes 256 --json bench-rebuild-index.json

Not a test: nothing here asserts a time. ``test_bench_smoke.py`` only checks it still runs.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks import bench_dump, bench_verify  # noqa: E402

MIB = bench_dump.MIB
MIN_SEGMENT_MIB = bench_dump.MIN_SEGMENT_MIB
DEFAULT_VARIANTS = ("one-none", "multi-none")
GOAL_BATCHES_PER_S = 1_000_000
LOG_STEPS = ("scan_nocrc", "scan_crc", "walk")
PARTITION_STEPS = ("plan_no_txn", "plan", "cli")
ALL_STEPS = LOG_STEPS + PARTITION_STEPS
SEGLOG_STEPS = ("walk", "plan_no_txn", "plan", "cli")
PROFILE_LINES = 25


# -- the measured steps (each in its own process: ``--step NAME PATH``) ---------------------------------

def step_scan_nocrc(path: str) -> dict:
    return bench_dump.step_header_scan_nocrc(path)


def step_scan_crc(path: str) -> dict:
    return bench_dump.step_header_scan(path)


def step_walk(path: str) -> dict:
    from seglog_cli.storage.log.files import MappedFile
    from seglog_cli.storage.write.rebuild_index import recover_indexes

    started = time.perf_counter()
    with MappedFile(path) as mapped:
        recovered = recover_indexes(mapped, 0)
    return {"seconds": time.perf_counter() - started, "batches": recovered.batches,
            "valid_bytes": recovered.valid_bytes, "stop": recovered.stop,
            "offset_entries": len(recovered.offset_index) // 8, "time_entries": len(recovered.time_index) // 12}


def _plan(path: str, txn_index: bool) -> dict:
    from seglog_cli.storage.write.rebuild_index import plan_rebuild

    started = time.perf_counter()
    plan = plan_rebuild([path], txn_index=txn_index)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "batches": sum(s.batches for s in plan.segments), "changes": len(plan.changes),
            "refused": len(plan.refused), "files": [f.action for s in plan.segments for f in s.files]}


def step_plan_no_txn(path: str) -> dict:
    return _plan(path, False)


def step_plan(path: str) -> dict:
    return _plan(path, True)


STEP_FUNCTIONS = {name: globals()[f"step_{name}"] for name in ALL_STEPS if name != "cli"}


def profile_plan(path: str, lines: int = PROFILE_LINES) -> dict:
    """cProfile of ``plan_rebuild([path])``: total time under the profiler and the top functions by
    own time (the profiler slows Python code more than compiled code: read the shares, not the
    seconds)."""
    from seglog_cli.storage.write.rebuild_index import plan_rebuild

    profiler = cProfile.Profile()
    profiler.enable()
    plan_rebuild([path])
    profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt
    rows = []
    for (filename, line, name), (_cc, calls, own, cumulative, _callers) in stats.stats.items():
        rows.append({"function": f"{Path(filename).name}:{line}({name})", "calls": calls, "own_seconds": own,
                     "cumulative_seconds": cumulative, "own_share": own / total if total else None})
    rows.sort(key=lambda row: row["own_seconds"], reverse=True)
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(lines)
    return {"total_seconds": total, "top_own": rows[:lines], "cumulative_text": text.getvalue()}


# -- running steps in fresh processes ---------------------------------------------------------------

def measure_once(step: str, path: str) -> dict:
    if step == "cli":
        run = bench_dump.run_process(bench_dump.seglog_command() + ["rebuild-index", "--format", "json", path])
        if run["returncode"] not in (0, 1):  # 1: changes planned
            raise RuntimeError(f"seglog rebuild-index failed ({run['returncode']}): {run['stderr'][-2000:]}")
        return {"seconds": run["wall"], "wall": run["wall"], "peak_rss_mb": run["peak_rss_mb"]}
    return _measure_step(step, path)


def _measure_step(step: str, path: str) -> dict:
    return bench_verify.measure_step(__file__, step, path)


def measure(plan: list[tuple[str, str]], repeat: int) -> dict:
    return bench_verify.measure(plan, repeat, measure_once)


# -- results ------------------------------------------------------------------------------------------

def ratios(meta: dict, steps: dict) -> dict:
    batches = meta["batches"]
    out = {f"{step}_batches_per_s": batches / steps[step]["seconds"] for step in ALL_STEPS if step in steps}
    out.update({f"{step}_mb_per_s": meta["size_bytes"] / MIB / steps[step]["seconds"]
                for step in ALL_STEPS if step in steps})
    for step in ("walk", "plan_no_txn", "plan", "cli"):
        for base in ("scan_nocrc", "scan_crc"):
            if step in steps and base in steps:
                out[f"{step}_vs_{base}"] = steps[base]["seconds"] / steps[step]["seconds"]
    out["seglog_peak_rss_mb"] = max((steps[s]["peak_rss_mb"] for s in SEGLOG_STEPS if s in steps), default=None)
    return {key: value for key, value in out.items() if value is not None}


def check_counts(meta: dict, steps: dict) -> list[str]:
    problems = []
    for step in ("scan_nocrc", "scan_crc", "walk", "plan_no_txn", "plan"):
        if step in steps and steps[step]["batches"] != meta["batches"]:
            problems.append(f"{step} saw {steps[step]['batches']} batches, expected {meta['batches']}")
    if "walk" in steps and steps["walk"]["stop"] is not None:
        problems.append(f"walk stopped early: {steps['walk']['stop']}")
    for step in ("plan_no_txn", "plan"):
        if step in steps and (steps[step]["changes"] or steps[step]["refused"]):
            problems.append(f"{step}: {steps[step]['changes']} change(s), {steps[step]['refused']} refused "
                            "(the prepared indexes should be what recovery writes)")
    return problems


def goals(results: list[dict]) -> dict:
    def worst(key):
        values = [r["ratios"][key] for r in results if key in r["ratios"] and r["segment"]["shape"] == "one-record"]
        return min(values, default=None)

    out = {}
    for name, key in (("walk_batches_per_s_one_record", "walk_batches_per_s"),
                      ("plan_batches_per_s_one_record", "plan_batches_per_s")):
        value = worst(key)
        out[name] = {"goal": GOAL_BATCHES_PER_S, "worst": value, "met": value is not None and value >= GOAL_BATCHES_PER_S}
    return out


_fmt = bench_dump.fmt


def print_table(results: list[dict], goal_status: dict, file=sys.stdout) -> None:
    columns = (("noCRC Mb/s", 10, "scan_nocrc_batches_per_s", 1e6), ("CRC Mb/s", 8, "scan_crc_batches_per_s", 1e6),
               ("walk Mb/s", 9, "walk_batches_per_s", 1e6), ("plan-txn Mb/s", 13, "plan_no_txn_batches_per_s", 1e6),
               ("plan Mb/s", 9, "plan_batches_per_s", 1e6), ("cli Mb/s", 8, "cli_batches_per_s", 1e6),
               ("walk/CRC", 8, "walk_vs_scan_crc", 1), ("walk/noCRC", 10, "walk_vs_scan_nocrc", 1),
               ("plan/CRC", 8, "plan_vs_scan_crc", 1), ("walk MB/s", 9, "walk_mb_per_s", 1e0),
               ("RSS", 5, "seglog_peak_rss_mb", 1))
    print(f"{'segment':>16} {'MiB':>5} {'batches':>8} " + " ".join(f"{c[0]:>{c[1]}}" for c in columns), file=file)
    for result in results:
        meta, r = result["segment"], result["ratios"]
        cells = [f"{meta['shape'] + '-' + meta['compression']:>16}", f"{meta['size_bytes'] / MIB:>5.0f}",
                 f"{meta['batches']:>8}"]
        for _name, width, key, scale in columns:
            digits = 0 if key.endswith("mb_per_s") or key.endswith("_mb") else 2
            cells.append(f"{_fmt(r.get(key), scale, digits):>{width}}")
        print(" ".join(cells), file=file)
    print("Mb/s = million batches/s; walk/CRC etc. = throughput as a fraction of the bare header scan's "
          "(time of the scan / time of the step); RSS in MB.", file=file)
    bench_dump.print_goals(goal_status, file, scale=1e6, unit=" M")


# -- command line ----------------------------------------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    parser = bench_dump.segment_parser(__doc__, "256", DEFAULT_VARIANTS, ALL_STEPS)
    parser.add_argument("--profile", action="store_true", help="add a cProfile of the plan step (top functions)")
    parser.add_argument("--profile-step", metavar="PATH", help=argparse.SUPPRESS)
    return bench_dump.segment_args(parser, parser.parse_args(argv), ALL_STEPS)


def profiled(partition: str) -> dict:
    """:func:`profile_plan` in a fresh process (its pages and imports stay out of the others)."""
    return bench_verify.run_json([sys.executable, str(Path(__file__).resolve()), "--profile-step", partition],
                                 "profile")[0]


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.step:
        name, path = args.step
        return bench_verify.print_step(STEP_FUNCTIONS[name], path)
    if args.profile_step:
        print(json.dumps(profile_plan(args.profile_step)))
        return {}
    cache_dir = Path(args.cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    log = bench_dump.progress(args.quiet)
    results = []
    for size in args.sizes:
        for variant in args.variants:
            meta = bench_dump.cached_segment(cache_dir, variant, size, args.seed)
            partition, _log_dir = bench_verify.prepared_partition_dirs(meta)
            log(f"{partition}: {meta['size_bytes'] / MIB:.0f} MiB, {meta['batches']} batches")
            bench_dump.measure_once("read", meta["path"])  # warm the page cache
            load_before = os.getloadavg()
            steps = measure([(step, meta["path"] if step in LOG_STEPS else partition) for step in args.steps],
                            args.repeat)
            result = {"segment": meta, "partition": partition, "steps": steps, "ratios": ratios(meta, steps),
                      "load_average": {"before": load_before, "after": os.getloadavg()}}
            result["problems"] = check_counts(meta, steps)
            for problem in result["problems"]:
                log(f"  PROBLEM: {problem}")
            if args.profile:
                result["profile"] = profiled(partition)
            results.append(result)
    report = {
        "machine": bench_dump.machine_info(),
        "settings": {"repeat": args.repeat, "sizes_mib": args.sizes, "variants": args.variants,
                     "steps": list(args.steps), "cache_dir": str(cache_dir)},
        "results": results,
        "goals": goals(results),
    }
    bench_dump.finish_report(report, args, print_table)
    if not args.quiet:
        for result in results:
            if "profile" in result:
                meta = result["segment"]
                print(f"\nprofile of plan_rebuild, {meta['shape']}-{meta['compression']} "
                      f"({result['profile']['total_seconds']:.2f} s under the profiler), top functions by own time:")
                for row in result["profile"]["top_own"][:12]:
                    print(f"  {row['own_share'] * 100:5.1f} %  {row['calls']:>9}  {row['function']}")
    return report


if __name__ == "__main__":
    main()
