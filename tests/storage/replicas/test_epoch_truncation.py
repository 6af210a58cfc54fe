"""The follower-truncation rule of Kafka 4.2, case by case (LeaderEpochFileCache.endOffsetFor,
AbstractFetcherThread.getOffsetTruncationState, Partition.readRecords' diverging epoch)."""

from __future__ import annotations

from seglog_cli.storage.log.checkpoints import EpochEntry
from seglog_cli.storage.replicas.epoch_truncation import (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, end_offset_for,
                                                 loaded_epochs, truncate_from_end, truncate_from_start,
                                                 truncation_offset)


def E(*pairs):
    return [EpochEntry(epoch, offset) for epoch, offset in pairs]


def test_end_offset_for_follows_the_cache():
    cache = E((0, 0), (1, 1300), (2, 2300), (4, 3900))
    assert end_offset_for(cache, 4, 4600) == (4, 4600)  # the latest epoch: the log end
    assert end_offset_for(cache, 2, 4600) == (2, 3900)  # the start of the next epoch
    assert end_offset_for(cache, 3, 4600) == (2, 3900)  # unknown epoch between: the floor's epoch
    assert end_offset_for(cache, 5, 4600) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)  # above every epoch
    assert end_offset_for(E((3, 100), (5, 200)), 1, 300) == (1, 100)  # below every epoch: first start offset
    assert end_offset_for(cache, UNDEFINED_EPOCH, 4600) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def test_cache_as_loaded():
    cache = E((0, 0), (4, 3900), (7, 4600))
    assert truncate_from_end(cache, 4600) == E((0, 0), (4, 3900))
    assert truncate_from_end(cache, 5000) == cache
    assert truncate_from_start(E((0, 0), (1, 100), (2, 200)), 150) == E((1, 150), (2, 200))
    # batches recovered past a stale checkpoint add their epochs
    assert loaded_epochs(E((0, 0)), E((0, 0), (3, 50)), 0, 80) == E((0, 0), (3, 50))
    assert loaded_epochs(E((0, 0)), E((0, 0), (3, 50)), 0, 50) == E((0, 0))


def test_old_leader_longer_than_the_new_one():
    """The corpus' unclean election: broker 1 alone to 4800 in epoch 2, broker 2 from 3900 in epoch 4."""
    t = truncation_offset(E((0, 0), (1, 1300), (2, 2300), (4, 3900)), 0, 4600,
                          E((0, 0), (1, 1300), (2, 2300)), 4800, 3900)
    assert t.offset == 3900
    (step,) = t.steps
    assert (step.fetch_epoch, step.leader_epoch, step.leader_end_offset, step.completed) == (2, 2, 3900, True)


def test_old_leader_shorter_than_the_new_one():
    t = truncation_offset(E((0, 0), (3, 1000), (6, 2500)), 0, 4000, E((0, 0), (3, 1000)), 2700, 2400)
    assert t.offset == 2500


def test_prefix_and_equal_logs_are_kept():
    leader = E((0, 0), (1, 2700))
    assert truncation_offset(leader, 0, 4600, E((0, 0)), 1500, 1500).offset == 1500
    assert truncation_offset(leader, 0, 4600, leader, 4600, 4600).offset == 4600
    # a follower that saw a later epoch with no batches (its own election): nothing to cut
    assert truncation_offset(E((0, 0), (4, 3900), (7, 4600)), 0, 4600,
                             E((0, 0), (4, 3900), (6, 4600)), 4600, 4600).offset == 4600


def test_follower_unaware_of_the_leaders_epoch_needs_two_rounds():
    # the follower led epoch 3 from 500 (never replicated); the leader knows 2 then 4 from 400
    leader = E((0, 0), (2, 300), (4, 400))
    follower = E((0, 0), (1, 200), (3, 500))
    t = truncation_offset(leader, 0, 900, follower, 700, 0)
    assert [s.completed for s in t.steps] == [False, True]
    # round 1: leader answers (2, 400) for epoch 3; the follower's floor of 2 is 1 -> truncate to 500, again
    # round 2: lastFetchedEpoch 1: leader answers (0, 300); follower's end for 0 is 200 -> 200
    assert t.offset == 200


def test_follower_without_epochs_truncates_to_its_high_watermark():
    assert truncation_offset(E((0, 0)), 0, 100, [], 80, 50).offset == 50


def test_follower_longer_in_the_leaders_latest_epoch():
    # same epoch, the follower has more (the leader lost its tail): cut to the leader's end
    assert truncation_offset(E((0, 0), (2, 100)), 0, 150, E((0, 0), (2, 100)), 200, 150).offset == 150
