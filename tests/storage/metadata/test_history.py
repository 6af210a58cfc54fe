"""A partition's and a broker's history from the metadata log: the corpus's steps (a
reassignment, a broker stopped and started, a preferred election, the shutdown) and a synthetic
unclean election."""

from __future__ import annotations

import csv

from seglog_cli.storage.metadata.history import broker_history, change_reasons, partition_history
from seglog_cli.storage.metadata.image import PartitionRegistration
from seglog_cli.storage.metadata.loader import load_image
from tests.storage.metadata.test_image import HISTORY, needs_corpus, partition_record

CONTROLLER = HISTORY / "data" / "controller"


def step_time(prefix: str) -> int:
    with open(HISTORY / "steps.tsv", newline="") as f:
        return next(int(row["epoch_ms"]) for row in csv.DictReader(f, delimiter="\t") if row["step"].startswith(prefix))


@needs_corpus
def test_inventory_1_reassigned_from_1_2_to_3_1():
    """Step 20: [1,2] -> [3,1]: adding 3 and removing 2, then completed; then broker 3's stop
    and return, the preferred election, and the shutdown until no leader is left."""
    changes = partition_history(CONTROLLER, "inventory", 1)
    steps = [(c.offset, c.registration.leader if c.registration else None, c.reasons[0]) for c in changes]
    assert steps[:3] == [
        (54, 1, "created: leader 1, replicas [1,2], isr [1,2]"),
        (312, 1, "reassignment: replicas [3,1,2], adding [3], removing [2]"),
        (316, 1, "reassignment completed: replicas [3,1]")]
    assert changes[1].timestamp >= step_time("reassign partitions")
    assert changes[3].reasons == ("ISR shrink: [3] out (broker 3 in controlled shutdown)",)
    assert changes[4].reasons == ("ISR expand: [3] back",)
    assert changes[5].reasons == ("preferred election: leader 1 -> 3 (leader epoch 2)",)
    assert changes[-1].registration.leader == -1 and "offline" in changes[-1].reasons[0]
    # every registration is the one the image holds at that offset
    for change in changes:
        image = load_image(CONTROLLER, at_offset=change.offset + 1).image
        assert image.partition("inventory", 1) == change.registration


@needs_corpus
def test_broker_3_stopped_and_started_again():
    events = [(e.event.split(" (")[0], e.epoch) for e in broker_history(CONTROLLER, 3)
              if "leader" not in e.event]
    assert events == [("registered", 13), ("unfenced", 13), ("in controlled shutdown", 13), ("fenced", 13),
                      ("registered", 496), ("unfenced", 496), ("in controlled shutdown", 496), ("fenced", 496)]
    lost = [e for e in broker_history(CONTROLLER, 3, at_time=step_time("start broker 3") - 1)
            if e.event.startswith("lost leadership")]
    assert {e.event for e in lost} == {f"lost leadership of {p}" for p in (
        "__consumer_offsets-1", "__transaction_state-0", "inventory-0", "orders-0", "orders-3")}


@needs_corpus
def test_a_deleted_topics_partitions_end_deleted():
    changes = partition_history(CONTROLLER, "audit-log", 0)
    assert changes[0].reasons[0].startswith("created")
    assert changes[-1].registration is None and changes[-1].reasons == ("topic deleted",)


def test_an_election_outside_the_isr_is_unclean():
    before = PartitionRegistration.from_record(partition_record(isr=[1], leader=1))
    offline = before.merge({"leader": -1, "isr": []})
    assert change_reasons(before, offline)[0] == "leader 1 lost, no eligible replica: offline (leader epoch 1)"
    unclean = offline.merge({"leader": 2, "isr": [2], "leader_recovery_state": 1})
    assert change_reasons(offline, unclean)[0] == (
        "unclean election: leader -1 -> 2, not in the ISR [] (leader epoch 2, RECOVERING)")
    clean = before.merge({"leader": 1, "isr": [1]})
    assert change_reasons(before, clean) == ["leader 1 kept, leader epoch 1"]
    assert change_reasons(unclean, unclean.merge({"leader_recovery_state": 0}))[0] == "leader recovered"
