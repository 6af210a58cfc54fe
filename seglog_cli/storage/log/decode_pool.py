"""Decoding many batches at once on the available cores, results in file order.

A segment's batches are independent: decompressing them (and checking and formatting their
records) parallelises, and only what is printed or reported must keep the file's order.

The work goes to forked processes by default. They see the caller's mapped file as it was at
the fork (nothing is copied to them: a unit is sent as its byte range) and put each result in
a slot of a shared anonymous mapping (one copy, no pipe traffic but its length). Threads are
the other mode (``SEGLOG_DECODE_MODE=threads``): the decompressors release the GIL while they
inflate and ``_native.deep_lines`` formats with it released, but Kafka's framing around each
batch (gzip's member rules, xerial chunks, the LZ4 frame) is Python that holds it, a few
microseconds per batch, so two threads ran no faster than one
(``tests/benchmarks/bench_parallel_decode.py``: on 2 cores, 256 MiB of gzip batches 3.39 s in
one process, 3.27 s with threads, 2.35 s with processes).

:class:`OrderedWorkers` keeps a bounded window of units in flight (memory is a few units'
sections and lines, never the file's) and gives results in submission order. Units are cut by
bytes (:class:`UnitCutter`, about :data:`UNIT_BYTES` each), so a segment of 1 MiB batches and
one of 200-byte batches hold alike amounts in flight; only compressed files of
:data:`MIN_PARALLEL_BYTES` or more are handed over (:func:`worth_workers`).
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_left
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

from seglog_cli.formats import layout

T = TypeVar("T")
R = TypeVar("R")

UNIT_BYTES = 1024 * 1024  # stored (compressed) bytes per unit of work handed to a worker
MIN_PARALLEL_BYTES = 4 * 1024 * 1024  # a smaller file is decoded in the calling process alone (a fork
# and its first unit cost more than a few MiB take)

_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def _pool(jobs: int) -> ThreadPoolExecutor:
    """One process-wide pool, grown when more jobs are asked for (threads start on first use)."""
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE < jobs:
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="seglog-decode")
            _POOL_SIZE = jobs
        return _POOL


class Ready:
    """An item of :func:`ordered_map`'s input that needs no work: passed through in its place."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def ordered_map(fn: Callable[[T], R], items: Iterable["T | Ready"], jobs: int, mode: str | None = None,
                window: int | None = None) -> Iterator["R | Ready"]:
    """``fn(item)`` for each item on ``jobs`` workers, yielded in the items' order; a
    :class:`Ready` item is yielded as it is, in its place (:class:`OrderedWorkers`, pulled)."""
    workers = OrderedWorkers(fn, jobs, mode, window)
    finished = False
    try:
        for item in items:
            yield from workers.submit(item)
        yield from workers.drain()
        finished = True
    finally:
        workers.close(finished)


