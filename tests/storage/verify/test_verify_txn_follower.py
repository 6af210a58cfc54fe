"""A follower's .txnindex: a last stable offset above recovery's is valid (info), below it is not.

A follower appends a fetched chunk of batches at once; Kafka updates every producer of the chunk
before it computes the last stable offsets of the transactions the chunk completes, so a
transaction another producer opens later in the chunk bounds the entry (UnifiedLog.append).
Recovery, batch by batch, writes the marker's offset + 1 there.
"""

from __future__ import annotations

import struct

import pytest

from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker
from seglog_cli.storage.log.findings import Code, Severity
from seglog_cli.storage.write.rebuild_index import plan_rebuild
from seglog_cli.storage.verify.verify import CLEAN, DAMAGE, verify

T = 1_700_000_000_000


def _partition(tmp_path, lso: int):
    directory = tmp_path / "t-0"
    directory.mkdir()
    log = b"".join([
        build_batch([NewRecord(value=b"a")], base_offset=0, producer_id=7, producer_epoch=0, base_sequence=0,
                    transactional=True, base_timestamp=T, partition_leader_epoch=0),
        build_end_txn_marker(commit=False, base_offset=1, producer_id=7, producer_epoch=0, timestamp=T + 1),
        build_batch([NewRecord(value=b"plain", timestamp=T + 2)], base_offset=2, partition_leader_epoch=0),
        build_batch([NewRecord(value=b"b", timestamp=T + 3)], base_offset=3, producer_id=8, producer_epoch=0,
                    base_sequence=0, transactional=True, partition_leader_epoch=0),
        build_end_txn_marker(commit=True, base_offset=4, producer_id=8, producer_epoch=0, timestamp=T + 4),
    ])
    (directory / "00000000000000000000.log").write_bytes(log)
    (directory / "00000000000000000000.index").write_bytes(b"")
    (directory / "00000000000000000000.timeindex").write_bytes(struct.pack(">qi", T + 4, 4))
    (directory / "00000000000000000000.txnindex").write_bytes(struct.pack(">hqqqq", 0, 7, 0, 1, lso))
    (directory / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    return directory


def test_recovery_writes_marker_plus_one(tmp_path):
    directory = _partition(tmp_path, 2)
    assert verify([str(directory)]).status == CLEAN
    assert not plan_rebuild([str(directory)]).changes


def test_a_follower_bound_is_info(tmp_path):
    directory = _partition(tmp_path, 3)  # producer 8's transaction, opened later in the chunk
    report = verify([str(directory)])
    assert report.status == CLEAN
    (info,) = [f for f in report.all_findings() if f.code == Code.TXN_INDEX_MISMATCH]
    assert info.severity is Severity.INFO and "follower" in info.message


@pytest.mark.parametrize("lso", [1, 0])
def test_a_bound_below_recovery_is_damage(tmp_path, lso):
    assert verify([str(_partition(tmp_path, lso))]).status == DAMAGE
