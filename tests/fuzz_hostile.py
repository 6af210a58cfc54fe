"""Hostile input for the whole CLI: FIFOs, device symlinks, symlink loops, unreadable files and
directories, sparse and huge segments, out-of-range names, bad version lines and damaged bytes,
each run through ``seglog dump``, ``verify``, ``recover`` (plan), ``rebuild-index`` (plan),
``simulate-retention`` and ``diff`` (against an undamaged copy) as a child process with a
timeout and a peak-RSS measurement.

A case's log dir holds four partitions, the damaged one second, so the processes that
``--jobs`` forks over partitions (verify, recover, diff: ``storage/log/parallel.py``) meet the
damage in a child; some cases start from a generated compressed segment of
``decode_pool.MIN_PARALLEL_BYTES`` or more, so dump's and verify's deep decoding hands its
batches to workers (``storage/log/decode_pool.py``). Each command that has ``--jobs`` runs with
``--jobs 1`` and then twice with ``--jobs 3``.

A run fails when seglog exits 70 (internal error) or with a status outside {0, 1, 3, 4}, prints
a traceback, runs past the timeout, or peaks above ``RSS_LIMIT_KB``; and when its status or
stderr differs from the same command's with one job (``jobs-differ``) or from its previous run
with the same jobs (``unstable``). The pytest side is ``tests/commands/test_hostile_input.py``;
a long sweep::

    python tests/fuzz_hostile.py --runs 2000 [--seed 1] [--jobs 2]

(``--jobs``: cases run at once) prints the number of runs, the commands compared across job
counts and the failures by class (and the first few of each).
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import json
import os
import random
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("SEGLOG_CORPUS", REPO.parent / "shared" / "corpus"))
EXAMPLE_LOG_DIR = REPO / "examples" / "logdir"
CORPUS_PARTITIONS = ("smallseg-0", "txn-0", "idem-0", "codecs-0")
RSS_LIMIT_KB = 150 * 1024
TIMEOUT_S = 20.0
ALLOWED_STATUSES = {0, 1, 3, 4}
PARTITIONS = 4  # partitions in a case's log dir, copies of one; the damaged one is the second
DAMAGED = 1  # (parallel_map hands partitions out in order: a forked child, not only the caller, meets it)
BIG = "big-0"  # a source partition generated once: a compressed segment big enough for decode workers
BIG_SEGMENT_MB = 4.2  # > decode_pool.MIN_PARALLEL_BYTES (4 MiB)
JOB_COUNTS = (1, 3, 3)  # a command that has --jobs: one job, then several twice (jobs-differ, unstable)

SPECIAL_KINDS = ("fifo", "symlink-zero", "symlink-fifo", "symlink-loop", "symlink-dangling", "socket",
                 "directory", "chmod-file")
BYTE_KINDS = ("flip", "truncate", "zero-run")
SIZE_KINDS = ("sparse-2200m", "hole-2g")
OTHER_KINDS = ("chmod-dir", "huge-name", "v0-size-max", "bad-version")
KINDS = SPECIAL_KINDS + BYTE_KINDS + SIZE_KINDS + OTHER_KINDS
ROLES = ("log", "active-log", "index", "timeindex", "txnindex", "snapshot", "leader-epoch-checkpoint",
         "partition.metadata", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
         "meta.properties", ".kafka_cleanshutdown")


@dataclass
class Case:
    kind: str
    role: str
    log_dir: Path
    partition: Path
    target: Path
    replica: Path | None = None  # an undamaged copy of the log dir (diff's other replica)
    decode_workers: bool = False  # the partition has a segment big enough for decode workers (BIG)
    unprivileged: bool = False  # run without the root override of file permissions
    huge: bool = False  # measure peak RSS

    def __str__(self) -> str:
        return f"{self.kind}:{self.role}"


@dataclass
class Run:
    case: str
    argv: list[str]
    status: int | None  # None: timed out
    stderr: str
    seconds: float
    max_rss_kb: int
    failures: list[str] = field(default_factory=list)
    compared: bool = False  # judged against an earlier run of the same command (other --jobs)


# -- building cases ------------------------------------------------------------------------------

LOG_DIR_FILES = ("meta.properties", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                 "replication-offset-checkpoint", "cleaner-offset-checkpoint")


def fresh_log_dir(root: Path, source: str | None = None) -> tuple[Path, Path]:
    """A log dir in ``root`` holding ``PARTITIONS`` copies of one partition (``<topic>-0`` ..)
    from the corpus, the generated ``BIG`` partition, or the bundled example when the corpus is
    absent; the log dir and the partition to damage (``<topic>-1``: a copy of its own, the others
    hard links to ``<topic>-0``)."""
    origin = _origin(source)
    topic = origin.name.rsplit("-", 1)[0]
    log_dir = root / "logdir"
    log_dir.mkdir()
    first, partition = log_dir / f"{topic}-0", log_dir / f"{topic}-{DAMAGED}"
    shutil.copytree(origin, first)
    shutil.copytree(origin, partition)
    for number in range(2, PARTITIONS):
        shutil.copytree(first, log_dir / f"{topic}-{number}", copy_function=os.link)
    for name in LOG_DIR_FILES:
        shutil.copyfile(EXAMPLE_LOG_DIR / name, log_dir / name)
    (log_dir / ".kafka_cleanshutdown").write_bytes(b"")
    for path in [log_dir, *log_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return log_dir, partition


def replica_of(log_dir: Path, root: Path) -> Path:
    """An undamaged copy of a fresh log dir (``root/replica``) for diff: every partition linked
    to ``<topic>-0`` (which the damage never touches), the log-dir files copied."""
    replica = root / "replica"
    replica.mkdir()
    partitions = sorted(p for p in log_dir.iterdir() if p.is_dir())
    for partition in partitions:
        shutil.copytree(partitions[0], replica / partition.name, copy_function=os.link)
    for name in (*LOG_DIR_FILES, ".kafka_cleanshutdown"):
        shutil.copyfile(log_dir / name, replica / name)
    return replica


def _origin(source: str | None) -> Path:
    if source == BIG:
        return big_partition()
    if source and (CORPUS / "kafka-4.2.0" / "data" / source).is_dir():
        return CORPUS / "kafka-4.2.0" / "data" / source
    return EXAMPLE_LOG_DIR / "orders-0"


_BIG_LOCK = threading.Lock()
_BIG: list[Path] = []


def big_partition() -> Path:
    """``BIG``, made once per process (removed at exit): a 4.2 MiB lz4 segment then a small
    one (``tests/benchmarks/make_segment.py``), the indexes rebuild-index writes for them, a
    leader-epoch-checkpoint and a partition.metadata."""
    with _BIG_LOCK:
        if not _BIG:
            root = Path(tempfile.mkdtemp(prefix="seglog-hostile-big-", dir="/tmp"))
            atexit.register(shutil.rmtree, root, True)
            partition = root / "logdir" / BIG
            maker = [sys.executable, str(REPO / "tests" / "benchmarks" / "make_segment.py")]
            made = json.loads(_checked([*maker, str(partition / f"{0:020d}.log"), "--size-mb", str(BIG_SEGMENT_MB),
                                        "--compression", "lz4"]))
            _checked([*maker, str(partition / f"{made['next_offset']:020d}.log"), "--size-mb", "0.05",
                      "--compression", "lz4", "--base-offset", str(made["next_offset"])])
            (partition / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
            (partition / "partition.metadata").write_text("version: 0\ntopic_id: YmlnLXRvcGljLWlkLTAwMA\n")
            shutil.copyfile(EXAMPLE_LOG_DIR / "meta.properties", partition.parent / "meta.properties")
            _checked([sys.executable, "-m", "seglog_cli", "rebuild-index", "--apply", "--backup-dir",
                      str(root / "backups"), str(partition)])
            _BIG.append(partition)
        return _BIG[0]


def _checked(argv: list[str]) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(argv, check=True, capture_output=True, text=True, env=env, cwd="/").stdout


def role_path(role: str, log_dir: Path, partition: Path) -> Path:
    logs = sorted(partition.glob("*.log"))
    first, last = logs[0], logs[-1]
    stem = {"log": first, "active-log": last}.get(role, first)
    if role in ("log", "active-log"):
        return stem
    if role in ("index", "timeindex", "txnindex"):
        return stem.with_suffix("." + role)
    if role == "snapshot":
        snapshots = sorted(partition.glob("*.snapshot"))
        return snapshots[-1] if snapshots else partition / f"{last.stem}.snapshot"
    if role in ("leader-epoch-checkpoint", "partition.metadata"):
        return partition / role
    return log_dir / role


def build_case(root: Path, kind: str, role: str, rng: random.Random, source: str | None = None) -> Case:
    log_dir, partition = fresh_log_dir(root, source)
    target = role_path(role, log_dir, partition)
    case = Case(kind, role, log_dir, partition, target, replica_of(log_dir, root), decode_workers=source == BIG)
    if kind in SPECIAL_KINDS:
        _replace_with_special(kind, target, root)
        case.unprivileged = kind == "chmod-file"
    elif kind in BYTE_KINDS:
        _damage_bytes(kind, target, rng)
    elif kind in SIZE_KINDS:
        case.target = target = role_path("active-log", log_dir, partition) if "log" not in role else target
        _grow(kind, target)
        case.huge = True
    elif kind == "chmod-dir":
        case.target = target = partition if rng.random() < 0.7 else log_dir
        target.chmod(rng.choice((0o000, 0o311, 0o511)))
        case.unprivileged = True
    elif kind == "huge-name":
        name = rng.choice(("99999999999999999999", "9223372036854775808", "18446744073709551616"))
        suffix = rng.choice((".log", ".index", ".timeindex", ".snapshot", ".txnindex", ".log.deleted"))
        case.target = target = partition / (name + suffix)
        shutil.copyfile(role_path("log", log_dir, partition) if "log" in suffix else
                        role_path("index", log_dir, partition), target)
    elif kind == "v0-size-max":
        case.target = target = role_path("active-log", log_dir, partition)
        with open(target, "ab") as handle:  # an offset and a v0 message size of Int.MAX
            handle.write(struct.pack(">qi", 10**6, 2**31 - 1) + os.urandom(rng.randint(0, 40)))
    elif kind == "bad-version":
        _bad_version(target, rng)
    return case


def _replace_with_special(kind: str, target: Path, root: Path) -> None:
    if kind == "chmod-file":
        if not target.exists():
            target.write_bytes(b"0\n0\n")
        target.chmod(0)
        return
    if target.exists() or target.is_symlink():
        target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink-zero":
        target.symlink_to("/dev/zero")
    elif kind == "symlink-fifo":
        fifo = root / "a-fifo"
        os.mkfifo(fifo)
        target.symlink_to(fifo)
    elif kind == "symlink-loop":
        target.symlink_to(target.name)
    elif kind == "symlink-dangling":
        target.symlink_to(root / "nowhere")
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target))
        sock.close()
    elif kind == "directory":
        target.mkdir()


def _damage_bytes(kind: str, target: Path, rng: random.Random) -> None:
    data = bytearray(target.read_bytes()) if target.exists() else bytearray(b"0\n1\n0 0\n")
    if kind == "flip" and data:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == "truncate":
        del data[rng.randint(0, len(data)):]
    elif kind == "zero-run" and data:
        at = rng.randrange(len(data))
        data[at:at + rng.randint(1, 4096)] = bytes(rng.randint(1, 4096))
    target.write_bytes(bytes(data))


BAD_VERSIONS = (b"1", b"-1", b"9", b"x", b"", b"99999999999999999999")


def _bad_version(target: Path, rng: random.Random) -> None:
    """The version a reader checks first made one it refuses: a text file's first line (its
    value after ``version:`` or ``version=``), a snapshot's int16, the first batch's magic; a
    file with no version (an index) gets ``flip`` instead."""
    if target.suffix in (".index", ".timeindex", ".txnindex"):
        _damage_bytes("flip", target, rng)
        return
    data = bytearray(target.read_bytes()) if target.exists() else bytearray(b"0\n1\n0 0\n")
    if target.suffix == ".snapshot" and len(data) >= 2:
        struct.pack_into(">h", data, 0, rng.choice((-1, 2, 9, 2**15 - 1)))
    elif target.suffix == ".log" and len(data) > 16:
        data[16] = rng.choice((3, 9, 255))
    else:
        lines = bytes(data).split(b"\n")
        at = next((n for n, line in enumerate(lines) if line.startswith(b"version")), 0)
        key, sep, _value = lines[at].partition(b":" if b":" in lines[at] else b"=")
        prefix = key + sep + (b" " if sep == b":" else b"") if sep else b""
        lines[at] = prefix + rng.choice(BAD_VERSIONS)
        data = bytearray(b"\n".join(lines))
    target.write_bytes(bytes(data))


def _grow(kind: str, log: Path) -> None:
    """A sparse 2200 MiB ``.log`` (real batches, then a hole), or real batches, a hole to just
    past 2^31 and the same batches again there."""
    if kind == "sparse-2200m":
        os.truncate(log, 2200 * 1024 * 1024)
        return
    data = log.read_bytes()
    with open(log, "r+b") as handle:
        handle.seek(2**31 + 4096)
        handle.write(data)


# -- running seglog ------------------------------------------------------------------------------

def commands(case: Case, job_counts: tuple[int, ...] = JOB_COUNTS) -> list[list[str]]:
    """The argument lists run for a case: the target given directly, its partition, its log dir,
    and diff against the undamaged copy. A command with a parallel path runs once per entry of
    ``job_counts``: recover, verify and diff fork over the log dir's partitions, dump and verify
    (deep, one partition: only with a big segment) hand a big compressed segment's batches to
    decode workers. rebuild-index and simulate-retention have no --jobs (no parallel path): they
    run once."""
    target = str(case.target)
    partition, log_dir = str(case.partition), str(case.log_dir)
    parallel = [["dump", "--deep-iteration", partition], ["verify", log_dir], ["recover", log_dir]]
    if case.decode_workers:
        parallel.append(["verify", "--level", "deep", partition])
    single = [["dump", target], ["verify", target], ["rebuild-index", partition], ["simulate-retention", log_dir]]
    if case.replica is not None:
        parallel.append(["diff", str(case.replica), log_dir])
        single.append(["diff", str(case.replica / case.partition.name), partition])
    if case.kind in ("sparse-2200m", "hole-2g", "v0-size-max"):
        single.append(["recover", "--mode", "salvage", partition])
    return single + [[argv[0], "--jobs", str(jobs), *argv[1:]] for argv in parallel for jobs in job_counts]


def without_jobs(argv: list[str]) -> tuple[str, ...]:
    """``argv`` less its ``--jobs N``: the command whose runs with any job count must agree."""
    at = argv.index("--jobs") if "--jobs" in argv else len(argv)
    return tuple(argv[:at] + argv[at + 2:])


def _limit_memory() -> None:
    """In the child, before exec: an address-space cap, so a runaway run fails instead of
    taking the machine (the peak RSS is judged separately)."""
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))


def _drop_file_permission_override() -> None:
    """In the child, before exec: give up root's CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH so
    mode bits apply as they do to an unprivileged user (PR_CAPBSET_DROP)."""
    _limit_memory()
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def can_drop_permissions() -> str | None:
    """None when permission-denied cases can be run here, else the reason they cannot."""
    if os.geteuid() != 0:
        return None  # an unprivileged user: mode bits already apply
    probe = subprocess.run([sys.executable, "-c", "print(1)"], preexec_fn=_drop_file_permission_override,
                           capture_output=True)
    return None if probe.returncode == 0 else "cannot drop CAP_DAC_OVERRIDE (prctl PR_CAPBSET_DROP refused)"


def run_seglog(argv: list[str], *, unprivileged: bool = False, timeout: float = TIMEOUT_S,
               case: str = "", previous: Run | None = None) -> Run:
    """Run ``python -m seglog_cli argv`` with this checkout first on the path; status, stderr,
    wall time and the child's own peak RSS (``wait4``), judged (against ``previous``, the last
    run of the same command with any ``--jobs``, when given)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="100")
    env.pop("SEGLOG_DEBUG", None)
    preexec = _drop_file_permission_override if unprivileged and os.geteuid() == 0 else _limit_memory
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as rss:
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(rss.fileno()), sys.executable, "-m", "seglog_cli",
                                 *argv], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                preexec_fn=preexec, cwd="/", pass_fds=(rss.fileno(),), start_new_session=True)
        status, _usage = _wait(proc, timeout)
        seconds = time.monotonic() - start
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
        rss.seek(0)
        peak = int((rss.read() or b"0").split()[0])
    run = Run(case, argv, status, stderr, seconds, peak, compared=previous is not None)
    run.failures = judge(run, previous=previous)
    return run


