"""``seglog recover`` from the command line: plan, apply, undo, exit statuses, JSON."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import run_seglog

CASE = "kafka-4.2.0/recovery-cases/a-append-garbage-active-log"


def _data(corpus, tmp_path):
    target = tmp_path / "data"
    shutil.copytree(corpus / CASE / "before", target)
    for root, dirs, files in os.walk(target):
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    return target


def test_plan_apply_undo(corpus, tmp_path):
    data = _data(corpus, tmp_path)
    before = {p.name: p.read_bytes() for p in (data / "plain-0").iterdir()}
    plan = run_seglog("recover", str(data / "plain-0"))
    assert plan.exit_code == 1, plan.err
    assert "truncate 00000000000000008203.log to 399586 bytes" in plan.out and "100 bytes truncated" in plan.out
    assert {p.name: p.read_bytes() for p in (data / "plain-0").iterdir()} == before
    applied = run_seglog("recover", "--apply", "--backup-dir", str(tmp_path / "b"), str(data))
    assert applied.exit_code == 0, applied.err
    assert (data / "plain-0" / "00000000000000008203.log").stat().st_size == 399586
    again = run_seglog("recover", "--format", "json", str(data))
    assert again.exit_code == 0 and json.loads(again.out)["summary"]["steps"] == 0
    (backup,) = (tmp_path / "b").iterdir()
    undone = run_seglog("undo", "--apply", str(backup))
    assert undone.exit_code == 0, undone.err
    assert {p.name: p.read_bytes() for p in (data / "plain-0").iterdir()} == before
    again = run_seglog("undo", "--apply", str(backup))  # the kill -9 harness's rerun: not "written since"
    (undo_dir,) = (tmp_path / "b").glob("*-undo-*")
    assert again.exit_code == 0 and again.err == "", again.err
    assert again.out.endswith(f"already undone by {os.path.realpath(undo_dir)}: nothing to do\n")
    assert {p.name: p.read_bytes() for p in (data / "plain-0").iterdir()} == before


def test_json_plan(corpus, tmp_path):
    data = _data(corpus, tmp_path)
    result = run_seglog("recover", "--format", "json", str(data / "plain-0"))
    document = json.loads(result.out)
    assert document["version"] == 1 and document["mode"] == "kafka"
    (partition,) = document["partitions"]
    assert partition["recoveredSegments"] == [6225, 8203] and partition["logEndOffset"] == 8929
    assert partition["bytesTruncated"] == 100 and document["applied"] is None


def test_salvage_plan_and_missing_path(corpus, tmp_path):
    data = _data(corpus, tmp_path)
    result = run_seglog("recover", "--mode", "salvage", str(data / "plain-0"))
    assert result.exit_code == 1 and "mode salvage" in result.out
    assert run_seglog("recover", str(tmp_path / "nope")).exit_code == 4


def test_jobs_give_the_same_plan(corpus):
    """Planning only reads: the broker-written log dir itself, 110 partitions, 1 and 2 jobs."""
    data = corpus / "kafka-4.2.0" / "data"
    one = json.loads(run_seglog("recover", "--format", "json", str(data)).out)
    two = json.loads(run_seglog("recover", "--format", "json", "--jobs", "2", str(data)).out)
    assert one == two and len(one["partitions"]) == 110


def test_an_overflowed_segment_seglog_cannot_split_is_refused_and_the_rest_planned(corpus, tmp_path):
    """A segment holding an offset past base + 2^31 - 1 and a damaged batch: Kafka would split it
    (KAFKA-6264) and truncate a piece; seglog refuses that partition (exit 3, nothing written
    there) and still plans the others."""
    from seglog_cli.storage.write.builder import NewRecord, build_batch

    data = _data(corpus, tmp_path)
    odd = data / "odd-0"
    odd.mkdir()
    damaged = bytearray(build_batch([NewRecord(b"k", b"v" * 30, timestamp=3)], base_offset=2**31 + 6))
    damaged[-3] ^= 0xFF
    (odd / "00000000000000000000.log").write_bytes(
        build_batch([NewRecord(b"k", b"v", timestamp=1)], base_offset=0)
        + build_batch([NewRecord(b"k", b"v", timestamp=2)], base_offset=2**31 + 5) + bytes(damaged))
    before = (odd / "00000000000000000000.log").read_bytes()
    result = run_seglog("recover", "--apply", "--backup-dir", str(tmp_path / "b"), str(data))
    assert result.exit_code == 3, result.err
    assert "REFUSED: segment 0" in result.out and "KAFKA-6264" in result.out
    assert "partition" in result.out and "refused" in result.out  # the summary table
    assert sorted(p.name for p in odd.iterdir()) == ["00000000000000000000.log"]
    assert (odd / "00000000000000000000.log").read_bytes() == before
    assert (data / "plain-0" / "00000000000000008203.log").stat().st_size == 399586  # plain-0 recovered
    document = json.loads(run_seglog("recover", "--format", "json", str(data)).out)
    assert document["summary"]["refused"] == 1
    (refused,) = [p for p in document["partitions"] if p["refused"]]
    assert refused["path"].endswith("odd-0") and refused["steps"] == []


def _flip_at(position: int, segment: str = "00000000000000006225"):
    def damage(data):
        log = data / "plain-0" / f"{segment}.log"
        raw = bytearray(log.read_bytes())
        raw[position] ^= 0xFF
        log.write_bytes(bytes(raw))
    return damage


def _zero_range(data):
    with open(data / "plain-0" / "00000000000000006225.log", "r+b") as handle:
        handle.seek(300_000)
        handle.write(bytes(40_000))


@pytest.mark.parametrize("mode", ["kafka", "salvage"])
@pytest.mark.parametrize("damage", [None, _flip_at(200_000), _zero_range, _flip_at(300_000, "00000000000000002071")],
                         ids=["garbage-tail", "crc", "zeroed", "crc-where-kafka-does-not-look"])
def test_apply_run_again_has_nothing_to_do(corpus, tmp_path, mode, damage):
    """recover --apply run again on the log dir it recovered (a runbook step repeated): every
    partition has nothing to change, exit 0, not a byte changed, no backup made. Salvage too:
    the producer state over the batches it keeps is snapshotted as recovery would find it."""
    data = _data(corpus, tmp_path)
    if damage is not None:
        damage(data)
    first = run_seglog("recover", "--apply", "--mode", mode, "--backup-dir", str(tmp_path / "b1"), str(data))
    assert first.exit_code == 0, first.out + first.err
    recovered = {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()}
    again = run_seglog("recover", "--apply", "--mode", mode, "--backup-dir", str(tmp_path / "b2"), str(data))
    assert again.exit_code == 0, again.out + again.err
    assert "1 partition with nothing to change" in again.out
    assert again.out.splitlines()[-1] == f"1 partition, mode {mode}: 0 steps, 0 bytes truncated, 0 offset ranges lost"
    assert {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()} == recovered
    assert not (tmp_path / "b2").exists()
