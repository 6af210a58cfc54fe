"""The compiled recovery walk (``recover_walk`` in ``_native.c``) against the Python reference.

Recovery's index rebuild (``recover_indexes``) runs the compiled loop over the clean v2 prefix
and Python's loop from wherever it stops; the producer-state replay is then fed only the batches
the compiled loop lists (``replay_positions``). Both must give exactly what the pure-Python
path gives: the same index bytes, valid bytes, stop reason and errors, the same producer
snapshot and the same ``.txnindex`` entries, on the broker's files and on generated ones,
damaged anywhere.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog_cli.storage.log import native
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.naming import format_offset
from seglog_cli.storage.log.producer_state import ProducerStateManager, replay_positions, replay_segment
from seglog_cli.storage.write.rebuild_index import RebuildError, recover_indexes
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.config.topic_config import TopicConfig
from tests.conftest import CORPUS, requires_corpus

pytestmark = pytest.mark.skipif(not native.available(), reason="the compiled module is not built")

T0 = 1_700_000_000_000


def _walk(path: Path, base: int, config: TopicConfig, compiled: bool):
    native.set_enabled(compiled)
    try:
        with MappedFile(path) as mapped:
            try:
                return recover_indexes(mapped, base, config)
            except RebuildError as exc:
                return ("error", exc.message, exc.position, exc.offset)
    finally:
        native.set_enabled(True)


def _same_walk(path: Path, base: int, config: TopicConfig = TopicConfig()):
    fast, slow = _walk(path, base, config, True), _walk(path, base, config, False)
    if isinstance(slow, tuple):
        assert fast == slow
        return fast
    assert slow.producer_positions is None
    for name in ("offset_index", "time_index", "valid_bytes", "batches", "stop", "transactional_batches",
                 "next_offset"):
        assert getattr(fast, name) == getattr(slow, name), name
    return fast


def _same_replay(path: Path, base: int, recovered) -> None:
    """The replay fed the listed batches equals the replay of every batch."""
    if isinstance(recovered, tuple) or recovered.producer_positions is None:
        return
    full, listed = ProducerStateManager(), ProducerStateManager()
    segment = LogSegment(path, base)
    try:
        expected = replay_segment(full, segment)
        got = replay_positions(listed, segment, recovered.producer_positions, recovered.valid_bytes)
    finally:
        segment.close()
    if got is None:  # an unreadable marker: the caller falls back to the full replay
        return
    assert got.aborted_txns == expected.aborted_txns
    assert got.valid_bytes == expected.valid_bytes
    assert listed.snapshot_bytes() == full.snapshot_bytes()
    assert listed.map_end_offset == full.map_end_offset
    assert listed.first_undecided_offset() == full.first_undecided_offset()


def _corpus_logs():
    if not CORPUS.is_dir():
        return []
    roots = [CORPUS / "kafka-4.2.0" / "data", CORPUS / "kafka-4.2.0" / "data-extra", CORPUS / "public"]
    logs = sorted(p for root in roots for p in root.rglob("*.log") if p.is_file() and p.stat().st_size)
    return logs


@requires_corpus
@pytest.mark.parametrize("config", [TopicConfig(), TopicConfig(index_interval_bytes=0, segment_index_bytes=4096),
                                    TopicConfig(index_interval_bytes=100, segment_index_bytes=120)],
                         ids=["default", "every-batch", "tiny-index"])
def test_broker_segments(config):
    logs = _corpus_logs()
    assert len(logs) > 100
    for path in logs:
        base = int(path.stem) if path.stem.isdigit() else 0
        recovered = _same_walk(path, base, config)
        if config == TopicConfig():
            _same_replay(path, base, recovered)


# -- generated logs ---------------------------------------------------------------------------------

def _producer_log(seed: int, batches: int = 120) -> bytes:
    """Interleaved producers: idempotent runs, epoch bumps, transactions committed and aborted,
    batches without a producer, one-record and multi-record batches, timestamps going back."""
    rng = random.Random(seed)
    out, offset = [], 0
    epochs = {pid: 0 for pid in (7, 8, 9, 1000)}
    open_txn: set[int] = set()
    for _ in range(batches):
        pid = rng.choice([7, 8, 9, 1000, -1])
        roll = rng.random()
        ts = T0 + rng.randint(-5000, 50_000)
        if pid >= 0 and pid in open_txn and roll < 0.3:
            out.append(build_end_txn_marker(commit=rng.random() < 0.5, base_offset=offset, producer_id=pid,
                                            producer_epoch=epochs[pid], timestamp=ts))
            open_txn.discard(pid)
            offset += 1
            continue
        if pid >= 0 and roll > 0.95:
            epochs[pid] += 1
        txn = pid >= 0 and (pid in open_txn or (pid in (8, 9) and rng.random() < 0.5))
        if txn:
            open_txn.add(pid)
        count = rng.randint(1, 4)
        records = [NewRecord(b"k%d" % i, bytes(rng.randint(0, 300)), timestamp=ts + i) for i in range(count)]
        out.append(build_batch(records, base_offset=offset, producer_id=pid,
                               producer_epoch=epochs[pid] if pid >= 0 else -1,
                               base_sequence=rng.randint(0, 100) if pid >= 0 else -1, transactional=txn))
        offset += count + (rng.randint(1, 3) if rng.random() < 0.05 else 0)  # cleaner-style gaps
    return b"".join(out)


def _write(tmp_path: Path, data: bytes, base: int = 0) -> Path:
    directory = tmp_path / "t-0"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{format_offset(base)}.log"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("seed", range(12))
def test_interleaved_producers(tmp_path, seed):
    path = _write(tmp_path, _producer_log(seed))
    for config in (TopicConfig(), TopicConfig(index_interval_bytes=200), TopicConfig(index_interval_bytes=0)):
        recovered = _same_walk(path, 0, config)
        assert recovered.producer_positions is not None
        assert recovered.stop is None
        _same_replay(path, 0, recovered)


def test_listed_batches_are_few_for_long_runs(tmp_path):
    """One idempotent producer: its first batch, its last, and the last again at the end."""
    data = b"".join(build_batch([NewRecord(b"k", b"v", timestamp=T0 + i)], base_offset=i, producer_id=5,
                                producer_epoch=0, base_sequence=i) for i in range(500))
    path = _write(tmp_path, data)
    recovered = _same_walk(path, 0)
    assert len(recovered.producer_positions) <= 3
    _same_replay(path, 0, recovered)


def test_index_full_and_offset_overflow_are_python_errors(tmp_path):
    data = b"".join(build_batch([NewRecord(b"k", b"v" * 50, timestamp=T0 + i)], base_offset=i) for i in range(60))
    path = _write(tmp_path, data)
    error = _same_walk(path, 0, TopicConfig(index_interval_bytes=0, segment_index_bytes=80))
    assert error[0] == "error" and "full" in error[1]
    overflow = _write(tmp_path / "o", build_batch([NewRecord(b"k", b"v", timestamp=T0)], base_offset=2**31 + 5))
    error = _same_walk(overflow, 0)
    assert error[0] == "error" and "does not fit" in error[1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), cut=st.floats(0, 1), flips=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)),
                                                                     max_size=3))
def test_damage_anywhere(tmp_path, seed, cut, flips):
    data = bytearray(_producer_log(seed, batches=40))
    for where, xor in flips:
        data[int(where * (len(data) - 1))] ^= xor
    data = bytes(data[: max(1, int(cut * len(data)))]) if cut < 0.9 else bytes(data)
    path = _write(tmp_path, data)
    recovered = _same_walk(path, 0, TopicConfig(index_interval_bytes=150))
    _same_replay(path, 0, recovered)
