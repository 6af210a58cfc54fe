"""Log dirs where they live: ``s3://``, ``s3a://``, ``gs://``, ``abfs(s)://``, ``hdfs://``, ``file://``.

The engine reads local paths. A remote tree is given to it as a *view*: the remote prefix is
listed once (one recursive listing, plus the direct files of the two directories above it, which
a partition or a file is read with: the log dir's checkpoints, a segment's sibling index), and
the same relative tree is made in a private temporary directory out of *placeholders*: sparse
files of the remote sizes (``os.truncate``), registered in
:data:`seglog_cli.storage.log.files.PLACEHOLDERS`. Listing, names, sizes, partition logs, tiered
pairing run unchanged on the view.

Content comes with ranged reads written (``pwrite``) into the placeholder, which the engine maps
as it maps any file. A byte not fetched reads as zero, so the rule is strict: ``buffer``/``view``
of a :class:`RemoteMappedFile`, ``read_small_file`` and ``open_regular`` fetch the whole file;
only the batch scan (``LogScan``: read-ahead windows of :data:`WINDOW` bytes, the next one
fetched by a background thread while the current one is decoded, at most two in flight), the
record decode of the batches it yielded, and ``find_non_zero`` read ``data`` after
``ensure(start, end)``. Windows more than two behind a scan are punched out of the placeholder
(``fallocate(PUNCH_HOLE)``), so neither memory nor disk grows with the file; the view is removed
when it is closed.

The view itself (listing, placeholders, URLs back) is :mod:`seglog_cli.storage.objectstore.remote_view`; the
schemes and the filesystem layer (fsspec) are :mod:`seglog_cli.storage.objectstore.remote_urls`.
"""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import mmap
import os
import re
import threading

from seglog_cli.storage.log import files
from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.objectstore.remote_urls import describe

WINDOW = 8 * 1024 * 1024  # read-ahead window of a sequential scan
PUNCH_STEP = 16 * 1024 * 1024  # placeholder bytes punched out at a time, behind a scan

# what was fetched, for benchmarks and tests: ranged reads issued and bytes they returned
STATS = {"requests": 0, "bytes": 0}


