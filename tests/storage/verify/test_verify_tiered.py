"""``seglog verify`` of a tiered partition: the corpus's real tiered storage (Kafka 4.2.0's
LocalTieredStorage, ``kafka-4.2.0/tiered``: remote segments 0, 1040, 2080, 3120 of ``tiered-0``,
local segments 2080, 3120 and the active 4160, ``__remote_log_metadata-0..2``) read as one log,
healthy and with one damage per case; each case asserts every finding of severity warning or
error, and every tiered finding, exactly.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from seglog_cli.storage.verify.verify import CLEAN, DAMAGE, VerifyOptions, verify

TIERED = "kafka-4.2.0/tiered"
TOPIC_ID = "NgDFhHPYTFCyTgfmgOxB0w"
REMOTE_DIR = f"tiered-0-{TOPIC_ID}"
SEGMENT_IDS = {0: "zGmjh0csR4CRuy3KUp6llg", 1040: "ojmK8OlsQKi1TlLRntD2_g", 2080: "h70NTNn_RcuJCcDGZKAn3A",
               3120: "eJxmZhVbSq68bNR8MA5Ikw"}
BATCH = 15949  # every batch of the remote and rolled local segments: 16 records, 15949 bytes


def remote_name(base: int, suffix: str) -> str:
    return f"{base:020d}-{SEGMENT_IDS[base]}{suffix}"


@pytest.fixture
def tiered(corpus, tmp_path) -> Path:
    source = corpus / TIERED
    if not (source / "remote").is_dir():
        pytest.skip(f"{source} has no remote/ (an older corpus)")
    for part in ("remote", "data"):
        shutil.copytree(source / part, tmp_path / part)
    for path in tmp_path.rglob("*"):  # the corpus is read-only
        path.chmod(0o755 if path.is_dir() else 0o644)
    return tmp_path


def remote(root: Path) -> Path:
    return root / "remote" / "kafka-tiered-storage" / REMOTE_DIR


def run(root: Path, *paths: Path):
    """verify of the remote storage root and the local log dir (or the given paths)."""
    given = paths or (root / "remote", root / "data")
    return verify([str(p) for p in given], VerifyOptions())


def judged(report) -> list[tuple[str, str, str, int | None]]:
    """(file name, code, severity, offset) of every warning and error, and every tiered finding."""
    return sorted((Path(f.path).name, f.code, f.severity.value, f.offset) for f in report.all_findings()
                  if f.severity.value != "info" or f.code.startswith(("TIERED_", "REMOTE_")))


def rewrite_log(path: Path, change) -> None:
    """``change(data, position, n)`` on every batch of a .log (n = the batch's index)."""
    data = bytearray(path.read_bytes())
    position = n = 0
    while position < len(data):
        size = struct.unpack_from(">i", data, position + 8)[0]
        change(data, position, n)
        position += 12 + size
        n += 1
    path.write_bytes(data)


def fix_crc(data: bytearray, position: int) -> None:
    """The v2 batch CRC (CRC-32C from the attributes to the end of the batch)."""
    size = struct.unpack_from(">i", data, position + 8)[0]
    struct.pack_into(">I", data, position + 17, crc32c(bytes(data[position + 21:position + 12 + size])))


def test_healthy_tiered_partition_is_clean_as_one_log(tiered):
    report = run(tiered)
    assert report.status == CLEAN and judged(report) == []
    [joined] = [p for p in report.partitions if p.topic == "tiered"]
    assert joined.remote_path == str(remote(tiered))
    assert (joined.log_start_offset, joined.log_end_offset) == (0, 4200)
    assert joined.segments == 4 + 3  # remote 0, 1040, 2080, 3120; local 2080, 3120, 4160
    assert joined.as_dict()["remotePath"] == str(remote(tiered))


def test_remote_dir_alone_and_the_pair_given_directly_are_clean(tiered):
    alone = run(tiered, remote(tiered))
    assert alone.status == CLEAN and alone.all_findings() == []
    [partition] = alone.partitions
    assert (partition.topic, partition.partition, partition.log_start_offset, partition.log_end_offset) == (
        "tiered", 0, 0, 4160)
    pair = run(tiered, remote(tiered), tiered / "data" / "tiered-0")
    assert pair.status == CLEAN and pair.all_findings() == []
    assert [(p.log_start_offset, p.log_end_offset, p.segments) for p in pair.partitions] == [(0, 4200, 7)]


def test_a_missing_remote_segment_is_a_gap_and_its_metadata_names_it(tiered):
    for path in remote(tiered).glob(f"{1040:020d}-*"):
        path.unlink()
    report = run(tiered)
    assert report.status == DAMAGE
    assert judged(report) == [
        (remote_name(2080, ".log"), "TIERED_OFFSET_GAP", "error", 1040),
        (REMOTE_DIR, "REMOTE_METADATA_WITHOUT_SEGMENT", "error", 1040),
    ]


def test_a_gap_between_remote_end_and_local_start(tiered):
    """Remote storage lost its last segment (3120..4159) and local retention had already deleted
    the local copies of 2080 and 3120: offsets 3120..4159 are nowhere."""
    for path in remote(tiered).glob(f"{3120:020d}-*"):
        path.unlink()
    for base in (2080, 3120):
        for path in (tiered / "data" / "tiered-0").glob(f"{base:020d}.*"):
            path.unlink()
    report = run(tiered)
    assert judged(report) == [
        ("00000000000000004160.log", "TIERED_OFFSET_GAP", "error", 3120),
        (REMOTE_DIR, "REMOTE_METADATA_WITHOUT_SEGMENT", "error", 3120),
    ]


def test_an_epoch_fork_in_a_remote_segment(tiered):
    """Batches 30.. of remote segment 1040 (offsets 1520..2079) rewritten to leader epoch 1 (not
    covered by the CRC): the lineage (local leader-epoch-checkpoint: epoch 0 from 0) has no epoch 1,
    the local log starts back in epoch 0, and the metadata's epochs are {0=1040}."""
    def fork(data, position, n):
        if n >= 30:
            struct.pack_into(">i", data, position + 12, 1)
    rewrite_log(remote(tiered) / remote_name(1040, ".log"), fork)
    report = run(tiered)
    assert report.status == DAMAGE
    assert judged(report) == [
        (remote_name(1040, ".log"), "REMOTE_METADATA_MISMATCH", "error", 1040),
        (remote_name(1040, ".log"), "TIERED_EPOCH_MISMATCH", "error", 1520),
        ("00000000000000002080.log", "TIERED_EPOCH_MISMATCH", "error", 2080),
    ]
    [fork_finding] = [f for f in report.all_findings() if f.offset == 1520]
    assert fork_finding.position == 30 * BATCH


def test_a_remote_leader_epoch_checkpoint_of_another_lineage(tiered):
    (remote(tiered) / remote_name(2080, ".leader_epoch_checkpoint")).write_text("0\n2\n0 0\n1 1500\n")
    assert judged(run(tiered)) == [
        (remote_name(2080, ".leader_epoch_checkpoint"), "TIERED_EPOCH_MISMATCH", "error", None)]


def test_the_same_batch_with_another_epoch_in_the_local_copy(tiered):
    """Local 2080 (a copy of remote 2080) with its last batch (offsets 3104..3119) in epoch 3:
    the overlap disagrees on the epoch only; the local checkpoint does not give epoch 3 either."""
    def bump(data, position, n):
        if n == 64:
            struct.pack_into(">i", data, position + 12, 3)
    rewrite_log(tiered / "data" / "tiered-0" / "00000000000000002080.log", bump)
    report = run(tiered)
    assert judged(report) == [
        ("00000000000000002080.log", "TIERED_EPOCH_MISMATCH", "error", 3104),
        ("leader-epoch-checkpoint", "LEADER_EPOCH_NOT_IN_CHECKPOINT", "warning", 3104),
    ]
    [finding] = [f for f in report.all_findings() if f.code == "TIERED_EPOCH_MISMATCH"]
    assert finding.position == 64 * BATCH and "leader epoch 3 here and 0 in the other copy" in finding.message


def test_an_overlap_with_other_data_beyond_what_kafka_allows(tiered):
    """Local 2080 overlaps remote 2080 (allowed: a copy); one record byte changed and the CRC
    made valid again makes it another history for the same offsets."""
    def change(data, position, n):
        if n == 0:
            size = struct.unpack_from(">i", data, position + 8)[0]
            data[position + 12 + size - 1] ^= 1
            fix_crc(data, position)
    rewrite_log(tiered / "data" / "tiered-0" / "00000000000000002080.log", change)
    assert judged(run(tiered)) == [("00000000000000002080.log", "TIERED_OVERLAP", "error", 2080)]


def test_a_remote_segment_past_the_local_log_end(tiered):
    """The local log cut back to 2080..3119 (local 3120 and 4160 gone): remote 3120..4159 is past
    its end."""
    for base in (3120, 4160):
        for path in (tiered / "data" / "tiered-0").glob(f"{base:020d}.*"):
            path.unlink()
    (tiered / "data" / "tiered-0" / "00000000000000004200.snapshot").unlink()
    found = judged(run(tiered))
    assert (remote_name(3120, ".log"), "TIERED_REMOTE_PAST_LOG_END", "error", 4159) in found
    assert [f for f in found if f[1].startswith(("TIERED_", "REMOTE_"))] == [
        (remote_name(3120, ".log"), "TIERED_REMOTE_PAST_LOG_END", "error", 4159)]


def test_metadata_disagreeing_with_the_files(tiered):
    """The __remote_log_metadata record of segment 0 says EndOffset 1038 (batch CRC made valid)."""
    log = tiered / "data" / "__remote_log_metadata-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    size = struct.unpack_from(">i", data, 8)[0]
    at = bytes(data).find(struct.pack(">q", 1039), 0, 12 + size)
    struct.pack_into(">q", data, at, 1038)
    fix_crc(data, 0)
    log.write_bytes(data)
    report = run(tiered)
    assert judged(report) == [(remote_name(0, ".log"), "REMOTE_METADATA_MISMATCH", "error", 0)]
    message = next(f.message for f in report.all_findings() if f.code == "REMOTE_METADATA_MISMATCH")
    assert "end offset 1038, the segment's last batch ends at 1039" in message


def test_a_remote_segment_no_metadata_names(tiered):
    """Remote 3120's fileset renamed to another segment id: its files have no metadata, and the
    metadata's segment has no files."""
    for path in remote(tiered).glob(f"{3120:020d}-*"):
        path.rename(path.with_name(path.name.replace(SEGMENT_IDS[3120], "A" * 22)))
    assert judged(run(tiered)) == [
        (f"{3120:020d}-{'A' * 22}.log", "REMOTE_SEGMENT_WITHOUT_METADATA", "warning", 3120),
        (REMOTE_DIR, "REMOTE_METADATA_WITHOUT_SEGMENT", "error", 3120),
    ]


def test_an_incomplete_fileset(tiered):
    (remote(tiered) / remote_name(0, ".timeindex")).unlink()
    assert judged(run(tiered)) == [
        (remote_name(0, ".log"), "REMOTE_FILESET_INCOMPLETE", "error", 0),
        (remote_name(0, ".timeindex"), "TIME_INDEX_MISSING", "warning", None),
    ]


def test_a_remote_dir_of_another_topic_id(tiered):
    other = remote(tiered).with_name(f"tiered-0-{'B' * 22}")
    remote(tiered).rename(other)
    report = run(tiered, other, tiered / "data" / "tiered-0")
    assert judged(report) == [(other.name, "TIERED_TOPIC_ID_MISMATCH", "error", None)]


# -- tiered partitions built from real broker segments (tests/tiered_builder.py) --------------------

REPLICAS = "kafka-4.2.0/replicas"


def built(corpus, tmp_path, source: str, remote_bases, local_bases):
    path = corpus / REPLICAS / source
    if not path.is_dir():
        pytest.skip(f"{path} not in this corpus")
    from tests.tiered_builder import build_tiered
    return build_tiered(path, tmp_path, remote_bases, local_bases)


def test_a_transactional_partition_tiered_is_clean(corpus, tmp_path):
    """replicas/transactional broker 1 (segments 0, 2169, 4361; .txnindex files): 0 and 2169 in
    remote storage, 2169 and 4361 local."""
    remote_dir, local_dir = built(corpus, tmp_path, "transactional/broker-1/events-0", [0, 2169], [2169, 4361])
    report = run(tmp_path, remote_dir, local_dir)
    assert report.status == CLEAN and report.all_findings() == []
    [partition] = report.partitions
    assert (partition.log_start_offset, partition.log_end_offset, partition.segments) == (0, 4734, 4)


def test_the_gap_left_by_a_lost_remote_segment_of_a_real_partition(corpus, tmp_path):
    remote_dir, local_dir = built(corpus, tmp_path, "transactional/broker-1/events-0", [0], [4361])
    assert judged(run(tmp_path, remote_dir, local_dir)) == [
        ("00000000000000004361.log", "TIERED_OFFSET_GAP", "error", 2169)]


def test_an_unclean_election_fork_across_the_boundary(corpus, tmp_path):
    """replicas/unclean-election: broker 1 (leader, epoch 2) copied 0..2132 and 2133..4292 to remote
    storage, then was killed; broker 2 took over uncleanly in epoch 4 at 3900 and its local log is
    4288.. (its checkpoint {0=0, 1=1300, 2=2300, 4=3900}). The remote segment 2133 holds epoch-2
    offsets 3900..4292 that the lineage gives to epoch 4, its checkpoint lacks epoch 4, and its last
    batches overlap the local 4288.. with other data."""
    remote_dir, local_dir = built(corpus, tmp_path, "unclean-election/broker-1/events-0", [0, 2133], [])
    shutil.rmtree(local_dir)
    shutil.copytree(corpus / REPLICAS / "unclean-election/broker-2/events-0", local_dir)
    for path in {*local_dir.glob("00000000000000000000.*"), *local_dir.glob("00000000000000002133.*"),
                 local_dir / "00000000000000003900.snapshot"}:
        path.unlink()
    for path in local_dir.iterdir():
        path.chmod(0o644)
    second = next(remote_dir.glob("00000000000000002133-*.log")).name
    report = run(tmp_path, remote_dir, local_dir)
    assert judged(report) == sorted([
        ("00000000000000004288.log", "TIERED_OVERLAP", "error", 4288),
        (second, "TIERED_EPOCH_MISMATCH", "error", 3900),
        (second.replace(".log", ".leader_epoch_checkpoint"), "TIERED_EPOCH_MISMATCH", "error", None),
    ])


def copy_fileset(root: Path, base: int, new_id: str, change=None) -> str:
    for path in remote(root).glob(f"{base:020d}-{SEGMENT_IDS[base]}.*"):
        target = path.with_name(path.name.replace(SEGMENT_IDS[base], new_id))
        shutil.copyfile(path, target)
        if change is not None and target.suffix == ".log":
            rewrite_log(target, change)
    return remote_name(base, ".log").replace(SEGMENT_IDS[base], new_id)


def test_remote_segments_overlapping_with_the_same_batches_are_allowed(tiered):
    """A second copy of 1040..2079 under another segment id (a new leader copying what an old one
    already had: RemoteLogManager allows overlapping remote segments of one lineage)."""
    copy_fileset(tiered, 1040, "z" * 22)
    report = run(tiered, remote(tiered), tiered / "data" / "tiered-0")
    assert report.status == CLEAN and report.all_findings() == []


def test_remote_segments_overlapping_with_other_data(tiered):
    def change(data, position, n):
        if n == 3:
            size = struct.unpack_from(">i", data, position + 8)[0]
            data[position + 12 + size - 1] ^= 1
            fix_crc(data, position)
    name = copy_fileset(tiered, 1040, "z" * 22, change)
    report = run(tiered, remote(tiered), tiered / "data" / "tiered-0")
    assert judged(report) == [(name, "TIERED_OVERLAP", "error", 1088)]
    [finding] = report.all_findings()
    assert finding.position == 3 * BATCH


def test_a_remote_leader_epoch_checkpoint_going_back(tiered):
    path = remote(tiered) / remote_name(1040, ".leader_epoch_checkpoint")
    path.write_text("0\n2\n3 0\n1 10\n")
    assert judged(run(tiered)) == [(path.name, "LEADER_EPOCH_NOT_INCREASING", "error", 10)]
    alone = run(tiered, path)  # the file given on its own
    assert judged(alone) == [(path.name, "LEADER_EPOCH_NOT_INCREASING", "error", 10)]
    path.write_text("0\n1\nnot an entry\n")
    assert [code for _, code, _, _ in judged(run(tiered, path))] == ["CHECKPOINT_UNREADABLE"]
