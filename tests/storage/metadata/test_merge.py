"""``PartitionRegistration.merge`` (the registration after a PartitionChangeRecord) against the
rule written out field by field (Kafka's ``PartitionRegistration.merge``), on random changes."""

from __future__ import annotations

import random

from seglog_cli.storage.metadata.image import (MIGRATING_DIRECTORY, NO_LEADER_CHANGE, PartitionRegistration,
                                               _directories)

FIELDS = {"replicas": "replicas", "isr": "isr", "removing_replicas": "removing_replicas",
          "adding_replicas": "adding_replicas", "eligible_leader_replicas": "elr", "last_known_elr": "last_known_elr"}


def oracle(before: PartitionRegistration, change: dict) -> PartitionRegistration:
    def pick(key, name):
        return getattr(before, name) if change.get(key) is None else tuple(change[key])

    replicas = pick("replicas", "replicas")
    directories = before.directories if change.get("directories") is None else tuple(change["directories"])
    leader = change.get("leader", NO_LEADER_CHANGE)
    state = change.get("leader_recovery_state", -1)
    return PartitionRegistration(
        replicas, _directories(directories, len(replicas)), pick("isr", "isr"),
        pick("removing_replicas", "removing_replicas"), pick("adding_replicas", "adding_replicas"),
        pick("eligible_leader_replicas", "elr"), pick("last_known_elr", "last_known_elr"),
        before.leader if leader == NO_LEADER_CHANGE else leader,
        before.leader_recovery_state if state == -1 else state,
        before.leader_epoch if leader == NO_LEADER_CHANGE else before.leader_epoch + 1, before.partition_epoch + 1)


def test_merge_follows_the_rule_on_random_changes():
    rng = random.Random(35)
    directory = "AAAAAAAAAAAAAAAAAAAAAg"
    registration = PartitionRegistration.from_record({"replicas": [1, 2, 3], "isr": [1, 2, 3], "leader": 1,
                                                      "leader_epoch": 0, "partition_epoch": 0})
    for _ in range(3000):
        change = {}
        for key in FIELDS:
            if rng.random() < 0.3:
                change[key] = rng.sample(range(1, 6), rng.randint(0, 4)) if rng.random() < 0.9 else None
        if rng.random() < 0.2:
            count = len(change.get("replicas") or registration.replicas)
            change["directories"] = [rng.choice([directory, MIGRATING_DIRECTORY]) for _ in range(count)]
        if rng.random() < 0.5:
            change["leader"] = rng.choice([-2, -1, 1, 2, 3])
        if rng.random() < 0.2:
            change["leader_recovery_state"] = rng.choice([-1, 0, 1])
        merged = registration.merge(change)
        assert merged == oracle(registration, change) and hash(merged) == hash(oracle(registration, change))
        registration = merged
