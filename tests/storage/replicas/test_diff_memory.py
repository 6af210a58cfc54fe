"""seglog diff keeps nothing per batch: two replicas of millions of small batches are compared in
a child process whose peak RSS stays far below what holding their headers would take.

The replicas are real v2 batches (one small record each, CRC-32C computed by the builder) written
back to back; the batch is the same bytes at every offset but its base offset (outside the CRC),
so millions are written in a moment. The second replica rolled a segment after 1000 batches, so
none of its groups of batches lines up with the first's and none can be passed over as identical:
the comparison walks every batch of both in step, up to the last, which carries another leader
epoch on the second replica.
"""

from __future__ import annotations

import json
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from seglog_cli.storage.write.builder import NewRecord, build_batch

BATCHES = 2_000_000  # per replica: ~82 bytes each on disk, 41 bytes each in the old arrays
PEAK_LIMIT_MB = 100  # holding 41 bytes per batch of both replicas would take 2 * 82 MB on its own
PIECE = 250_000

CHILD = """
import json, sys
from seglog_cli.storage.replicas.replicas import diff_group
group = diff_group([(sys.argv[1], sys.argv[1]), (sys.argv[2], sys.argv[2])])
(comparison,) = group.comparisons
peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"reference": str(group.reference.path), "batches": group.reference.batches,
                  "comparison": comparison.as_dict(), "peak_kib": peak}))
"""


def _write_replica(partition: Path, count: int, last_epoch: int, split: int | None = None) -> int:
    """``count`` one-record batches at offsets 0..count-1, leader epoch 0 but the last one's; a
    second segment from offset ``split`` on when given."""
    partition.mkdir(parents=True)
    template = build_batch([NewRecord(key=None, value=b"v", timestamp=1_700_000_000_000)], partition_leader_epoch=0)
    size = len(template)
    bounds = [0, split, count] if split else [0, count]
    for first_of_segment, end in zip(bounds, bounds[1:]):
        with open(partition / f"{first_of_segment:020d}.log", "wb") as handle:
            for first in range(first_of_segment, end, PIECE):
                n = min(PIECE, end - first)
                data = bytearray(template * n)
                offsets = array("q", range(first, first + n))
                if sys.byteorder == "little":
                    offsets.byteswap()
                raw = offsets.tobytes()
                for byte in range(8):  # the big-endian base offset, byte by byte across all batches
                    data[byte::size] = raw[byte::8]
                if first + n == count:
                    data[-size + 12:-size + 16] = last_epoch.to_bytes(4, "big")
                handle.write(data)
    epochs = [(0, 0)] + ([(last_epoch, count - 1)] if last_epoch else [])
    (partition / "leader-epoch-checkpoint").write_text(
        "0\n" + f"{len(epochs)}\n" + "".join(f"{e} {o}\n" for e, o in epochs))
    return size


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc (Linux)")
def test_diff_peak_memory_does_not_grow_with_the_batch_count(tmp_path):
    old = tmp_path / "broker-1" / "events-0"
    new = tmp_path / "broker-2" / "events-0"
    size = _write_replica(old, BATCHES, last_epoch=0)
    _write_replica(new, BATCHES, last_epoch=1, split=1000)
    assert size * BATCHES > 100 << 20  # each replica well over 100 MB
    result = subprocess.run([sys.executable, "-c", CHILD, str(old), str(new)], capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    # the replica with the later epoch leads; the other agrees up to its last batch, which another
    # leader epoch replaced
    assert report["reference"] == str(new) and report["batches"] == BATCHES
    comparison = report["comparison"]
    assert comparison["status"] == "divergent"
    assert comparison["commonPrefix"] == {"firstOffset": 0, "lastOffset": BATCHES - 2}
    assert comparison["divergence"]["offset"] == BATCHES - 1
    assert comparison["divergence"]["cause"] == "leader-epoch"
    assert comparison["truncation"]["offset"] == BATCHES - 1 and comparison["discardedRecords"] == 1
    assert comparison["lost"]["records"] == 1
    peak_mb = report["peak_kib"] / 1024
    assert peak_mb < PEAK_LIMIT_MB, f"peak RSS {peak_mb:.0f} MB for {BATCHES} batches per replica"
