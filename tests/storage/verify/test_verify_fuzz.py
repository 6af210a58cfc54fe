"""``seglog verify`` on arbitrary bytes: never an exception, never a hang, and the compiled and
pure-Python engines always agree.

Inputs: random files of every kind in a partition directory, valid logs (from kafka-python's
builders) damaged by hypothesis mutations with the CRC mostly fixed up so the damage reaches
the deeper checks, random checkpoint files in a log dir. Each verify runs at both levels in both
engines; their findings must be identical. Verify must also stay linear: a bounded-size input is
verified within a bound (the ``deadline``), so a resync loop cannot hide.
"""

from __future__ import annotations

import struct
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog_cli.storage.log import native
from seglog_cli.storage.verify.verify import VerifyOptions, verify
from tests.fuzz_helpers import NAMES, damaged_logs, examples, offset_index_for, time_index_for, v2_batch

FUZZ = settings(max_examples=examples(80), deadline=5000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
               "cleaner-offset-checkpoint", "meta.properties", ".kafka_cleanshutdown", "bootstrap.checkpoint")
PARTITION_FILES = ("leader-epoch-checkpoint", "partition.metadata", "quorum-state",
                   "00000000000000000005-0000000001.checkpoint", "00000000000000000000.log.swap",
                   "00000000000000000010.snapshot")


@contextmanager
def engine(compiled: bool):
    before = native.module is not None
    native.set_enabled(compiled)
    try:
        yield
    finally:
        native.set_enabled(before)


def both_engines(paths: list[str], level: str) -> list:
    """The findings of the pure-Python engine, after checking the compiled one gives the same."""
    runs = []
    for compiled in ((True, False) if native.available() else (False,)):
        with engine(compiled):
            report = verify(paths, VerifyOptions(level=level))
            runs.append((report.status, [f.as_dict() for f in report.all_findings()], report.as_dict()["summary"]))
    assert all(run == runs[0] for run in runs[1:]), "compiled and pure-Python verify disagree"
    status, findings, _ = runs[0]
    assert status in ("clean", "warnings", "damage", "unreadable")
    for finding in findings:
        assert finding["message"] and "\n" not in finding["message"]
    return findings


def partition(tmp: str, files: dict[str, bytes]) -> Path:
    directory = Path(tmp) / "orders-0"
    directory.mkdir()
    for name, content in files.items():
        (directory / name).write_bytes(content)
    return directory


@FUZZ
@given(files=st.fixed_dictionaries({kind: st.none() | st.binary(max_size=300) for kind in NAMES}),
       extra=st.dictionaries(st.sampled_from(PARTITION_FILES), st.binary(max_size=120), max_size=3),
       level=st.sampled_from(["shallow", "deep"]))
def test_partition_of_random_files(files, extra, level):
    with tempfile.TemporaryDirectory() as tmp:
        present = {NAMES[kind]: content for kind, content in files.items() if content is not None}
        directory = partition(tmp, {**present, **extra})
        both_engines([str(directory)], level)


@FUZZ
@given(data=damaged_logs(), level=st.sampled_from(["shallow", "deep"]), with_indexes=st.booleans(),
       base=st.sampled_from([0, 1, 40]))
def test_damaged_batches_with_their_indexes(data, level, with_indexes, base):
    with tempfile.TemporaryDirectory() as tmp:
        stem = f"{base:020d}"
        files = {f"{stem}.log": data}
        if with_indexes:
            try:
                files[f"{stem}.index"] = offset_index_for(data)
                files[f"{stem}.timeindex"] = time_index_for(data)
            except struct.error:  # offsets the damage moved out of int32 range: no index then
                pass
        directory = partition(tmp, files)
        both_engines([str(directory)], level)


@FUZZ
@given(prefix=st.integers(1, 4), garbage=st.binary(min_size=1, max_size=400), suffix=st.integers(0, 3),
       zeros=st.integers(0, 64))
def test_garbage_between_valid_batches(prefix, garbage, suffix, zeros):
    """Damage in the middle: the batches after it are still read (none is lost to the resync)."""
    offset = 0
    before = []
    for _ in range(prefix):
        before.append(bytes(v2_batch(0, base_offset=offset)))
        offset += 4
    after = []
    for _ in range(suffix):
        after.append(bytes(v2_batch(0, base_offset=offset)))
        offset += 4
    data = b"".join(before) + garbage + b"".join(after) + b"\0" * zeros
    with tempfile.TemporaryDirectory() as tmp:
        directory = partition(tmp, {NAMES["log"]: data})
        with engine(native.available()):
            report = verify([str(directory)], VerifyOptions(level="deep"))
        both_engines([str(directory)], "deep")
    batches = report.as_dict()["summary"]["batches"]
    assert batches >= prefix + suffix  # random bytes may frame a bogus batch, never hide a real one


@FUZZ
@given(files=st.dictionaries(st.sampled_from(CHECKPOINTS), st.binary(max_size=200) | st.text(max_size=120).map(str.encode),
                             min_size=1),
       offsets=st.lists(st.tuples(st.sampled_from(["orders", "missing"]), st.integers(-2, 3),
                                  st.integers(-2**63, 2**63 - 1)), max_size=3))
def test_log_dir_of_random_checkpoints(files, offsets):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, content in files.items():
            (root / name).write_bytes(content)
        lines = "".join(f"{topic} {number} {offset}\n" for topic, number, offset in offsets)
        (root / "replication-offset-checkpoint").write_text(f"0\n{len(offsets)}\n{lines}")
        directory = root / "orders-0"
        directory.mkdir()
        (directory / NAMES["log"]).write_bytes(bytes(v2_batch(0)))
        both_engines([str(root)], "shallow")


@pytest.mark.parametrize("cut", [1, 7, 13, 17, 30, 61, 100])
def test_truncated_batch_in_every_engine(tmp_path, cut):
    data = bytes(v2_batch(0)) + bytes(v2_batch(1, base_offset=4))
    directory = partition(str(tmp_path), {NAMES["log"]: data[:len(data) - cut]})
    findings = both_engines([str(directory)], "deep")
    assert [f["code"] for f in findings if f["severity"] != "info" and "INDEX_MISSING" not in f["code"]] == ["TORN_TAIL"]


def test_header_only_framing_of_a_huge_size_field(tmp_path):
    """A size field of 2 GiB in a small file: a torn tail, found without reading 2 GiB."""
    data = bytes(v2_batch(0)) + struct.pack(">qi", 4, 2**31 - 1) + b"\0\0\0\0\x02" + b"\x01" * 40
    directory = partition(str(tmp_path), {NAMES["log"]: data})
    findings = both_engines([str(directory)], "shallow")
    assert [f["code"] for f in findings if f["severity"] != "info" and "INDEX_MISSING" not in f["code"]] == ["TORN_TAIL"]
