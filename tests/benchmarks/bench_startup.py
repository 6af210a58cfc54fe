"""How fast ``seglog`` starts, against a bare ``python -c pass`` measured in the same run.

A runbook calls seglog a dozen times per partition, so on small inputs a command's time is its
start-up: the interpreter, the imports, option parsing. Goal (issue 20): each command below, on a
small input, within 5x the whole-process wall time of ``python -c pass`` (the same interpreter,
the same environment: a venv's ``.pth`` files cost both alike).

Steps, each a fresh process with stdout to /dev/null, the page cache warm:

    python_pass     ``python -c pass``: the baseline
    version         ``seglog --version``
    dump            ``seglog dump SEGMENT`` (a copy of examples/logdir's orders-0, 60 batches)
    dump_deep       ``seglog dump --deep-iteration --print-data-log SEGMENT``
    dump_jsonl      ``seglog dump --format jsonl SEGMENT``
    verify_text     ``seglog verify PARTITION --format text`` (orders-0: 3 segments, indexes,
                    snapshots, leader-epoch checkpoint)
    offsets         ``seglog offsets LOG_DIR`` (a generated ``__consumer_offsets-0``, about 200 records)

Before measuring, the bytecode of ``seglog_cli`` and ``seglog_cli.formats`` (where the interpreter imports
them from) is written with ``compileall``, as ``pip install`` does: an editable install run with
``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every imported module from source on
every run (about 80 ms for ``dump``); ``--no-compile`` measures the tree as it is.

Rounds interleave the steps (``--runs`` rounds, each step once per round, in a shuffled order),
so a machine that is busier for a while slows every step alike; the report gives each step's
median, min and max wall time, the median's ratio to the baseline's median, and whether that
ratio is within the goal. Each step's exit status and output size are checked on every run (a
step that failed fast would look fast). ``seglog`` is the console script beside the
interpreter (what an operator runs), or ``python -m seglog_cli`` with ``--module``.

Usage (from the repository root)::

    python tests/benchmarks/bench_startup.py --runs 30 --json bench-startup.json

Not a test: nothing here asserts a time. ``test_bench_smoke.py`` checks it still runs.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks import bench_dump  # noqa: E402

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLE_PARTITION = REPOSITORY / "examples" / "logdir" / "orders-0"
SEGMENT_NAME = "00000000000000000000.log"
OFFSETS_RECORDS = 200
GOAL_RATIO = 5.0
BASELINE = "python_pass"
STEPS = ("python_pass", "version", "dump", "dump_deep", "dump_jsonl", "verify_text", "offsets")


def build_inputs(directory: Path) -> dict:
    """A log dir with a copy of examples/logdir's orders-0 and a generated __consumer_offsets-0."""
    from tests.benchmarks import bench_decoders  # builds batches: imported only to make the inputs

    log_dir = directory / "logdir"
    partition = log_dir / "orders-0"
    shutil.copytree(EXAMPLE_PARTITION, partition)
    offsets = bench_decoders.write_offsets_segment(log_dir / "__consumer_offsets-0" / SEGMENT_NAME,
                                                   OFFSETS_RECORDS)
    return {"log_dir": str(log_dir), "partition": str(partition), "segment": str(partition / SEGMENT_NAME),
            "segment_bytes": (partition / SEGMENT_NAME).stat().st_size, "offsets_records": offsets["records"]}


def step_commands(inputs: dict, seglog: list[str]) -> dict[str, list[str]]:
    segment = inputs["segment"]
    return {
        "python_pass": [sys.executable, "-c", "pass"],
        "version": seglog + ["--version"],
        "dump": seglog + ["dump", segment],
        "dump_deep": seglog + ["dump", "--deep-iteration", "--print-data-log", segment],
        "dump_jsonl": seglog + ["dump", "--format", "jsonl", segment],
        "verify_text": seglog + ["verify", inputs["partition"], "--format", "text"],
        "offsets": seglog + ["offsets", inputs["log_dir"]],
    }


def compile_bytecode() -> list[str]:
    """Write the ``__pycache__`` of the packages seglog runs from (as the steps import them)."""
    where = subprocess.run([sys.executable, "-c", "import seglog_cli, seglog_cli.formats as formats; "
                            "print(seglog_cli.__file__); print(formats.__file__)"], capture_output=True, text=True,
                           check=True)
    packages = [str(Path(line).parent) for line in where.stdout.split()]
    for package in packages:
        if not compileall.compile_dir(package, quiet=1):
            raise RuntimeError(f"compileall failed for {package}")
    return packages


