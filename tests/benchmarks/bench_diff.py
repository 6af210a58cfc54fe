"""How fast ``seglog diff`` compares two replicas, against the CRC-32C floor of reading both.

Two replicas of one partition are made from one generated segment (``make_segment.py``, ~3 KB
multi-record batches by default) copied twice (separate files: no shared page cache pages), each
with the ``.index``/``.timeindex`` Kafka's recovery builds. Every step runs as a whole process
(start-up included), best of ``--repeat``, page cache warm (one untimed run first):

    floor   ``crc32c`` of every byte of both ``.log`` files through ``MappedFile`` (the bytes diff
            must read and checksum), in 8 MiB slices
    diff    ``seglog diff --format json A B > /dev/null``

``--diverge-last`` gives B's last batch another leader epoch (a byte outside its CRC), so the
replicas differ in their last batch and the comparison cannot pass over their common headers.

Goal (issue 21): ``diff`` within 2x of ``floor``; peak RSS under 150 MB.

Usage (from the repository root)::

    python tests/benchmarks/bench_diff.py --size-mb 1024 --json bench-diff.json

Not a test: nothing here asserts a time.
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

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks import make_segment  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MIB = 1 << 20
GOAL = 2.0

FLOOR = """
import sys
from seglog_cli.storage.log.checksums import crc32c
from seglog_cli.storage.log.files import MappedFile
total = 0
for path in sys.argv[1:]:
    with MappedFile(path) as mapped:
        view, size, step = mapped.view, mapped.size, 8 << 20
        for start in range(0, size, step):
            total ^= crc32c(view[start:start + step])
            mapped.release_behind(start)
print(total)
"""


def diverge_last(partition: Path) -> None:
    """The last batch of ``partition``'s segment in leader epoch 1 (the checkpoint says so)."""
    from seglog_cli.storage.log.segments import LogSegment

    log = partition / "00000000000000000000.log"
    last = None
    for last in LogSegment(log).batches():
        pass
    with open(log, "r+b") as handle:
        handle.seek(last.position + 12)  # partitionLeaderEpoch: outside the CRC
        handle.write((1).to_bytes(4, "big"))
    (partition / "leader-epoch-checkpoint").write_text(f"0\n2\n0 0\n1 {last.base_offset}\n")


def make_replicas(root: Path, size_mib: float, seed: int, batch_bytes: int) -> tuple[Path, Path, dict]:
    from seglog_cli.storage.log.files import MappedFile
    from seglog_cli.storage.write.rebuild_index import recover_indexes

    source = root / "source" / "00000000000000000000.log"
    meta_path = root / "source" / "segment.json"
    if not (meta_path.is_file() and source.is_file()):
        meta = make_segment.write_segment(source, int(size_mib * MIB), seed=seed, batch_bytes=batch_bytes)
        meta_path.write_text(json.dumps(meta))
    meta = json.loads(meta_path.read_text())
    dirs = []
    for name in ("replica-a", "replica-b"):
        partition = root / name / "events-0"
        log = partition / source.name
        if not (log.is_file() and log.stat().st_size == source.stat().st_size):
            partition.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, log)
            with MappedFile(log) as mapped:
                indexes = recover_indexes(mapped, 0)
            (partition / "00000000000000000000.index").write_bytes(indexes.offset_index)
            (partition / "00000000000000000000.timeindex").write_bytes(indexes.time_index)
            (partition / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
        dirs.append(partition)
    return dirs[0], dirs[1], meta


def run_process(argv: list[str], pycache: str) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS MiB, exit status) of one whole process. Bytecode is
    cached in ``pycache`` (as an installed package has its .pyc), whatever PYTHONDONTWRITEBYTECODE says."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
               PYTHONPYCACHEPREFIX=pycache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
    _pid, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def measure(argv: list[str], repeat: int, pycache: str) -> dict:
    run_process(argv, pycache)  # warm: page cache and bytecode
    runs = [run_process(argv, pycache) for _ in range(repeat)]
    return {"seconds": min(r[0] for r in runs), "cpu_seconds": min(r[1] for r in runs),
            "peak_rss_mb": max(r[2] for r in runs), "exit": runs[0][3], "all_seconds": [r[0] for r in runs]}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=1024.0, help="size of each replica's segment (MiB)")
    parser.add_argument("--batch-bytes", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the replicas are made (default: a temp dir, removed)")
    parser.add_argument("--json", default=None, help="write the results here")
    parser.add_argument("--diverge-last", action="store_true", help="B's last batch in another leader epoch")
    args = parser.parse_args(argv)
    import tempfile

    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="seglog-bench-diff-"))
    try:
        a, b, meta = make_replicas(root, args.size_mb, args.seed, args.batch_bytes)
        if args.diverge_last:
            c = root / "replica-c" / b.name
            if not c.is_dir():
                shutil.copytree(b, c)
                diverge_last(c)
            b = c
        logs = [str(a / "00000000000000000000.log"), str(b / "00000000000000000000.log")]
        pycache = str(root / "pycache")
        floor = measure([sys.executable, "-c", FLOOR, *logs], args.repeat, pycache)
        diff = measure([sys.executable, "-m", "seglog_cli", "diff", "--format", "json", str(a), str(b)], args.repeat,
                       pycache)
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    size = 2 * os.path.getsize(logs[0]) if args.dir else 2 * int(args.size_mb * MIB)
    result = {"bytes_read": size, "batches_per_replica": meta.get("batches"), "floor": floor, "diff": diff,
              "ratio": diff["seconds"] / floor["seconds"], "cpu_ratio": diff["cpu_seconds"] / floor["cpu_seconds"],
              "goal_ratio": GOAL,
              "diff_gib_per_s": size / diff["seconds"] / (1 << 30)}
    expected_exit = 3 if args.diverge_last else 0
    result["goal_met"] = result["ratio"] <= GOAL and diff["peak_rss_mb"] < 150 and diff["exit"] == expected_exit
    print(f"two replicas of {args.size_mb:g} MiB ({meta.get('batches')} batches each)")
    print(f"  floor (crc32c of both, whole process): {floor['seconds']:.2f} s wall, {floor['cpu_seconds']:.2f} s CPU")
    print(f"  seglog diff (whole process):           {diff['seconds']:.2f} s wall, {diff['cpu_seconds']:.2f} s CPU, "
          f"peak RSS {diff['peak_rss_mb']:.0f} MB, exit {diff['exit']}")
    print(f"  ratio {result['ratio']:.2f}x wall, {result['cpu_ratio']:.2f}x CPU (goal <= {GOAL}x): "
          f"{'met' if result['goal_met'] else 'NOT met'}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
