"""The pieces that keep memory flat on huge or sparse files: ``MappedFile.find_non_zero`` (holes
skipped by SEEK_DATA, written zeros compared a chunk at a time) and the compiled recovery walk
taken in chunks, whose plan must be the one-call walk's exactly."""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_cli.storage import files, native, rebuild_index
from seglog_cli.storage.files import MappedFile
from seglog_cli.storage.recover import plan_recover


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
