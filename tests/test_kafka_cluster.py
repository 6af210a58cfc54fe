"""The broker the replay tests run against, evaluated: what it keeps byte for byte, and where it
is not Kafka. Each test runs against whichever cluster ``kafka_cluster`` gives (tansu, or the
Kafka named by SEGLOG_TEST_KAFKA_BOOTSTRAP). Where tansu differs, the test asserts Kafka's
behaviour on Kafka and tansu's own on tansu, naming the difference from
``cluster.shortfalls`` (tests/kafka_cluster.py).

Some checks send hand-built requests (tests.kafka_cluster.kafka_request and seglog's batch
builder): what a broker does with a batch sent twice, or for a partition the topic does not
have, cannot be asked through a client that never sends them.
"""

from __future__ import annotations

import struct
import time

import pytest

from seglog_cli.storage.write.builder import NewRecord, build_batch
from tests.kafka_cluster import api_versions, kafka_request

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BINARY = bytes(range(256))
NONE, UNKNOWN_TOPIC_OR_PARTITION, OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE_SEQUENCE_NUMBER = 0, 3, 45, 46
UNKNOWN_SERVER_ERROR = -1
CONSUMER_GROUP_HEARTBEAT = 68

# (key, value, headers, CreateTime): binary, null and empty keys and values, binary, null and
# repeated header values, timestamps from 1 ms after the epoch on (0 means "now" to librdkafka)
RECORDS = [
    (None, BINARY, [("h", BINARY)], 1),
    (b"", b"", [], 1_000_000_000_000),
    (BINARY, None, [("null", None), ("dup", b"1"), ("dup", b"2"), ("ключ", b"\x00")], 1_767_225_600_000),
    (b"\x00", BINARY * 40, [("dup", b"")], 1_767_225_600_001),
    (b"k", b"v", [], 1_767_225_599_000),  # earlier than the record before it
    (None, None, [], 1_767_225_600_002),  # the pure-Python clients refuse to produce this one
]


def produce(cluster, topic, records, partition=0, **config):
    """Produce with confluent-kafka; raise on the first delivery error."""
    from confluent_kafka import Producer

    errors = []
    producer = Producer(cluster.client_config(**{"linger.ms": 20, **config}))
    for key, value, headers, stamp in records:
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=stamp, partition=partition,
                         on_delivery=lambda error, _message: error and errors.append(error))
    assert producer.flush(cluster.timeout) == 0 and not errors, errors
    return producer


def record_tuples(read):
    return [(r["key"], r["value"], r["headers"], r["timestamp"]) for r in read]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_records_round_trip_byte_exact(kafka_cluster, codec):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic(codec))
    produce(kafka_cluster, topic, RECORDS, **{"compression.type": codec})
    read = kafka_cluster.read(topic, 0)
    assert record_tuples(read) == [(k, v, h, t) for k, v, h, t in RECORDS]
    assert [r["offset"] for r in read] == list(range(len(RECORDS)))
    assert {r["timestamp_type"] for r in read} == {"CreateTime"}


def test_idempotent_producer_keeps_each_partition_in_order(kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("idem"), partitions=3)
    from confluent_kafka import Producer

    # small batches, five in flight per partition: the case idempotence orders
    producer = Producer(kafka_cluster.client_config(**{"enable.idempotence": True, "acks": "all",
                                                      "batch.num.messages": 50, "linger.ms": 1}))
    for i in range(3000):
        producer.produce(topic, key=b"%d" % (i % 3), value=b"%06d" % i, partition=i % 3)
        producer.poll(0)
    assert producer.flush(kafka_cluster.timeout) == 0
    for partition in range(3):
        read = kafka_cluster.read(topic, partition)
        assert [r["value"] for r in read] == [b"%06d" % i for i in range(partition, 3000, 3)]
        assert [r["offset"] for r in read] == list(range(1000))
        assert kafka_cluster.end_offset(topic, partition) == 1000


