"""``seglog replay`` against a real Kafka-protocol broker on 127.0.0.1 (the ``kafka_cluster``
fixture: tansu, or the Apache Kafka SEGLOG_TEST_KAFKA_BOOTSTRAP names).

What a consumer reads back is compared, record for record, with what seglog's engine decodes
from the real broker-written segments (keys, values, headers, timestamps, partition), for
read_committed. A replay killed by SIGKILL at enumerated points (before the Nth produce call,
after the Nth acknowledgement and before the progress file notes it, after a progress save) and
run again must leave exactly the source's records: no duplicate, no gap.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import sys
from pathlib import Path

import pytest

from seglog_cli.storage.replay.sources import Selection, Skipped, directory_records, find_sources

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "kafka-4.2.0"
DATA = CORPUS / "data"
UNCLEAN = CORPUS / "replicas" / "unclean-election"
needs_corpus = pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/corpus (real broker-written files)")

pytestmark = [pytest.mark.corpus, needs_corpus]


def seglog(*args, cwd=None, env=None, timeout=180):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "seglog_cli", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=full_env, timeout=timeout)


@pytest.fixture
def log_dir(tmp_path):
    target = tmp_path / "data"
    shutil.copytree(DATA, target)
    return target


def source_records(log_dir, topic, partition):
    sources, _ = find_sources([str(log_dir)], {topic})
    source = next(s for s in sources if s.partition == partition)
    return [(r[0], r[1], None if r[2] is None else bytes(r[2]), None if r[3] is None else bytes(r[3]),
             [(bytes(k).decode("utf-8", "replace"), None if v is None else bytes(v)) for k, v in r[4]])
            for r in directory_records(source, Selection(), Skipped())]


def destination_records(cluster, topic, partition, isolation="read_committed"):
    return [(r["timestamp"], r["key"], r["value"],
             [(k if isinstance(k, str) else k.decode("utf-8", "replace"), v) for k, v in r["headers"]])
            for r in cluster.read(topic, partition, isolation=isolation)]


def assert_same_records(log_dir, cluster, topic, partition, dest_topic):
    ours = [r[1:] for r in source_records(log_dir, topic, partition)]
    theirs = destination_records(cluster, dest_topic, partition)
    assert len(theirs) == len(ours), f"{dest_topic}-{partition}: {len(theirs)} records, the source has {len(ours)}"
    for index, (mine, read) in enumerate(zip(ours, theirs)):
        assert read == tuple(mine), f"{dest_topic}-{partition} record {index} differs"


def topics_of(cluster) -> set[str]:
    from confluent_kafka.admin import AdminClient
    return set(AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=10).topics)


def produce(cluster, topic, partition, pairs) -> None:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for key, value in pairs:
        producer.produce(topic, value, key, partition=partition)
    assert producer.flush(20) == 0


def replay_args(log_dir, cluster, *extra, topics="plain,codecs,txn", prefix=None):
    args = [log_dir, "--bootstrap-server", cluster.bootstrap, "--topics", topics, "--timeout", "20"]
    for topic in topics.split(","):
        args += ["--topic-map", f"{topic}:{prefix}{topic}"]
    return args + list(extra)


def test_plan_sends_nothing_and_says_what_goes_where(kafka_cluster, log_dir, tmp_path):
    prefix = kafka_cluster.new_topic("plan") + "-"
    result = seglog("replay", *replay_args(log_dir, kafka_cluster, prefix=prefix), cwd=tmp_path)
    assert result.returncode == 3, result.stderr  # the destination topics do not exist
    assert f"refused: topic {prefix}plain does not exist in the cluster" in result.stdout
    assert "plain-0 -> " in result.stdout and "6729 record(s), offsets 0..6728" in result.stdout
    assert "skipped 91 aborted" in result.stdout  # txn-0: the records of its 14 aborted transactions
    planned = seglog("replay", *replay_args(log_dir, kafka_cluster, "--create-topics", "--format", "json",
                                            prefix=prefix), cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)["plan"]
    assert plan["refusals"] == [] and plan["records"] == 6729 + 6622 + 2515 + 199
    assert {t["topic"]: t["partitionsNeeded"] for t in plan["topics"]}[f"{prefix}plain"] == 3  # from the metadata
    assert f"{prefix}plain" not in topics_of(kafka_cluster)  # a plan creates nothing


def test_replay_of_a_log_dir_is_byte_for_byte(kafka_cluster, log_dir, tmp_path):
    prefix = kafka_cluster.new_topic("exact") + "-"
    result = seglog("replay", *replay_args(log_dir, kafka_cluster, "--create-topics", "--apply", prefix=prefix),
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "exactly once" in result.stdout
    for topic, partition in (("plain", 0), ("plain", 1), ("codecs", 0), ("txn", 0)):
        assert_same_records(log_dir, kafka_cluster, topic, partition, prefix + topic)
    # run again: everything is delivered, nothing is sent twice
    again = seglog("replay", *replay_args(log_dir, kafka_cluster, "--create-topics", "--apply", prefix=prefix),
                   cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "replayed: 0 record(s) sent now" in again.stdout
    assert kafka_cluster.end_offset(prefix + "plain", 0) == 6729


@pytest.mark.parametrize("point", ["send:1", "send:700", "send:9000", "ack:1", "ack:2500", "ack:12000", "save:3"])
def test_a_replay_killed_and_run_again_leaves_no_duplicate_and_no_gap(kafka_cluster, log_dir, tmp_path, point):
    prefix = kafka_cluster.new_topic("kill") + "-"
    args = replay_args(log_dir, kafka_cluster, "--create-topics", "--apply", topics="plain,codecs", prefix=prefix)
    killed = seglog("replay", *args, cwd=tmp_path, env={"SEGLOG_TEST_REPLAY_KILL_AT": point})
    assert killed.returncode == -9, (point, killed.stdout, killed.stderr)
    resumed = seglog("replay", *args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    for topic, partition in (("plain", 0), ("plain", 1), ("codecs", 0)):
        assert_same_records(log_dir, kafka_cluster, topic, partition, prefix + topic)


def test_records_someone_else_wrote_stop_the_resume(kafka_cluster, log_dir, tmp_path):
    prefix = kafka_cluster.new_topic("foreign") + "-"
    args = replay_args(log_dir, kafka_cluster, "--create-topics", "--apply", topics="plain", prefix=prefix)
    killed = seglog("replay", *args, cwd=tmp_path, env={"SEGLOG_TEST_REPLAY_KILL_AT": "ack:3000"})
    assert killed.returncode == -9
    produce(kafka_cluster, prefix + "plain", 0, [(b"intruder", b"not from the source")])
    refused = seglog("replay", *args, cwd=tmp_path)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "written by someone else since this replay last ran" in lines[0]
    went_on = seglog("replay", *args, "--accept-foreign-writes", cwd=tmp_path)
    assert went_on.returncode == 1, went_on.stderr  # done, with the foreign record noted
    ours = [r[1:] for r in source_records(log_dir, "plain", 0)]
    theirs = destination_records(kafka_cluster, prefix + "plain", 0)
    intruder = [i for i, r in enumerate(theirs) if r[1] == b"intruder"]
    assert len(intruder) == 1
    assert theirs[:intruder[0]] + theirs[intruder[0] + 1:] == [tuple(r) for r in ours]


def test_consumer_group_offsets_point_at_the_same_records(kafka_cluster, log_dir, tmp_path):
    prefix = kafka_cluster.new_topic("groups") + "-"
    args = replay_args(log_dir, kafka_cluster, "--create-topics", "--apply", "--commit-groups", "--from-offset",
                       "5", topics="plain", prefix=prefix)
    result = seglog("replay", *args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    csv_files = list(tmp_path.glob("seglog-replay-*.groups.csv"))
    assert len(csv_files) == 1
    rows = [line.split(",") for line in csv_files[0].read_text().splitlines()]
    assert rows, "no group offsets translated"
    offsets = json.loads(seglog("offsets", log_dir, "--format", "json").stdout)["committed"]
    for group, topic, partition, offset in rows:
        source = next(c for c in offsets if c["group"] == group and c["topic"] == "plain"
                      and c["partition"] == int(partition))
        assert topic == prefix + "plain"
        records = source_records(log_dir, "plain", int(partition))
        sent = [r for r in records if r[0] >= 5]
        # the destination offset of the first replayed record at or after the committed one
        expected = next((i for i, r in enumerate(sent) if r[0] >= source["offset"]), len(sent))
        assert int(offset) == expected
        assert f"--group {group} --reset-offsets --topic {topic}:{partition} --to-offset {offset} --execute" \
            in result.stdout
        assert kafka_cluster.committed(group, topic, int(partition)) == int(offset)


def test_repartition_places_keys_as_kafkas_default_partitioner(kafka_cluster, log_dir, tmp_path):
    from kafka.partitioner.default import murmur2  # kafka-python's, an independent implementation

    dest = kafka_cluster.new_topic("repart")
    kafka_cluster.create_topic(dest, partitions=4)
    result = seglog("replay", log_dir, "--bootstrap-server", kafka_cluster.bootstrap, "--topics", "plain",
                    "--topic-map", f"plain:{dest}", "--repartition", "--apply", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    total = 0
    for partition in range(4):
        for _stamp, key, _value, _headers in destination_records(kafka_cluster, dest, partition):
            total += 1
            if key is not None:
                assert (murmur2(key) & 0x7FFFFFFF) % 4 == partition
    assert total == 6729 + 6622


def test_missing_topic_wrong_timestamp_type_and_unreachable_cluster(kafka_cluster, log_dir, tmp_path):
    prefix = kafka_cluster.new_topic("checks") + "-"
    missing = seglog("replay", *replay_args(log_dir, kafka_cluster, "--apply", topics="plain", prefix=prefix),
                     cwd=tmp_path)
    assert missing.returncode == 3 and "does not exist in the cluster" in missing.stdout
    kafka_cluster.create_topic(prefix + "logappend", partitions=1, config={"message.timestamp.type": "LogAppendTime"})
    stamped = seglog("replay", *replay_args(log_dir, kafka_cluster, "--apply", topics="logappend", prefix=prefix),
                     cwd=tmp_path)
    assert stamped.returncode == 3 and "message.timestamp.type=LogAppendTime" in stamped.stdout
    unreachable = seglog("replay", log_dir, "--bootstrap-server", "127.0.0.1:1", "--timeout", "2", cwd=tmp_path)
    assert unreachable.returncode == 7, unreachable.stderr
    lines = unreachable.stderr.strip().splitlines()
    assert lines[:-1] in ([], ["seglog: waiting for the cluster at 127.0.0.1:1 (_TRANSPORT) ..."]), lines
    assert lines[-1].startswith("seglog: 127.0.0.1:1: cannot reach the cluster within 2 s"), lines


@pytest.mark.skipif(not UNCLEAN.is_dir(), reason="needs ../shared/corpus replicas/unclean-election")
def test_the_records_an_unclean_election_lost_go_back_exactly(kafka_cluster, tmp_path):
    """diff --export-lost (lossless by default) then replay: broker 1's 900 records of epoch 2
    (offsets 3900-4799, with a binary ``bin`` header) are appended to the leader's partition."""
    lost = tmp_path / "lost.jsonl"
    diff = seglog("diff", UNCLEAN / "broker-1" / "events-0", UNCLEAN / "broker-2" / "events-0",
                  UNCLEAN / "broker-3" / "events-0", "--export-lost", lost)
    assert diff.returncode == 3, diff.stderr
    dest = kafka_cluster.new_topic("lost")
    kafka_cluster.create_topic(dest, partitions=1)
    result = seglog("replay", lost, "--bootstrap-server", kafka_cluster.bootstrap, "--topic-map", f"events:{dest}",
                    "--apply", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    sources, _ = find_sources([str(UNCLEAN / "broker-1" / "events-0")])
    wanted = [r for r in directory_records(sources[0], Selection(from_offset=3900, to_offset=4799), Skipped())]
    theirs = destination_records(kafka_cluster, dest, 0)
    assert len(theirs) == len(wanted) == 900
    for mine, read in zip(wanted, theirs):
        assert read == (mine[1], mine[2], mine[3], [(bytes(k).decode(), v) for k, v in mine[4]])
    assert any(k == "bin" for _s, _k, _v, headers in theirs for k, _ in headers)


def test_a_lossy_json_lines_file_is_refused(kafka_cluster, tmp_path):
    lossy = tmp_path / "lossy.jsonl"
    if not UNCLEAN.is_dir():
        pytest.skip("needs ../shared/corpus replicas/unclean-election")
    diff = seglog("diff", UNCLEAN / "broker-1" / "events-0", UNCLEAN / "broker-2" / "events-0",
                  "--export-lost", lossy, "--payload-encoding", "utf8")
    assert diff.returncode == 3, diff.stderr
    result = seglog("replay", lossy, "--bootstrap-server", kafka_cluster.bootstrap, cwd=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "lossy" in lines[0] and "--payload-encoding base64" in lines[0]


def test_a_deleted_topics_directory_and_copies_on_several_brokers(kafka_cluster, tmp_path):
    """A topic deleted by mistake: its ``<topic>-<n>.<id>-delete`` directory is a source. The same
    partition in two log dirs (two brokers' copies) is read once, from the copy that ends last."""
    broker_1, broker_2 = tmp_path / "broker-1", tmp_path / "broker-2"
    for log_dir in (broker_1, broker_2):
        log_dir.mkdir()
        shutil.copy(DATA / "meta.properties", log_dir)
    shutil.copytree(DATA / "smallseg-0", broker_1 / "smallseg-0.3f1c2b7a9e0d4c5fa1b2c3d4e5f60718-delete")
    shutil.copytree(DATA / "smallseg-0", broker_2 / "smallseg-0")
    newest = sorted((broker_2 / "smallseg-0").glob("*.log"))[-1]
    for suffix in (".log", ".index", ".timeindex"):  # broker 2's copy lacks its last segment
        newest.with_suffix(suffix).unlink(missing_ok=True)
    dest = kafka_cluster.new_topic("deleted")
    args = [broker_2, broker_1, "--bootstrap-server", kafka_cluster.bootstrap, "--topic-map", f"smallseg:{dest}",
            "--create-topics"]
    plan = seglog("replay", *args, cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert "smallseg-0.3f1c2b7a9e0d4c5fa1b2c3d4e5f60718-delete" in plan.stdout
    assert f"(also in {broker_2 / 'smallseg-0'}: not read" in plan.stdout
    applied = seglog("replay", *args, "--apply", cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    ours = [r[1:] for r in source_records(DATA, "smallseg", 0)]
    assert destination_records(kafka_cluster, dest, 0) == [tuple(r) for r in ours]


def test_groups_active_in_the_destination_are_not_committed(kafka_cluster, log_dir, tmp_path):
    from confluent_kafka import Consumer

    prefix = kafka_cluster.new_topic("active") + "-"
    args = replay_args(log_dir, kafka_cluster, "--create-topics", "--apply", topics="plain", prefix=prefix)
    assert seglog("replay", *args, cwd=tmp_path).returncode == 0
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": "corpus-group",
                         "session.timeout.ms": 6000, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([prefix + "plain"])
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.5)
        assert consumer.assignment(), "the consumer never joined its group"
        again = seglog("replay", *args, "--commit-groups", cwd=tmp_path)
    finally:
        consumer.close()
    assert again.returncode == 0, again.stderr
    assert "group corpus-group: not committed: the group is active in the destination" in again.stdout
    assert "group corpus-txn-group: committed" in again.stdout


TIERED = CORPUS / "tiered"


@pytest.mark.skipif(not TIERED.is_dir(), reason="needs ../shared/corpus tiered (LocalTieredStorage)")
def test_a_tiered_partition_is_replayed_whole_remote_segments_first(kafka_cluster, tmp_path):
    """The local log dir and LocalTieredStorage's directory given together: the remote segments
    below the local log start, then the local ones, as seglog dump reads them."""
    dest = kafka_cluster.new_topic("tiered")
    result = seglog("replay", TIERED / "data", TIERED / "remote" / "kafka-tiered-storage", "--bootstrap-server",
                    kafka_cluster.bootstrap, "--topic-map", f"tiered:{dest}", "--create-topics", "--apply",
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sources, _ = find_sources([str(TIERED / "data"), str(TIERED / "remote" / "kafka-tiered-storage")])
    assert sources[0].remote is not None
    ours = [(r[1], r[2], r[3]) for r in directory_records(sources[0], Selection(), Skipped())]
    local, _ = find_sources([str(TIERED / "data")])
    assert len(ours) > len(list(directory_records(local[0], Selection(), Skipped())))
    theirs = [(r[0], r[1], r[2]) for r in destination_records(kafka_cluster, dest, 0)]
    assert theirs == ours


def test_a_cluster_that_refuses_the_client_is_one_line_and_status_7(tmp_path, log_dir):
    """A broker that requires SASL (tansu --authentication): without credentials, and with a
    --producer-config of Kafka's client properties that it refuses, replay says what the client
    met, in one line, exit 7, before reading the sources."""
    from tests.kafka_cluster import free_port, tansu_binary

    port = free_port()
    broker = subprocess.Popen([tansu_binary(), "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
                               "--advertised-listener-url", f"tcp://127.0.0.1:{port}", "--authentication"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        config = tmp_path / "client.properties"
        config.write_text('security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config='
                          'org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" '
                          'password="wrong";\n')
        for extra in ((), ("--producer-config", config)):
            result = seglog("replay", log_dir, "--bootstrap-server", f"127.0.0.1:{port}", "--timeout", "3", *extra,
                            cwd=tmp_path)
            assert result.returncode == 7, result.stdout + result.stderr
            lines = result.stderr.strip().splitlines()
            # a reset connection is retried as Kafka's clients retry it: one line while it waits
            assert lines[:-1] in ([], [f"seglog: waiting for the cluster at 127.0.0.1:{port} (_TRANSPORT) ..."])
            assert lines[-1].startswith(f"seglog: 127.0.0.1:{port}: cannot reach the cluster within 3 s"), lines
            assert "(" in lines[-1]  # what the client met: a reset connection, a failed SASL handshake
        assert "SASL" in lines[-1]
    finally:
        broker.kill()
        broker.wait()
