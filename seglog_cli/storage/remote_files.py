"""Log dirs where they live: ``s3://``, ``s3a://``, ``gs://``, ``abfs(s)://``, ``hdfs://``, ``file://``.

The engine reads local paths. A remote tree is given to it as a *view*: the remote prefix is
listed once (one recursive listing, plus the direct files of the two directories above it, which
a partition or a file is read with: the log dir's checkpoints, a segment's sibling index), and
the same relative tree is made in a private temporary directory out of *placeholders*: sparse
files of the remote sizes (``os.truncate``), registered in
:data:`seglog_cli.storage.files.PLACEHOLDERS`. Listing, names, sizes, partition logs, tiered
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

The filesystem layer is fsspec (``fsspec.core.url_to_fs``): credentials and endpoints come from
where that layer looks (fsspec's config, ``~/.config/fsspec``, ``FSSPEC_S3_*``; botocore's chain:
``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ``~/.aws``; gcsfs's and adlfs's defaults) or from a
storage-options mapping (:func:`hadoop_storage_options` turns Spark's ``fs.s3a.*`` keys into it).
"""

from __future__ import annotations

import bisect
import ctypes
import ctypes.util
import mmap
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

from seglog_cli.storage import files
from seglog_cli.storage.errors import UnreadableInputError

WINDOW = 8 * 1024 * 1024  # read-ahead window of a sequential scan
PUNCH_STEP = 16 * 1024 * 1024  # placeholder bytes punched out at a time, behind a scan
SMALL_FILE = 1 << 20
# a log dir's KRaft metadata partition: topic configs of a partition are read from it, so a view
# of a partition (or of a file) holds it too when its log dir has one
METADATA_DIR = "__cluster_metadata-0"  # a URL naming one file this small is fetched whole when its view opens

# URL scheme -> fsspec protocol
PROTOCOLS = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "gcs": "gcs", "abfs": "abfs",
             "abfss": "abfs", "az": "abfs", "hdfs": "hdfs", "viewfs": "hdfs", "file": "file"}
PACKAGES = {"s3": "s3fs", "gcs": "gcsfs", "abfs": "adlfs", "hdfs": "pyarrow"}
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

# what was fetched, for benchmarks and tests: ranged reads issued and bytes they returned
STATS = {"requests": 0, "bytes": 0}


def url_scheme(text: str) -> str | None:
    """The scheme of ``text`` when it is a URL (``s3://...``), else None (a local path)."""
    match = _URL.match(str(text))
    return match.group(1).lower() if match else None


def is_remote(text) -> bool:
    """True for a URL seglog reads through a view (every scheme but ``file://``)."""
    scheme = url_scheme(str(text))
    return scheme is not None and scheme != "file"


def file_url_path(url: str) -> str:
    """The local path of a ``file://`` URL (``file:///var/lib/kafka``, ``file://localhost/...``)."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise UnreadableInputError(f"a file:// URL names a host ({parts.netloc}); only local files are read", url)
    return unquote(parts.path) or "/"


def local_path(text: str) -> str:
    """``text`` with a ``file://`` URL turned into its path; anything else unchanged."""
    return file_url_path(text) if url_scheme(text) == "file" else text


# -- the filesystem layer ------------------------------------------------------------------------

def open_filesystem(url: str, storage_options: dict | None = None):
    """``(filesystem, path)`` for ``url`` through fsspec; a one-line error when the scheme is not
    one seglog reads or its fsspec backend is not installed."""
    scheme = url_scheme(url)
    protocol = PROTOCOLS.get(scheme or "")
    if protocol is None:
        raise UnreadableInputError(f"{scheme}:// is not a scheme seglog reads (s3, s3a, gs, abfs, abfss, hdfs, file)",
                                   url)
    try:
        import fsspec.core
    except ImportError:
        raise UnreadableInputError(f"install fsspec and {PACKAGES.get(protocol, 'its backend')} to read {scheme}:// "
                                   "paths (pip install 'seglog[remote]')", url) from None
    normalized = f"{protocol}://{url[len(scheme) + 3:]}" if protocol in ("s3", "gcs") else url
    if protocol == "abfs":  # adlfs registers abfs and az; abfss is the same store over TLS
        normalized = "abfs://" + url[len(scheme) + 3:]
    try:
        return fsspec.core.url_to_fs(normalized, **dict(storage_options or {}))
    except ImportError:
        raise UnreadableInputError(f"install {PACKAGES.get(protocol, 'its fsspec backend')} to read {scheme}:// paths",
                                   url) from None
    except Exception as exc:  # noqa: BLE001 - a backend's own errors, as one line
        raise UnreadableInputError(f"cannot open: {describe(exc)}", url) from None


def describe(exc: BaseException) -> str:
    """A remote failure in a few words (the exception's first line, its class when empty)."""
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory"
    if isinstance(exc, PermissionError):
        return f"access denied ({_first_line(exc) or 'no permission'})"
    name = type(exc).__name__
    if name == "NoCredentialsError":
        return "no credentials found (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ~/.aws, or fsspec's config)"
    text = _first_line(exc)
    return f"{name}: {text}" if text else name


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else ""


