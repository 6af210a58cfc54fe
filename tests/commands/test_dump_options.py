"""``seglog dump`` options beyond kafka-dump-log: directories, globs, ranges, JSON Lines,
resync past damage, exit statuses."""

from __future__ import annotations

import json
import struct
import subprocess
import sys

import pytest

from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker
from seglog_cli.storage.write.writer import SegmentConfig, SegmentWriter
from tests.conftest import run_seglog

T0 = 1_700_000_000_000


@pytest.fixture
def partition(tmp_path):
    """orders-0: 3 segments of 20 two-record batches, timestamps T0 + offset seconds."""
    directory = tmp_path / "orders-0"
    directory.mkdir()
    offset = 0
    for _ in range(3):
        writer = SegmentWriter(directory, offset, SegmentConfig(index_interval_bytes=100))
        for _ in range(20):
            records = [NewRecord(b"key-%d" % (offset + i), b"value-%d" % (offset + i),
                                 headers=[("h", b"x")], timestamp=T0 + 1000 * (offset + i)) for i in range(2)]
            writer.append(build_batch(records, base_offset=offset, partition_leader_epoch=0))
            offset += 2
        writer.close()
    return directory


def _lines(result):
    return result.out.splitlines()


def test_partition_dir_dumps_every_segment_in_offset_order(partition):
    result = run_seglog("dump", str(partition))
    assert result.exit_code == 0, result.err
    dumping = [line for line in _lines(result) if line.startswith("Dumping")]
    assert dumping == [f"Dumping {partition}/{n:020d}.log" for n in (0, 40, 80)]
    assert sum(line.startswith("baseOffset:") for line in _lines(result)) == 60


def test_log_dir_and_types(partition):
    result = run_seglog("dump", "--types", "log,index", str(partition.parent))
    names = [line.split("/")[-1] for line in _lines(result) if line.startswith("Dumping")]
    assert names == [f"{n:020d}.{kind}" for n in (0, 40, 80) for kind in ("log", "index")]


def test_files_option_and_glob_are_equivalent(partition):
    by_files = run_seglog("dump", "--files", f"{partition}/00000000000000000000.log,{partition}/00000000000000000040.log")
    by_glob = run_seglog("dump", f"{partition}/0000000000000000000*.log", f"{partition}/00000000000000000040.log")
    assert by_files.stdout == by_glob.stdout and by_files.exit_code == 0


def test_offset_range_seeks_and_filters_records(partition):
    result = run_seglog("dump", "--deep-iteration", "--from-offset", "45", "--to-offset", "52", str(partition))
    records = [int(line.split()[2]) for line in _lines(result) if line.startswith("| offset:")]
    assert records == list(range(45, 53))
    batches = [line for line in _lines(result) if line.startswith("baseOffset:")]
    assert [b.split()[1] for b in batches] == ["44", "46", "48", "50", "52"]


def test_timestamp_range(partition):
    result = run_seglog("dump", "--deep-iteration", "--from-timestamp", str(T0 + 30_500),
                        "--to-timestamp", "2023-11-14T22:14:10Z", str(partition))  # T0 + 50 s
    records = [int(line.split()[2]) for line in _lines(result) if line.startswith("| offset:")]
    assert records == list(range(31, 51))


def test_jsonl_objects(partition):
    segment = partition / "00000000000000000000.log"
    result = run_seglog("dump", "--deep-iteration", "--format", "jsonl", "--payload-encoding", "hex", str(segment))
    objects = [json.loads(line) for line in _lines(result)]
    assert objects[0] == {"type": "file", "schemaVersion": 1, "path": str(segment), "kind": "log",
                          "topic": "orders", "partition": 0, "baseOffset": 0}
    batch = objects[1]
    assert batch["type"] == "batch" and batch["baseOffset"] == 0 and batch["count"] == 2
    assert batch["compresscodec"] == "none" and batch["isvalid"] is True and batch["deleteHorizonMs"] is None
    record = objects[2]
    assert record == {
        "type": "record", "topic": "orders", "partition": 0, "offset": 0, "timestamp": T0,
        "timestampType": 0, "key": b"key-0".hex(), "value": b"value-0".hex(),
        "headers": [{"key": "h", "value": b"x".hex()}], "encoding": "hex", "keySize": 5, "valueSize": 7, "sequence": -1,
        "baseOffset": 0, "producerId": -1, "producerEpoch": -1, "isTransactional": False,
        "isControl": False, "compression": "none", "segment": segment.name, "position": 0}
    assert sum(o["type"] == "record" for o in objects) == 40