class RemoteFile:
    """The remote object a placeholder stands for, and which of its bytes the placeholder holds."""

    def __init__(self, fs, remote_path: str, size: int, placeholder: str, reader=None):
        self.fs, self.remote_path, self.size, self.placeholder = fs, remote_path, size, placeholder
        self._reader = reader  # a RangeReader, shared by the files of one filesystem
        self._pid = os.getpid()  # the process whose client fs is
        self._present: list[list[int]] = []  # sorted, disjoint [start, end) runs fetched
        self._lock = threading.Lock()
        self._ahead = None  # (start, end, Future) of the window being fetched in the background
        self._punched_to = 0
        self._whole = False
        self.url = remote_path

    mapping_class = None  # set below: RemoteMappedFile

    # the runs present
    def _gaps(self, start: int, end: int) -> list[tuple[int, int]]:
        gaps, pos = [], start
        with self._lock:
            at = max(0, bisect.bisect_right(self._present, [start, float("inf")]) - 1)
            for run_start, run_end in self._present[at:]:
                if run_start >= end:
                    break
                if run_end <= pos:
                    continue
                if run_start > pos:
                    gaps.append((pos, run_start))
                pos = max(pos, run_end)
        if pos < end:
            gaps.append((pos, end))
        return gaps

    def _mark(self, start: int, end: int) -> None:
        with self._lock:
            runs = self._present
            at = bisect.bisect_left(runs, [start, start])
            if at > 0 and runs[at - 1][1] >= start:
                at -= 1
            merged = [start, end]
            while at < len(runs) and runs[at][0] <= merged[1]:
                merged = [min(merged[0], runs[at][0]), max(merged[1], runs[at][1])]
                del runs[at]
            runs.insert(at, merged)

    def _unmark_below(self, end: int) -> None:
        with self._lock:
            kept = []
            for run_start, run_end in self._present:
                if run_end <= end:
                    continue
                kept.append([max(run_start, end), run_end])
            self._present = kept

    def _fetch(self, start: int, end: int) -> None:
        """Read ``[start, end)`` from the store into the placeholder, at most :data:`WINDOW`
        bytes per ranged read (a whole-file fetch of a 1 GiB segment holds 8 MiB at a time)."""
        fd = os.open(self.placeholder, os.O_WRONLY | os.O_CLOEXEC)
        try:
            for piece in range(start, end, WINDOW):
                piece_end = min(end, piece + WINDOW)
                view, pos = memoryview(self._read(piece, piece_end)), piece
                while view:
                    written = os.pwrite(fd, view, pos)
                    view, pos = view[written:], pos + written
                self._mark(piece, piece_end)
        finally:
            os.close(fd)

    def _read(self, start: int, end: int) -> bytes:
        if self._pid != os.getpid():  # a forked child: the parent's client is not fork-safe (s3fs)
            self.fs, self._reader, self._pid = type(self.fs)(**self.fs.storage_options), None, os.getpid()
        try:
            if self._reader is not None:
                data = self._reader.read(self.remote_path, start, end)
            else:
                data = self.fs.cat_file(self.remote_path, start=start, end=end)
        except Exception as exc:  # noqa: BLE001 - the store's errors, as one line
            raise UnreadableInputError(f"cannot read bytes {start}-{end}: {describe(exc)}", self.placeholder,
                                       start) from None
        if len(data) != end - start:
            raise UnreadableInputError(f"the store returned {len(data)} bytes for {end - start} (changed while "
                                       "being read?)", self.placeholder, start)
        STATS["requests"] += 1
        STATS["bytes"] += len(data)
        return data

    def _wait_ahead(self) -> None:
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead[2].result()  # a failed read-ahead raises here; the range is fetched again otherwise

    def ensure(self, start: int, end: int) -> None:
        """Make ``[start, end)`` (clipped to the file) present in the placeholder."""
        start, end = max(0, start), min(end, self.size)
        if start >= end:
            return
        if self._ahead is not None:
            self._wait_ahead()
        for gap_start, gap_end in self._gaps(start, end):
            self._fetch(gap_start, gap_end)

    def fetch_all(self) -> None:
        """The whole file: from now on nothing of it is punched out (a reader that wants all of
        it at random would otherwise fetch it again after every scan that punched)."""
        self._whole = True
        self.ensure(0, self.size)

    def window(self, position: int, end: int, ahead: bool = True) -> int:
        """A sequential scan is at ``position``: make ``[position, position + WINDOW)`` present,
        start fetching the window after it in the background (``ahead``: not for a scan's first
        window, so a seek that reads a few batches costs one window), punch out what lies two
        windows behind; returns where the present window ends."""
        stop = min(end, self.size, position + WINDOW)
        if self._ahead is not None:
            self._wait_ahead()
        gaps = self._gaps(position, stop)
        if gaps:  # fetch whole windows: scans that start often (one per index entry) cost one read per window
            self._fetch(gaps[0][0], max(gaps[-1][1], min(self.size, gaps[0][0] + WINDOW)))
            self.ensure(position, stop)
        if ahead and stop < min(end, self.size):
            gaps = self._gaps(stop, min(end, self.size, stop + WINDOW))
            if gaps:
                self._ahead = (*gaps[0], _executor().submit(self._fetch_gaps, gaps))
        self._punch_below(position - 2 * WINDOW)
        return stop

    def _fetch_gaps(self, gaps) -> None:
        for start, end in gaps:
            self._fetch(start, end)

    def _punch_below(self, position: int) -> None:
        end = position - position % mmap.PAGESIZE
        if self._whole or end - self._punched_to < PUNCH_STEP:
            return
        if punch_hole(self.placeholder, self._punched_to, end - self._punched_to):
            self._unmark_below(end)
            self._punched_to = end


