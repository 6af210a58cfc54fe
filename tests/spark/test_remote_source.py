"""The ``seglog`` source on ``s3a://`` (a real S3 API server on loopback, moto's): the DataFrame
equals the CLI's JSON Lines of the same URL and of the same files read locally, record for
record; the splits carry the URL (the driver's temporary view never reaches a task) and
``logDir`` is the URL's log dir. Credentials and endpoint travel in ``storageOptions``, as
``register(spark)`` would fill them from the Hadoop ``fs.s3a.*`` conf."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CORPUS, CORPUS_MISSING
from tests.s3_server import BUCKET, make_bucket, missing_packages, moto_server, s3_environment, s3_filesystem, upload
from tests.spark.conftest import arrow_records, dump_records, requires_spark

pytestmark = [requires_spark, pytest.mark.spark,
              pytest.mark.skipif(missing_packages() is not None, reason=str(missing_packages()))]

DATA = "kafka-4.2.0/data"


@pytest.fixture(scope="module")
def s3_data():
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    with moto_server() as endpoint, s3_environment(endpoint):
        fs = s3_filesystem()
        make_bucket(fs)
        for name in ("txn-0", "codecs-0", "meta.properties", "log-start-offset-checkpoint"):
            upload(fs, CORPUS / DATA / name, f"data/{name}")
        yield {"endpoint_url": endpoint, "key": "testing", "secret": "testing",
               "client_kwargs": {"region_name": "us-east-1"}}


@pytest.mark.corpus
def test_s3a_load_equals_the_cli(spark, s3_data):
    from seglog_cli.spark.plan import parse_options, plan_splits
    from seglog_cli.spark.remote import plan

    urls = [f"s3a://{BUCKET}/data/txn-0", f"s3a://{BUCKET}/data/codecs-0"]
    frame = (spark.read.format("seglog").option("storageOptions", json.dumps(s3_data))
             .option("splitBytes", "65536").load(urls))
    table = frame.toArrow()
    expected = dump_records(urls)
    assert arrow_records(table) == expected == dump_records([CORPUS / DATA / "txn-0", CORPUS / DATA / "codecs-0"])
    assert len(expected) > 300
    assert set(table.column("logDir").to_pylist()) == {f"s3a://{BUCKET}/data"}
    splits = plan(urls, parse_options({"splitBytes": "65536"}), plan_splits, s3_data)
    assert len(splits) > 2 and all(split.path.startswith(f"s3a://{BUCKET}/data/") for split in splits)


@pytest.mark.corpus
def test_s3a_read_committed(spark, s3_data):
    url = f"s3a://{BUCKET}/data/txn-0"
    options = {"storageOptions": json.dumps(s3_data), "isolationLevel": "read_committed"}
    remote = spark.read.format("seglog").options(**options).load(url).count()
    local = spark.read.format("seglog").option("isolationLevel", "read_committed").load(str(CORPUS / DATA / "txn-0"))
    assert remote == local.count() == 199  # what a read_committed consumer returns (issue 16)


def test_bad_storage_options_is_one_error():
    from seglog_cli.spark.plan import OptionError
    from seglog_cli.spark.remote import storage_options

    assert storage_options({"storageOptions": '{"anon": true}'}) == {"anon": True}
    assert storage_options({}) is None
    with pytest.raises(OptionError, match="storageOptions"):
        storage_options({"storageoptions": "[1, 2]"})


def test_session_storage_options_from_the_hadoop_conf(spark):
    """The session's ``spark.hadoop.fs.s3a.*`` settings become s3 storage options. What the
    Hadoop conf holds already stays (Spark copies AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY of the
    environment the context started in into fs.s3a.access.key/secret.key), so the test compares
    against the session's own baseline."""
    from seglog_cli.spark.remote import session_storage_options

    baseline = session_storage_options(spark)
    spark.conf.set("spark.hadoop.fs.s3a.endpoint", "minio.local:9000")
    spark.conf.set("spark.hadoop.fs.s3a.connection.ssl.enabled", "false")
    spark.conf.set("spark.hadoop.fs.s3a.path.style.access", "true")
    try:
        assert session_storage_options(spark) == {"s3": {**(baseline or {}).get("s3", {}),
                                                         "endpoint_url": "http://minio.local:9000",
                                                         "config_kwargs": {"s3": {"addressing_style": "path"}}}}
    finally:
        for key in ("endpoint", "connection.ssl.enabled", "path.style.access"):
            spark.conf.unset(f"spark.hadoop.fs.s3a.{key}")
    assert session_storage_options(spark) == baseline


def test_storage_options_keyed_by_store_reach_only_that_store():
    from seglog_cli.storage.objectstore.remote_urls import options_for

    keyed = {"s3": {"endpoint_url": "http://127.0.0.1:9000"}, "gcs": {"token": "anon"}}
    assert options_for("s3", keyed) == {"endpoint_url": "http://127.0.0.1:9000"}
    assert options_for("gcs", keyed) == {"token": "anon"}
    assert options_for("hdfs", keyed) == {}
    assert options_for("s3", {"anon": True}) == {"anon": True}  # a plain mapping: used as it is
    assert options_for("s3", None) == {}


@pytest.mark.corpus
def test_register_gives_reads_the_sessions_s3a_conf(spark, s3_data):
    """``register(spark)`` with the endpoint and keys only in the session's Hadoop ``fs.s3a.*``
    conf: a plain ``load(s3a://...)`` (no storageOptions) plans and reads through them (the
    planner and the tasks are Python processes the JVM started, which never saw the test's
    environment), and a read's own storageOptions still wins."""
    from seglog_cli.spark import register

    conf = {"endpoint": s3_data["endpoint_url"], "access.key": "testing", "secret.key": "testing",
            "endpoint.region": "us-east-1", "path.style.access": "true"}
    for key, value in conf.items():
        spark.conf.set(f"spark.hadoop.fs.s3a.{key}", value)
    try:
        register(spark)
        url = f"s3a://{BUCKET}/data/txn-0"
        assert spark.read.format("seglog").load(url).count() == 339
        wrong = json.dumps({"endpoint_url": "http://127.0.0.1:9", "key": "x", "secret": "y"})
        with pytest.raises(Exception, match="127.0.0.1:9|cannot|Connect"):
            spark.read.format("seglog").option("storageOptions", wrong).load(url).count()
    finally:
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()
        for key in conf:
            spark.conf.unset(f"spark.hadoop.fs.s3a.{key}")
            hadoop.unset(f"fs.s3a.{key}")  # a query copies the session's spark.hadoop.* into it
        register(spark)  # the plain sources again for the other tests
