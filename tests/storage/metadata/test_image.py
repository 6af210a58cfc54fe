"""The metadata image against Kafka's own tools on real 4.2.0 metadata logs (corpus
``kafka-4.2.0/metadata/history``): kafka-metadata-shell's tree at every snapshot, and
kafka-topics --describe after each step and at the end (read at the describe's time)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from seglog_cli.storage.metadata.delta import MetadataDelta
from seglog_cli.storage.metadata.image import MetadataImage, PartitionRegistration
from seglog_cli.storage.metadata.loader import MetadataLogError, find_metadata_dir, kraft_snapshots, load_image
from tests.conftest import CORPUS, CORPUS_MISSING
from tests.storage.metadata.shell_tree import comparable, image_tree, parse_tree

HISTORY = CORPUS / "kafka-4.2.0" / "metadata" / "history"
NODES = ("controller", "broker-1", "broker-2", "broker-3")
needs_corpus = pytest.mark.skipif(not HISTORY.is_dir(), reason=CORPUS_MISSING)


def good_shell_runs() -> list[tuple[str, str]]:
    """(node, snapshot file) of every shell golden the manifest marks complete, exit 0."""
    if not HISTORY.is_dir():
        return []
    with open(HISTORY / "metadata-shell" / "MANIFEST.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [(row["relpath"].split("/")[0], row["relpath"].split("/")[-1]) for row in rows
            if row["status"] == "complete" and row["exit_code"] == "0"
            and row["provenance_offset"] == row["last_record_offset_in_file"]]


def shell_tree(node: str, snapshot: str) -> dict:
    path = HISTORY / "metadata-shell" / node / "__cluster_metadata-0" / (snapshot + ".tree.out")
    return comparable(parse_tree(path.read_text()))


@needs_corpus
def test_the_manifest_has_good_runs_for_every_node():
    runs = good_shell_runs()
    assert {node for node, _ in runs} == set(NODES)
    assert len(runs) == 57


@needs_corpus
@pytest.mark.parametrize("from_start", [False, True], ids=["snapshot", "log-from-start"])
@pytest.mark.parametrize("node,snapshot", good_shell_runs())
def test_image_at_every_snapshot_is_the_shells_tree(node, snapshot, from_start):
    """The image below the snapshot's end offset, read from that snapshot and (from_start) by
    replaying the log from offset 0 without any snapshot: topics and ids, every partition
    registration, brokers, controllers, features, configs, quotas, SCRAM users, producer ids."""
    end = int(snapshot.split("-")[0])
    loaded = load_image(HISTORY / "data" / node, at_offset=end, from_start=from_start)
    assert loaded.snapshot == (None if from_start else snapshot)
    assert loaded.undecodable == 0
    assert image_tree(loaded.image) == shell_tree(node, snapshot)


def parse_describe(text: str) -> dict:
    """kafka-topics --describe: (topic, partition) -> (topic id, leader, replicas, isr, elr, last known elr)."""
    ids = dict(re.findall(r"^Topic: (\S+)\tTopicId: (\S+)", text, re.M))
    out = {}
    for m in re.finditer(r"\tTopic: (\S+)\tPartition: (\d+)\tLeader: (\S+)\tReplicas: (\S*)\tIsr: (\S*)"
                         r"\tElr: (\S*)\tLastKnownElr: (\S*)", text):
        ints = [tuple(int(x) for x in group.split(",") if x) for group in m.groups()[3:]]
        out[(m[1], int(m[2]))] = (ids[m[1]], -1 if m[3] == "none" else int(m[3]), *ints)
    return out


def described(image: MetadataImage) -> dict:
    return {(topic.name, p): (topic.topic_id, r.leader, r.replicas, r.isr, r.elr, r.last_known_elr)
            for topic in image.topics_by_id.values() for p, r in topic.partitions.items()}


def describe_runs() -> list[tuple[str, int]]:
    """(ground-truth file, epoch ms when its kafka-topics --describe started)."""
    if not HISTORY.is_dir():
        return []
    with open(HISTORY / "steps.tsv", newline="") as f:
        rows = [row for row in csv.DictReader(f, delimiter="\t") if "--describe" in row["command"]
                and "kafka-topics" in row["command"]]
    files = sorted((HISTORY / "ground-truth" / "during").glob("*.txt")) + [HISTORY / "ground-truth" / "topics-describe.txt"]
    assert len(rows) == len(files)
    return [(str(path.relative_to(HISTORY)), int(row["epoch_ms"])) for path, row in zip(files, rows)]


@needs_corpus
@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("describe,time_ms", describe_runs())
def test_image_at_a_describes_time_is_what_kafka_topics_described(describe, time_ms, node):
    """Each node's image at the time the describe ran (during/ after each step, and the final
    ground truth, taken at metadata offsets 785..870) is what the brokers answered: topic ids,
    leaders, replicas, ISR, ELR and last known ELR, partition by partition, in Kafka's order."""
    truth = parse_describe((HISTORY / describe).read_text())
    loaded = load_image(HISTORY / "data" / node, at_time=time_ms)
    assert described(loaded.image) == truth


