"""The remote view's fetch discipline, on fsspec's local filesystem (no server needed): a scan
reads each byte once, in windows, with holes punched behind it; a whole read fetches the rest;
paths map back to URLs; written output has view paths replaced even when split across writes."""

from __future__ import annotations

import io
import os

import pytest

from seglog_cli.storage.objectstore import remote_files, remote_urls, remote_view
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.files import PLACEHOLDERS, MappedFile, read_small_file
from tests.benchmarks.make_segment import write_segment

pytest.importorskip("fsspec")
WINDOW = 256 * 1024


@pytest.fixture
def segment(tmp_path, monkeypatch):
    monkeypatch.setattr(remote_files, "WINDOW", WINDOW)
    monkeypatch.setattr(remote_files, "PUNCH_STEP", WINDOW)
    meta = write_segment(tmp_path / "src" / "data" / "orders-0" / f"{0:020d}.log", 3_000_000, templates=16)
    (tmp_path / "src" / "data" / "meta.properties").write_text("version=1\n")
    return meta


def test_a_scan_fetches_each_byte_once_in_windows_and_punches_behind(segment):
    remote_files.STATS.update(bytes=0, requests=0)
    url = "file://" + os.path.dirname(segment["path"])
    with remote_view.RemoteView() as view:
        local = view.add(url)
        log = local / f"{0:020d}.log"
        assert (local.parent / "meta.properties").is_file()  # the log dir's files come with a partition
        with MappedFile(log) as mapped:
            assert isinstance(mapped, remote_files.RemoteMappedFile)
            on_disk, batches = [], []
            for batch in LogScan(mapped):
                batches.append(batch)
                if len(batches) % 50 == 0:
                    on_disk.append(os.stat(log).st_blocks * 512)
        assert len(batches) == segment["batches"] and all(batch.is_valid for batch in batches)  # real bytes
        assert remote_files.STATS["bytes"] == segment["size_bytes"]  # each byte once
        assert remote_files.STATS["requests"] >= segment["size_bytes"] // WINDOW
        assert max(on_disk) <= 5 * WINDOW < segment["size_bytes"]  # holes punched behind the scan
        assert view.url_of(log) == f"{url}/{0:020d}.log"
        assert view.to_url(f"error in {log} at 5") == f"error in {url}/{0:020d}.log at 5"
    assert not PLACEHOLDERS and not os.path.exists(view.root)


def test_whole_reads_fetch_everything_and_stop_punching(segment):
    with remote_view.RemoteView() as view:
        log = view.add("file://" + os.path.dirname(segment["path"])) / f"{0:020d}.log"
        with open(segment["path"], "rb") as original:
            expected = original.read()
        assert read_small_file(log) == expected
        with MappedFile(log) as mapped:
            list(LogScan(mapped))  # a scan after a whole read punches nothing
            assert bytes(mapped.buffer) == expected


def test_url_writer_replaces_view_paths_split_across_writes():
    from seglog_cli.commands.remote_inputs import _UrlWriter

    class View:
        prefixes = [("/tmp/seglog-view-x/0/", "s3://")]

    target = io.BytesIO()
    writer = _UrlWriter(target, View())
    text = b"Dumping /tmp/seglog-view-x/0/bucket/orders-0/0.log\nnot /tmp/seglog-other\n"
    writer.write(text[:20])
    writer.write(text[20:31])
    writer.write(text[31:])
    writer.finish()
    assert target.getvalue() == b"Dumping s3://bucket/orders-0/0.log\nnot /tmp/seglog-other\n"


def test_scheme_errors_are_one_line():
    from seglog_cli.storage.log.errors import UnreadableInputError

    with pytest.raises(UnreadableInputError, match="not a scheme seglog reads"):
        remote_urls.open_filesystem("ftp://host/x")
    assert remote_urls.local_path("file:///var/lib/kafka") == "/var/lib/kafka"
    assert remote_urls.is_remote("s3a://b/k") and not remote_urls.is_remote("file:///x")
    assert not remote_urls.is_remote("/var/lib/kafka")


def test_a_killed_runs_view_is_removed_by_the_next_one(tmp_path, monkeypatch):
    import subprocess
    import tempfile

    from seglog_cli.storage.objectstore import remote_view

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"seglog-view-{dead.pid}-abc"
    fresh = tmp_path / f"seglog-view-{dead.pid}-new"
    alive = tmp_path / f"seglog-view-{os.getpid()}-old"
    for directory in (stale, fresh, alive):
        (directory / "0").mkdir(parents=True)
    old = __import__("time").time() - 3600
    os.utime(stale, (old, old))
    os.utime(alive, (old, old))
    with remote_view.RemoteView():
        pass
    assert not stale.exists() and fresh.exists() and alive.exists()


def test_a_placeholder_read_outside_its_process_is_refused(segment):
    """What a Spark worker or any other process would see given a view path: a refusal, never
    the zeros of bytes it cannot fetch."""
    from seglog_cli.storage.log.errors import UnreadableInputError
    from seglog_cli.storage.log.files import PLACEHOLDERS

    with remote_view.RemoteView() as view:
        log = view.add("file://" + os.path.dirname(segment["path"])) / f"{0:020d}.log"
        saved = dict(PLACEHOLDERS)
        PLACEHOLDERS.clear()  # as in a process that did not list it
        try:
            with pytest.raises(UnreadableInputError, match="another process's view"):
                MappedFile(log)
            with pytest.raises(UnreadableInputError, match="another process's view"):
                read_small_file(log)
        finally:
            PLACEHOLDERS.update(saved)
