"""``seglog diff`` on the replicas corpus: every case's findings against its case.json, the
truncation offset against the broker's own log line, the lost records exported."""

from __future__ import annotations

import base64
import json
import re
import shutil

import pytest

from tests.conftest import run_seglog

REPLICAS = "kafka-4.2.0/replicas"
CASES = ["in-sync", "unclean-election", "unclean-election-after", "lagging-follower", "transactional"]
EXPECTED_EXIT = {"in-sync": 0, "unclean-election": 3, "unclean-election-after": 0, "lagging-follower": 1,
                 "transactional": 0}


def _case(corpus, name):
    root = corpus / REPLICAS / name
    if not root.is_dir():
        pytest.skip(f"{root} not in the corpus")
    return root, json.loads((root / "case.json").read_text())


def _dirs(root):
    return [str(root / f"broker-{n}" / "events-0") for n in (1, 2, 3)]


def _diff_json(*args):
    result = run_seglog("diff", "--format", "json", *args)
    assert result.exit_code in (0, 1, 3), result.err
    return result.exit_code, json.loads(result.out)


@pytest.mark.parametrize("name", CASES)
def test_each_pair_as_case_json_says(corpus, name):
    """With each broker as --leader, the other two compare as case.json's `comparison` says."""
    root, case = _case(corpus, name)
    for pair, expected in case["comparison"].items():
        a, b = re.match(r"broker-(\d) vs broker-(\d)", pair).groups()
        for leader, other in ((a, b), (b, a)):
            leader_dir = str(root / f"broker-{leader}" / "events-0")
            other_dir = str(root / f"broker-{other}" / "events-0")
            _status, document = _diff_json("--leader", leader_dir, leader_dir, other_dir)
            (partition,) = document["partitions"]
            assert partition["reference"]["path"] == leader_dir
            (replica,) = partition["replicas"]
            if expected["identical_batches"]:
                assert replica["divergence"] is None and replica["status"] == "in-sync", replica
                assert replica["commonPrefix"]["lastOffset"] == expected["log_end_offset"] - 1
                continue
            agreed = expected["identical_up_to_offset"]
            assert replica["commonPrefix"]["lastOffset"] == agreed - 1
            mine = expected["a_next_batch"] if other == a else expected["b_next_batch"]
            theirs = expected["b_next_batch"] if other == a else expected["a_next_batch"]
            if mine is None:  # the replica ends there: a prefix of the reference
                assert replica["status"] == "lagging" and replica["divergence"] is None
                assert replica["logEndOffset"] == agreed
                continue
            divergence = replica["divergence"]
            assert divergence["offset"] == agreed
            got = divergence["batch"]
            assert [got["baseOffset"], got["lastOffset"], got["partitionLeaderEpoch"], got["crc"]] == mine
            if theirs is None:
                assert divergence["cause"] == "longer-than-reference"
            else:
                ref = divergence["referenceBatch"]
                assert [ref["baseOffset"], ref["lastOffset"], ref["partitionLeaderEpoch"], ref["crc"]] == theirs
                assert divergence["cause"] == "leader-epoch"


@pytest.mark.parametrize("name", CASES)
def test_exit_status_per_case(corpus, name):
    root, _case_json = _case(corpus, name)
    result = run_seglog("diff", *_dirs(root))
    assert result.exit_code == EXPECTED_EXIT[name], result.out + result.err


def test_unclean_election_truncation_is_the_brokers(corpus, tmp_path):
    root, case = _case(corpus, "unclean-election")
    _after, _ = _case(corpus, "unclean-election-after")
    line = next(l for l in (_after / "broker-events-0-lines.txt").read_text().splitlines()
                if "replicaId=1" in l and "due to leader epoch and offset" in l)
    offset, epoch, end = map(int, re.search(
        r"TruncationState\(offset=(\d+),.*leaderEpoch=(\d+), endOffset=(\d+)\)", line).groups())
    lost_file = tmp_path / "lost.jsonl"
    status, document = _diff_json("--export-lost", str(lost_file), *_dirs(root))
    assert status == 3
    (partition,) = document["partitions"]
    by_path = {r["path"]: r for r in partition["replicas"]}
    broker1 = by_path[_dirs(root)[0]]
    assert broker1["status"] == "divergent"
    assert broker1["truncation"]["offset"] == offset == case["divergence"]["truncation_by_kafka"]["truncated_to_offset"]
    last_step = broker1["truncation"]["steps"][-1]
    assert (last_step["leaderEpoch"], last_step["leaderEndOffset"]) == (epoch, end)
    tail = case["divergence"]["broker_1_divergent_tail"]
    lost = broker1["lost"]
    assert (lost["firstOffset"], lost["lastOffset"], lost["records"]) == (tail["first_offset"], tail["last_offset"],
                                                                         tail["records"])
    assert lost["leaderEpochs"] == [tail["leader_epoch"]]
    assert broker1["discardedRecords"] == tail["records"]
    (producer,) = lost["producers"]
    assert producer["records"] == tail["records"]
    # the export: one dump-style record line per lost record, the P4 phase's own values
    lines = [json.loads(l) for l in lost_file.read_text().splitlines()]
    assert len(lines) == tail["records"]
    assert [l["offset"] for l in lines] == list(range(tail["first_offset"], tail["last_offset"] + 1))
    assert all(l["type"] == "record" and l["encoding"] == "base64" and b"|P4|" in base64.b64decode(l["value"])
               for l in lines)  # lossless by default
    # the same lines dump writes for those records
    dump = run_seglog("dump", "--deep-iteration", "--format", "jsonl", "--payload-encoding", "base64",
                      str(root / "broker-1" / "events-0" / "00000000000000004293.log"))
    dumped = {l["offset"]: l for l in map(json.loads, dump.stdout.decode().splitlines()) if l["type"] == "record"}
    assert all(dumped[l["offset"]] == l for l in lines if l["offset"] in dumped) and len(dumped) > 100
    # brokers 2 and 3 agree, nothing lost; broker 3's index with an entry fewer is info only
    broker3 = by_path[_dirs(root)[2]]
    assert broker3["status"] == "in-sync" and broker3["lost"] is None


