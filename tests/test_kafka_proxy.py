"""The fault-injecting proxy (tests/kafka_proxy.py) in front of the session's cluster, driven
with confluent-kafka (librdkafka) as replay drives it: each fault is seen by the client as a
real Kafka would make it seen, and requests pass again once the fault is over."""

from __future__ import annotations

import io
import socket
import threading
import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from kio.index import load_response_from_request
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest as DescribeClusterV1
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest as FindCoordinatorV3
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindCoordinatorV4
from kio.schema.list_offsets.v7.request import ListOffsetsPartition, ListOffsetsTopic
from kio.schema.list_offsets.v7.request import ListOffsetsRequest as ListOffsetsV7
from kio.serial import entity_reader, entity_writer

from tests.kafka_proxy import ApiKey, ErrorCode, KafkaProxy, new_partition_leader_delay


def admin(proxy: KafkaProxy) -> AdminClient:
    return AdminClient({"bootstrap.servers": proxy.bootstrap})


def producer(proxy: KafkaProxy, **config) -> Producer:
    return Producer({"bootstrap.servers": proxy.bootstrap, "linger.ms": 0, **config})


def produce_one(proxy: KafkaProxy, topic: str, value: bytes, timeout: float = 20.0, **config) -> list:
    """Produce one record to partition 0 and wait for its delivery report: [(error, offset)]."""
    reports = []
    client = producer(proxy, **config)
    client.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    assert client.flush(timeout) == 0, f"not delivered within {timeout} s"
    return reports


def values(cluster, topic: str) -> list[bytes]:
    """What the broker holds, read directly (not through the proxy)."""
    return [record["value"] for record in cluster.read(topic, 0, "read_uncommitted")]


