"""Effective topic configs: Kafka's layering (defaults < server.properties < cluster default <
broker config < topic config < --config), replayed from metadata logs built here with seglog's
own writer, and from the broker-written corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seglog_cli.formats.metadata_records import (
    ABORT_TRANSACTION,
    BEGIN_TRANSACTION,
    CONFIG,
    END_TRANSACTION,
    FRAME_VERSION,
    REMOVE_TOPIC,
    TOPIC,
)
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.log.checkpoints import PartitionMetadata, write_partition_metadata
from seglog_cli.storage.config.effective_config import (
    ConfigSources,
    compact_only_refusal,
    overrides_from,
    read_metadata_image,
)
from seglog_cli.storage.serde.metadata_decoder import uuid_text
from seglog_cli.storage.config.topic_config import TopicConfig

OLD_ID, NEW_ID = bytes(range(16)), bytes(range(16, 32))
T = 1_795_000_000_000


def _value(api_key: int, schema, fields: dict) -> bytes:
    """A metadata record value: frame version, type, version 0, then the record (AbstractApiMessageSerde)."""
    return varint_u(FRAME_VERSION) + varint_u(api_key) + varint_u(0) + schema.struct(0).build(
        dict(fields, tagged_fields={}))


def varint_u(value: int) -> bytes:
    """Unsigned varint (the frame's fields are unsigned; ``builder.varint`` zigzags)."""
    out = b""
    while value >= 0x80:
        out += bytes([value & 0x7F | 0x80])
        value >>= 7
    return out + bytes([value])


def topic(name: str, topic_id: bytes) -> bytes:
    return _value(2, TOPIC, {"name": name.encode(), "topic_id": topic_id})


def remove_topic(topic_id: bytes) -> bytes:
    return _value(9, REMOVE_TOPIC, {"topic_id": topic_id})


def config(resource_type: int, resource: str, key: str, value: str | None) -> bytes:
    return _value(4, CONFIG, {"resource_type": resource_type, "resource_name": resource.encode(),
                              "name": key.encode(), "value": None if value is None else value.encode()})


def batches(values: list[bytes], base_offset: int = 0) -> bytes:
    """One batch per record, offsets from ``base_offset``."""
    return b"".join(build_batch([NewRecord(value=v, timestamp=T)], base_offset=base_offset + i)
                    for i, v in enumerate(values))


def snapshot(directory: Path, end_offset: int, values: list[bytes]) -> None:
    """A KRaft snapshot: a header control batch, the records, a footer control batch."""
    header = build_batch([NewRecord(key=b"\x00\x00\x00\x03", value=b"\x00\x00", timestamp=T)], control=True)
    footer = build_batch([NewRecord(key=b"\x00\x00\x00\x04", value=b"\x00\x00", timestamp=T)], control=True,
                         base_offset=1 + len(values))
    (directory / f"{end_offset:020d}-{1:010d}.checkpoint").write_bytes(header + batches(values, 1) + footer)


def log_dir(tmp_path: Path, records: list[bytes], node_id: int = 1, local_id: bytes | None = OLD_ID,
            name: str = "orders-0") -> Path:
    """A log dir with ``__cluster_metadata-0`` holding ``records`` and one partition ``name``."""
    metadata = tmp_path / "__cluster_metadata-0"
    metadata.mkdir(parents=True, exist_ok=True)
    (metadata / "00000000000000000000.log").write_bytes(batches(records))
    (tmp_path / "meta.properties").write_text(f"version=1\nnode.id={node_id}\ncluster.id=abc\n")
    partition = tmp_path / name
    partition.mkdir(exist_ok=True)
    if local_id is not None:
        write_partition_metadata(partition / "partition.metadata", PartitionMetadata(0, uuid_text(local_id)))
    return partition


def sources_of(effective) -> dict[str, tuple[str, str]]:
    return {v.key: (v.value, v.source) for v in effective.values}


def test_a_topic_config_set_then_deleted_by_a_null_value(tmp_path):
    partition = log_dir(tmp_path, [topic("orders", OLD_ID), config(2, "orders", "retention.ms", "1000"),
                                   config(2, "orders", "cleanup.policy", "compact"),
                                   config(2, "orders", "retention.ms", None)])
    effective = ConfigSources().resolve(partition)
    assert effective.config == TopicConfig(cleanup_policy="compact")
    assert sources_of(effective) == {"cleanup.policy": ("compact", "topic config (__cluster_metadata-0 offset 2)")}
    assert effective.notes == ()


def test_a_snapshot_then_the_records_after_its_end_offset(tmp_path):
    records = [topic("orders", OLD_ID), config(2, "orders", "segment.bytes", "2097152"),
               config(2, "orders", "retention.ms", "5000")]
    partition = log_dir(tmp_path, records + [config(2, "orders", "retention.ms", "7000")])
    metadata = tmp_path / "__cluster_metadata-0"
    # the snapshot holds offsets 0..2 with other values than the log's: it wins for them
    snapshot(metadata, 3, [topic("orders", OLD_ID), config(2, "orders", "segment.bytes", "4194304")])
    image = read_metadata_image(metadata)
    assert image.snapshot == "00000000000000000003-0000000001.checkpoint"
    effective = ConfigSources().resolve(partition)
    assert (effective.config.segment_bytes, effective.config.retention_ms) == (4194304, 7000)
    assert sources_of(effective) == {
        "segment.bytes": ("4194304", "topic config (snapshot 00000000000000000003-0000000001.checkpoint)"),
        "retention.ms": ("7000", "topic config (__cluster_metadata-0 offset 3)")}


def test_the_latest_snapshot_is_replayed(tmp_path):
    partition = log_dir(tmp_path, [])
    metadata = tmp_path / "__cluster_metadata-0"
    snapshot(metadata, 5, [topic("orders", OLD_ID), config(2, "orders", "retention.ms", "1")])
    snapshot(metadata, 9, [topic("orders", OLD_ID), config(2, "orders", "retention.ms", "2")])
    assert ConfigSources().resolve(partition).config.retention_ms == 2


def test_a_removed_topic_loses_its_configs(tmp_path):
    partition = log_dir(tmp_path, [topic("orders", OLD_ID), config(2, "orders", "cleanup.policy", "compact"),
                                   remove_topic(OLD_ID)])
    effective = ConfigSources().resolve(partition)
    assert effective.config == TopicConfig()
    assert effective.values == ()
    assert any("'orders' is not in __cluster_metadata-0" in note for note in effective.notes)


@pytest.mark.parametrize("local_id, used", [(NEW_ID, True), (OLD_ID, False), (None, True)])
def test_a_recreated_topic_partition_metadata_decides(tmp_path, local_id, used):
    partition = log_dir(tmp_path, [topic("orders", OLD_ID), config(2, "orders", "cleanup.policy", "compact"),
                                   remove_topic(OLD_ID), topic("orders", NEW_ID),
                                   config(2, "orders", "retention.bytes", "1000")], local_id=local_id)
    effective = ConfigSources().resolve(partition)
    # the old topic's compact is gone with it; the new topic's retention.bytes applies to its own log only
    assert effective.config.cleanup_policy == "delete"
    assert effective.config.retention_bytes == (1000 if used else -1)
    mismatch = [note for note in effective.notes if "topic id mismatch" in note]
    assert bool(mismatch) == (not used)


def test_broker_and_cluster_defaults_under_the_topic_config(tmp_path):
    partition = log_dir(tmp_path, [
        topic("orders", OLD_ID),
        config(4, "", "log.retention.ms", "1000"), config(4, "", "log.segment.bytes", "2097152"),
        config(4, "", "log.cleaner.backoff.ms", "777"),
        config(4, "1", "log.retention.ms", "2000"), config(4, "2", "log.retention.ms", "3000"),
        config(4, "1", "log.cleanup.policy", "compact,delete"),
        config(2, "orders", "cleanup.policy", "delete")], node_id=1)
    effective = ConfigSources().resolve(partition)
    assert (effective.config.retention_ms, effective.config.segment_bytes, effective.config.cleanup_policy) == (
        2000, 2097152, "delete")
    assert sources_of(effective) == {
        "retention.ms": ("2000", "broker 1 config (__cluster_metadata-0 offset 4: log.retention.ms)"),
        "segment.bytes": ("2097152", "cluster default (__cluster_metadata-0 offset 2: log.segment.bytes)"),
        "cleanup.policy": ("delete", "topic config (__cluster_metadata-0 offset 7)")}
    assert effective.broker == {"log.cleaner.backoff.ms": "777"}


def test_server_properties_hours_minutes_ms_and_dynamic_layers_key_by_key(tmp_path):
    partition = log_dir(tmp_path, [topic("orders", OLD_ID), config(4, "", "log.retention.minutes", "5")])
    server = tmp_path / "server.properties"
    server.write_text("log.retention.hours=2\nlog.roll.hours=1\nlog.segment.bytes=3145728\nbroker.id=1\n")
    effective = ConfigSources(server_config=server).resolve(partition)
    # the merged broker config has hours (static) and minutes (dynamic): minutes win over hours
    assert effective.config.retention_ms == 5 * 60_000
    assert effective.config.segment_ms == 3_600_000
    assert sources_of(effective)["retention.ms"] == (
        "300000", "cluster default (__cluster_metadata-0 offset 1: log.retention.minutes=5)")
    assert sources_of(effective)["segment.bytes"] == ("3145728", f"server.properties {server} (log.segment.bytes)")


def test_flags_win_and_the_cluster_view_stays(tmp_path):
    partition = log_dir(tmp_path, [topic("orders", OLD_ID), config(2, "orders", "cleanup.policy", "compact")])
    sources = ConfigSources(overrides=overrides_from({"cleanup.policy": "delete", "retention.ms": "10"}, "--config"))
    effective = sources.resolve(partition)
    assert effective.config.cleanup_policy == "delete" and effective.cluster_config.cleanup_policy == "compact"
    assert sources_of(effective)["cleanup.policy"] == ("delete", "--config")
    reason = compact_only_refusal(effective, {"retention.ms"})
    assert "cleanup.policy=compact (topic config, __cluster_metadata-0 offset 1)" in reason
    assert compact_only_refusal(effective, {"log-start-offset"}) is None


def test_an_aborted_metadata_transaction_is_dropped(tmp_path):
    begin = _value(23, BEGIN_TRANSACTION, {})
    abort = _value(25, ABORT_TRANSACTION, {})
    end = _value(24, END_TRANSACTION, {})
    partition = log_dir(tmp_path, [topic("orders", OLD_ID),
                                   begin, config(2, "orders", "retention.ms", "1"), abort,
                                   begin, config(2, "orders", "segment.ms", "2"), end])
    effective = ConfigSources().resolve(partition)
    assert (effective.config.retention_ms, effective.config.segment_ms) == (TopicConfig().retention_ms, 2)


def test_no_metadata_log_says_defaults_are_used(tmp_path):
    partition = tmp_path / "orders-0"
    partition.mkdir()
    effective = ConfigSources().resolve(partition)
    assert effective.config == TopicConfig() and effective.values == ()
    assert "ZooKeeper-era" in effective.notes[0]


def test_metadata_log_option_finds_a_separate_metadata_log_dir(tmp_path):
    log_dir(tmp_path / "meta", [topic("orders", OLD_ID), config(2, "orders", "retention.ms", "42")])
    data = tmp_path / "data" / "orders-0"
    data.mkdir(parents=True)
    assert ConfigSources(metadata_log=tmp_path / "meta").resolve(data).config.retention_ms == 42
    assert ConfigSources(metadata_log=tmp_path / "meta" / "__cluster_metadata-0").resolve(data).config.retention_ms == 42


# -- the broker-written corpus ------------------------------------------------------------------

CORPUS_EXPECTED = {
    "compacted-0": {"cleanup.policy": "compact", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01",
                    "delete.retention.ms": "1000"},
    "compacted-retain-0": {"cleanup.policy": "compact", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01",
                           "delete.retention.ms": "86400000"},
    "plain-0": {"segment.bytes": "1048576"},
    "smallseg-0": {"internal.segment.bytes": "65536"},
}


def _records_in_dump(corpus: Path, topic_name: str) -> dict[str, tuple[str, int]]:
    """The topic's CONFIG_RECORDs in Kafka's own dump of the metadata log (golden output):
    key -> (value, offset)."""
    import json
    import re

    golden = next((corpus / "kafka-4.2.0").glob("golden*/__cluster_metadata-0/00000000000000000000.log."
                                                  "cluster-metadata-decoder.out"))
    out = {}
    for line in golden.read_text().splitlines():
        match = re.match(r"\| offset: (\d+) .* payload: (\{.*\})$", line)
        if match:
            record = json.loads(match.group(2))
            data = record["data"]
            if record["type"] == "CONFIG_RECORD" and data["resourceType"] == 2 and data["resourceName"] == topic_name:
                out[data["name"]] = (data["value"], int(match.group(1)))
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(CORPUS_EXPECTED))
def test_corpus_topics_get_their_topic_configs(corpus, name):
    data = corpus / "kafka-4.2.0" / "data"
    effective = ConfigSources().resolve(data / name)
    assert {v.key: v.value for v in effective.values} == CORPUS_EXPECTED[name]
    dumped = _records_in_dump(corpus, name.rsplit("-", 1)[0])
    for value in effective.values:
        assert value.source == f"topic config (__cluster_metadata-0 offset {dumped[value.key][1]})"
    assert effective.notes == ()


@pytest.mark.corpus
def test_corpus_configs_shape_the_topic_config(corpus):
    data = corpus / "kafka-4.2.0" / "data"
    resolved = {name: ConfigSources().resolve(data / name).config for name in CORPUS_EXPECTED}
    assert not resolved["compacted-0"].delete and resolved["compacted-0"].compact
    assert resolved["compacted-retain-0"].delete_retention_ms == 86400000
    assert resolved["plain-0"].segment_bytes == 1048576
    # LogConfig.segmentSize(): internal.segment.bytes over segment.bytes; smallseg's segments are <= 64 KiB
    assert resolved["smallseg-0"].segment_bytes == 65536
    assert max(os.path.getsize(p) for p in (data / "smallseg-0").glob("*.log")) <= 65536
