"""How fast ``seglog append`` writes records, against baselines measured in the same run.

For each variant (value size x codec) the same deterministic records (``make_segment``'s keys,
JSON text values cut to ~100 B or ~1 KB, a ``traceparent`` header on 20 %, timestamps going up)
are grouped into produce requests as ``seglog append`` groups them (``batch.size`` 16384) and
written into a fresh partition. Every step runs in a fresh process, best of ``--repeat``;
making the records is never timed:

    build        ``build_batch`` of every batch only (the encoding floor: varints, codec, CRC-32C)
    write_fsync  the bytes ``build`` makes, written with plain buffered file writes and one fsync
                 (the I/O floor)
    engine       ``plan_append`` + ``apply_append`` into a fresh partition (``--create``): offsets,
                 indexes, producer state, leader epoch, the ChangeSet's manifest, backups and
                 fsyncs; ``plan`` and ``apply`` are also timed apart
    cli          ``seglog append --input FILE --input-format jsonl --create --apply`` from a JSON
                 Lines file of the same records, wall time (start-up and JSON parsing included)

Every step's ``.log`` must be the same bytes (sha256 compared; ``problems`` in the JSON).
Goals (seglog's own, not from Kafka): the engine keeps >= 60 % of the build-only record rate
(its bookkeeping costs less than the encoding); the CLI keeps >= 40 % of the engine's rate.

Usage (from the repository root)::

    python tests/benchmarks/bench_append.py --mb 32 --json bench-append.json

Not a test: nothing here asserts a time. ``test_bench_smoke.py`` only checks it still runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks import bench_dump, bench_verify, make_segment  # noqa: E402

MIB = bench_dump.MIB
DEFAULT_VALUE_SIZES = (100, 1000)
DEFAULT_CODECS = ("none", "lz4")
BATCH_SIZE = 16384
NOW_MS = make_segment.START_TIMESTAMP + 86_400_000
GOAL_ENGINE_VS_BUILD = 0.60
GOAL_CLI_VS_ENGINE = 0.40
ALL_STEPS = ("build", "write_fsync", "engine", "cli")
GENERATOR_VERSION = 1


# -- the records ----------------------------------------------------------------------------------

def make_value(rng: random.Random, size: int) -> bytes:
    """A JSON text value of exactly ``size`` bytes (at least 16)."""
    head = (f'{{"event":"{rng.choice(make_segment._EVENTS)}","id":{rng.randrange(10**9)},'
            f'"user":"user-{rng.randrange(10**7):08d}","note":"')
    words = [head]
    length = len(head)
    while length < size:
        word = rng.choice(make_segment._WORDS)
        words.append(word + " ")
        length += len(word) + 1
    return "".join(words)[:size - 2].encode() + b'"}'


def make_records(value_size: int, count: int, seed: int) -> list:
    from seglog_cli.storage.write.builder import NewRecord

    rng = random.Random(seed)
    timestamp = make_segment.START_TIMESTAMP
    out = []
    for _ in range(count):
        timestamp += rng.randint(0, 3)
        out.append(NewRecord(make_segment.random_key(rng), make_value(rng, value_size),
                             make_segment.random_headers(rng), timestamp))
    return out


def variant_records(variant: dict) -> list:
    return make_records(variant["value_size"], variant["records"], variant["seed"])


def variant_batches(variant: dict) -> list[list]:
    from seglog_cli.storage.write.builder import group_batches

    return list(group_batches(variant_records(variant), BATCH_SIZE, None))


def write_jsonl(variant: dict, path: Path) -> None:
    """The records as ``seglog append --input-format jsonl`` reads them (utf8 payloads)."""
    with open(path, "w", encoding="utf-8") as out:
        for record in variant_records(variant):
            obj = {"key": None if record.key is None else record.key.decode(), "value": record.value.decode(),
                   "headers": [{"key": k, "value": v.decode()} for k, v in record.headers],
                   "timestamp": record.timestamp}
            out.write(json.dumps(obj, separators=(",", ":")) + "\n")


# -- the measured steps (each in its own process: ``--step NAME VARIANT_JSON``) ------------------------

def _built(variant: dict, batches: list[list]) -> tuple[list[bytes], float]:
    from seglog_cli.storage.write.append import CODECS
    from seglog_cli.storage.write.builder import build_batch

    codec = CODECS[variant["codec"]]
    started = time.perf_counter()
    out, offset = [], 0
    for records in batches:
        out.append(build_batch(records, base_offset=offset, compression=codec, partition_leader_epoch=0))
        offset += len(records)
    return out, time.perf_counter() - started


def step_build(variant: dict) -> dict:
    batches = variant_batches(variant)
    built, seconds = _built(variant, batches)
    digest = hashlib.sha256(b"".join(built)).hexdigest()
    return {"seconds": seconds, "batches": len(built), "records": sum(map(len, batches)),
            "log_bytes": sum(map(len, built)), "sha256": digest}


def step_write_fsync(variant: dict) -> dict:
    built, _ = _built(variant, variant_batches(variant))
    with _scratch(variant) as directory:
        path = Path(directory) / "plain.log"
        started = time.perf_counter()
        with open(path, "wb") as out:
            for data in built:
                out.write(data)
            out.flush()
            os.fsync(out.fileno())
        seconds = time.perf_counter() - started
        digest = _sha256(path)
    return {"seconds": seconds, "log_bytes": sum(map(len, built)), "sha256": digest}


def step_engine(variant: dict) -> dict:
    from seglog_cli.storage.write.append import apply_append, plan_append
    from seglog_cli.storage.write.append_plan import AppendOptions
    from seglog_cli.storage.config.topic_config import TopicConfig

    batches = variant_batches(variant)
    options = AppendOptions(compression=variant["codec"], create=True, now_ms=NOW_MS)
    with _scratch(variant) as directory:
        partition = Path(directory) / "data" / "bench-0"
        partition.parent.mkdir()
        started = time.perf_counter()
        plan = plan_append(partition, batches, TopicConfig(), options)
        planned = time.perf_counter()
        apply_append(plan)
        done = time.perf_counter()
        log = partition / "00000000000000000000.log"
        result = {"seconds": done - started, "plan_seconds": planned - started, "apply_seconds": done - planned,
                  "batches": len(plan.batches), "records": plan.records, "log_bytes": log.stat().st_size,
                  "sha256": _sha256(log)}
    return result


STEP_FUNCTIONS = {"build": step_build, "write_fsync": step_write_fsync, "engine": step_engine}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(4 * MIB):
            digest.update(chunk)
    return digest.hexdigest()


def _scratch(variant: dict) -> tempfile.TemporaryDirectory:
    """A fresh directory under the variant's work dir (the cache's file system), removed after."""
    work = Path(variant["work_dir"])
    work.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(dir=work)


# -- running steps in fresh processes ---------------------------------------------------------------

def measure_once(step: str, variant: dict) -> dict:
    if step == "cli":
        return measure_cli(variant)
    return bench_verify.measure_step(__file__, step, json.dumps(variant))


def measure_cli(variant: dict) -> dict:
    with _scratch(variant) as directory:
        partition = Path(directory) / "data" / "bench-0"
        partition.parent.mkdir()
        argv = bench_dump.seglog_command() + [
            "append", "--input", variant["jsonl"], "--input-format", "jsonl", "--compression", variant["codec"],
            "--create", "--apply", str(partition)]
        run = bench_dump.run_process(argv)
        if run["returncode"] != 0:
            raise RuntimeError(f"seglog append failed ({run['returncode']}): {run['stderr'][-2000:]}")
        log = partition / "00000000000000000000.log"
        return {"seconds": run["wall"], "wall": run["wall"], "peak_rss_mb": run["peak_rss_mb"],
                "log_bytes": log.stat().st_size, "sha256": _sha256(log)}


def measure(steps: tuple[str, ...], variant: dict, repeat: int) -> dict:
    """Best of ``repeat`` runs of each step; rounds interleave the steps."""
    return bench_dump.best_of([(step, variant) for step in steps], repeat, measure_once)


# -- variants and results ------------------------------------------------------------------------

def make_variant(cache_dir: Path, value_size: int, codec: str, mib: float, seed: int, need_jsonl: bool) -> dict:
    count = max(1, int(mib * MIB) // value_size)
    name = f"append-{value_size}B-{mib:g}MiB-g{GENERATOR_VERSION}-s{seed}"
    variant = {"name": f"{value_size}B-{codec}", "value_size": value_size, "codec": codec, "records": count,
               "seed": seed, "work_dir": str(cache_dir / "append-work"), "jsonl": str(cache_dir / f"{name}.jsonl")}
    if need_jsonl and not Path(variant["jsonl"]).is_file():
        partial = Path(variant["jsonl"] + ".part")
        write_jsonl(variant, partial)
        partial.rename(variant["jsonl"])
    return variant


def ratios(steps: dict) -> dict:
    out = {}
    build = steps.get("build")
    records = build["records"] if build else None
    for step in ("build", "engine", "cli"):
        if step in steps and records:
            out[f"{step}_records_per_s"] = records / steps[step]["seconds"]
    for step in ALL_STEPS:
        if step in steps:
            out[f"{step}_mb_per_s"] = steps[step]["log_bytes"] / MIB / steps[step]["seconds"]
    if "engine_records_per_s" in out and "build_records_per_s" in out:
        out["engine_vs_build"] = out["engine_records_per_s"] / out["build_records_per_s"]
    if "engine_mb_per_s" in out and "write_fsync_mb_per_s" in out:
        out["engine_vs_write_fsync"] = out["engine_mb_per_s"] / out["write_fsync_mb_per_s"]
    if "cli_records_per_s" in out and "engine_records_per_s" in out:
        out["cli_vs_engine"] = out["cli_records_per_s"] / out["engine_records_per_s"]
    if "engine" in steps:
        out["engine_plan_share"] = steps["engine"]["plan_seconds"] / steps["engine"]["seconds"]
    return out


def check_results(variant: dict, steps: dict) -> list[str]:
    """Every step must have written the same ``.log`` bytes, holding every record."""
    problems = []
    digests = {step: result["sha256"] for step, result in steps.items() if "sha256" in result}
    if len(set(digests.values())) > 1:
        problems.append(f"the steps wrote different .log bytes: {digests}")
    for step in ("build", "engine"):
        if step in steps and steps[step]["records"] != variant["records"]:
            problems.append(f"{step} saw {steps[step]['records']} records, expected {variant['records']}")
    return problems


def goals(results: list[dict]) -> dict:
    def worst(key):
        values = [r["ratios"][key] for r in results if key in r["ratios"]]
        return min(values, default=None)

    table = {"engine_vs_build": (worst("engine_vs_build"), GOAL_ENGINE_VS_BUILD),
             "cli_vs_engine": (worst("cli_vs_engine"), GOAL_CLI_VS_ENGINE)}
    return {name: {"goal": goal, "worst": value, "met": value is not None and value >= goal}
            for name, (value, goal) in table.items()}


_fmt = bench_dump.fmt


def print_table(results: list[dict], goal_status: dict, file=sys.stdout) -> None:
    columns = (("build kr/s", 10, "build_records_per_s", 1e3, 0), ("engine kr/s", 11, "engine_records_per_s", 1e3, 0),
               ("cli kr/s", 8, "cli_records_per_s", 1e3, 0), ("build MB/s", 10, "build_mb_per_s", 1, 0),
               ("write MB/s", 10, "write_fsync_mb_per_s", 1, 0), ("engine MB/s", 11, "engine_mb_per_s", 1, 0),
               ("cli MB/s", 8, "cli_mb_per_s", 1, 0), ("eng/build", 9, "engine_vs_build", 1, 2),
               ("eng/write", 9, "engine_vs_write_fsync", 1, 2), ("cli/eng", 7, "cli_vs_engine", 1, 2),
               ("plan%", 5, "engine_plan_share", 0.01, 0))
    print(f"{'variant':>12} {'records':>8} {'batches':>7} " + " ".join(f"{c[0]:>{c[1]}}" for c in columns), file=file)
    for result in results:
        steps, r = result["steps"], result["ratios"]
        batches = steps.get("build", steps.get("engine", {})).get("batches", 0)
        cells = [f"{result['variant']['name']:>12}", f"{result['variant']['records']:>8}", f"{batches:>7}"]
        cells += [f"{_fmt(r.get(key), scale, digits):>{width}}" for _, width, key, scale, digits in columns]
        print(" ".join(cells), file=file)
    print("kr/s = thousand records/s; MB/s = MiB of .log written per second; eng/build and cli/eng are "
          "record-rate ratios, eng/write a byte-rate ratio; plan% = the engine's time spent planning "
          "(the rest applies: backups, manifest, writes, fsyncs).", file=file)
    bench_dump.print_goals(goal_status, file)


# -- command line ------------------------------------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=32.0, help="MiB of values per variant (default 32)")
    parser.add_argument("--value-sizes", default=",".join(map(str, DEFAULT_VALUE_SIZES)),
                        help="value sizes in bytes, comma-separated (default %(default)s)")
    parser.add_argument("--codecs", default=",".join(DEFAULT_CODECS), help="codecs, comma-separated (default %(default)s)")
    parser.add_argument("--cache-dir", default=os.environ.get("SEGLOG_BENCH_DIR", "/tmp/seglog-bench"))
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--repeat", type=int, default=3, help="runs per step; the best is kept")
    parser.add_argument("--steps", default=",".join(ALL_STEPS), help="steps to run (default: all)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--step", nargs=2, metavar=("NAME", "VARIANT_JSON"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.value_sizes = [int(s) for s in args.value_sizes.split(",") if s.strip()]
    args.codecs = [c.strip() for c in args.codecs.split(",") if c.strip()]
    args.steps = tuple(s.strip() for s in args.steps.split(",") if s.strip())
    unknown = [s for s in args.steps if s not in ALL_STEPS]
    if unknown:
        parser.error(f"unknown steps: {', '.join(unknown)}")
    bad = [c for c in args.codecs if c not in make_segment.CODECS]
    if bad:
        parser.error(f"unknown codecs: {', '.join(bad)}")
    if any(size < 16 for size in args.value_sizes):
        parser.error("value sizes start at 16 bytes")
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.step:
        name, variant = args.step
        return bench_verify.print_step(STEP_FUNCTIONS[name], json.loads(variant))
    cache_dir = Path(args.cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    log = bench_dump.progress(args.quiet)
    results = []
    for value_size in args.value_sizes:
        for codec in args.codecs:
            variant = make_variant(cache_dir, value_size, codec, args.mb, args.seed, "cli" in args.steps)
            log(f"{variant['name']}: {variant['records']} records of ~{value_size} B values")
            load_before = os.getloadavg()
            steps = measure(args.steps, variant, args.repeat)
            result = {"variant": variant, "steps": steps, "ratios": ratios(steps),
                      "load_average": {"before": load_before, "after": os.getloadavg()}}
            result["problems"] = check_results(variant, steps)
            for problem in result["problems"]:
                log(f"  PROBLEM: {problem}")
            results.append(result)
    shutil.rmtree(cache_dir / "append-work", ignore_errors=True)
    report = {
        "machine": bench_dump.machine_info(),
        "settings": {"repeat": args.repeat, "mb": args.mb, "value_sizes": args.value_sizes, "codecs": args.codecs,
                     "batch_size": BATCH_SIZE, "steps": list(args.steps), "cache_dir": str(cache_dir)},
        "results": results,
        "goals": goals(results),
    }
    return bench_dump.finish_report(report, args, print_table)


if __name__ == "__main__":
    main()