def wait_for(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def kio_request(bootstrap: str, request, correlation_id: int = 1):
    """Send one kio request and read its answer with kio."""
    buffer = io.BytesIO()
    header = request.__header_schema__(request_api_key=request.__api_key__, request_api_version=request.__version__,
                                       correlation_id=correlation_id, client_id="seglog-test")
    entity_writer(type(header))(buffer, header)
    entity_writer(type(request))(buffer, request)
    frame = buffer.getvalue()
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(len(frame).to_bytes(4, "big") + frame)
        answer = sock.makefile("rb").read(int.from_bytes(sock.recv(4, socket.MSG_WAITALL), "big"))
    schema = load_response_from_request(type(request))
    header_size = entity_reader(schema.__header_schema__)(answer, 0)[1]
    return entity_reader(schema)(answer, header_size)[0]


def test_metadata_and_describe_cluster_name_the_proxy(kafka_proxy, kafka_cluster):
    upstream_port = int(kafka_cluster.bootstrap.rsplit(":", 1)[1])
    client = admin(kafka_proxy)
    brokers = client.list_topics(timeout=10).brokers
    assert brokers and {(b.host, b.port) for b in brokers.values()} == {("127.0.0.1", kafka_proxy.port)}
    assert kafka_proxy.port != upstream_port
    nodes = client.describe_cluster(request_timeout=10).result(10).nodes
    assert nodes and {(n.host, n.port) for n in nodes} == {("127.0.0.1", kafka_proxy.port)}
    # librdkafka describes the cluster with Metadata; DescribeCluster itself, asked with kio:
    answer = kio_request(kafka_proxy.bootstrap, DescribeClusterV1(include_cluster_authorized_operations=False))
    assert answer.brokers and {(b.host, b.port) for b in answer.brokers} == {("127.0.0.1", kafka_proxy.port)}
    assert kafka_proxy.seen(ApiKey.METADATA) >= 1 and kafka_proxy.seen(ApiKey.DESCRIBE_CLUSTER) == 1
    assert not kafka_proxy.faults_applied


def test_produce_and_consume_round_trip(kafka_proxy, kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    sent = [b"record-%d" % i for i in range(20)]
    client = producer(kafka_proxy)
    for value in sent:
        client.produce(topic, value=value, partition=0)
    assert client.flush(20) == 0
    through = type(kafka_cluster)(kafka_proxy.bootstrap, kafka_cluster.kind, timeout=20)
    assert [record["value"] for record in through.read(topic, 0, "read_uncommitted")] == sent
    # every client request went through the proxy: with the broker's own address in the
    # metadata, the consumer would have fetched from the broker directly
    assert kafka_proxy.seen(ApiKey.PRODUCE) >= 1 and kafka_proxy.seen(ApiKey.FETCH) >= 1
    assert values(kafka_cluster, topic) == sent


def test_fetch_not_leader_is_retried(kafka_proxy, kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    sent = [b"fetched-%d" % i for i in range(5)]
    client = producer(kafka_proxy)
    for value in sent:
        client.produce(topic, value=value, partition=0)
    assert client.flush(20) == 0
    kafka_proxy.fail(ApiKey.FETCH, ErrorCode.not_leader_or_follower, count=2)
    through = type(kafka_cluster)(kafka_proxy.bootstrap, kafka_cluster.kind, timeout=20)
    assert [record["value"] for record in through.read(topic, 0, "read_uncommitted")] == sent
    faults = kafka_proxy.applied("fail", ApiKey.FETCH)
    assert len(faults) == 2 and all(f.forwarded for f in faults)  # read-only: forwarded, the answer altered
    assert kafka_proxy.seen(ApiKey.FETCH) >= 3


def test_list_offsets_not_leader_then_passes(kafka_proxy, kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    client = admin(kafka_proxy)
    partition = TopicPartition(topic, 0)
    kafka_proxy.fail(ApiKey.LIST_OFFSETS, ErrorCode.not_leader_or_follower, count=1)
    with pytest.raises(KafkaException) as raised:
        client.list_offsets({partition: OffsetSpec.earliest()}, request_timeout=10)[partition].result(10)
    assert raised.value.args[0].code() == KafkaError.NOT_LEADER_FOR_PARTITION
    assert client.list_offsets({partition: OffsetSpec.earliest()}, request_timeout=10)[partition].result(10).offset == 0
    (fault,) = kafka_proxy.applied("fail", ApiKey.LIST_OFFSETS)
    assert fault.forwarded  # read-only: the broker's own answer, altered


def test_produce_errors_are_not_forwarded(kafka_proxy, kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    kafka_proxy.fail(ApiKey.PRODUCE, ErrorCode.not_leader_or_follower, count=2)
    ((error, _offset),) = produce_one(kafka_proxy, topic, b"once", **{"retry.backoff.ms": 50})
    assert error is None
    faults = kafka_proxy.applied("fail", ApiKey.PRODUCE)
    assert len(faults) == 2 and not any(f.forwarded for f in faults)
    assert kafka_proxy.seen(ApiKey.PRODUCE) == 3
    assert values(kafka_cluster, topic) == [b"once"]  # the refused attempts wrote nothing


def test_create_topics_error_answered_by_the_proxy(kafka_proxy, kafka_cluster):
    name = kafka_cluster.new_topic("proxy")
    kafka_proxy.fail(ApiKey.CREATE_TOPICS, ErrorCode.request_timed_out, count=1)
    with pytest.raises(KafkaException) as raised:
        client = admin(kafka_proxy)  # kept: a client dropped with a request out never answers it
        client.create_topics([NewTopic(name, 1, 1)], operation_timeout=5)[name].result(10)
    assert raised.value.args[0].code() == KafkaError.REQUEST_TIMED_OUT
    assert name not in kafka_cluster.admin().list_topics(timeout=10).topics


def test_metadata_unknown_topic_for_one_topic_only(kafka_proxy, kafka_cluster):
    hidden = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    shown = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    kafka_proxy.fail(ApiKey.METADATA, ErrorCode.unknown_topic_or_partition, seconds=30, topics=[hidden])
    topics = admin(kafka_proxy).list_topics(timeout=10).topics
    assert topics[hidden].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART and not topics[hidden].partitions
    assert topics[shown].error is None and len(topics[shown].partitions) == 1


def test_delay_holds_the_answer(kafka_proxy):
    kafka_proxy.delay(ApiKey.METADATA, 1.0, count=1)
    client = admin(kafka_proxy)
    started = time.monotonic()
    client.list_topics(timeout=10)
    assert time.monotonic() - started >= 1.0
    started = time.monotonic()
    client.list_topics(timeout=10)
    assert time.monotonic() - started < 0.9
    assert [f.kind for f in kafka_proxy.faults_applied] == ["delay"]


def test_refused_window_then_connects(kafka_proxy):
    refused_at = time.monotonic()
    kafka_proxy.refuse(2.0)
    client = admin(kafka_proxy)
    with pytest.raises(KafkaException):  # a broker restarting: no answer
        client.list_topics(timeout=0.5)
    assert kafka_proxy.refused >= 1
    brokers = client.list_topics(timeout=15).brokers  # librdkafka keeps reconnecting, and gets through after
    assert brokers and time.monotonic() - refused_at >= 2.0
    assert kafka_proxy.open_connections >= 1


def test_refuse_drops_open_connections(kafka_proxy):
    client = admin(kafka_proxy)
    client.list_topics(timeout=10)
    # (librdkafka drops its bootstrap connection once it knows the broker's node id, and connects again)
    assert wait_for(lambda: kafka_proxy.open_connections >= 1)
    accepted = kafka_proxy.accepted
    kafka_proxy.refuse(0.5)
    assert wait_for(lambda: kafka_proxy.open_connections == 0, 0.3)  # the broker went away with its connections
    time.sleep(0.5)
    assert client.list_topics(timeout=15).brokers
    assert kafka_proxy.accepted > accepted  # the client had to connect again


def test_cut_mid_request_is_not_forwarded(kafka_proxy, kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    kafka_proxy.cut(ApiKey.PRODUCE, "request")
    ((error, _),) = produce_one(kafka_proxy, topic, b"cut", **{"reconnect.backoff.ms": 50})
    assert error is None
    (fault,) = kafka_proxy.applied("cut_request")
    assert not fault.forwarded
    assert values(kafka_cluster, topic) == [b"cut"]


def test_cut_mid_response_the_broker_wrote_it(kafka_proxy, kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    kafka_proxy.cut(ApiKey.PRODUCE, "response")
    ((error, _),) = produce_one(kafka_proxy, topic, b"twice", **{"reconnect.backoff.ms": 50,
                                                                   "enable.idempotence": False})
    assert error is None
    assert kafka_proxy.applied("cut_response")[0].forwarded
    # the first attempt was written, its answer lost: the client sent it again
    assert values(kafka_cluster, topic) == [b"twice", b"twice"]


def test_find_coordinator_rewritten_and_load_in_progress(kafka_proxy, kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    group = kafka_cluster.new_topic("group")
    # both FindCoordinator forms, asked by hand with kio: the coordinator is the proxy
    single = kio_request(kafka_proxy.bootstrap, FindCoordinatorV3(key=group, key_type=0))
    assert (single.error_code, single.host, single.port) == (ErrorCode.none, "127.0.0.1", kafka_proxy.port)
    batched_request = FindCoordinatorV4(key_type=0, coordinator_keys=(group,))
    (batched,) = kio_request(kafka_proxy.bootstrap, batched_request).coordinators
    assert (batched.error_code, batched.host, batched.port) == (ErrorCode.none, "127.0.0.1", kafka_proxy.port)
    # librdkafka retries a coordinator that is still loading, then commits through the proxy
    kafka_proxy.fail(ApiKey.FIND_COORDINATOR, ErrorCode.coordinator_load_in_progress, count=2)
    through = type(kafka_cluster)(kafka_proxy.bootstrap, kafka_cluster.kind, timeout=20)
    committed = through.admin().alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 0)])],
        request_timeout=20)[group].result(20)
    assert committed.topic_partitions[0].error is None
    assert len(kafka_proxy.applied("fail", ApiKey.FIND_COORDINATOR)) == 2
    assert kafka_proxy.seen(ApiKey.OFFSET_COMMIT) == 1
    assert kafka_cluster.committed(group, topic, 0) == 0


def test_offset_commit_not_coordinator_is_not_forwarded(kafka_proxy, kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    group = kafka_cluster.new_topic("group")
    kafka_proxy.fail(ApiKey.OFFSET_COMMIT, ErrorCode.not_coordinator, count=1)
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 3)])]
    client = admin(kafka_proxy)
    (partition,) = client.alter_consumer_group_offsets(request, request_timeout=20)[group].result(20).topic_partitions
    assert partition.error.code() == KafkaError.NOT_COORDINATOR  # the admin client passes it on
    (fault,) = kafka_proxy.applied("fail", ApiKey.OFFSET_COMMIT)
    assert not fault.forwarded and kafka_cluster.committed(group, topic, 0) is None
    (partition,) = client.alter_consumer_group_offsets(request, request_timeout=20)[group].result(20).topic_partitions
    assert partition.error is None and kafka_cluster.committed(group, topic, 0) == 3


