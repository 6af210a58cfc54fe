"""Peak RSS of whole ``seglog`` processes on big segments of every codec, against a bare interpreter.

The goal of issue 20 (part 4): every command below stays under 150 MB of peak resident memory
(anonymous and file-backed together: what ``ru_maxrss`` counts, pages of the mapped segment
included) on a 1 GiB segment of each codec, and ``append`` of 1 M records from JSON Lines too.
Each command runs as its own process, ``python -m seglog_cli`` of the checkout first on the
path; its peak RSS is the child's own ``ru_maxrss`` from ``os.wait4``. A bare ``python -c pass``
is measured the same way, as the baseline of the run (each command is started by a tiny launcher
process: see ``LAUNCHER``).

For each codec (one at a time: its files are deleted before the next is generated, unless
``--keep``), ``make_segment.py`` writes the segment (multi-record batches of ~3 KB, an
idempotent producer), its ``.index``/``.timeindex`` are built with the recovery walk, and a copy
gets 64 bytes of 0xFF in its middle (one batch fails its CRC: salvage cuts it out, Kafka
truncates there). Every command gets a fresh log dir of one partition ``bench-0`` whose ``.log``
is a hard link of one of the two files, with a recovery point of 0, no ``.kafka_cleanshutdown``
(so recover walks the whole segment) and ``--backup-dir`` beside it:

    dump_deep                    ``dump --deep-iteration --print-data-log SEGMENT > /dev/null``
    verify_deep                  ``verify --level deep --format json PARTITION``
    rebuild_index_apply          ``rebuild-index --apply PARTITION``, its ``.index``/``.timeindex`` removed
    recover_kafka                ``recover --mode kafka LOG_DIR`` (the plan)
    recover_kafka_apply          ``recover --mode kafka --apply LOG_DIR``
    recover_salvage              ``recover --mode salvage LOG_DIR`` on the damaged copy (the plan)
    recover_salvage_apply        ``recover --mode salvage --apply LOG_DIR`` on the damaged copy: the
                                 ``.log`` is rewritten without the damaged batch
    recover_kafka_damaged_apply  ``recover --mode kafka --apply LOG_DIR`` on the damaged copy: the
                                 ``.log`` is truncated at the damage, the tail kept in the backup
    append_apply                 ``append --input FILE --input-format jsonl --compression CODEC --create
                                 --apply PARTITION``: ``--append-records`` records (default 1 M, values of
                                 ``--append-value-bytes``, ``bench_append``'s records) into a new partition

Writing commands replace files by rename, so the hard-linked inputs stay as they were; the
benchmark checks that (size and mtime) after every command but the damaged Kafka recovery, which
truncates in place and so runs last. Each command's exit status and what it left are checked
too (``problems`` in the JSON).

Usage (from the repository root)::

    python tests/benchmarks/bench_memory.py --json bench-memory.json
    python tests/benchmarks/bench_memory.py --sizes 256 --codecs none,zstd --commands recover_salvage_apply

Not a test: nothing here asserts a number. ``test_bench_smoke.py`` only checks it still runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks import bench_append, bench_dump, make_segment  # noqa: E402

MIB = bench_dump.MIB
GOAL_MB = 150
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
LOG_COMMANDS = ("dump_deep", "verify_deep", "rebuild_index_apply", "recover_kafka", "recover_kafka_apply",
                "recover_salvage", "recover_salvage_apply", "recover_kafka_damaged_apply")
COMMANDS = LOG_COMMANDS + ("append_apply",)
DAMAGED = ("recover_salvage", "recover_salvage_apply", "recover_kafka_damaged_apply")
DAMAGE = b"\xff" * 64
SEGMENT = "00000000000000000000.log"
EXPECTED_STATUS = {"recover_kafka": 1, "recover_salvage": 1}  # a plan not applied; everything else: 0
LAYOUT_VERSION = 1


def seglog() -> list[str]:
    """The CLI as a user runs it: the interpreter's ``-m seglog_cli`` (this checkout first on the path)."""
    return [sys.executable, "-m", "seglog_cli"]