def test_export_lost_is_lossless_by_default(corpus, tmp_path):
    """The lost records come back, through the engine's JSON Lines reader, as the bytes broker 1
    holds: keys, values, headers (the binary 8-byte ``bin`` header of every 7th record) and
    timestamps; a utf8 export says where it is lossy, and the exact reader refuses it."""
    from seglog_cli import api
    from seglog_cli.storage.serde.jsonl_records import JsonLinesError, read_json_records

    root, _ = _case(corpus, "unclean-election")
    lost_file = tmp_path / "lost.jsonl"
    status, _document = _diff_json("--export-lost", str(lost_file), *_dirs(root))
    assert status == 3
    assert {json.loads(line)["encoding"] for line in lost_file.read_text().splitlines()} == {"base64"}
    read = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in read_json_records(lost_file, exact=True)]
    log = api.open_partition(root / "broker-1" / "events-0")
    try:
        stored = [(r.offset, r.timestamp, r.key, r.value, tuple((bytes(k), v) for k, v in r.headers))
                  for r in api.records(log, 3900)]
    finally:
        log.close()
    assert read == stored and len(read) == 900
    binary = [value for *_, headers in read for key, value in headers if key == b"bin"]
    assert len(binary) > 100 and all(len(value) == 8 for value in binary)
    assert any(byte >= 0x80 for value in binary for byte in value)  # bytes that are not ASCII

    as_text = tmp_path / "lost-utf8.jsonl"
    status, _document = _diff_json("--export-lost", str(as_text), "--payload-encoding", "utf8", *_dirs(root))
    assert status == 3
    objects = [json.loads(line) for line in as_text.read_bytes().split(b"\n") if line]  # U+2028 stays in its string
    assert {o["encoding"] for o in objects} == {"utf8"} and any(o.get("lossy") for o in objects)
    assert all(any(h["key"] == "bin" for h in o["headers"]) for o in objects if o.get("lossy"))  # values are ASCII
    with pytest.raises(JsonLinesError, match="lossy.*--payload-encoding base64"):
        list(read_json_records(as_text, exact=True))


def test_new_leader_as_reference_explicitly(corpus):
    root, _ = _case(corpus, "unclean-election")
    dirs = _dirs(root)
    _status, document = _diff_json("--leader", dirs[2], *dirs)
    by_path = {r["path"]: r for r in document["partitions"][0]["replicas"]}
    assert by_path[dirs[0]]["truncation"]["offset"] == 3900 and by_path[dirs[1]]["status"] == "in-sync"


def test_old_leader_shorter_than_the_new_one(corpus, tmp_path):
    """broker 1's divergent tail cut to end before the new leader's log end (4600): still truncated
    to 3900 by the epoch rule, every record it holds past 3900 lost."""
    from seglog_cli.storage.log.partition_log import PartitionLog

    root, _ = _case(corpus, "unclean-election")
    copy = tmp_path / "broker-1"
    shutil.copytree(root / "broker-1", copy)
    partition = copy / "events-0"
    for leftover in partition.glob("00000000000000004293.*"):
        leftover.unlink()
    # end broker 1's log at the first batch boundary past 4150
    log = PartitionLog(partition)
    end_offset = next(b.base_offset for s in log.segments for b in s.batches() if b.base_offset > 4150)
    log.close()
    segment = partition / "00000000000000002133.log"
    from seglog_cli.storage.log.segments import LogSegment
    position = next(b.position for b in LogSegment(segment).batches() if b.base_offset == end_offset)
    with open(segment, "r+b") as handle:
        handle.truncate(position)
    for index in ("00000000000000002133.index", "00000000000000002133.timeindex"):
        (partition / index).unlink()
    dirs = [str(partition), str(root / "broker-2" / "events-0")]
    status, document = _diff_json("--export-lost", str(tmp_path / "lost.jsonl"), *dirs)
    assert status == 3
    (replica_doc,) = document["partitions"][0]["replicas"]
    assert replica_doc["logEndOffset"] == end_offset < 4600
    assert replica_doc["truncation"]["offset"] == 3900
    assert replica_doc["lost"]["records"] == end_offset - 3900
    assert len((tmp_path / "lost.jsonl").read_text().splitlines()) == end_offset - 3900


