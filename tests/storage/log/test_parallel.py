"""parallel_map: every item once, in order, whoever runs it; failures and dead children handled."""

from __future__ import annotations

import multiprocessing
import os

import pytest

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


def test_an_exception_in_a_child_is_raised_here():
    parent, wait_or_mark = _child_takes_part()

    def fail_in_child(n):
        wait_or_mark()
        if os.getpid() != parent:
            raise ValueError(f"bad item {n}")
        return n

    with pytest.raises(WorkerError, match="ValueError: bad item"):
        parallel_map(fail_in_child, list(range(20)), jobs=2)


def test_a_child_killed_mid_item_loses_nothing():
    parent, wait_or_mark = _child_takes_part()

    def die_in_child(n):
        wait_or_mark()
        if os.getpid() != parent and n % 2 == 0:
            os._exit(9)
        return n * 10

    assert parallel_map(die_in_child, list(range(12)), jobs=3) == [n * 10 for n in range(12)]