def test_end_offsets_listed_and_by_timestamp(kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("ends"))
    from confluent_kafka import Producer, TopicPartition

    producer = Producer(kafka_cluster.client_config(**{"linger.ms": 50}))
    for start, count in ((0, 5), (5, 1), (6, 7)):  # three batches: at offsets 0, 5 and 6
        for i in range(start, start + count):
            producer.produce(topic, value=b"%d" % i, timestamp=1_700_000_000_000 + i)
        assert producer.flush(kafka_cluster.timeout) == 0
    assert kafka_cluster.end_offset(topic, 0) == 13
    consumer = kafka_cluster.consumer()
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
    by_time = [consumer.offsets_for_times([TopicPartition(topic, 0, 1_700_000_000_000 + i)], timeout=10)[0].offset
               for i in (0, 3, 8, 12, 13)]
    consumer.close()
    assert low == 0
    if kafka_cluster.kind == "kafka":
        assert high == 13 and by_time == [0, 3, 8, 12, -1]
    else:
        assert high == 7, kafka_cluster.shortfalls["list_offsets_latest"]  # last batch's base offset + 1
        assert by_time == [0] * 5, kafka_cluster.shortfalls["offsets_for_times"]


def test_a_batch_sent_twice_is_stored_once(kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("dup"))
    error, producer_id, epoch = init_producer_id(kafka_cluster.bootstrap, version=4)
    assert error == NONE and producer_id >= 0
    records = [NewRecord(key=b"k", value=b"%d" % i, timestamp=1_700_000_000_000) for i in range(3)]

    def batch(sequence):
        return build_batch(records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)

    assert produce_v3(kafka_cluster.bootstrap, topic, 0, batch(0)) == (NONE, 0)
    again = produce_v3(kafka_cluster.bootstrap, topic, 0, batch(0))
    if kafka_cluster.kind == "kafka":
        assert again == (NONE, 0)  # the first write's offsets
    else:
        assert again == (DUPLICATE_SEQUENCE_NUMBER, -1), kafka_cluster.shortfalls["duplicate_sequence"]
    assert produce_v3(kafka_cluster.bootstrap, topic, 0, batch(9))[0] == OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce_v3(kafka_cluster.bootstrap, topic, 0, batch(3)) == (NONE, 3)
    assert [r["value"] for r in kafka_cluster.read(topic, 0)] == [b"0", b"1", b"2"] * 2
    old_error = init_producer_id(kafka_cluster.bootstrap, version=0)[0]  # the version aiokafka sends
    if kafka_cluster.kind == "kafka":
        assert old_error == NONE
    else:
        assert old_error == UNKNOWN_SERVER_ERROR, kafka_cluster.shortfalls["init_producer_id_v0_v2"]


def test_transactions_offsets_markers_and_read_committed(kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("txn"))
    from confluent_kafka import Producer

    producer = Producer(kafka_cluster.client_config(**{"transactional.id": topic}))
    producer.init_transactions(kafka_cluster.timeout)
    for values, end in (([b"c0", b"c1", b"c2"], "commit"), ([b"a0", b"a1", b"a2", b"a3"], "abort"),
                        ([b"c3", b"c4"], "commit"), ([b"o0", b"o1"], None)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value)
        # sent before the abort: librdkafka drops what it has not sent yet when a transaction
        # is aborted (those records never reach the broker, on Kafka as on tansu)
        assert producer.flush(kafka_cluster.timeout) == 0
        if end:
            getattr(producer, f"{end}_transaction")(kafka_cluster.timeout)

    def offsets(isolation):
        return [(r["offset"], r["value"]) for r in kafka_cluster.read(topic, 0, isolation)]

    # each marker takes an offset: 3 (commit), 8 (abort), 11 (commit); o0, o1 still open
    everything = [(0, b"c0"), (1, b"c1"), (2, b"c2"), (4, b"a0"), (5, b"a1"), (6, b"a2"), (7, b"a3"),
                  (9, b"c3"), (10, b"c4"), (12, b"o0"), (13, b"o1")]
    assert offsets("read_uncommitted") == everything
    committed = offsets("read_committed")  # up to the last stable offset, 12, on both
    if kafka_cluster.kind == "kafka":
        assert committed == [(0, b"c0"), (1, b"c1"), (2, b"c2"), (9, b"c3"), (10, b"c4")]
    else:
        assert committed == everything[:9], kafka_cluster.shortfalls["read_committed_aborted"]
    producer.commit_transaction(kafka_cluster.timeout)
    assert kafka_cluster.end_offset(topic, 0) == 15
    assert offsets("read_committed")[-2:] == [(12, b"o0"), (13, b"o1")]