def child_env() -> dict:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


# A process's ru_maxrss starts at the RSS of the process it was forked from (the kernel records the
# forked copy's high-water mark at exec), so a command forked straight from this process would
# report at least this process's own size. Each command is therefore started by a launcher, a
# bare ``python -S -I`` (about 8 MB, below any Python process's own peak), which spawns it, waits
# for it with wait4 and writes its exit status and ru_maxrss (KiB) to a pipe.
LAUNCHER = ("import os,sys\n"
            "pid=os.posix_spawn(sys.argv[2],sys.argv[2:],os.environ)\n"
            "_,status,usage=os.wait4(pid,0)\n"
            "os.write(int(sys.argv[1]),b'%d %d'%(os.waitstatus_to_exitcode(status),usage.ru_maxrss))\n")


def run(argv: list[str], stdout=subprocess.DEVNULL) -> dict:
    """``argv`` in its own process: wall time, exit status, stderr's tail, its peak RSS (wait4)."""
    read_end, write_end = os.pipe()
    started = time.perf_counter()
    try:
        process = subprocess.Popen([sys.executable, "-S", "-I", "-c", LAUNCHER, str(write_end), *argv],
                                   stdout=stdout, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=child_env(),
                                   pass_fds=(write_end,))
    finally:
        os.close(write_end)
    try:
        stderr = process.stderr.read()
        process.wait()
        wall = time.perf_counter() - started
        report = os.read(read_end, 100).split()
    finally:
        os.close(read_end)
        process.stderr.close()
    if process.returncode != 0 or len(report) != 2:
        raise RuntimeError(f"the launcher of {argv} failed ({process.returncode}): {stderr[-2000:]!r}")
    returncode, maxrss_kib = map(int, report)
    return {"wall": wall, "returncode": returncode, "stderr": stderr.decode("utf-8", "replace")[-2000:],
            "peak_rss_mb": maxrss_kib / 1024}


# -- the inputs ----------------------------------------------------------------------------------

