"""The one adapter between replay and a live cluster: librdkafka through ``confluent-kafka``.

Why this client: it was measured against the pure-Python clients on the same records
(``tests/benchmarks/bench_replay_clients.py``, in docs/commands/replay.md) and is the fastest by far; it has
the idempotent producer replay needs (and transactions), per-record timestamps and headers,
and Kafka's security settings (``security.protocol``, ``sasl.*``, ``ssl.*``), which
:func:`client_config` translates from the Java properties Kafka's own tools take.

Every request is retried as Kafka's own clients retry it (:mod:`.retry`: the retriable errors,
Kafka's back-off, until ``timeout``, by default ``default.api.timeout.ms``'s 60 s), with one
line through ``on_wait`` while it waits. What is not retriable, or still failing at the
deadline, becomes a one-line :class:`ClusterError` (exit status 7): an unreachable cluster, a
failed authentication or authorization, a produce the cluster refused. librdkafka's own log
lines are kept off the terminal (the first one is put in the error when it explains a
failure).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Callable, Iterator

from seglog_cli.storage.log.codecs import CODEC_NAMES  # codec id -> Kafka's name
from seglog_cli.storage.log.errors import ClusterError, SeglogError
from seglog_cli.storage.log.log_dir_files import parse_java_properties
from seglog_cli.storage.replay.retry import DEFAULT_API_TIMEOUT_S, Waiter, error_name, is_retriable, kafka_error

# Java client properties with no librdkafka counterpart that are safe to leave out (they choose
# Java classes, or settings replay fixes itself)
JAVA_ONLY = {"key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
             "partitioner.class", "interceptor.classes", "metric.reporters", "sasl.login.callback.handler.class",
             "sasl.client.callback.handler.class", "ssl.truststore.type", "ssl.keystore.type", "ssl.protocol",
             "ssl.enabled.protocols", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
             "ssl.secure.random.implementation", "ssl.engine.factory.class", "sasl.kerberos.kinit.cmd",
             "security.providers", "sasl.jaas.config", "ssl.truststore.location", "ssl.truststore.password",
             "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.certificate.chain",
             "ssl.keystore.key", "ssl.truststore.certificates", "auto.include.jmx.reporter", "enable.metrics.push",
             "metadata.recovery.strategy"}
# set by replay itself: exactly once needs them
FIXED = {"enable.idempotence": "true", "acks": "all"}
_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


class ClientConfigError(SeglogError):
    """A --producer-config property replay cannot use (usage error)."""


def client_config(bootstrap: str, properties: dict[str, str] | None = None) -> dict[str, str]:
    """librdkafka settings for Java client ``properties`` (as ``--producer-config`` or
    ``--command-config`` files give them to Kafka's tools) and ``bootstrap``."""
    properties = dict(properties or {})
    config: dict[str, str] = {"bootstrap.servers": properties.pop("bootstrap.servers", None) or bootstrap}
    if bootstrap:
        config["bootstrap.servers"] = bootstrap
    mechanism = (properties.get("sasl.mechanism") or "").upper()
    if mechanism == "GSSAPI" or "Krb5LoginModule" in (properties.get("sasl.jaas.config") or ""):
        raise ClientConfigError("sasl.mechanism=GSSAPI: Kerberos is not built into the librdkafka that "
                                "confluent-kafka's wheels ship; use PLAIN, SCRAM or OAUTHBEARER, or a "
                                "confluent-kafka built against a librdkafka with Kerberos (cyrus-sasl)")
    jaas = properties.get("sasl.jaas.config")
    if jaas:
        fields = dict(_JAAS.findall(jaas))
        if "username" in fields:
            config["sasl.username"] = fields["username"]
        if "password" in fields:
            config["sasl.password"] = fields["password"]
        if "OAuthBearerLoginModule" in jaas and "unsecuredLoginStringClaim_sub" in fields:
            config["enable.sasl.oauthbearer.unsecure.jwt"] = "true"
        elif "username" not in fields:
            raise ClientConfigError("sasl.jaas.config: only PlainLoginModule and ScramLoginModule (username and "
                                    "password) and the unsecured OAuthBearerLoginModule can be used by replay's "
                                    "client")
    _ssl_stores(properties, config)
    identification = properties.pop("ssl.endpoint.identification.algorithm", None)
    if identification is not None:
        config["ssl.endpoint.identification.algorithm"] = identification or "none"
    for key, value in properties.items():
        if key in JAVA_ONLY:
            continue
        if key in FIXED and value.strip().lower() != FIXED[key]:
            raise ClientConfigError(f"{key}={value}: replay sends exactly once, which needs {key}={FIXED[key]}")
        config[key] = value
    config.update(FIXED)
    return config


def _ssl_stores(properties: dict[str, str], config: dict[str, str]) -> None:
    """Java's trust and key stores, where librdkafka can read them: PEM trust stores (a CA file)
    and PKCS#12 key stores; JKS is Java's own format."""
    location = properties.get("ssl.truststore.location")
    if location:
        kind = properties.get("ssl.truststore.type", "JKS").upper()
        if kind != "PEM":
            raise ClientConfigError(f"ssl.truststore.location: a {kind} trust store is Java's own format; export the "
                                    f"CA certificates as PEM (keytool -exportcert -rfc) and give ssl.ca.location")
        config["ssl.ca.location"] = location
    location = properties.get("ssl.keystore.location")
    if location:
        kind = properties.get("ssl.keystore.type", "JKS").upper()
        if kind != "PKCS12":
            raise ClientConfigError(f"ssl.keystore.location: a {kind} key store cannot be read here; use a PKCS12 "
                                    f"key store, or ssl.certificate.location and ssl.key.location (PEM)")
        config["ssl.keystore.location"] = location
        if properties.get("ssl.keystore.password"):
            config["ssl.keystore.password"] = properties["ssl.keystore.password"]


def read_client_properties(path: str) -> dict[str, str]:
    """A Java properties file of client settings (``--producer-config``)."""
    from seglog_cli.storage.log.errors import UnreadableInputError

    try:
        with open(path, "rb") as handle:
            return parse_java_properties(handle.read().decode("latin-1"))  # Properties.load(InputStream)
    except OSError as exc:
        raise UnreadableInputError(f"cannot read the client properties: {exc.strerror}", path) from None


class _Quiet(logging.Logger):
    """librdkafka's log lines, kept (the last few) instead of printed."""

    def __init__(self):
        super().__init__("seglog.replay.librdkafka", logging.DEBUG)
        self.lines: list[str] = []
        self.propagate = False

    def handle(self, record):  # noqa: D401 - logging's hook
        text = record.getMessage()
        self.lines = (self.lines + [text])[-8:]


@dataclass
class ClusterInfo:
    cluster_id: str | None
    topics: dict[str, int]  # name -> partition count
    brokers: int


class Cluster:
    """A connection to one cluster: metadata, configs, topics, end offsets, reading back,
    producers and group offsets."""

    def __init__(self, config: dict[str, str], timeout: float = DEFAULT_API_TIMEOUT_S,
                 on_wait: Callable[[str], None] | None = None):
        try:
            import confluent_kafka  # noqa: F401  (replay's one client)
        except ImportError as exc:  # pragma: no cover - a dependency of seglog
            raise ClusterError(f"replay needs confluent-kafka ({exc}): pip install confluent-kafka") from None
        self.config = config
        self.timeout = timeout
        self.on_wait = on_wait  # one line each time a request starts waiting for something
        self.bootstrap = config["bootstrap.servers"]
        self._log = _Quiet()
        self._errors: list[str] = []
        self._admin = None

    # -- plumbing ---------------------------------------------------------------------------------

    def _waiter(self) -> Waiter:
        """A request's deadline and back-off (each request has the whole ``timeout``)."""
        return Waiter(self.timeout, self.on_wait)

    def _retry_or_fail(self, waiter: Waiter, exc: Exception, subject: str, what: str) -> None:
        """Wait and return when ``exc`` is retriable and time is left, else raise the one line."""
        if not waiter.wait(kafka_error(exc), subject):
            raise self._fail(what, exc) from None

    def _ask_each(self, items, send, key, read, subject, what, error_of=kafka_error, settled=None) -> dict:
        """``item -> read(future)`` for an admin request about several items: ``send(items,
        timeout)`` gives futures (their keys mapped back to items by ``key``); the items answered
        with an error are asked again, alone, while the first of them (in order) has a retriable
        one (``error_of(exc)``) and time is left, else that one fails in one line: ``what(item)``
        (``what(None)`` when the request itself fails); ``subject(item)`` names what is awaited.
        ``settled(exc)``: an error that, on a retry, means an earlier attempt did the work."""
        answers = {}
        waiter = self._waiter()
        pending, retried = sorted(items), False
        while pending:
            try:
                futures = send(pending, waiter.remaining())
            except Exception as exc:  # noqa: BLE001
                raise self._fail(what(None), exc) from None
            failed = []
            for raw, future in futures.items():
                try:
                    answers[key(raw)] = read(future)
                except Exception as exc:  # noqa: BLE001
                    if not (retried and settled is not None and settled(exc)):
                        failed.append((key(raw), exc))
            if failed:
                item, exc = min(failed, key=lambda pair: pair[0])
                if not waiter.wait(error_of(exc), subject(item)):
                    raise self._fail(what(item), exc) from None
                retried = True
            pending = sorted(item for item, _exc in failed)
        return answers

    def _common(self) -> dict:
        common = {k: v for k, v in self.config.items() if k not in FIXED}
        common.update(logger=self._log, error_cb=self._error)
        return common

    def _error(self, error) -> None:
        self._errors.append(error.str())

    def _fail(self, what: str, exc: Exception) -> ClusterError:
        reason = _reason(exc)
        if "timed out" in reason.lower() or "transport" in reason.lower():
            # a time-out says little: what the client met on the way does (refused, closed, auth);
            # librdkafka hands its errors and log lines over when it is polled
            if self._admin is not None:
                try:
                    self._admin.poll(0.2)
                except Exception:  # noqa: BLE001 - only more words for the message
                    pass
            said = (_telling(self._errors) or _telling(self._log.lines)
                    or (self._errors or self._log.lines or [None])[-1])
            if said:
                reason = f"{reason} ({said})"
        return ClusterError(f"{what}: {reason}", self.bootstrap)

    @property
    def admin(self):
        if self._admin is None:
            from confluent_kafka.admin import AdminClient
            try:
                self._admin = AdminClient(self._common())
            except Exception as exc:  # noqa: BLE001 - a bad property: librdkafka says which
                raise ClientConfigError(f"client configuration: {_reason(exc)}") from None
        return self._admin

    def consumer(self, eof: bool = True, isolation: str = "read_uncommitted"):
        from confluent_kafka import Consumer
        settings = self._common()
        for key in ("acks", "enable.idempotence", "linger.ms", "compression.type", "batch.size"):
            settings.pop(key, None)
        settings.update({"group.id": "seglog-replay-reader", "enable.auto.commit": False,
                         "enable.partition.eof": eof, "isolation.level": isolation,
                         "auto.offset.reset": "error", "fetch.max.bytes": 16 * 1024 * 1024,
                         "fetch.wait.max.ms": 20})  # the end of a partition is found without waiting
        try:
            return Consumer(settings)
        except Exception as exc:  # noqa: BLE001
            raise ClientConfigError(f"client configuration: {_reason(exc)}") from None

    # -- metadata and topics ----------------------------------------------------------------------

    def describe(self, topics=(), leaders: bool = False) -> ClusterInfo:
        """Cluster id, topics and partition counts. A cluster that does not answer is asked again
        until the deadline; so is one whose metadata gives one of ``topics`` a retriable error
        (or, with ``leaders``, a partition of them without a leader: just after CreateTopics, an
        election, a restart)."""
        waiter = self._waiter()
        admin = self.admin
        while True:
            try:
                metadata = admin.list_topics(timeout=min(3.0, waiter.remaining()))
            except Exception as exc:  # noqa: BLE001
                from confluent_kafka import KafkaError
                error = kafka_error(exc)
                if error is not None and not is_retriable(error):
                    raise self._fail("cannot read the cluster's metadata", exc) from None
                if not waiter.wait(error or KafkaError(KafkaError._TRANSPORT), self.bootstrap,
                                   f"the cluster at {self.bootstrap}"):
                    raise self._fail(f"cannot reach the cluster within {self.timeout:g} s", exc) from None
                continue
            unsettled = _unsettled(metadata, topics, leaders)
            if unsettled is None:
                break
            subject, error = unsettled
            if not waiter.wait(error, subject):
                if is_retriable(error) and error_name(error) != "UNKNOWN_TOPIC_OR_PARTITION":
                    raise ClusterError(f"no leader for {subject} within {self.timeout:g} s "
                                       f"({error_name(error)})", self.bootstrap)
                break  # the caller judges a topic that is not there
        topics_found = {name: len(meta.partitions) for name, meta in metadata.topics.items() if meta.error is None}
        denied = [name for name, meta in metadata.topics.items() if meta.error is not None
                  and "AUTHORIZATION" in meta.error.name()]
        if denied:
            raise ClusterError(f"not authorized to describe topic {denied[0]}", self.bootstrap)
        return ClusterInfo(metadata.cluster_id, topics_found, len(metadata.brokers))

    def topic_configs(self, names: list[str]) -> dict[str, dict[str, str]]:
        from confluent_kafka.admin import ConfigResource
        return self._ask_each(
            names, lambda pending, timeout: self.admin.describe_configs(
                [ConfigResource("topic", name) for name in pending], request_timeout=timeout),
            lambda resource: resource.name, lambda future: {k: entry.value for k, entry in future.result().items()},
            lambda name: f"topic {name}", lambda _name: "cannot describe the destination topics' configs")

    def create_topics(self, specs: list[tuple[str, int, int, dict[str, str]]]) -> None:
        """Create ``(name, partitions, replication factor or -1, configs)`` topics, then wait
        until every partition of them has a leader (Kafka elects one a moment after
        CreateTopics returns; until then a ListOffsets or a Produce there is refused)."""
        from confluent_kafka.admin import NewTopic
        if not specs:
            return
        topics = {name: NewTopic(name, partitions, replication, config=dict(configs))
                  for name, partitions, replication, configs in specs}

        def already_there(exc) -> bool:  # an earlier attempt created it, its answer lost (checked below)
            error = kafka_error(exc)
            return error is not None and error_name(error) == "TOPIC_ALREADY_EXISTS"

        self._ask_each(
            topics, lambda pending, timeout: self.admin.create_topics([topics[name] for name in pending],
                                                                      request_timeout=timeout),
            lambda name: name, lambda future: future.result(), lambda name: f"topic {name}",
            lambda name: "cannot create topics" if name is None else f"cannot create topic {name}",
            settled=already_there)
        wanted = {name: partitions for name, partitions, _r, _c in specs}
        info = self.describe(sorted(wanted), leaders=True)
        for name, count in sorted(wanted.items()):
            if info.topics.get(name) != count:
                raise ClusterError(f"topic {name} does not show in the cluster's metadata with {count} partitions "
                                   f"within {self.timeout:g} s (it shows {info.topics.get(name, 'no')} partitions)",
                                   self.bootstrap)

    # -- offsets ----------------------------------------------------------------------------------

    def end_offsets(self, partitions: list[tuple[str, int]], floors: dict | None = None) -> dict[tuple[str, int], int]:
        """The log end offset of each partition, read as a consumer finds it: from the listed
        latest offset (or ``floors``, if higher) forward to the end of the partition (a broker's
        ListOffsets answer is not trusted alone: tansu's is too low, see tests/kafka_cluster.py)."""
        if not partitions:
            return {}
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec
        floors = floors or {}
        # one ListOffsets for every partition (the admin client groups them per leader); the
        # partitions refused with a retriable error (no leader yet) are asked again
        highs = self._ask_each(
            set(partitions), lambda pending, timeout: self.admin.list_offsets(
                {TopicPartition(t, p): OffsetSpec.latest() for t, p in pending}, request_timeout=timeout),
            lambda tp: (tp.topic, tp.partition), lambda future: future.result().offset,
            lambda key: f"{key[0]}-{key[1]}",
            lambda key: "cannot list the destination's offsets" if key is None
            else f"cannot list the offsets of {key[0]}-{key[1]}", error_of=_leader_error)
        starts = {key: max(high, floors.get(key, 0)) for key, high in highs.items()}
        consumer = self.consumer(eof=True)
        try:
            ends = {}
            for _offset, message, key in self._consume(consumer, starts, None):
                if message is None:
                    ends[key] = _offset
            return ends
        finally:
            consumer.close()

    def read(self, topic: str, partition: int, start: int, end: int | None = None,
             isolation: str = "read_uncommitted") -> Iterator[tuple]:
        """``(offset, key, value, headers, timestamp, timestamp type)`` of the records from
        ``start`` to ``end`` (or the partition's end)."""
        consumer = self.consumer(eof=True, isolation=isolation)
        try:
            for offset, message, _key in self._consume(consumer, {(topic, partition): start}, end):
                if message is not None:
                    stamp_type, stamp = message.timestamp()
                    yield (offset, message.key(), message.value(), tuple(message.headers() or ()), stamp, stamp_type)
        finally:
            consumer.close()

    def _consume(self, consumer, starts: dict, end: int | None):
        """Assign at ``starts`` and poll: (offset, message, key) per record, (end, None, key) once
        per partition when it reaches its end (or ``end``)."""
        from confluent_kafka import KafkaError, TopicPartition
        consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in starts.items()])
        pending = set(starts)
        if end is not None:
            for key in [k for k, start in starts.items() if start >= end]:
                pending.discard(key)
                yield starts[key], None, key
        idle_until = time.monotonic() + self.timeout
        while pending:
            message = consumer.poll(0.1)
            if message is None:
                if time.monotonic() > idle_until:
                    raise ClusterError(f"no answer reading {', '.join(f'{t}-{p}' for t, p in sorted(pending)[:3])} "
                                       f"within {self.timeout:g} s", self.bootstrap)
                continue
            idle_until = time.monotonic() + self.timeout
            key = (message.topic(), message.partition())
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if key in pending:
                        pending.discard(key)
                        yield message.offset(), None, key
                    continue
                if is_retriable(error):  # the consumer fetches again itself (a new leader, a reconnect)
                    continue
                raise ClusterError(f"reading {key[0]}-{key[1]}: {error.str()}", self.bootstrap)
            if key not in pending:
                continue
            offset = message.offset()
            if end is not None and offset >= end:
                pending.discard(key)
                yield end, None, key
                continue
            yield offset, message, key
            if end is not None and offset + 1 >= end:
                pending.discard(key)
                yield end, None, key

    # -- producing --------------------------------------------------------------------------------

    def producer(self, codec: int, **overrides):
        """An idempotent producer compressing with ``codec`` (Kafka's codec id)."""
        from confluent_kafka import Producer
        settings = {"linger.ms": 5, "batch.size": 1000000, "message.max.bytes": 100 * 1024 * 1024,
                    "queue.buffering.max.kbytes": 65536, "queue.buffering.max.messages": 200000}
        settings.update(self._common())  # the user's settings win over these defaults...
        settings.update({"enable.idempotence": True, "acks": "all", "compression.type": CODEC_NAMES[codec],
                         "allow.auto.create.topics": False})  # ...but not over exactly once
        settings.update(overrides)
        try:
            return Producer(settings)
        except Exception as exc:  # noqa: BLE001
            raise ClientConfigError(f"client configuration: {_reason(exc)}") from None

    # -- consumer groups --------------------------------------------------------------------------

    def group_states(self, groups: list[str]) -> dict[str, tuple[str, int]]:
        """``group -> (state, number of members)`` in the cluster (``("DEAD", 0)``: unknown there)."""
        def state(future) -> tuple[str, int]:
            described = future.result()
            return described.state.name, len(described.members)

        return self._ask_each(
            groups, lambda pending, timeout: self.admin.describe_consumer_groups(pending, request_timeout=timeout),
            lambda group: group, state, lambda group: f"group {group}",
            lambda _group: "cannot describe the consumer groups")

    def commit_group_offsets(self, group: str, offsets: list[tuple[str, int, int]]) -> None:
        """Commit ``(topic, partition, offset)`` for ``group`` (an OffsetCommit through the
        group's coordinator; the partitions refused with a retriable error are sent again)."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        pending = list(offsets)
        waiter = self._waiter()
        while pending:
            request = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for t, p, o in pending])
            try:
                future, = self.admin.alter_consumer_group_offsets([request],
                                                                  request_timeout=waiter.remaining()).values()
                result = future.result()
            except Exception as exc:  # noqa: BLE001
                self._retry_or_fail(waiter, exc, f"group {group}", f"cannot commit the offsets of group {group}")
                continue
            failed = [tp for tp in result.topic_partitions if tp.error is not None]
            if not failed:
                return
            first = failed[0]
            if not waiter.wait(first.error, f"group {group}"):
                raise ClusterError(f"group {group}: {first.topic}-{first.partition}: {first.error.str()}",
                                   self.bootstrap)
            again = {(tp.topic, tp.partition) for tp in failed}
            pending = [(t, p, o) for t, p, o in pending if (t, p) in again]


def _leader_error(exc):
    """The error of a ListOffsets answer; librdkafka's ``_NOENT`` ("No leaders found": its
    metadata has no leader for the partition yet, just created or after an election, so it did
    not even ask) is waited for as LEADER_NOT_AVAILABLE."""
    error = kafka_error(exc)
    if error is not None and error_name(error) == "_NOENT":
        from confluent_kafka import KafkaError
        return KafkaError(KafkaError.LEADER_NOT_AVAILABLE, error.str())
    return error


def _unsettled(metadata, topics, leaders: bool):
    """``(subject, error)`` for the first of ``topics`` the metadata answers with a retriable
    error (or, with ``leaders``, with a partition that has none), else None. A topic the
    cluster does not know (UNKNOWN_TOPIC_OR_PARTITION) only counts with ``leaders``: it was
    just created, and the metadata has not caught up."""
    from confluent_kafka import KafkaError
    for name in topics:
        meta = metadata.topics.get(name)
        if meta is None:
            if leaders:
                return f"topic {name}", KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
            continue
        if meta.error is not None:
            unknown = error_name(meta.error) == "UNKNOWN_TOPIC_OR_PARTITION"
            if is_retriable(meta.error) and (leaders or not unknown):
                return f"topic {name}", meta.error
            continue
        if leaders:
            for number, partition in sorted(meta.partitions.items()):
                if partition.error is not None and is_retriable(partition.error):
                    return f"{name}-{number}", partition.error
                if partition.leader < 0:
                    return f"{name}-{number}", KafkaError(KafkaError.LEADER_NOT_AVAILABLE)
    return None


def _telling(lines: list[str]) -> str | None:
    """The last of librdkafka's lines that says what failed (a refused connection, a failed
    handshake or authentication), else the last one."""
    for line in reversed(lines):
        low = line.lower()
        if any(word in low for word in ("failed", "refused", "disconnected", "authentication", "authorization",
                                        "ssl", "sasl")):
            return line.split("]: ", 1)[-1]
    return None


def _reason(exc: Exception) -> str:
    """One line from a confluent-kafka exception."""
    args = getattr(exc, "args", ())
    error = args[0] if args else None
    if hasattr(error, "str") and callable(error.str):
        return error.str()
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
