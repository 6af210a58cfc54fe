"""A local view of remote trees: the engine reads s3://, gs://, ... prefixes as local paths.

:class:`RemoteView` lists a URL once (one recursive listing, plus the files directly in the two
directories above it and their ``__cluster_metadata-0``, which a partition or a file is read
with) and makes the same relative tree in a private temporary directory out of placeholders:
sparse files of the remote sizes and modification times, registered in
:data:`seglog_cli.storage.log.files.PLACEHOLDERS` with the :class:`~seglog_cli.storage.objectstore.remote_files.RemoteFile`
that fetches their bytes. :meth:`RemoteView.to_url` maps view paths in any text back to the
URLs; :meth:`RemoteView.close` unregisters and removes everything.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from seglog_cli.storage.log import files
from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.objectstore.remote_files import RemoteFile, range_reader
from seglog_cli.storage.objectstore.remote_urls import PROTOCOLS, describe, open_filesystem, url_scheme

SMALL_FILE = 1 << 20  # a URL naming one file this small is fetched whole when its view opens
# a log dir's KRaft metadata partition: topic configs of a partition are read from it, so a view
# of a partition (or of a file) holds it too when its log dir has one
METADATA_DIR = "__cluster_metadata-0"
VIEW_PREFIX = "seglog-view-"  # then the pid of the process that made it
STALE_SECONDS = 600  # a view this old whose process is gone (killed: no cleanup ran) is removed


class RemoteView:
    """Placeholders for remote URLs under one private temporary directory. ``add(url)`` gives the
    local path standing for ``url``; :meth:`to_url` maps a view path back (for messages);
    :meth:`close` unregisters and removes everything."""

    def __init__(self, storage_options: dict | None = None):
        self.storage_options = storage_options
        _remove_stale_views()
        self.root = Path(os.path.realpath(tempfile.mkdtemp(prefix=f"{VIEW_PREFIX}{os.getpid()}-")))
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


def _remove_stale_views() -> None:
    """Remove the views of seglog processes that were killed before they could (``kill -9``):
    ``seglog-view-<pid>-*`` directories whose process is gone, untouched for ten minutes."""
    directory = tempfile.gettempdir()
    try:
        names = [name for name in os.listdir(directory) if name.startswith(VIEW_PREFIX)]
    except OSError:
        return
    now = time.time()
    for name in names:
        pid = name[len(VIEW_PREFIX):].split("-", 1)[0]
        path = os.path.join(directory, name)
        try:
            if not pid.isdigit() or now - os.stat(path).st_mtime < STALE_SECONDS or _alive(int(pid)):
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


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


def url_of(path) -> str | None:
    """The URL of a placeholder path (a file registered in any open view), or None."""
    remote = files.remote_file_of(path)
    return None if remote is None else remote.url


__all__ = ["METADATA_DIR", "RemoteView", "SMALL_FILE", "url_of"]