def test_consumer_group_offsets_and_states(kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("grp"), partitions=2)
    group = kafka_cluster.new_topic("group")
    from confluent_kafka import Consumer, TopicPartition

    committer = Consumer(kafka_cluster.client_config(**{"group.id": group, "enable.auto.commit": False}))
    committer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    committer.close()
    assert kafka_cluster.committed(group, topic, 0) == 5
    assert kafka_cluster.committed(group, topic, 1) is None
    assert (kafka_cluster.group_state(group), kafka_cluster.group_members(group)) == ("EMPTY", 0)

    # session.timeout.ms 6000: tansu answers the first JoinGroup after about half of it
    member = Consumer(kafka_cluster.client_config(**{"group.id": group, "enable.auto.commit": False,
                                                     "session.timeout.ms": 6000}))
    member.subscribe([topic])
    deadline = time.monotonic() + 20
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.2)
    assert len(member.assignment()) == 2, kafka_cluster.shortfalls.get("group_join_delay")
    state, members = kafka_cluster.group_state(group), kafka_cluster.group_members(group)
    member.close()
    assert state == "STABLE"
    if kafka_cluster.kind == "kafka":
        assert members == 1
    else:
        assert members == 0, kafka_cluster.shortfalls["describe_group_members"]
    assert kafka_cluster.group_state(group) == "EMPTY"
    assert kafka_cluster.committed(group, topic, 0) == 5

    never = kafka_cluster.group_state(kafka_cluster.new_topic("never"))
    expected_never = "DEAD" if kafka_cluster.kind == "kafka" else "EMPTY"  # tansu: unknown_group_state
    assert never == expected_never, kafka_cluster.shortfalls.get("unknown_group_state")
    offered = CONSUMER_GROUP_HEARTBEAT in api_versions(kafka_cluster.bootstrap)
    # Kafka 4.0 on: KIP-848's protocol (tansu: consumer_group_protocol)
    assert offered is (kafka_cluster.kind == "kafka"), kafka_cluster.shortfalls.get("consumer_group_protocol")


def test_create_topics_with_configs_and_describe_them(kafka_cluster):
    topic = kafka_cluster.new_topic("cfg")
    given = {"cleanup.policy": "compact", "message.timestamp.type": "LogAppendTime", "retention.ms": "123456"}
    kafka_cluster.create_topic(topic, partitions=3, config=given)
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import ConfigResource, ConfigSource, NewTopic, ResourceType

    admin = kafka_cluster.admin()
    described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
    entries = next(iter(described.values())).result(kafka_cluster.timeout)
    assert {name: entries[name].value for name in given} == given
    sources = {entries[name].source for name in given}
    if kafka_cluster.kind == "kafka":
        assert sources == {ConfigSource.DYNAMIC_TOPIC_CONFIG.value} and "segment.bytes" in entries
    else:
        assert sources == {ConfigSource.DEFAULT_CONFIG.value}, kafka_cluster.shortfalls["describe_configs"]
        assert set(entries) == set(given), kafka_cluster.shortfalls["describe_configs"]
    with pytest.raises(KafkaException) as again:
        admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(kafka_cluster.timeout)
    assert again.value.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS


