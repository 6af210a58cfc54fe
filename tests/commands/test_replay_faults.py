"""``seglog replay`` through a fault-injecting proxy (tests/kafka_proxy.py) in front of the test
broker: what a real Kafka does while it settles, and what tansu never does.

Each case ends one of two ways, and nothing else is accepted:

* **exactly once**: exit 0, and every source record read back from the destination once, in
  order, compared record for record with what seglog's engine decodes from the broker-written
  segments (read directly from the broker, not through the proxy);
* **one clear line and exit 7** (an error that is not retriable, or a retriable one still there
  at ``--timeout``), then the same command run again without the fault resumes exactly: the
  same record-for-record comparison.

The retriable errors are retried as Kafka's clients retry them, with one "waiting for ..." line.
The cases cover the plan (Metadata, DescribeConfigs), the apply (CreateTopics and the leaders
it waits for, ListOffsets, Produce), the resume (ListOffsets and the Fetches that read the
destination back) and ``--commit-groups`` (FindCoordinator, DescribeGroups, OffsetCommit).
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.commands.test_replay_cli import DATA, assert_same_records, needs_corpus, seglog
from tests.kafka_proxy import ApiKey, ErrorCode, new_partition_leader_delay

pytestmark = [pytest.mark.corpus, needs_corpus]

NOT_LEADER = ErrorCode.not_leader_or_follower
LEADER_NOT_AVAILABLE = ErrorCode.leader_not_available
UNKNOWN_TOPIC_OR_PARTITION = ErrorCode.unknown_topic_or_partition
REQUEST_TIMED_OUT = ErrorCode.request_timed_out
NOT_COORDINATOR = ErrorCode.not_coordinator
COORDINATOR_LOAD_IN_PROGRESS = ErrorCode.coordinator_load_in_progress
TOPIC_AUTHORIZATION_FAILED = ErrorCode.topic_authorization_failed


@pytest.fixture
def source(tmp_path):
    """plain-1 of the broker-written corpus, beside its log dir's __cluster_metadata (the
    topic's partition count and configs for --create-topics) and __consumer_offsets."""
    import shutil

    target = tmp_path / "data"
    target.mkdir()
    for name in ["plain-1", "__cluster_metadata-0", "meta.properties"] + [
            p.name for p in DATA.iterdir() if p.name.startswith("__consumer_offsets-")]:
        if (DATA / name).is_dir():
            shutil.copytree(DATA / name, target / name)
        elif (DATA / name).exists():
            shutil.copy2(DATA / name, target / name)
    return target


def replay(source, proxy, dest, *extra, timeout="20", cwd):
    return seglog("replay", source / "plain-1", "--bootstrap-server", proxy.bootstrap, "--topic-map",
                  f"plain:{dest}", "--timeout", timeout, *extra, cwd=cwd)


def exactly_once(source, cluster, dest):
    assert_same_records(source, cluster, "plain", 1, dest)


def one_line_exit_7(result, *words):
    assert result.returncode == 7, (result.returncode, result.stdout, result.stderr)
    errors = [line for line in result.stderr.strip().splitlines() if not line.startswith("seglog: waiting for ")]
    assert len(errors) == 1 and errors[0].startswith("seglog: "), result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    for word in words:
        assert word in errors[0], errors[0]


def waited(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("seglog: waiting for ")]


# -- the case the issue met on a real Kafka: no leader for a moment after CreateTopics ------------

