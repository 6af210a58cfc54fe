"""Read commands on s3:// URLs against a real S3 API server (moto's, on loopback): the output of
every read command on a URL equals, byte for byte, its output on the same files read locally
(with the path prefix mapped). A byte read before it was fetched would read as zero, so this is
the check that no read escapes the remote mapping's fetch discipline. Writing commands refuse
URLs; bad remote input is one line."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest

from tests.conftest import CORPUS, CORPUS_MISSING, run_seglog
from tests.s3_server import BUCKET, make_bucket, missing_packages, moto_server, s3_environment, s3_filesystem, upload

needs_s3 = pytest.mark.skipif(missing_packages() is not None, reason=str(missing_packages()))

K = "kafka-4.2.0"
UPLOADED = (f"{K}/data", f"{K}/recovery-cases/a-append-garbage-active-log/before", f"{K}/tiered/data",
            f"{K}/tiered/remote", f"{K}/replicas/transactional/broker-1", f"{K}/replicas/unclean-election/broker-1",
            f"{K}/replicas/unclean-election/broker-2")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The server with a bucket holding corpus dirs (``<corpus path>`` keys) and a generated
    multi-segment partition (``generated/orders-0``); yields ``(local root, URL root)`` pairs
    to compare: {"corpus": ..., "generated": ...}."""
    if missing_packages() is not None:
        pytest.skip(missing_packages())
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    generated = tmp_path_factory.mktemp("remote") / "generated"
    _make_partition(generated / "orders-0")
    with moto_server() as endpoint, s3_environment(endpoint):
        fs = s3_filesystem()
        make_bucket(fs)
        for rel in UPLOADED:
            upload(fs, CORPUS / rel, rel)
        upload(fs, generated, "generated")
        yield {"corpus": (str(CORPUS), f"s3://{BUCKET}"), "generated": (str(generated.parent), f"s3://{BUCKET}"),
               "fs": fs}


def _make_partition(directory):
    """Four segments (none, zstd, lz4, gzip batches) and their indexes (seglog rebuild-index)."""
    from tests.benchmarks.make_segment import write_segment

    base = 0
    for codec, size in (("none", 3_000_000), ("zstd", 1_000_000), ("lz4", 1_000_000), ("gzip", 600_000)):
        written = write_segment(directory / f"{base:020d}.log", size, compression=codec, base_offset=base,
                                templates=32)
        base = written["next_offset"]
    assert run_seglog("rebuild-index", "--apply", str(directory)).exit_code == 0
    shutil.rmtree(directory.parent.parent / "seglog-backups", ignore_errors=True)


def _same(s3, kind, *args, url_scheme="s3"):
    """Run ``args`` with ``{}`` as the local root, then as the URL root; assert equal outputs."""
    local_root, url_root = s3[kind]
    url_root = url_root.replace("s3://", f"{url_scheme}://", 1)
    local = run_seglog(*[a.replace("{}", local_root) for a in args])
    remote = run_seglog(*[a.replace("{}", url_root) for a in args])
    expected_out = local.stdout.replace(local_root.encode(), url_root.encode())
    expected_err = local.stderr.replace(local_root.encode(), url_root.encode())
    assert (remote.exit_code, remote.stderr.decode()) == (local.exit_code, expected_err.decode())
    assert remote.stdout == expected_out
    assert b"seglog-view-" not in remote.stdout + remote.stderr
    return remote


DUMPS = [
    ("dump", "{}/" + f"{K}/data"),
    ("dump", "--deep-iteration", "--print-data-log", "{}/" + f"{K}/data/txn-0", "{}/" + f"{K}/data/codecs-0"),
    ("dump", "--deep-iteration", "--format", "jsonl", "--payload-encoding", "base64", "{}/" + f"{K}/data"),
    ("dump", "--print-data-log", "--from-offset", "1200", "--to-offset", "1300", "{}/" + f"{K}/data/plain-0"),
    ("dump", "--types", "all", "{}/" + f"{K}/data/smallseg-0"),
    ("dump", "--files", "{}/" + f"{K}/data/plain-0/00000000000000000000.index,"
     + "{}/" + f"{K}/data/plain-0/00000000000000000000.timeindex", "--verify-index-only"),
    ("dump", "--offsets-decoder", "{}/" + f"{K}/data/__consumer_offsets-22"),
    ("dump", "--cluster-metadata-decoder", "{}/" + f"{K}/data/__cluster_metadata-0"),
    ("dump", "--deep-iteration", "{}/" + f"{K}/recovery-cases/a-append-garbage-active-log/before/plain-0"),
    ("dump", "--print-data-log", "--from-offset", "900", "{}/" + f"{K}/tiered/remote/kafka-tiered-storage",
     "{}/" + f"{K}/tiered/data/tiered-0"),
]


