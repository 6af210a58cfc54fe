"""Counting the work a command does, to prove it linear without timing anything.

:func:`count_work` runs a callable and counts, while it runs:

* every Python function's calls (cProfile's call counts, stdlib and seglog alike, keyed by
  ``file:line(name)``): a loop over partitions inside a loop over partitions shows up as a
  function called N^2 times;
* the files opened (the ``open`` audit event: ``open()``, ``os.open``, ``io.open``) and the bytes
  of what was opened (each file's size at the open), plus the bytes mapped (``mmap.__new__``): a
  log-dir file re-read once per partition is N opens of an N-line file;
* the entries of the directories listed (``os.scandir``/``os.listdir``): a log dir root listed
  once per partition is N listings of N entries.

:func:`assert_linear` compares two counts, at N and at ``factor`` x N partitions: each figure,
and each function's calls, may grow at most ``factor`` times (plus 1 %) plus a constant. The constant
absorbs work done once (a table built at first use); anything that grows with the square of the
partitions exceeds it from a few dozen partitions on.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field

_ACTIVE: list["Work"] = []
# per thread: inside the hook (its own stat/listdir must not count, nor recurse). One flag shared
# by every thread made a thread pool's listings uncounted while another thread was in the hook.
_IN_HOOK = threading.local()
_LOCK = threading.Lock()  # the counts are added to from every thread
# the inputs at N and 4N are alike, not identical (longer names, the one metadata log that holds
# every topic): 1 % more than 4x is noise, while work that grows with the square is 16x
RELATIVE_SLACK = 0.01
# calls whose count depends on how threads and processes happen to meet, not on the work
TIMING_NOISE = ("threading.py", "queue.py", "time.monotonic", "lock' objects", "connection.py", "selectors.py",
                "synchronize.py", "posix.waitpid", "select.poll")


@dataclass
class Work:
    calls: Counter = field(default_factory=Counter)
    opens: int = 0
    bytes_opened: int = 0
    bytes_mapped: int = 0
    listings: int = 0
    entries_listed: int = 0
    within: str | None = None  # count only the files and directories under this one (None: all)

    def counts(self, path) -> bool:
        return self.within is None or os.path.abspath(os.fsdecode(path)).startswith(self.within)

    def figures(self) -> dict[str, int]:
        return {"files opened": self.opens, "bytes of files opened": self.bytes_opened,
                "bytes mapped": self.bytes_mapped, "directories listed": self.listings,
                "directory entries listed": self.entries_listed}


def _size(target) -> int:
    try:
        return os.stat(target).st_size if not isinstance(target, int) else os.fstat(target).st_size
    except (OSError, ValueError, TypeError):
        return 0


def _hook(event: str, args) -> None:
    if not _ACTIVE or getattr(_IN_HOOK, "busy", False):
        return
    work = _ACTIVE[-1]
    if event not in ("open", "mmap.__new__", "os.scandir", "os.listdir"):
        return
    _IN_HOOK.busy = True
    try:
        if event == "open":
            path = args[0]
            if isinstance(path, (str, bytes, os.PathLike)) and work.counts(path):
                size = _size(path)
                with _LOCK:
                    work.opens += 1
                    work.bytes_opened += size
        elif event == "mmap.__new__":
            fileno, length = args[0], args[1]
            size = length or (_size(fileno) if fileno >= 0 else 0)
            with _LOCK:
                work.bytes_mapped += size
        else:
            path = args[0] if args and args[0] is not None else "."
            if isinstance(path, int) or not work.counts(path):
                return
            try:
                entries = len(os.listdir(path))
            except OSError:
                entries = 0
            with _LOCK:
                work.listings += 1
                work.entries_listed += entries
    finally:
        _IN_HOOK.busy = False


_HOOKED = False


def count_work(run, within: str | os.PathLike | None = None) -> tuple[object, Work]:
    """``run()``'s result and the work it did (in this process: forked children are not seen);
    files and listings only under ``within`` when given (a test's own directory: what other
    tests running beside it do to /tmp is no work of this run)."""
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_hook)  # cannot be removed: it is idle unless a count is running
        _HOOKED = True
    work = Work(within=None if within is None else os.path.abspath(within))
    profile = cProfile.Profile()
    _ACTIVE.append(work)
    profile.enable()
    try:
        result = run()
    finally:
        profile.disable()
        _ACTIVE.pop()
    for (filename, line, name), (_, ncalls, *_rest) in pstats.Stats(profile).stats.items():
        work.calls[f"{os.path.basename(filename)}:{line}({name})"] += ncalls
    return result, work


def superlinear(small: Work, large: Work, factor: float = 4, calls_slack: int = 200,
                bytes_slack: int = 1 << 16, count_slack: int = 40) -> list[str]:
    """What grew more than ``factor`` times plus a constant from ``small`` to ``large``."""
    grown = []
    for name, before in small.figures().items():
        after = large.figures()[name]
        slack = bytes_slack if name.startswith("bytes") else count_slack
        if after > factor * before * (1 + RELATIVE_SLACK) + slack:
            grown.append(f"{name}: {before} -> {after}")
    for function, after in large.calls.items():
        if any(noise in function for noise in TIMING_NOISE):
            continue
        before = small.calls.get(function, 0)
        if after > factor * before * (1 + RELATIVE_SLACK) + calls_slack:
            grown.append(f"{function}: {before} -> {after} calls")
    return sorted(grown)


def assert_linear(small: Work, large: Work, factor: float = 4, what: str = "", **slack) -> None:
    grown = superlinear(small, large, factor, **slack)
    assert not grown, f"{what}: work grew more than {factor}x (+ a constant) from N to {factor}N:\n  " + \
        "\n  ".join(grown[:40])
