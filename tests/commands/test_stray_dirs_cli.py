"""``<topic>-<p>.<32 hex>-stray`` dirs (what a KRaft broker sets aside at start-up) are read like
``-delete`` dirs by the read commands and by replay: the topic and partition from the name, the
records as they are. seglog never renames nor deletes them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from seglog_cli.storage.replay.sources import find_sources
from tests.conftest import REPO
from tests.storage.metadata.test_startup import STRAY_CASE, needs_stray

UUID = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def log_dir(tmp_path):
    directory = tmp_path / "kafka-logs"
    directory.mkdir()
    shutil.copytree(REPO / "examples" / "logdir" / "orders-0", directory / "orders-0")
    for suffix in ("stray", "delete"):
        shutil.copytree(REPO / "examples" / "logdir" / "orders-0", directory / f"orders-0.{UUID}-{suffix}")
    return directory


def _records(seglog, path) -> list:
    result = seglog("dump", "--format", "jsonl", "--print-data-log", str(path))
    assert result.exit_code == 0, result.err
    lines = [json.loads(line) for line in result.out.splitlines()]
    files = [line for line in lines if line["type"] == "file"]
    assert {(f["topic"], f["partition"]) for f in files} == {("orders", 0)}
    return [line for line in lines if line["type"] == "record"]


def test_dump_reads_a_stray_dir_as_its_partition(seglog, log_dir):
    stray = _records(seglog, log_dir / f"orders-0.{UUID}-stray")
    assert stray and stray == _records(seglog, log_dir / f"orders-0.{UUID}-delete")


def test_verify_and_transactions_take_stray_dirs_like_delete_dirs(seglog, log_dir):
    result = seglog("verify", str(log_dir), "--format", "json")
    assert result.exit_code == 0, result.out
    partitions = json.loads(result.out)["partitions"]
    names = sorted((p["path"].rsplit("/", 1)[-1], p["topic"], p["partition"]) for p in partitions)
    assert names == [("orders-0", "orders", 0), (f"orders-0.{UUID}-delete", "orders", 0),
                     (f"orders-0.{UUID}-stray", "orders", 0)]
    transactions = seglog("transactions", str(log_dir / f"orders-0.{UUID}-stray"))
    assert transactions.exit_code == 0 and "in 1 partition(s)" in transactions.out


def test_diff_compares_a_stray_copy_with_the_current_dir(seglog, log_dir):
    result = seglog("diff", str(log_dir / "orders-0"), str(log_dir / f"orders-0.{UUID}-stray"), "--format", "json")
    assert result.exit_code == 0, result.err
    (partition,) = json.loads(result.out)["partitions"]
    assert partition["partition"] == "orders-0" and partition["status"] == "in-sync"
    assert f"orders-0.{UUID}-stray" in result.out


def test_replay_sources_name_the_stray_dirs_partition(log_dir):
    sources, _ = find_sources([str(log_dir / f"orders-0.{UUID}-stray")])
    assert [(s.topic, s.partition, s.directory) for s in sources] == [
        ("orders", 0, str(log_dir / f"orders-0.{UUID}-stray"))]


@needs_stray
def test_the_stray_dirs_kafka_left_are_read(seglog):
    after = STRAY_CASE / "broker-3-after"
    strays = sorted(p for p in after.iterdir() if p.name.endswith("-stray"))
    assert len(strays) == 6
    sources, _ = find_sources([str(p) for p in strays])
    assert sorted((s.topic, s.partition) for s in sources) == [
        ("ledger", 2), ("metrics", 0), ("metrics", 1), ("metrics", 2), ("sessions", 0), ("sessions", 1)]
    result = seglog("dump", "--format", "jsonl", str(after / strays[0].name))
    assert result.exit_code == 0 and '"topic":"ledger","partition":2' in result.out


@needs_stray
def test_a_live_dir_and_the_stray_dir_of_the_topic_before_it_are_two_topics_not_copies(tmp_path):
    """Broker 3 after its restart holds metrics-0 (the topic created again, a new id) beside
    metrics-0.<uuid>-stray (the deleted one's): replaying the log dir cannot pick one by its log
    end; it names both with their topic ids and asks for the one to replay (exit 2, nothing read
    from the cluster). Each given alone is replayable."""
    from seglog_cli.storage.replay.sources import TwoTopicsError

    stray_after = STRAY_CASE / "broker-3-after"

    with pytest.raises(TwoTopicsError, match=r"metrics-0 is two topics: .*topic id .* and .*topic id "):
        find_sources([str(stray_after)], {"metrics"})
    result = subprocess.run([sys.executable, "-m", "seglog_cli", "replay", str(stray_after), "--topics", "metrics",
                             "--bootstrap-server", "127.0.0.1:1", "--timeout", "1"], capture_output=True, text=True,
                            cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("seglog: usage error: metrics-0 is two topics:") and "-stray" in result.stderr
    (stray,) = stray_after.glob("metrics-0.*-stray")
    assert [s.directory for s in find_sources([str(stray)])[0]] == [str(stray)]
    assert len(find_sources([str(stray_after / "metrics-0")])[0]) == 1
