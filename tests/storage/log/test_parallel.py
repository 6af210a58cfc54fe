"""parallel_map: every item once, in order, whoever runs it; failures and dead children handled."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from seglog_cli.storage.log.errors import CheckpointError, UnreadableInputError
from seglog_cli.storage.log.parallel import WorkerError, parallel_map


def _child_takes_part():
    """An fn wrapper under which the caller waits (up to 10 s) until a child has taken an item,
    so the children's paths are exercised however the processes are scheduled."""
    started = multiprocessing.get_context("fork").Event()
    parent = os.getpid()

    def wait_or_mark():
        if os.getpid() == parent:
            started.wait(10)
        else:
            started.set()
    return parent, wait_or_mark


def test_results_in_order_from_all_processes():
    parent, wait_or_mark = _child_takes_part()

    def square(n):
        wait_or_mark()
        return n * n, os.getpid()

    pids = parallel_map(square, list(range(40)), jobs=3)
    assert [square for square, _ in pids] == [n * n for n in range(40)]
    assert any(pid != parent for _, pid in pids)  # a child did work (the caller may not: items are instant)


def test_on_result_sees_every_item_once():
    seen = []
    parallel_map(lambda n: n + 1, list(range(10)), jobs=2, on_result=lambda i, r: seen.append((i, r)))
    assert sorted(seen) == [(i, i + 1) for i in range(10)]


def test_one_job_runs_in_process():
    assert parallel_map(lambda n: os.getpid(), [1, 2], jobs=1) == [os.getpid()] * 2


def test_an_exception_only_a_child_meets_is_raised_here_as_itself():
    parent, wait_or_mark = _child_takes_part()

    def fail_in_child(n):
        wait_or_mark()
        if os.getpid() != parent:
            raise ValueError(f"bad item {n}")
        return n

    with pytest.raises(ValueError, match="bad item"):  # the child's own exception, not a wrapper
        parallel_map(fail_in_child, list(range(20)), jobs=2)


def test_a_seglog_error_in_a_child_keeps_its_type_file_and_position():
    parent, wait_or_mark = _child_takes_part()

    def fail_in_child(n):
        wait_or_mark()
        if os.getpid() != parent and n >= 1:
            raise CheckpointError("Malformed line in checkpoint file", f"/logs/p-{n}/leader-epoch-checkpoint", 7)
        return n

    with pytest.raises(CheckpointError) as caught:
        parallel_map(fail_in_child, list(range(20)), jobs=2)
    assert caught.value.path.startswith("/logs/p-") and caught.value.position == 7


def _fail_at(bad: set[int], exc_type=UnreadableInputError):
    def fn(n):
        if n in bad:
            raise exc_type(f"item {n} is bad", f"/logs/p-{n}")
        return n
    return fn


@pytest.mark.parametrize("jobs", [1, 2, 3, 5])
def test_the_first_failing_item_in_order_is_raised_whatever_the_jobs(jobs):
    """One job meets item 3 first; so must any number of jobs, on every run, whichever process
    ran which item (here every process fails on the items it takes)."""
    for _ in range(5):
        with pytest.raises(UnreadableInputError) as caught:
            parallel_map(_fail_at({3, 4, 9, 15}), list(range(20)), jobs=jobs)
        assert str(caught.value) == "/logs/p-3: item 3 is bad", jobs


def test_an_os_error_in_a_child_keeps_its_errno_and_file(tmp_path):
    parent, wait_or_mark = _child_takes_part()
    missing = tmp_path / "gone"

    def open_in_child(n):
        wait_or_mark()
        if os.getpid() != parent:
            open(missing)
        return n

    with pytest.raises(FileNotFoundError) as caught:
        parallel_map(open_in_child, list(range(10)), jobs=2)
    assert caught.value.filename == str(missing) and caught.value.errno == 2


def test_no_item_after_a_failing_one_is_started(tmp_path):
    """As with one job: items past the failure are not run (a writing plan's later partitions
    are not even read)."""
    def fn(n):
        (tmp_path / str(n)).touch()
        if n == 2:
            raise UnreadableInputError("bad", "/x")
        time.sleep(0.02)
        return n

    with pytest.raises(UnreadableInputError):
        parallel_map(fn, list(range(40)), jobs=3)
    started = sorted(int(p.name) for p in tmp_path.iterdir())
    assert started[:3] == [0, 1, 2] and max(started) < 12, started  # not the 40: the others stop taking


class _Unpicklable(Exception):
    def __init__(self, text, handle):
        super().__init__(text)
        self.handle = handle

    def __reduce__(self):
        raise TypeError("cannot pickle")


def test_an_exception_that_cannot_be_sent_is_raised_by_running_the_item_here():
    parent, wait_or_mark = _child_takes_part()
    ran_here = []

    def fn(n):
        wait_or_mark()
        if os.getpid() == parent:
            ran_here.append(n)
        if n == 5:
            raise _Unpicklable("item 5", object())
        return n

    with pytest.raises(_Unpicklable, match="item 5"):
        parallel_map(fn, list(range(12)), jobs=2)
    assert 5 in ran_here  # taken here, or run again here after a child met it


def test_an_unsendable_exception_the_caller_does_not_meet_again_is_a_worker_error():
    parent, wait_or_mark = _child_takes_part()

    def fn(n):
        wait_or_mark()
        if os.getpid() != parent:
            raise _Unpicklable(f"only in a child {n}", object())
        return n

    with pytest.raises(WorkerError, match="_Unpicklable: only in a child"):
        parallel_map(fn, list(range(12)), jobs=2)


def test_a_child_killed_mid_item_loses_nothing():
    parent, wait_or_mark = _child_takes_part()

    def die_in_child(n):
        wait_or_mark()
        if os.getpid() != parent and n % 2 == 0:
            os._exit(9)
        return n * 10

    assert parallel_map(die_in_child, list(range(12)), jobs=3) == [n * 10 for n in range(12)]