@needs_corpus
def test_final_describe_lies_inside_the_ground_truths_offsets():
    loaded = load_image(HISTORY / "data" / "controller", at_time=describe_runs()[-1][1])
    assert 785 <= loaded.end_offset <= 870


@needs_corpus
def test_log_end_of_every_node_after_the_shutdown():
    """At the log end every broker is fenced (the controller saw all three stop); the brokers'
    own logs end where each stopped following, with itself in controlled shutdown."""
    controller = load_image(HISTORY / "data" / "controller")
    assert controller.node_id == 100
    assert all(b.fenced and b.in_controlled_shutdown for b in controller.image.brokers.values())
    assert controller.image.topic("audit-log") is None
    assert sorted(controller.image.topics_by_name) == ["__consumer_offsets", "__transaction_state", "inventory", "orders"]
    for node in (1, 2, 3):
        broker = load_image(HISTORY / "data" / f"broker-{node}")
        assert broker.node_id == node
        assert broker.image.brokers[node].in_controlled_shutdown
        assert broker.image.metadata_version == "4.2-IV1"
        assert broker.image.scram == {"alice": {"SCRAM-SHA-256"}}


@needs_corpus
def test_an_offset_before_the_snapshot_chooses_an_earlier_one():
    directory = find_metadata_dir(HISTORY / "data" / "controller")
    snapshots = kraft_snapshots(directory)
    loaded = load_image(directory, at_offset=snapshots[3][0] - 1)
    assert loaded.snapshot == snapshots[2][2].name
    assert loaded.end_offset == snapshots[3][0] - 1


def test_no_metadata_log_is_one_error(tmp_path):
    with pytest.raises(MetadataLogError, match="no __cluster_metadata-0 in"):
        find_metadata_dir(tmp_path)


# -- synthetic records -----------------------------------------------------------------------------

TOPIC_ID = "YaZrWuNcQXuBvAPfDQjPvg"


def partition_record(**changes) -> dict:
    data = {"partition_id": 0, "topic_id": TOPIC_ID, "replicas": [1, 2, 3], "isr": [1, 2, 3],
            "removing_replicas": [], "adding_replicas": [], "leader": 1, "leader_epoch": 0, "partition_epoch": 0,
            "directories": []}
    return {**data, **changes}


def test_an_aborted_transactions_records_are_not_applied():
    delta = MetadataDelta()
    delta.replay("TOPIC_RECORD", {"name": "orders", "topic_id": TOPIC_ID}, 1)
    delta.replay("BEGIN_TRANSACTION_RECORD", {"name": "create"}, 2)
    delta.replay("CONFIG_RECORD", {"resource_type": 2, "resource_name": "orders", "name": "retention.ms",
                                   "value": "1"}, 3)
    delta.replay("PARTITION_RECORD", partition_record(), 4)
    assert delta.in_transaction and delta.image.topic("orders").partitions == {}
    delta.replay("ABORT_TRANSACTION_RECORD", {"reason": "test"}, 5)
    assert delta.image.configs == {} and delta.image.topic("orders").partitions == {}
    assert delta.aborted == 2
    delta.replay("BEGIN_TRANSACTION_RECORD", {}, 6)
    delta.replay("PARTITION_RECORD", partition_record(), 7)
    delta.replay("END_TRANSACTION_RECORD", {}, 8)
    assert delta.image.partition("orders", 0).leader == 1
    assert delta.image.provenance.offset == 8


