"""The retry rules replay's requests follow: Kafka's retriable errors, its back-off, a deadline,
and one line while waiting."""

from __future__ import annotations

import random

import pytest
from confluent_kafka import KafkaError

from seglog_cli.storage.replay.retry import (DEFAULT_API_TIMEOUT_S, RETRIABLE, Backoff, Waiter, error_name,
                                             is_retriable, waiting_for)


class FakeClock:
    def __init__(self):
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.mark.parametrize("name", ["NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION",
                                  "REQUEST_TIMED_OUT", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
                                  "COORDINATOR_NOT_AVAILABLE", "THROTTLING_QUOTA_EXCEEDED", "NOT_ENOUGH_REPLICAS",
                                  "FENCED_LEADER_EPOCH", "KAFKA_STORAGE_ERROR"])
def test_kafkas_retriable_errors_are_retried_by_kafkas_names(name):
    error = KafkaError(RETRIABLE[name])
    assert is_retriable(error) and error_name(error) == name  # librdkafka says NOT_LEADER_FOR_PARTITION


@pytest.mark.parametrize("code", [KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT])
def test_a_lost_connection_or_a_request_without_answer_is_retried(code):
    assert is_retriable(KafkaError(code))


@pytest.mark.parametrize("code", [36, 29, 30, 31, 58, 87, 42, 37, KafkaError._PARTITION_EOF, KafkaError._INVALID_ARG])
def test_what_retrying_cannot_change_fails_at_once(code):
    """TOPIC_ALREADY_EXISTS, TOPIC/GROUP/CLUSTER_AUTHORIZATION_FAILED, SASL_AUTHENTICATION_FAILED,
    INVALID_RECORD, INVALID_REQUEST, INVALID_PARTITIONS: one line at once, no waiting."""
    assert not is_retriable(KafkaError(code))
    clock = FakeClock()
    assert Waiter(60, clock=clock, sleep=clock.sleep).wait(KafkaError(code), "t-0") is False
    assert clock.slept == []


def test_the_back_off_is_kafkas_exponential_one():
    """retry.backoff.ms 100 doubling to retry.backoff.max.ms 1000, each within 20 % jitter."""
    plain = Backoff(jitter=0)
    assert [round(plain.next(), 3) for _ in range(7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    jittered = Backoff(rng=random.Random(3))
    for expected in [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]:
        assert expected * 0.8 <= jittered.next() <= expected * 1.2


def test_a_waiter_retries_until_its_deadline_then_gives_up():
    clock, lines = FakeClock(), []
    waiter = Waiter(5.0, lines.append, clock=clock, sleep=clock.sleep)
    error = KafkaError(RETRIABLE["NOT_LEADER_OR_FOLLOWER"])
    attempts = 0
    while waiter.wait(error, "fresh1-2"):
        attempts += 1
    assert clock.now >= 1005.0 and sum(clock.slept) <= 5.0 + 1e-9
    assert 5 < attempts < 20  # backed off, not a busy loop
    assert lines == ["waiting for a leader of fresh1-2 (NOT_LEADER_OR_FOLLOWER) ..."]  # said once


def test_each_thing_awaited_is_said_once():
    clock, lines = FakeClock(), []
    waiter = Waiter(60, lines.append, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        waiter.wait(KafkaError(RETRIABLE["COORDINATOR_LOAD_IN_PROGRESS"]), "group orders-app")
        waiter.wait(KafkaError(RETRIABLE["LEADER_NOT_AVAILABLE"]), "orders-0")
    assert lines == ["waiting for the coordinator of group orders-app (COORDINATOR_LOAD_IN_PROGRESS) ...",
                     "waiting for a leader of orders-0 (LEADER_NOT_AVAILABLE) ..."]


def test_no_fault_costs_nothing():
    clock = FakeClock()
    waiter = Waiter(60, clock=clock, sleep=clock.sleep)
    assert waiter.retries == 0 and clock.slept == [] and not waiter.expired()


def test_the_default_deadline_is_kafkas_default_api_timeout():
    assert DEFAULT_API_TIMEOUT_S == 60.0


def test_what_is_awaited_in_words():
    assert waiting_for("NOT_LEADER_OR_FOLLOWER", "t-1") == "a leader of t-1"
    assert waiting_for("NOT_COORDINATOR", "group g") == "the coordinator of group g"
    assert waiting_for("_TRANSPORT", "topic t") == "the cluster to answer about topic t"
