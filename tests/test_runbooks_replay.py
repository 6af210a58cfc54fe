"""Runbooks 11 (replay what an unclean election threw away) and 09 --replay-to (a dead cluster's
topic into a new one), against the live broker of the ``kafka_cluster`` fixture, on copies of
the corpus whose topic is renamed to one no other test uses (the tests run unchanged against a
real Kafka that keeps its topics between runs)."""

from __future__ import annotations

import shutil

import pytest

from seglog_cli.storage.replay.sources import Selection, Skipped, directory_records, find_sources
from tests.conftest import CORPUS
from tests.runbook_helpers import ENV, make_writable, run, run_json

UNCLEAN = CORPUS / "kafka-4.2.0" / "replicas" / "unclean-election"
IN_SYNC = CORPUS / "kafka-4.2.0" / "replicas" / "in-sync"
DATA = CORPUS / "kafka-4.2.0" / "data"

pytestmark = [pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed"),
              pytest.mark.skipif(not UNCLEAN.is_dir(), reason=f"{UNCLEAN} not found (the replicas corpus)")]


def _replicas(case, tmp_path, topic):
    """The case's three replicas of events-0, as partition dirs of ``topic``-0."""
    out = []
    for broker in (1, 2, 3):
        target = tmp_path / case.name / f"broker-{broker}" / f"{topic}-0"
        shutil.copytree(case / f"broker-{broker}" / "events-0", target)
        out.append(target)
    make_writable(tmp_path / case.name)
    return out


def _records(partition_dir, low=None, high=None):
    sources, _ = find_sources([str(partition_dir)])
    return [(r[1], r[2], r[3], [(bytes(k).decode(), v) for k, v in r[4]])
            for r in directory_records(sources[0], Selection(from_offset=low, to_offset=high), Skipped())]


def _read(cluster, topic, partition=0):
    return [(r["timestamp"], r["key"], r["value"], [(k, v) for k, v in r["headers"]])
            for r in cluster.read(topic, partition)]


def test_11_replays_the_lost_records_into_the_leader_exactly_once(kafka_cluster, tmp_path):
    topic = kafka_cluster.new_topic("rb11")
    broker_1, broker_2, broker_3 = _replicas(UNCLEAN, tmp_path, topic)
    kafka_cluster.create_topic(topic, partitions=1)
    args = ["--bootstrap-server", kafka_cluster.bootstrap, "--work-dir", tmp_path / "work", broker_2, broker_1,
            broker_3]
    dry = run("11-replay-lost-records.sh", "--dry-run", *args, cwd=tmp_path)
    assert dry.returncode == 1, dry.stdout + dry.stderr
    assert "diverges at offset 3900 (leader-epoch); 900 record(s) only it holds would be lost" in dry.stdout
    assert f"Replay 900 record(s) of {topic}-0 (offsets 3900..4799) into {topic}-0" in dry.stdout
    assert "replay needed: plan shown, nothing sent" in dry.stdout
    assert kafka_cluster.end_offset(topic, 0) == 0
    status, document = run_json("11-replay-lost-records.sh", "--yes", *args, cwd=tmp_path)
    assert status == 1 and document["applied"] is True, document["summary"]
    assert any("the records are at offsets 0..899" in line for line in document["summary"])
    lost = _records(broker_1, 3900, 4799)
    assert _read(kafka_cluster, topic) == lost and len(lost) == 900
    assert any(k == "bin" for *_rest, headers in lost for k, _v in headers)  # the binary header, exact
    again = run("11-replay-lost-records.sh", "--yes", *args, cwd=tmp_path)  # resumes: nothing sent twice
    assert again.returncode == 1, again.stdout + again.stderr
    assert _read(kafka_cluster, topic) == lost


def test_11_nothing_lost_and_usage(kafka_cluster, tmp_path):
    topic = kafka_cluster.new_topic("rb11-sync")
    replicas = _replicas(IN_SYNC, tmp_path, topic)
    same = run("11-replay-lost-records.sh", "--bootstrap-server", kafka_cluster.bootstrap, "--work-dir",
               tmp_path / "work", *replicas, cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "nothing was lost" in same.stdout
    no_cluster = run("11-replay-lost-records.sh", *replicas, cwd=tmp_path)
    assert no_cluster.returncode == 2 and "--bootstrap-server" in no_cluster.stderr


def test_11_an_unreachable_cluster_needs_a_human(tmp_path):
    replicas = _replicas(UNCLEAN, tmp_path, "events")
    result = run("11-replay-lost-records.sh", "--bootstrap-server", "127.0.0.1:1", "--work-dir", tmp_path / "w",
                 replicas[1], replicas[0], cwd=tmp_path, env=dict(ENV, SEGLOG_REPLAY_TIMEOUT="2"))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "cannot be reached or refused" in result.stdout


def test_09_export_then_replay_into_a_new_cluster(kafka_cluster, tmp_path):
    topic = kafka_cluster.new_topic("rb09")
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    shutil.copy(DATA / "meta.properties", log_dir)
    shutil.copytree(DATA / "smallseg-0", log_dir / f"{topic}-0")
    make_writable(log_dir)
    status, document = run_json("09-export-topic.sh", "--topic", topic, "--out", tmp_path / "out", "--replay-to",
                                kafka_cluster.bootstrap, "--yes", log_dir, cwd=tmp_path)
    assert status == 1 and document["applied"] is True, document["summary"]
    assert any(f"{topic}: created with 1 partition(s)" in line for line in document["summary"])
    assert _read(kafka_cluster, topic) == _records(log_dir / f"{topic}-0")
    assert (tmp_path / "out" / f"{topic}-0.jsonl").is_file()
