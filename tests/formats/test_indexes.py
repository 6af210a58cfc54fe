"""Index entries (spec §8, §9, §11) and the producer snapshot (§12), on vectors E and F (§21)."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c

from seglog_cli.formats import indexes, producer_snapshot, txn_index
from seglog_cli.formats.indexes import OffsetIndexEntry, OffsetIndexFile, TimeIndexEntry, TimeIndexFile
from seglog_cli.formats.producer_snapshot import ProducerEntry, ProducerSnapshot, ProducerSnapshotHeader
from seglog_cli.formats.txn_index import AbortedTxnEntry, TransactionIndexFile

BASE_OFFSET = 400  # the segment of vector F

# §21 F: .index entry for offset 412 at position 4170, segment base 400
OFFSET_ENTRY = bytes.fromhex(
    "0000000c"          # relative_offset 12 (= 412 - 400)
    "0000104a"          # position 4170
)

# §21 F: .timeindex entry (1700000001234, offset 412), segment base 400
TIME_ENTRY = bytes.fromhex(
    "0000018bcfe56cd2"  # timestamp 1700000001234
    "0000000c"          # relative_offset 12
)

# an aborted transaction of producer 4000: data from offset 100, ABORT marker at 120
ABORTED_TXN = bytes.fromhex(
    "0000"              # version 0 (int16; Kafka checks only the first byte)
    "0000000000000fa0"  # producer_id 4000
    "0000000000000064"  # first_offset 100
    "0000000000000078"  # last_offset 120 (the ABORT marker)
    "0000000000000079"  # last_stable_offset 121 (= last_offset + 1: no other open transaction)
)

# §21 E: 00000000000000000012.snapshot with one producer (56 bytes)
SNAPSHOT = bytes.fromhex(
    "0001"              # version 1
    "565fd459"          # crc: CRC-32C of bytes [6, 56)
    "00000001"          # entry_count 1
    # -- entry 0 (46 bytes) --
    "0000000000000fa0"  # producer_id 4000
    "0000"              # epoch 0
    "00000009"          # last_sequence 9
    "000000000000000b"  # last_offset 11
    "00000009"          # offset_delta 9 (the last batch held offsets 2-11)
    "0000018bcfe56832"  # timestamp 1700000000050
    "00000003"          # coordinator_epoch 3
    "ffffffffffffffff"  # current_txn_first_offset -1: no open transaction
)


# -- .index / .timeindex ----------------------------------------------------------------------

def test_entry_sizes():
    assert OffsetIndexEntry.sizeof() == indexes.OFFSET_INDEX_ENTRY_SIZE == 8
    assert TimeIndexEntry.sizeof() == indexes.TIME_INDEX_ENTRY_SIZE == 12


def test_offset_index_entry():
    entry = OffsetIndexEntry.parse(OFFSET_ENTRY)
    assert (entry.relative_offset, entry.position) == (12, 4170)
    assert BASE_OFFSET + entry.relative_offset == 412
    assert OffsetIndexEntry.build(dict(relative_offset=412 - BASE_OFFSET, position=4170)) == OFFSET_ENTRY


def test_time_index_entry():
    entry = TimeIndexEntry.parse(TIME_ENTRY)
    assert (entry.timestamp, entry.relative_offset) == (1700000001234, 12)
    assert TimeIndexEntry.build(dict(timestamp=1700000001234, relative_offset=12)) == TIME_ENTRY


@pytest.mark.parametrize("schema, entry, size", [
    (OffsetIndexFile, OFFSET_ENTRY, 8),
    (TimeIndexFile, TIME_ENTRY, 12),
], ids=["index", "timeindex"])
def test_preallocated_file(schema, entry, size):
    """A preallocated file: real entries, then zero slots that decode as relative offset 0;
    a trailing partial entry is not an entry (Kafka counts ``length // entry_size``)."""
    data = entry + entry + bytes(3 * size) + bytes(size - 1)
    entries = schema.parse(data)
    assert len(entries) == len(data) // size == 5
    assert [e.relative_offset for e in entries] == [12, 12, 0, 0, 0]
    assert schema.build(entries) == data[: 5 * size]


def test_negative_values_are_signed():
    entry = OffsetIndexEntry.parse(bytes.fromhex("ffffffff" "80000000"))
    assert (entry.relative_offset, entry.position) == (-1, -(2**31))


# -- .txnindex --------------------------------------------------------------------------------

def test_aborted_txn_entry():
    assert AbortedTxnEntry.sizeof() == txn_index.ABORTED_TXN_ENTRY_SIZE == 34
    entry = AbortedTxnEntry.parse(ABORTED_TXN)
    assert (entry.version, entry.producer_id) == (0, 4000)
    assert (entry.first_offset, entry.last_offset, entry.last_stable_offset) == (100, 120, 121)
    assert AbortedTxnEntry.build(entry) == ABORTED_TXN


@pytest.mark.parametrize("version_bytes, schema_version, kafka_version, kafka_accepts", [
    ("0000", 0, 0, True),
    ("0001", 1, 0, True),       # the schema sees version 1; Kafka reads byte 0 only: version 0
    ("00ff", 255, 0, True),
    ("0100", 256, 1, False),    # "Unexpected aborted transaction version 1 ..."
    ("ff00", -256, -1, True),   # a negative first byte passes Kafka's "> 0" check
])
def test_txn_version_first_byte_quirk(version_bytes, schema_version, kafka_version, kafka_accepts):
    """Kafka writes the version as int16 but ``AbortedTxn.version()`` is ``buffer.get(0)``: the
    schema keeps the int16, whose high byte (``version >> 8``) is what Kafka checks."""
    data = bytes.fromhex(version_bytes) + ABORTED_TXN[2:]
    entry = AbortedTxnEntry.parse(data)
    assert entry.version == schema_version
    assert entry.version >> 8 == kafka_version == struct.unpack_from(">b", data, 0)[0]
    assert (kafka_version <= 0) is kafka_accepts
    assert AbortedTxnEntry.build(entry) == data


def test_txn_index_file_ignores_a_partial_entry():
    second = ABORTED_TXN[:2] + (5000).to_bytes(8, "big") + ABORTED_TXN[10:]
    entries = TransactionIndexFile.parse(ABORTED_TXN + second + ABORTED_TXN[:20])
    assert [e.producer_id for e in entries] == [4000, 5000]


# -- producer snapshot ------------------------------------------------------------------------

def test_snapshot_layout_constants():
    assert ProducerEntry.sizeof() == producer_snapshot.PRODUCER_ENTRY_SIZE == 46
    assert ProducerSnapshotHeader.sizeof() == producer_snapshot.SNAPSHOT_HEADER_SIZE == 10
    assert (producer_snapshot.CRC_OFFSET, producer_snapshot.CRC_COVERED_START) == (2, 6)
    assert producer_snapshot.SNAPSHOT_VERSION == 1


def test_snapshot_vector_e():
    assert SNAPSHOT.hex() == ("0001565fd459000000010000000000000fa00000000000090000000000000"
                              "00b000000090000018bcfe5683200000003ffffffffffffffff")  # §21 E
    snapshot = ProducerSnapshot.parse(SNAPSHOT)
    assert len(SNAPSHOT) == 56 == 10 + 46 * snapshot.entry_count
    assert (snapshot.version, snapshot.entry_count, snapshot.trailing) == (1, 1, b"")
    assert snapshot.crc == 0x565FD459 == crc32c(SNAPSHOT[producer_snapshot.CRC_COVERED_START:])
    (entry,) = snapshot.entries
    assert {k: v for k, v in entry.items() if not k.startswith("_")} == {
        "producer_id": 4000, "epoch": 0, "last_sequence": 9, "last_offset": 11,
        "offset_delta": 9, "timestamp": 1700000000050, "coordinator_epoch": 3,
        "current_txn_first_offset": -1,
    }
    assert ProducerSnapshot.build(snapshot) == SNAPSHOT


# Offsets inside a 46-byte entry. (Spec §12.2's table puts timestamp at 30, coordinatorEpoch at 38
# and currentTxnFirstOffset at 42, which would make a 50-byte entry; 26/34/38 are right.)
ENTRY_FIELDS = [(0, ">q", "producer_id"), (8, ">h", "epoch"), (10, ">i", "last_sequence"),
                (14, ">q", "last_offset"), (22, ">i", "offset_delta"), (26, ">q", "timestamp"),
                (34, ">i", "coordinator_epoch"), (38, ">q", "current_txn_first_offset")]


@pytest.mark.parametrize("offset, fmt, field", ENTRY_FIELDS, ids=[f[2] for f in ENTRY_FIELDS])
def test_snapshot_entry_field_offsets(offset, fmt, field):
    entry = ProducerSnapshot.parse(SNAPSHOT).entries[0]
    position = producer_snapshot.SNAPSHOT_HEADER_SIZE + offset
    assert struct.unpack_from(fmt, SNAPSHOT, position)[0] == entry[field]


def test_snapshot_entry_count_is_rebuilt():
    snapshot = ProducerSnapshot.parse(SNAPSHOT)
    entries = list(snapshot.entries) * 3
    data = ProducerSnapshot.build(dict(version=1, crc=0, entries=entries, trailing=b""))
    assert struct.unpack_from(">i", data, 6)[0] == 3
    assert len(data) == 10 + 3 * 46


def test_snapshot_trailing_bytes_are_covered_by_the_crc():
    """Bytes after the last entry are parsed as ``trailing`` and are inside the CRC's range, so a
    file with a stale tail no longer matches its stored CRC."""
    data = SNAPSHOT + b"\x00\x01"
    snapshot = ProducerSnapshot.parse(data)
    assert snapshot.trailing == b"\x00\x01"
    assert crc32c(data[producer_snapshot.CRC_COVERED_START:]) != snapshot.crc
    assert ProducerSnapshot.build(snapshot) == data
