"""The commands plan with each partition's effective configs (cluster metadata, --server-config,
--metadata-log, --config) and say where each value came from; simulate-retention --apply never
deletes by retention from a compact-only topic."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from tests.conftest import run_seglog
from tests.storage.config.test_effective_config import _records_in_dump

REFUSED, UNREADABLE = 3, 4
LATER = "2099-01-01"


@pytest.fixture
def data(corpus, tmp_path):
    """A writable copy of kafka-4.2.0/data: four topics, the metadata log, meta.properties and the
    checkpoints."""
    source = corpus / "kafka-4.2.0" / "data"
    target = tmp_path / "data"
    target.mkdir()
    for name in ("compacted-0", "compacted-retain-0", "plain-0", "smallseg-0", "__cluster_metadata-0"):
        shutil.copytree(source / name, target / name)
    for name in [p.name for p in source.glob("*checkpoint")] + ["meta.properties"]:
        shutil.copy(source / name, target / name)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def _tree(directory):
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def _plan(*args):
    result = run_seglog("simulate-retention", "--format", "json", "--now", LATER, *map(str, args))
    assert result.exit_code in (0, 1), result.err
    return json.loads(result.out)["partitions"]


def test_a_compacted_topic_is_not_deleted_by_time(data, corpus):
    (document,) = _plan(data / "compacted-0")
    assert document["cleanupPolicy"] == "compact" and document["deletedSegments"] == []
    offset = _records_in_dump(corpus, "compacted")["cleanup.policy"][1]
    assert {"key": "cleanup.policy", "value": "compact",
            "source": f"topic config (__cluster_metadata-0 offset {offset})"} in document["configs"]
    # without the metadata log the broker's defaults would delete both segments: the old bug
    (data.parent / "metadata").mkdir()
    shutil.move(data / "__cluster_metadata-0", data.parent / "metadata" / "__cluster_metadata-0")
    (blind,) = _plan(data / "compacted-0")
    assert len(blind["deletedSegments"]) == len(document["segments"]) == 2
    assert "ZooKeeper-era" in blind["configNotes"][0] and blind["configs"] == []
    for metadata_log in (data.parent / "metadata", data.parent / "metadata" / "__cluster_metadata-0"):
        (found,) = _plan("--metadata-log", metadata_log, data / "compacted-0")
        assert found["deletedSegments"] == [] and found["configs"] == document["configs"]
    wrong = run_seglog("simulate-retention", "--metadata-log", str(data.parent), str(data / "compacted-0"))
    assert wrong.exit_code == UNREADABLE and "no __cluster_metadata-0" in wrong.err


def test_text_says_where_each_value_came_from(data, corpus):
    result = run_seglog("simulate-retention", "--format", "text", "--now", LATER, str(data / "compacted-retain-0"),
                        str(data / "smallseg-0"))
    dumped = _records_in_dump(corpus, "compacted-retain")
    for key, (value, offset) in dumped.items():
        if key in ("cleanup.policy", "segment.ms", "delete.retention.ms", "min.cleanable.dirty.ratio"):
            assert f"{key}={value} (topic config, __cluster_metadata-0 offset {offset})" in result.out
    offset = _records_in_dump(corpus, "smallseg")["internal.segment.bytes"][1]
    assert f"smallseg-0 configs: internal.segment.bytes=65536 (topic config, __cluster_metadata-0 offset {offset})" \
        in result.out


def test_apply_refuses_retention_on_a_compact_only_topic(data):
    before = _tree(data)
    result = run_seglog("simulate-retention", "--now", LATER, "--config", "cleanup.policy=delete", "--apply",
                        str(data / "compacted-0"))
    assert result.exit_code == REFUSED
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "refusing to delete segments of compacted-0 by retention.ms" in lines[0]
    assert "cleanup.policy=compact (topic config, __cluster_metadata-0 offset" in lines[0]
    after = _tree(data)
    after.pop(".lock", None)  # taken before planning, as every writing command does
    assert after == before


def test_apply_still_deletes_from_a_delete_topic(data):
    result = run_seglog("simulate-retention", "--now", LATER, "--apply", "--config", "retention.ms=1000",
                        str(data / "plain-0"))
    assert result.exit_code == 0, result.err
    assert "applied:" in result.out and "segment.bytes=1048576 (topic config" in result.out


def test_server_config_is_under_the_topic_config(data, tmp_path):
    server = tmp_path / "server.properties"
    server.write_text("log.retention.hours=1\nlog.cleanup.policy=delete\nlog.segment.bytes=2097152\n")
    (plain,) = _plan("--server-config", server, data / "plain-0")
    configs = {c["key"]: (c["value"], c["source"]) for c in plain["configs"]}
    assert configs["retention.ms"] == ("3600000", f"server.properties {server} (log.retention.hours=1)")
    assert configs["segment.bytes"][0] == "1048576" and configs["segment.bytes"][1].startswith("topic config")
    assert plain["retentionMs"] == 3600000
    (compacted,) = _plan("--server-config", server, data / "compacted-0")
    assert compacted["cleanupPolicy"] == "compact"


def test_rebuild_index_and_recover_use_each_partitions_configs(data):
    rebuilt = run_seglog("rebuild-index", "--format", "json", str(data))
    configs = json.loads(rebuilt.out)["configs"]
    assert {"partition": str(data / "smallseg-0"), "key": "internal.segment.bytes", "value": "65536"} == \
        {k: v for k, v in next(c for c in configs if c["partition"].endswith("smallseg-0")).items() if k != "source"}
    assert json.loads(rebuilt.out)["indexIntervalBytes"] is None  # partitions differ: each has its own
    recovered = run_seglog("recover", str(data / "compacted-0"))
    assert "compacted-0 configs: cleanup.policy=compact (topic config" in recovered.out


def test_append_prints_the_configs_and_the_zookeeper_note(data, tmp_path):
    planned = run_seglog("append", "--format", "json", "--value", "x", str(data / "plain-0"))
    assert any(c["key"] == "segment.bytes" for c in json.loads(planned.out)["configs"])
    bare = tmp_path / "zk"
    bare.mkdir()
    alone = run_seglog("append", "--create", "--value", "x", str(bare / "orders-0"))
    assert "orders-0 configs: Kafka's defaults" not in alone.out
    assert "no __cluster_metadata-0" in alone.out and "Kafka's defaults and --config are used" in alone.out


def test_missing_server_config_is_unreadable(data, tmp_path):
    result = run_seglog("simulate-retention", "--server-config", str(tmp_path / "nope"), str(data / "plain-0"))
    assert result.exit_code == UNREADABLE and "no such server config file" in result.err
