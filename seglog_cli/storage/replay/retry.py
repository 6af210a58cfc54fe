"""Retrying what Kafka's own clients retry, until a deadline.

A real cluster makes clients wait: a partition has no leader for a moment after CreateTopics,
after a leader election, a broker restart or a reassignment; a group coordinator is loading
its log; a quota throttles topic creation. Kafka's clients answer these errors (the
``RetriableException`` family of ``org.apache.kafka.common.errors``, and a lost connection)
by asking again after a back-off, until ``default.api.timeout.ms`` (60 s) has passed. Every
request seglog sends to a cluster goes through :class:`Waiter` the same way, so a cluster that
has just had an election is met as Kafka's tools meet it; any other error fails at once, one
line (exit status 7).

The back-off is Kafka's ``ExponentialBackoff`` with the clients' defaults: ``retry.backoff.ms``
100 ms, doubled each attempt up to ``retry.backoff.max.ms`` 1 s, with 20 % jitter. When no
error happens nothing here costs anything: no sleep, no extra request.
"""

from __future__ import annotations

import random
import time
from typing import Callable

DEFAULT_API_TIMEOUT_S = 60.0  # default.api.timeout.ms: what Kafka's admin tools wait by default
RETRY_BACKOFF_S = 0.1  # retry.backoff.ms
RETRY_BACKOFF_MAX_S = 1.0  # retry.backoff.max.ms
JITTER = 0.2  # CommonClientConfigs.RETRY_BACKOFF_JITTER

# the protocol's errors whose Java exception is a RetriableException (Errors.java, by Kafka's
# names; librdkafka names a few otherwise, so they are matched by code); these are the errors
# a cluster answers while it settles
RETRIABLE = {
    "CORRUPT_MESSAGE": 2,  # CorruptRecordException: a batch damaged on the way is sent again
    "UNKNOWN_TOPIC_OR_PARTITION": 3,  # InvalidMetadataException: the metadata has not caught up
    "LEADER_NOT_AVAILABLE": 5,
    "NOT_LEADER_OR_FOLLOWER": 6,
    "REQUEST_TIMED_OUT": 7,
    "REPLICA_NOT_AVAILABLE": 9,
    "NETWORK_EXCEPTION": 13,
    "COORDINATOR_LOAD_IN_PROGRESS": 14,
    "COORDINATOR_NOT_AVAILABLE": 15,
    "NOT_COORDINATOR": 16,
    "NOT_ENOUGH_REPLICAS": 19,
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20,
    "NOT_CONTROLLER": 41,
    "CONCURRENT_TRANSACTIONS": 51,
    "KAFKA_STORAGE_ERROR": 56,
    "FETCH_SESSION_ID_NOT_FOUND": 70,
    "INVALID_FETCH_SESSION_EPOCH": 71,
    "LISTENER_NOT_FOUND": 72,
    "FENCED_LEADER_EPOCH": 74,
    "UNKNOWN_LEADER_EPOCH": 75,
    "OFFSET_NOT_AVAILABLE": 78,
    "PREFERRED_LEADER_NOT_AVAILABLE": 80,
    "UNSTABLE_OFFSET_COMMIT": 88,
    "THROTTLING_QUOTA_EXCEEDED": 89,
    "UNKNOWN_TOPIC_ID": 100,
    "INCONSISTENT_TOPIC_ID": 103,
}
# librdkafka's own (negative) codes for the same situations seen from the client: a connection
# lost or refused (a broker restarting), a request that got no answer in time, a coordinator or
# a partition the client's metadata does not know yet
LOCAL_RETRIABLE = {"_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT", "_WAIT_COORD", "_UNKNOWN_PARTITION",
                   "_UNKNOWN_TOPIC"}
_LEADER = {"LEADER_NOT_AVAILABLE", "NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PARTITION", "FENCED_LEADER_EPOCH",
           "UNKNOWN_LEADER_EPOCH", "REPLICA_NOT_AVAILABLE", "OFFSET_NOT_AVAILABLE", "KAFKA_STORAGE_ERROR",
           "PREFERRED_LEADER_NOT_AVAILABLE", "NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
           "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC", "UNKNOWN_TOPIC_ID", "INCONSISTENT_TOPIC_ID"}