class ArrowRanges:
    """Ranged reads of S3 objects through ``pyarrow.fs.S3FileSystem``, set up with what s3fs
    resolved (its client's endpoint and region, the credentials of botocore's chain or the
    storage options). Not the default: measured against s3fs's ``cat_file`` on the same server
    (``tests/benchmarks/bench_remote.py``), it reads no faster and its import and buffers add
    ~55 MB to the process; ``SEGLOG_REMOTE_READER=arrow`` selects it for that comparison."""

    def __init__(self, s3fs_filesystem):
        import pyarrow.fs as pafs
        from fsspec.asyn import sync

        fs = s3fs_filesystem
        if getattr(fs, "_s3", None) is None:
            fs.connect()
        client = fs.s3
        options = {"region": client.meta.region_name or "us-east-1"}
        endpoint = client.meta.endpoint_url
        if endpoint and not re.match(r"^https://s3[.-]([a-z0-9-]+[.])?amazonaws[.]com", endpoint):
            options["endpoint_override"] = endpoint
        credentials = client._request_signer._credentials
        if credentials is None or fs.anon:
            options["anonymous"] = True
        else:
            frozen = sync(fs.loop, credentials.get_frozen_credentials)
            options.update(access_key=frozen.access_key, secret_key=frozen.secret_key)
            if frozen.token:
                options["session_token"] = frozen.token
        self._fs = pafs.S3FileSystem(**options)
        self._files: dict = {}
        self._lock = threading.Lock()

    def read(self, path: str, start: int, end: int) -> bytes:
        with self._lock:
            handle = self._files.get(path)
            if handle is None:
                handle = self._files[path] = self._fs.open_input_file(path)
        return handle.read_at(end - start, start)

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()


def range_reader(fs, protocol: str):
    """The ranged-read layer for ``fs``: None, fsspec's own ``cat_file`` (see
    :class:`ArrowRanges` for why), or with ``SEGLOG_REMOTE_READER=arrow`` pyarrow's S3 client."""
    if protocol != "s3" or os.environ.get("SEGLOG_REMOTE_READER", "fsspec") != "arrow":
        return None
    try:
        return ArrowRanges(fs)
    except ImportError:
        return None


_FALLOC_FL_KEEP_SIZE, _FALLOC_FL_PUNCH_HOLE = 0x01, 0x02
_libc = None


def punch_hole(path: str, offset: int, length: int) -> bool:
    """Free ``[offset, offset + length)`` of a file (Linux ``fallocate(PUNCH_HOLE)``); False where
    the system or file system cannot (the placeholder then keeps what was fetched until the
    view is removed)."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            _libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        except (OSError, AttributeError):
            _libc = False
    if not _libc or length <= 0:
        return False
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        return _libc.fallocate(fd, _FALLOC_FL_KEEP_SIZE | _FALLOC_FL_PUNCH_HOLE, offset, length) == 0
    finally:
        os.close(fd)


_EXECUTOR = None


def _after_fork_in_child() -> None:
    """A forked child (``verify --jobs N``) has none of its parent's threads: its read-ahead
    starts afresh, and what the parent was still fetching is fetched again when needed."""
    global _EXECUTOR
    _EXECUTOR = None
    for remote in files.PLACEHOLDERS.values():
        remote._ahead = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _executor():
    global _EXECUTOR
    if _EXECUTOR is None:
        from concurrent.futures import ThreadPoolExecutor

        _EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seglog-read-ahead")
    return _EXECUTOR


class RemoteMappedFile(files.MappedFile):
    """:class:`~seglog_cli.storage.log.files.MappedFile` of a placeholder: the same sparse file
    mapped; ``buffer``/``view`` fetch the whole file, ``data``/``data_view`` only what
    :meth:`ensure` or :meth:`scan_window` made present."""

    is_local = False  # bytes are present only inside the scan's window

    __slots__ = ("remote",)

    def __init__(self, path):
        self.path = str(path)
        self.remote = files.remote_file_of(path)
        self._mmap = None
        self._released_to = 0
        self._extents = None  # the placeholder's holes are bytes not fetched yet, not zeros
        fd, stat = files.open_regular(self.path, whole=False)
        try:
            self.size = stat.st_size
            if self.size:
                self._mmap = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            self.data = self._mmap if self._mmap is not None else b""
        except (OSError, ValueError) as exc:
            raise UnreadableInputError(f"cannot map: {exc}", self.path) from None
        finally:
            os.close(fd)
        self.data_view = memoryview(self.data)

    @property
    def buffer(self):
        self.remote.fetch_all()
        return self.data

    @property
    def view(self):
        self.remote.fetch_all()
        return self.data_view

    def ensure(self, start: int, end: int) -> None:
        self.remote.ensure(start, end)

    def scan_window(self, position: int, end: int, ahead: bool = True) -> int:
        return self.remote.window(position, end, ahead)


RemoteFile.mapping_class = RemoteMappedFile


__all__ = ["ArrowRanges", "PUNCH_STEP", "RemoteFile", "RemoteMappedFile", "STATS", "WINDOW", "punch_hole",
           "range_reader"]
