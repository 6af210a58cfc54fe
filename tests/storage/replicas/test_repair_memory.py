"""seglog repair keeps nothing per batch: a damaged copy of a replica of millions of small batches
is planned and repaired (``--apply``) in a child process whose peak RSS stays far below what one
object per batch would take, and comes out byte for byte the healthy replica.

The replica is the one tests/storage/replicas/test_diff_memory.py builds (real v2 batches of one record,
CRC-32C computed by the builder). The damaged copy has a flipped bit in one batch near the
middle and a zeroed stretch of a few batches further on, so the plan walks every batch of both
segments and takes HEALTHY's bytes for two ranges.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.storage.replicas.test_diff_memory import _write_replica

BATCHES = 2_000_000  # ~82 bytes each on disk; one Python object per batch takes well over 100 bytes
# holding one object per batch of both segments took 1278 MB here (plan and --apply); without:
# ~63 MB planning, ~94 MB applying, of which ~31 MB are the pages of the 64 MiB window
# rebuild_index.recover_indexes walks the repaired segment in (WALK_CHUNK), whatever its size
PEAK_LIMIT_MB = 100
APPLY_PEAK_LIMIT_MB = 120

CHILD = """
import json, runpy, sys
peak_file = sys.argv.pop(1)
try:
    runpy.run_module("seglog_cli", run_name="__main__")
    code = 0
except SystemExit as exc:
    code = exc.code
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
with open(peak_file, "w") as handle:
    json.dump({"code": code, "peak_kib": peak}, handle)
"""


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc (Linux)")
def test_repair_peak_memory_does_not_grow_with_the_batch_count(tmp_path):
    healthy = tmp_path / "broker-1" / "events-0"
    damaged = tmp_path / "broker-2" / "events-0"
    size = _write_replica(healthy, BATCHES, last_epoch=0)
    damaged.mkdir(parents=True)
    for path in healthy.iterdir():
        shutil.copyfile(path, damaged / path.name)
    log = damaged / f"{0:020d}.log"
    flipped, zeroed = 1_000_000, 1_500_000
    with open(log, "r+b") as handle:
        handle.seek(flipped * size + size - 1)  # the last byte of the batch of offset 1000000 (its record)
        byte = handle.read(1)[0]
        handle.seek(flipped * size + size - 1)
        handle.write(bytes([byte ^ 0x10]))
        handle.seek(zeroed * size + 20)  # from inside the batch of offset 1500000 to inside the fourth after it
        handle.write(bytes(4 * size))
    assert log.read_bytes() != (healthy / log.name).read_bytes()

    def run(*args):
        peak_file = tmp_path / "peak.json"
        result = subprocess.run([sys.executable, "-c", CHILD, str(peak_file), "repair", "--from", str(healthy),
                                 str(damaged), "--format", "json", *args], capture_output=True, text=True, timeout=900)
        report = json.loads(peak_file.read_text())
        return result, report["code"], report["peak_kib"] / 1024

    result, code, plan_peak = run()
    assert code == 1, result.stderr
    plan = json.loads(result.stdout)["plan"]
    (segment,) = plan["segments"]
    assert segment["offsets"] == [[flipped, flipped], [zeroed, zeroed + 4]]
    assert [(p["from"], p["start"], p["end"]) for p in segment["pieces"]] == [
        ("damaged", 0, flipped * size), ("healthy", flipped * size, (flipped + 1) * size),
        ("damaged", (flipped + 1) * size, zeroed * size), ("healthy", zeroed * size, (zeroed + 5) * size),
        ("damaged", (zeroed + 5) * size, BATCHES * size)]
    assert plan_peak < PEAK_LIMIT_MB, f"plan: peak RSS {plan_peak:.0f} MB for {BATCHES} batches"

    result, code, apply_peak = run("--apply")
    assert code == 0, result.stderr
    assert apply_peak < APPLY_PEAK_LIMIT_MB, f"--apply: peak RSS {apply_peak:.0f} MB for {BATCHES} batches"
    assert log.read_bytes() == (healthy / log.name).read_bytes()
