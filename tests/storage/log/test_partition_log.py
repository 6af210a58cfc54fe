"""Partition and log dir model: names, segment order, offset and timestamp lookups."""

from __future__ import annotations

import pytest

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.log.naming import (
    format_offset,
    parse_kraft_snapshot_name,
    parse_partition_dir_name,
    parse_segment_file_name,
)
from seglog_cli.storage.log.partition_log import LogDir, PartitionLog, looks_like_partition_dir
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.write.writer import SegmentConfig, SegmentWriter
from tests.conftest import CORPUS, requires_corpus


@pytest.mark.parametrize("name,expected", [
    ("orders-0", ("orders", 0, "current")),
    ("my-topic-12", ("my-topic", 12, "current")),
    ("__consumer_offsets-49", ("__consumer_offsets", 49, "current")),
    ("orders-3.7c9b4a1d2e3f40516273849506a7b8c9-delete", ("orders", 3, "delete")),
    ("orders-3.7c9b4a1d2e3f40516273849506a7b8c9-future", ("orders", 3, "future")),
    ("orders-3.7c9b4a1d2e3f40516273849506a7b8c9-stray", ("orders", 3, "stray")),
])
def test_partition_dir_names(name, expected):
    parsed = parse_partition_dir_name(name)
    assert (parsed.topic, parsed.partition, parsed.kind) == expected


@pytest.mark.parametrize("name", ["lost+found", "orders", "orders-", "-1", "orders-x", "orders-1-delete"])
def test_names_kafka_refuses(name):
    assert parse_partition_dir_name(name) is None


def test_segment_file_names():
    assert format_offset(42) == "00000000000000000042"
    parsed = parse_segment_file_name("00000000000000000042.index.deleted")
    assert (parsed.base_offset, parsed.suffix, parsed.temp_suffix, parsed.is_temp) == (42, ".index", ".deleted", True)
    tiered = parse_segment_file_name("00000000000000000100-AbCdEfGhIjKlMnOpQrStUv.log")
    assert (tiered.base_offset, tiered.suffix, tiered.remote_id) == (100, ".log", "AbCdEfGhIjKlMnOpQrStUv")
    assert parse_segment_file_name("leader-epoch-checkpoint") is None
    snapshot = parse_kraft_snapshot_name("00000000000000000531-0000000002.checkpoint")
    assert (snapshot.end_offset, snapshot.epoch) == (531, 2)


def _write_partition(directory, segments=3, per_segment=40):
    directory.mkdir()
    offset = 0
    for _ in range(segments):
        writer = SegmentWriter(directory, offset, SegmentConfig(index_interval_bytes=200))
        for _ in range(per_segment):
            records = [NewRecord(b"k", b"v%d" % (offset + i), timestamp=1_000 + 10 * (offset + i)) for i in range(3)]
            writer.append(build_batch(records, base_offset=offset))
            offset += 3
        writer.close()
    return offset


def test_offset_lookup_finds_the_batch_holding_every_offset(tmp_path):
    end = _write_partition(tmp_path / "t-0")
    log = PartitionLog(tmp_path / "t-0")
    assert [s.base_offset for s in log.segments] == [0, 120, 240]
    assert (log.topic, log.partition, log.log_start_offset, log.log_end_offset()) == ("t", 0, 0, end)
    for offset in range(0, end, 7):
        segment, match = log.find_offset(offset)
        assert match.batch.base_offset <= offset <= match.batch.last_offset
        assert segment.base_offset <= offset
    assert log.find_offset(end) is None
    log.close()


def test_timestamp_lookup_is_the_first_record_at_or_after(tmp_path):
    end = _write_partition(tmp_path / "t-0")
    log = PartitionLog(tmp_path / "t-0")
    for target in (0, 1_000, 1_005, 2_210, 1_000 + 10 * (end - 1), 10**9):
        expected = next((o for o in range(end) if 1_000 + 10 * o >= target), None)
        assert log.find_offset_by_timestamp(target) == expected
    log.close()


def test_log_dir_lists_partitions_in_topic_partition_order(tmp_path):
    for name in ("b-10", "b-2", "a-0", "lost+found", "remote-log-index-cache"):
        (tmp_path / name).mkdir()
    log_dir = LogDir(tmp_path)
    assert [p.name for p in log_dir.partition_dirs()] == ["a-0", "b-2", "b-10"]
    assert [p.name for p in log_dir.unexpected_dirs()] == ["lost+found"]
    assert not looks_like_partition_dir(tmp_path)


@requires_corpus
def test_corpus_partition_reads_like_the_broker_left_it():
    log = PartitionLog(CORPUS / "kafka-4.2.0" / "data" / "smallseg-0")
    assert len(log.segments) == 10
    total = 0
    for segment in log.segments:
        for batch in LogScan(segment.log):
            total += sum(1 for _ in read_records(segment.log.buffer, batch))
    assert log.log_end_offset() == total  # a log with no gaps: LEO = record count
    log.close()


def test_a_tree_named_like_a_partition_is_searched_not_taken(tmp_path):
    """``repo-2/`` holding ``data/t-0/`` is a tree (a copied repository), not partition 2 of
    topic ``repo``: only ``t-0`` is a partition."""
    from seglog_cli.storage.log.partition_log import find_kafka_dirs, is_log_dir, looks_like_partition_dir

    partition = tmp_path / "repo-2" / "data" / "t-0"
    partition.mkdir(parents=True)
    (partition / "00000000000000000000.log").write_bytes(b"")
    assert not looks_like_partition_dir(tmp_path / "repo-2")
    assert not is_log_dir(tmp_path)
    assert find_kafka_dirs(tmp_path) == ([tmp_path / "repo-2" / "data"], [])


def test_a_directory_of_notes_and_build_logs_is_no_partition(tmp_path):
    """Only ``<offset>.log`` / ``<offset>.snapshot`` make a directory a partition: a home or
    notes directory holding ``build.log`` is searched (and holds no Kafka data), while a
    partition dir keeps being one with a stray ``notes.log`` beside its segments."""
    from seglog_cli.storage.log.partition_log import partition_dirs_under

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "build.log").write_text("make: ok\n")
    (notes / "00000000000000000000.log.deleted").write_bytes(b"")
    assert not looks_like_partition_dir(notes)
    assert partition_dirs_under(notes) == []
    partition = tmp_path / "data" / "orders-0"
    partition.mkdir(parents=True)
    (partition / "00000000000000000042.log").write_bytes(b"")
    (partition / "notes.log").write_text("moved here by hand\n")
    assert looks_like_partition_dir(partition)
    assert partition_dirs_under(tmp_path) == [partition]
