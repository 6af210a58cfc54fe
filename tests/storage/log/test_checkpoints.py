"""Checkpoint, partition.metadata, meta.properties, clean-shutdown and quorum-state files.

Real files come from ../shared/corpus (Kafka 4.2.0 and public ZooKeeper/KRaft-era log dirs);
malformed inputs check Kafka's reading rules and messages; writers are checked byte for byte
against Kafka-written files and for the tmp + fsync + rename + dir fsync protocol.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_cli.storage.log import checkpoints as cp
from seglog_cli.storage.log import java_text
from seglog_cli.storage.log import log_dir_files as ldf
from seglog_cli.storage.log.checkpoints import EpochEntry, PartitionMetadata, TopicPartition
from seglog_cli.storage.log.errors import CheckpointError, UnreadableInputError

KAFKA_DATA = CORPUS / "kafka-4.2.0" / "data"
PUBLIC = CORPUS / "public"
TOPIC_ID = "Jzk05VC1RFa1-eBDd20_kA"


def _corpus_files(kinds):
    if not CORPUS.is_dir():
        return []
    found = []
    for root, _dirs, names in os.walk(CORPUS):
        for name in names:
            if ldf.classify_log_dir_file(name) in kinds:
                found.append(Path(root, name))
    return sorted(found)


def _id(path: Path) -> str:
    return str(path.relative_to(CORPUS))


OFFSET_FILES = _corpus_files(ldf.OFFSET_CHECKPOINT_KINDS)
EPOCH_FILES = _corpus_files({"leader-epoch"})
METADATA_FILES = _corpus_files({"partition-metadata"})
META_PROPERTIES_FILES = _corpus_files({"meta-properties"})
CLEAN_SHUTDOWN_FILES = _corpus_files({"clean-shutdown"})
QUORUM_STATE_FILES = _corpus_files({"quorum-state"})


# --- every corpus file parses, and re-formats to the same bytes -------------------------------

@pytest.mark.corpus
def test_corpus_has_every_kind(corpus):
    assert len(OFFSET_FILES) >= 100 and len(EPOCH_FILES) >= 200 and len(METADATA_FILES) >= 200
    assert len(META_PROPERTIES_FILES) >= 20 and len(CLEAN_SHUTDOWN_FILES) >= 10 and len(QUORUM_STATE_FILES) >= 5


@pytest.mark.corpus
@pytest.mark.parametrize("path", OFFSET_FILES, ids=_id)
def test_corpus_offset_checkpoint_round_trips(path):
    raw = path.read_bytes()
    offsets = cp.read_offset_checkpoint(path)
    assert len(offsets) == (int(raw.split(b"\n")[1]) if raw else 0)
    assert cp.format_offset_checkpoint(offsets) == raw or raw == b""  # never-written files are empty


@pytest.mark.corpus
@pytest.mark.parametrize("path", EPOCH_FILES, ids=_id)
def test_corpus_leader_epoch_checkpoint_round_trips(path):
    entries = cp.read_leader_epoch_checkpoint(path)
    raw = path.read_bytes()
    assert [entry.epoch for entry in entries] == sorted(entry.epoch for entry in entries)
    # Kafka 4.2 leaves a never-flushed file empty (a partition no leader epoch reached yet): read
    # as no entries, as CheckpointFile's reader does (readLine() null), and written as "0\n0\n"
    assert cp.format_leader_epoch_checkpoint(entries) == raw or (raw == b"" and entries == [])


@pytest.mark.corpus
@pytest.mark.parametrize("path", METADATA_FILES, ids=_id)
def test_corpus_partition_metadata_round_trips(path):
    metadata = cp.read_partition_metadata(path)
    assert metadata.version == 0 and len(metadata.topic_id) == 22
    assert cp.format_partition_metadata(metadata) == path.read_bytes()


@pytest.mark.corpus
@pytest.mark.parametrize("path", META_PROPERTIES_FILES, ids=_id)
def test_corpus_meta_properties_parse(path):
    meta = ldf.read_meta_properties(path)
    assert meta.version in (0, 1) and meta.extra == {}
    assert meta.node_id is not None or meta.version == 0
    assert meta.cluster_id is not None or meta.version == 0


@pytest.mark.corpus
@pytest.mark.parametrize("path", CLEAN_SHUTDOWN_FILES, ids=_id)
def test_corpus_clean_shutdown_parse(path):
    state = ldf.read_clean_shutdown(path)
    assert state.present
    assert (state.broker_epoch is None) == (path.stat().st_size == 0)


@pytest.mark.corpus
@pytest.mark.parametrize("path", QUORUM_STATE_FILES, ids=_id)
def test_corpus_quorum_state_parse(path):
    state = ldf.read_quorum_state(path)
    # the single-node clusters' leader is node 1; the metadata/ cases' dedicated controller is 100
    assert state.data_version in (0, 1) and state.leader_id in (1, 100)
    if state.data_version == 0:
        assert state.current_voters == (state.leader_id,) and state.applied_offset == 0 and state.cluster_id == ""
    else:
        assert state.voted_directory_id == cp.ZERO_UUID and state.current_voters is None


# --- exact values ------------------------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize("name", ["recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                                  "log-start-offset-checkpoint", "cleaner-offset-checkpoint"])
def test_kafka_offset_checkpoints_match_raw_text(corpus, name):
    lines = (KAFKA_DATA / name).read_text().splitlines()
    expected = {TopicPartition(t, int(p)): int(o) for t, p, o in (line.split(" ") for line in lines[2:])}
    offsets = cp.read_offset_checkpoint(KAFKA_DATA / name)
    assert offsets == expected and list(offsets) == list(expected)
    assert int(lines[1]) == len(offsets)


@pytest.mark.corpus
def test_kafka_known_values(corpus):
    assert cp.read_offset_checkpoint(KAFKA_DATA / "cleaner-offset-checkpoint") == {
        TopicPartition("compacted-retain", 0): 2156, TopicPartition("compacted", 0): 2156}
    assert cp.read_offset_checkpoint(KAFKA_DATA / "recovery-point-offset-checkpoint")[
        TopicPartition("compacted", 0)] == 2157
    assert cp.read_leader_epoch_checkpoint(KAFKA_DATA / "plain-0" / "leader-epoch-checkpoint") == [EpochEntry(0, 0)]
    assert cp.read_partition_metadata(KAFKA_DATA / "plain-0" / "partition.metadata") == PartitionMetadata(0, TOPIC_ID)
    assert ldf.read_meta_properties(KAFKA_DATA / "meta.properties") == ldf.MetaProperties(
        1, "m8r5JWYjQqC-mwnSmEBfBw", 1, None, "p9KLuuGgQx6CUCpIYkcGnQ", {})
    assert ldf.read_clean_shutdown(KAFKA_DATA / ".kafka_cleanshutdown") == ldf.CleanShutdown(True, 16)
    assert ldf.read_quorum_state(KAFKA_DATA / "__cluster_metadata-0" / "quorum-state") == ldf.QuorumState(
        1, leader_id=1, leader_epoch=1, voted_id=-1, voted_directory_id=cp.ZERO_UUID)


@pytest.mark.corpus
def test_public_known_values(corpus):
    epochs = PUBLIC / "ArthurArutunyan04__Backend_labs/kafka-data/oms_order_status_changed-2/leader-epoch-checkpoint"
    assert cp.read_leader_epoch_checkpoint(epochs) == [EpochEntry(10, 10917), EpochEntry(12, 13277),
                                                       EpochEntry(14, 14009)]
    zk_era = ldf.read_meta_properties(PUBLIC / "mscaldas2012__kafka-connect-spooldir/kafka-data/meta.properties")
    assert zk_era == ldf.MetaProperties(0, None, 1001, 1001, None, {})
    with_cluster = ldf.read_meta_properties(PUBLIC / "seanorth__kafka-server/kafka-logs/meta.properties")
    assert (with_cluster.version, with_cluster.cluster_id, with_cluster.broker_id) == (0, "3d1XOGWUQq-2TaCwWvBALA", 0)
    empty_cluster = ldf.read_meta_properties(PUBLIC / "Romanenko3490__wallet-test/volumes/kafka/data/meta.properties")
    assert (empty_cluster.version, empty_cluster.cluster_id, empty_cluster.node_id) == (1, "", 1)
    old_marker = PUBLIC / "macsakini__KafkaCluster/kafka/data/.kafka_cleanshutdown"
    assert old_marker.stat().st_size == 0
    assert ldf.read_clean_shutdown(old_marker) == ldf.CleanShutdown(True, None)
    v0 = ldf.read_quorum_state(PUBLIC / "Niloufar1171__LDI-POC/__cluster_metadata-0/quorum-state")
    assert v0 == ldf.QuorumState(0, 1, 1, -1, None, 0, (1,), "")


# --- writers -----------------------------------------------------------------------------------

@pytest.fixture
def fsyncs(monkeypatch):
    calls = []
    real = os.fsync

    def record(fd):
        calls.append(os.readlink(f"/proc/self/fd/{fd}") if os.path.exists("/proc/self/fd") else fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", record)
    return calls


@pytest.mark.corpus
@pytest.mark.parametrize("name", ["recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                                  "cleaner-offset-checkpoint"])
def test_offset_writer_reproduces_kafka_bytes(corpus, tmp_path, fsyncs, name):
    target = tmp_path / name
    target.write_bytes(b"0\n0\n")  # an older version to be replaced
    cp.write_offset_checkpoint(target, cp.read_offset_checkpoint(KAFKA_DATA / name))
    assert target.read_bytes() == (KAFKA_DATA / name).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert fsyncs == [str(tmp_path / (name + ".tmp")), str(tmp_path)]  # the file, then its directory


@pytest.mark.corpus
def test_epoch_and_metadata_writers_reproduce_kafka_bytes(corpus, tmp_path, fsyncs):
    source = PUBLIC / "ArthurArutunyan04__Backend_labs/kafka-data/oms_order_status_changed-2"
    cp.write_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint",
                                     cp.read_leader_epoch_checkpoint(source / "leader-epoch-checkpoint"))
    cp.write_partition_metadata(tmp_path / "partition.metadata",
                                cp.read_partition_metadata(source / "partition.metadata"))
    for name in ("leader-epoch-checkpoint", "partition.metadata"):
        assert (tmp_path / name).read_bytes() == (source / name).read_bytes()
    assert len(fsyncs) == 4 and not list(tmp_path.glob("*.tmp"))


def test_writer_formats_like_kafka(tmp_path, fsyncs):
    path = tmp_path / "replication-offset-checkpoint"
    cp.write_offset_checkpoint(path, {TopicPartition("a.b_c-d", 3): 42, TopicPartition("x", 0): -1})
    assert path.read_bytes() == b"0\n2\na.b_c-d 3 42\nx 0 -1\n"
    cp.write_offset_checkpoint(path, {})
    assert path.read_bytes() == b"0\n0\n"
    assert cp.read_offset_checkpoint(path) == {}
    cp.write_leader_epoch_checkpoint(tmp_path / "e", [EpochEntry(0, 0), EpochEntry(5, 1234567890123)])
    assert (tmp_path / "e").read_bytes() == b"0\n2\n0 0\n5 1234567890123\n"
    assert cp.format_partition_metadata(PartitionMetadata(0, TOPIC_ID)) == f"version: 0\ntopic_id: {TOPIC_ID}".encode()


def test_writer_failure_leaves_target_and_no_tmp(tmp_path, monkeypatch):
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_bytes(b"0\n1\n0 0\n")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(CheckpointError, match="cannot write: No space left on device"):
        cp.write_leader_epoch_checkpoint(path, [EpochEntry(1, 5)])
    assert path.read_bytes() == b"0\n1\n0 0\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leader-epoch-checkpoint"]


def test_writer_overwrites_stale_tmp(tmp_path):
    path = tmp_path / "cleaner-offset-checkpoint"
    (tmp_path / "cleaner-offset-checkpoint.tmp").write_bytes(b"garbage from a crash" * 100)
    cp.write_offset_checkpoint(path, {TopicPartition("t", 0): 7})
    assert path.read_bytes() == b"0\n1\nt 0 7\n" and not (tmp_path / "cleaner-offset-checkpoint.tmp").exists()


def test_clean_shutdown_writer(tmp_path, fsyncs):
    path = tmp_path / ".kafka_cleanshutdown"
    ldf.write_clean_shutdown(path, 812)
    assert path.read_bytes() == b'{"version":0,"brokerEpoch":812}'
    assert fsyncs == [str(path)]
    assert ldf.read_clean_shutdown(path) == ldf.CleanShutdown(True, 812)


# --- generic checkpoint rules ------------------------------------------------------------------

WHERE = "/d/recovery-point-offset-checkpoint"


def _offsets(data: bytes):
    return cp.parse_offset_checkpoint(data, WHERE)


@pytest.mark.parametrize("data, expected", [
    (b"", {}),  # empty file: no entries
    (b"0", {}),  # version line only: no entries
    (b"0\n", {}),
    (b"0\n0\n", {}),
    (b"0\n0", {}),
    (b"0\r\n1\r\nt 0 5\r\n", {TopicPartition("t", 0): 5}),  # readLine accepts \r\n and \r
    (b"0\r1\rt 0 5", {TopicPartition("t", 0): 5}),
    (b"0\n1\nt\t0  5 \n", {TopicPartition("t", 0): 5}),  # runs of whitespace; trailing blank dropped
    (b"+0\n+1\nt +0 +5\n", {TopicPartition("t", 0): 5}),  # parseInt accepts a plus sign
    (b"0\n2\nt 0 5\nt 0 6\n", {TopicPartition("t", 0): 6}),  # HashMap: last one wins
    (b"0\n1\nt 2147483647 9223372036854775807\n", {TopicPartition("t", 2147483647): 9223372036854775807}),
    ("0\n1\nt \u0661 5\n".encode(), {TopicPartition("t", 1): 5}),  # Java's Character.digit knows Arabic digits
])
def test_offset_checkpoint_accepts(data, expected):
    assert _offsets(data) == expected


@pytest.mark.parametrize("data, message", [
    (b"1\n0\n", re.escape(f"Unrecognised version:1, expected version: 0 in checkpoint file at: {WHERE}")),
    (b"-1\n", "Unrecognised version:-1, expected version: 0"),
    (b"zero\n0\n", re.escape(f"Malformed line in checkpoint file [{WHERE}]: zero (line 1)")),
    (b" 0\n0\n", re.escape(f"Malformed line in checkpoint file [{WHERE}]:  0 (line 1)")),  # no trimming
    (b"\n", re.escape(f"Malformed line in checkpoint file [{WHERE}]:  (line 1)")),
    (b"\xef\xbb\xbf0\n0\n", "Malformed line in checkpoint file .*: \\\\ufeff0 \\(line 1\\)"),  # a BOM is text
    (b"0\nmany\n", "Malformed line in checkpoint file .*: many \\(line 2\\)"),
    (b"0\n2147483648\n", "Malformed line .*: 2147483648 \\(line 2\\)"),  # int32 count
    (b"0\n-1\n", "Illegal Capacity: -1"),  # Kafka: IllegalArgumentException from new ArrayList(-1)
    (b"0\n1\nt 0\n", re.escape(f"Malformed line in checkpoint file [{WHERE}]: t 0 (line 3)")),
    (b"0\n1\nt 0 5 6\n", "Malformed line .*: t 0 5 6 \\(line 3\\)"),
    (b"0\n1\n t 0 5\n", "Malformed line .*:  t 0 5 \\(line 3\\)"),  # leading blank = empty first field
    (b"0\n1\nt 0 5\n\n", "Malformed line .*:  \\(line 4\\)"),  # a blank line is an entry line
    (b"0\n1\nt x 5\n", 'Malformed line .*: t x 5 \\(line 3: For input string: "x"\\)'),
    (b"0\n1\nt 0 5x\n", 'For input string: "5x"'),
    (b"0\n1\nt 2147483648 5\n", 'For input string: "2147483648"'),  # partition is an int32
    (b"0\n1\nt 0 9223372036854775808\n", 'For input string: "9223372036854775808"'),
    (b"0\n1\nt 0 1_0\n", 'For input string: "1_0"'),  # Python's int() would take it
    (b"0\n1\nt 0 \xc2\xa05\n", 'For input string: "\\\\xa05"'),  # NBSP is not Java's \s
    (b"0\n3\nt 0 5\n", re.escape(f"Expected [3] entries in checkpoint file [{WHERE}], but found only [1]")),
    (b"0\n1\nt 0 5\nu 0 6\n", "Expected \\[1\\] entries .*, but found only \\[2\\]"),  # extra lines count
    (b"0\n1\nt 0 \xff\n", "not valid UTF-8 .* at byte 8, line 3"),
    (b"0\n1\nt 0 \xed\xa0\x80\n", "not valid UTF-8"),  # an encoded surrogate
    (b"0\n1\nt 0 5\x0b6\n", "Malformed line .*: t 0 5\\\\x0b6 \\(line 3\\)"),  # \x0b is \s; shown escaped
])
def test_offset_checkpoint_rejects(data, message):
    with pytest.raises(CheckpointError, match=message):
        _offsets(data)


def test_error_is_one_line_and_names_the_file():
    with pytest.raises(CheckpointError) as info:
        cp.parse_offset_checkpoint("0\n1\nt\u2028x 0\n".encode(), WHERE)  # U+2028 is not Java's \\s
    text = str(info.value)
    assert text.startswith(WHERE + ": Malformed line") and len(text.splitlines()) == 1
    long_line = b"0\n1\n" + b"x" * 100_000 + b"\n"
    with pytest.raises(CheckpointError) as info:
        cp.parse_offset_checkpoint(long_line, WHERE)
    assert len(str(info.value)) < 400


def test_leader_epoch_rules():
    assert cp.parse_leader_epoch_checkpoint(b"0\n2\n0 0\n3 100\n") == [EpochEntry(0, 0), EpochEntry(3, 100)]
    assert cp.parse_leader_epoch_checkpoint(b"") == []
    with pytest.raises(CheckpointError, match="Malformed line .*: 0 0 0 \\(line 3\\)"):
        cp.parse_leader_epoch_checkpoint(b"0\n1\n0 0 0\n", "leader-epoch-checkpoint")
    with pytest.raises(CheckpointError, match="Unrecognised version:1"):
        cp.parse_leader_epoch_checkpoint(b"1\n0\n")
    with pytest.raises(CheckpointError, match='For input string: "2147483648"'):
        cp.parse_leader_epoch_checkpoint(b"0\n1\n2147483648 0\n")


def test_missing_file_is_unreadable_not_empty(tmp_path):
    with pytest.raises(UnreadableInputError, match="no such file"):
        cp.read_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint")


# --- partition.metadata ------------------------------------------------------------------------

@pytest.mark.parametrize("data, expected", [
    (f"version: 0\ntopic_id: {TOPIC_ID}".encode(), PartitionMetadata(0, TOPIC_ID)),
    (f"version: 0\ntopic_id: {TOPIC_ID}\n".encode(), PartitionMetadata(0, TOPIC_ID)),
    (f"version:\t 3\r\nanything: {TOPIC_ID}==\nmore lines are ignored".encode(), PartitionMetadata(3, TOPIC_ID + "==")),
])
def test_partition_metadata_accepts(data, expected):
    assert cp.parse_partition_metadata(data) == expected


@pytest.mark.parametrize("data, message", [
    (b"", "Missing line 1 in partition metadata file"),
    (b"version: 0\n", "Missing line 2"),
    (b"version:0\ntopic_id: x\n", "Malformed line in checkpoint file .*: version:0 \\(line 1\\)"),
    (b"version: 0 \ntopic_id: x\n", "Malformed line .*: version: 0  \\(line 1\\)"),
    (b"version: x\ntopic_id: x\n", "Malformed line .*: version: x \\(line 1\\)"),
    (b"version: 0: 1\n", "Malformed line .*: version: 0: 1 \\(line 1\\)"),
    (b"version: -1\ntopic_id: x\n", "Unrecognized version of partition metadata file \\+ \\(.*\\): -1"),
    (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "Invalid topic ID in partition metadata file \\(.*\\)$"),
    (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA==", "Invalid topic ID in partition metadata file \\(.*\\)$"),
    (b"version: 0\ntopic_id: Jzk05VC1RFa1-eBDd20_k", "Invalid topic ID .*not valid base64url"),
    (b"version: 0\ntopic_id: Jzk05VC1RFa1-eBDd20_kAAA", "decoded as 18 bytes, which is not equal to the expected 16"),
    (b"version: 0\ntopic_id: Jzk05VC1RFa1-eBDd20_kAAAAAAAAA", "too long to be decoded as a base64 UUID"),
    (b"version: 0\ntopic_id: Jzk05VC1RFa1+eBDd20/kA", "not valid base64url"),  # not the URL alphabet
    (b"version: 0\ntopic_id:  \xff", "not valid UTF-8"),
])
def test_partition_metadata_rejects(data, message):
    with pytest.raises(CheckpointError, match=message):
        cp.parse_partition_metadata(data, "/d/t-0/partition.metadata")


# --- meta.properties ---------------------------------------------------------------------------

def test_java_properties_syntax():
    text = ("# comment\n! also a comment\n  \n"
            "a=1\nb : 2\nc 3\nd\te=4\n   f  =  5  \n"
            "g=one\\\n    two\\\\\nh\\ key=x\\=y\\:z\n"
            "i=\\u0041\\t\\n\\r\\f\\q\n"
            "j\n"
            "k=trailing backslash at end of file\\")
    assert java_text.parse_java_properties(text) == {
        "a": "1", "b": "2", "c": "3", "d": "e=4", "f": "5  ", "g": "onetwo\\", "h key": "x=y:z",
        "i": "A\t\n\r\f" + "q", "j": "", "k": "trailing backslash at end of file"}
    assert java_text.parse_java_properties("a=1\\\n#not a comment\r\nb=2\r\n") == {"a": "1#not a comment", "b": "2"}
    assert java_text.parse_java_properties("a=1\na=2") == {"a": "2"}
    with pytest.raises(ValueError, match="Malformed"):
        java_text.parse_java_properties("a=\\u12")


@pytest.mark.parametrize("text, expected", [
    ("version=1\nnode.id=3\ncluster.id=c\n", ldf.MetaProperties(1, "c", 3, None, None, {})),
    ("broker.id=7\n", ldf.MetaProperties(0, None, 7, 7, None, {})),  # no version: version 0
    ("version= 0 \n", ldf.MetaProperties(0, None, None, None, None, {})),  # version is trimmed
    ("version=0\nnode.id=5\nfoo=bar\n", ldf.MetaProperties(0, None, None, None, None, {"node.id": "5", "foo": "bar"})),
    ("version=1\nnode.id=1\ncluster.id=c\nbroker.id=x\ndirectory.id=p9KLuuGgQx6CUCpIYkcGnQ\n",
     ldf.MetaProperties(1, "c", 1, None, "p9KLuuGgQx6CUCpIYkcGnQ", {"broker.id": "x"})),
])
def test_meta_properties_accepts(text, expected):
    assert ldf.parse_meta_properties(("#\n#Sun Nov 22 11:27:16 UTC 2026\n" + text).encode()) == expected


def test_meta_properties_is_read_as_latin1_like_kafka():
    # Kafka writes UTF-8 (store(Writer)) but reads ISO-8859-1 (load(InputStream)): any byte decodes
    meta = ldf.parse_meta_properties("version=0\ncluster.id=caf\u00e9\n".encode("utf-8"))
    assert meta.cluster_id == "caf\u00c3\u00a9"
    assert ldf.parse_meta_properties(b"version=0\ncluster.id=\xff\n").cluster_id == "\xff"


@pytest.mark.parametrize("text, message", [
    ("version=2\n", "Unknown meta.properties version number 2"),
    ("version=one\n", "Invalid meta.properties version string 'one'"),
    ("version=1\ncluster.id=c\n", "Failed to find node.id"),
    ("version=1\nnode.id=1\n", "cluster.id was not found."),
    ("version=1\nnode.id=1 \ncluster.id=c\n", "Unable to read node.id as a base-10 number"),  # no trim
    ("version=0\nbroker.id=x\n", "Unable to read broker.id as a base-10 number"),
    ("version=0\ndirectory.id=short\n", "Unable to read directory.id as a Uuid"),
    ("version=0\nkey=\\u00zz\n", "Malformed \\\\uxxxx encoding"),
])
def test_meta_properties_rejects(text, message):
    with pytest.raises(CheckpointError, match=message):
        ldf.parse_meta_properties(text.encode(), "/d/meta.properties")


# --- .kafka_cleanshutdown ----------------------------------------------------------------------

@pytest.mark.parametrize("data, epoch", [
    (b"", None), (b'{"version":0,"brokerEpoch":16}', 16), (b'{"brokerEpoch":-1}', -1),
    (b'{"version":0,"brokerEpoch":16,"future":[1]}', 16),  # unknown fields ignored
    (b'{"version":0,"brokerEpoch":16} trailing', 16),  # Jackson ignores trailing content
    (b'{"version":0}', None), (b'{"version":0,"brokerEpoch":null}', None),
    (b'{"version":"x","brokerEpoch":5}', None), (b"garbage", None), (b"\xff\xfe", None), (b"[16]", None),
    (b'{"brokerEpoch":9223372036854775808}', None), (b'{"brokerEpoch":"17"}', 17), (b'{"brokerEpoch":2.9}', 2),
])
def test_clean_shutdown_content(tmp_path, data, epoch):
    path = tmp_path / ".kafka_cleanshutdown"
    path.write_bytes(data)
    assert ldf.read_clean_shutdown(path) == ldf.CleanShutdown(True, epoch)


def test_clean_shutdown_absent_or_odd(tmp_path):
    assert ldf.read_clean_shutdown(tmp_path / ".kafka_cleanshutdown") == ldf.CleanShutdown(False, None)
    (tmp_path / "d").mkdir()
    assert ldf.read_clean_shutdown(tmp_path / "d") == ldf.CleanShutdown(True, None)  # File.exists()


# --- quorum-state ------------------------------------------------------------------------------

V0 = ('{"clusterId":"","leaderId":1,"leaderEpoch":8,"votedId":-1,"appliedOffset":0,'
      '"currentVoters":[{"voterId":1}],"data_version":0}')
V1 = '{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}'


@pytest.mark.parametrize("text, expected", [
    (V0, ldf.QuorumState(0, 1, 8, -1, None, 0, (1,), "")),
    (V1, ldf.QuorumState(1, 1, 1, -1, cp.ZERO_UUID)),
    (V1[:-1] + ',"someFutureField":{"a":1}}\nsecond line ignored', ldf.QuorumState(1, 1, 1, -1, cp.ZERO_UUID)),
    (V0.replace('[{"voterId":1}]', "null"), ldf.QuorumState(0, 1, 8, -1, None, 0, None, "")),
    (V1.replace('"data_version":1', '"data_version":65537'), ldf.QuorumState(1, 1, 1, -1, cp.ZERO_UUID)),
])
def test_quorum_state_accepts(text, expected):
    assert ldf.parse_quorum_state(text.encode()) == expected


@pytest.mark.parametrize("text, message", [
    ("", "File ended prematurely"),
    ("[1]", "is not an object node"),
    ("{", "line 1 is not JSON"),
    ('{"leaderId":1}', "does not have data_version field"),
    (V1.replace('"data_version":1', '"data_version":2'),
     "data_version \\(2\\) is not within the min \\(0\\) and max \\(1\\)"),
    (V1.replace('"data_version":1', '"data_version":"1"'),  # Jackson's shortValue() of a string is 0
     "unable to locate field 'clusterId', which is mandatory in version 0"),
    (V1.replace('"votedId":-1,', ""), "unable to locate field 'votedId', which is mandatory in version 1"),
    (V1.replace('"leaderId":1', '"leaderId":"1"'), "QuorumStateData.leaderId: expected an int32"),
    (V1.replace('"leaderId":1', '"leaderId":2147483648'), "expected an int32"),
    (V0.replace('"appliedOffset":0', '"appliedOffset":1.0'), "QuorumStateData.appliedOffset: expected an int64"),
    (V0.replace('[{"voterId":1}]', '[{"id":1}]'), "unable to locate field 'voterId'"),
    (V0.replace('[{"voterId":1}]', '{}'), "expected a JSON array"),
    (V1.replace("AAAAAAAAAAAAAAAAAAAAAA", "AAAA"), "QuorumStateData.votedDirectoryId: .*decoded as 3 bytes"),
    ("[" * 100_000, "not JSON"),
])
def test_quorum_state_rejects(text, message):
    with pytest.raises(CheckpointError, match=message):
        ldf.parse_quorum_state(text.encode(), "/m/__cluster_metadata-0/quorum-state")


def test_quorum_state_rejects_bad_utf8():
    with pytest.raises(CheckpointError, match="not valid UTF-8"):
        ldf.parse_quorum_state(b'{"x":"\xff"}')


# --- file names --------------------------------------------------------------------------------

@pytest.mark.parametrize("name, kind", [
    ("recovery-point-offset-checkpoint", "recovery-point"), ("replication-offset-checkpoint", "replication"),
    ("log-start-offset-checkpoint", "log-start"), ("cleaner-offset-checkpoint", "cleaner"),
    ("leader-epoch-checkpoint", "leader-epoch"), ("partition.metadata", "partition-metadata"),
    ("meta.properties", "meta-properties"), (".kafka_cleanshutdown", "clean-shutdown"),
    ("quorum-state", "quorum-state"), (".lock", "lock"), ("bootstrap.checkpoint", "bootstrap-checkpoint"),
    ("recovery-point-offset-checkpoint.tmp", "tmp"), ("partition.metadata.tmp", "tmp"), ("quorum-state.tmp", "tmp"),
    ("00000000000000000000.log", None), ("00000000000000000000-0000000001.checkpoint", None),
    ("plain-0", None), ("meta.properties.bak", None),
])
def test_classify_log_dir_file(name, kind):
    assert ldf.classify_log_dir_file(name) == kind


# --- nothing but CheckpointError, whatever the bytes -------------------------------------------

PARSERS = [cp.parse_offset_checkpoint, cp.parse_leader_epoch_checkpoint, cp.parse_partition_metadata,
           ldf.parse_meta_properties, ldf.parse_quorum_state]
CHECKPOINTISH = st.lists(st.sampled_from(
    [b"0", b"1", b"-", b"+", b"9" * 20, b" ", b"\t", b"\n", b"\r", b"\r\n", b"t", b"x", b":", b": ", b"=", b"\\",
     b"#", b"version", b"topic_id", TOPIC_ID.encode(), b"AAAAAAAAAAAAAAAAAAAAAA", b"\xff", b"\xc2\xa0", b"{", b"}",
     b'"data_version"', b"[", b"]", b",", b"\\u00"]), max_size=30).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=200), CHECKPOINTISH), which=st.integers(0, len(PARSERS) - 1))
def test_arbitrary_bytes_raise_only_checkpoint_error(data, which):
    try:
        PARSERS[which](data, "/fuzz/file")
    except CheckpointError as exc:
        assert len(str(exc).splitlines()) == 1
    epoch = ldf.parse_clean_shutdown(data)  # never raises at all
    assert epoch is None or isinstance(epoch, int)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.builds(TopicPartition, st.from_regex(r"[A-Za-z0-9._-]{1,20}", fullmatch=True),
                                 st.integers(0, 2**31 - 1)), st.integers(-(2**63), 2**63 - 1), max_size=20))
def test_offset_checkpoint_format_parse_round_trip(offsets):
    data = cp.format_offset_checkpoint(offsets)
    assert cp.parse_offset_checkpoint(data) == offsets
    assert cp.format_offset_checkpoint(cp.parse_offset_checkpoint(data)) == data


# --- the JDK itself, when installed ------------------------------------------------------------

JAVA_PROPERTIES_DUMP = """
import java.io.*; import java.nio.file.*; import java.util.*;
public class PropsDump {
    public static void main(String[] a) throws Exception {
        for (String name : a) {
            StringBuilder b = new StringBuilder();
            try (InputStream in = Files.newInputStream(Paths.get(name))) {
                Properties p = new Properties(); p.load(in);
                for (String k : new TreeSet<>(p.stringPropertyNames()))
                    b.append(hex(k)).append('=').append(hex(p.getProperty(k))).append(';');
            } catch (IllegalArgumentException e) { b.append("ERR"); }
            System.out.println(b);
        }
    }
    static String hex(String s) { StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) b.append(String.format("%04x", (int) c)); return b.toString(); }
}
"""


def _hex(text: str) -> str:
    units = text.encode("utf-16-be", "surrogatepass")
    return "".join(units[i:i + 2].hex() for i in range(0, len(units), 2))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("javac") is None, reason="no JDK installed")
def test_properties_parser_matches_the_jdk(tmp_path):
    rng = random.Random(2024)
    pieces = [b" ", b"\t", b"\f", b"\r", b"\n", b"\r\n", b"\\", b"\\\n", b"#", b"!", b"=", b":", b"a", b"u",
              b"0", b"\\u0041", b"\\ud83d\\ude00", b"\xe9"]
    inputs = [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(1500)]
    files = []
    for index, data in enumerate(inputs):
        files.append(tmp_path / f"{index:05d}.properties")
        files[-1].write_bytes(data)
    (tmp_path / "PropsDump.java").write_text(JAVA_PROPERTIES_DUMP)
    subprocess.run(["javac", "PropsDump.java"], cwd=tmp_path, check=True, capture_output=True)
    java = subprocess.run(["java", "-cp", str(tmp_path), "PropsDump", *map(str, files)], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    for data, expected in zip(inputs, java, strict=True):
        try:
            props = java_text.parse_java_properties(data.decode("latin-1"))
            ours = "".join(f"{_hex(k)}={_hex(v)};" for k, v in sorted(props.items(), key=lambda kv: _hex(kv[0])))
        except ValueError:
            ours = "ERR"
        assert ours == expected, data
