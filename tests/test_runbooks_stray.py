"""Runbook 12 (partitions going stray), run as an operator runs it, on the corpus's broker 3:
before its restart with the controller's metadata log (the dirs Kafka 4.2 marked stray are the
ones saved), after it from the -stray dirs Kafka left (lossless JSON Lines), and with only the
broker's own metadata log (it says the restart catches up first)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import REPO, run_seglog
from tests.runbook_helpers import ENV, run, run_json, tree
from tests.storage.metadata.test_startup import STRAY_CASE, kafka_outcomes, needs_stray

SCRIPT = "12-partitions-going-stray.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


@needs_stray
def test_before_the_restart_the_dirs_kafka_marked_stray_are_saved_as_copies(tmp_path):
    log_dir = tmp_path / "broker-3"
    shutil.copytree(STRAY_CASE / "broker-3-before", log_dir, symlinks=True)
    before = tree(log_dir)
    status, document = run_json(SCRIPT, log_dir, "--metadata-log", STRAY_CASE / "controller", cwd=tmp_path)
    stray = kafka_outcomes("restart-1")[1]
    assert status == 1 and {p.rsplit("/", 1)[-1] for p in document["goingStray"]} == stray
    assert document["saved"] == [] and not document["ownCopyOnly"] and "give --out" in document["decision"]
    status, document = run_json(SCRIPT, log_dir, "--metadata-log", STRAY_CASE / "controller",
                                "--out", tmp_path / "saved", "--topic-map", "metrics:metrics", cwd=tmp_path)
    assert status == 1 and document["applied"] is True
    assert sorted(p.name for p in (tmp_path / "saved").iterdir()) == sorted(stray)
    for name in stray:
        assert tree(tmp_path / "saved" / name) == tree(log_dir / name)
    assert tree(log_dir) == before  # nothing in the log dir renamed, removed or changed
    assert any("replay --bootstrap-server localhost:9092 --topic-map metrics:metrics" in line
               for line in document["summary"])
    again = run(SCRIPT, log_dir, "--out", tmp_path / "saved", cwd=tmp_path, env=ENV)
    assert again.returncode == 4 and "exists" in again.stdout


@needs_stray
def test_after_the_restart_the_stray_dirs_are_exported_losslessly(tmp_path):
    after = STRAY_CASE / "broker-3-after"
    status, document = run_json(SCRIPT, after, "--out", tmp_path / "saved", "--format", "jsonl", cwd=tmp_path)
    strays = sorted(p.name for p in after.iterdir() if p.name.endswith("-stray"))
    assert status == 1 and [p.rsplit("/", 1)[-1] for p in document["alreadyStray"]] == strays
    assert document["goingStray"] == [] and document["ownCopyOnly"] is True
    assert sorted(p.name for p in (tmp_path / "saved").iterdir()) == [f"{name}.jsonl" for name in strays]
    ledger = [json.loads(line) for line in (tmp_path / "saved" / f"{strays[0]}.jsonl").read_text().splitlines()]
    records = [line for line in ledger if line["type"] == "record"]
    assert len(records) == 99 and all(r.get("encoding", "base64") == "base64" for r in records)


@needs_stray
def test_with_only_the_brokers_own_metadata_log_it_asks_for_a_current_one(tmp_path):
    status, document = run_json(SCRIPT, STRAY_CASE / "broker-3-before", cwd=tmp_path)
    assert status == 1 and document["ownCopyOnly"] is True and document["goingStray"] == []
    assert "give --metadata-log" in document["decision"]


def test_a_log_dir_without_a_metadata_log_is_healthy(tmp_path):
    shutil.copytree(REPO / "examples" / "logdir", tmp_path / "logdir")
    result = run(SCRIPT, tmp_path / "logdir", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "healthy: nothing goes stray" in result.stdout
    assert run(SCRIPT, tmp_path / "no-such-dir", cwd=tmp_path).returncode == 4


@needs_stray
def test_the_printed_replay_sends_a_saved_stray_dir_into_the_recreated_topic(kafka_cluster, tmp_path):
    """After the restart: the -stray copy of ledger-2 (99 records broker 3 alone kept after the
    reassignment took it away) saved by the runbook, then its printed replay command run with
    --apply into a topic standing for the re-created one."""
    topic = kafka_cluster.new_topic("rb12")
    kafka_cluster.create_topic(topic, partitions=3)
    log_dir = tmp_path / "broker-3"
    log_dir.mkdir()
    stray = next(p for p in (STRAY_CASE / "broker-3-after").iterdir() if p.name.startswith("ledger-2."))
    shutil.copytree(stray, log_dir / stray.name)
    status, document = run_json(SCRIPT, log_dir, "--out", tmp_path / "saved", "--topic-map", f"ledger:{topic}",
                                "--bootstrap-server", kafka_cluster.bootstrap, cwd=tmp_path)
    assert status == 1 and document["alreadyStray"] == [str(log_dir / stray.name)]
    (command,) = [line.strip() for line in document["summary"] if " replay --bootstrap-server " in line]
    assert command.endswith(f"--topic-map ledger:{topic} {tmp_path / 'saved'}/*")
    replay = run_seglog("replay", "--bootstrap-server", kafka_cluster.bootstrap, "--topic-map", f"ledger:{topic}",
                        "--progress-file", str(tmp_path / "progress.json"), "--apply",
                        str(tmp_path / "saved" / stray.name))
    assert replay.exit_code == 0, replay.out + replay.err
    assert kafka_cluster.end_offset(topic, 2) == 99