def prepare_segment(directory: Path, size_mib: float, codec: str, seed: int) -> dict:
    """The segment, its two index files and the damaged copy, in ``directory`` (a child process
    does the work, so this process never maps 1 GiB)."""
    settings = json.dumps([str(directory), size_mib, codec, seed])
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--prepare", settings],
                          capture_output=True, text=True, env=child_env())
    if done.returncode != 0:
        raise RuntimeError(f"preparing {directory} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _prepare(directory: str, size_mib: float, codec: str, seed: int) -> dict:
    from seglog_cli.storage.log.files import MappedFile
    from seglog_cli.storage.write.rebuild_index import recover_indexes

    directory = Path(directory)
    shutil.rmtree(directory, ignore_errors=True)
    meta = make_segment.write_segment(directory / "intact" / SEGMENT, int(size_mib * MIB), compression=codec,
                                      seed=seed)
    with MappedFile(directory / "intact" / SEGMENT) as mapped:
        rebuilt = recover_indexes(mapped, 0)
    (directory / "intact" / "00000000000000000000.index").write_bytes(rebuilt.offset_index)
    (directory / "intact" / "00000000000000000000.timeindex").write_bytes(rebuilt.time_index)
    damaged = directory / "damaged" / SEGMENT
    damaged.parent.mkdir()
    shutil.copyfile(directory / "intact" / SEGMENT, damaged)
    position = meta["size_bytes"] // 2
    fd = os.open(damaged, os.O_WRONLY)
    try:
        os.pwrite(fd, DAMAGE, position)
    finally:
        os.close(fd)
    return {**meta, "damage_position": position, "layout_version": LAYOUT_VERSION, "directory": str(directory)}


def write_append_input(path: Path, records: int, value_bytes: int, seed: int) -> None:
    """``bench_append``'s records as JSON Lines, written as they are made (flat memory)."""
    rng = random.Random(seed)
    timestamp = make_segment.START_TIMESTAMP
    partial = path.with_name(path.name + ".part")
    with open(partial, "w", encoding="utf-8") as out:
        for _ in range(records):
            timestamp += rng.randint(0, 3)
            key = make_segment.random_key(rng)
            value = bench_append.make_value(rng, value_bytes)
            headers = make_segment.random_headers(rng)
            out.write(json.dumps({"key": None if key is None else key.decode(), "value": value.decode(),
                                  "headers": [{"key": k, "value": v.decode()} for k, v in headers],
                                  "timestamp": timestamp}, separators=(",", ":")) + "\n")
    partial.rename(path)


def _log_dir(run_dir: Path, log: Path, with_indexes: bool) -> tuple[Path, Path]:
    """(log dir, partition dir) of one partition whose ``.log`` is a hard link of ``log``."""
    from seglog_cli.storage.log.checkpoints import TopicPartition, format_offset_checkpoint

    log_dir = run_dir / "data"
    partition = log_dir / "bench-0"
    partition.mkdir(parents=True)
    os.link(log, partition / SEGMENT)
    if with_indexes:
        for suffix in (".index", ".timeindex"):
            name = SEGMENT.replace(".log", suffix)
            shutil.copyfile(log.parent.parent / "intact" / name, partition / name)
    tp = TopicPartition("bench", 0)
    (log_dir / "recovery-point-offset-checkpoint").write_bytes(format_offset_checkpoint({tp: 0}))
    (log_dir / "log-start-offset-checkpoint").write_bytes(format_offset_checkpoint({tp: 0}))
    return log_dir, partition


def command_line(command: str, meta: dict, run_dir: Path, codec: str, append_input: Path | None) -> tuple[list, Path]:
    """The argv of one command (its inputs made in ``run_dir``) and the partition it works on."""
    backups = ["--backup-dir", str(run_dir / "backups")]
    source = Path(meta["directory"]) / ("damaged" if command in DAMAGED else "intact") / SEGMENT
    if command == "append_apply":
        partition = run_dir / "data" / "bench-0"
        partition.parent.mkdir(parents=True)
        return (["append", "--input", str(append_input), "--input-format", "jsonl", "--compression", codec,
                 "--create", "--apply", *backups, str(partition)], partition)
    log_dir, partition = _log_dir(run_dir, source, with_indexes=command != "rebuild_index_apply")
    argv = {
        "dump_deep": ["dump", "--deep-iteration", "--print-data-log", str(partition / SEGMENT)],
        "verify_deep": ["verify", "--level", "deep", "--format", "json", str(partition)],
        "rebuild_index_apply": ["rebuild-index", "--apply", *backups, str(partition)],
        "recover_kafka": ["recover", "--mode", "kafka", "--format", "json", str(log_dir)],
        "recover_kafka_apply": ["recover", "--mode", "kafka", "--apply", *backups, str(log_dir)],
        "recover_salvage": ["recover", "--mode", "salvage", "--format", "json", str(log_dir)],
        "recover_salvage_apply": ["recover", "--mode", "salvage", "--apply", *backups, str(log_dir)],
        "recover_kafka_damaged_apply": ["recover", "--mode", "kafka", "--apply", *backups, str(log_dir)],
    }[command]
    return argv, partition


def check_outcome(command: str, meta: dict, partition: Path, result: dict, append_records: int) -> list[str]:
    """What the command must have done (beyond its exit status)."""
    problems = []
    expected = EXPECTED_STATUS.get(command, 0)
    if result["returncode"] != expected:
        return [f"{command}: exit status {result['returncode']}, expected {expected}: {result['stderr'][-500:]}"]
    log = partition / SEGMENT
    size = log.stat().st_size if log.is_file() else None
    result["log_bytes_after"] = size
    if command == "rebuild_index_apply":
        if not all((partition / SEGMENT.replace(".log", s)).is_file() for s in (".index", ".timeindex")):
            problems.append(f"{command}: the index files were not written")
    elif command == "recover_salvage_apply":
        if size is None or not meta["size_bytes"] - 64 * 1024 < size < meta["size_bytes"]:
            problems.append(f"{command}: the .log is {size} bytes; salvage should cut one batch of "
                            f"{meta['size_bytes']}")
    elif command == "recover_kafka_damaged_apply":
        if size is None or size > meta["damage_position"]:
            problems.append(f"{command}: the .log is {size} bytes, not truncated at the damage "
                            f"({meta['damage_position']})")
    elif command == "append_apply":
        if size is None or size < append_records:
            problems.append(f"{command}: the .log is {size} bytes for {append_records} records")
    return problems


def _identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_size, info.st_mtime_ns


# -- the run ---------------------------------------------------------------------------------------

def measure_codec(codec: str, size_mib: float, commands: list[str], work_dir: Path, seed: int,
                  append_input: Path | None, append_records: int, keep: bool, say) -> tuple[list[dict], list[str]]:
    rows, problems = [], []
    directory = work_dir / f"v{LAYOUT_VERSION}-{codec}-{size_mib:g}MiB-s{seed}"
    log_commands = [c for c in commands if c in LOG_COMMANDS]
    meta = None
    if log_commands:
        say(f"{codec} {size_mib:g} MiB: generating the segment")
        meta = prepare_segment(directory, size_mib, codec, seed)
    originals = {kind: Path(directory) / kind / SEGMENT for kind in ("intact", "damaged")}
    before = {kind: _identity(path) for kind, path in originals.items()} if meta else {}
    ordered = [c for c in COMMANDS if c in commands and c != "recover_kafka_damaged_apply"]
    if "recover_kafka_damaged_apply" in commands:
        ordered.append("recover_kafka_damaged_apply")  # truncates the damaged copy in place: last
    try:
        for command in ordered:
            if command == "append_apply":
                row_meta = {"size_bytes": append_input.stat().st_size, "records": append_records}
            else:
                row_meta = meta
            run_dir = work_dir / "runs" / f"{codec}-{command}"
            shutil.rmtree(run_dir, ignore_errors=True)
            run_dir.mkdir(parents=True)
            try:
                argv, partition = command_line(command, meta or {"directory": str(directory)}, run_dir, codec,
                                               append_input)
                result = run(seglog() + argv)
                problems += check_outcome(command, row_meta, partition, result, append_records)
            finally:
                shutil.rmtree(run_dir, ignore_errors=True)
            if meta and command != "recover_kafka_damaged_apply":
                for kind, path in originals.items():
                    if _identity(path) != before[kind]:
                        problems.append(f"{command} changed the {kind} input {path} in place (its hard link)")
            row = {"command": command, "codec": codec,
                   "size_mib": None if command == "append_apply" else row_meta["size_bytes"] / MIB,
                   "records": row_meta["records"], "input_bytes": row_meta["size_bytes"],
                   "peak_rss_mb": result["peak_rss_mb"], "wall": result["wall"], "returncode": result["returncode"],
                   "log_bytes_after": result.get("log_bytes_after"),
                   "below_goal": result["peak_rss_mb"] < GOAL_MB}
            rows.append(row)
            say(f"{codec} {command}: {row['peak_rss_mb']:.0f} MB, {row['wall']:.1f} s, exit {row['returncode']}")
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)
    return rows, problems