_COORDINATOR = {"COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "_WAIT_COORD",
                "UNSTABLE_OFFSET_COMMIT"}


def kafka_error(exc: BaseException):
    """The ``KafkaError`` a confluent-kafka exception carries (or None)."""
    args = getattr(exc, "args", ())
    error = args[0] if args else None
    return error if hasattr(error, "name") and hasattr(error, "code") else None


_KAFKA_NAMES = {code: name for name, code in RETRIABLE.items()}


def error_name(error) -> str:
    """Kafka's name of a ``KafkaError`` (``NOT_LEADER_OR_FOLLOWER``), else librdkafka's
    (``_TRANSPORT``)."""
    try:
        return _KAFKA_NAMES.get(error.code()) or error.name()
    except Exception:  # noqa: BLE001 - an error object without a name is no retriable one
        return ""


def is_retriable(error) -> bool:
    """Whether Kafka's clients would ask again after ``error`` (a ``KafkaError``)."""
    if error is None:
        return False
    name = error_name(error)
    if name in RETRIABLE or name in LOCAL_RETRIABLE:
        return True
    try:
        return bool(error.retriable()) and not error.fatal()
    except Exception:  # noqa: BLE001
        return False


_CONNECTION = {"_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION",
               "NOT_CONTROLLER"}


def waiting_for(name: str, subject: str) -> str:
    """What a retry waits for, in words: ``a leader of orders-2``, ``the coordinator of group g``,
    ``the cluster at 127.0.0.1:9092``."""
    if name in _LEADER:
        return f"a leader of {subject}"
    if name in _COORDINATOR:
        return f"the coordinator of {subject}"
    if name == "THROTTLING_QUOTA_EXCEEDED":
        return f"the cluster's quota to allow {subject}"
    if name in _CONNECTION:
        return f"the cluster to answer about {subject}"
    return f"the cluster to settle {subject}"


class Backoff:
    """Kafka's ``ExponentialBackoff``: ``initial * 2**attempt``, at most ``maximum``, each
    value moved by up to ``jitter`` of itself either way."""

    def __init__(self, initial: float = RETRY_BACKOFF_S, maximum: float = RETRY_BACKOFF_MAX_S,
                 jitter: float = JITTER, rng: random.Random | None = None):
        self.initial, self.maximum, self.jitter = initial, maximum, jitter
        self.attempts = 0
        self._rng = rng or random.Random()

    def next(self) -> float:
        base = min(self.maximum, self.initial * (2 ** self.attempts))
        self.attempts += 1
        if self.jitter:
            base *= 1 + self._rng.uniform(-self.jitter, self.jitter)
        return base


class Waiter:
    """One request's retries: a deadline ``timeout`` seconds from now, Kafka's back-off, and
    one line through ``on_wait`` the first time it waits for each thing."""

    def __init__(self, timeout: float, on_wait: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.timeout = timeout
        self.deadline = clock() + timeout
        self.backoff = Backoff()
        self.retries = 0
        self._on_wait, self._clock, self._sleep = on_wait, clock, sleep
        self._said: set[str] = set()

    def remaining(self, floor: float = 0.5) -> float:
        """Seconds left (at least ``floor``: a request needs some time to be answered at all)."""
        return max(floor, self.deadline - self._clock())

    def expired(self) -> bool:
        return self._clock() >= self.deadline

    def wait(self, error, subject: str, what: str | None = None) -> bool:
        """After ``error`` met asking about ``subject``: False when it is not retriable or the
        deadline has passed (the caller fails), else True after sleeping the back-off. ``what``
        words what is awaited (default: :func:`waiting_for`)."""
        if not is_retriable(error):
            return False
        left = self.deadline - self._clock()
        if left <= 0:
            return False
        name = error_name(error)
        what = what or waiting_for(name, subject)
        if what not in self._said:
            self._said.add(what)
            if self._on_wait is not None:
                self._on_wait(f"waiting for {what} ({name}) ...")
        self.retries += 1
        self._sleep(min(self.backoff.next(), left))
        return True


__all__ = ["Backoff", "DEFAULT_API_TIMEOUT_S", "LOCAL_RETRIABLE", "RETRIABLE", "Waiter", "error_name",
           "is_retriable", "kafka_error", "waiting_for"]
