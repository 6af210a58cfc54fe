"""Runbook 10 (a damaged replica, other replicas at hand) on copies of the replicas corpus."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest

from tests.conftest import CORPUS
from tests.runbook_helpers import run, run_json

REPLICAS = CORPUS / "kafka-4.2.0" / "replicas"
SCRIPT = "10-replica-damaged.sh"

pytestmark = [pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed"),
              pytest.mark.skipif(not REPLICAS.is_dir(), reason=f"{REPLICAS} not found (the replicas corpus)")]


def _copy(case, tmp_path):
    out = {}
    for broker in (1, 2, 3):
        target = tmp_path / case / f"broker-{broker}"
        shutil.copytree(REPLICAS / case / f"broker-{broker}", target)
        for dirpath, _dirs, files in os.walk(target):
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o644)
        out[broker] = target / "events-0"
    return out


def _flip(path, position):
    data = bytearray(path.read_bytes())
    data[position] ^= 0x10
    path.write_bytes(bytes(data))


def _digest(directory):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir()) if p.is_file()}


def test_repaired_from_the_clean_replica_then_undo(tmp_path):
    replicas = _copy("in-sync", tmp_path)
    segment = "00000000000000002221.log"
    _flip(replicas[2] / segment, 500_000)
    _flip(replicas[3] / segment, 600_000)  # broker 3 is damaged too: not used
    damaged_bytes = (replicas[2] / segment).read_bytes()
    before = _digest(replicas[2])
    dry = run(SCRIPT, "--dry-run", replicas[2], replicas[3], replicas[1], cwd=tmp_path)
    assert dry.returncode == 1, dry.stdout + dry.stderr
    assert "not a clean replica" in dry.stdout and "plan shown, not applied" in dry.stdout
    assert _digest(replicas[2]) == before
    status, document = run_json(SCRIPT, "--yes", replicas[2], replicas[3], replicas[1], cwd=tmp_path)
    assert status == 1 and document["applied"] is True
    assert document["plan"]["healthy"] == str(replicas[1])
    assert (replicas[2] / segment).read_bytes() == (replicas[1] / segment).read_bytes()
    again = run(SCRIPT, replicas[2], replicas[1], cwd=tmp_path)
    assert again.returncode == 0, again.stdout
    undo = document["undo"].split(" undo --apply ")[1].strip("'")
    undone = run_undo(undo, tmp_path)
    assert undone.returncode == 0, undone.stderr
    assert (replicas[2] / segment).read_bytes() == damaged_bytes


def run_undo(backup, cwd):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "seglog_cli", "undo", "--apply", backup], cwd=cwd,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(
                              __import__("tests.conftest", fromlist=["REPO"]).REPO)))


def test_lost_last_segment_copied_with_tail(tmp_path):
    replicas = _copy("lagging-follower", tmp_path)
    for path in replicas[2].glob("00000000000000004250.*"):
        path.unlink()
    status, document = run_json(SCRIPT, "--yes", replicas[2], replicas[1], cwd=tmp_path)
    assert status == 1 and document["applied"] is True, document["summary"]
    for name in ("00000000000000004250.log", "00000000000000004250.snapshot", "00000000000000004600.snapshot"):
        assert (replicas[2] / name).read_bytes() == (replicas[1] / name).read_bytes(), name


def test_healthy_replica_and_bad_input(tmp_path):
    replicas = _copy("in-sync", tmp_path)
    healthy = run(SCRIPT, replicas[1], replicas[2], replicas[3], cwd=tmp_path)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    missing = run(SCRIPT, replicas[1], tmp_path / "nowhere", cwd=tmp_path)
    assert missing.returncode == 4
    alone = run(SCRIPT, replicas[1], cwd=tmp_path)
    assert alone.returncode == 2


def test_no_replica_holds_the_damaged_range_past_an_unclean_divergence(tmp_path):
    replicas = _copy("unclean-election", tmp_path)
    log = replicas[1] / "00000000000000002133.log"
    _flip(log, log.stat().st_size - 5000)  # past offset 3900: broker 1's own epoch-2 records
    before = _digest(replicas[1])
    result = run(SCRIPT, "--yes", replicas[1], replicas[2], replicas[3], cwd=tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "diverge from offset 3900" in result.stdout and "seglog recover --mode salvage" in result.stdout
    assert "Kafka truncates it to 3900" in result.stdout
    assert _digest(replicas[1]) == before


def test_a_diverged_replica_is_no_healthy_one(tmp_path):
    """Broker 1 of the unclean election has no damage but another history from 3900: not 'healthy'
    (exit 0) but a human's decision, with the commands that keep its own records."""
    replicas = _copy("unclean-election", tmp_path)
    before = _digest(replicas[1])
    result = run(SCRIPT, "--yes", replicas[1], replicas[2], replicas[3], cwd=tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    assert f"diverges from HEALTHY {replicas[2]} at offset 3900 (leader epoch 2 vs 4)" in result.stdout
    assert "seglog diff --leader" in result.stdout and "--export-lost" in result.stdout
    assert "seglog replay events-0-only-here.jsonl" in result.stdout
    assert "no damage on" in result.stdout and "but it diverges" in result.stdout
    assert _digest(replicas[1]) == before


def test_damage_below_an_unclean_divergence_repaired_and_the_divergence_said(tmp_path):
    replicas = _copy("unclean-election", tmp_path)
    log = replicas[1] / "00000000000000000000.log"
    _flip(log, 300_000)  # below offset 3900: HEALTHY's history too
    tail_before = (replicas[1] / "00000000000000004293.log").read_bytes()
    status, document = run_json(SCRIPT, "--yes", replicas[1], replicas[2], replicas[3], cwd=tmp_path)
    assert status == 3 and document["applied"] is True, document["summary"]
    assert log.read_bytes() == (replicas[2] / log.name).read_bytes()
    assert (replicas[1] / "00000000000000004293.log").read_bytes() == tail_before  # its own records kept
    summary = "\n".join(document["summary"])
    assert "at offset 3900 (leader epoch 2 vs 4)" in summary and "seglog replay" in summary
    assert "below where it diverges" in document["decision"]
