"""The fast path for frequent metadata records gives exactly what the general decoder gives: on
every record of the corpus's metadata logs and snapshots (every node of the three cases), on a
generated log's churn, and on hand-made values with every tag; anything odd is left to the
general decoder (None)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.metadata.fast_records import fast_decode
from seglog_cli.storage.serde.metadata_decoder import MetadataRecordError, decode_metadata_record
from tests.benchmarks import broker_records as rec
from tests.benchmarks.make_metadata_log import make_metadata_log
from tests.storage.metadata.test_image import HISTORY, needs_corpus

TOPIC_ID = bytes(range(16))
DIR_ID = bytes(range(16, 32))


def values_of(directory: Path):
    for path in sorted(directory.glob("*.log")) + sorted(directory.glob("*.checkpoint")):
        with MappedFile(path) as mapped:
            for batch in LogScan(mapped, 0, None):
                if not batch.is_control:
                    for record in read_records(mapped.buffer, batch, str(path)):
                        yield bytes(record.value) if record.value is not None else None


def general(value):
    try:
        decoded = decode_metadata_record(value)
    except MetadataRecordError:
        return "error"
    return decoded.type_name, decoded.data


def check(values) -> int:
    fast_count = 0
    for value in values:
        fast = fast_decode(value)
        if fast is not None:
            fast_count += 1
            assert fast == general(value), value.hex()
            assert list(fast[1]) == list(general(value)[1])  # the same fields in the same order
    return fast_count


@needs_corpus
def test_every_corpus_record_decodes_the_same():
    dirs = sorted((HISTORY.parent).glob("*/data/*/__cluster_metadata-0")) + sorted(
        (HISTORY.parent).glob("*/*/__cluster_metadata-0"))
    assert len(dirs) >= 4
    assert sum(check(values_of(d)) for d in dirs) > 1000


def test_a_generated_logs_records_decode_the_same(tmp_path):
    summary = make_metadata_log(tmp_path / "node", records=3000, segment_bytes=64 * 1024)
    assert summary.segments > 1
    assert check(values_of(summary.directory)) > 2500


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_tag_of_a_partition_change(version):
    tags = {"isr": [1, 2], "leader": 2, "replicas": [1, 2, 3], "removing_replicas": [3], "adding_replicas": [],
            "leader_recovery_state": 1}
    if version >= 1:
        tags["directories"] = [DIR_ID, DIR_ID, DIR_ID]
    if version >= 2:
        tags.update(eligible_leader_replicas=[3], last_known_elr=[])
    values = [rec.metadata_record("PARTITION_CHANGE_RECORD", version, partition_id=7, topic_id=TOPIC_ID,
                                  tagged_fields=dict(list(tags.items())[:n])) for n in range(len(tags) + 1)]
    values.append(rec.metadata_record("PARTITION_CHANGE_RECORD", version, partition_id=7, topic_id=TOPIC_ID,
                                      tagged_fields={"leader": -2, "leader_recovery_state": -1}))
    assert check(values) == len(values)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_partition_records(version):
    fields = dict(partition_id=3, topic_id=TOPIC_ID, replicas=[1, 2], isr=[1], removing_replicas=[],
                  adding_replicas=[2], leader=1, leader_epoch=4, partition_epoch=9)
    if version >= 1:
        fields["directories"] = [DIR_ID, DIR_ID]
    tagged = [{}, {"leader_recovery_state": 1}] + ([{"eligible_leader_replicas": [2], "last_known_elr": [1]}]
                                                    if version >= 2 else [])
    values = [rec.metadata_record("PARTITION_RECORD", version, tagged_fields=t, **fields) for t in tagged]
    assert check(values) == len(values)


def test_odd_values_are_left_to_the_general_decoder():
    change = rec.metadata_record("PARTITION_CHANGE_RECORD", 0, partition_id=7, topic_id=TOPIC_ID,
                                 tagged_fields={"isr": [1]})
    for odd in (change + b"\x00", change[:-2], change[:10], b"\x01\x05\x03" + change[3:], None, b"",
                b"\x00\x14\x00\x00", b"\x01\x14\x00\x01\x00"):
        assert fast_decode(odd) is None
    assert fast_decode(b"\x01\x14\x00\x00") == ("NO_OP_RECORD", {})