def test_throttle_time_reaches_the_client(kafka_proxy, kafka_cluster):
    topic = kafka_cluster.create_topic(kafka_cluster.new_topic("proxy"))
    throttled = []
    kafka_proxy.throttle(ApiKey.PRODUCE, 300, count=1)
    client = producer(kafka_proxy, throttle_cb=lambda event: throttled.append(event.throttle_time))
    client.produce(topic, value=b"slow", partition=0)
    assert client.flush(20) == 0
    deadline = time.monotonic() + 5
    while not throttled and time.monotonic() < deadline:
        client.poll(0.1)
    assert throttled and abs(throttled[0] - 0.3) < 0.01
    assert values(kafka_cluster, topic) == [b"slow"]


def test_new_partition_leader_delay(kafka_proxy, kafka_cluster):
    new_partition_leader_delay(kafka_proxy, 2.0)
    client = admin(kafka_proxy)
    topic = kafka_cluster.new_topic("proxy")
    created = time.monotonic()
    client.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10)[topic].result(10)
    (partition,) = client.list_topics(topic, timeout=10).topics[topic].partitions.values()
    assert partition.leader == -1 and partition.error.code() == KafkaError.LEADER_NOT_AVAILABLE
    tp = TopicPartition(topic, 0)
    with pytest.raises(KafkaException) as raised:
        client.list_offsets({tp: OffsetSpec.latest()}, request_timeout=10)[tp].result(10)
    # librdkafka looks the leader up in the metadata first and, finding none, does not ask
    assert raised.value.args[0].code() == KafkaError._NOENT
    # a client that asks anyway (kio, ListOffsets v7 as librdkafka sends it) hears NOT_LEADER_OR_FOLLOWER
    asked = ListOffsetsV7(replica_id=-1, isolation_level=0, topics=(
        ListOffsetsTopic(name=topic, partitions=(ListOffsetsPartition(partition_index=0, timestamp=-1),)),))
    (answer,) = kio_request(kafka_proxy.bootstrap, asked).topics[0].partitions
    assert (answer.error_code, answer.offset) == (ErrorCode.not_leader_or_follower, -1)
    ((error, _),) = produce_one(kafka_proxy, topic, b"after", **{"retry.backoff.ms": 50})
    assert error is None and time.monotonic() - created >= 2.0  # delivered once a leader is shown
    (partition,) = client.list_topics(topic, timeout=10).topics[topic].partitions.values()
    assert partition.error is None and partition.leader >= 0
    assert values(kafka_cluster, topic) == [b"after"]
    assert kafka_proxy.applied("fail", ApiKey.METADATA) and kafka_proxy.applied("fail", ApiKey.LIST_OFFSETS)


def test_stop_closes_everything(kafka_cluster):
    before = set(threading.enumerate())
    proxy = KafkaProxy(kafka_cluster.bootstrap).start()
    idle = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    assert wait_for(lambda: proxy.open_connections == 1)
    proxy.stop()
    assert proxy.open_connections == 0
    assert idle.recv(1) == b""  # the proxy closed its side
    idle.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=2).close()
    assert set(threading.enumerate()) <= before
