"""The elections behind a partition's leader epochs: the corpus's history case (created, a clean
election when broker 3 stopped, the preferred election back to it), a metadata log written as
the controller of ``replicas/unclean-election`` wrote it (its ``case.json``: an unclean
election at leader epoch 4), a topic created again under another id, and a log that starts after
a snapshot."""

from __future__ import annotations

import base64
from pathlib import Path

from seglog_cli.storage.metadata.elections import BEFORE_THE_LOG, leader_elections, metadata_dir_beside
from seglog_cli.storage.metadata.history import partition_history
from tests.benchmarks import broker_records as rec
from tests.benchmarks.make_metadata_log import SegmentWriter, partition_change, partition_record, write_node_files
from tests.storage.metadata.test_image import HISTORY, needs_corpus

EVENTS_ID = "pfgLTFd6SOqH92SzO6EU5g"  # replicas/unclean-election's topic id


def raw_id(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


def change(topic_id: bytes, **tags) -> bytes:
    return rec.metadata_record("PARTITION_CHANGE_RECORD", 2, partition_id=0, topic_id=topic_id, tagged_fields=tags)


def events_metadata_log(out: Path, topic_id: str = EVENTS_ID) -> Path:
    """``events-0``'s registrations as the unclean-election case's controller made them
    (``case.json`` ``leader_epochs``): leader 1 (epoch 0); 2 when 1 stopped (1); 1 by a
    preferred election (2); none, 1 the last known ELR (3); 2 elected uncleanly, RECOVERING (4)."""
    directory = out / "__cluster_metadata-0"
    directory.mkdir(parents=True)
    writer = SegmentWriter(directory)
    ident = raw_id(topic_id)
    writer.append([rec.topic_record("events", ident), partition_record(ident, 0, [1, 2, 3], 1)])
    writer.append([change(ident, isr=[2, 3], leader=2)])
    writer.append([change(ident, isr=[1, 2, 3])])
    writer.append([change(ident, leader=1)])
    writer.append([change(ident, isr=[1, 2])])
    writer.append([change(ident, isr=[1])])
    writer.append([change(ident, isr=[], leader=-1, eligible_leader_replicas=[1], last_known_elr=[1])])
    writer.append([change(ident, isr=[2], leader=2, leader_recovery_state=1, eligible_leader_replicas=[],
                          last_known_elr=[])])
    writer.append([change(ident, leader_recovery_state=0)])
    writer.close()
    write_node_files(out, directory)
    return directory


def kinds(found) -> list[tuple]:
    return [(e.leader_epoch, e.leader, e.kind) for e in found.elections]


@needs_corpus
def test_the_history_cases_elections_are_its_leader_changes():
    log = leader_elections(HISTORY / "data" / "broker-1", [("orders", 0), ("inventory", 1), ("nope", 0)])
    orders = log.of("orders", 0)
    assert [(e.leader_epoch, e.leader, e.offset, e.kind) for e in orders.elections] == [
        (0, 3, 35, "created"), (1, 1, 401, "clean"), (2, 3, 576, "preferred")]
    assert orders.for_epoch(1).reason == "election: leader 3 -> 1 (leader epoch 1)"
    assert orders.for_epoch(1, "YaZrWuNcQXuBvAPfDQjPvg").timestamp == 1795895942114
    assert orders.for_epoch(1, "another id") is None and orders.for_epoch(9) is None
    assert kinds(log.of("inventory", 1)) == [(0, 1, "created"), (1, 1, "leader kept"), (2, 3, "preferred")]
    assert log.of("nope", 0).elections == []
    # every election is a change of the partition's history whose leader epoch is new
    history = {c.offset: c for c in partition_history(HISTORY / "data" / "broker-1", "orders", 0)}
    for election in orders.elections:
        assert history[election.offset].registration.leader_epoch == election.leader_epoch


def test_an_unclean_election(tmp_path):
    directory = events_metadata_log(tmp_path / "controller")
    assert metadata_dir_beside([tmp_path / "nothing", tmp_path / "controller"]) == directory
    found = leader_elections(directory, [("events", 0)]).of("events", 0)
    assert kinds(found) == [(0, 1, "created"), (1, 2, "clean"), (2, 1, "preferred"), (3, -1, "offline"),
                            (4, 2, "unclean")]
    assert found.for_epoch(4).reason == "unclean election: leader -1 -> 2, not in the ISR [] (leader epoch 4, RECOVERING)"
    assert found.for_epoch(4, EVENTS_ID).offset == 8


def test_a_topic_created_again_keeps_its_epochs_apart(tmp_path):
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    writer = SegmentWriter(directory)
    old, new = raw_id("AAAAAAAAAAAAAAAAAAAAAg"), raw_id("AAAAAAAAAAAAAAAAAAAAAw")
    writer.append([rec.topic_record("t", old), partition_record(old, 0, [1, 2], 1)])
    writer.append([partition_change(old, 0, isr=[2], leader=2)])
    writer.append([rec.metadata_record("REMOVE_TOPIC_RECORD", 0, topic_id=old)])
    writer.append([rec.topic_record("t", new), partition_record(new, 0, [2, 1], 2)])
    writer.close()
    found = leader_elections(directory, [("t", 0)]).of("t", 0)
    assert [(e.topic_id, e.leader_epoch, e.leader) for e in found.elections] == [
        ("AAAAAAAAAAAAAAAAAAAAAg", 0, 1), ("AAAAAAAAAAAAAAAAAAAAAg", 1, 2), ("AAAAAAAAAAAAAAAAAAAAAw", 0, 2)]
    assert found.for_epoch(0).leader == 2  # the latest id
    assert found.for_epoch(0, "AAAAAAAAAAAAAAAAAAAAAg").leader == 1


def test_an_epoch_older_than_the_log_is_read_from_its_snapshot(tmp_path):
    """The log starts at offset 3 after a snapshot ``3-1.checkpoint``: epoch 1 is the snapshot's
    (leader known, not when), epoch 2 the log's."""
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    ident = raw_id(EVENTS_ID)
    snapshot = SegmentWriter(directory)
    snapshot.append([rec.topic_record("events", ident), partition_record(ident, 0, [1, 2, 3], 2, leader_epoch=1),
                     rec.topic_record("quiet", raw_id("AAAAAAAAAAAAAAAAAAAABA")),
                     partition_record(raw_id("AAAAAAAAAAAAAAAAAAAABA"), 0, [1], 1, leader_epoch=5)])
    snapshot.close()
    (directory / f"{0:020d}.log").rename(directory / f"{3:020d}-{1:010d}.checkpoint")
    writer = SegmentWriter(directory)
    writer.offset = 3
    writer.append([partition_change(ident, 0, leader=1)])
    writer.close()
    log = leader_elections(directory, [("events", 0), ("quiet", 0)])
    assert log.snapshot == f"{3:020d}-{1:010d}.checkpoint"
    found = log.of("events", 0)
    assert [(e.leader_epoch, e.leader, e.offset, e.kind) for e in found.elections] == [
        (1, 2, None, BEFORE_THE_LOG), (2, 1, 3, "preferred")]
    assert [(e.leader_epoch, e.leader, e.kind) for e in log.of("quiet", 0).elections] == [(5, 1, BEFORE_THE_LOG)]


def test_only_the_partitions_asked_for_are_decoded(tmp_path):
    """The partition records of other topics are passed over by their topic id (a long topic
    name's two-byte length included)."""
    directory = tmp_path / "__cluster_metadata-0"
    directory.mkdir()
    writer = SegmentWriter(directory)
    long_name = "t" * 200
    for n, name in enumerate(["a", long_name, "b"]):
        ident = bytes(15) + bytes([n + 2])
        writer.append([rec.topic_record(name, ident), partition_record(ident, 0, [1, 2], 1)])
        writer.append([partition_change(ident, 0, isr=[2], leader=2)])
    writer.close()
    log = leader_elections(directory, [(long_name, 0), ("b", 0)])
    assert kinds(log.of(long_name, 0)) == [(0, 1, "created"), (1, 2, "clean")]
    assert kinds(log.of("b", 0)) == [(0, 1, "created"), (1, 2, "clean")]
    assert log.of("a", 0) is None
