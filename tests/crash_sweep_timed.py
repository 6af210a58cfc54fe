"""The crash sweep at random times: each writing command killed (SIGKILL) at a random moment, some
kills landing after it finished, then the same command line run again.

    python -m tests.crash_sweep --command all --max-points 0 --timed 20 --jobs 2

The kill points of :mod:`tests.crash_sweep` stop a command before one of its file operations;
these trials kill it from outside instead, ``delay`` seconds after it started: drawn uniformly
from 0 to 1.25 times the reference run's duration (seeded by ``--seed`` and the fixture's name),
so that kills land while Python starts, in the middle of a write, and after the command finished.
The first trial of each fixture is always let finish (its kill comes too late by construction).
On a fresh copy of the fixture, for each:

1. ``killed``: the run ended with status 0 or was killed by the signal, nothing else;
2. ``lost``: every original byte is still somewhere (as after a kill point);
3. ``rerun``: the same command line again (the same ``--backup-dir``, as an operator repeats a
   runbook step) exits as the uninterrupted run did (0), leaves no ``.seglog-journal`` and
   leaves the log dir byte for byte as an uninterrupted run does;
4. ``done``: when the killed run had finished (no journal left, the log dir as an uninterrupted
   run leaves it), the run again says there was nothing to do (:data:`NOTHING_TO_DO` of the
   command: "already undone by" for undo, "already appended" for append, ...) and makes no
   backup directory.
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.crash_sweep import (JOURNAL, TIMEOUT, Failure, Fixture, Reference, SetupError, Workspace, command_line,
                               digests, last_line, lost_files, read_tree, seglog, state_difference)

# what each command's output says when a run again finds its work done
NOTHING_TO_DO = {"recover": " with nothing to change", "rebuild-index": "; nothing to do",
                 "append": ": already appended: ", "simulate-retention": "applied: nothing to do",
                 "repair": ": nothing to repair from ", "undo": ": already undone by "}
PAST_THE_END = 1.25  # kills are drawn up to this many times the reference run's duration


def delays(fixture: Fixture, reference: Reference, count: int, seed: int) -> list[float | None]:
    """The kill times of ``count`` trials (None: let the command finish)."""
    rng = random.Random(f"{seed}:{fixture.name}")
    return [None] + [rng.uniform(0, PAST_THE_END * reference.seconds) for _ in range(count - 1)]


def timed_trials(fixture: Fixture, reference: Reference, root: Path, count: int, seed: int = 0, jobs: int = 1,
                 keep: bool = False) -> tuple[list[Failure], int]:
    """``count`` timed trials of one fixture (see the module doc), ``jobs`` at a time: the
    failures, and how many runs had finished when their kill came."""
    times = delays(fixture, reference, count, seed)

    def one(index: int) -> tuple[list[Failure], bool]:
        delay = times[index]
        label = "let finish" if delay is None else f"killed at {delay:.2f} s of {reference.seconds:.2f} s"
        work = root / f"timed-{index}"
        try:
            found, finished = timed_trial(fixture, reference, delay, work)
        except SetupError as exc:
            found, finished = [("setup", str(exc))], False
        if not (keep and found):
            shutil.rmtree(work, ignore_errors=True)
        return [Failure(fixture.name, 0, f"timed {index}: {label}", check, why) for check, why in found], finished

    failures: list[Failure] = []
    finished = 0
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for found, done in pool.map(one, range(count)):
            failures.extend(found)
            finished += done
    return failures, finished


def timed_trial(fixture: Fixture, reference: Reference, delay: float | None,
                work: Path) -> tuple[list[tuple[str, str]], bool]:
    """Checks 1-4 of one trial: (check, why) for each that failed, and whether the run had
    finished when the kill came."""
    space = Workspace(fixture, work).prepare()
    original = read_tree(space.log_dir)
    backup_root = work / "backups"
    argv = space.argv(backup_root)
    roots = space.backup_roots(backup_root)
    status = _run_until(argv, delay, fixture.clock_ms)
    if status not in (0, -signal.SIGKILL):
        return [("killed", f"exit {status}: neither finished nor killed")], False
    problems = []
    if lost := lost_files(original, space.log_dir, roots):
        problems.append(("lost", "; ".join(lost[:4]) + (f" (+{len(lost) - 4})" if len(lost) > 4 else "")))
    finished = not (space.log_dir / JOURNAL).exists() and digests(read_tree(space.log_dir)) == reference.end
    made = _backups(roots[0])
    done = seglog(argv, None, fixture.clock_ms)
    if done.returncode != reference.exit_code:
        problems.append(("rerun", f"exit {done.returncode} (uninterrupted: {reference.exit_code}): "
                                  f"{last_line(done.stderr)}"))
    if (space.log_dir / JOURNAL).exists():
        problems.append(("rerun", f"{JOURNAL} left behind"))
    if difference := state_difference(reference.end, digests(read_tree(space.log_dir))):
        problems.append(("rerun", "log dir differs from an uninterrupted run's: " + difference))
    if finished:
        phrase = NOTHING_TO_DO[fixture.command]
        if phrase not in done.stdout:
            problems.append(("done", f"the run had finished, the run again does not say {phrase.strip()!r}: "
                                     f"{last_line(done.stdout)} {last_line(done.stderr)}"))
        if _backups(roots[0]) != made:
            problems.append(("done", f"the run had finished, the run again made a backup in {roots[0]}"))
    return problems, finished


def _run_until(argv: list[str], delay: float | None, clock_ms: int | None) -> int:
    """Run ``seglog ARGV``, SIGKILLed after ``delay`` seconds if still running: its exit status."""
    command, env = command_line(argv, None, clock_ms)
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return process.wait(timeout=TIMEOUT if delay is None else delay)
    except subprocess.TimeoutExpired:
        process.kill()  # a no-op when it has just exited
        return process.wait()


def _backups(root: Path) -> set[str]:
    return {path.name for path in root.iterdir() if not path.name.startswith(".")} if root.is_dir() else set()


__all__ = ["NOTHING_TO_DO", "delays", "timed_trial", "timed_trials"]
