"""The parts of replay that need no cluster: the partitioner, the progress file's offset map and
its atomic, locked file, the client properties' translation, transaction outcomes."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings, strategies as st

from seglog_cli.storage.log.errors import CannotWriteError, UnreadableInputError
from seglog_cli.storage.replay.cluster import ClientConfigError, client_config
from seglog_cli.storage.replay.groups import reset_commands, reset_csv, translate
from seglog_cli.storage.replay.partitioner import murmur2, partition_for_key
from seglog_cli.storage.replay.progress import Progress, ProgressMismatchError
from seglog_cli.storage.replay.sources import TxnOutcomes

# Kafka's UtilsTest.testMurmur2: the signed 32-bit hash Java computes
KAFKA_VECTORS = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
                 b"a-little-bit-longer-string": -1486304829,
                 b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}


@pytest.mark.parametrize("key", list(KAFKA_VECTORS))
def test_murmur2_matches_kafkas_vectors(key):
    assert murmur2(key) == KAFKA_VECTORS[key]


@given(st.binary(max_size=64), st.integers(1, 1000))
@settings(max_examples=300, deadline=None)
def test_the_partition_of_a_key_matches_kafka_python(key, partitions):
    from kafka.partitioner.default import murmur2 as independent
    assert partition_for_key(key, partitions) == (independent(key) & 0x7FFFFFFF) % partitions


def test_progress_runs_map_source_offsets_to_destination_offsets(tmp_path):
    progress = Progress(tmp_path / "p.json", {"x": 1})
    dest = progress.destination("t", 0, 100)
    source = progress.source("s", 0)
    for src, offset in ((0, 100), (1, 101), (2, 102), (5, 103), (6, 104), (9, 106)):  # gaps both sides
        source.add(src, dest, offset)
    assert source.runs == [[0, 0, 100, 3], [5, 0, 103, 2], [9, 0, 106, 1]]
    assert source.delivered == {0: 9}
    # the first replayed record at or after a committed offset
    assert [source.first_at_or_after(dest, o) for o in (0, 2, 3, 5, 7, 9, 10, 50)] == [100, 102, 103, 103, 106,
                                                                                      106, 107, 107]
    assert source.first_at_or_after(1, 0) is None


def test_progress_is_saved_atomically_and_read_back(tmp_path):
    path = tmp_path / "p.json"
    progress = Progress.open(path, {"sources": ["a"]})
    assert not progress.existed
    dest = progress.destination("t", 3, 7)
    progress.source("s", 3).add(10, dest, 7)
    progress.destinations[dest].end = 8  # as the sender notes each acknowledgement
    progress.save()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    again = Progress.open(path, {"sources": ["a"]})
    assert again.existed and again.destinations[0].end == 8 and again.sources["s-3"].runs == [[10, 0, 7, 1]]
    with pytest.raises(ProgressMismatchError, match="belongs to another replay .*sources"):
        Progress.open(path, {"sources": ["b"]})
    path.write_text("{not json")
    with pytest.raises(UnreadableInputError, match="not a readable progress file"):
        Progress.open(path, {"sources": ["a"]})


def test_the_progress_file_is_locked_and_never_written_through_a_link(tmp_path):
    first = Progress(tmp_path / "p.json", {})
    first.lock()
    try:
        with pytest.raises(CannotWriteError, match="another seglog replay"):
            pid = os.fork()
            if pid == 0:  # another process: lockf locks are per process
                try:
                    Progress(tmp_path / "p.json", {}).lock()
                    os._exit(0)
                except CannotWriteError:
                    os._exit(17)
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) == 17:
                raise CannotWriteError("another seglog replay (child saw the lock)")
    finally:
        first.unlock()
    target = tmp_path / "elsewhere.json"
    target.write_text("keep")
    (tmp_path / "link.json").symlink_to(target)
    with pytest.raises(CannotWriteError, match="symbolic link"):
        Progress(tmp_path / "link.json", {}).save()
    assert target.read_text() == "keep"


def test_group_offsets_translate_through_the_runs_and_print_kafkas_commands(tmp_path):
    progress = Progress(tmp_path / "p.json", {})
    dest = progress.destination("new", 0, 500)
    for src in range(10, 20):
        progress.source("old", 0).add(src, dest, 500 + src - 10)
    committed = {("g1", "old", 0): 15, ("g2", "old", 0): 3, ("g3", "old", 0): 99, ("g4", "other", 0): 1}
    translated = translate(committed, progress)
    assert [(t.group, t.topic, t.partition, t.offset) for t in translated] == [
        ("g1", "new", 0, 505), ("g2", "new", 0, 500), ("g3", "new", 0, 510)]
    assert reset_csv(translated).splitlines()[0] == "g1,new,0,505"
    import csv
    odd = translate({('a,"b"', "old", 0): 12}, progress)
    assert next(csv.reader([reset_csv(odd)])) == ['a,"b"', "new", "0", "502"]
    assert reset_commands(translated, "h:9092")[0] == (
        "kafka-consumer-groups.sh --bootstrap-server h:9092 --group g1 --reset-offsets --topic new:0 "
        "--to-offset 505 --execute")


def test_java_client_properties_become_librdkafka_settings():
    config = client_config("h:9092", {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="alice" password="s\\"cret";',
        "ssl.truststore.type": "PEM", "ssl.truststore.location": "/ca.pem",
        "ssl.endpoint.identification.algorithm": "", "key.serializer": "x.Y"})
    assert config["security.protocol"] == "SASL_SSL" and config["sasl.mechanism"] == "SCRAM-SHA-512"
    assert config["sasl.username"] == "alice" and config["sasl.password"] == 's\\"cret'
    assert config["ssl.ca.location"] == "/ca.pem" and config["ssl.endpoint.identification.algorithm"] == "none"
    assert "key.serializer" not in config and config["enable.idempotence"] == "true" and config["acks"] == "all"
    with pytest.raises(ClientConfigError, match="JKS trust store"):
        client_config("h:9092", {"ssl.truststore.location": "/t.jks"})
    with pytest.raises(ClientConfigError, match="Kerberos is not built"):
        client_config("h:9092", {"sasl.mechanism": "GSSAPI"})
    with pytest.raises(ClientConfigError, match="exactly once"):
        client_config("h:9092", {"enable.idempotence": "false"})


def test_transaction_outcomes_follow_each_producers_markers():
    outcomes = TxnOutcomes([(7, 10, 20, "committed"), (7, 30, 35, "aborted"), (8, 12, None, "open")])
    assert [outcomes.state(7, o) for o in (9, 10, 19, 21, 30, 35, 36)] == [
        "unknown", "committed", "committed", "unknown", "aborted", "aborted", "unknown"]
    assert outcomes.state(8, 10_000) == "open" and outcomes.state(9, 1) == "unknown"


def test_client_properties_are_read_as_java_reads_them(tmp_path):
    from seglog_cli.storage.replay.cluster import read_client_properties
    path = tmp_path / "client.properties"
    path.write_bytes(b"# a comment\nsecurity.protocol = SASL_SSL\nsasl.jaas.config=org.apache.kafka.common.security."
                     b"plain.PlainLoginModule required \\\n    username=\"a\" password=\"caf\xe9\";\n")
    properties = read_client_properties(str(path))
    assert properties["security.protocol"] == "SASL_SSL"
    assert client_config("h:1", properties)["sasl.password"] == "caf\u00e9"  # ISO-8859-1, as Properties.load
    with pytest.raises(UnreadableInputError, match="cannot read the client properties"):
        read_client_properties(str(tmp_path / "missing.properties"))
