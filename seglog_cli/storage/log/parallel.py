"""Running one function over many partitions in parallel processes, the caller among them.

``parallel_map(fn, items, jobs)`` forks ``jobs - 1`` children; they and the calling process
take items from one shared counter until none are left, so a partition is never waiting for a
free worker while another process idles, and the calling process's CPU is not wasted waiting.
Results come back over pipes (a thread drains them while the caller works, so a child never
blocks on a full pipe). A child that dies (killed, out of memory) loses nothing: the items it
had started are run again in the calling process.

With ``serial_seconds`` the calling process starts alone and forks only once that much time has
passed with items left, so a run over a few small partitions costs no process start-up.

An item that raises ends the run as it would with one job, whichever process ran it: no item
after it is started, the items before it finish, and the exception of the first failing item
(in the items' order) is raised in the caller as itself, with its type, file, position and
message (a child's item is run again in the calling process, which raises it there; if the
second run does not raise, the child's exception, sent over the pipe, is raised). So the same
input gives the same error and the same exit status with one job and with many, on every run.

Compared with ``ProcessPoolExecutor`` this saves a fork and the executor's queues, which is
most of the fixed cost when each partition takes tens of milliseconds (verify's shallow level
runs at memory speed).
"""

from __future__ import annotations

import os
import pickle
import threading
import time
import traceback
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_STARTED, _DONE, _FAILED = "started", "done", "failed"


class WorkerError(Exception):
    """An exception raised by ``fn`` in a child that could not be sent to the caller as itself
    (not picklable) and that the caller, running the item again, did not meet: its text."""


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
    failures: dict[int, object] = {}  # index -> the child's exception (or its text)

    def stop_after(index: int) -> None:
        """No item after a failing one is started (as with one job); the items are taken in
        order, so every earlier one already is, and finishes."""
        with counter.get_lock():
            counter.value = count

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
                    failures[index] = payload
                    stop_after(index)
                else:
                    results[index] = payload
                    deliver(index, payload)

    drainer = threading.Thread(target=drain, name="seglog-parallel-drain", daemon=True)
    drainer.start()
    own_failure: tuple[int, BaseException] | None = None
    try:
        while (index := take()) is not None:
            try:
                results[index] = fn(items[index])
            except Exception as exc:  # noqa: BLE001 - raised below, after the earlier items
                own_failure = (index, exc)
                stop_after(index)
                break
            deliver(index, results[index])
    finally:
        drainer.join()
        for process in processes:
            process.join()
    # what one job would have met first: the lowest item that failed, or that a dead child left
    lost = {index for started in started_by_child.values() for index in started}
    failed = set(failures) | lost | ({own_failure[0]} if own_failure else set())
    for index in sorted(failed):
        if own_failure is not None and index == own_failure[0]:
            raise own_failure[1]
        if index in failures:
            _raise_again(fn, items[index], failures[index])  # raises
        results[index] = fn(items[index])  # a child died mid-item: do it here
        deliver(index, results[index])
    return [results[index] for index in range(count)]


def _raise_again(fn, item, sent) -> None:
    """Raise, in the calling process, what ``fn(item)`` raised in a child: run it here (the same
    exception, as one job raises it), else the exception the child sent, else its text."""
    fn(item)
    if isinstance(sent, BaseException):
        raise sent
    raise WorkerError(sent)


def _child(fn, items, take, sender) -> None:
    try:
        while (index := take()) is not None:
            sender.send((_STARTED, index, None))
            try:
                result = fn(items[index])
            except Exception as exc:  # noqa: BLE001 - sent to the caller, which re-raises
                sender.send((_FAILED, index, _portable(exc)))
                return  # no later item is started (the caller stops the others too)
            sender.send((_DONE, index, result))
    finally:
        sender.close()


def _portable(exc: Exception):
    """The exception itself when it survives pickling (seglog's errors do, with their file and
    position), else its type, text and traceback."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception type may refuse pickling
        return f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"


__all__ = ["WorkerError", "parallel_map"]
