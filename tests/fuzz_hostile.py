"""Hostile input for the whole CLI: FIFOs, device symlinks, symlink loops, unreadable files and
directories, sparse and huge segments, out-of-range names and damaged bytes, each run through
``seglog dump``, ``verify``, ``recover`` (plan) and ``rebuild-index`` (plan) as a child process
with a timeout and a peak-RSS measurement.

A run fails when seglog exits 70 (internal error) or with a status outside {0, 1, 3, 4}, prints
a traceback, runs past the timeout, or peaks above ``RSS_LIMIT_KB``. The pytest side is
``tests/commands/test_hostile_input.py``; a long sweep::

    python tests/fuzz_hostile.py --runs 2000 [--seed 1] [--jobs 2]

prints the number of runs and the failures by class (and the first few of each).
"""

from __future__ import annotations

import argparse
import ctypes
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

SPECIAL_KINDS = ("fifo", "symlink-zero", "symlink-fifo", "symlink-loop", "symlink-dangling", "socket",
                 "directory", "chmod-file")
BYTE_KINDS = ("flip", "truncate", "zero-run")
SIZE_KINDS = ("sparse-2200m", "hole-2g")
OTHER_KINDS = ("chmod-dir", "huge-name", "v0-size-max")
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


# -- building cases ------------------------------------------------------------------------------

def fresh_log_dir(root: Path, source: str | None = None) -> tuple[Path, Path]:
    """A log dir in ``root`` holding one partition copied from the corpus (or the bundled
    example when the corpus is absent); the log dir and the partition directory."""
    log_dir = root / "logdir"
    log_dir.mkdir()
    if source and (CORPUS / "kafka-4.2.0" / "data" / source).is_dir():
        origin = CORPUS / "kafka-4.2.0" / "data" / source
    else:
        origin = EXAMPLE_LOG_DIR / "orders-0"
    partition = log_dir / (origin.name if origin.name != "orders-0" else "orders-0")
    shutil.copytree(origin, partition)
    for name in ("meta.properties", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                 "replication-offset-checkpoint", "cleaner-offset-checkpoint"):
        shutil.copyfile(EXAMPLE_LOG_DIR / name, log_dir / name)
    (log_dir / ".kafka_cleanshutdown").write_bytes(b"")
    for path in [log_dir, partition, *log_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return log_dir, partition


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
    case = Case(kind, role, log_dir, partition, target)
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

def commands(case: Case) -> list[list[str]]:
    """The argument lists run for a case: the target given directly, its partition, its log dir."""
    target = str(case.target)
    partition, log_dir = str(case.partition), str(case.log_dir)
    runs = [["dump", target], ["dump", "--deep-iteration", partition], ["verify", log_dir],
            ["verify", target], ["recover", partition], ["rebuild-index", partition]]
    if case.kind in ("sparse-2200m", "hole-2g", "v0-size-max"):
        runs.append(["recover", "--mode", "salvage", partition])
    return runs


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
               case: str = "") -> Run:
    """Run ``python -m seglog_cli argv`` with this checkout first on the path; status, stderr,
    wall time and the child's own peak RSS (``wait4``)."""
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
        peak = int(rss.read() or 0)
    run = Run(case, argv, status, stderr, seconds, peak)
    run.failures = judge(run)
    return run


# seglog runs as the grandchild of a small launcher: on Linux a child's peak RSS (ru_maxrss)
# starts from its parent's at fork, and a pytest worker that ran Spark is far over the limit;
# forked from the launcher, seglog's figure is its own
LAUNCHER = """
import os, sys
out = int(sys.argv[1])
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
os.write(out, str(usage.ru_maxrss).encode())
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


def judge(run: Run, rss_limit_kb: int = RSS_LIMIT_KB) -> list[str]:
    """The failure classes of one run (empty: it behaved)."""
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
    return failures


def run_case(case: Case) -> list[Run]:
    return [run_seglog(argv, unprivileged=case.unprivileged, case=str(case)) for argv in commands(case)]


def cleanup(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(root, ignore_errors=True)


# -- the sweep -----------------------------------------------------------------------------------

def _one(seed: int, kind: str, role: str, skip_permissions: bool) -> list[Run]:
    rng = random.Random(seed)
    source = rng.choice(CORPUS_PARTITIONS) if CORPUS.is_dir() else None
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
    plan = [(rng.randrange(2**32), rng.choice(kinds), rng.choice(ROLES)) for _ in range(args.runs // 6 + 1)]
    runs: list[Run] = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for batch in pool.map(lambda p: _one(*p, skip_permissions), plan):
            runs.extend(batch)
            if len(runs) >= args.runs:
                break
    failures = Counter(f for run in runs for f in run.failures)
    print(f"runs: {len(runs)}  failed runs: {sum(1 for r in runs if r.failures)}  "
          f"cases: {len(plan)}  slowest: {max((r.seconds for r in runs), default=0):.1f}s  "
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