def test_partition_change_leader_semantics():
    """-2 (NO_LEADER_CHANGE, the default when absent) keeps leader and epoch; -1 (NO_LEADER) and
    even the same leader bump the leader epoch; the partition epoch always goes up."""
    base = PartitionRegistration.from_record(partition_record())
    assert base.directories == ("AAAAAAAAAAAAAAAAAAAAAA",) * 3  # MIGRATING when none given
    shrunk = base.merge({"isr": [1, 2]})
    assert (shrunk.leader, shrunk.leader_epoch, shrunk.partition_epoch, shrunk.isr) == (1, 0, 1, (1, 2))
    offline = shrunk.merge({"leader": -1, "isr": [1]})
    assert (offline.leader, offline.leader_epoch, offline.partition_epoch) == (-1, 1, 2)
    unclean = offline.merge({"leader": 3, "isr": [3], "leader_recovery_state": 1})
    assert (unclean.leader, unclean.leader_epoch, unclean.recovery_state_name) == (3, 2, "RECOVERING")
    assert unclean.merge({}).recovery_state_name == "RECOVERING"  # -1: no change
    moving = unclean.merge({"replicas": [3, 4], "adding_replicas": [4], "removing_replicas": [1, 2]})
    assert (moving.replicas, moving.adding_replicas, moving.removing_replicas) == ((3, 4), (4,), (1, 2))
    assert moving.directories == ("AAAAAAAAAAAAAAAAAAAAAA",) * 2


def test_scram_keeps_names_and_mechanisms_only():
    delta = MetadataDelta()
    delta.replay("USER_SCRAM_CREDENTIAL_RECORD", {"name": "alice", "mechanism": 2, "salt": b"s",
                                                  "stored_key": b"k", "server_key": b"k", "iterations": 8192}, 1)
    delta.replay("USER_SCRAM_CREDENTIAL_RECORD", {"name": "alice", "mechanism": 1, "salt": b"s",
                                                  "stored_key": b"k", "server_key": b"k", "iterations": 4096}, 2)
    assert delta.image.scram == {"alice": {"SCRAM-SHA-256", "SCRAM-SHA-512"}}
    assert "salt" not in repr(delta.image) and "4096" not in repr(delta.image.as_dict())
    delta.replay("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", {"name": "alice", "mechanism": 2}, 3)
    delta.replay("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", {"name": "alice", "mechanism": 1}, 4)
    assert delta.image.scram == {}


def test_remove_topic_drops_its_configs_and_quotas_remove_keys():
    delta = MetadataDelta()
    delta.replay("TOPIC_RECORD", {"name": "orders", "topic_id": TOPIC_ID}, 1)
    delta.replay("CONFIG_RECORD", {"resource_type": 2, "resource_name": "orders", "name": "retention.ms",
                                   "value": "1"}, 2)
    delta.replay("REMOVE_TOPIC_RECORD", {"topic_id": TOPIC_ID}, 3)
    assert delta.image.topics_by_id == {} and delta.image.configs == {} and delta.image.config_origins == {}
    entity = [{"entity_type": "client-id", "entity_name": "app"}]
    delta.replay("CLIENT_QUOTA_RECORD", {"entity": entity, "key": "producer_byte_rate", "value": 10.0,
                                         "remove": False}, 4)
    assert delta.image.client_quotas == {(("client-id", "app"),): {"producer_byte_rate": 10.0}}
    delta.replay("CLIENT_QUOTA_RECORD", {"entity": entity, "key": "producer_byte_rate", "value": 0.0,
                                         "remove": True}, 5)
    assert delta.image.client_quotas == {}


JBOD = CORPUS / "kafka-4.2.0" / "metadata" / "jbod"