def test_log_dirs_matched_by_name_and_topic_id(corpus, tmp_path):
    root, _ = _case(corpus, "in-sync")
    result = run_seglog("diff", "--jobs", "2", str(root / "broker-1"), str(root / "broker-2"), str(root / "broker-3"))
    assert result.exit_code == 0, result.out + result.err
    # the same name with another topic id is not a replica
    other = tmp_path / "broker-x"
    shutil.copytree(root / "broker-2", other)
    metadata = other / "events-0" / "partition.metadata"
    metadata.write_text(metadata.read_text().replace(metadata.read_text().split("topic_id: ")[1].strip(),
                                                     "pfgLTFd6SOqH92SzO6EU5g"))
    status, document = _diff_json(str(root / "broker-1"), str(other))
    assert status == 3
    assert document["partitions"][0]["replicas"][0]["status"] == "not-a-replica"


def test_flipped_bit_is_damage_on_the_named_side(corpus, tmp_path):
    root, _ = _case(corpus, "in-sync")
    copy = tmp_path / "broker-2"
    shutil.copytree(root / "broker-2", copy)
    log = copy / "events-0" / "00000000000000002221.log"
    data = bytearray(log.read_bytes())
    data[500_000] ^= 0x10
    log.write_bytes(bytes(data))
    status, document = _diff_json(str(root / "broker-1" / "events-0"), str(copy / "events-0"))
    assert status == 3
    (replica,) = document["partitions"][0]["replicas"]
    assert replica["status"] == "damaged" and replica["divergence"] is None
    (bad,) = replica["corruption"]
    assert bad["crcFailsOn"] == ["replica"] and bad["firstOffset"] <= bad["lastOffset"]


def test_formats_and_bad_input(corpus, tmp_path):
    root, _ = _case(corpus, "lagging-follower")
    dirs = _dirs(root)
    jsonl = run_seglog("diff", "--format", "jsonl", *dirs)
    objects = [json.loads(l) for l in jsonl.out.splitlines()]
    assert [o["type"] for o in objects] == ["reference", "replica", "replica", "summary"]
    assert objects[-1]["exitStatus"] == jsonl.exit_code == 1
    text = run_seglog("diff", "--format", "text", *dirs)
    assert "lagging, offsets 0-1499" in text.out
    table = run_seglog("diff", *dirs)
    assert table.out.splitlines()[0].split()[:3] == ["PARTITION", "REPLICA", "STATUS"]
    missing = run_seglog("diff", dirs[0], str(tmp_path / "nowhere"))
    assert missing.exit_code == 4 and len(missing.err.strip().splitlines()) == 1
    one = run_seglog("diff", dirs[0])
    assert one.exit_code == 2


def test_a_lost_middle_segment_is_a_hole_not_a_divergence(corpus, tmp_path):
    root, _ = _case(corpus, "lagging-follower")
    copy = tmp_path / "broker-2"
    shutil.copytree(root / "broker-2", copy)
    for path in (copy / "events-0").glob("00000000000000002129.*"):
        path.unlink()
    status, document = _diff_json("--leader", str(root / "broker-1" / "events-0"), str(root / "broker-1" / "events-0"),
                                  str(copy / "events-0"))
    assert status == 3
    (replica,) = document["partitions"][0]["replicas"]
    assert replica["divergence"] is None and replica["status"] == "damaged"
    (hole,) = replica["holes"]
    assert (hole["missingOn"], hole["firstOffset"], hole["lastOffset"]) == ("replica", 2129, 4249)


@pytest.mark.parametrize("index,keep", [("00000000000000000000.index", 12), ("00000000000000000000.index", 13),
                                        ("00000000000000002221.timeindex", 30)])
def test_an_index_cut_inside_an_entry_is_read_to_its_last_whole_entry(corpus, tmp_path, index, keep):
    """A partial last entry is no entry (Kafka counts length // entry size): an index with fewer
    entries than the other replica's is info, not an internal error (the hostile-input sweep's
    truncate:index)."""
    root, _ = _case(corpus, "in-sync")
    copy = tmp_path / "broker-2"
    shutil.copytree(root / "broker-2", copy)
    with open(copy / "events-0" / index, "r+b") as handle:
        handle.truncate(keep)
    result = run_seglog("diff", "--format", "json", str(root / "broker-1" / "events-0"), str(copy / "events-0"))
    assert result.exit_code == 0, result.err
    (replica,) = json.loads(result.out)["partitions"][0]["replicas"]
    assert replica["status"] == "in-sync", replica