def hadoop_storage_options(conf) -> dict:
    """fsspec storage options (s3fs's) from Spark/Hadoop ``fs.s3a.*`` settings (a mapping of
    key to string): ``fs.s3a.endpoint``, ``fs.s3a.access.key``, ``fs.s3a.secret.key``,
    ``fs.s3a.session.token``, ``fs.s3a.path.style.access``, ``fs.s3a.endpoint.region``
    (``fs.s3a.region``), ``fs.s3a.connection.ssl.enabled``. Keys not set give nothing, so what
    is not in the Hadoop conf still comes from botocore's own chain."""
    def get(key):
        value = conf.get(key)
        return None if value is None or str(value).strip() == "" else str(value).strip()

    options: dict = {}
    client: dict = {}
    config: dict = {}
    endpoint = get("fs.s3a.endpoint")
    if endpoint is not None:
        if "://" not in endpoint:
            ssl = (get("fs.s3a.connection.ssl.enabled") or "true").lower() != "false"
            endpoint = ("https://" if ssl else "http://") + endpoint
        options["endpoint_url"] = endpoint
    if get("fs.s3a.access.key") is not None:
        options["key"] = get("fs.s3a.access.key")
    if get("fs.s3a.secret.key") is not None:
        options["secret"] = get("fs.s3a.secret.key")
    if get("fs.s3a.session.token") is not None:
        options["token"] = get("fs.s3a.session.token")
    region = get("fs.s3a.endpoint.region") or get("fs.s3a.region")
    if region is not None:
        client["region_name"] = region
    if (get("fs.s3a.path.style.access") or "").lower() == "true":
        config["s3"] = {"addressing_style": "path"}
    if client:
        options["client_kwargs"] = client
    if config:
        options["config_kwargs"] = config
    return options


# -- one remote file behind a placeholder ---------------------------------------------------------

class RemoteFile:
    """The remote object a placeholder stands for, and which of its bytes the placeholder holds."""

    def __init__(self, fs, remote_path: str, size: int, placeholder: str, reader=None):
        self.fs, self.remote_path, self.size, self.placeholder = fs, remote_path, size, placeholder
        self._reader = reader  # a RangeReader, shared by the files of one filesystem
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


def is_dir_below(directory: str, path: str) -> bool:
    """Whether ``directory`` is ``path`` or inside it (already in the recursive listing)."""
    directory, path = directory.rstrip("/"), path.rstrip("/")
    return directory == path or directory.startswith(path + "/")


def _size_and_mtime(detail: dict) -> tuple[int, float | None]:
    """A listing entry's size and modification time (epoch seconds; None when not given):
    s3fs ``LastModified``, gcsfs ``updated``, adlfs ``last_modified``, local ``mtime``."""
    when = next((detail[key] for key in ("LastModified", "mtime", "updated", "last_modified")
                 if detail.get(key) is not None), None)
    if hasattr(when, "timestamp"):
        when = when.timestamp()
    elif isinstance(when, str):
        from datetime import datetime

        try:
            when = datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp()
        except ValueError:
            when = None
    return int(detail.get("size") or 0), None if when is None else float(when)


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
        fs.connect() if getattr(fs, "_s3", None) is None else None
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


def _executor():
    global _EXECUTOR
    if _EXECUTOR is None:
        from concurrent.futures import ThreadPoolExecutor

        _EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seglog-read-ahead")
    return _EXECUTOR


class RemoteMappedFile(files.MappedFile):
    """:class:`~seglog_cli.storage.files.MappedFile` of a placeholder: the same sparse file
    mapped; ``buffer``/``view`` fetch the whole file, ``data``/``data_view`` only what
    :meth:`ensure` or :meth:`scan_window` made present."""

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


# -- a view of remote trees -------------------------------------------------------------------------

