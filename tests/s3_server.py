"""A real S3 API server on loopback for the remote-read tests and benchmarks: moto's
``ThreadedMotoServer`` (S3 over HTTP, from PyPI), reached by s3fs/botocore through their
standard environment (``AWS_ENDPOINT_URL`` and dummy keys), which only :func:`s3_environment`
sets. Nothing here mocks a client."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

BUCKET = "seglog-test"
ENV_KEYS = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")


def missing_packages() -> str | None:
    """Why the S3 tests cannot run here, or None."""
    for module, package in (("moto.server", "moto[server]"), ("s3fs", "s3fs"), ("fsspec", "fsspec")):
        try:
            __import__(module)
        except ImportError:
            return f"{package} is not installed (pip install -e '.[test]')"
    return None


@contextmanager
def s3_environment(endpoint: str):
    """botocore's own variables pointing at ``endpoint`` with dummy keys, for the block."""
    saved = {key: os.environ.get(key) for key in ENV_KEYS}
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"})
    _forget_clients()
    try:
        yield
    finally:
        _forget_clients()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _forget_clients() -> None:
    """fsspec keeps one s3fs client per storage options for the process: one made for another
    endpoint (an earlier server of the same test run) must not be reused."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


@contextmanager
def moto_server():
    """A ThreadedMotoServer on 127.0.0.1 and a free port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def s3_filesystem():
    """A fresh s3fs client (no instance cache: the environment decides the endpoint)."""
    import s3fs

    return s3fs.S3FileSystem(skip_instance_cache=True)


def make_bucket(fs) -> None:
    """The test bucket (moto's backends live as long as the process: it may be there already)."""
    if not fs.exists(BUCKET):
        fs.mkdir(BUCKET)


def upload(fs, local: Path, key: str) -> None:
    """Put the regular files under ``local`` (a file or a directory) at ``BUCKET/key`` (symlinks
    to files are uploaded as the files they point at, as an object store holds them)."""
    local = Path(local)
    if local.is_file():
        fs.put_file(str(local), f"{BUCKET}/{key}")
        return
    for path in sorted(local.rglob("*")):
        if path.is_file():
            fs.put_file(str(path), f"{BUCKET}/{key}/{path.relative_to(local).as_posix()}")