# seglog runs as the grandchild of a small launcher: on Linux a child's peak RSS (ru_maxrss)
# starts from its parent's at fork, and a pytest worker that ran Spark is far over the limit;
# forked from the launcher, seglog's figure is its own. It writes "peak-RSS-KB CPU-seconds".
LAUNCHER = """
import os, sys
out = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
os.write(out, f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}".encode())
code = os.waitstatus_to_exitcode(status)
os._exit(code if code >= 0 else 128 - code)
"""


def _wait(proc: subprocess.Popen, timeout: float):
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher and seglog
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            return None, None
        time.sleep(0.01)


def judge(run: Run, rss_limit_kb: int = RSS_LIMIT_KB, previous: Run | None = None) -> list[str]:
    """The failure classes of one run (empty: it behaved). ``previous``: the last run of the
    same command (``without_jobs``): its status and stderr must be this run's, whatever the
    job counts (``jobs-differ`` when they differ, ``unstable`` when they are the same)."""
    failures = []
    if run.status is None:
        failures.append("timeout")
    elif run.status == 70 or "internal error" in run.stderr:
        failures.append("internal-error")
    elif run.status not in ALLOWED_STATUSES:
        failures.append(f"status-{run.status}")
    if "Traceback" in run.stderr:
        failures.append("traceback")
    if run.max_rss_kb > rss_limit_kb:
        failures.append("rss")
    if previous is not None and None not in (run.status, previous.status) and (
            (run.status, run.stderr) != (previous.status, previous.stderr)):
        failures.append("unstable" if run.argv == previous.argv else "jobs-differ")
    return failures


