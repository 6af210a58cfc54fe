"""Every __consumer_offsets and __transaction_state record in the public corpus (brokers of many
Kafka versions: offset commit values v1, v3, v4, group metadata v3 from librdkafka, Connect and
Schema Registry groups) decodes, and consumer-protocol groups expand as Kafka expands them."""

from __future__ import annotations

import collections

from seglog_cli.render.coordinator_json import offsets_parser
from seglog_cli.storage.coordinator.coordinator_log import partition_entries
from seglog_cli.storage.serde.coordinator_records import (
    GROUP_RECORD_TYPES,
    TRANSACTION_RECORD_TYPES,
    read_coordinator_record,
)
from seglog_cli.storage.coordinator.offsets import read_committed_offsets
from tests.conftest import requires_corpus


def _records(directories):
    problems = []
    for directory in directories:
        for entry in partition_entries(directory, problems):
            if entry.control is None:
                yield entry.record
    assert problems == []


@requires_corpus
def test_public_consumer_offsets_decode(corpus):
    directories = sorted(corpus.glob("public/**/__consumer_offsets-*"))
    assert directories
    seen = collections.Counter()
    parser = offsets_parser()
    expanded = 0
    for record in _records(directories):
        decoded = read_coordinator_record(record.key, record.value, GROUP_RECORD_TYPES)
        seen[(decoded.record_type, decoded.value_version)] += 1
        if decoded.record_type == 2 and decoded.value and decoded.value["protocolType"] == "consumer":
            _, payload = parser(record)
            expanded += payload.count('"subscription":{"topics":[')
    assert {(1, 1), (1, 3), (2, 3)} <= set(seen)
    assert expanded > 0
    for directory in directories:
        report = read_committed_offsets(directory)
        assert report.unreadable == [] and report.problems == []


@requires_corpus
def test_public_transaction_state_decodes(corpus):
    directories = sorted(corpus.glob("public/**/__transaction_state-*"))
    assert directories
    count = 0
    for record in _records(directories):
        decoded = read_coordinator_record(record.key, record.value, TRANSACTION_RECORD_TYPES)
        assert decoded.key["transactionalId"]
        count += 1
    assert count > 0