def test_a_new_topics_leader_election_is_waited_for(kafka_cluster, kafka_proxy, source, tmp_path):
    """Kafka 4.2 elects a new topic's leaders a moment after CreateTopics returns: Metadata shows
    LEADER_NOT_AVAILABLE and ListOffsets/Produce answer NOT_LEADER_OR_FOLLOWER. replay waits for
    every new partition's leader, then sends everything once."""
    dest = kafka_cluster.new_topic("fresh")
    new_partition_leader_delay(kafka_proxy, 3.0)
    started = time.monotonic()
    result = replay(source, kafka_proxy, dest, "--create-topics", "--apply", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started >= 3.0  # it did wait
    assert any(line.startswith(f"seglog: waiting for a leader of {dest}-") for line in waited(result)), result.stderr
    assert len(waited(result)) <= 3, result.stderr  # one line per thing awaited, not one per retry
    assert kafka_proxy.applied("fail", ApiKey.METADATA), "the proxy's leaderless window was never met"
    exactly_once(source, kafka_cluster, dest)


# -- the apply under each fault ------------------------------------------------------------------

APPLY_FAULTS = {
    "listoffsets-not-leader": lambda p: p.fail(ApiKey.LIST_OFFSETS, NOT_LEADER, count=3),
    "listoffsets-unknown-partition": lambda p: p.fail(ApiKey.LIST_OFFSETS, UNKNOWN_TOPIC_OR_PARTITION, count=2),
    "listoffsets-timed-out": lambda p: p.fail(ApiKey.LIST_OFFSETS, REQUEST_TIMED_OUT, count=2),
    "metadata-leader-not-available": lambda p: p.fail(ApiKey.METADATA, LEADER_NOT_AVAILABLE, seconds=1.5),
    "createtopics-timed-out": lambda p: p.fail(ApiKey.CREATE_TOPICS, REQUEST_TIMED_OUT, count=1),
    "createtopics-throttled": lambda p: p.fail(ApiKey.CREATE_TOPICS, ErrorCode.throttling_quota_exceeded, count=2),
    "createtopics-cut-response": lambda p: p.cut(ApiKey.CREATE_TOPICS, "response", count=1),
    "produce-not-leader": lambda p: p.fail(ApiKey.PRODUCE, NOT_LEADER, count=3),
    "produce-timed-out": lambda p: p.fail(ApiKey.PRODUCE, REQUEST_TIMED_OUT, count=2),
    "produce-cut-request": lambda p: p.cut(ApiKey.PRODUCE, "request", count=2),
    "produce-cut-response": lambda p: p.cut(ApiKey.PRODUCE, "response", count=1),
    "produce-delayed": lambda p: p.delay(ApiKey.PRODUCE, 1.0, count=2),
    "produce-throttled": lambda p: p.throttle(ApiKey.PRODUCE, 300, count=3),
    "metadata-delayed": lambda p: p.delay(ApiKey.METADATA, 1.0, count=2),
    "broker-restarting-at-start": lambda p: p.refuse(1.5),
}


@pytest.mark.parametrize("fault", sorted(APPLY_FAULTS))
def test_apply_under_a_fault_ends_exactly_once(kafka_cluster, kafka_proxy, source, tmp_path, fault):
    dest = kafka_cluster.new_topic(fault)
    APPLY_FAULTS[fault](kafka_proxy)
    result = replay(source, kafka_proxy, dest, "--create-topics", "--apply", cwd=tmp_path)
    if fault != "broker-restarting-at-start":
        assert kafka_proxy.faults_applied, f"{fault}: the fault was never met"
    if result.returncode == 7:  # allowed: one line, then the run again resumes exactly
        one_line_exit_7(result)
        kafka_proxy.clear()
        result = replay(source, kafka_proxy, dest, "--create-topics", "--apply", cwd=tmp_path)
    assert result.returncode == 0, (fault, result.stdout, result.stderr)
    assert "exactly once" in result.stdout
    exactly_once(source, kafka_cluster, dest)


def test_a_broker_restarting_mid_replay_loses_and_repeats_nothing(kafka_cluster, kafka_proxy, source, tmp_path):
    """Connections reset and refused for 2 s after the first Produce requests: the idempotent
    producer reconnects and sends again, each batch stored once."""
    dest = kafka_cluster.new_topic("restart")

    def restart_after_first_produce():
        deadline = time.monotonic() + 30
        while kafka_proxy.seen(ApiKey.PRODUCE) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        kafka_proxy.refuse(2.0)

    watcher = threading.Thread(target=restart_after_first_produce, daemon=True)
    watcher.start()
    result = replay(source, kafka_proxy, dest, "--create-topics", "--apply", "--compression", "none", cwd=tmp_path)
    watcher.join()
    assert kafka_proxy.refused > 0 or kafka_proxy.seen(ApiKey.PRODUCE) >= 2
    if result.returncode == 7:
        one_line_exit_7(result)
        kafka_proxy.clear()
        result = replay(source, kafka_proxy, dest, "--create-topics", "--apply", "--compression", "none",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    exactly_once(source, kafka_cluster, dest)


# -- errors that do not go away: one line, exit 7, then an exact resume ---------------------------

@pytest.mark.parametrize("fault", ["listoffsets-not-authorized", "listoffsets-not-leader-past-timeout",
                                   "produce-not-authorized"])
def test_an_error_that_stays_is_one_line_then_the_run_again_resumes_exactly(kafka_cluster, kafka_proxy, source,
                                                                           tmp_path, fault):
    dest = kafka_cluster.create_topic(kafka_cluster.new_topic(fault), partitions=3)
    if fault == "listoffsets-not-authorized":
        kafka_proxy.fail(ApiKey.LIST_OFFSETS, TOPIC_AUTHORIZATION_FAILED)
    elif fault == "listoffsets-not-leader-past-timeout":
        kafka_proxy.fail(ApiKey.LIST_OFFSETS, NOT_LEADER)
    else:
        kafka_proxy.fail(ApiKey.PRODUCE, TOPIC_AUTHORIZATION_FAILED, topics=[dest])
    started = time.monotonic()
    failed = replay(source, kafka_proxy, dest, "--apply", timeout="3", cwd=tmp_path)
    one_line_exit_7(failed, dest)
    if fault == "listoffsets-not-leader-past-timeout":
        assert time.monotonic() - started >= 3.0  # retried until --timeout, then given up
        assert waited(failed) == [f"seglog: waiting for a leader of {dest}-1 (NOT_LEADER_OR_FOLLOWER) ..."]
    else:
        assert waited(failed) == []  # not retriable: at once
    kafka_proxy.clear()
    resumed = replay(source, kafka_proxy, dest, "--apply", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    exactly_once(source, kafka_cluster, dest)


# -- the plan: the same answer with and without faults ---------------------------------------------

@pytest.mark.parametrize("fault", ["metadata-timed-out", "describeconfigs-timed-out", "metadata-cut",
                                   "describeconfigs-delayed"])
def test_the_plan_is_the_same_under_a_fault(kafka_cluster, kafka_proxy, source, tmp_path, fault):
    dest = kafka_cluster.create_topic(kafka_cluster.new_topic("plan"), partitions=3)
    clean = replay(source, kafka_proxy, dest, "--format", "json", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    {"metadata-timed-out": lambda: kafka_proxy.fail(ApiKey.METADATA, REQUEST_TIMED_OUT, count=2),
     "describeconfigs-timed-out": lambda: kafka_proxy.fail(ApiKey.DESCRIBE_CONFIGS, REQUEST_TIMED_OUT, count=2),
     "metadata-cut": lambda: kafka_proxy.cut(ApiKey.METADATA, "response", count=1),
     "describeconfigs-delayed": lambda: kafka_proxy.delay(ApiKey.DESCRIBE_CONFIGS, 1.0, count=1)}[fault]()
    faulty = replay(source, kafka_proxy, dest, "--format", "json", cwd=tmp_path)
    assert faulty.returncode == 0, faulty.stderr
    assert kafka_proxy.faults_applied, "the fault was never met"
    assert json.loads(faulty.stdout)["plan"] == json.loads(clean.stdout)["plan"]


# -- the resume: the destination read back through faults ------------------------------------------

@pytest.mark.parametrize("fault", ["fetch-not-leader", "fetch-cut", "listoffsets-not-leader"])
def test_a_killed_replay_resumes_exactly_through_faults(kafka_cluster, kafka_proxy, source, tmp_path, fault):
    dest = kafka_cluster.new_topic("resume")
    killed = seglog("replay", source / "plain-1", "--bootstrap-server", kafka_proxy.bootstrap, "--topic-map",
                    f"plain:{dest}", "--create-topics", "--apply", "--timeout", "20", cwd=tmp_path,
                    env={"SEGLOG_TEST_REPLAY_KILL_AT": "ack:1500"})
    assert killed.returncode == -9, killed.stderr
    {"fetch-not-leader": lambda: kafka_proxy.fail(ApiKey.FETCH, NOT_LEADER, count=3),
     "fetch-cut": lambda: kafka_proxy.cut(ApiKey.FETCH, "response", count=1),
     "listoffsets-not-leader": lambda: kafka_proxy.fail(ApiKey.LIST_OFFSETS, NOT_LEADER, count=3)}[fault]()
    resumed = replay(source, kafka_proxy, dest, "--create-topics", "--apply", cwd=tmp_path)
    if resumed.returncode == 7:
        one_line_exit_7(resumed)
        kafka_proxy.clear()
        resumed = replay(source, kafka_proxy, dest, "--create-topics", "--apply", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "(resuming)" in resumed.stdout
    assert kafka_proxy.faults_applied, "the fault was never met"
    exactly_once(source, kafka_cluster, dest)


# -- --commit-groups: the coordinator moving or loading ---------------------------------------------

GROUP_FAULTS = {
    "offsetcommit-not-coordinator": lambda p: p.fail(ApiKey.OFFSET_COMMIT, NOT_COORDINATOR, count=2),
    "offsetcommit-loading": lambda p: p.fail(ApiKey.OFFSET_COMMIT, COORDINATOR_LOAD_IN_PROGRESS, count=2),
    "findcoordinator-loading": lambda p: p.fail(ApiKey.FIND_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, count=2),
    "findcoordinator-not-available": lambda p: p.fail(ApiKey.FIND_COORDINATOR,
                                                       ErrorCode.coordinator_not_available, count=2),
    "describegroups-loading": lambda p: (p.fail(ApiKey.DESCRIBE_GROUPS, COORDINATOR_LOAD_IN_PROGRESS, count=2),
                                         p.fail(ApiKey.CONSUMER_GROUP_DESCRIBE, COORDINATOR_LOAD_IN_PROGRESS,
                                                count=2)),
}


@pytest.mark.parametrize("fault", sorted(GROUP_FAULTS))
def test_commit_groups_through_a_coordinator_that_moves_or_loads(kafka_cluster, kafka_proxy, source, tmp_path,
                                                                  fault):
    dest = kafka_cluster.new_topic("groups")
    GROUP_FAULTS[fault](kafka_proxy)
    result = replay(source, kafka_proxy, dest, "--create-topics", "--apply", "--commit-groups", cwd=tmp_path)
    if result.returncode == 7:
        one_line_exit_7(result)
        kafka_proxy.clear()
        result = replay(source, kafka_proxy, dest, "--create-topics", "--apply", "--commit-groups", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert kafka_proxy.faults_applied, f"{fault}: the fault was never met"
    exactly_once(source, kafka_cluster, dest)
    rows = [line.split(",") for line in next(tmp_path.glob("seglog-replay-*.groups.csv")).read_text().splitlines()]
    assert rows
    for group, topic, partition, offset in rows:
        assert kafka_cluster.committed(group, topic, int(partition)) == int(offset)