@pytest.mark.corpus
@pytest.mark.parametrize("args", DUMPS, ids=lambda args: " ".join(a.rsplit("/", 1)[-1] for a in args))
def test_dump_remote_equals_local(s3, args):
    _same(s3, "corpus", *args)


READS = [
    ("verify", "{}/" + f"{K}/data"),
    ("verify", "--format", "json", "--level", "deep", "{}/" + f"{K}/data/txn-0"),
    ("verify", "--jobs", "2", "--format", "json", "--level", "deep", "{}/" + f"{K}/data"),  # forked children read too
    ("verify", "--format", "jsonl", "{}/" + f"{K}/recovery-cases/a-append-garbage-active-log/before"),
    ("verify", "--format", "json", "{}/" + f"{K}/tiered/remote/kafka-tiered-storage", "{}/" + f"{K}/tiered/data"),
    ("offsets", "--format", "json", "{}/" + f"{K}/data"),
    ("transactions", "--format", "json", "{}/" + f"{K}/data"),
    ("transactions", "--format", "json", "{}/" + f"{K}/replicas/transactional/broker-1"),
    ("diff", "--format", "json", "{}/" + f"{K}/replicas/unclean-election/broker-1/events-0",
     "{}/" + f"{K}/replicas/unclean-election/broker-2/events-0"),
    ("simulate-retention", "--now", "1795644906633", "--config", "retention.ms=1000", "{}/" + f"{K}/data/smallseg-0"),
    ("metadata", "{}/" + f"{K}/data/__cluster_metadata-0"),
    ("metadata", "--format", "json", "--history", "broker:1", "{}/" + f"{K}/data/__cluster_metadata-0"),
]


@pytest.mark.corpus
@pytest.mark.parametrize("args", READS, ids=lambda args: " ".join(a.rsplit("/", 1)[-1] for a in args))
def test_read_commands_remote_equal_local(s3, args):
    _same(s3, "corpus", *args)


@pytest.mark.corpus
def test_simulate_retention_takes_the_objects_mtime(s3):
    """Everything equal but ``mtimeMs``: a placeholder has its object's modification time (what
    retention falls back on without record timestamps), not the local copy's."""
    args = ("simulate-retention", "--format", "json", "--now", "1795644906633", "--config", "retention.bytes=100000")
    local = run_seglog(*args, f"{CORPUS}/{K}/data/plain-0")
    remote = run_seglog(*args, f"s3://{BUCKET}/{K}/data/plain-0")
    assert remote.exit_code == local.exit_code == 1  # a plan: segments to delete
    fs = s3["fs"]
    times = {info["name"].rsplit("/", 1)[-1]: int(info["LastModified"].timestamp() * 1000)
             for info in fs.ls(f"{BUCKET}/{K}/data/plain-0", detail=True)}

    def documents(result, mtimes):
        document = json.loads(result.out.replace(str(CORPUS), f"s3://{BUCKET}"))
        for partition in document["partitions"]:
            for segment in partition["segments"]:
                segment["mtimeMs"] = mtimes(segment)
        return document

    assert documents(local, lambda segment: times[segment["file"]]) == documents(remote, lambda segment: segment["mtimeMs"])


@pytest.mark.corpus
def test_s3a_and_generated_segments(s3, monkeypatch):
    """Several segments of every codec, deep and in JSON Lines, through ``s3a://``, with
    read-ahead windows of 64 KiB (many windows per segment, batches across their ends, holes
    punched behind the scan)."""
    from seglog_cli.storage.objectstore import remote_files

    monkeypatch.setattr(remote_files, "WINDOW", 64 * 1024)
    monkeypatch.setattr(remote_files, "PUNCH_STEP", 64 * 1024)
    _same(s3, "generated", "dump", "--deep-iteration", "--print-data-log", "{}/generated/orders-0", url_scheme="s3a")
    _same(s3, "generated", "dump", "--deep-iteration", "--format", "jsonl", "{}/generated", url_scheme="s3a")
    _same(s3, "generated", "verify", "--format", "json", "--level", "deep", "{}/generated/orders-0")