def baseline() -> dict:
    """``python -c pass``: the smallest RSS any Python process has here."""
    result = run([sys.executable, "-c", "pass"])
    return {"peak_rss_mb": result["peak_rss_mb"], "wall": result["wall"]}


def goals(rows: list[dict]) -> dict:
    worst = max((row["peak_rss_mb"] for row in rows), default=None)
    return {"peak_rss_mb": {"goal": GOAL_MB, "worst": worst, "met": worst is not None and worst < GOAL_MB}}


def print_table(report: dict, file=sys.stdout) -> None:
    print(f"{'command':<28} {'codec':<7} {'input':>12} {'peak RSS MB':>11} {'wall s':>7} {'exit':>4} "
          f"{'< ' + str(GOAL_MB) + ' MB':>8}", file=file)
    for row in report["results"]:
        size = (f"{row['records']} rec" if row["command"] == "append_apply" else f"{row['size_mib']:.0f} MiB")
        print(f"{row['command']:<28} {row['codec']:<7} {size:>12} {row['peak_rss_mb']:>11.1f} {row['wall']:>7.1f} "
              f"{row['returncode']:>4} {'yes' if row['below_goal'] else 'NO':>8}", file=file)
    print(f"{'python -c pass (baseline)':<28} {'':<7} {'':>12} {report['baseline']['peak_rss_mb']:>11.1f} "
          f"{report['baseline']['wall']:>7.2f}", file=file)
    bench_dump.print_goals(report["goals"], file, unit=" MB")
    for problem in report["problems"]:
        print(f"PROBLEM: {problem}", file=file)