def test_log_append_time_topic(kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("lat"),
                                       config={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    produce(kafka_cluster, topic, [(b"k", b"v", [], 1_000_000_000_000)])
    (record,) = kafka_cluster.read(topic, 0)
    if kafka_cluster.kind == "kafka":
        assert record["timestamp_type"] == "LogAppendTime"
        assert before - 1000 <= record["timestamp"] <= int(time.time() * 1000) + 1000
    else:
        assert (record["timestamp_type"], record["timestamp"]) == ("CreateTime", 1_000_000_000_000), \
            kafka_cluster.shortfalls["log_append_time"]


def test_metadata_partition_counts(kafka_cluster):
    counts = {kafka_cluster.create_topic(kafka_cluster.new_topic("meta"), partitions=n): n for n in (1, 4, 7)}
    topics = kafka_cluster.admin().list_topics(timeout=kafka_cluster.timeout).topics
    for topic, count in counts.items():
        assert sorted(topics[topic].partitions) == list(range(count))
        assert all(p.leader >= 0 and p.error is None for p in topics[topic].partitions.values())


def test_a_new_topics_partitions_have_leaders_at_once_only_on_tansu(kafka_cluster):
    """Right after CreateTopics returns, the first ListOffsets of its partitions: tansu answers
    it (every partition is led at once); Kafka may answer NOT_LEADER_OR_FOLLOWER (or
    LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION) until the leaders are elected and known,
    then it answers too. tests/kafka_proxy.py puts that moment back in front of tansu."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import NewTopic, OffsetSpec

    admin = kafka_cluster.admin()
    topic = kafka_cluster.new_topic("fresh")
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(kafka_cluster.timeout)
    settling = {"NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_PARTITION",
                "_UNKNOWN_TOPIC"}
    answers, deadline = [], time.monotonic() + 30
    while time.monotonic() < deadline:
        futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in range(3)},
                                     request_timeout=10)
        try:
            offsets = [future.result().offset for future in futures.values()]
        except KafkaException as exc:
            answers.append(exc.args[0].name())
            assert answers[-1] in settling, answers  # retriable, and only while the leaders are elected
            time.sleep(0.1)
            continue
        assert offsets == [0, 0, 0]
        break
    else:
        pytest.fail(f"no leaders for {topic} within 30 s: {answers[-3:]}")
    if kafka_cluster.kind == "tansu":
        assert answers == [], kafka_cluster.shortfalls["leader_after_create_topics"]


def test_missing_topic_is_unknown_and_not_created(kafka_cluster):
    from confluent_kafka import Consumer, KafkaError

    topic = kafka_cluster.new_topic("missing")
    consumer = Consumer(kafka_cluster.client_config(**{"group.id": topic, "allow.auto.create.topics": False}))
    described = consumer.list_topics(topic, timeout=kafka_cluster.timeout).topics[topic]
    consumer.close()
    assert described.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert topic not in kafka_cluster.admin().list_topics(timeout=kafka_cluster.timeout).topics


def test_produce_to_a_partition_the_topic_does_not_have(kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("nopart"))
    from confluent_kafka import KafkaError, Producer

    errors = []
    producer = Producer(kafka_cluster.client_config(**{"message.timeout.ms": 5000}))
    producer.produce(topic, value=b"x", partition=7, on_delivery=lambda error, _message: errors.append(error))
    producer.flush(kafka_cluster.timeout)
    assert [e.code() for e in errors] == [KafkaError._UNKNOWN_PARTITION]  # librdkafka refuses it itself

    batch = build_batch([NewRecord(value=b"x", timestamp=1_700_000_000_000)])
    missing_topic = kafka_cluster.new_topic("nowhere")
    answers = [produce_v3(kafka_cluster.bootstrap, topic, 7, batch)[0],
               produce_v3(kafka_cluster.bootstrap, missing_topic, 0, batch)[0]]
    if kafka_cluster.kind == "kafka":
        assert answers == [UNKNOWN_TOPIC_OR_PARTITION] * 2
    else:
        assert answers == [NONE] * 2, kafka_cluster.shortfalls["produce_unknown_partition"]
    topics = kafka_cluster.admin().list_topics(timeout=kafka_cluster.timeout).topics
    assert sorted(topics[topic].partitions) == [0] and missing_topic not in topics


# -- hand-built requests -------------------------------------------------------------------------

def init_producer_id(bootstrap: str, version: int) -> tuple[int, int, int]:
    """(error, producer id, epoch) for a producer without a transactional id. v0-v1: nullable
    string, timeout; v2 on flexible; v3 on with the producer id and epoch to bump (-1: none)."""
    if version >= 2:
        body = b"\0" + struct.pack(">i", 60000) + (struct.pack(">qh", -1, -1) if version >= 3 else b"") + b"\0"
    else:
        body = struct.pack(">hi", -1, 60000)
    response = kafka_request(bootstrap, 22, version, body, flexible=version >= 2)
    _throttle, error, producer_id, epoch = struct.unpack_from(">ihqh", response)
    return error, producer_id, epoch


def produce_v3(bootstrap: str, topic: str, partition: int, batch: bytes) -> tuple[int, int]:
    """(error, base offset) of a Produce v3 (acks=all) of one batch to one partition."""
    name = topic.encode()
    body = (struct.pack(">hhi", -1, -1, 10000)  # transactional id null, acks -1, timeout
            + struct.pack(">ih", 1, len(name)) + name + struct.pack(">iii", 1, partition, len(batch)) + batch)
    response = kafka_request(bootstrap, 0, 3, body, timeout=15)
    (name_length,) = struct.unpack_from(">h", response, 4)
    _partition, error, base_offset = struct.unpack_from(">ihq", response, 4 + 2 + name_length + 4)
    return error, base_offset
