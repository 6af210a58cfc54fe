"""``seglog metadata``: the image of the corpus's metadata logs at an offset or a time, a
partition's and a broker's history, text in 80 columns, JSON, and one-line errors."""

from __future__ import annotations

import json

import pytest

from tests.storage.metadata.test_image import HISTORY, needs_corpus

DATA = HISTORY / "data"


@needs_corpus
def test_image_at_the_final_describes_time(seglog):
    result = seglog("metadata", str(DATA / "broker-1"), "--at-time", "2026-11-28T20:01:56.409Z")
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "metadata image of node 1 below offset 786"
    assert "    2: leader 1 (epoch 1), replicas 1,2,3, isr 1,2,3, partition epoch 4" in lines
    assert "metadata.version: 4.2-IV1" in lines and "SCRAM users: alice (SCRAM-SHA-256)" in lines
    assert "next producer id: 3000" in lines and "  broker 1: log.cleaner.threads=2" in lines
    # the corpus path is the only line allowed past 80 columns (a path is never broken)
    assert all(len(line) <= 80 for line in lines if str(DATA) not in line)


@needs_corpus
def test_json_at_an_offset_for_one_topic(seglog):
    result = seglog("metadata", str(DATA / "controller" / "__cluster_metadata-0"), "--at-offset", "600",
                    "--topic", "orders", "--format", "json")
    assert result.exit_code == 0, result.err
    document = json.loads(result.out)
    assert (document["nodeId"], document["endOffset"], document["snapshot"]) == (
        100, 600, "00000000000000000568-0000000001.checkpoint")
    (orders,) = document["image"]["topics"]
    assert orders["topicId"] == "YaZrWuNcQXuBvAPfDQjPvg" and len(orders["partitions"]) == 6
    assert document["image"]["scramUsers"] == {"alice": ["SCRAM-SHA-256"]}
    assert "salt" not in result.out and "stored_key" not in result.out


@needs_corpus
def test_broker_filter_keeps_the_partitions_it_hosts(seglog):
    result = seglog("metadata", str(DATA / "controller"), "--broker", "2", "--format", "json", "--at-offset", "700")
    document = json.loads(result.out)
    assert [b["id"] for b in document["image"]["brokers"]] == [2]
    inventory = next(t for t in document["image"]["topics"] if t["name"] == "inventory")
    assert list(inventory["partitions"]) == ["2"]  # inventory-1 moved off broker 2


@needs_corpus
def test_history_of_a_partition(seglog):
    result = seglog("metadata", str(DATA / "controller"), "--history", "inventory-1")
    assert result.exit_code == 0, result.err
    assert "        reassignment: replicas [3,1,2], adding [3], removing [2]" in result.out.splitlines()
    assert all(len(line) <= 80 for line in result.out.splitlines() if str(DATA) not in line)
    document = json.loads(seglog("metadata", str(DATA / "controller"), "--history", "inventory-1",
                                 "--format", "json").out)
    assert document["subject"] == "inventory-1" and document["changes"][0]["offset"] == 54


@needs_corpus
def test_history_of_a_broker_up_to_a_time(seglog):
    result = seglog("metadata", str(DATA / "controller"), "--history", "broker:3", "--at-time", "1795895960000")
    assert result.exit_code == 0
    events = [line[34:] for line in result.out.splitlines() if line[:1].isdigit()]
    assert events[0].startswith("registered (epoch 13") and events[1] == "unfenced"
    assert events[-1] == "fenced"  # at 19:59:20, broker 3 stopped
    assert all(len(line) <= 80 for line in result.out.splitlines() if str(DATA) not in line)


@needs_corpus
def test_nothing_known_is_a_warning(seglog):
    result = seglog("metadata", str(DATA / "controller"), "--history", "nope-0")
    assert result.exit_code == 1 and result.err.startswith("seglog: no change of nope-0")
    result = seglog("metadata", str(DATA / "controller"), "--topic", "nope")
    assert result.exit_code == 1 and "topic 'nope' is not in the image" in result.err


@pytest.mark.parametrize("args,code,message", [
    (["--at-offset", "5", "--at-time", "0"], 2, "give --at-offset or --at-time, not both"),
    (["--at-time", "yesterday"], 2, "--at-time: 'yesterday' is neither epoch milliseconds nor an ISO-8601 time"),
    (["--history", "orders"], 2, "is neither TOPIC-PARTITION"),
])
def test_bad_options_are_one_line(seglog, tmp_path, args, code, message):
    result = seglog("metadata", str(tmp_path), *args)
    assert result.exit_code == code and message in result.err and len(result.err.splitlines()) == 1


def test_no_metadata_log_is_unreadable_input(seglog, tmp_path):
    result = seglog("metadata", str(tmp_path))
    assert result.exit_code == 4
    assert result.err == f"seglog: no __cluster_metadata-0 in {tmp_path} (not a KRaft node's log dir)\n"
