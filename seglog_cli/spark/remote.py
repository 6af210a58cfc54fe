"""The Spark sources on remote log dirs (``s3a://``, ``gs://``, ``abfss://``, ``hdfs://``) and on
relative paths.

On the driver, :func:`plan` lists the remote paths once into a
:class:`~seglog_cli.storage.objectstore.remote_view.RemoteView`, plans the splits on it as on local files,
and gives every split its URL back (``path`` and ``logDir``): the driver's temporary view never
reaches an executor. Relative local paths are made absolute by the planner, on the driver
(an executor runs in its own work directory). On an executor, :func:`local_split` opens a one-file view of a
split's URL (the file's size, nothing listed) and reads it with the engine; the bytes come with
ranged reads of the split's range only.

Credentials and endpoints come from the filesystem layer's standard places, or from the
``storageOptions`` option: a JSON object of fsspec storage options (``register(spark)`` may
fill it from the session's Hadoop ``fs.s3a.*`` conf with
:func:`seglog_cli.storage.objectstore.remote_urls.hadoop_storage_options`).
"""

from __future__ import annotations

import dataclasses
import json
from contextlib import contextmanager
from typing import Iterable, Iterator, Mapping

from seglog_cli.spark.plan import OptionError, Split
from seglog_cli.storage.log.errors import SeglogError

STORAGE_OPTIONS = "storageoptions"  # the option's name as parse_options sees it (lower case)


def storage_options(options: Mapping[str, str]) -> dict | None:
    """The ``storageOptions`` option (a JSON object), or None."""
    text = next((value for key, value in options.items() if key.lower() == STORAGE_OPTIONS), None)
    if text is None or not str(text).strip():
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise OptionError("storageOptions: not a JSON object of fsspec storage options")
    return parsed


S3A_KEYS = ("fs.s3a.endpoint", "fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token",
            "fs.s3a.path.style.access", "fs.s3a.endpoint.region", "fs.s3a.region", "fs.s3a.connection.ssl.enabled")


def session_storage_options(spark) -> dict | None:
    """fsspec storage options from a session's Hadoop ``fs.s3a.*`` settings (``spark.hadoop.fs.s3a.*``
    in the Spark conf, else the classic session's Hadoop configuration), or None when none is
    set: what ``register(spark)`` can pass as the sources' ``storageOptions``."""
    from seglog_cli.storage.objectstore.remote_urls import hadoop_storage_options

    conf = {}
    for key in S3A_KEYS:
        value = spark.conf.get(f"spark.hadoop.{key}", None)
        if value is None:
            try:
                value = spark.sparkContext._jsc.hadoopConfiguration().get(key)
            except Exception:  # noqa: BLE001 - Spark Connect: no JVM handle, the Spark conf only
                value = None
        if value is not None:
            conf[key] = value
    options = hadoop_storage_options(conf)
    return {"s3": options} if options else None  # s3a settings for s3 paths only (remote_urls.options_for)


def _is_url(path: str) -> bool:
    from seglog_cli.storage.objectstore.remote_urls import is_remote

    return "://" in path and is_remote(path)


def plan(paths: Iterable[str], options, planner, storage: dict | None = None) -> list[Split]:
    """``planner(local paths, options)`` with remote paths read through a view (the planner
    makes local paths absolute); the splits carry URLs for what was remote."""
    paths = list(paths)
    if not any(_is_url(path) for path in paths):
        return planner(paths, options)
    from seglog_cli.storage.objectstore.remote_view import RemoteView

    with RemoteView(storage) as view:
        try:
            local = [str(view.add(path)) if _is_url(path) else path for path in paths]
            splits = planner(local, options)
        except SeglogError as exc:
            raise _mapped(exc, view) from None
        return [dataclasses.replace(split, path=view.url_of(split.path) or split.path,
                                    log_dir=None if split.log_dir is None else view.to_url(split.log_dir))
                for split in splits]


@contextmanager
def local_split(split: Split, storage: dict | None = None) -> Iterator[Split]:
    """The split itself for a local file; for a URL, the split on a one-file view of it (errors
    name the URL)."""
    if not _is_url(split.path):
        yield split
        return
    from seglog_cli.storage.objectstore.remote_view import RemoteView

    with RemoteView(storage) as view:
        try:
            yield dataclasses.replace(split, path=str(view.add(split.path, context=False)))
        except SeglogError as exc:
            raise _mapped(exc, view) from None


def _mapped(exc: SeglogError, view) -> SeglogError:
    """``exc`` with view paths in its path and message replaced by their URLs."""
    exc.path = None if exc.path is None else view.to_url(exc.path)
    exc.message = view.to_url(exc.message)
    exc.args = (exc.message,)
    return exc
