"""rebuild-index: the indexes Kafka's recovery writes, checked against the broker's own files.

* recovery case c (the broker rebuilt a deleted ``.index`` and recovered the unflushed active
  segment): seglog's rebuild of the "before" equals every index file the broker left "after";
* every broker-written segment in the corpus: nothing to change;
* follower-style appends (several batches per append) give indexes that differ from the
  per-batch rebuild, and every offset and timestamp lookup agrees through both;
* preallocated tails, torn tails, overflow, the lock, backups, undo and kills at every step.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.write.rebuild_index import (CREATE, IDENTICAL, REWRITE, TRIM, RebuildError, apply_rebuild,
                                              plan_rebuild)
from seglog_cli.storage.write.safety import LogDirLockedError
from seglog_cli.storage.write.undo import undo
from seglog_cli.storage.write.write_session import WriteSession
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.config.topic_config import TopicConfig
from seglog_cli.storage.verify.verify import CLEAN, verify
from seglog_cli.storage.write.writer import SegmentConfig, SegmentWriter
from tests.conftest import restore_preallocated

CASE_C = "kafka-4.2.0/recovery-cases/c-delete-oldest-index"


def _writable_copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    for root, dirs, files in os.walk(target):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    return target


@pytest.fixture
def case_c(corpus, tmp_path) -> Path:
    """The log dir the broker started on in recovery case c (plain-0 with its oldest .index gone)."""
    return _writable_copy(corpus / CASE_C / "before", tmp_path / "data")


def test_recovery_case_c_rebuilds_what_the_broker_rebuilt(corpus, case_c):
    after = corpus / CASE_C / "after" / "plain-0"
    plan = plan_rebuild([str(case_c / "plain-0")])
    assert not plan.refused and not plan.unreadable
    actions = {f.path.name: f.action for s in plan.segments for f in s.files}
    assert actions["00000000000000000000.index"] == CREATE
    # the active segment the broker recovered: its append-written indexes differ from recovery's
    assert actions["00000000000000006225.index"] == REWRITE
    for segment in plan.segments:
        for planned in segment.files:
            assert planned.rebuilt == (after / planned.path.name).read_bytes(), planned.path.name
    result = apply_rebuild(plan, backup_root=case_c.parent / "backups")
    assert sorted(p.name for p in result.written) == ["00000000000000000000.index", "00000000000000006225.index",
                                                      "00000000000000006225.timeindex"]
    for name in ("00000000000000000000.index", "00000000000000006225.index", "00000000000000006225.timeindex"):
        assert (case_c / "plain-0" / name).read_bytes() == (after / name).read_bytes()
    assert verify([str(case_c / "plain-0")]).status == CLEAN
    assert all(f.action == IDENTICAL for s in plan_rebuild([str(case_c)]).segments for f in s.files)
    undo(result.backup_dir)
    assert not (case_c / "plain-0" / "00000000000000000000.index").exists()
    before = corpus / CASE_C / "before" / "plain-0" / "00000000000000006225.index"
    assert (case_c / "plain-0" / "00000000000000006225.index").read_bytes() == before.read_bytes()


def test_broker_written_segments_need_nothing(corpus):
    plan = plan_rebuild([str(corpus / "kafka-4.2.0" / "data")])
    assert len(plan.segments) > 100 and not plan.refused and not plan.unreadable
    assert [str(c.path) for c in plan.changes] == []


def test_preallocated_active_indexes_are_trimmed(corpus, tmp_path):
    copy = _writable_copy(corpus / "kafka-4.2.0" / "live-copy", tmp_path / "live-copy")
    assert restore_preallocated(copy, "kafka-4.2.0/live-copy") > 0
    plan = plan_rebuild([str(copy)])
    trimmed = [c for c in plan.changes if c.action == TRIM]
    assert trimmed and all(c.existing_size in (10485760, 10485756) for c in trimmed)
    # a running broker's active time index lacks the entry it writes on close; recovery adds it
    for change in plan.changes:
        assert change.action == TRIM or (change.kind == "time" and "final time index entry" in change.detail
                                          and "zero bytes of preallocation trimmed" in change.detail), change.detail
    apply_rebuild(plan, backup_root=tmp_path / "backups")
    for change in trimmed:
        assert change.path.stat().st_size == len(change.rebuilt)
        assert change.path.stat().st_size % (8 if change.kind == "offset" else 12) == 0


# -- the append path vs the recovery path --------------------------------------------------------

def _batch(offset: int, count: int, timestamp: int, size: int = 100) -> bytes:
    return build_batch([NewRecord(value=bytes([65 + i % 26]) * size, timestamp=timestamp + i) for i in range(count)],
                       base_offset=offset, base_timestamp=timestamp)


def _follower_segment(directory: Path, interval: int = 4096) -> Path:
    """A segment appended the way a follower appends: several fetched batches per append."""
    directory.mkdir(parents=True)
    writer = SegmentWriter(directory, 1000, SegmentConfig(index_interval_bytes=interval))
    offset, timestamp = 1000, 1_700_000_000_000
    for chunk in range(60):
        batches = []
        for _ in range(1 + chunk % 4):
            count = 1 + (offset % 7)
            # timestamps mostly rise, sometimes fall back (max timestamp stays with an earlier batch)
            batches.append(_batch(offset, count, timestamp - (5000 if offset % 5 == 0 else 0)))
            offset += count
            timestamp += 1000
        writer.append(b"".join(batches))
    writer.close()
    return directory / "00000000000000001000.log"


@pytest.mark.parametrize("interval", [0, 500, 4096])
def test_follower_indexes_differ_but_every_lookup_agrees(tmp_path, interval):
    log = _follower_segment(tmp_path / "t-0", interval)
    config = TopicConfig(index_interval_bytes=interval)
    plan = plan_rebuild([str(log.parent)], config)
    assert not plan.refused
    if interval == 500:
        assert {c.action for c in plan.changes} == {REWRITE}
    rebuilt_dir = tmp_path / "rebuilt" / "t-0"
    rebuilt_dir.mkdir(parents=True)
    os.link(log, rebuilt_dir / log.name)
    for planned in plan.segments[0].files:
        (rebuilt_dir / planned.path.name).write_bytes(planned.rebuilt)
    appended, recovered = LogSegment(log), LogSegment(rebuilt_dir / log.name)
    batches = list(appended.batches())
    for batch in batches:
        for offset in range(batch.base_offset, batch.last_offset + 1):
            assert (appended.translate_offset(offset).position == recovered.translate_offset(offset).position
                    == batch.position)
        for timestamp in (batch.max_timestamp - 1, batch.max_timestamp, batch.max_timestamp + 1):
            assert appended.find_offset_by_timestamp(timestamp) == recovered.find_offset_by_timestamp(timestamp)
    assert appended.translate_offset(batches[-1].last_offset + 1) is None
    assert recovered.translate_offset(batches[-1].last_offset + 1) is None
    appended.close()
    recovered.close()


def test_one_batch_per_append_matches_the_writer(tmp_path):
    """The leader path (one batch per append) and recovery write the same indexes, whatever
    index.interval.bytes is."""
    for interval in (0, 1, 150, 4096):
        directory = tmp_path / f"i{interval}" / "t-0"
        directory.mkdir(parents=True)
        writer = SegmentWriter(directory, 0, SegmentConfig(index_interval_bytes=interval))
        offset = 0
        for n in range(200):
            count = 1 + n % 3
            writer.append(_batch(offset, count, 1_700_000_000_000 + n * 10, size=40 + n % 50))
            offset += count
        writer.close()
        plan = plan_rebuild([str(directory)], TopicConfig(index_interval_bytes=interval))
        assert [f.action for f in plan.segments[0].files] == [IDENTICAL, IDENTICAL], interval


# -- refusals ----------------------------------------------------------------------------------

def test_a_torn_tail_is_refused_and_nothing_is_written(corpus, case_c):
    active = case_c / "plain-0" / "00000000000000008203.log"
    data = active.read_bytes()
    with open(active, "ab") as handle:
        handle.write(data[:100])  # the first 100 bytes of a batch: a torn append
    plan = plan_rebuild([str(case_c / "plain-0")])
    (refused,) = plan.refused
    assert refused.log_path == active and "seglog recover" in refused.refused
    assert str(len(data)) in refused.refused  # valid up to the old end
    with pytest.raises(RebuildError):
        apply_rebuild(plan, backup_root=case_c.parent / "backups")
    assert not (case_c / "plain-0" / "00000000000000000000.index").exists()
    assert not (case_c.parent / "backups").exists()


def test_a_crc_failure_is_refused(tmp_path):
    log = _follower_segment(tmp_path / "t-0")
    data = bytearray(log.read_bytes())
    data[500] ^= 0xFF
    log.write_bytes(bytes(data))
    (refused,) = plan_rebuild([str(log.parent)]).refused
    assert "CRC" in refused.refused


def test_relative_offset_overflow_is_refused(tmp_path):
    directory = tmp_path / "t-0"
    directory.mkdir()
    (directory / "00000000000000000000.log").write_bytes(_batch(0, 1, 1000) + _batch(2**31, 1, 2000))
    (refused,) = plan_rebuild([str(directory)]).refused
    assert "relative offset overflow" in refused.refused


# -- the lock and crashes ----------------------------------------------------------------------

HOLDER = "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); fcntl.lockf(fd, fcntl.LOCK_EX); print('ok', flush=True); sys.stdin.read()"


def test_a_running_broker_lock_refuses(case_c):
    (case_c / ".lock").touch()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(case_c / ".lock")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        with pytest.raises(LogDirLockedError):
            apply_rebuild(plan_rebuild([str(case_c / "plain-0")]), backup_root=case_c.parent / "backups")
        assert not (case_c / "plain-0" / "00000000000000000000.index").exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


APPLY = textwrap.dedent("""
    import sys
    from seglog_cli.storage.write.rebuild_index import apply_rebuild, plan_rebuild
    apply_rebuild(plan_rebuild([sys.argv[1]]), backup_root=sys.argv[2])
