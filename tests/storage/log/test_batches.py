"""The shallow scan: Kafka's stop rules, findings for every tail shape, and resync past damage.

Good data is built with seglog's builder, damaged at a chosen position, and the scan's batches
and findings are checked exactly (STYLE: corrupt-then-recover tests).
"""

from __future__ import annotations

import struct

import pytest

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_legacy_entry
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.findings import Code, Severity


def _batches(count=5, base=0, records=3):
    out = []
    offset = base
    for i in range(count):
        recs = [NewRecord(b"k%d" % j, b"value-%d-%d" % (i, j) * 5, timestamp=1_700_000_000_000 + j)
                for j in range(records)]
        out.append(build_batch(recs, base_offset=offset, partition_leader_epoch=0))
        offset += records
    return out


def _scan(tmp_path, data: bytes, **options):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    mapped = MappedFile(path)
    scan = LogScan(mapped, **options)
    batches = list(scan)
    return scan, batches


def test_clean_file_has_no_findings(tmp_path):
    parts = _batches()
    scan, batches = _scan(tmp_path, b"".join(parts))
    assert [b.position for b in batches] == [sum(map(len, parts[:i])) for i in range(5)]
    assert all(b.is_valid for b in batches)
    assert [b.base_offset for b in batches] == [0, 3, 6, 9, 12]
    assert scan.findings == [] and scan.kafka_error is None
    assert scan.valid_bytes == sum(map(len, parts))


def test_empty_file(tmp_path):
    scan, batches = _scan(tmp_path, b"")
    assert batches == [] and scan.findings == []


@pytest.mark.parametrize("cut", [8, 10, 17])
def test_partial_header_is_a_torn_tail(tmp_path, cut):
    parts = _batches()
    data = b"".join(parts) + parts[4][:cut]  # base offset 12: byte 7 is not zero
    scan, batches = _scan(tmp_path, data)
    assert len(batches) == 5
    (finding,) = scan.findings
    assert (finding.code, finding.severity, finding.position, finding.length) == (
        Code.TORN_TAIL, Severity.WARNING, len(data) - cut, cut)
    assert scan.kafka_error is None  # Kafka's iterator stops silently here


def test_batch_running_past_eof_is_a_torn_tail(tmp_path):
    parts = _batches()
    whole = b"".join(parts[:4])
    data = whole + parts[4][:-10]
    scan, batches = _scan(tmp_path, data)
    assert len(batches) == 4
    (finding,) = scan.findings
    assert finding.code == Code.TORN_TAIL and finding.position == len(whole)
    assert finding.offset == 12  # the offset the torn batch would have started at


def test_partial_header_of_zeros_reads_as_zero_fill(tmp_path):
    # The first bytes of a small base offset are zeros: indistinguishable from preallocation.
    scan, _ = _scan(tmp_path, b"".join(_batches()) + bytes(5))
    assert [f.code for f in scan.findings] == [Code.ZERO_FILLED_TAIL]


def test_zero_filled_tail(tmp_path):
    parts = _batches()
    data = b"".join(parts) + bytes(4096)
    scan, batches = _scan(tmp_path, data)
    assert len(batches) == 5
    (finding,) = scan.findings
    assert (finding.code, finding.position, finding.length) == (Code.ZERO_FILLED_TAIL, len(data) - 4096, 4096)
    # Kafka's iterator throws on the size-0 header: the exact message is kept for dump.
    assert "Found record size 0 smaller than minimum record overhead (14)" in scan.kafka_error.message


def test_short_zero_tail_is_zero_filled_without_kafka_error(tmp_path):
    data = b"".join(_batches()) + bytes(12)
    scan, _ = _scan(tmp_path, data)
    assert [f.code for f in scan.findings] == [Code.ZERO_FILLED_TAIL]
    assert scan.kafka_error is None  # 17 or fewer bytes: Kafka stops without reading a size


def test_trailing_garbage_with_small_size_field(tmp_path):
    data = b"".join(_batches()) + b"\x9d\x79\xb1\xa3\x7f\x31\x80\x1c\xd1\x1a\x67\x06" + b"\xfb" * 88
    scan, batches = _scan(tmp_path, data)
    assert len(batches) == 5
    (finding,) = scan.findings
    assert finding.code == Code.TRAILING_GARBAGE and finding.severity == Severity.ERROR
    assert scan.kafka_error is not None


def test_mid_file_damage_resyncs_to_next_valid_batch(tmp_path):
    parts = _batches(count=6)
    damaged = bytearray(b"".join(parts))
    start = len(parts[0]) + len(parts[1])
    damaged[start + 8:start + 12] = struct.pack(">i", 3)  # batch 2's size field -> 3
    scan, batches = _scan(tmp_path, bytes(damaged))
    assert [b.base_offset for b in batches] == [0, 3, 9, 12, 15]
    (finding,) = scan.findings
    assert finding.code == Code.CORRUPT_REGION
    assert finding.position == start and finding.length == len(parts[2])
    assert scan.resynced


def test_no_resync_stops_where_kafka_stops(tmp_path):
    parts = _batches(count=6)
    damaged = bytearray(b"".join(parts))
    start = len(parts[0])
    damaged[start + 8:start + 12] = struct.pack(">i", 0)
    scan, batches = _scan(tmp_path, bytes(damaged), resync=False)
    assert [b.base_offset for b in batches] == [0]
    assert scan.findings[0].code == Code.TRAILING_GARBAGE
    assert scan.kafka_error.position == start


def test_crc_mismatch_is_on_the_batch_and_the_walk_goes_on(tmp_path):
    parts = _batches()
    damaged = bytearray(b"".join(parts))
    damaged[len(parts[0]) + 70] ^= 0xFF  # a byte inside batch 1's records
    scan, batches = _scan(tmp_path, bytes(damaged))
    assert [b.is_valid for b in batches] == [True, False, True, True, True]
    assert batches[1].crc != batches[1].computed_crc
    assert scan.findings == []


def test_bounded_scan_stops_silently_at_the_limit(tmp_path):
    parts = _batches()
    limit = len(parts[0]) + len(parts[1]) + 20
    scan, batches = _scan(tmp_path, b"".join(parts), end=limit, bounded=True)
    assert len(batches) == 2 and scan.findings == []


def test_legacy_entries_and_v2_in_one_file(tmp_path):
    data = (build_legacy_entry(0, b"k", b"v", magic=0) + build_legacy_entry(1, b"k", b"v", magic=1, timestamp=5)
            + build_batch([NewRecord(b"k", b"v", timestamp=9)], base_offset=2))
    scan, batches = _scan(tmp_path, data)
    assert [(b.magic, b.last_offset, b.is_valid) for b in batches] == [(0, 0, True), (1, 1, True), (2, 2, True)]
    assert [b.timestamp_type_name for b in batches] == ["NoTimestampType", "CreateTime", "CreateTime"]
    assert batches[0].max_timestamp == -1 and batches[1].max_timestamp == 5


def test_v2_batch_smaller_than_61_bytes_is_invalid_not_fatal(tmp_path):
    parts = _batches(count=2)
    small = bytearray(parts[0][:40])
    small[8:12] = struct.pack(">i", 28)  # a 40-byte "v2 batch"
    data = bytes(small) + parts[1]
    scan, batches = _scan(tmp_path, data)
    assert [b.size for b in batches] == [40, len(parts[1])]
    assert batches[0].is_valid is False and batches[1].is_valid
