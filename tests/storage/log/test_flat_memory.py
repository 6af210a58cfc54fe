"""The pieces that keep memory flat on huge or sparse files: ``MappedFile.find_non_zero`` (holes
skipped by SEEK_DATA, written zeros compared a chunk at a time) and the compiled recovery walk
taken in chunks, whose plan must be the one-call walk's exactly."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_cli.storage.log import files, native
from seglog_cli.storage.write import rebuild_index
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.recovery.recover import plan_recover


@settings(deadline=None, max_examples=60)
@given(size=st.integers(1, 3 * 4096), marks=st.lists(st.integers(0, 3 * 4096 - 1), max_size=4),
       start=st.integers(0, 3 * 4096), end=st.integers(0, 3 * 4096 + 5))
def test_find_non_zero_agrees_with_a_plain_search(tmp_path_factory, size, marks, start, end):
    data = bytearray(size)
    for mark in marks:
        if mark < size:
            data[mark] = 1 + mark % 255
    path = tmp_path_factory.mktemp("nz") / "f"
    path.write_bytes(bytes(data))
    expected = next((i for i in range(start, min(end, size)) if data[i]), None)
    with MappedFile(path) as mapped, _small_chunks():
        assert mapped.find_non_zero(start, end) == expected


def test_find_non_zero_skips_a_sparse_hole_without_reading_it(tmp_path):
    path = tmp_path / "sparse"
    with open(path, "wb") as handle:
        handle.write(b"\1")
        handle.seek(2**31 + 5)
        handle.write(b"\2")
    with MappedFile(path) as mapped:
        assert mapped.find_non_zero(1) == 2**31 + 5
        assert mapped.find_non_zero(1, 2**31) is None
        assert mapped._released_to == 0  # the hole was never touched


class _small_chunks:
    """Force ``find_non_zero`` through several chunks on a small file."""

    def __enter__(self):
        self.saved = files.ZERO_CHUNK
        files.ZERO_CHUNK = 4096

    def __exit__(self, *exc):
        files.ZERO_CHUNK = self.saved


@pytest.mark.skipif(native.module is None, reason="the compiled module is not built (setup.py build_ext --inplace)")
@pytest.mark.parametrize("partition", ["idem-0", "txn-0", "smallseg-0", "codecs-0"])
@pytest.mark.parametrize("mode", ["kafka", "salvage"])
def test_the_chunked_recovery_walk_plans_what_one_walk_plans(corpus, tmp_path, monkeypatch, partition, mode):
    data = tmp_path / "data"
    shutil.copytree(corpus / "kafka-4.2.0" / "data" / partition, data / partition)
    for path in (data / partition).iterdir():
        os.chmod(path, 0o644)
    (data / partition / next(p.name for p in (data / partition).glob("*.index"))).unlink()  # force a recovery

    def plan():
        steps = plan_recover([data / partition], mode=mode).steps
        return [(s.op, s.path.name, s.data, s.kept, s.size, s.offsets_lost) for s in steps]

    whole = plan()
    monkeypatch.setattr(rebuild_index, "WALK_CHUNK", 1000)  # a call every few batches
    assert plan() == whole
    assert any(op == "replace" and name.endswith(".index") for op, name, *_ in whole)


# -- append's spool ---------------------------------------------------------------------------------

def _append_batches(count: int = 400) -> list[list]:
    from seglog_cli.storage.write.builder import NewRecord

    return [[NewRecord(b"k%d" % i, b"value %d " % i * (1 + i % 40), timestamp=1_700_000_000_000 + i)]
            for i in range(count)]


def _append_plan(directory, spool=None):
    from seglog_cli.storage.write.append import plan_append
    from seglog_cli.storage.write.append_plan import AppendOptions
    from seglog_cli.storage.config.topic_config import TopicConfig

    options = AppendOptions(compression="none", now_ms=1_700_000_100_000, create=True, topic_id="AAAAAAAAAAAAAAAAAAAAAA",
                            roll_jitter_seed=1)
    return plan_append(directory, _append_batches(), TopicConfig(segment_bytes=20_000), options, spool)


def test_an_append_spooled_to_disk_plans_and_writes_the_bytes_of_one_in_memory(tmp_path, monkeypatch):
    """The spool (an unnamed scratch file, never a name in any directory) holds the new .log
    bytes of every segment of the plan, one range each, byte for byte what the in-memory plan
    holds; applied, both give the same partition. A plan made with a Tally only counts them and
    cannot be applied."""
    from seglog_cli.storage.write.append import apply_append
    from seglog_cli.storage.write.append_plan import AppendError
    from seglog_cli.storage.write.durable import Spool, SpoolRange, Tally

    monkeypatch.setattr(Spool, "BUFFER", 4096)  # through the file, not only the buffer
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "scratch").mkdir()
    memory = _append_plan(tmp_path / "a" / "t-0")
    spool = Spool(tmp_path / "scratch")
    spooled = _append_plan(tmp_path / "b" / "t-0", spool)
    logs = [w for w in spooled.writes if w.path.suffix == ".log"]
    assert len(logs) > 3 and all(isinstance(w.data, SpoolRange) for w in logs)  # rolled: several segments
    assert os.listdir(tmp_path / "scratch") == []  # nothing named, even before the plan is applied
    assert [(w.op, w.path.name, w.why) for w in memory.writes] == [(w.op, w.path.name, w.why) for w in spooled.writes]
    for kept, streamed in zip(memory.writes, spooled.writes):
        data = b"".join(streamed.data.chunks()) if isinstance(streamed.data, SpoolRange) else streamed.data
        assert data == kept.data
    assert memory.as_dict()["writes"] == [dict(w, path=w["path"].replace("/b/", "/a/"))
                                          for w in spooled.as_dict()["writes"]]
    apply_append(memory, backup_root=tmp_path / "backups-a")
    apply_append(spooled, backup_root=tmp_path / "backups-b")
    names = sorted(p.name for p in (tmp_path / "a" / "t-0").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b" / "t-0").iterdir())
    for name in names:
        assert (tmp_path / "a" / "t-0" / name).read_bytes() == (tmp_path / "b" / "t-0" / name).read_bytes(), name
    (tmp_path / "c").mkdir()
    counted = _append_plan(tmp_path / "c" / "t-0", Tally())
    assert counted.as_dict()["writes"] == [dict(w, path=w["path"].replace("/a/", "/c/"))
                                           for w in memory.as_dict()["writes"]]
    with pytest.raises(AppendError):
        apply_append(counted, backup_root=tmp_path / "backups-c")
    assert not (tmp_path / "c" / "t-0").exists()


# -- whole processes on a segment bigger than the memory goal -----------------------------------------------

BIG_MIB = 320  # well above the 150 MB goal: a command that holds the segment (or maps it whole) shows
GOAL_MB = 150


@pytest.fixture(scope="module")
def big_segment(tmp_path_factory):
    """A 320 MiB generated segment (multi-record batches, lz4), its indexes, and a copy with 64
    bytes of garbage in the middle (one batch fails its CRC)."""
    from tests.benchmarks import bench_memory

    directory = tmp_path_factory.mktemp("big")
    meta = bench_memory._prepare(str(directory / "inputs"), BIG_MIB, "lz4", 7)
    yield meta
    shutil.rmtree(directory, ignore_errors=True)


def _peak_rss_mb(argv: list[str]) -> tuple[int, float]:
    """Exit status and peak RSS (MB) of ``seglog ARGV`` as its own process (bench_memory's launcher:
    not forked from this big pytest process, whose size a forked child's ru_maxrss would start at)."""
    from tests.benchmarks import bench_memory

    result = bench_memory.run(bench_memory.seglog() + argv)
    return result["returncode"], result["peak_rss_mb"]


def _big_partition(tmp_path, meta, source: str, with_indexes: bool = True):
    from tests.benchmarks import bench_memory

    return bench_memory._log_dir(tmp_path, Path(meta["directory"]) / source / bench_memory.SEGMENT, with_indexes)


@pytest.mark.skipif(native.module is None, reason="the compiled module is not built (setup.py build_ext --inplace)")
def test_rebuild_index_apply_of_a_big_segment_keeps_memory_flat(tmp_path, big_segment):
    log_dir, partition = _big_partition(tmp_path, big_segment, "intact", with_indexes=False)
    status, peak = _peak_rss_mb(["rebuild-index", "--apply", "--backup-dir", str(tmp_path / "b"), str(partition)])
    assert status == 0
    assert peak < GOAL_MB < big_segment["size_bytes"] / 2**20 / 2
    for suffix in (".index", ".timeindex"):
        name = "00000000000000000000" + suffix
        assert (partition / name).read_bytes() == (Path(big_segment["directory"]) / "intact" / name).read_bytes()


@pytest.mark.skipif(native.module is None, reason="the compiled module is not built (setup.py build_ext --inplace)")
def test_recover_of_a_big_segment_keeps_memory_flat(tmp_path, big_segment):
    """Kafka's recovery of the whole segment (no clean shutdown, recovery point 0): the walk and
    the producer replay's scattered reads; the plan and its --apply."""
    log_dir, partition = _big_partition(tmp_path, big_segment, "intact")
    for extra in ([], ["--apply", "--backup-dir", str(tmp_path / "b")]):
        status, peak = _peak_rss_mb(["recover", "--mode", "kafka", *extra, str(log_dir)])
        assert status == (0 if extra else 1)
        assert peak < GOAL_MB
    assert (partition / f"{big_segment['next_offset']:020d}.snapshot").is_file()


def test_salvage_of_a_big_segment_keeps_memory_flat(tmp_path, big_segment):
    """The salvaged .log (all but the damaged batch: ~320 MB) is copied from the file itself
    when the step runs, never held in memory; the result verifies clean and undo gives the
    damaged file back."""
    from seglog_cli.storage.verify.verify import verify

    log_dir, partition = _big_partition(tmp_path, big_segment, "damaged")
    log = partition / "00000000000000000000.log"
    size = log.stat().st_size
    status, peak = _peak_rss_mb(["recover", "--mode", "salvage", "--apply", "--backup-dir", str(tmp_path / "b"),
                                 str(log_dir)])
    assert status == 0
    assert peak < GOAL_MB
    assert size - 64 * 1024 < log.stat().st_size < size
    assert [f for f in verify([str(partition)]).all_findings() if f.severity.value != "info"] == []
    (backup,) = (tmp_path / "b").iterdir()
    status, peak = _peak_rss_mb(["undo", "--apply", str(backup)])
    assert status == 0 and peak < GOAL_MB
    assert log.stat().st_size == size and log.stat().st_ino != (Path(big_segment["directory"]) / "damaged").stat().st_ino


def test_append_apply_of_a_big_input_keeps_memory_flat(tmp_path):
    """~220 MB of records from JSON Lines into a new partition: the new .log goes to a spool as
    the batches are made, not to memory (it was held twice: 2 x its size)."""
    from tests.benchmarks import bench_memory

    source = tmp_path / "records.jsonl"
    bench_memory.write_append_input(source, 75_000, 3000, 5)
    partition = tmp_path / "data" / "t-0"
    partition.parent.mkdir()
    status, peak = _peak_rss_mb(["append", "--input", str(source), "--input-format", "jsonl", "--create", "--apply",
                                 "--backup-dir", str(tmp_path / "b"), str(partition)])
    assert status == 0
    log = partition / "00000000000000000000.log"
    assert log.stat().st_size > 200 * 2**20 > GOAL_MB * 2**20 > peak * 2**20
    backups = list((tmp_path / "b").rglob("*"))
    assert [p.name for p in backups if p.is_file() and p.stat().st_size > 2**20] == []  # no scratch file left
