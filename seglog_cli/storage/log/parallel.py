"""Running one function over many partitions in parallel processes, the caller among them.

``parallel_map(fn, items, jobs)`` forks ``jobs - 1`` children; they and the calling process
take items from one shared counter until none are left, so a partition is never waiting for a
free worker while another process idles, and the calling process's CPU is not wasted waiting.
Results come back over pipes (a thread drains them while the caller works, so a child never
blocks on a full pipe). A child that dies (killed, out of memory) loses nothing: the items it
had started are run again in the calling process.

With ``serial_seconds`` the calling process starts alone and forks only once that much time has
passed with items left, so a run over a few small partitions costs no process start-up.

Compared with ``ProcessPoolExecutor`` this saves a fork and the executor's queues, which is
most of the fixed cost when each partition takes tens of milliseconds (verify's shallow level
runs at memory speed).
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_STARTED, _DONE, _FAILED = "started", "done", "failed"


class WorkerError(Exception):
    """An exception raised by ``fn`` in a child, re-raised in the caller (with its text)."""


def parallel_map(fn: Callable[[T], R], items: Sequence[T], jobs: int,
                 on_result: Callable[[int, R], None] | None = None, serial_seconds: float = 0.0) -> list[R]:
    """``[fn(item) for item in items]`` over ``jobs`` processes; ``on_result(index, result)``
    is called (in the calling process, from one thread at a time) as each result arrives.

    ``serial_seconds``: the calling process first takes items alone, and forks only if items
    are left after that long (work that ends sooner never pays for the processes' start-up)."""
    count = len(items)
    lock = threading.Lock()

    def deliver(index: int, result) -> None:
        if on_result is not None:
            with lock:
                on_result(index, result)

    results: dict[int, object] = {}
    first = 0
    if serial_seconds > 0 and jobs > 1:
        deadline = time.perf_counter() + serial_seconds
        while first < count and time.perf_counter() < deadline:
            results[first] = fn(items[first])
            deliver(first, results[first])
            first += 1
    children = min(jobs, count - first) - 1
    if children <= 0 or not hasattr(os, "fork"):
        for index in range(first, count):
            results[index] = fn(items[index])
            deliver(index, results[index])
        return [results[index] for index in range(count)]

    import multiprocessing  # here: one job (the default, and one partition) forks nothing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("fork")
    counter = context.Value("q", first)

    def take() -> int | None:
        with counter.get_lock():
            index = counter.value
            if index >= count:
                return None
            counter.value = index + 1
            return index

    processes, connections = [], []
    for _ in range(children):
        receiver, sender = context.Pipe(duplex=False)
        process = context.Process(target=_child, args=(fn, items, take, sender), daemon=True)
        process.start()
        sender.close()
        processes.append(process)
        connections.append(receiver)

    started_by_child: dict[int, set[int]] = {i: set() for i in range(children)}
    failures: list[str] = []

    def drain() -> None:
        open_connections = dict(enumerate(connections))
        while open_connections:
            for connection in wait(list(open_connections.values())):
                child = next(k for k, v in open_connections.items() if v is connection)
                try:
                    kind, index, payload = connection.recv()
                except (EOFError, OSError):
                    del open_connections[child]
                    continue
                if kind == _STARTED:
                    started_by_child[child].add(index)
                    continue
                started_by_child[child].discard(index)
                if kind == _FAILED:
                    failures.append(payload)
                else:
                    results[index] = payload
                    deliver(index, payload)

    drainer = threading.Thread(target=drain, name="seglog-parallel-drain", daemon=True)
    drainer.start()
    try:
        while (index := take()) is not None:
            results[index] = fn(items[index])
            deliver(index, results[index])
    finally:
        drainer.join()
        for process in processes:
            process.join()
    if failures:
        raise WorkerError(failures[0])
    for child, lost in started_by_child.items():  # a child died mid-item: do it here
        for index in sorted(lost):
            results[index] = fn(items[index])
            deliver(index, results[index])
    return [results[index] for index in range(count)]


def _child(fn, items, take, sender) -> None:
    try:
        while (index := take()) is not None:
            sender.send((_STARTED, index, None))
            try:
                result = fn(items[index])
            except Exception as exc:  # noqa: BLE001 - sent to the caller, which re-raises
                sender.send((_FAILED, index, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
                continue
            sender.send((_DONE, index, result))
    finally:
        sender.close()


__all__ = ["WorkerError", "parallel_map"]
