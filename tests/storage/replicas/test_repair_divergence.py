"""What a repair plan says that is no damage: where DAMAGED diverges from HEALTHY (found as ``seglog
diff`` finds it) and the offsets DAMAGED lacks at its end (missing, never called damaged).

On the replicas corpus (skipped without it): the unclean election, where broker 1 holds 3900-4799
in leader epoch 2 and brokers 2 and 3 hold 3900-4599 in epoch 4, and the lagging follower, broker 3
a clean prefix (offsets 0-1499) of brokers 1 and 2 (0-4599). And on two small seglog-built replicas
that hold other bytes in the same leader epoch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seglog_cli.storage.replicas.replica_repair import plan_repair
from seglog_cli.storage.replicas.replicas import diff_group
from seglog_cli.storage.write.builder import NewRecord, build_batch
from tests.conftest import CORPUS

REPLICAS = CORPUS / "kafka-4.2.0" / "replicas"
requires_replicas = pytest.mark.skipif(not REPLICAS.is_dir(), reason=f"{REPLICAS} not found (the replicas corpus)")


def _partition(case: str, broker: int) -> Path:
    return REPLICAS / case / f"broker-{broker}" / "events-0"


def _diff_divergence(healthy: Path, damaged: Path) -> dict:
    """The divergence ``seglog diff --leader HEALTHY HEALTHY DAMAGED`` reports."""
    group = diff_group([(str(healthy), healthy), (str(damaged), damaged)], leader=str(healthy))
    (comparison,) = group.comparisons
    return comparison


@requires_replicas
@pytest.mark.parametrize("healthy,damaged,epochs,lost", [
    (2, 1, (2, 4), (3900, 4799, 900, [2])),  # the old leader's epoch-2 tail against the new history
    (3, 1, (2, 4), (3900, 4799, 900, [2])),
    (1, 2, (4, 2), (3900, 4599, 700, [4])),  # the other way round: the new leader's records alone
])
def test_unclean_election_divergence_is_the_diff_engines(healthy, damaged, epochs, lost):
    healthy_dir, damaged_dir = _partition("unclean-election", healthy), _partition("unclean-election", damaged)
    expected = _diff_divergence(healthy_dir, damaged_dir)
    plan = plan_repair(healthy_dir, damaged_dir)
    assert plan.empty  # no damage: nothing to write
    divergence = plan.divergence
    assert divergence is not None
    assert divergence.offset == expected.divergence["offset"] == 3900
    assert divergence.cause == expected.divergence["cause"] == "leader-epoch"
    assert (divergence.leader_epoch, divergence.healthy_leader_epoch) == epochs
    assert divergence.batch == expected.divergence["batch"]
    assert divergence.healthy_batch == expected.divergence["referenceBatch"]
    assert divergence.truncation_offset == expected.truncation.offset == 3900
    first, last, records, lost_epochs = lost
    assert (divergence.lost.first_offset, divergence.lost.last_offset) == (first, last)
    assert divergence.lost.records == records and divergence.lost.leader_epochs == lost_epochs
    assert plan.missing_at_end is None and plan.past_healthy_end is None  # another history, not a lag
    document = plan.as_dict()["divergence"]
    assert document["offset"] == 3900 and document["kafkaTruncatesTo"] == 3900
    assert document["lost"]["records"] == records


@requires_replicas
def test_lagging_follower_lacks_offsets_at_its_end_not_damage():
    healthy, damaged = _partition("lagging-follower", 1), _partition("lagging-follower", 3)
    plan = plan_repair(healthy, damaged)
    assert plan.empty and plan.divergence is None
    assert plan.missing_at_end == (1500, 4599) and not plan.missing_copied
    plan = plan_repair(healthy, damaged, tail=True)
    assert plan.missing_at_end == (1500, 4599) and plan.missing_copied
    assert [s.damaged_ranges for s in plan.segments] == [[], [], []]
    assert [s.missing_ranges for s in plan.segments] == [[(1500, 2128)], [(2129, 4249)], [(4250, 4599)]]
    assert all("missing, not damaged" in s.why and "HEALTHY's batches" not in s.why for s in plan.segments)
    segments = plan.as_dict()["segments"]
    assert [s["missingOffsets"] for s in segments] == [[[1500, 2128]], [[2129, 4249]], [[4250, 4599]]]
    assert {s["missingWhere"] for s in segments} == {"end"} and all(s["damagedOffsets"] == [] for s in segments)


@requires_replicas
def test_healthy_ending_first_is_no_divergence_and_no_tail_refusal():
    healthy, damaged = _partition("lagging-follower", 3), _partition("lagging-follower", 1)
    for tail in (False, True):
        plan = plan_repair(healthy, damaged, tail=tail)
        assert plan.empty and plan.divergence is None and plan.missing_at_end is None
        assert plan.past_healthy_end == (1500, 4599)


def _replica(directory: Path, values: list[bytes]) -> Path:
    """One segment of one-record batches at offsets 0.., all in leader epoch 0."""
    directory.mkdir(parents=True)
    with open(directory / f"{0:020d}.log", "wb") as handle:
        for offset, value in enumerate(values):
            handle.write(build_batch([NewRecord(key=None, value=value, timestamp=1_700_000_000_000 + offset)],
                                     base_offset=offset, partition_leader_epoch=0))
    return directory


def test_other_bytes_in_the_same_epoch(tmp_path):
    """Same epoch, both CRCs valid, other records from offset 3: Kafka cannot tell them apart and
    truncates nothing, so there is nothing lost to export."""
    healthy = _replica(tmp_path / "b1" / "events-0", [b"a", b"b", b"c", b"d", b"e"])
    damaged = _replica(tmp_path / "b2" / "events-0", [b"a", b"b", b"c", b"X", b"Y"])
    expected = _diff_divergence(healthy, damaged)
    plan = plan_repair(healthy, damaged)
    assert plan.divergence.offset == expected.divergence["offset"] == 3
    assert plan.divergence.cause == "other-bytes"
    assert plan.divergence.leader_epoch == plan.divergence.healthy_leader_epoch == 0
    assert plan.divergence.lost is None