""")


def test_a_kill_at_any_write_step_leaves_a_loadable_dir(corpus, tmp_path):
    """Kill the apply before each write step in turn: verify finds nothing it did not find before
    (the before state lacks an index; a leftover .tmp is only info), every index file is whole
    (old or new, never torn), and running again finishes the job."""
    after = corpus / CASE_C / "after" / "plain-0"

    def problems(directory):
        return {(Path(f.path).name, f.code) for f in verify([str(directory)]).all_findings()
                if f.severity.value != "info" and f.code != "INTERRUPTED_SEGLOG_RUN"}  # the kill's own journal

    before = problems(_writable_copy(corpus / CASE_C / "before", tmp_path / "pristine"))
    assert ("00000000000000000000.index", "INDEX_MISSING") in before
    step = 1
    while True:
        data = _writable_copy(corpus / CASE_C / "before", tmp_path / f"run{step}" / "data")
        env = dict(os.environ, SEGLOG_FAULT_AT=str(step))
        done = subprocess.run([sys.executable, "-c", APPLY, str(data / "plain-0"), str(tmp_path / f"run{step}" / "b")],
                              env=env, capture_output=True, text=True)
        assert done.returncode in (0, 137), done.stderr
        assert problems(data) <= before
        for path in (data / "plain-0").glob("*index"):
            assert path.read_bytes() in ((corpus / CASE_C / "before" / "plain-0" / path.name).read_bytes()
                                         if (corpus / CASE_C / "before" / "plain-0" / path.name).exists() else b"",
                                         (after / path.name).read_bytes()), path.name
        with WriteSession([data], "rebuild-index", tmp_path / f"run{step}" / "again") as session:  # rolls the kill back
            apply_rebuild(plan_rebuild([str(data / "plain-0")]), session=session)
        for path in after.glob("*index"):
            assert (data / "plain-0" / path.name).read_bytes() == path.read_bytes()
        assert not {p for p in problems(data) if p[1].startswith("INDEX")}
        if done.returncode == 0:
            break
        step += 1
    assert step >= 7  # backups, manifests and three replacements were each interrupted


# -- the transaction index ----------------------------------------------------------------------

def test_a_lost_txn_index_is_rebuilt_as_the_broker_wrote_it(corpus, tmp_path):
    copy = _writable_copy(corpus / "kafka-4.2.0" / "data" / "txn-0", tmp_path / "data" / "txn-0")
    broker = (copy / "00000000000000000000.txnindex").read_bytes()
    assert len(broker) == 14 * 34
    (copy / "00000000000000000000.txnindex").unlink()
    plan = plan_rebuild([str(copy)])
    (txn,) = [f for f in plan.changes if f.kind == "txn"]
    assert txn.action == CREATE and txn.rebuilt == broker
    apply_rebuild(plan, backup_root=tmp_path / "backups")
    assert (copy / "00000000000000000000.txnindex").read_bytes() == broker
    assert verify([str(copy)]).status == CLEAN


def test_a_wrong_txn_index_entry_is_rewritten(corpus, tmp_path):
    copy = _writable_copy(corpus / "kafka-4.2.0" / "data" / "txn-0", tmp_path / "data" / "txn-0")
    path = copy / "00000000000000000000.txnindex"
    broker = path.read_bytes()
    damaged = bytearray(broker)
    damaged[34 + 33] ^= 0x01  # the second entry's last stable offset
    path.write_bytes(bytes(damaged))
    (txn,) = [f for f in plan_rebuild([str(copy)]).changes if f.kind == "txn"]
    assert txn.action == REWRITE and txn.rebuilt == broker and "differs from entry 1" in txn.detail
    assert not [f for f in plan_rebuild([str(copy)], txn_index=False).changes]


def test_no_producer_batches_no_txn_index(corpus):
    plan = plan_rebuild([str(corpus / "kafka-4.2.0" / "data" / "plain-0")])
    assert not [f for s in plan.segments for f in s.files if f.kind == "txn"]
