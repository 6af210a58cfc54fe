"""A fault-injecting Kafka-protocol proxy on loopback, in front of the test cluster's one broker.

A real Kafka makes clients wait in moments tansu answers at once (no leader just after CreateTopics,
a coordinator loading, elections, restarts, quotas): this reproduces them. Each client connection
gets its own upstream one; frames (4-byte size + payload) pass whole and in order, each answer
matched to its request by correlation id. Broker addresses in Metadata, FindCoordinator (both
forms), DescribeCluster and Produce/Fetch ``node_endpoints`` answers become the proxy's, so
clients stay behind it (every node id maps to the one upstream broker).

Encoding is kio's (Aiven, Apache-2.0): dataclasses generated from Kafka's own JSON message schemas,
every version incl. flexible ones: no second, hand-written protocol implementation to get wrong.
``kio.index.load_request_schema``/``load_response_schema`` give the class for (api key, version)
and, in ``__header_schema__``, its header (request v1/v2, response v0/v1; ApiVersions answers v0);
``kio.serial.entity_reader``/``entity_writer`` read and write headers and the bodies the proxy
rewrites or makes up; ``kio.serial.readers`` reads a Produce's acks. By hand: frame sizes and
answers' correlation ids. Versions kio lacks (Produce v0-2, Fetch v0-3, ListOffsets v0) pass
unchanged; a fault needing to rewrite one is logged as not applied (``Applied.detail``).

Faults last ``count`` requests or ``seconds``, whichever ends first (neither: until ``clear()``):

* ``fail``: read-only APIs (Metadata, ListOffsets, Fetch, FindCoordinator, Describe*...) are
  forwarded, the error written into the broker's answer; all others (Produce, OffsetCommit,
  CreateTopics, JoinGroup...) are NOT forwarded: the proxy answers, so a client told "not
  written" was not written. An acks=0 Produce has no answer: the connection is closed.
* ``delay``: forwarded at once, the answer held (a slow broker); later answers wait behind it.
* ``throttle``: forwarded; ``throttle_time_ms`` set in the answer (a quota, KIP-219).
* ``cut("request")``: NOT forwarded, both sides closed. ``cut("response")``: forwarded, half the
  answer sent, both sides closed: the broker acted (as a real REQUEST_TIMED_OUT may hide).
* ``refuse``: nothing forwarded: new connections reset, open ones dropped (a broker restarting).
* ``leader_delay_after_create``: for ``seconds`` after a CreateTopics answer, its topics have no
  leader: Metadata LEADER_NOT_AVAILABLE, leader -1; ListOffsets/Fetch (forwarded) and Produce
  (not forwarded) NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import io
import threading
import time
import types
import typing
import uuid
from dataclasses import MISSING

import pytest
from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_compact_string_nullable, read_int16, read_nullable_legacy_string

__all__ = ["ApiKey", "ErrorCode", "KafkaProxy", "Passed", "Applied", "kafka_proxy", "new_partition_leader_delay"]

# Kafka's API keys, named after kio's index: ApiKey.PRODUCE == 0, ApiKey.METADATA == 3, ...
ApiKey = enum.IntEnum("ApiKey", {name.upper(): key for key, name in api_key_map.items()})

# answered by forwarding and then writing the error into the broker's answer: asking does not
# change the broker's state, so forwarding is harmless and keeps the rest of the answer true
READ_ONLY = frozenset(ApiKey[name] for name in (
    "FETCH", "LIST_OFFSETS", "METADATA", "OFFSET_FETCH", "FIND_COORDINATOR", "DESCRIBE_GROUPS", "LIST_GROUPS",
    "API_VERSIONS", "DESCRIBE_CONFIGS", "DESCRIBE_CLUSTER", "CONSUMER_GROUP_DESCRIBE", "DESCRIBE_TOPIC_PARTITIONS",
    "OFFSET_FOR_LEADER_EPOCH", "DESCRIBE_ACLS", "DESCRIBE_LOG_DIRS", "DESCRIBE_PRODUCERS", "DESCRIBE_TRANSACTIONS",
    "LIST_TRANSACTIONS"))
# answers that can name brokers (from this version on): their host/port become the proxy's
ADDRESSES = {ApiKey.METADATA: 0, ApiKey.FIND_COORDINATOR: 0, ApiKey.DESCRIBE_CLUSTER: 0, ApiKey.PRODUCE: 10,
             ApiKey.FETCH: 16}
# what an errored partition/coordinator entry carries instead of data, as Kafka fills it
_ERROR_RESETS = {"leader_id": -1, "leader_epoch": -1, "timestamp": -1, "offset": -1, "base_offset": -1,
                 "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1, "preferred_read_replica": -1,
                 "records": b"", "node_id": -1, "host": "", "port": -1, "error_message": None}
_TOPIC_LISTS = ("topics", "topic_data", "responses", "topic_names")
# answers the proxy makes up entry by entry: (request's topics, answer's, request's partitions, answer's)
_MIRRORED = {ApiKey.PRODUCE: ("topic_data", "responses", "partition_data", "partition_responses"),
             ApiKey.OFFSET_COMMIT: ("topics", "topics", "partitions", "partitions"),
             ApiKey.TXN_OFFSET_COMMIT: ("topics", "topics", "partitions", "partitions"),
             ApiKey.CREATE_TOPICS: ("topics", "topics", None, None)}


# one request the proxy received; faults: the kinds applied to it ("fail", "delay", "cut_request"...)
Passed = typing.NamedTuple("Passed", [("conn", int), ("api_key", int), ("version", int), ("correlation_id", int),
                                      ("client_id", "str | None"), ("faults", "tuple[str, ...]")])
# one fault applied; forwarded: whether the request reached the broker
Applied = typing.NamedTuple("Applied", [("kind", str), ("api_key", int), ("version", int), ("correlation_id", int),
                                        ("forwarded", bool), ("detail", str)])


class _Request:
    """A request frame, its header read with kio, the body decoded only when asked; and what the
    proxy owes the client for it (``answer``: resolved with the answer frame)."""

    def __init__(self, frame: bytes):
        self.frame = frame
        header, self.body_offset = entity_reader(RequestHeaderV1)(frame, 0)  # v1 and v2 agree up to client_id
        self.api_key, self.version = int(header.request_api_key), int(header.request_api_version)
        self.correlation_id, self.client_id = int(header.correlation_id), header.client_id
        try:
            self.schema = load_request_schema(self.api_key, self.version)
        except KioIndexError:
            self.schema = None
        if self.schema is not None and self.schema.__header_schema__ is not RequestHeaderV1:
            self.body_offset = entity_reader(self.schema.__header_schema__)(frame, 0)[1]  # v2: tagged fields
        self._payload = MISSING
        self.answer: asyncio.Future | None = None
        self.not_before, self.throttle_ms, self.fail, self.cut = 0.0, None, None, False

    def payload(self):
        try:
            if self._payload is MISSING:
                self._payload = entity_reader(self.schema)(self.frame, self.body_offset)[0] if self.schema else None
        except Exception:  # noqa: BLE001 (a body kio cannot read is forwarded as it is)
            self._payload = None
        return self._payload

    def acks(self) -> int | None:
        """A Produce's acks (0: no answer will come), read with kio's readers, records left alone."""
        if self.api_key != ApiKey.PRODUCE:
            return None
        offset = self.body_offset
        if self.version >= 3:  # after transactional_id (a compact string from v9, the first flexible version)
            offset += (read_compact_string_nullable if self.version >= 9 else read_nullable_legacy_string)(
                self.frame, offset)[1]
        return int(read_int16(self.frame, offset)[0])

    def topics(self, names: dict) -> frozenset[str] | None:
        """The topics the request names (None: all of them, or it names none)."""
        payload = self.payload()
        for attr in _TOPIC_LISTS:
            if items := getattr(payload, attr, None):
                return frozenset(item if isinstance(item, str) else _topic_name(item, names) for item in items)
        return None


class KafkaProxy:
    """The proxy: ``start()``/``stop()`` or ``with``; ``bootstrap`` is its "127.0.0.1:port".
    Faults are set from the test's thread at any time and apply to requests arriving after."""

    def __init__(self, upstream: str, host: str = "127.0.0.1"):
        self.upstream, self.host, self.port = upstream, host, 0
        self._up_host, self._up_port = upstream.rsplit(":", 1)[0], int(upstream.rsplit(":", 1)[1])
        self.accepted = self.refused = 0  # connections accepted, and of those reset by ``refuse``
        self._lock = threading.Lock()  # rules and logs: written by the loop, read by the test
        self._rules: list[types.SimpleNamespace] = []
        self.log: list[Passed] = []  # every request received
        self.faults_applied: list[Applied] = []  # every fault applied
        self._names: dict[uuid.UUID, str] = {}  # topic ids seen in answers (Fetch v13+ names topics by id)
        self._refuse_until = 0.0
        self._leader_delay: list | None = None  # [seconds, CreateTopics answers left or None]
        self._conns: dict[int, types.SimpleNamespace] = {}  # id -> client, upstream, task, queue, pending
        self._tasks: set[asyncio.Task] = set()  # every connection's handler
        self._ids, self._server, self._loop, self._thread = 0, None, None, None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> KafkaProxy:
        self._loop, ready = asyncio.new_event_loop(), threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name=f"kafka-proxy-{self.upstream}",
                                        daemon=True)
        self._thread.start()
        if not ready.wait(10) or self._server is None:
            self.stop()
            raise RuntimeError(f"the Kafka proxy for {self.upstream} did not start")
        return self

    def _run(self, ready: threading.Event) -> None:
        async def listen():
            self._server = await asyncio.start_server(self._serve, self.host, 0)
            self.port = self._server.sockets[0].getsockname()[1]
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(listen())
            ready.set()
            self._loop.run_forever()
        finally:
            ready.set()
            self._loop.close()

    def stop(self) -> None:
        """Close the listener and every connection (both sides), then end the loop's thread."""
        if self._thread is None:
            return
        if self._loop.is_running():
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
        thread, self._thread = self._thread, None
        thread.join(10)
        if thread.is_alive():
            raise RuntimeError(f"the Kafka proxy's thread for {self.upstream} did not end")

    async def _shutdown(self) -> None:
        self._server.close()
        await asyncio.sleep(0.01)  # connections accepted just before: let their handlers start
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._server.wait_closed()
        await asyncio.sleep(0.01)  # sockets are closed in callbacks the loop runs next

    def __enter__(self) -> KafkaProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _add(self, kind: str, api_key: int, count: int | None, window: float | None, topics=None, **values) -> None:
        until = None if window is None else time.monotonic() + window
        # kind: fail, delay, throttle, cut_request or cut_response; seconds: a delay's; ms: a throttle's
        rule = dict(kind=kind, api_key=int(api_key), count=count, until=until, error_code=None, seconds=0.0, ms=0,
                    topics=None if topics is None else frozenset(topics))
        with self._lock:
            self._rules.append(types.SimpleNamespace(**{**rule, **values}))

    def fail(self, api_key: int, error_code: int, count: int | None = None, seconds: float | None = None,
             topics=None) -> None:
        """Answer ``error_code`` (per partition, else at the top): read-only APIs forwarded, the
        answer altered; others answered by the proxy, never forwarded. ``topics``: only requests
        naming one (Metadata for all topics too: only their entries change; several: all fail)."""
        if int(api_key) not in READ_ONLY and not _can_answer(int(api_key)):
            raise ValueError(f"the proxy cannot answer {ApiKey(api_key).name} itself (no error code in kio's class)")
        self._add("fail", api_key, count, seconds, topics, error_code=ErrorCode(error_code))

    def delay(self, api_key: int, seconds: float, count: int | None = None, window: float | None = None,
              topics=None) -> None:
        """Hold answers ``seconds`` (forwarded at once): a broker slow to answer (a Produce waiting
        for followers, a coordinator loading). ``window``: how long this fault lasts."""
        self._add("delay", api_key, count, window, topics, seconds=seconds)

    def throttle(self, api_key: int, ms: int, count: int | None = None, seconds: float | None = None) -> None:
        """Set ``throttle_time_ms`` in the answers (forwarded): the client went over a quota."""
        self._add("throttle", api_key, count, seconds, ms=int(ms))

    def cut(self, api_key: int, when: str = "request", count: int | None = 1, seconds: float | None = None) -> None:
        """Close both sides: ``"request"``: not forwarded (it never reached the broker);
        ``"response"``: half-way through the broker's answer (the broker acted; the client cannot know)."""
        if when not in ("request", "response"):
            raise ValueError(f"when={when!r}: 'request' or 'response'")
        self._add(f"cut_{when}", api_key, count, seconds)

    def refuse(self, seconds: float, drop_existing: bool = True) -> None:
        """For ``seconds`` reset new connections at once (a broker restarting: nothing listens);
        ``drop_existing``: reset the open ones now (the broker process went away)."""
        self._refuse_until = time.monotonic() + seconds
        if drop_existing and self._loop is not None:
            self._loop.call_soon_threadsafe(self._drop_all)

    def leader_delay_after_create(self, seconds: float, count: int | None = None) -> None:
        """After the next ``count`` CreateTopics answers (all if None), the new topics are leaderless
        for ``seconds``, as on Kafka while the controller's decision reaches the brokers (not tansu):
        Metadata LEADER_NOT_AVAILABLE, leader -1; ListOffsets, Fetch, Produce NOT_LEADER_OR_FOLLOWER."""
        with self._lock:
            self._leader_delay = [seconds, count]

    def clear(self) -> None:
        """Drop every fault (the logs stay)."""
        with self._lock:
            self._rules.clear()
            self._leader_delay = None
        self._refuse_until = 0.0

    @property
    def open_connections(self) -> int:  # client connections being proxied now (each with its upstream one)
        return len(self._conns)

    def seen(self, api_key: int | None = None) -> int:
        """How many requests (of ``api_key``) the proxy received, whatever became of them."""
        return sum(1 for p in self.log if api_key is None or p.api_key == api_key)

    def applied(self, kind: str | None = None, api_key: int | None = None) -> list[Applied]:
        return [a for a in self.faults_applied if kind in (None, a.kind) and api_key in (None, a.api_key)]

    def _record(self, request: _Request, kind: str, forwarded: bool, detail: str = "") -> None:
        self.faults_applied.append(Applied(kind, request.api_key, request.version, request.correlation_id,
                                           forwarded, detail))

    def _plan(self, request: _Request) -> dict[str, types.SimpleNamespace]:
        """The rules that apply to a request (the first live one of each kind), counted down."""
        now, chosen, topics = time.monotonic(), {}, MISSING
        with self._lock:
            self._rules = [rule for rule in self._rules
                           if (rule.count is None or rule.count > 0) and (rule.until is None or now < rule.until)]
            for rule in self._rules:
                if rule.api_key != request.api_key or rule.kind in chosen:
                    continue
                if rule.topics is not None:
                    topics = request.topics(self._names) if topics is MISSING else topics
                    if topics is not None and not topics & rule.topics:
                        continue
                chosen[rule.kind] = rule
                if rule.count is not None:
                    rule.count -= 1
        return chosen

    def _drop_all(self) -> None:
        for conn in list(self._conns.values()):
            conn.client.transport.abort()  # a TCP reset: what a client sees from a dead broker
            conn.task.cancel()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if time.monotonic() < self._refuse_until:
            self.refused += 1
            return client_w.transport.abort()
        me = asyncio.current_task()
        self._tasks.add(me)
        try:
            upstream_r, upstream_w = await asyncio.open_connection(self._up_host, self._up_port)
        except (OSError, asyncio.CancelledError):
            self._tasks.discard(me)
            return client_w.transport.abort()
        self._ids += 1
        # queue: requests owed an answer, in order; pending: correlation id -> request forwarded, unanswered
        conn = types.SimpleNamespace(id=self._ids, client=client_w, upstream=upstream_w, task=me, queue=asyncio.Queue(),
                                     pending={})
        self._conns[conn.id] = conn
        tasks = [asyncio.ensure_future(coro) for coro in
                 (self._requests(conn, client_r), self._responses(conn, upstream_r), self._replies(conn))]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._conns.pop(conn.id, None)
            client_w.close()
            upstream_w.close()
            await asyncio.gather(client_w.wait_closed(), upstream_w.wait_closed(), return_exceptions=True)
            self._tasks.discard(me)

    async def _requests(self, conn: types.SimpleNamespace, reader: asyncio.StreamReader) -> None:
        """Client to broker: each request logged, planned, then dropped, answered or forwarded."""
        while (frame := await _read_frame(reader)) is not None:
            request = _Request(frame)
            plan = self._plan(request)
            self.log.append(Passed(conn.id, request.api_key, request.version, request.correlation_id,
                                    request.client_id, tuple(plan)))
            if "cut_request" in plan:
                return self._record(request, "cut_request", False, "connection closed before forwarding")
            request.answer, request.cut = asyncio.get_running_loop().create_future(), "cut_response" in plan
            request.throttle_ms = plan["throttle"].ms if "throttle" in plan else None
            if "delay" in plan:
                request.not_before = time.monotonic() + plan["delay"].seconds
                self._record(request, "delay", True, f"answer held {plan['delay'].seconds:g} s")
            answered = request.acks() != 0
            if (rule := plan.get("fail")) is not None and request.api_key not in READ_ONLY:
                if not answered:
                    return self._record(request, "fail", False, "acks=0 Produce: connection closed, as Kafka does")
                if (answer := self._answer(request, rule.error_code, request.throttle_ms)) is not None:
                    self._record(request, "fail", False, f"answered {rule.error_code.name} by the proxy")
                    if request.throttle_ms is not None:
                        self._record(request, "throttle", False, f"throttle_time_ms={request.throttle_ms}")
                    request.throttle_ms = None
                    request.answer.set_result(answer)
                    conn.queue.put_nowait(request)
                    continue
                self._record(request, "fail", True, f"no kio class for v{request.version}: forwarded unchanged")
            elif rule is not None:
                request.fail = rule
                self._record(request, "fail", True, f"{rule.error_code.name} written into the broker's answer")
            if request.cut:
                self._record(request, "cut_response", True, "forwarded; the answer is cut half-way")
            conn.upstream.write(len(frame).to_bytes(4, "big") + frame)
            await conn.upstream.drain()
            if answered:
                conn.pending[request.correlation_id] = request
                conn.queue.put_nowait(request)

    async def _responses(self, conn: types.SimpleNamespace, reader: asyncio.StreamReader) -> None:
        """Broker to proxy: each answer to the request it answers (by correlation id)."""
        while (frame := await _read_frame(reader)) is not None:
            request = conn.pending.pop(int.from_bytes(frame[:4], "big", signed=True), None)
            if request is None:
                return  # an answer to nothing asked: the stream is not what the proxy thinks, close
            request.answer.set_result(frame)

    async def _replies(self, conn: types.SimpleNamespace) -> None:
        """Proxy to client: the answers in request order, rewritten, held or cut."""
        while True:
            request = await conn.queue.get()
            frame = self._transform(request, await request.answer)
            if (wait := request.not_before - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            data = len(frame).to_bytes(4, "big") + frame
            conn.client.write(data[:len(data) // 2] if request.cut else data)
            await conn.client.drain()
            if request.cut:
                return

    def _transform(self, request: _Request, frame: bytes) -> bytes:
        """The broker's answer with the proxy's address for the broker's and the faults written in."""
        key, faulted = request.api_key, request.fail is not None or request.throttle_ms is not None
        if not (faulted or key == ApiKey.CREATE_TOPICS or request.version >= ADDRESSES.get(key, 1 << 15)):
            return frame
        try:
            schema = load_response_schema(key, request.version)
            header_size = entity_reader(schema.__header_schema__)(frame, 0)[1]
            body = original = entity_reader(schema)(frame, header_size)[0]
        except Exception as exc:  # noqa: BLE001 (KioIndexError, or an answer kio cannot read: passed on as it is)
            if faulted:
                self._record(request, "fail" if request.fail else "throttle", True, f"not applied: {exc}")
            return frame
        self._learn(key, body)
        body = _map(body, self._readdress)
        if request.fail is not None:
            body = _with_error(key, body, request.fail.error_code, request.fail.topics, self._names)
        if request.throttle_ms is not None:
            throttled = hasattr(body, "throttle_time")
            if throttled:
                body = dataclasses.replace(body, throttle_time=datetime.timedelta(milliseconds=request.throttle_ms))
            self._record(request, "throttle", True, f"throttle_time_ms={request.throttle_ms}" if throttled
                         else f"not applied: no throttle time in v{request.version}")
        return frame if body is original else frame[:header_size] + _encode(body)

    def _readdress(self, entity):
        host, port = getattr(entity, "host", None), getattr(entity, "port", None)
        if isinstance(host, str) and host and isinstance(port, int) and port >= 0 and port != self.port:
            return dataclasses.replace(entity, host=self.host, port=self.port)
        return entity

    def _learn(self, key: int, body) -> None:
        """Topic ids from Metadata and CreateTopics answers; leaderless windows after CreateTopics."""
        created = []
        for topic in getattr(body, "topics", ()) if key in (ApiKey.METADATA, ApiKey.CREATE_TOPICS) else ():
            name, topic_id = getattr(topic, "name", None), getattr(topic, "topic_id", None)
            if name and topic_id is not None and topic_id.int:
                self._names[topic_id] = name
            if key == ApiKey.CREATE_TOPICS and name and topic.error_code == ErrorCode.none:
                created.append(name)
        with self._lock:
            delay = self._leader_delay
            if not created or delay is None or delay[1] == 0:
                return
            if delay[1] is not None:
                delay[1] -= 1
        self._add("fail", ApiKey.METADATA, None, delay[0], created, error_code=ErrorCode.leader_not_available)
        for api in (ApiKey.LIST_OFFSETS, ApiKey.FETCH, ApiKey.PRODUCE):
            self._add("fail", api, None, delay[0], created, error_code=ErrorCode.not_leader_or_follower)

    def _answer(self, request: _Request, code: ErrorCode, throttle_ms: int | None) -> bytes | None:
        """The proxy's own answer to a request it does not forward (None: kio cannot build it)."""
        if (payload := request.payload()) is None:  # kio has no class for this version (or cannot read it)
            return None
        schema = load_response_schema(request.api_key, request.version)
        top = {"throttle_time": datetime.timedelta(milliseconds=throttle_ms or 0)}
        if request.api_key in _MIRRORED:  # each topic (and partition) asked, carrying the error
            asked, answered, asked_parts, answered_parts = _MIRRORED[request.api_key]
            topic_cls, topics = _element(schema, answered), []
            for topic in getattr(payload, asked):
                if answered_parts is None:  # CreateTopics: the error is the topic's
                    topics.append(_errored(_blank(topic_cls, **_keys(topic)), code))
                    continue
                part_cls = _element(topic_cls, answered_parts)
                parts = tuple(_errored(_blank(part_cls, **_keys(p)), code) for p in getattr(topic, asked_parts))
                topics.append(_blank(topic_cls, **_keys(topic), **{answered_parts: parts}))
            body = _blank(schema, **top, **{answered: tuple(topics)})
        elif "error_code" in _field_names(schema):
            body = _errored(_blank(schema, **top), code)
        else:
            return None
        return _encode(schema.__header_schema__(correlation_id=request.correlation_id)) + _encode(body)


def new_partition_leader_delay(proxy: KafkaProxy, seconds: float, count: int | None = None) -> None:
    """What Kafka 4.2 does for a moment after CreateTopics and tansu never does: see
    :meth:`KafkaProxy.leader_delay_after_create`."""
    proxy.leader_delay_after_create(seconds, count)


@pytest.fixture
def kafka_proxy(kafka_cluster):
    """A :class:`KafkaProxy` in front of the session's cluster, stopped after the test."""
    with KafkaProxy(kafka_cluster.bootstrap) as proxy:
        yield proxy


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        return await reader.readexactly(int.from_bytes(await reader.readexactly(4), "big", signed=True))
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


def _encode(entity) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def _field_names(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _can_answer(api_key: int) -> bool:
    """Whether the proxy can make up an error answer for ``api_key`` (in kio's newest version)."""
    name = api_key_map.get(api_key)
    return api_key in _MIRRORED or (name is not None and "error_code" in _field_names(
        load_response_schema(api_key, max(schema_name_map[name]))))


def _keys(entity) -> dict:  # the fields naming a topic or partition, copied from a request's entry to the answer's
    return {k: getattr(entity, k) for k in ("name", "topic_id", "index", "partition_index") if hasattr(entity, k)}


def _unwrap(tp) -> tuple[object, bool]:
    """(the type, whether it was ``X | None``)."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        rest = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        return rest[0], len(rest) < len(typing.get_args(tp))
    return tp, False


def _element(cls, name: str):
    """The entity class in the tuple field ``name`` of ``cls``."""
    (f,) = [f for f in dataclasses.fields(cls) if f.name == name]
    return typing.get_args(_unwrap(f.type)[0])[0]


_EMPTY = {"string": "", "bytes": b"", "records": b"", "bool": False, "float64": 0.0, "uuid": uuid.UUID(int=0),
          "timedelta_i32": datetime.timedelta(0), "timedelta_i64": datetime.timedelta(0)}


def _blank(cls, **given):
    """An instance of a kio class: ``given`` (those the class has), defaults, else empty values."""
    values = {}
    for f in dataclasses.fields(cls):
        tp, optional = _unwrap(f.type)
        if f.name in given and (given[f.name] is not None or optional):
            values[f.name] = given[f.name]
        elif f.default is not MISSING or f.default_factory is not MISSING:
            continue
        elif typing.get_origin(tp) is tuple:
            values[f.name] = ()
        elif f.metadata.get("kafka_type") == "error_code":
            values[f.name] = ErrorCode.none
        elif optional:
            values[f.name] = None
        else:
            values[f.name] = _blank(tp) if dataclasses.is_dataclass(tp) else _EMPTY.get(f.metadata.get("kafka_type"), 0)
    return cls(**values)


def _map(value, fn):
    """``value`` with ``fn`` applied to every entity in it, bottom up (the same object if unchanged)."""
    if isinstance(value, tuple):
        mapped = tuple(_map(item, fn) for item in value)
        return value if all(a is b for a, b in zip(mapped, value)) else mapped
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return value
    changes = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if isinstance(item, tuple) or (dataclasses.is_dataclass(item) and not isinstance(item, type)):
            if (mapped := _map(item, fn)) is not item:
                changes[f.name] = mapped
    return fn(dataclasses.replace(value, **changes) if changes else value)


def _errored(entity, code: ErrorCode):
    """An entry carrying ``code``, its data reset as Kafka leaves it on an error."""
    names = _field_names(type(entity))
    return dataclasses.replace(entity, error_code=code, **{k: v for k, v in _ERROR_RESETS.items() if k in names})


def _topic_name(entity, names: dict) -> str | None:
    name = getattr(entity, "name", None) or getattr(entity, "topic", None)
    return name or names.get(getattr(entity, "topic_id", None))


def _with_error(key: int, body, code: ErrorCode, topics: frozenset[str] | None, names: dict):
    """The broker's answer to a read-only request with ``code`` written in where Kafka puts it."""
    if key in (ApiKey.METADATA, ApiKey.LIST_OFFSETS, ApiKey.FETCH):
        def one(topic):
            if topics is not None and _topic_name(topic, names) not in topics:
                return topic
            if key == ApiKey.METADATA and code == ErrorCode.unknown_topic_or_partition:
                return dataclasses.replace(topic, error_code=code, partitions=())  # as for a topic that is not there
            return dataclasses.replace(topic, partitions=tuple(_errored(p, code) for p in topic.partitions))
        attr = "responses" if key == ApiKey.FETCH else "topics"
        return dataclasses.replace(body, **{attr: tuple(one(t) for t in getattr(body, attr))})
    if key == ApiKey.FIND_COORDINATOR and hasattr(body, "coordinators"):
        return dataclasses.replace(body, coordinators=tuple(_errored(c, code) for c in body.coordinators))
    if hasattr(body, "error_code"):
        return _errored(body, code)
    return _map(body, lambda e: _errored(e, code) if hasattr(e, "error_code") else e)