# -- command line ------------------------------------------------------------------------------------

def _names(text: str, allowed: tuple, what: str, parser) -> list[str]:
    names = [name for name in text.split(",") if name]
    unknown = [name for name in names if name not in allowed]
    if unknown or not names:
        parser.error(f"unknown {what}: {', '.join(unknown) or '(none)'} (choose from {', '.join(allowed)})")
    return names


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1024", help="segment sizes in MiB, comma-separated (default %(default)s)")
    parser.add_argument("--codecs", default=",".join(CODECS), help="comma-separated (default: all five)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated (default: all)")
    parser.add_argument("--append-records", type=int, default=1_000_000)
    parser.add_argument("--append-value-bytes", type=int, default=100)
    parser.add_argument("--work-dir", default=os.path.join(os.environ.get("SEGLOG_BENCH_DIR", "/tmp/seglog-bench"),
                                                          "memory"))
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--keep", action="store_true", help="keep the generated inputs")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.prepare is None:
        args.sizes = [float(s) for s in args.sizes.split(",") if s]
        args.codecs = _names(args.codecs, CODECS, "codec", parser)
        args.commands = _names(args.commands, COMMANDS, "command", parser)
    return args


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.prepare is not None:
        print(json.dumps(_prepare(*json.loads(args.prepare))))
        return {}
    say = bench_dump.progress(args.quiet)
    work_dir = Path(args.work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    report = {"machine": bench_dump.machine_info(),
              "settings": {"sizes_mib": args.sizes, "codecs": args.codecs, "commands": args.commands,
                           "append_records": args.append_records, "append_value_bytes": args.append_value_bytes,
                           "seed": args.seed, "seglog": seglog(), "work_dir": str(work_dir)},
              "baseline": baseline(), "results": [], "problems": []}
    report["machine"]["seglog"] = seglog()
    append_input = None
    try:
        if "append_apply" in args.commands:
            append_input = work_dir / f"append-{args.append_records}x{args.append_value_bytes}B-s{args.seed}.jsonl"
            if not append_input.is_file():
                say(f"writing {args.append_records} records of JSON Lines")
                write_append_input(append_input, args.append_records, args.append_value_bytes, args.seed)
        for codec in args.codecs:
            for index, size in enumerate(args.sizes):
                commands = [c for c in args.commands if c != "append_apply" or index == 0]  # append: once per codec
                rows, problems = measure_codec(codec, size, commands, work_dir, args.seed, append_input,
                                               args.append_records, args.keep, say)
                report["results"] += rows
                report["problems"] += problems
    finally:
        if append_input is not None and not args.keep:
            append_input.unlink(missing_ok=True)
        shutil.rmtree(work_dir / "runs", ignore_errors=True)
    report["goals"] = goals(report["results"])
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    if not args.quiet:
        print_table(report)
    return report


if __name__ == "__main__":
    main()