class RemoteView:
    """Placeholders for remote URLs under one private temporary directory. ``add(url)`` gives the
    local path standing for ``url``; :meth:`to_url` maps a view path back (for messages);
    :meth:`close` unregisters and removes everything."""

    def __init__(self, storage_options: dict | None = None):
        self.storage_options = storage_options
        self.root = Path(os.path.realpath(tempfile.mkdtemp(prefix="seglog-view-")))
        self.prefixes: list[tuple[str, str]] = []  # (view prefix, URL prefix), longest first
        self._files: list[str] = []
        self._by_url: dict[str, Path] = {}
        self._readers: dict = {}  # id(filesystem) -> its range reader (or None: fsspec's)

    def add(self, url: str, context: bool = True) -> Path:
        """The local path of ``url`` in the view, listing it (once) on first use; without
        ``context``, only ``url`` itself (a Spark executor's one file)."""
        if url in self._by_url:
            return self._by_url[url]
        fs, path = open_filesystem(url, self.storage_options)
        path = path.rstrip("/") or path
        protocol = PROTOCOLS[url_scheme(url)]
        base = self.root / str(len(self.prefixes))
        url_prefix = url[:len(url_scheme(url)) + 3] + self._url_host(url, path)
        listing, is_dir = self._list(fs, url, path, context)
        reader = self._readers.get(id(fs)) if id(fs) in self._readers else self._readers.setdefault(
            id(fs), range_reader(fs, protocol))
        for remote_path, (size, mtime) in listing.items():
            self._placeholder(fs, base, remote_path, size, mtime, url_prefix + remote_path.lstrip("/"), reader)
        local = base / path.lstrip("/")
        if is_dir:
            local.mkdir(parents=True, exist_ok=True)
        self.prefixes.append((f"{base}/", url_prefix))
        self.prefixes.sort(key=lambda pair: -len(pair[0]))
        if not is_dir and listing[path][0] < SMALL_FILE:
            files.PLACEHOLDERS[str(local)].fetch_all()  # a config file given as a URL, read by plain reads
        self._by_url[url] = local
        return local

    @staticmethod
    def _url_host(url: str, path: str) -> str:
        """What the URL holds between ``scheme://`` and the path fsspec gave (``bucket/`` is in
        both for S3 and GCS; an ``abfss://container@account...`` host is not in the path)."""
        rest = url.split("://", 1)[1]
        stripped = path.lstrip("/")
        at = rest.find(stripped) if stripped else len(rest)
        return rest[:at] if at > 0 else ""

    def _list(self, fs, url: str, path: str, context: bool = True) -> tuple[dict[str, tuple], bool]:
        """{remote path: (size, mtime)} of everything under ``path`` (or the file itself), and of
        the files directly in the two directories above it; whether ``path`` is a directory."""
        try:
            fs.invalidate_cache(path)  # a long-lived process (a Spark executor) lists afresh
            info = fs.info(path)
        except Exception as exc:  # noqa: BLE001
            raise UnreadableInputError(f"cannot read: {describe(exc)}", url) from None
        is_dir = info.get("type") == "directory"
        listing: dict[str, int] = {}
        try:
            if is_dir:
                for name, detail in fs.find(path, detail=True).items():
                    if detail.get("type", "file") == "file":
                        listing[name] = _size_and_mtime(detail)
            else:
                listing[path] = _size_and_mtime(info)
            if not context:
                return listing, is_dir
            parent = path.rsplit("/", 1)[0] if "/" in path.strip("/") else None
            for directory in (parent, parent.rsplit("/", 1)[0] if parent and "/" in parent.strip("/") else None):
                if directory is None:
                    break
                for detail in fs.ls(directory, detail=True):
                    if detail.get("type") == "file":
                        listing.setdefault(detail["name"], _size_and_mtime(detail))
                    elif detail["name"].rstrip("/").rsplit("/", 1)[-1] == METADATA_DIR and not is_dir_below(
                            detail["name"], path):
                        for name, entry in fs.find(detail["name"], detail=True).items():
                            listing.setdefault(name, _size_and_mtime(entry))
        except Exception as exc:  # noqa: BLE001
            raise UnreadableInputError(f"cannot list: {describe(exc)}", url) from None
        return listing, is_dir

    def _placeholder(self, fs, base: Path, remote_path: str, size: int, mtime: float | None, url: str,
                     reader=None) -> None:
        local = base / remote_path.lstrip("/")
        local.parent.mkdir(parents=True, exist_ok=True)
        with open(local, "wb"):
            pass
        os.truncate(local, size)
        if mtime is not None:  # retention falls back on a segment's mtime: the object's
            os.utime(local, (mtime, mtime))
        remote = RemoteFile(fs, remote_path, size, str(local), reader)
        remote.url = url
        files.PLACEHOLDERS[str(local)] = remote
        self._files.append(str(local))

    def to_url(self, text: str) -> str:
        """``text`` with every view path replaced by the URL it stands for."""
        for view_prefix, url_prefix in self.prefixes:
            text = text.replace(view_prefix, url_prefix)
        return text

    def url_of(self, path) -> str | None:
        """The URL a view path stands for, or None when it is not in this view."""
        text = os.path.abspath(str(path))
        for view_prefix, url_prefix in self.prefixes:
            if text.startswith(view_prefix) or text + "/" == view_prefix:
                return url_prefix + text[len(view_prefix):]
        return None

    def close(self) -> None:
        for name in self._files:
            remote = files.PLACEHOLDERS.pop(name, None)
            if remote is not None and remote._ahead is not None:
                try:
                    remote._wait_ahead()
                except Exception:  # noqa: BLE001 - a read-ahead nobody needs any more
                    pass
        self._files.clear()
        for reader in self._readers.values():
            if reader is not None:
                reader.close()
        self._readers.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "RemoteView":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def url_of(path) -> str | None:
    """The URL of a placeholder path (a file registered in any open view), or None."""
    remote = files.remote_file_of(path)
    return None if remote is None else remote.url


__all__ = ["PROTOCOLS", "RemoteFile", "RemoteMappedFile", "RemoteView", "STATS", "WINDOW", "file_url_path",
           "hadoop_storage_options", "is_remote", "local_path", "open_filesystem", "punch_hole", "url_scheme"]