class OrderedWorkers:
    """``fn(item)`` on ``jobs`` workers, results in submission order, for a caller that pushes
    items as it finds them: :meth:`submit` gives the results that had to be taken to make room,
    :meth:`drain` the rest. At most ``window`` items (default two per worker) are in flight,
    so memory holds that many results, never the file's. A :class:`Ready` item is given back
    as it is, in its place.

    ``mode``: "processes" (forked children, which see the caller's mapped files as they were
    at the fork; items and results are pickled: keep them small) or "threads" (one pool). A
    child that fails or dies loses nothing: its items are run here, in their place. The default
    mode is ``$SEGLOG_DECODE_MODE`` if set (the benchmark compares both), else "processes".
    With one job (or no ``fork``) every item runs here, as it is submitted.
    """

    __slots__ = ("fn", "jobs", "mode", "limit", "pending", "children", "shared", "turn")

    def __init__(self, fn, jobs: int, mode: str | None = None, window: int | None = None):
        mode = mode or os.environ.get("SEGLOG_DECODE_MODE") or "processes"
        if mode == "processes" and not hasattr(os, "fork"):
            jobs = 1
        self.fn, self.jobs, self.mode = fn, max(1, jobs), mode
        self.limit = window or (SLOTS * self.jobs if mode == "processes" else 2 * self.jobs + 2)
        self.pending: deque = deque()  # Ready, a Future (threads) or (child, item) (processes)
        self.children: list[_Child] = []
        self.shared = None
        self.turn = 0

    def submit(self, item) -> Iterator:
        if type(item) is Ready:
            if self.pending:
                self.pending.append(item)
            else:
                yield item
            return
        if self.jobs <= 1:
            yield self.fn(item)
            return
        if self.mode == "threads":
            while len(self.pending) >= self.limit:
                yield self._take()
            self.pending.append(_pool(self.jobs).submit(self.fn, item))
            return
        if not self.children:  # forked only once there is work (after the caller's set-up)
            import mmap

            _keep_big_buffers()
            self.shared = mmap.mmap(-1, self.jobs * SLOTS * SLOT_BYTES)  # pages exist once written
            for index in range(self.jobs):
                self.children.append(_Child(self.fn, index, self.shared, self.children))
        child = self.children[self.turn % self.jobs]
        self.turn += 1
        while child.outstanding >= SLOTS or len(self.pending) >= self.limit:  # its slot is free once taken
            yield self._take()
        child.send(item)
        self.pending.append((child, item))

    def drain(self) -> Iterator:
        while self.pending:
            yield self._take()

    def _take(self):
        head = self.pending.popleft()
        if type(head) is Ready:
            return head
        if type(head) is tuple:
            child, item = head
            ok, result = child.receive()
            return result if ok else self.fn(item)  # a failed or dead child: the item is run here
        return head.result()

    def close(self, finished: bool = True) -> None:
        """Stop the workers: children are killed unless every result was taken; threads still
        running are waited for (they may be reading a buffer the caller is about to close)."""
        for head in self.pending:
            if isinstance(head, Future) and not head.cancel():
                try:
                    head.result()
                except BaseException:  # noqa: BLE001 - the consumer has gone; nothing to report to
                    pass
        self.pending.clear()
        for child in self.children:
            child.close(kill=not finished)
        self.children = []
        if self.shared is not None:
            self.shared.close()
            self.shared = None


SLOTS = 2  # units in flight per child: one being decoded while the other waits to be taken
SLOT_BYTES = 32 * 1024 * 1024  # a result larger than this comes through the pipe instead


