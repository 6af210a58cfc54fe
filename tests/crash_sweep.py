"""The crash sweep of issue 15: kill every writing command before each of its write steps in turn.

    python -m tests.crash_sweep --command all --jobs 2        # from the repository root, venv active
    python -m tests.crash_sweep --command all --max-points 0 --timed 20 --jobs 2   # random-time kills only
    PYTHONPATH=. python -m tests.crash_sweep --command recover-kafka --max-points 5 --keep

``--command`` takes a command (recover, rebuild-index, append, simulate-retention, undo: all its
fixtures), a fixture name (``recover-kafka``, ``undo-append``, ...; ``--list`` names them) or
``all``. ``--command scale`` runs the whole-log-dir fixtures (``recover-scale`` and its undo: a
killed broker's log dir of 300 partitions, 1 % damaged, from ``make_broker_logdir``), whose
hundreds of write steps are sampled: ``--sample N`` takes N kill points spread evenly across the
run, the first and the last included. Each fixture is a copy of real corpus partitions (damaged for recover and rebuild-index)
and one ``seglog`` command line, run as ``python -m seglog_cli`` with this checkout first on
PYTHONPATH. An ``undo-*`` fixture runs its command uninterrupted first and sweeps ``undo --apply``
of that run's backup.

A reference run with ``SEGLOG_FAULT_TRACE=FILE`` lists the write steps (``N<TAB>what`` per line);
every N from 1 to their number is a kill point (``--max-points`` takes the first ones only). For
each, on a fresh copy of the fixture in its own directory (the log dir, the backup roots, a
canary file beside them):

1. the log dir is snapshot (relative path -> bytes) and must be byte-identical to the
   reference's fresh copy, whose ``seglog verify --format json`` error findings were taken once
   as a set of (relative path, code, offset);
2. the command runs with ``SEGLOG_FAULT_AT=N`` and must end with status 137 after printing
   ``... fault injected before write step N``;
3. ``lost``: every original file's bytes are still somewhere: unchanged or appended to at the
   same path, truncated with the removed tail (or the whole file) kept in a file under a backup
   root, whole under a backup root, or whole elsewhere in the log dir (a rename);
4. ``worse``: verify of the killed state reports no error finding outside the set of step 1;
5. ``outside``: no file beside the log dir and the run's backup root changed or appeared;
6. ``rerun``: the same command again, without the fault and with a fresh ``--backup-dir``, exits
   as the uninterrupted run did, leaves no ``<log dir>/.seglog-journal`` and leaves the log dir
   byte-identical (every file's sha256) to an uninterrupted run on a fresh copy; for ``undo-*``
   to the fixture as it was before its command.

``--timed N`` adds N trials per fixture killed at random times instead, some after the command
finished, each followed by the same command line again (:mod:`tests.crash_sweep_timed`; the
append fixture names its sequences, so that a run again after it finished is already appended).

The reference itself is checked too (``reference``: exit status 0, two uninterrupted runs give
the same bytes, an undo gives the fixture back, at least one traced step per file the run
creates, changes or removes: fewer means the trace is broken). The output has, per fixture, ``kill points`` and
``failures`` and one line per failure (fixture, N, the step killed, the check, why), then a total
line; the exit status is 1 when anything failed.

What the sweep assumes of the write path: the two variables above (each process counts its own
steps from 1; the trace line is written before the fault fires), the journal file name, and that
``--backup-dir DIR`` puts a run's backups in one new directory under DIR. ``undo`` gets
``--backup-dir`` only when its ``--help`` offers it; else its backups are looked for in the
default ``seglog-backups/`` beside the log dir. The backup being undone must stay untouched.
``append`` reads the wall clock (markers, producer snapshots): the sweep pins ``time.time()`` in
its subprocesses so that two runs write the same bytes; a write path that takes the clock from
elsewhere needs a way to fix it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

from tests.conftest import CORPUS, REPO, restore_preallocated

FAULT_ENV, TRACE_ENV, FAULT_EXIT = "SEGLOG_FAULT_AT", "SEGLOG_FAULT_TRACE", 137
JOURNAL = ".seglog-journal"
LOG_DIR_FILES = ("meta.properties", "log-start-offset-checkpoint", "recovery-point-offset-checkpoint",
                 "replication-offset-checkpoint", "cleaner-offset-checkpoint", ".kafka_cleanshutdown", ".lock")
DATA = "kafka-4.2.0/data"
KILLED = "kafka-4.2.0/recovery-cases/a-append-garbage-active-log/before"  # plain-0 after a kill -9
TIMEOUT = 600


# -- fixtures -----------------------------------------------------------------------------------

def _flip(relative: str, position: int) -> Callable[[Path], None]:
    def damage(log_dir: Path) -> None:
        with open(log_dir / relative, "r+b") as handle:
            handle.seek(position)
            byte = handle.read(1)[0]
            handle.seek(position)
            handle.write(bytes([byte ^ 0xFF]))
    return damage


def _damage_indexes(log_dir: Path) -> None:
    """smallseg-0: one .index deleted, one .index entry pointing nowhere, one torn .timeindex."""
    (log_dir / "smallseg-0/00000000000000000300.index").unlink()
    _flip("smallseg-0/00000000000000000900.index", 1)(log_dir)
    os.truncate(log_dir / "smallseg-0/00000000000000001500.timeindex", 30)


@dataclass(frozen=True)
class Fixture:
    name: str
    source: str  # a log dir in the corpus
    partition: str
    args: tuple[str, ...]  # the command line without --backup-dir and the partition dir
    damage: Callable[[Path], None] | None = None
    undo_of: "Fixture | None" = None
    clock_ms: int | None = None  # pin the wall clock (append's markers and snapshots read it)
    build: Callable[[Path], None] | None = None  # makes the log dir instead of a corpus copy

    @property
    def command(self) -> str:
        return self.args[0]


VALUES = tuple(arg for i in range(30) for arg in ("--value", f"record-{i}-" + "x" * 400))
BASE_FIXTURES = (
    Fixture("recover-kafka", KILLED, "plain-0", ("recover", "--apply", "--mode", "kafka"),
            _flip("plain-0/00000000000000006225.log", 200000)),
    Fixture("recover-salvage", KILLED, "plain-0", ("recover", "--apply", "--mode", "salvage"),
            _flip("plain-0/00000000000000006225.log", 200000)),
    Fixture("rebuild-index", DATA, "smallseg-0", ("rebuild-index", "--apply"), _damage_indexes),
    Fixture("append", DATA, "smallseg-0",
            ("append", "--apply", "--config", "segment.bytes=65536", "--timestamp", "1795346890000",
             "--linger-records", "4", "--producer-id", "4242", "--base-sequence", "0", "--transactional",
             "--end-txn", "abort", *VALUES), clock_ms=1795346895000),
    Fixture("simulate-retention", DATA, "smallseg-0",
            ("simulate-retention", "--apply", "--format", "text", "--now", "1795346900000",
             "--config", "retention.bytes=400000")),
)
# repair: a copy of in-sync broker 2 (flipped bits, a zeroed range; a lost last segment for
# --tail; a lost middle segment) made whole from broker 1 of the corpus, which is only read
REPLICAS = "kafka-4.2.0/replicas/in-sync"
HEALTHY = str(CORPUS / REPLICAS / "broker-1" / "events-0")


def _damage_replica(log_dir: Path) -> None:
    _flip("events-0/00000000000000000000.log", 300000)(log_dir)
    _flip("events-0/00000000000000002221.log", 500000)(log_dir)
    with open(log_dir / "events-0/00000000000000002221.log", "r+b") as handle:
        handle.seek(700000)
        handle.write(bytes(20000))


def _lose_last_segment(log_dir: Path) -> None:
    _flip("events-0/00000000000000002221.log", 500000)(log_dir)
    for path in (log_dir / "events-0").glob("00000000000000004434.*"):
        path.unlink()


def _lose_middle_segment(log_dir: Path) -> None:
    for path in (log_dir / "events-0").glob("00000000000000002221.*"):
        path.unlink()


BASE_FIXTURES += (
    Fixture("repair", f"{REPLICAS}/broker-2", "events-0", ("repair", "--apply", "--from", HEALTHY), _damage_replica),
    Fixture("repair-tail", f"{REPLICAS}/broker-2", "events-0", ("repair", "--apply", "--tail", "--from", HEALTHY),
            _lose_last_segment),
    Fixture("repair-middle", f"{REPLICAS}/broker-2", "events-0", ("repair", "--apply", "--from", HEALTHY),
            _lose_middle_segment),
)
FIXTURES = BASE_FIXTURES + tuple(
    Fixture(f"undo-{base.name}", base.source, base.partition, ("undo", "--apply"), undo_of=base)
    for base in BASE_FIXTURES)


def _broker_log_dir(partitions: int) -> Callable[[Path], None]:
    """A broker's killed log dir of ``partitions`` data partitions (make_broker_logdir: private
    copies, no .kafka_cleanshutdown, 1 % damaged: torn tails, CRC flips, a missing index). The
    active indexes are trimmed to their entries: a sweep holds every file of the log dir in
    memory, and a preallocated 10 MiB pair per partition would be gigabytes."""
    def build(log_dir: Path) -> None:
        from tests.benchmarks.make_broker_logdir import make_broker_logdir
        make_broker_logdir(log_dir, partitions=partitions, segments=4, unclean=True, damage_percent=1, copy=True,
                           coordinator_partitions=10)
        for index in [*log_dir.glob("*/*.index"), *log_dir.glob("*/*.timeindex")]:
            entry = 8 if index.suffix == ".index" else 12
            kept = len(index.read_bytes().rstrip(b"\0"))
            os.truncate(index, -(-kept // entry) * entry)
    return build


# kill points sampled across a whole-log-dir run (--sample): not in "all", whose every point is run
SCALE = Fixture("recover-scale", "", "", ("recover", "--apply", "--mode", "kafka"), build=_broker_log_dir(300))
SCALE_FIXTURES = (SCALE, Fixture("undo-recover-scale", "", "", ("undo", "--apply"), undo_of=SCALE, build=SCALE.build))
BY_NAME = {fixture.name: fixture for fixture in FIXTURES + SCALE_FIXTURES}


def copy_fixture(fixture: Fixture, log_dir: Path) -> None:
    """The fixture's partition and log-dir files, writable, preallocated indexes restored, damaged."""
    if fixture.build is not None:
        fixture.build(log_dir)
        (log_dir / ".lock").touch()
        return
    source = CORPUS / fixture.source
    shutil.copytree(source / fixture.partition, log_dir / fixture.partition)
    for name in LOG_DIR_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, log_dir / name)
    (log_dir / ".lock").touch()  # every broker's log dir has one (seglog creates it where missing)
    for path in [log_dir, *log_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    restore_preallocated(log_dir, fixture.source)
    if fixture.damage:
        fixture.damage(log_dir)


# -- running seglog -----------------------------------------------------------------------------

class SetupError(Exception):
    """A fixture could not be prepared: reported as a failure of the ``setup`` check."""


# ``python -m seglog_cli`` with time.time() pinned to argv[1] ms: two runs of append then write the
# same marker and snapshot bytes (the command has no option for the broker clock)
PINNED_CLOCK = ("import runpy, sys, time; now = int(sys.argv.pop(1)) / 1000; time.time = lambda: now; "
                "runpy.run_module('seglog_cli', run_name='__main__', alter_sys=True)")


def command_line(args: list[str], extra_env: dict[str, str] | None = None,
                 clock_ms: int | None = None) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run ``seglog ARGS`` from this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in (FAULT_ENV, TRACE_ENV)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    python = [sys.executable, "-m", "seglog_cli"] if clock_ms is None else [sys.executable, "-c", PINNED_CLOCK,
                                                                             str(clock_ms)]
    return [*python, *args], {**env, **(extra_env or {})}


def seglog(args: list[str], extra_env: dict[str, str] | None = None,
           clock_ms: int | None = None) -> subprocess.CompletedProcess:
    argv, env = command_line(args, extra_env, clock_ms)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT)


