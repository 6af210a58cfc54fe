"""Every whole-log-dir command on broker-shaped log dirs of growing size: CPU seconds and growth.

Each size (``--partitions 1000,3000,10000``) gets a log dir from ``make_broker_logdir.py``
(hard-linked segments; the same seed, so a larger dir is the smaller one's shape with more
partitions), built once into ``--cache-dir``. Every command runs as its own whole process
(``python -m seglog_cli``, output to /dev/null); the figures are the process's user+system CPU
seconds and peak RSS from ``wait4`` (mapped pages included). Steps:

    crc_floor        read every ``.log`` once and CRC-32C it (``crc32c``): the floor of a shallow verify
    verify           ``verify`` (shallow, the default ``--jobs``)
    verify_jobs1     ``verify --jobs 1``
    verify_deep      ``verify --level deep``
    dump             ``dump`` (batch lines of every segment)
    dump_jsonl       ``dump --format jsonl``
    recover_clean    ``recover`` (plan) of the clean-shutdown dir
    recover_unclean  ``recover`` (plan) of the same dir without ``.kafka_cleanshutdown`` (unclean:
                     recovery points at the active segments, Kafka recovers those)
    rebuild_index    ``rebuild-index`` (plan)
    retention        ``simulate-retention`` (plan)
    offsets          ``offsets`` (every group's committed offsets and lag)
    transactions     ``transactions``
    diff             ``diff`` of the dir against a second dir of the same seed
    spark_plan       the Spark sources' split planning (``plan_splits``) of the whole dir

``--writes`` adds the writing commands on a real copy (``--copy``: nothing is linked) of an
unclean dir with 1 % damaged partitions: ``recover --apply``, then ``undo`` of its backup,
``repair`` of one damaged partition from a healthy copy, and ``append`` to one partition of that
healthy copy (the cost of these two must not grow with the other partitions).

For each step and each pair of sizes the growth is (CPU at the larger size / CPU at the smaller)
divided by the ratio of partitions: 1.0 is linear, the goal is at most 1.15. Also printed: the
per-segment CPU of a shallow verify (the difference between the two largest sizes over the
difference in segments) and verify's CPU over the CRC floor's at the largest size (goal <= 2).

Usage (from the repository root)::

    python tests/benchmarks/bench_scale.py --partitions 1000,3000,10000 --json bench-scale.json
    python tests/benchmarks/bench_scale.py --partitions 200,800 --steps verify,recover_clean

Not a test: nothing here asserts a time (``test_bench_scale_smoke.py`` runs it on a few dozen
partitions).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.make_broker_logdir import make_broker_logdir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GOAL_GROWTH = 1.15
TIME = "/usr/bin/time"  # GNU time (Debian's package "time")
LAYOUT_VERSION = 1
SPARK_PLAN = ("import sys; from seglog_cli.spark.plan import plan_splits, parse_options; "
              "print(len(plan_splits([sys.argv[1]], parse_options({}))))")
CRC_FLOOR = ("import os, sys; from crc32c import crc32c\n"
             "for top, _, names in os.walk(sys.argv[1]):\n"
             "    for name in names:\n"
             "        if name.endswith('.log'):\n"
             "            with open(os.path.join(top, name), 'rb') as f: crc32c(f.read())\n")


def seglog(*args: str) -> list[str]:
    return [sys.executable, "-m", "seglog_cli", *args]


READ_STEPS = {
    "crc_floor": lambda d: [sys.executable, "-c", CRC_FLOOR, d["clean"]],
    "verify": lambda d: seglog("verify", d["clean"]),
    "verify_jobs1": lambda d: seglog("verify", "--jobs", "1", d["clean"]),
    "verify_deep": lambda d: seglog("verify", "--level", "deep", d["clean"]),
    "dump": lambda d: seglog("dump", d["clean"]),
    "dump_jsonl": lambda d: seglog("dump", "--format", "jsonl", d["clean"]),
    "recover_clean": lambda d: seglog("recover", d["clean"]),
    "recover_unclean": lambda d: seglog("recover", d["unclean"]),
    "rebuild_index": lambda d: seglog("rebuild-index", d["clean"]),
    "retention": lambda d: seglog("simulate-retention", d["clean"]),
    "offsets": lambda d: seglog("offsets", d["clean"]),
    "transactions": lambda d: seglog("transactions", d["clean"]),
    "diff": lambda d: seglog("diff", d["clean"], d["twin"]),
    "spark_plan": lambda d: [sys.executable, "-c", SPARK_PLAN, d["clean"]],
}
WRITE_STEPS = ("recover_apply", "undo", "append_one", "repair_one")


def measure(command: list[str], cwd: Path | None = None) -> dict:
    """One whole process: CPU seconds (user + system, its children included), peak RSS in MB
    (GNU time's ``%M``: a child forked from this big process would inherit its high-water mark),
    exit status."""
    with tempfile.NamedTemporaryFile("r") as figures, open(os.devnull, "wb") as sink:
        done = subprocess.run([TIME, "-f", "%U %S %M %x", "-o", figures.name, *command], stdout=sink,
                              stderr=subprocess.PIPE, cwd=cwd)
        user, system, rss_kb, status = figures.read().split()[-4:]
    return {"cpu": round(float(user) + float(system), 3), "rss_mb": round(int(rss_kb) / 1024, 1),
            "exit": int(status), "stderr": done.stderr.decode(errors="replace")[-300:]}


def build(cache: Path, partitions: int, segments: int, seed: int) -> tuple[dict, dict]:
    """The dirs of one size (built once): clean, unclean, a twin for diff."""
    root = cache / f"p{partitions}-s{segments}-seed{seed}-v{LAYOUT_VERSION}"
    dirs = {"clean": root / "clean", "unclean": root / "unclean", "twin": root / "twin"}
    done = root / "done.json"
    if not done.is_file():
        shutil.rmtree(root, ignore_errors=True)
        summary = make_broker_logdir(dirs["clean"], partitions=partitions, segments=segments, seed=seed)
        make_broker_logdir(dirs["unclean"], partitions=partitions, segments=segments, seed=seed, unclean=True)
        make_broker_logdir(dirs["twin"], partitions=partitions, segments=segments, seed=seed)
        done.write_text(json.dumps({"segments": summary.segments, "bytes": summary.bytes}))
    return {key: str(path) for key, path in dirs.items()}, json.loads(done.read_text())


def write_steps(cache: Path, partitions: int, segments: int, seed: int) -> dict:
    """The writing commands on a private copy (rebuilt every run: they change it)."""
    root = cache / f"writes-p{partitions}"
    shutil.rmtree(root, ignore_errors=True)
    target, healthy = root / "damaged", root / "healthy"
    summary = make_broker_logdir(target, partitions=partitions, segments=segments, seed=seed, unclean=True,
                                 damage_percent=1, copy=True)
    make_broker_logdir(healthy, partitions=partitions, segments=segments, seed=seed, copy=True)
    backups = root / "backups"
    results = {"recover_apply": measure(seglog("recover", "--apply", "--backup-dir", str(backups), str(target)))}
    made = sorted(p for p in backups.iterdir()) if backups.is_dir() else []
    results["undo"] = measure(seglog("undo", "--apply", str(made[-1]))) if made else {"cpu": None, "exit": None}
    data = [name for name in summary.partitions if not name.startswith("__")]
    one = next(iter(summary.damaged), data[0])
    results["append_one"] = measure(seglog("append", "--apply", "--value", "x", str(healthy / data[-1])))
    results["repair_one"] = measure(seglog("repair", "--apply", "--from", str(healthy / one), str(target / one)))
    shutil.rmtree(root, ignore_errors=True)
    return results


def growth(rows: dict, sizes: list[int], step: str) -> list[float | None]:
    out = []
    for small, large in zip(sizes, sizes[1:]):
        a, b = rows[small].get(step, {}).get("cpu"), rows[large].get(step, {}).get("cpu")
        out.append(round((b / a) / (large / small), 2) if a and b else None)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="1000,3000,10000", help="comma-separated sizes")
    parser.add_argument("--segments", type=int, default=20, help="segments of a large partition")
    parser.add_argument("--steps", default=",".join(READ_STEPS), help="comma-separated read steps")
    parser.add_argument("--writes", action="store_true", help="also the writing commands, on copies")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/seglog-bench-scale"))
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args(argv)
    if not os.access(TIME, os.X_OK):
        parser.error(f"{TIME} is missing: install GNU time (Debian's package 'time')")
    sizes = sorted(int(n) for n in args.partitions.split(","))
    steps = [s for s in args.steps.split(",") if s]
    rows: dict[int, dict] = {}
    layout: dict[int, dict] = {}
    for n in sizes:
        dirs, layout[n] = build(args.cache_dir, n, args.segments, args.seed)
        rows[n] = {}
        for step in steps:
            rows[n][step] = measure(READ_STEPS[step](dirs), cwd=REPO)
            print(f"{n:>6} partitions  {step:<16} {rows[n][step]['cpu']:>8.2f} CPU s  "
                  f"{rows[n][step]['rss_mb']:>6.1f} MB  exit {rows[n][step]['exit']}", flush=True)
        if args.writes:
            for step, result in write_steps(args.cache_dir, n, args.segments, args.seed).items():
                rows[n][step] = result
                print(f"{n:>6} partitions  {step:<16} {result['cpu']} CPU s  {result.get('rss_mb')} MB  "
                      f"exit {result['exit']}", flush=True)
    report = {"sizes": sizes, "layout": layout, "rows": rows,
              "growth": {step: growth(rows, sizes, step) for step in steps + (list(WRITE_STEPS) if args.writes else [])}}
    print(f"\ngrowth per step (CPU ratio / partition ratio; goal <= {GOAL_GROWTH}):")
    for step, ratios in report["growth"].items():
        worst = max((r for r in ratios if r is not None), default=None)
        flag = "" if worst is None or worst <= GOAL_GROWTH else "  ABOVE GOAL"
        peak = max(rows[n].get(step, {}).get("rss_mb") or 0 for n in sizes)
        print(f"  {step:<16} {ratios}  peak {peak} MB{flag}")
    if len(sizes) >= 2 and "verify" in steps:
        small, large = sizes[-2], sizes[-1]
        extra = layout[large]["segments"] - layout[small]["segments"]
        per_segment = (rows[large]["verify_jobs1" if "verify_jobs1" in steps else "verify"]["cpu"]
                       - rows[small]["verify_jobs1" if "verify_jobs1" in steps else "verify"]["cpu"]) / max(extra, 1)
        report["verify_us_per_segment"] = round(per_segment * 1e6, 1)
        print(f"\nshallow verify: {report['verify_us_per_segment']} us of CPU per segment (goal <= 100)")
        if "crc_floor" in steps:
            ratio = rows[large]["verify"]["cpu"] / max(rows[large]["crc_floor"]["cpu"], 1e-9)
            report["verify_vs_crc_floor"] = round(ratio, 2)
            print(f"shallow verify at {large} partitions: {ratio:.2f}x the CRC-32C floor (goal <= 2)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
