"""LocalTieredStorage's names (RemoteLogSegmentFileset.java, RemoteTopicPartitionDirectory.java
in Kafka 4.2's storage test sources) mapped without I/O, and the remote segments folded from the
corpus's real __remote_log_metadata partitions (values as kafka-dump-log 4.2's
remote-log-metadata-decoder golden prints them)."""

from __future__ import annotations

import pytest

from seglog_cli.storage.log.java_text import uuid_text
from seglog_cli.storage.log.naming import parse_partition_dir_name
from seglog_cli.storage.log.remote_layout import (
    group_filesets,
    parse_remote_file_name,
    parse_remote_partition_dir_name,
    remote_file_name,
    uuid_bytes,
)
from seglog_cli.storage.tiered.remote_segments import read_remote_segments


def test_partition_dir_names():
    name = parse_remote_partition_dir_name("tiered-0-NgDFhHPYTFCyTgfmgOxB0w")
    assert (name.topic, name.partition, name.topic_id) == ("tiered", 0, "NgDFhHPYTFCyTgfmgOxB0w")
    # a topic id with '-' and '_' (base64url), a topic with dots and dashes
    name = parse_remote_partition_dir_name("my.topic-x-12-5fEBmixCR5-dMntYSLIr1g")
    assert (name.topic, name.partition, name.topic_id) == ("my.topic-x", 12, "5fEBmixCR5-dMntYSLIr1g")
    assert parse_remote_partition_dir_name("tiered-0") is None
    assert parse_remote_partition_dir_name("tiered-0-tooShort") is None
    local = parse_partition_dir_name("tiered-0")
    assert (local.kind, local.unique_id) == ("current", None)
    remote = parse_partition_dir_name("tiered-0-NgDFhHPYTFCyTgfmgOxB0w")
    assert (remote.topic, remote.partition, remote.kind, remote.unique_id) == (
        "tiered", 0, "remote", "NgDFhHPYTFCyTgfmgOxB0w")


def test_file_names_and_filesets():
    name = parse_remote_file_name("00000000000000001040-ojmK8OlsQKi1TlLRntD2_g.leader_epoch_checkpoint")
    assert (name.start_offset, name.segment_id, name.suffix, name.known) == (
        1040, "ojmK8OlsQKi1TlLRntD2_g", ".leader_epoch_checkpoint", True)
    assert remote_file_name(1040, "ojmK8OlsQKi1TlLRntD2_g", ".log") == "00000000000000001040-ojmK8OlsQKi1TlLRntD2_g.log"
    assert parse_remote_file_name("00000000000000001040.log") is None
    assert parse_remote_file_name("99999999999999999999-ojmK8OlsQKi1TlLRntD2_g.log") is None  # past 2^63-1
    names = [remote_file_name(base, uid, suffix) for base, uid in ((1040, "B" * 22), (0, "A" * 22))
             for suffix in (".log", ".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint")]
    names.remove(remote_file_name(0, "A" * 22, ".snapshot"))
    filesets, others = group_filesets(names + ["notes.txt", remote_file_name(0, "A" * 22, ".weird")])
    assert [(f.start_offset, f.segment_id, f.missing) for f in filesets] == [
        (0, "A" * 22, (".snapshot",)), (1040, "B" * 22, ())]
    assert filesets[1].name(".log") == "00000000000000001040-" + "B" * 22 + ".log"
    assert others == [f"{0:020d}-{'A' * 22}.weird", "notes.txt"]


def test_uuid_round_trip():
    raw = uuid_bytes("NgDFhHPYTFCyTgfmgOxB0w")
    assert len(raw) == 16 and uuid_text(raw) == "NgDFhHPYTFCyTgfmgOxB0w"
    assert uuid_bytes("not-a-uuid") is None


def test_metadata_of_the_corpus(corpus):
    data = corpus / "kafka-4.2.0" / "tiered" / "data"
    if not data.is_dir():
        pytest.skip(f"{data} not in this corpus")
    metadata = read_remote_segments(sorted(data.glob("__remote_log_metadata-*")))
    assert metadata.undecodable == [] and metadata.orphan_updates == []
    tiered = sorted(metadata.for_partition("NgDFhHPYTFCyTgfmgOxB0w", 0), key=lambda m: m.start_offset)
    # golden/__remote_log_metadata-0/00000000000000000000.log.remote-log-metadata-decoder.out
    assert [(m.segment_id, m.start_offset, m.end_offset, m.segment_leader_epochs, m.segment_size_in_bytes, m.state)
            for m in tiered] == [
        ("zGmjh0csR4CRuy3KUp6llg", 0, 1039, ((0, 0),), 1036685, "COPY_SEGMENT_FINISHED"),
        ("ojmK8OlsQKi1TlLRntD2_g", 1040, 2079, ((0, 1040),), 1036685, "COPY_SEGMENT_FINISHED"),
        ("h70NTNn_RcuJCcDGZKAn3A", 2080, 3119, ((0, 2080),), 1036685, "COPY_SEGMENT_FINISHED"),
        ("eJxmZhVbSq68bNR8MA5Ikw", 3120, 4159, ((0, 3120),), 1036685, "COPY_SEGMENT_FINISHED"),
    ]
    assert tiered[0].max_timestamp_ms == 1795622509213 and tiered[0].broker_id == 1
    gone = metadata.for_partition("E0yahLVuRNybYcgAcUh0xg", 0)
    assert sorted((m.start_offset, m.end_offset, m.state) for m in gone) == [
        (0, 1039, "DELETE_SEGMENT_FINISHED"), (1040, 2079, "DELETE_SEGMENT_FINISHED"),
        (2080, 2099, "DELETE_SEGMENT_FINISHED")]
