"""What a recovery plan says about the damage it removes (``damagedRanges``, ``offsetCountLost``,
``keptBeyondDamage`` of ``as_dict``), on copies of the broker's ``plain-0`` (4 segments, log end
offset 6729) damaged in the ways a power loss or a bad disk does, checked against the batches
``kafka-dump-log.sh`` listed for the undamaged files (the corpus goldens)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from seglog_cli.storage.recovery.recover import plan_recover

SEGMENTS = ["00000000000000000000", "00000000000000002071", "00000000000000004138", "00000000000000006225"]


def _batches(corpus: Path, segment: str) -> list[dict]:
    """kafka-dump-log's batch lines of one plain-0 segment: offsets, count, position, size."""
    out = []
    for line in (corpus / "kafka-4.2.0" / "golden" / "plain-0" / f"{segment}.log.plain.out").read_text().splitlines():
        if line.startswith("baseOffset:"):
            fields = dict(re.findall(r"(\w+): (\S+)", line))
            out.append({k: int(fields[k]) for k in ("baseOffset", "lastOffset", "count", "position", "size")})
    return out


def _partition(corpus: Path, root: Path) -> Path:
    """A log dir holding a writable copy of plain-0, after an unclean shutdown (no marker)."""
    source = corpus / "kafka-4.2.0" / "data"
    root.mkdir(parents=True)
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "replication-offset-checkpoint",
                 "meta.properties"):
        shutil.copy(source / name, root / name)
    shutil.copytree(source / "plain-0", root / "plain-0")
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root / "plain-0"


def _plans(partition: Path) -> dict[str, dict]:
    return {mode: plan_recover([partition], mode=mode).as_dict() for mode in ("kafka", "salvage")}


def _check_summary(plan: dict) -> None:
    """The summary's totals are the sums of the partitions' numbers."""
    parts, summary = plan["partitions"], plan["summary"]
    assert summary["offsetCountLost"] == sum(p["offsetCountLost"] for p in parts)
    assert summary["damagedRanges"] == sum(len(p["damagedRanges"]) for p in parts)
    assert summary["damagedBytes"] == sum(r["bytes"] for p in parts for r in p["damagedRanges"])
    assert summary["damagedBytes"] == summary["bytesTruncated"]  # every byte cut is in a damaged range
    for key in ("batches", "records"):
        assert summary["keptBeyondDamage"][key] == sum(p["keptBeyondDamage"][key] for p in parts)
    for p in parts:
        assert p["offsetCountLost"] == sum(last - first + 1 for first, last in p["offsetsLost"])


