"""Producer state snapshot (``<offset>.snapshot``), schema version 1, spec §12.

Big-endian, non-flexible ``ProducerSnapshot`` message::

    offset width field        notes
    ------ ----- ------------ ---------------------------------------------------------------
         0     2 version      int16, must be 1
         2     4 crc          uint32, CRC-32C of bytes [6, end of file) (trailing bytes included)
         6     4 entry_count  int32, array length
        10  46*N entries

Producer entry, 46 bytes::

    offset width field                     notes
    ------ ----- ------------------------- ------------------------------------------------
         0     8 producer_id               int64
         8     2 epoch                     int16
        10     4 last_sequence             int32, -1 if no batch
        14     8 last_offset               int64, -1 if no batch
        22     4 offset_delta              int32, last_offset - first_offset of the last batch
        26     8 timestamp                 int64, the producer's last timestamp
        34     4 coordinator_epoch         int32, -1 if none
        38     8 current_txn_first_offset  int64, -1 if no open transaction
"""

from __future__ import annotations

from construct import Array, GreedyBytes, Int16sb, Int32sb, Int32ub, Int64sb, Rebuild, Struct, len_, this

from seglog_cli.formats import layout

SNAPSHOT_VERSION = 1
CRC_OFFSET = 2
CRC_COVERED_START = 6

ProducerEntry = Struct(
    "producer_id" / Int64sb,
    "epoch" / Int16sb,
    "last_sequence" / Int32sb,
    "last_offset" / Int64sb,
    "offset_delta" / Int32sb,
    "timestamp" / Int64sb,
    "coordinator_epoch" / Int32sb,
    "current_txn_first_offset" / Int64sb,
)

PRODUCER_ENTRY_SIZE = ProducerEntry.sizeof()  # 46

ProducerSnapshotHeader = Struct(
    "version" / Int16sb,
    "crc" / Int32ub,
    "entry_count" / Int32sb,
)

SNAPSHOT_HEADER_SIZE = ProducerSnapshotHeader.sizeof()  # 10
assert (SNAPSHOT_VERSION, CRC_COVERED_START, SNAPSHOT_HEADER_SIZE, PRODUCER_ENTRY_SIZE) == (
    layout.SNAPSHOT_VERSION, layout.SNAPSHOT_CRC_COVERED_START, layout.SNAPSHOT_HEADER_SIZE, layout.PRODUCER_ENTRY_SIZE)

ProducerSnapshot = Struct(
    "version" / Int16sb,
    "crc" / Int32ub,
    "entry_count" / Rebuild(Int32sb, len_(this.entries)),
    "entries" / Array(this.entry_count, ProducerEntry),
    "trailing" / GreedyBytes,  # covered by the CRC; Kafka's reader rejects nothing else about it
)