def run_case(case: Case, job_counts: tuple[int, ...] = JOB_COUNTS) -> list[Run]:
    return run_commands(case, commands(case, job_counts))


def run_commands(case: Case, argvs: list[list[str]]) -> list[Run]:
    """Each argument list run on ``case``, judged against the previous run of the same command
    (``without_jobs``)."""
    runs: list[Run] = []
    last: dict[tuple[str, ...], Run] = {}
    for argv in argvs:
        key = without_jobs(argv)
        last[key] = run_seglog(argv, unprivileged=case.unprivileged, case=str(case), previous=last.get(key))
        runs.append(last[key])
    return runs


def cleanup(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(root, ignore_errors=True)


# -- the sweep -----------------------------------------------------------------------------------

RUNS_PER_CASE = 18  # about: commands(case) with JOB_COUNTS


def _one(seed: int, kind: str, role: str, skip_permissions: bool) -> list[Run]:
    rng = random.Random(seed)
    source = rng.choice((*CORPUS_PARTITIONS, BIG) if CORPUS.is_dir() else (None, None, BIG))
    if source == BIG and rng.random() < 0.5:
        role = "log"  # the big compressed segment itself, damaged under the decode workers
    root = Path(tempfile.mkdtemp(prefix="seglog-hostile-", dir="/tmp"))
    try:
        case = build_case(root, kind, role, rng, source)
        if case.unprivileged and skip_permissions:
            return []
        return run_case(case)
    finally:
        cleanup(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500, help="seglog runs to make (about)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds to draw from")
    parser.add_argument("--show", type=int, default=3, help="failures shown per class")
    args = parser.parse_args(argv)
    kinds = args.kinds.split(",")
    skip_permissions = can_drop_permissions() is not None
    rng = random.Random(args.seed)
    plan = [(rng.randrange(2**32), rng.choice(kinds), rng.choice(ROLES)) for _ in range(args.runs // RUNS_PER_CASE + 1)]
    runs: list[Run] = []
    cases = 0
    with ThreadPoolExecutor(args.jobs) as pool:
        for batch in pool.map(lambda p: _one(*p, skip_permissions), plan):
            runs.extend(batch)
            cases += bool(batch)
            if len(runs) >= args.runs:
                break
    failures = Counter(f for run in runs for f in run.failures)
    print(f"runs: {len(runs)}  failed runs: {sum(1 for r in runs if r.failures)}  "
          f"cases: {cases}  compared across --jobs: {sum(r.compared for r in runs)}  "
          f"slowest: {max((r.seconds for r in runs), default=0):.1f}s  "
          f"max RSS: {max((r.max_rss_kb for r in runs), default=0) // 1024} MB")
    for name, count in failures.most_common():
        print(f"  {name}: {count}")
        for run in [r for r in runs if name in r.failures][:args.show]:
            last = run.stderr.strip().splitlines()[-1:] or [""]
            print(f"    {run.case} seglog {' '.join(run.argv)} -> {run.status} "
                  f"({run.seconds:.1f}s, {run.max_rss_kb // 1024} MB): {last[0][:200]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
