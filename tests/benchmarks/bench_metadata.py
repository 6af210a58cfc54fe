"""The metadata image of a big cluster (issue 35): ``load_image`` at the log end and at an offset
in the middle, ``leader_elections`` of one partition (what ``seglog diff`` and ``seglog repair``
read), in process (best of ``--repeat``) and ``seglog metadata`` as whole processes (start-up
included), on a log from ``make_metadata_log.py`` (default 10^6 records: 100,000 partitions,
300 brokers, churn). Records per wall and per CPU second (steadier on a shared machine) and
each process's peak RSS (``wait4`` of a launcher's child, as ``tests/fuzz_hostile.py``
measures it); goal: RSS under 150 MB.

    python tests/benchmarks/bench_metadata.py                        # 10^6 records
    python tests/benchmarks/bench_metadata.py --records 200000 --cache-dir /tmp/meta --json bench-metadata.json
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

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fuzz_hostile import LAUNCHER  # noqa: E402 - seglog forked from a small process: its own peak RSS and CPU seconds

RSS_GOAL_MB = 150


def generated(records: int, cache_dir: Path, seed: int = 35) -> Path:
    """The node dir of a generated log of ``records`` records, written once per cache dir."""
    from tests.benchmarks.make_metadata_log import make_metadata_log

    node = cache_dir / f"metadata-{records}-{seed}"
    if not (node / "meta.properties").is_file():
        shutil.rmtree(node, ignore_errors=True)
        make_metadata_log(node, records=records, seed=seed)
    return node


def best(run, repeat: int) -> tuple[float, float, object]:
    """The best wall and CPU seconds of ``repeat`` runs (CPU: steadier on a shared machine), and
    the result."""
    seconds = cpu = result = None
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        result = run()
        took, took_cpu = time.perf_counter() - started, time.process_time() - started_cpu
        seconds = took if seconds is None else min(seconds, took)
        cpu = took_cpu if cpu is None else min(cpu, took_cpu)
    return seconds, cpu, result


def figures(records: int, seconds: float, cpu: float) -> dict:
    return {"seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3), "records_per_s": round(records / seconds),
            "records_per_cpu_s": round(records / max(cpu, 1e-9))}


def process(argv: list[str]) -> dict:
    """``python -m seglog_cli ARGV``: wall and CPU seconds, exit status and peak RSS (MB)."""
    read, write = os.pipe()
    started = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", LAUNCHER, str(write), sys.executable, "-m", "seglog_cli",
                               *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(write,))
        seconds = time.perf_counter() - started
        os.close(write)
        peak_kb, cpu = (os.read(read, 64).decode() or "0 0").split()
    finally:
        os.close(read)
    return {"argv": argv, "exit": proc.returncode, "seconds": round(seconds, 3), "cpu_seconds": round(float(cpu), 3),
            "peak_rss_mb": round(int(peak_kb) / 1024, 1),
            "stderr": proc.stderr.decode("utf-8", "replace")[-300:]}


def measure(node: Path, repeat: int, processes: bool) -> dict:
    from seglog_cli.storage.metadata.elections import leader_elections
    from seglog_cli.storage.metadata.loader import load_image

    end_seconds, end_cpu, loaded = best(lambda: load_image(node), repeat)
    records = loaded.end_offset
    middle = records // 2
    mid_seconds, mid_cpu, _ = best(lambda: load_image(node, at_offset=middle), repeat)
    topic = sorted(t.name for t in loaded.image.topics_by_id.values())[len(loaded.image.topics_by_id) // 2]
    elections_seconds, elections_cpu, found = best(lambda: leader_elections(node, [(topic, 0)]), repeat)
    out = {"records": records, "topics": len(loaded.image.topics_by_id),
           "partitions": sum(len(t.partitions) for t in loaded.image.topics_by_id.values()),
           "brokers": len(loaded.image.brokers),
           "load_end": figures(records, end_seconds, end_cpu),
           "load_at_offset": {"offset": middle, **figures(middle, mid_seconds, mid_cpu)},
           "leader_elections": {"partition": f"{topic}-0", "elections": len(found.of(topic, 0).elections),
                                **figures(records, elections_seconds, elections_cpu)}}
    if processes:
        out["process_end"] = process(["metadata", str(node), "--topic", topic])
        out["process_at_offset"] = process(["metadata", str(node), "--at-offset", str(middle), "--topic", topic])
        out["process_history"] = process(["metadata", str(node), "--history", f"{topic}-0"])
        for key, replayed in (("process_end", records), ("process_at_offset", middle), ("process_history", records)):
            out[key]["records_per_s"] = round(replayed / out[key]["seconds"])
            out[key]["records_per_cpu_s"] = round(replayed / max(out[key]["cpu_seconds"], 1e-9))
        out["rss_goal_met"] = all(out[k]["peak_rss_mb"] < RSS_GOAL_MB
                                  for k in ("process_end", "process_at_offset", "process_history"))
    return out


def report(out: dict) -> list[str]:
    lines = [f"{out['records']:,} records: {out['brokers']} brokers, {out['topics']:,} topics, "
             f"{out['partitions']:,} partitions"]
    for key, what in (("load_end", "load_image at the end"), ("load_at_offset", "load_image --at-offset"),
                      ("leader_elections", "leader_elections of one partition")):
        lines.append(f"  {what:40} {out[key]['seconds']:8.2f} s  {out[key]['records_per_s']:>10,} records/s  "
                     f"(CPU {out[key]['cpu_seconds']:.2f} s: {out[key]['records_per_cpu_s']:,} records/CPU-s)")
    for key, what in (("process_end", "seglog metadata"), ("process_at_offset", "seglog metadata --at-offset"),
                      ("process_history", "seglog metadata --history")):
        if key in out:
            run = out[key]
            lines.append(f"  {what:40} {run['seconds']:8.2f} s  {run['records_per_s']:>10,} records/s  "
                         f"(CPU {run['cpu_seconds']:.2f} s: {run['records_per_cpu_s']:,} records/CPU-s)  "
                         f"peak RSS {run['peak_rss_mb']:.0f} MB (exit {run['exit']})")
    if "rss_goal_met" in out:
        lines.append(f"  peak RSS under {RSS_GOAL_MB} MB: {'yes' if out['rss_goal_met'] else 'NO'}")
    return lines


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--cache-dir", help="Keep the generated log here (reused when there).")
    parser.add_argument("--no-process", action="store_true", help="In process only.")
    parser.add_argument("--json", help="Write the figures here.")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    scratch = None
    if args.cache_dir is None:
        scratch = Path(tempfile.mkdtemp(prefix="bench-metadata-"))
    try:
        node = generated(args.records, Path(args.cache_dir) if args.cache_dir else scratch)
        out = measure(node, args.repeat, not args.no_process)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if not args.quiet:
        print("\n".join(report(out)))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
