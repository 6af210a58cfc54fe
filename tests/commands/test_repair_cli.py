"""``seglog repair --from`` on copies of real replicas: damage repaired byte for byte from another
replica (verify clean, diff exits 0, undo restores), refusals that change nothing."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil

import pytest

from tests.conftest import run_seglog

REPLICAS = "kafka-4.2.0/replicas"


def _copy(corpus, case, brokers, tmp_path):
    root = corpus / REPLICAS / case
    if not root.is_dir():
        pytest.skip(f"{root} not in the corpus")
    out = {}
    for broker in brokers:
        target = tmp_path / case / f"broker-{broker}"
        shutil.copytree(root / f"broker-{broker}", target)
        for dirpath, _dirs, files in os.walk(target):
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o644)
        out[broker] = target / "events-0"
    return out


def _tree(directory):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.parent.rglob("*"))
            if p.is_file() and "seglog-backups" not in p.parts and p.name != ".lock"}


def _logs_identical(a, b):
    names = sorted(p.name for p in a.glob("*.log"))
    assert names == sorted(p.name for p in b.glob("*.log"))
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def _repaired(healthy, damaged, *extra):
    plan = run_seglog("repair", "--from", str(healthy), str(damaged), *extra)
    assert plan.exit_code == 1, plan.out + plan.err
    applied = run_seglog("repair", "--from", str(healthy), str(damaged), "--apply", *extra)
    assert applied.exit_code == 0, applied.out + applied.err
    _logs_identical(healthy, damaged)
    for name in (p.name for p in healthy.glob("*.index")):
        assert (damaged / name).read_bytes() == (healthy / name).read_bytes(), name
    verify = run_seglog("verify", str(damaged))
    assert verify.exit_code == 0, verify.out
    diff = run_seglog("diff", "--leader", str(healthy), str(healthy), str(damaged))
    assert diff.exit_code == 0, diff.out
    again = run_seglog("repair", "--from", str(healthy), str(damaged))
    assert again.exit_code == 0 and "nothing to repair" in again.out
    return applied


def test_flipped_bits_and_zeroed_range_then_undo(corpus, tmp_path):
    replicas = _copy(corpus, "in-sync", (1, 2), tmp_path)
    healthy, damaged = replicas[1], replicas[2]
    log = damaged / "00000000000000002221.log"
    data = bytearray(log.read_bytes())
    data[500_000] ^= 0x10  # inside a batch's records: its CRC fails
    data[100_003] ^= 0x01  # another batch
    data[700_000:720_000] = bytes(20_000)  # a zeroed range across several batches
    log.write_bytes(bytes(data))
    damaged_bytes = bytes(data)
    assert run_seglog("verify", str(damaged)).exit_code == 3
    applied = _repaired(healthy, damaged)
    backup = applied.out.split("backup in ")[1].split(" ")[0]
    undone = run_seglog("undo", "--apply", backup)
    assert undone.exit_code == 0, undone.err
    assert log.read_bytes() == damaged_bytes


def test_torn_and_cut_tail_with_tail(corpus, tmp_path):
    replicas = _copy(corpus, "transactional", (1, 3), tmp_path)
    healthy, damaged = replicas[1], replicas[3]
    segments = sorted(damaged.glob("*.log"))
    last = segments[-1]
    os.truncate(last, last.stat().st_size // 2 + 7)  # mid-batch: a torn tail, and the rest missing
    _repaired(healthy, damaged, "--tail")


def test_deleted_last_segment_with_tail(corpus, tmp_path):
    replicas = _copy(corpus, "in-sync", (1, 3), tmp_path)
    healthy, damaged = replicas[1], replicas[3]
    for path in damaged.glob("00000000000000004434.*"):
        path.unlink()
    (damaged / "00000000000000004600.snapshot").unlink()
    lagging = run_seglog("diff", str(healthy), str(damaged))
    assert lagging.exit_code == 1
    without_tail = run_seglog("repair", "--from", str(healthy), str(damaged))
    assert without_tail.exit_code == 0 and "nothing to repair" in without_tail.out
    _repaired(healthy, damaged, "--tail")
    assert (damaged / "00000000000000004600.snapshot").read_bytes() == (healthy / "00000000000000004600.snapshot").read_bytes()


def test_damage_in_the_common_prefix_of_diverged_replicas(corpus, tmp_path):
    """broker 1 of the unclean election, damaged below the divergence: repaired from broker 2
    (which holds those offsets in the same epochs); its divergent tail left alone."""
    replicas = _copy(corpus, "unclean-election", (1, 2), tmp_path)
    healthy, damaged = replicas[2], replicas[1]
    log = damaged / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[300_000] ^= 0x04
    log.write_bytes(bytes(data))
    before_tail = (damaged / "00000000000000004293.log").read_bytes()
    applied = run_seglog("repair", "--from", str(healthy), str(damaged), "--apply")
    # applied, and both said: the damage below 3900 repaired, the divergence from 3900 on left to a human
    assert applied.exit_code == 3, applied.out + applied.err
    assert "HEALTHY's batches for offsets 584-616" in applied.out and "applied; backup in" in applied.out
    assert (f"DAMAGED {damaged} diverges from HEALTHY {healthy} at offset 3900 (leader epoch 2 vs 4)" in applied.out
            and "Kafka truncates DAMAGED to offset 3900 " in applied.out
            and "Only the damage below offset 3900 was repaired (above)." in applied.out)
    assert log.read_bytes() == (healthy / "00000000000000000000.log").read_bytes()
    assert (damaged / "00000000000000004293.log").read_bytes() == before_tail
    diff = run_seglog("diff", "--format", "json", "--leader", str(healthy), str(healthy), str(damaged))
    assert diff.exit_code == 3 and '"leader-epoch"' in diff.out and '"damage": []' in diff.out


@pytest.mark.parametrize("side,name,where", [
    ("old-leader", "00000000000000004293.log", "middle"),  # broker 1's own segment of its epoch-2 tail
    ("new-leader", "00000000000000004288.log", "middle"),
    ("old-leader", "00000000000000002133.log", "end"),  # the shared segment, past offset 3900
    ("new-leader", "00000000000000002133.log", "end"),
])
def test_refused_across_the_unclean_divergence(corpus, tmp_path, side, name, where):
    """Broker 1 holds 3900-4799 in epoch 2, broker 2 3900-4599 in epoch 4: damage past 3900 on
    either cannot be repaired from the other."""
    replicas = _copy(corpus, "unclean-election", (1, 2), tmp_path)
    healthy, damaged = (replicas[2], replicas[1]) if side == "old-leader" else (replicas[1], replicas[2])
    log = damaged / name
    data = bytearray(log.read_bytes())
    data[len(data) // 2 if where == "middle" else len(data) - 5000] ^= 0x20
    log.write_bytes(bytes(data))
    before = _tree(damaged)
    for extra in ((), ("--apply",), ("--apply", "--tail")):
        result = run_seglog("repair", "--from", str(healthy), str(damaged), *extra)
        assert result.exit_code == 3, result.out + result.err
        assert len(result.err.strip().splitlines()) == 1 and "nothing was changed" in result.err
        if where == "end":
            assert "diverge from offset 3900 (leader-epoch)" in result.err
        assert _tree(damaged) == before
    assert not (damaged.parent.parent / "seglog-backups").exists() or not any(
        (damaged.parent.parent / "seglog-backups").iterdir())


def test_refused_when_both_are_damaged_or_topic_ids_differ(corpus, tmp_path):
    replicas = _copy(corpus, "in-sync", (1, 2), tmp_path)
    healthy, damaged = replicas[1], replicas[2]
    for replica in (healthy, damaged):
        log = replica / "00000000000000000000.log"
        data = bytearray(log.read_bytes())
        data[400_000] ^= 0x02
        log.write_bytes(bytes(data))
    before = _tree(damaged)
    both = run_seglog("repair", "--from", str(healthy), str(damaged), "--apply")
    assert both.exit_code == 3 and "HEALTHY" in both.err and _tree(damaged) == before
    # another topic id
    other = _copy(corpus, "unclean-election", (3,), tmp_path)[3]
    fresh = _copy(corpus, "in-sync", (3,), tmp_path / "x")[3]
    mismatch = run_seglog("repair", "--from", str(other), str(fresh), "--apply")
    assert mismatch.exit_code == 3 and "topic id" in mismatch.err


def test_lost_segment_with_aborted_transactions_gets_its_txnindex(corpus, tmp_path):
    replicas = _copy(corpus, "transactional", (1, 2), tmp_path)
    healthy, damaged = replicas[1], replicas[2]
    for path in list(damaged.glob("00000000000000002169.*")) + list(damaged.glob("00000000000000004361.*")):
        path.unlink()
    (damaged / "00000000000000004734.snapshot").unlink()
    _repaired(healthy, damaged, "--tail")
    txn = "00000000000000002169.txnindex"
    assert (damaged / txn).read_bytes() == (healthy / txn).read_bytes() and (healthy / txn).stat().st_size > 0


def test_segment_made_identical_takes_the_healthy_indexes(corpus, tmp_path):
    """lagging-follower: broker 1 restarted inside segment 2129 (an index entry fewer than broker
    2's). Repaired from broker 2 its segment is broker 2's byte for byte, and so are its indexes."""
    replicas = _copy(corpus, "lagging-follower", (1, 2), tmp_path)
    healthy, damaged = replicas[2], replicas[1]
    assert (damaged / "00000000000000002129.index").read_bytes() != (healthy / "00000000000000002129.index").read_bytes()
    log = damaged / "00000000000000002129.log"
    data = bytearray(log.read_bytes())
    data[200_000:230_000] = bytes(30_000)
    log.write_bytes(bytes(data))
    planned = run_seglog("repair", "--from", str(healthy), str(damaged))
    assert planned.exit_code == 1, planned.out + planned.err
    # which indexes is only known once the segment is assembled and compared with HEALTHY's
    assert ("; copy HEALTHY's .index and .timeindex if it comes out HEALTHY's bytes, else rebuild them\n"
            in planned.out), planned.out
    applied = run_seglog("repair", "--from", str(healthy), str(damaged), "--apply")
    assert applied.exit_code == 0, applied.out + applied.err
    assert "; copy HEALTHY's .index and .timeindex\n" in applied.out and "rebuild" not in applied.out, applied.out
    for suffix in (".log", ".index", ".timeindex"):
        name = "00000000000000002129" + suffix
        assert (damaged / name).read_bytes() == (healthy / name).read_bytes(), name
    assert run_seglog("verify", str(damaged)).exit_code == 0
    assert run_seglog("diff", "--leader", str(healthy), str(healthy), str(damaged)).exit_code == 0


def test_rebuilt_indexes_follow_the_partitions_topic_config(corpus, tmp_path):
    """HEALTHY's indexes of the segment are gone, so the repaired segment's are rebuilt: with
    index.interval.bytes as the partition resolves it (--config here), not Kafka's default."""
    from seglog_cli.storage.log.files import MappedFile
    from seglog_cli.storage.write.rebuild_index import recover_indexes
    from seglog_cli.storage.config.topic_config import TopicConfig

    replicas = _copy(corpus, "in-sync", (1, 2), tmp_path)
    healthy, damaged = replicas[1], replicas[2]
    name = "00000000000000002221"
    for suffix in (".index", ".timeindex"):
        (healthy / (name + suffix)).unlink()
    log = damaged / (name + ".log")
    data = bytearray(log.read_bytes())
    data[300_000] ^= 0x40
    log.write_bytes(bytes(data))
    applied = run_seglog("repair", "--from", str(healthy), str(damaged), "--apply", "--config",
                         "index.interval.bytes=65536")
    assert applied.exit_code == 0, applied.out + applied.err
    assert "index.interval.bytes" in applied.out
    assert "; rebuild its .index and .timeindex\n" in applied.out and "copy HEALTHY's .index" not in applied.out
    assert log.read_bytes() == (healthy / (name + ".log")).read_bytes()
    with MappedFile(log) as mapped:
        small = recover_indexes(mapped, 2221, TopicConfig().with_overrides({"index.interval.bytes": "65536"}))
        default = recover_indexes(mapped, 2221)
    assert small.offset_index != default.offset_index  # the setting makes a difference here
    assert (damaged / (name + ".index")).read_bytes() == small.offset_index
    assert (damaged / (name + ".timeindex")).read_bytes() == small.time_index
    assert run_seglog("verify", str(damaged)).exit_code == 0


def test_lost_middle_segment_restored_from_healthy(corpus, tmp_path):
    replicas = _copy(corpus, "in-sync", (1, 2), tmp_path)
    healthy, damaged = replicas[1], replicas[2]
    name = "00000000000000002221"
    for path in damaged.glob(name + ".*"):
        path.unlink()
    hole = run_seglog("diff", "--format", "json", str(healthy), str(damaged))
    assert hole.exit_code == 3
    import json
    (replica,) = json.loads(hole.out)["partitions"][0]["replicas"]
    assert replica["holes"] == [{"missingOn": "replica", "firstOffset": 2221, "lastOffset": 4433, "batches": 69}]
    planned = run_seglog("repair", "--from", str(healthy), str(damaged))
    # HEALTHY's segment whole: its own indexes, known from the plan on
    assert f"create {name}.log" in planned.out and "; copy HEALTHY's .index and .timeindex\n" in planned.out
    assert "rebuild" not in planned.out, planned.out
    applied = _repaired(healthy, damaged)
    assert "lacks in the middle of its log" in applied.out
    assert "; copy HEALTHY's .index and .timeindex\n" in applied.out
    for suffix in (".timeindex", ".snapshot"):
        assert (damaged / (name + suffix)).read_bytes() == (healthy / (name + suffix)).read_bytes(), suffix


def test_lost_middle_segment_refused_when_healthy_is_damaged_there(corpus, tmp_path):
    replicas = _copy(corpus, "in-sync", (1, 2), tmp_path)
    healthy, damaged = replicas[1], replicas[2]
    name = "00000000000000002221"
    for path in damaged.glob(name + ".*"):
        path.unlink()
    log = healthy / (name + ".log")
    data = bytearray(log.read_bytes())
    data[400_000] ^= 0x08
    log.write_bytes(bytes(data))
    before = _tree(damaged)
    refused = run_seglog("repair", "--from", str(healthy), str(damaged), "--apply")
    assert refused.exit_code == 3, refused.out + refused.err
    assert "HEALTHY is damaged at position" in refused.err and refused.err.count("\n") == 1
    assert _tree(damaged) == before


@pytest.mark.parametrize("healthy_broker,damaged_broker,epochs,only_here", [
    (2, 1, "2 vs 4", 900),  # the old leader: its epoch-2 records 3900-4799 are on no other replica
    (1, 3, "4 vs 2", 700),  # the other way round: the unclean leader's records 3900-4599
])
def test_diverged_replica_is_no_nothing_to_repair(corpus, tmp_path, healthy_broker, damaged_broker, epochs,
                                                  only_here):
    """No damage, another history from the first divergent offset the diff engine finds: said
    with that offset and the two epochs, pointing to seglog diff and seglog replay; exit 3,
    nothing changed (with --apply either)."""
    replicas = _copy(corpus, "unclean-election", (healthy_broker, damaged_broker), tmp_path)
    healthy, damaged = replicas[healthy_broker], replicas[damaged_broker]
    diff = run_seglog("diff", "--format", "json", "--leader", str(healthy), str(healthy), str(damaged))
    (compared,) = json.loads(diff.out)["partitions"][0]["replicas"]
    offset = compared["divergence"]["offset"]
    assert offset == 3900 and compared["divergence"]["cause"] == "leader-epoch"
    before = _tree(damaged)
    export = f"seglog diff --leader {healthy} --export-lost events-0-only-here.jsonl {healthy} {damaged}"
    for extra in ((), ("--apply",)):
        result = run_seglog("repair", "--from", str(healthy), str(damaged), *extra)
        assert result.exit_code == 3, result.out + result.err
        assert "nothing to repair" not in result.out and result.err == ""
        assert (f"DAMAGED {damaged} diverges from HEALTHY {healthy} at offset {offset} (leader epoch {epochs}): "
                "this is no damage repair can fix; the records from offset 3900 on differ") in result.out
        assert f"the {only_here} records at offsets 3900-" in result.out
        assert f"compare them:                    seglog diff --leader {healthy} {healthy} {damaged}\n" in result.out
        assert f"export what DAMAGED alone holds: {export}\n" in result.out
        assert ("put it back into the cluster:    seglog replay events-0-only-here.jsonl --bootstrap-server "
                "HOST:PORT") in result.out
        assert _tree(damaged) == before
    document = run_seglog("repair", "--format", "json", "--from", str(healthy), str(damaged))
    assert document.exit_code == 3
    report = json.loads(document.out)
    assert report["exitStatus"] == 3 and report["empty"] is True and report["applied"] is None
    divergence = report["plan"]["divergence"]
    assert (divergence["offset"], divergence["cause"]) == (offset, "leader-epoch")
    assert divergence["batch"] == compared["divergence"]["batch"]
    assert divergence["healthyBatch"] == compared["divergence"]["referenceBatch"]
    assert divergence["kafkaTruncatesTo"] == compared["truncation"]["offset"] == 3900
    assert divergence["lost"]["records"] == only_here and divergence["commands"]["exportLost"] == export
    assert "seglog replay" in divergence["commands"]["replay"] and divergence["message"].startswith("DAMAGED ")
    # the export command it prints gives exactly the records only DAMAGED holds
    exported = run_seglog(*shlex.split(divergence["commands"]["exportLost"])[1:], cwd=tmp_path)
    assert exported.exit_code == 3, exported.err
    lines = (tmp_path / "events-0-only-here.jsonl").read_text().splitlines()
    assert len(lines) == only_here and json.loads(lines[0])["offset"] == 3900
    # --tail: DAMAGED is no prefix of HEALTHY's log, refused in one line, nothing changed
    tail = run_seglog("repair", "--tail", "--apply", "--from", str(healthy), str(damaged))
    assert tail.exit_code == 3 and len(tail.err.strip().splitlines()) == 1
    assert "diverge from offset 3900 (leader-epoch)" in tail.err and _tree(damaged) == before


def _not_damaged(text: str) -> str:
    """``text`` without the words that say offsets are not damaged (and the argument names)."""
    return text.replace("not damaged", "").replace("DAMAGED", "")


def test_tail_calls_a_lagging_replicas_end_missing(corpus, tmp_path):
    """lagging-follower broker 3 stopped at 1500: offsets 1500-4599 are missing at its end, never
    'damaged', in the plan without --tail, the --tail plan, its --apply output and the JSON."""
    replicas = _copy(corpus, "lagging-follower", (1, 3), tmp_path)
    healthy, damaged = replicas[1], replicas[3]
    without = run_seglog("repair", "--from", str(healthy), str(damaged))
    assert without.exit_code == 0, without.out + without.err
    assert f"{damaged}: nothing to repair from {healthy}\n" in without.out
    assert ("  missing at its end: offsets 1500-4599, which HEALTHY holds (this replica lags; they are not "
            "damaged): Kafka fetches them when it rejoins, --tail copies them now\n") in without.out
    plan = run_seglog("repair", "--tail", "--from", str(healthy), str(damaged))
    assert plan.exit_code == 1, plan.out + plan.err
    expected = [
        "  rewrite 00000000000000000000.log (1036159 bytes): offsets 1500-2128 this replica lacks at its end "
        "(missing, not damaged), from HEALTHY;",
        "  create 00000000000000002129.log (1040908 bytes): a segment this replica lacks at its end: offsets "
        "2129-4249 (missing, not damaged), from HEALTHY;",
        "  create 00000000000000004250.log (170286 bytes): a segment this replica lacks at its end: offsets "
        "4250-4599 (missing, not damaged), from HEALTHY;",
        "  missing at its end: offsets 1500-4599, which HEALTHY holds (this replica lags; they are not damaged): "
        "copied from HEALTHY",
    ]
    for line in expected:
        assert line in plan.out, plan.out
    document = json.loads(run_seglog("repair", "--tail", "--format", "json", "--from", str(healthy),
                                     str(damaged)).out)
    assert document["plan"]["missingAtEnd"]["firstOffset"] == 1500
    assert document["plan"]["missingAtEnd"]["lastOffset"] == 4599 and document["plan"]["missingAtEnd"]["copied"]
    assert [s["missingOffsets"] for s in document["plan"]["segments"]] == [[[1500, 2128]], [[2129, 4249]],
                                                                          [[4250, 4599]]]
    assert all(s["damagedOffsets"] == [] for s in document["plan"]["segments"])
    assert "damage" not in _not_damaged(json.dumps(document["plan"]["segments"]).replace('"damaged"', "")
                                        .replace("damagedOffsets", ""))
    applied = run_seglog("repair", "--tail", "--apply", "--from", str(healthy), str(damaged))
    assert applied.exit_code == 0, applied.out + applied.err
    for line in expected:
        assert line in applied.out
    for output in (without.out, plan.out, applied.out):
        assert "damage" not in _not_damaged(output.replace(str(damaged), "").replace(str(healthy), ""))
    _logs_identical(healthy, damaged)
    assert run_seglog("diff", "--leader", str(healthy), str(healthy), str(damaged)).exit_code == 0


@pytest.mark.parametrize("tail", [False, True])
def test_apply_run_again_has_nothing_to_do(corpus, tmp_path, tail):
    """repair --apply run again on the replica it repaired: nothing to repair, exit 0, not a byte
    changed, no backup made."""
    replicas = _copy(corpus, "in-sync", (1, 2), tmp_path)
    healthy, damaged = replicas[1], replicas[2]
    log = damaged / "00000000000000002221.log"
    data = bytearray(log.read_bytes())
    data[500_000] ^= 0x10
    log.write_bytes(bytes(data))
    if tail:
        for path in damaged.glob("00000000000000004434.*"):
            path.unlink()
    extra = ["--tail"] if tail else []
    first = run_seglog("repair", "--from", str(healthy), str(damaged), "--apply", "--backup-dir",
                       str(tmp_path / "b1"), *extra)
    assert first.exit_code == 0, first.out + first.err
    repaired = _tree(damaged)
    again = run_seglog("repair", "--from", str(healthy), str(damaged), "--apply", "--backup-dir",
                       str(tmp_path / "b2"), *extra)
    assert again.exit_code == 0, again.out + again.err
    assert again.out.splitlines()[-1] == f"{damaged}: nothing to repair from {healthy}"
    assert _tree(damaged) == repaired and not (tmp_path / "b2").exists()