@pytest.mark.corpus
def test_from_offset_fetches_the_index_and_a_window(s3, monkeypatch):
    """A small range in the middle of a 3 MB segment fetches its index, the small files and
    about two 64 KiB windows (the one read and the one read ahead), not the segment; the view is
    gone afterwards."""
    from seglog_cli.storage.log import files
    from seglog_cli.storage.objectstore import remote_files

    monkeypatch.setattr(remote_files, "WINDOW", 64 * 1024)
    local_root = s3["generated"][0]
    segments = sorted(os.listdir(f"{local_root}/generated/orders-0"))
    logs = [name for name in segments if name.endswith(".log")]
    middle = int(logs[1].split(".")[0]) // 2
    views_before = {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("seglog-view-")}
    remote_files.STATS.update(bytes=0, requests=0)
    _same(s3, "generated", "dump", "--print-data-log", "--from-offset", str(middle), "--to-offset", str(middle + 5),
          "{}/generated/orders-0/" + logs[0])
    index_bytes = os.path.getsize(f"{local_root}/generated/orders-0/{logs[0].replace('.log', '.index')}")
    assert index_bytes < remote_files.STATS["bytes"] <= index_bytes + 2 * 64 * 1024 + 64 * 1024
    assert os.path.getsize(f"{local_root}/generated/orders-0/{logs[0]}") > 10 * remote_files.STATS["bytes"]
    assert not files.PLACEHOLDERS
    views_after = {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("seglog-view-")}
    assert views_after <= views_before


WRITERS = [
    ("recover", "s3://b/data"),
    ("rebuild-index", "s3://b/data/orders-0"),
    ("simulate-retention", "--apply", "s3://b/data/orders-0"),
    ("undo", "gs://b/backup"),
    ("repair", "--from", "s3://b/one/orders-0", "/tmp/other/orders-0"),
]


@pytest.mark.parametrize("args", WRITERS, ids=lambda args: args[0] + ("-apply" if "--apply" in args else ""))
def test_writing_commands_refuse_urls(args):
    result = run_seglog(*args)
    assert result.exit_code == 6
    lines = result.err.splitlines()
    assert len(lines) == 1 and "is remote storage" in lines[0] and "nothing was changed" in lines[0]


@pytest.mark.corpus
@pytest.mark.spark
def test_verify_spark_on_urls_equals_local(s3):
    """``verify --spark`` on URLs: each task opens a view of its partition's URL on its executor
    (never the driver's temporary view), and the report equals the local run's, damage
    included (recovery case a's garbage tail; txn-0's markers and .txnindex)."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("verify --spark needs Java")
    _same(s3, "corpus", "verify", "--spark", "local[2]", "--level", "deep", "--format", "jsonl", "--no-progress",
          "{}/" + f"{K}/recovery-cases/a-append-garbage-active-log/before", "{}/" + f"{K}/data/txn-0",
          "{}/" + f"{K}/data/codecs-0")


def test_unknown_command_with_a_url_is_a_usage_error():
    result = run_seglog("dumpp", "s3://bucket/data")
    assert result.exit_code == 2 and result.err.startswith("seglog: usage error")


def test_append_refuses_url(tmp_path):
    records = tmp_path / "r.jsonl"
    records.write_text('{"value": "x"}\n')
    result = run_seglog("append", "--input", str(records), "s3://bucket/data/orders-0")
    assert result.exit_code == 6 and result.err.count("\n") == 1


@pytest.mark.corpus
def test_bad_remote_input_is_one_line(s3):
    missing_key = run_seglog("dump", f"s3://{BUCKET}/no/such/orders-0")
    assert missing_key.exit_code == 4
    assert missing_key.err == f"seglog: s3://{BUCKET}/no/such/orders-0: cannot read: no such file or directory\n"
    missing_bucket = run_seglog("verify", "s3://no-such-bucket-here/data")
    assert missing_bucket.exit_code == 4 and missing_bucket.err.count("\n") == 1
    assert missing_bucket.err.startswith("seglog: s3://no-such-bucket-here/data: cannot read")
    unknown = run_seglog("dump", "ftp://host/data")
    assert unknown.exit_code == 4
    assert unknown.err == "seglog: ftp://host/data: ftp:// is not a scheme seglog reads (s3, s3a, gs, abfs, abfss, hdfs, file)\n"


def test_missing_backend_is_named():
    import importlib.util

    pytest.importorskip("fsspec")
    if importlib.util.find_spec("gcsfs") is not None:
        pytest.skip("gcsfs is installed here")
    result = run_seglog("dump", "gs://bucket/data/orders-0")
    assert (result.exit_code, result.err) == (4, "seglog: gs://bucket/data/orders-0: install gcsfs to read gs:// paths\n")


@needs_s3
def test_unreachable_endpoint_is_one_line(monkeypatch):
    with s3_environment("http://127.0.0.1:9"):  # the discard port: connection refused
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
        result = run_seglog("dump", "s3://bucket/data/orders-0")
    assert result.exit_code == 4 and result.err.count("\n") == 1
    assert result.err.startswith("seglog: s3://bucket/data/orders-0: cannot read: ")


def test_file_url_is_a_local_path(tmp_path):
    local = run_seglog("dump", "examples/logdir/orders-0")
    as_url = run_seglog("dump", f"file://{os.path.abspath('examples/logdir/orders-0')}")
    assert as_url.exit_code == local.exit_code == 0
    assert as_url.stdout == local.stdout.replace(b"examples/logdir", os.path.abspath("examples/logdir").encode())


def test_hadoop_storage_options():
    from seglog_cli.storage.objectstore.remote_urls import hadoop_storage_options

    conf = {"fs.s3a.endpoint": "minio:9000", "fs.s3a.connection.ssl.enabled": "false", "fs.s3a.access.key": "AK",
            "fs.s3a.secret.key": "SK", "fs.s3a.path.style.access": "true", "fs.s3a.endpoint.region": "eu-west-1"}
    assert hadoop_storage_options(conf) == {
        "endpoint_url": "http://minio:9000", "key": "AK", "secret": "SK",
        "client_kwargs": {"region_name": "eu-west-1"}, "config_kwargs": {"s3": {"addressing_style": "path"}}}
    assert hadoop_storage_options({"fs.s3a.endpoint": "https://s3.example:443"}) == {
        "endpoint_url": "https://s3.example:443"}
    assert hadoop_storage_options({}) == {}
    json.dumps(hadoop_storage_options(conf))  # travels as a JSON option to the Spark sources


def test_a_spark_master_url_is_not_a_path():
    """``--spark spark://host:7077`` names a Spark master, never a log dir to list."""
    from seglog_cli.commands.remote_inputs import may_hold_paths, remote_urls

    argv = ["verify", "--spark", "spark://127.0.0.1:7077", "s3://bucket/data", "--spark=spark://h:1", "d"]
    assert may_hold_paths(argv) == [True, False, False, True, False, True]
    assert remote_urls(argv) == ["s3://bucket/data"]
    assert remote_urls(["verify", "--spark", "spark://127.0.0.1:7077", "data"]) == []
    assert remote_urls(["verify", "--spark", "local[2]", "s3://bucket/data"]) == ["s3://bucket/data"]