class _Child:
    """A forked worker. Items go in over a pipe; each result is pickled into one of the child's
    slots of a shared anonymous mapping, and only its length comes back over the pipe (a
    result bigger than a slot comes through the pipe). The parent takes results in order, so
    a slot is written again only after its result was taken (:meth:`OrderedWorkers.submit`)."""

    __slots__ = ("pid", "tasks", "results", "alive", "shared", "base", "sent", "outstanding")

    def __init__(self, fn, index: int, shared, siblings: list["_Child"]):
        from multiprocessing.connection import Connection

        self.shared, self.base = shared, index * SLOTS * SLOT_BYTES
        task_read, task_write = os.pipe()
        result_read, result_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(task_write)
            os.close(result_read)
            for sibling in siblings:  # else a sibling's task pipe never ends: it would wait forever
                sibling.tasks.close()
                sibling.results.close()
            _child_loop(fn, Connection(task_read, writable=False), Connection(result_write, readable=False),
                        shared, self.base)
        os.close(task_read)
        os.close(result_write)
        self.pid = pid
        self.tasks = Connection(task_write, readable=False)
        self.results = Connection(result_read, writable=False)
        self.alive = True
        self.sent = self.outstanding = 0

    def send(self, item) -> None:
        slot = self.sent % SLOTS
        self.sent += 1
        self.outstanding += 1
        if self.alive:
            try:
                self.tasks.send((slot, item))
            except OSError:
                self.alive = False

    def receive(self):
        """(True, result), or (False, None) when the child failed or died."""
        import pickle

        slot = (self.sent - self.outstanding) % SLOTS
        self.outstanding -= 1
        if not self.alive:
            return False, None
        try:
            kind, payload = self.results.recv()
        except (EOFError, OSError):
            kind, payload = None, None
        if kind == "slot":
            start = self.base + slot * SLOT_BYTES
            with memoryview(self.shared) as view:
                return True, pickle.loads(view[start:start + payload])
        if kind == "pipe":
            return True, payload
        self.alive = False
        return False, None

    def close(self, kill: bool = False) -> None:
        import signal

        for connection in (self.tasks, self.results):
            try:
                connection.close()
            except OSError:
                pass
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _keep_big_buffers() -> None:
    """Let malloc reuse freed multi-MB buffers instead of returning each to the kernel: a unit's
    sections and lines are a few MB each, and glibc maps (and the kernel zeroes, page by page)
    every such buffer afresh; measured, that was a fifth of the workers' time."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return
    mallopt(-3, _BIG_BUFFER)  # M_MMAP_THRESHOLD
    mallopt(-1, 2 * _BIG_BUFFER)  # M_TRIM_THRESHOLD


_BIG_BUFFER = 32 * 1024 * 1024


def _child_loop(fn, tasks, results, shared, base: int) -> None:
    import pickle
    import signal

    status = 0
    try:
        _keep_big_buffers()
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child quietly, with the parent
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        while True:
            try:
                slot, item = tasks.recv()
            except (EOFError, OSError):
                break
            try:
                data = pickle.dumps(fn(item), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:  # noqa: BLE001 - the parent runs the item itself
                results.send(("failed", None))
                break
            if len(data) <= SLOT_BYTES:
                start = base + slot * SLOT_BYTES
                shared[start:start + len(data)] = data
                results.send(("slot", len(data)))
            else:
                results.send(("pipe", pickle.loads(data)))
    except BaseException:  # noqa: BLE001 - nothing may unwind into the parent's code
        status = 1
    finally:
        os._exit(status)  # no atexit handlers, no flush of buffers copied from the parent


# where a batch's codec bits are: v2, the low byte of the int16 attributes after the magic and the
# CRC-32C; v0/v1, the attributes byte right after the magic
_V2_CODEC_BYTE = layout.MAGIC_OFFSET + 1 + 4 + 1


def worth_workers(mapped, position: int = 0) -> bool:
    """Whether decoding a file's batches is worth handing to workers: a local file of
    :data:`MIN_PARALLEL_BYTES` or more whose batches are compressed (judged by the batch at
    ``position``: a topic's batches share one codec). Uncompressed records cost less to check
    and format in the calling process than to hand over (``bench_parallel_decode.py``)."""
    attributes_at = position + _V2_CODEC_BYTE
    if not mapped.is_local or mapped.size < MIN_PARALLEL_BYTES or mapped.size <= attributes_at:
        return False
    data = mapped.data
    if data[position + layout.MAGIC_OFFSET] < 2:
        attributes_at = position + layout.MAGIC_OFFSET + 1
    return data[attributes_at] & layout.COMPRESSION_CODEC_MASK != 0


class UnitCutter:
    """Cuts a walk's chunks of ``BatchHeader`` into units of about ``UNIT_BYTES`` of the file each (at
    least one batch), across chunk boundaries: workers get alike units whatever size of chunk
    the scan reads (round robin over units of alternating sizes would leave one worker idle).
    A unit is one stretch of the file: a chunk that does not start where the last one ended
    (the scan resynced past damage) starts a new unit."""

    __slots__ = ("headers", "unit_bytes")

    def __init__(self, unit_bytes: int | None = None):
        self.headers: list = []
        self.unit_bytes = unit_bytes or UNIT_BYTES

    def add(self, chunk: list) -> Iterator[list]:
        """The units complete once ``chunk`` is added."""
        if not chunk:
            return
        if self.headers and self.headers[-1].end_position != chunk[0].position:
            yield from self.flush()
        headers = self.headers
        headers.extend(chunk)
        start, count = 0, len(headers)
        while start < count and headers[-1].end_position - headers[start].position >= self.unit_bytes:
            end = bisect_left(headers, headers[start][0] + self.unit_bytes, lo=start + 1, key=_position)
            yield headers[start:end]
            start = end
        self.headers = headers[start:] if start else headers

    def flush(self) -> Iterator[list]:
        """The headers left, as one unit."""
        if self.headers:
            yield self.headers
            self.headers = []


def _position(header) -> int:
    return header[0]  # BatchHeader.position, without the property's call (a bisect key)


__all__ = ["MIN_PARALLEL_BYTES", "OrderedWorkers", "Ready", "UNIT_BYTES", "UnitCutter", "ordered_map", "worth_workers"]
