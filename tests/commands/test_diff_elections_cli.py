"""``seglog diff`` and ``seglog repair`` name the election behind each leader epoch they compare,
from a metadata log: the one in a replica's log dir (the history case, where every broker keeps
``__cluster_metadata-0`` beside its partitions) or ``--metadata-log`` (the unclean-election
replicas with a metadata log written as their controller's ``case.json`` tells it)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_seglog
from tests.storage.metadata.test_elections import EVENTS_ID, events_metadata_log

HISTORY = "kafka-4.2.0/metadata/history/data"
UNCLEAN = "kafka-4.2.0/replicas/unclean-election"


def _root(corpus, where):
    root = corpus / where
    if not root.is_dir():
        pytest.skip(f"{root} not in the corpus")
    return root


def _replicas(root, name, brokers=(1, 2, 3)):
    return [str(root / f"broker-{n}" / name) for n in brokers]


def test_diff_finds_the_metadata_log_beside_the_replicas(corpus):
    root = _root(corpus, HISTORY)
    result = run_seglog("diff", "--format", "text", *_replicas(root, "orders-0"))
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    heading = lines.index(f"  leader epochs, as the metadata log {root / 'broker-3' / '__cluster_metadata-0'} names them:")
    assert lines[heading + 1:heading + 4] == [
        "    epoch 0 (first offset 0): leader 3 from metadata offset 35 (2026-11-28T19:56:33.094Z), created with the "
        "partition: leader 3, replicas [3,1,2], isr [3,1,2]",
        "    epoch 1 (first offset 388): leader 1 from metadata offset 401 (2026-11-28T19:59:02.114Z), clean election: "
        "leader 3 -> 1 (leader epoch 1)",
        "    epoch 2 (first offset 487): leader 3 from metadata offset 576 (2026-11-28T20:00:13.930Z), preferred "
        "election: leader 1 -> 3 (leader epoch 2)"]


def test_diff_json_and_table_with_the_controllers_log(corpus):
    """orders-2's last elections came at the shutdown: broker 1's copy of the log ends before
    epoch 3, the controller's has it."""
    root = _root(corpus, HISTORY)
    args = ("--leader", str(root / "broker-3" / "orders-2"), *_replicas(root, "orders-2"))
    partial = json.loads(run_seglog("diff", "--format", "json", "--metadata-log", str(root / "broker-1"), *args).out)
    epochs = {e["leaderEpoch"]: e for e in partial["partitions"][0]["leaderElections"]["epochs"]}
    assert epochs[3]["election"] is None and "not in the metadata log (read below offset 887)" in epochs[3]["message"]
    assert epochs[0]["firstOffsets"] == {str(root / f"broker-{n}" / "orders-2"): 0 for n in (3, 1, 2)}
    full = json.loads(run_seglog("diff", "--format", "json", "--metadata-log", str(root / "controller"), *args).out)
    document = full["partitions"][0]["leaderElections"]
    assert document["metadataLog"] == str(root / "controller" / "__cluster_metadata-0")
    assert [(e["leaderEpoch"], e["election"]["leader"], e["election"]["election"], e["election"]["metadataOffset"])
            for e in document["epochs"]] == [(0, 2, "created", 37), (1, 1, "preferred", 577), (2, 2, "clean", 881),
                                             (3, 3, "clean", 906)]
    table = run_seglog("diff", "--metadata-log", str(root / "controller"), *args)
    assert "orders-2:   epoch 3 (first offset 423): leader 3 from metadata offset 906" in table.out
    jsonl = run_seglog("diff", "--format", "jsonl", "--metadata-log", str(root / "controller"), *args)
    kinds = [json.loads(line)["type"] for line in jsonl.out.splitlines()]
    assert kinds == ["reference", "replica", "replica", "leaderElections", "summary"]


def test_diff_names_the_unclean_election(corpus, tmp_path):
    root = _root(corpus, UNCLEAN)
    controller = events_metadata_log(tmp_path / "controller")
    result = run_seglog("diff", "--format", "json", "--metadata-log", str(controller), *_replicas(root, "events-0"))
    assert result.exit_code == 3, result.err
    epochs = json.loads(result.out)["partitions"][0]["leaderElections"]["epochs"]
    assert [(e["leaderEpoch"], e["election"]["leader"], e["election"]["election"]) for e in epochs] == [
        (0, 1, "created"), (1, 2, "clean"), (2, 1, "preferred"), (4, 2, "unclean")]
    assert epochs[3]["election"]["topicId"] == EVENTS_ID
    assert epochs[3]["firstOffsets"] == {path: 3900 for path in _replicas(root, "events-0", (2, 3))}
    text = run_seglog("diff", "--format", "text", "--metadata-log", str(controller), *_replicas(root, "events-0"))
    assert ("    epoch 4 (first offset 3900): leader 2 from metadata offset 8 (2025-11-24T16:00:00.080Z), UNCLEAN "
            "election: leader -1 -> 2, not in the ISR [] (leader epoch 4, RECOVERING)") in text.out.splitlines()


def test_repair_names_the_elections_of_both_replicas(corpus, tmp_path):
    root = _root(corpus, UNCLEAN)
    controller = events_metadata_log(tmp_path / "controller")
    healthy, damaged = _replicas(root, "events-0", (2, 1))
    result = run_seglog("repair", "--from", healthy, damaged, "--metadata-log", str(controller))
    assert result.exit_code == 3, result.err  # DAMAGED diverges: another history
    lines = result.out.splitlines()
    heading = lines.index(f"leader epochs, as the metadata log {controller} names them:")
    assert [line.split(":")[0] for line in lines[heading + 1:]] == [
        "  epoch 0 (first offset 0)", "  epoch 1 (first offset 1300)", "  epoch 2 (first offset 2300)",
        "  epoch 4 (first offset 3900)"]
    document = json.loads(run_seglog("repair", "--from", healthy, damaged, "--metadata-log", str(controller),
                                     "--format", "json").out)
    assert document["leaderElections"]["epochs"][-1]["election"]["election"] == "unclean"
    assert document["plan"]["divergence"]["leaderEpoch"] == 2


def test_repair_finds_the_metadata_log_beside_the_replica(corpus):
    root = _root(corpus, HISTORY)
    result = run_seglog("repair", "--from", *_replicas(root, "orders-0", (1, 3)))
    assert result.exit_code == 0, result.err
    # repair works on the log dir's real path (it takes its .lock there): the metadata log beside it
    # is named by that path when the corpus is reached through a symlink
    found = root / "broker-3" / "__cluster_metadata-0"
    assert any(f"leader epochs, as the metadata log {path} names them:" in result.out for path in (found, found.resolve()))
    assert "epoch 1 (first offset 388): leader 1 from metadata offset 401" in result.out


def test_no_metadata_log_no_elections_and_a_wrong_one_is_unreadable(corpus, tmp_path):
    root = _root(corpus, UNCLEAN)
    plain = run_seglog("diff", "--format", "json", *_replicas(root, "events-0"))
    assert "leaderElections" not in json.loads(plain.out)["partitions"][0]
    wrong = run_seglog("diff", "--metadata-log", str(tmp_path), *_replicas(root, "events-0"))
    assert wrong.exit_code == 4 and "__cluster_metadata-0" in wrong.err