def test_jsonl_control_record(tmp_path):
    directory = tmp_path / "t-0"
    directory.mkdir()
    data = (build_batch([NewRecord(b"k", b"v", timestamp=T0)], producer_id=7, producer_epoch=0,
                        base_sequence=0, transactional=True)
            + build_end_txn_marker(commit=False, base_offset=1, producer_id=7, producer_epoch=0,
                                   coordinator_epoch=3, timestamp=T0 + 1))
    (directory / "00000000000000000000.log").write_bytes(data)
    result = run_seglog("dump", "--deep-iteration", "--format", "jsonl", str(directory / "00000000000000000000.log"))
    control = [json.loads(line) for line in _lines(result)][-1]
    assert (control["isControl"], control["controlType"], control["coordinatorEpoch"]) == (True, "ABORT", 3)
    text = run_seglog("dump", "--deep-iteration", str(directory / "00000000000000000000.log"))
    assert text.out.splitlines()[-1].endswith("endTxnMarker: ABORT coordinatorEpoch: 3")


def test_skip_record_metadata_lines(partition):
    segment = str(partition / "00000000000000000000.log")
    lines = _lines(run_seglog("dump", "--print-data-log", "--skip-record-metadata", segment))
    assert "| key: key-0 payload: value-0" in lines
    empty = _lines(run_seglog("dump", "--deep-iteration", "--skip-record-metadata", segment))
    assert empty.count("") == 40  # kafka-dump-log prints empty record lines here


def test_max_bytes_reads_whole_batches_only(partition):
    segment = partition / "00000000000000000000.log"
    first = len(build_batch([NewRecord(b"key-0", b"value-0", headers=[("h", b"x")], timestamp=T0),
                             NewRecord(b"key-1", b"value-1", headers=[("h", b"x")], timestamp=T0 + 1000)],
                            partition_leader_epoch=0))
    result = run_seglog("dump", "--max-bytes", str(first + 10), str(segment))
    assert sum(line.startswith("baseOffset:") for line in _lines(result)) == 1
    assert not any("invalid bytes" in line for line in _lines(result))


def test_mid_file_damage_is_reported_and_skipped(partition):
    segment = partition / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    size = struct.unpack_from(">i", data, 8)[0] + 12
    data[size + 8:size + 12] = b"\x00\x00\x00\x05"  # second batch: size field 5
    segment.write_bytes(bytes(data))
    result = run_seglog("dump", str(segment))
    assert result.exit_code == 1
    err = result.err.splitlines()
    assert err[0] == ('Exception in thread "main" org.apache.kafka.common.errors.CorruptRecordException: '
                      f"Found record size 5 smaller than minimum record overhead (14) in file {segment}.")
    assert "CORRUPT_REGION" in err[1] and f"position {size}" in err[1]
    batches = [line for line in _lines(result) if line.startswith("baseOffset:")]
    assert len(batches) == 19  # every batch but the damaged one
    no_resync = run_seglog("dump", "--no-resync", str(segment))
    assert sum(line.startswith("baseOffset:") for line in _lines(no_resync)) == 1


def test_exit_statuses(tmp_path, partition):
    assert run_seglog("dump", str(tmp_path / "missing.log")).exit_code == 4
    assert run_seglog("dump", "--types", "nope", str(partition)).exit_code == 2
    assert run_seglog("dump", "--from-timestamp", "yesterday", str(partition)).exit_code == 2
    deleted = partition / "00000000000000000000.log.deleted"
    deleted.write_bytes(b"")
    unknown = run_seglog("dump", str(deleted))
    assert unknown.exit_code == 0  # Kafka's tool ignores unknown suffixes too
    assert unknown.err == f"Ignoring unknown file {deleted}\n"
    assert run_seglog("dump", str(deleted) + ".gone").exit_code == 4  # but a missing path is an error


def test_closed_pipe_is_quiet(tmp_path):
    segment = tmp_path / "00000000000000000000.log"
    batch = [NewRecord(b"k", b"v" * 100, timestamp=T0) for _ in range(10)]
    segment.write_bytes(b"".join(build_batch(batch, base_offset=10 * i) for i in range(3000)))  # ~5 MB of lines
    command = f"{sys.executable} -m seglog_cli dump --print-data-log {segment} | head -1"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("Dumping")
    assert "Traceback" not in done.stderr and "Error" not in done.stderr