def run_once(argv: list[str]) -> dict:
    """One run: wall time (fork to reaped), the child's CPU time (user + system), exit status,
    stdout size, stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "returncode": process.returncode,
                "stdout_bytes": out.tell(), "stderr": err.read().decode("utf-8", "replace")}


def check_run(step: str, run: dict, expected_bytes: dict) -> None:
    """The step did its work: exit 0, nothing on stderr, the same output size every time."""
    if run["returncode"] != 0 or run["stderr"]:
        raise RuntimeError(f"{step} failed (exit {run['returncode']}): {run['stderr'][-2000:]}")
    if step != BASELINE and run["stdout_bytes"] == 0:
        raise RuntimeError(f"{step} printed nothing")
    if expected_bytes.setdefault(step, run["stdout_bytes"]) != run["stdout_bytes"]:
        raise RuntimeError(f"{step} printed {run['stdout_bytes']} bytes, {expected_bytes[step]} before")


def measure(commands: dict[str, list[str]], runs: int, seed: int = 0) -> dict:
    """``runs`` interleaved rounds; per step: the wall and CPU times and the output size."""
    walls: dict[str, list[float]] = {step: [] for step in commands}
    cpus: dict[str, list[float]] = {step: [] for step in commands}
    expected_bytes: dict[str, int] = {}
    order = list(commands)
    shuffle = random.Random(seed)
    for step in order:  # one untimed run each: the page cache and the .pyc files warm
        check_run(step, run_once(commands[step]), expected_bytes)
    for _ in range(runs):
        shuffle.shuffle(order)
        for step in order:
            run = run_once(commands[step])
            check_run(step, run, expected_bytes)
            walls[step].append(run["wall"])
            cpus[step].append(run["cpu"])
    return {step: {"median": statistics.median(values), "min": min(values), "max": max(values),
                   "cpu_median": statistics.median(cpus[step]), "runs": len(values),
                   "stdout_bytes": expected_bytes[step], "argv": commands[step]}
            for step, values in walls.items()}


def add_ratios(steps: dict, goal: float = GOAL_RATIO) -> dict:
    """Each step's median over the baseline's median, and whether that is within ``goal`` (the
    goal is judged on wall time; the CPU-time ratio is shown too: it moves less on a busy machine)."""
    base, base_cpu = steps[BASELINE]["median"], steps[BASELINE]["cpu_median"]
    for result in steps.values():
        result["ratio"] = result["median"] / base
        result["cpu_ratio"] = result["cpu_median"] / base_cpu if base_cpu > 0 else None
        result["within_goal"] = result["ratio"] <= goal
    worst = max((s for s in steps if s != BASELINE), key=lambda s: steps[s]["ratio"])
    return {"goal_ratio": goal, "baseline_median_s": base, "worst_step": worst,
            "worst_ratio": steps[worst]["ratio"], "met": all(r["within_goal"] for r in steps.values())}


def print_report(report: dict, file=sys.stdout) -> None:
    print(f"{'step':<12} {'median':>8} {'min':>8} {'max':>8} {'ratio':>6}  within {GOAL_RATIO:g}x  "
          f"{'cpu':>8} {'ratio':>6}", file=file)
    for step, result in report["steps"].items():
        cpu_ratio = "-" if result["cpu_ratio"] is None else f"{result['cpu_ratio']:.2f}x"
        print(f"{step:<12} {result['median'] * 1000:6.1f}ms {result['min'] * 1000:6.1f}ms "
              f"{result['max'] * 1000:6.1f}ms {result['ratio']:5.2f}x  {'yes' if result['within_goal'] else 'NO ':<9} "
              f"{result['cpu_median'] * 1000:6.1f}ms {cpu_ratio:>6}", file=file)
    goal = report["goal"]
    print(f"goal: every command within {goal['goal_ratio']:g}x python -c pass "
          f"({goal['baseline_median_s'] * 1000:.1f} ms); worst {goal['worst_step']} "
          f"{goal['worst_ratio']:.2f}x -> {'MET' if goal['met'] else 'MISSED'}", file=file)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="interleaved rounds (default 30)")
    parser.add_argument("--module", action="store_true",
                        help="run seglog as 'python -m seglog_cli' instead of the console script")
    parser.add_argument("--no-compile", action="store_true",
                        help="do not write the packages' bytecode first (measure the tree as it is)")
    parser.add_argument("--json", help="write the report to this file")
    parser.add_argument("--quiet", action="store_true", help="no table on stdout")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    seglog = [sys.executable, "-m", "seglog_cli"] if args.module else bench_dump.seglog_command()
    compiled = [] if args.no_compile else compile_bytecode()
    machine = bench_dump.machine_info()  # the load average before the runs
    with tempfile.TemporaryDirectory(prefix="seglog-bench-startup-") as scratch:
        inputs = build_inputs(Path(scratch))
        steps = measure(step_commands(inputs, seglog), args.runs)
    goal = add_ratios(steps)
    for result in steps.values():  # the scratch directory is gone: keep the argv readable
        result["argv"] = [arg.replace(scratch, "<scratch>") for arg in result["argv"]]
    report = {"machine": machine,
              "settings": {"runs": args.runs, "seglog": seglog, "segment_bytes": inputs["segment_bytes"],
                           "offsets_records": inputs["offsets_records"], "bytecode_compiled": compiled,
                           "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE")},
              "steps": steps, "goal": goal}
    report["machine"]["load_average_after"] = os.getloadavg()
    if not args.quiet:
        print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