@pytest.mark.skipif(not JBOD.is_dir(), reason=CORPUS_MISSING)
@pytest.mark.parametrize("end", [69, 118, 158])
def test_jbod_directories_are_the_shells(end):
    """Broker 1 with two log dirs (KIP-858): UNASSIGNED in the PartitionRecord, then the
    directory the broker placed each replica in, then the one clicks-1 was moved to."""
    snapshot = f"{end:020d}-0000000001.checkpoint"
    shell = comparable(parse_tree((JBOD / "metadata-shell-controller" / "__cluster_metadata-0" /
                                   (snapshot + ".tree.out")).read_text()))
    loaded = load_image(JBOD / "controller", at_offset=end, from_start=True)
    assert image_tree(loaded.image) == shell
    if end >= 118:
        assert loaded.image.partition("clicks", 1).directories[-1] == "ltjxxj1K4xmKERvkII_YJQ"


STRAY = CORPUS / "kafka-4.2.0" / "metadata" / "stray"


def stray_describes() -> list[tuple[str, int]]:
    if not STRAY.is_dir():
        return []
    with open(STRAY / "steps.tsv", newline="") as f:
        rows = [row for row in csv.DictReader(f, delimiter="\t") if row["step"].startswith("record state:")]
    return [(f"describe-{row['step'].split('(')[1].rstrip(')')}.txt", int(row["epoch_ms"])) for row in rows]


@pytest.mark.skipif(not STRAY.is_dir(), reason=CORPUS_MISSING)
@pytest.mark.parametrize("describe,time_ms", stray_describes())
def test_stray_controller_at_each_describes_time(describe, time_ms):
    """The stray case's controller (one segment, no snapshot): topics deleted and re-created
    with new ids, a reassignment, broker 3 down and back, at each describe's time."""
    truth = parse_describe((STRAY / describe).read_text())
    assert described(load_image(STRAY / "controller", at_time=time_ms).image) == truth


@needs_corpus
@pytest.mark.parametrize("node", NODES)
def test_features_quotas_users_and_broker_configs_are_the_ground_truths(node):
    """kafka-features describe (kraft.version is the quorum's, not a FeatureLevelRecord: not in
    the image, as the shell shows), kafka-configs for users (the mechanism: seglog keeps no
    iterations), clients and the brokers' dynamic configs, at the time they ran."""
    truth = HISTORY / "ground-truth"
    image = load_image(HISTORY / "data" / node, at_time=describe_runs()[-1][1] + 40000).image
    features = dict(re.findall(r"Feature: (\S+)\t.*FinalizedVersionLevel: (\S+)\t", (truth / "features.txt").read_text()))
    assert features.pop("kraft.version") == "0"
    assert {name: str(level) for name, level in image.features.items() if name != "metadata.version"} == {
        name: level for name, level in features.items() if name != "metadata.version"}
    assert image.metadata_version == features["metadata.version"]
    users = re.findall(r"user-principal '(\S+)' are ([A-Z0-9-]+)=", (truth / "configs-users.txt").read_text())
    assert {user: {mechanism} for user, mechanism in users} == image.scram
    client, quotas = re.search(r"client-id '(\S+)' are (.*)", (truth / "configs-clients.txt").read_text()).groups()
    assert image.client_quotas == {(("client-id", client),): {
        key: float(value) for key, value in (pair.split("=") for pair in quotas.split(", "))}}
    dynamic = (truth / "configs-brokers-dynamic.txt").read_text()
    for broker in (1, 2, 3):
        section = re.split("Dynamic configs|Default configs", dynamic.split(f"broker {broker} are:")[1])[0]
        expected = dict(re.findall(r"^  (\S+?)=(\S+) sensitive", section, re.M))
        assert image.resource(4, str(broker)) == expected
    default = dict(re.findall(r"^  (\S+?)=(\S+) sensitive", (truth / "configs-broker-default.txt").read_text(), re.M))
    assert image.resource(4, "") == default


@needs_corpus
def test_an_offset_past_the_log_end_is_the_log_end():
    at_end = load_image(HISTORY / "data" / "controller")
    past = load_image(HISTORY / "data" / "controller", at_offset=10**9)
    assert past.end_offset == at_end.end_offset == at_end.image.provenance.offset + 1
    assert image_tree(past.image) == image_tree(at_end.image)
