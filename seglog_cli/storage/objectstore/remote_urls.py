"""Remote log dirs by URL: which schemes seglog reads and the filesystem layer behind them.

``s3://``, ``s3a://`` (Hadoop's name for the same store), ``gs://``, ``abfs://``, ``abfss://``,
``hdfs://`` go to fsspec (``fsspec.core.url_to_fs``); ``file://`` is a local path. Credentials
and endpoints come from where that layer looks (fsspec's config, ``~/.config/fsspec``,
``FSSPEC_S3_*``; botocore's chain: ``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ``~/.aws``;
gcsfs's and adlfs's defaults) or from a storage-options mapping, which
:func:`hadoop_storage_options` makes out of Spark's ``fs.s3a.*`` keys. Failures become one
:class:`~seglog_cli.storage.log.errors.UnreadableInputError` line naming the URL and the cause.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from seglog_cli.storage.log.errors import UnreadableInputError

# URL scheme -> fsspec protocol
PROTOCOLS = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gcs", "gcs": "gcs", "abfs": "abfs",
             "abfss": "abfs", "az": "abfs", "hdfs": "hdfs", "viewfs": "hdfs", "file": "file"}
PACKAGES = {"s3": "s3fs", "gcs": "gcsfs", "abfs": "adlfs", "hdfs": "pyarrow"}
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


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
        return fsspec.core.url_to_fs(normalized, **options_for(protocol, storage_options))
    except ImportError:
        raise UnreadableInputError(f"install {PACKAGES.get(protocol, 'its fsspec backend')} to read {scheme}:// paths",
                                   url) from None
    except Exception as exc:  # noqa: BLE001 - a backend's own errors, as one line
        raise UnreadableInputError(f"cannot open: {describe(exc)}", url) from None


def options_for(protocol: str, storage_options: dict | None) -> dict:
    """The storage options of ``protocol``: a mapping keyed by protocols (``{"s3": {...},
    "gcs": {...}}``, what ``register(spark)`` makes of the Hadoop conf, so s3a settings never
    reach another store) gives that protocol's entry; any other mapping is used as it is."""
    given = dict(storage_options or {})
    if given and all(key in _STORES and isinstance(value, dict) for key, value in given.items()):
        return dict(given.get(protocol) or {})
    return given


_STORES = frozenset(PROTOCOLS.values())


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


__all__ = ["PACKAGES", "PROTOCOLS", "describe", "file_url_path", "hadoop_storage_options", "is_remote", "local_path",
           "open_filesystem", "url_scheme"]