def test_a_flipped_bit_in_an_older_segment(corpus, tmp_path):
    """One bad batch in segment 2071 (below the recovery point, but without the clean-shutdown
    marker Kafka recovers from the segment holding the recovery point only, so salvage walks it
    anyway): salvage cuts that batch alone and keeps the rest of its segment and the two later
    segments; Kafka's recovery does not look at it."""
    partition = _partition(corpus, tmp_path / "data")
    batches = _batches(corpus, SEGMENTS[1])
    bad_index = len(batches) // 2
    bad = batches[bad_index]
    log = partition / f"{SEGMENTS[1]}.log"
    raw = bytearray(log.read_bytes())
    raw[bad["position"] + bad["size"] // 2] ^= 0x04
    log.write_bytes(bytes(raw))

    plans = _plans(partition)
    salvage = plans["salvage"]["partitions"][0]
    [cut] = salvage["damagedRanges"]
    assert (cut["path"], cut["position"], cut["bytes"]) == (str(log), bad["position"], bad["size"])
    assert (cut["offsets"], cut["firstOffset"], cut["lastOffset"]) == ("known", bad["baseOffset"], bad["lastOffset"])
    assert cut["offsetCount"] == bad["lastOffset"] - bad["baseOffset"] + 1
    assert salvage["offsetsLost"] == [[bad["baseOffset"], bad["lastOffset"]]]
    after = batches[bad_index + 1:] + [b for s in SEGMENTS[2:] for b in _batches(corpus, s)]
    assert salvage["keptBeyondDamage"] == {"batches": len(after), "records": sum(b["count"] for b in after),
                                           "firstOffset": after[0]["baseOffset"], "lastOffset": 6728}
    assert salvage["bytesTruncated"] == bad["size"]
    kafka = plans["kafka"]["partitions"][0]
    assert kafka["damagedRanges"] == [] and kafka["offsetCountLost"] == 0  # below where Kafka looks
    assert kafka["keptBeyondDamage"]["batches"] == 0
    for plan in plans.values():
        _check_summary(plan)


def test_a_run_of_zeros_in_the_active_segment(corpus, tmp_path):
    """Pages that never reached the disk in the middle of the active segment: Kafka truncates at
    the first zeroed batch and loses everything after it; salvage cuts the zeroed batches out."""
    partition = _partition(corpus, tmp_path / "data")
    log = partition / f"{SEGMENTS[3]}.log"
    raw = bytearray(log.read_bytes())
    raw[100_000:140_000] = bytes(40_000)
    log.write_bytes(bytes(raw))
    batches = _batches(corpus, SEGMENTS[3])
    first_bad = next(b for b in batches if b["position"] + b["size"] > 100_000)
    first_good = next(b for b in batches if b["position"] >= 140_000)

    plans = _plans(partition)
    kafka = plans["kafka"]["partitions"][0]
    [cut] = kafka["damagedRanges"]
    assert (cut["position"], cut["bytes"]) == (first_bad["position"], log.stat().st_size - first_bad["position"])
    assert (cut["offsets"], cut["firstOffset"], cut["lastOffset"]) == ("known", first_bad["baseOffset"], 6728)
    assert kafka["offsetCountLost"] == 6728 - first_bad["baseOffset"] + 1
    assert kafka["keptBeyondDamage"] == {"batches": 0, "records": 0, "firstOffset": None, "lastOffset": None}

    salvage = plans["salvage"]["partitions"][0]
    [cut] = salvage["damagedRanges"]
    assert (cut["position"], cut["bytes"]) == (first_bad["position"], first_good["position"] - first_bad["position"])
    assert (cut["firstOffset"], cut["lastOffset"]) == (first_bad["baseOffset"], first_good["baseOffset"] - 1)
    after = [b for b in batches if b["position"] >= first_good["position"]]
    assert salvage["keptBeyondDamage"] == {"batches": len(after), "records": sum(b["count"] for b in after),
                                           "firstOffset": first_good["baseOffset"], "lastOffset": 6728}
    for plan in plans.values():
        _check_summary(plan)


def _flip(log: Path, position: int) -> None:
    raw = bytearray(log.read_bytes())
    raw[position] ^= 0x01
    log.write_bytes(bytes(raw))


@pytest.mark.parametrize("mode", ["kafka", "salvage"])
def test_tails_whose_offsets_are_none_known_or_unknown(corpus, tmp_path, mode):
    """Zeros after the last batch hold no offsets; a torn batch, or complete ones whose CRC
    fails (their headers chained), name those their headers claim (and they are lost); a batch
    torn inside its header cannot name its offsets: the plan says unknown (no count)."""
    batches = _batches(corpus, SEGMENTS[3])
    before, last = batches[-2], batches[-1]
    claimed = (last["baseOffset"], last["lastOffset"], last["lastOffset"] - last["baseOffset"] + 1)
    cases = {"zeros": (lambda log: log.open("ab").write(bytes(500)),
                       (last["position"] + last["size"], 500, "none", None, None, 0)),
             "torn": (lambda log: os.truncate(log, last["position"] + 100),
                      (last["position"], 100, "known", *claimed)),
             "crc": (lambda log: _flip(log, last["position"] + last["size"] - 10),
                     (last["position"], last["size"], "known", *claimed)),
             "crc-last-two": (lambda log: (_flip(log, before["position"] + before["size"] - 10),
                                           _flip(log, last["position"] + last["size"] - 10)),
                              (before["position"], before["size"] + last["size"], "known", before["baseOffset"],
                               last["lastOffset"], last["lastOffset"] - before["baseOffset"] + 1)),
             "torn-header": (lambda log: os.truncate(log, last["position"] + 20),
                             (last["position"], 20, "unknown", last["baseOffset"], None, None))}
    for name, (damage, expected) in cases.items():
        partition = _partition(corpus, tmp_path / name)
        log = partition / f"{SEGMENTS[3]}.log"
        damage(log)
        plan = plan_recover([partition], mode=mode).as_dict()
        part = plan["partitions"][0]
        [cut] = part["damagedRanges"]
        assert (cut["position"], cut["bytes"], cut["offsets"], cut["firstOffset"], cut["lastOffset"],
                cut["offsetCount"]) == expected, name
        assert part["offsetsLost"] == ([[expected[3], expected[4]]] if expected[2] == "known" else []), name
        assert cut["why"] and "None" not in cut["why"]
        assert part["keptBeyondDamage"]["batches"] == 0
        _check_summary(plan)


def test_the_brokers_own_trailing_garbage_case(corpus, tmp_path):
    """Recovery case a: 100 random bytes after the last batch; the broker truncated them and its
    log end stayed 8929. No header names offsets there: none are counted as lost, and the range
    says its offsets (from 8929 on, if any) cannot be named."""
    data = tmp_path / "data"
    shutil.copytree(corpus / "kafka-4.2.0" / "recovery-cases" / "a-append-garbage-active-log" / "before", data)
    for path in [data, *data.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    for mode in ("kafka", "salvage"):
        plan = plan_recover([data / "plain-0"], mode=mode).as_dict()
        part = plan["partitions"][0]
        [cut] = part["damagedRanges"]
        assert (cut["bytes"], cut["offsets"], cut["firstOffset"], cut["offsetCount"]) == (100, "unknown", 8929, None)
        assert part["offsetCountLost"] == 0 and part["logEndOffset"] == 8929
        _check_summary(plan)


def test_recovered_bytes_and_flushed_offsets_lost(corpus, tmp_path):
    """A batch torn inside its header at the end of the active segment: its offsets cannot be
    named from its bytes, but the recovery point (6729) says they were flushed once: the plan
    names them as flushed offsets lost. Start-up re-reads the active segment only (the one
    holding the recovery point): recoveredBytes is that file's size."""
    last = _batches(corpus, SEGMENTS[3])[-1]
    partition = _partition(corpus, tmp_path / "data")
    log = partition / f"{SEGMENTS[3]}.log"
    os.truncate(log, last["position"] + 20)
    for mode in ("kafka", "salvage"):
        plan = plan_recover([partition], mode=mode).as_dict()
        part = plan["partitions"][0]
        assert part["recoveryPoint"] == 6729 == last["lastOffset"] + 1
        assert part["offsetsLost"] == [] and part["logEndOffset"] == last["baseOffset"]
        assert part["flushedOffsetsLost"] == [last["baseOffset"], last["lastOffset"]]
        if mode == "kafka":
            assert part["recoveredSegments"] == [6225]
        assert part["recoveredBytes"] == sum(os.path.getsize(partition / f"{b:020d}.log")
                                             for b in part["recoveredSegments"])
        assert plan["summary"]["recoveredBytes"] == part["recoveredBytes"]
    # a torn batch whose header names its offsets: they are named as lost, and none besides
    partition = _partition(corpus, tmp_path / "torn")
    os.truncate(partition / f"{SEGMENTS[3]}.log", last["position"] + 100)
    part = plan_recover([partition]).as_dict()["partitions"][0]
    assert part["offsetsLost"] == [[last["baseOffset"], last["lastOffset"]]] and part["flushedOffsetsLost"] is None


def test_an_offset_gap_between_adjacent_batches_is_not_lost_by_salvage(corpus, tmp_path):
    """A batch missing whole, with no bytes left of it (as the log cleaner removes a batch all of
    whose records are gone): nothing of it is in the file, so salvage, which cuts only damaged
    bytes, loses none of its offsets. Only the damaged batch's offsets are lost."""
    batches = _batches(corpus, SEGMENTS[3])
    damaged, missing = batches[2], batches[10]
    partition = _partition(corpus, tmp_path / "data")
    log = partition / f"{SEGMENTS[3]}.log"
    raw = bytearray(log.read_bytes())
    raw[damaged["position"] + damaged["size"] - 30] ^= 0x02
    del raw[missing["position"]:missing["position"] + missing["size"]]
    log.write_bytes(bytes(raw))
    part = plan_recover([partition], mode="salvage").as_dict()["partitions"][0]
    assert part["offsetsLost"] == [[damaged["baseOffset"], damaged["lastOffset"]]]
    [cut] = part["damagedRanges"]
    assert (cut["position"], cut["bytes"]) == (damaged["position"], damaged["size"])
    kept = [b for b in batches[3:] if b is not missing]
    assert part["keptBeyondDamage"]["batches"] == len(kept)
    assert part["keptBeyondDamage"]["records"] == sum(b["count"] for b in kept)


def test_kafka_truncation_of_an_older_segment_deletes_the_later_ones_whole(corpus, tmp_path):
    """With the recovery point lowered to 2071, Kafka recovers segment 2071, truncates it at the
    damaged batch and deletes 4138 and 6225 whole: their bytes are counted apart from the bytes
    truncated, their offsets are lost (in log order); salvage keeps all of them."""
    partition = _partition(corpus, tmp_path / "data")
    checkpoint = partition.parent / "recovery-point-offset-checkpoint"
    checkpoint.write_text(re.sub(r"(?m)^plain 0 \d+$", "plain 0 2071", checkpoint.read_text()))
    batches = _batches(corpus, SEGMENTS[1])
    bad = batches[20]
    _flip(partition / f"{SEGMENTS[1]}.log", bad["position"] + bad["size"] - 40)
    sizes = {s: os.path.getsize(partition / f"{s}.log") for s in SEGMENTS}
    plans = _plans(partition)
    kafka = plans["kafka"]["partitions"][0]
    assert sorted(kafka["removedSegments"]) == [4138, 6225]
    assert kafka["removedSegmentBytes"] == sizes[SEGMENTS[2]] + sizes[SEGMENTS[3]]
    assert kafka["bytesTruncated"] == sizes[SEGMENTS[1]] - bad["position"]
    assert kafka["offsetsLost"] == [[bad["baseOffset"], 4137], [4138, 6224], [6225, 6728]]
    assert kafka["offsetCountLost"] == 6728 - bad["baseOffset"] + 1
    [cut] = kafka["damagedRanges"]
    assert (cut["position"], cut["firstOffset"], cut["lastOffset"]) == (bad["position"], bad["baseOffset"], 4137)
    salvage = plans["salvage"]["partitions"][0]
    assert salvage["removedSegments"] == [] and salvage["removedSegmentBytes"] == 0
    after = batches[21:] + [b for s in SEGMENTS[2:] for b in _batches(corpus, s)]
    assert salvage["keptBeyondDamage"]["records"] == sum(b["count"] for b in after)
    for plan in plans.values():
        _check_summary(plan)
        assert plan["summary"]["removedSegmentBytes"] == sum(p["removedSegmentBytes"] for p in plan["partitions"])