@lru_cache(maxsize=None)
def undo_takes_backup_dir() -> bool:
    return "--backup-dir" in seglog(["undo", "--help"], {"COLUMNS": "200"}).stdout


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1][:300] if lines else "(nothing on stderr)"


@dataclass
class Workspace:
    """One run's directory: ``data`` (the log dir), backup roots, a canary, the backup undone."""

    fixture: Fixture
    root: Path
    undone: Path | None = None

    @property
    def log_dir(self) -> Path:
        return self.root / "data"

    def prepare(self) -> "Workspace":
        self.root.mkdir(parents=True)
        copy_fixture(self.fixture.undo_of or self.fixture, self.log_dir)
        (self.root / "canary").write_bytes(b"nothing may touch this file\n")
        if self.fixture.undo_of:
            backups = self.root / "undone-backups"
            done = seglog(self.argv(backups, self.fixture.undo_of), clock_ms=self.fixture.undo_of.clock_ms)
            if done.returncode != 0:
                raise SetupError(f"the command to undo exited {done.returncode}: {last_line(done.stderr)}")
            self.undone = single_entry(backups)
        return self

    def argv(self, backup_root: Path, fixture: Fixture | None = None) -> list[str]:
        fixture = fixture or self.fixture
        if fixture.undo_of is None:
            return [*fixture.args, "--backup-dir", str(backup_root), str(self.log_dir / fixture.partition)]
        backup = ["--backup-dir", str(backup_root)] if undo_takes_backup_dir() else []
        return [*fixture.args, *backup, str(self.undone)]

    def backup_roots(self, backup_root: Path) -> list[Path]:
        """Where this run may keep bytes: its backup root (undo: also the backup it undoes)."""
        if self.fixture.undo_of is None:
            return [backup_root]
        own = backup_root if undo_takes_backup_dir() else self.root / "seglog-backups"
        return [own, self.undone]

    def run(self, label: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return seglog(self.argv(self.root / f"backups-{label}"), extra_env, self.fixture.clock_ms)


def single_entry(directory: Path) -> Path:
    entries = list(directory.iterdir()) if directory.is_dir() else []
    if len(entries) != 1:
        raise SetupError(f"expected one backup directory under {directory}, found {len(entries)}")
    return entries[0]


# -- snapshots and verify -------------------------------------------------------------------------

def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_tree(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes), leaving out the trees in ``skip``."""
    if not root.is_dir():
        return {}
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*"))
            if path.is_file() and not any(path.is_relative_to(s) for s in skip)}


def digests(tree: dict[str, bytes]) -> dict[str, str]:
    return {name: sha(data) for name, data in tree.items()}


def verify_errors(log_dir: Path) -> set[tuple[str, str, int | None]]:
    """``seglog verify --format json``'s error findings as (relative path, code, offset)."""
    done = seglog(["verify", "--format", "json", str(log_dir)])
    try:
        report = json.loads(done.stdout)
    except ValueError:
        raise SetupError(f"verify exited {done.returncode} without a report: {last_line(done.stderr)}") from None
    findings = report["findings"] + [f for partition in report["partitions"] for f in partition["findings"]]
    return {(_relative(f["path"], log_dir), f["code"], f["offset"]) for f in findings if f["severity"] == "error"}


def _relative(path: str | None, log_dir: Path) -> str:
    if path and Path(path).is_relative_to(log_dir):
        return Path(path).relative_to(log_dir).as_posix()
    return str(path)


def files_changed(before: dict[str, str], after: dict[str, str]) -> int:
    return len(set(before) ^ set(after)) + sum(before[name] != after[name] for name in set(before) & set(after))


def state_difference(expected: dict[str, str], actual: dict[str, str]) -> str:
    """'' when equal, else the paths missing, extra and changed (a few of each)."""
    parts = []
    for label, names in (("missing", sorted(set(expected) - set(actual))),
                         ("extra", sorted(set(actual) - set(expected))),
                         ("changed", sorted(n for n in set(expected) & set(actual) if expected[n] != actual[n]))):
        if names:
            parts.append(f"{label} {', '.join(names[:4])}" + (f" (+{len(names) - 4})" if len(names) > 4 else ""))
    return "; ".join(parts)


# -- the checks -----------------------------------------------------------------------------------

def lost_files(original: dict[str, bytes], log_dir: Path, backup_roots: list[Path]) -> list[str]:
    """Original files whose bytes are nowhere any more (check 3)."""
    current = read_tree(log_dir)
    kept = {sha(data) for root in backup_roots for data in read_tree(root).values()}
    anywhere = kept | set(digests(current).values())
    lost = []
    for name, data in original.items():
        now = current.get(name)
        if not data or (now is not None and now.startswith(data)) or sha(data) in anywhere:
            continue  # unchanged, appended to, kept whole somewhere
        if now is not None and data.startswith(now) and sha(data[len(now):]) in kept:
            continue  # truncated, the tail kept
        state = "removed" if now is None else f"now {len(now)} bytes"
        lost.append(f"{name} ({len(data)} bytes, {state})")
    return lost


@dataclass
class Reference:
    """What an uninterrupted run does to a fresh copy of the fixture."""

    steps: list[str]
    exit_code: int
    original: dict[str, str]  # the log dir before the command
    end: dict[str, str]  # after it (for undo: the fixture before its command)
    baseline: set = field(default_factory=set)  # verify's error findings before the command
    floor: int = 0  # files the run created, changed or removed: fewer kill points means a broken trace
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0  # how long the uninterrupted run took (timed trials kill within 1.25 times it)


def reference_run(fixture: Fixture, root: Path) -> Reference:
    first, second = Workspace(fixture, root / "reference").prepare(), Workspace(fixture, root / "reference-2").prepare()
    original, baseline = digests(read_tree(first.log_dir)), verify_errors(first.log_dir)
    trace = root / "reference.trace"
    started = time.monotonic()
    done = first.run("uninterrupted", {TRACE_ENV: str(trace)})
    seconds = time.monotonic() - started
    steps = [line.split("\t", 1)[1] for line in trace.read_text().splitlines()] if trace.exists() else []
    end = digests(read_tree(first.log_dir))
    reference = Reference(steps, done.returncode, original, end, baseline, files_changed(original, end),
                          seconds=seconds)
    if len(steps) < max(1, reference.floor):
        reference.problems.append(f"{len(steps)} write steps traced for {reference.floor} files changed (each takes "
                                  f"one at least): no {TRACE_ENV} trace, or the command changed nothing")
    if done.returncode != 0:
        reference.problems.append(f"the uninterrupted run exited {done.returncode}: {last_line(done.stderr)}")
    second.run("uninterrupted")
    if difference := state_difference(end, digests(read_tree(second.log_dir))):
        reference.problems.append(f"two uninterrupted runs leave different log dirs: {difference}")
    if fixture.undo_of:
        pristine = root / "pristine"
        copy_fixture(fixture.undo_of, pristine)
        reference.end = digests(read_tree(pristine))
        # undo's promise is the fixture as it was: the damage it had (recover's input) comes back
        # with it, and is not "worse"; anything beyond the union of both states is
        reference.baseline |= verify_errors(pristine)
        if difference := state_difference(reference.end, end):
            reference.problems.append(f"undo does not give the fixture back: {difference}")
    return reference


@dataclass
class Failure:
    fixture: str
    point: int
    step: str
    check: str
    detail: str

    def line(self) -> str:
        return f"{self.fixture} N={self.point} [{self.step}] {self.check}: {self.detail}"


def kill_point(fixture: Fixture, reference: Reference, point: int, work: Path) -> list[tuple[str, str]]:
    """Checks 1-6 at one kill point: (check, why) for each that failed."""
    space = Workspace(fixture, work).prepare()
    original = read_tree(space.log_dir)
    if digests(original) != reference.original:
        return [("setup", "the fresh copy differs from the reference's: "
                 + state_difference(reference.original, digests(original)))]
    roots = space.backup_roots(work / "backups-killed")
    beside = (space.log_dir, roots[0])  # for undo, the backup it undoes is outside too
    outside = digests(read_tree(work, skip=beside))
    done = space.run("killed", {FAULT_ENV: str(point)})
    if done.returncode != FAULT_EXIT or f"before write step {point} " not in done.stderr:
        return [("killed", f"exit {done.returncode}, not killed before step {point}: {last_line(done.stderr)}")]
    problems = []
    if lost := lost_files(original, space.log_dir, roots):
        problems.append(("lost", "; ".join(lost[:4]) + (f" (+{len(lost) - 4})" if len(lost) > 4 else "")))
    if worse := sorted(verify_errors(space.log_dir) - reference.baseline, key=str):
        problems.append(("worse", "new verify errors " + ", ".join(f"{c} {p}@{o}" for p, c, o in worse[:4])))
    if changed := state_difference(outside, digests(read_tree(work, skip=beside))):
        problems.append(("outside", changed))
    return problems + rerun_problems(space, reference)


def rerun_problems(space: Workspace, reference: Reference) -> list[tuple[str, str]]:
    """Check 6: the next run finishes (or rolls back) the interrupted one."""
    done = space.run("rerun")
    problems = []
    if done.returncode != reference.exit_code:
        problems.append(f"exit {done.returncode} (uninterrupted: {reference.exit_code}): {last_line(done.stderr)}")
    if (space.log_dir / JOURNAL).exists():
        problems.append(f"{JOURNAL} left behind")
    if difference := state_difference(reference.end, digests(read_tree(space.log_dir))):
        problems.append("log dir differs from an uninterrupted run's: " + difference)
    return [("rerun", problem) for problem in problems]


# -- the sweep ------------------------------------------------------------------------------------

@dataclass
class SweepResult:
    fixture: Fixture
    points: int
    failures: list[Failure]
    seconds: float = 0.0
    floor: int = 1  # the fewest kill points a working trace gives (Reference.floor)
    trials: int = 0  # timed trials (tests/crash_sweep_timed.py)
    finished: int = 0  # of them, runs that had finished when their kill came


def sampled(count: int, sample: int) -> list[int]:
    """``sample`` kill points spread evenly from the first step to the last (all when fewer)."""
    if sample >= count:
        return list(range(1, count + 1))
    return sorted({1 + round(i * (count - 1) / max(1, sample - 1)) for i in range(sample)})


def sweep(fixture: Fixture, root: Path, jobs: int = 1, max_points: int | None = None,
          keep: bool = False, sample: int | None = None, timed: int = 0, seed: int = 0) -> SweepResult:
    """Every kill point of one fixture (the first ``max_points``, or ``sample`` of them spread
    across the whole run), ``jobs`` at a time; then ``timed`` trials killed at random times
    (:mod:`tests.crash_sweep_timed`, the first let finish)."""
    started = time.monotonic()
    try:
        reference = reference_run(fixture, root / fixture.name)
    except SetupError as exc:
        return SweepResult(fixture, 0, [Failure(fixture.name, 0, "-", "setup", str(exc))])
    failures = [Failure(fixture.name, 0, "-", "reference", problem) for problem in reference.problems]
    points = list(range(1, len(reference.steps) + 1))[:max_points]
    if sample is not None:
        points = sampled(len(points), sample)

    def one(point: int) -> list[Failure]:
        work = root / fixture.name / f"kill-{point}"
        try:
            found = kill_point(fixture, reference, point, work)
        except SetupError as exc:
            found = [("setup", str(exc))]
        if not (keep and found):
            shutil.rmtree(work, ignore_errors=True)
        return [Failure(fixture.name, point, reference.steps[point - 1], check, why) for check, why in found]

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for found in pool.map(one, points):
            failures.extend(found)
    trials = timed if not reference.problems else 0
    finished = 0
    if trials:
        from tests.crash_sweep_timed import timed_trials

        found, finished = timed_trials(fixture, reference, root / fixture.name, trials, seed, jobs, keep)
        failures.extend(found)
    if not keep:
        shutil.rmtree(root / fixture.name, ignore_errors=True)
    return SweepResult(fixture, len(points), failures, time.monotonic() - started, max(1, reference.floor),
                       trials, finished)


def select(name: str) -> list[Fixture]:
    chosen = [f for f in FIXTURES if name in ("all", f.name, f.command)] or [
        f for f in SCALE_FIXTURES if name in (f.name, "scale")]
    if not chosen:
        raise SystemExit(f"unknown --command {name!r}: all, a command or one of {', '.join(BY_NAME)}")
    return chosen


def report(result: SweepResult) -> None:
    fixture = result.fixture
    checks = Counter(failure.check for failure in result.failures)
    by_check = f" ({', '.join(f'{check} {count}' for check, count in sorted(checks.items()))})" if checks else ""
    trials = f", timed trials {result.trials} ({result.finished} finished first)" if result.trials else ""
    print(f"{fixture.command} ({fixture.name}): kill points {result.points}{trials}, failures {len(result.failures)}"
          f"{by_check} in {result.seconds:.0f} s")
    for failure in result.failures:
        print(f"  {fixture.command} {failure.line()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--command", default="all", help="all, a command or a fixture name (default all)")
    parser.add_argument("--max-points", type=int, default=None, help="only the first N kill points")
    parser.add_argument("--sample", type=int, default=None,
                        help="only N kill points spread over the whole run (the scale fixtures: --command scale)")
    parser.add_argument("--jobs", type=int, default=1, help="kill points run in parallel (at most 2 here)")
    parser.add_argument("--timed", type=int, default=0,
                        help="also N trials killed at random times, some after the command finished (the first "
                             "always let finish): the same command again must finish it or say nothing to do")
    parser.add_argument("--seed", type=int, default=0, help="the timed trials' random times (with the fixture name)")
    parser.add_argument("--keep", action="store_true", help="keep the directories of failing kill points")
    parser.add_argument("--list", action="store_true", help="list the fixtures and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(f"{f.name}\t{' '.join(f.args[:4])}" for f in FIXTURES + SCALE_FIXTURES))
        return 0
    if not CORPUS.is_dir():
        raise SystemExit(f"no corpus at {CORPUS} (set SEGLOG_CORPUS)")
    fixtures = select(args.command)  # an unknown --command leaves no empty temp dir
    root = Path(tempfile.mkdtemp(prefix="crash-sweep-"))
    points = failures = 0
    for fixture in fixtures:
        result = sweep(fixture, root, args.jobs, args.max_points, args.keep, args.sample, args.timed, args.seed)
        report(result)
        points, failures = points + result.points, failures + len(result.failures)
    print(f"total: kill points {points}, failures {failures}")
    if args.keep:
        print(f"kept: {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