@pytest.mark.corpus
def test_tables_are_laid_out_for_the_urls(s3, monkeypatch):
    """A table's columns are measured on the URLs the user sees, not on the view's temporary
    paths the command read (those are longer or shorter): the findings table of a URL lines
    up as the local one does, its file column holding the whole URL."""
    monkeypatch.setenv("COLUMNS", "250")
    case = f"{K}/recovery-cases/a-append-garbage-active-log/before"
    for root in (s3["corpus"][0], s3["corpus"][1]):
        result = run_seglog("verify", "--format", "table", f"{root}/{case}")
        lines = result.out.splitlines()
        header = next(line for line in lines if line.startswith("severity"))
        row = next(line for line in lines if "TRAILING_GARBAGE" in line)
        assert f"{root}/{case}/plain-0/00000000000000008203.log" in row
        # right-aligned numbers end under their headings; the message starts under its own
        assert header.index("position") + len("position") == row.index(" 399586") + len(" 399586")
        assert header.index("message") == row.index("100 bytes at the end")


def test_replay_from_s3_sends_the_records_the_local_files_hold(s3, kafka_cluster, tmp_path):
    """seglog replay takes the remote URLs the read commands take: the same records as from the
    local copy, and a progress file named after the URL (a second run resumes it, sending nothing)."""
    from seglog_cli.storage.replay.sources import Selection, Skipped, directory_records, find_sources

    local, url = s3["corpus"]
    dest = kafka_cluster.new_topic("s3")
    args = ("replay", f"{url}/{K}/data/smallseg-0", "--bootstrap-server", kafka_cluster.bootstrap,
            "--topic-map", f"smallseg:{dest}", "--create-topics", "--apply")
    first = run_seglog(*args, cwd=tmp_path)
    assert first.exit_code == 0, first.stderr
    (progress,) = tmp_path.glob("seglog-replay-*.json")
    assert json.loads(progress.read_text())["replay"]["sources"] == [f"{url}/{K}/data/smallseg-0"]
    again = run_seglog(*args, cwd=tmp_path)
    assert again.exit_code == 0, again.stderr
    assert "replayed: 0 record(s) sent now" in again.stdout.decode()
    sources, _ = find_sources([f"{local}/{K}/data/smallseg-0"])
    ours = [(r[1], r[2], r[3]) for r in directory_records(sources[0], Selection(), Skipped())]
    assert [(r["timestamp"], r["key"], r["value"]) for r in kafka_cluster.read(dest, 0)] == ours
