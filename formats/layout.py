"""The numbers of Kafka's on-disk formats that the engine's ``struct`` readers need: sizes, byte
positions, type ids. Plain integers, no construct.

The engine reads with precompiled ``struct`` layouts and needs these numbers, not the schemas;
keeping them apart lets a command that never parses a schema (``dump`` of a data segment,
``verify``) start without importing construct. Each schema module derives the same numbers from
its byte layout and checks them against these (and its schemas' ``sizeof()``) when imported.
"""

from __future__ import annotations

# record batch, magic v2 (record_batch.py)
LOG_OVERHEAD = 12  # base_offset int64 + length int32 (legacy: offset + message_size): not counted by length
MAGIC_OFFSET = 16  # of the batch or log entry: the same byte in every format
RECORD_BATCH_OVERHEAD = 61  # the v2 batch header
COMPRESSION_CODEC_MASK = 0x07  # attributes bits 0-2, v0/v1 and v2 alike

# legacy message, magic v0/v1 (legacy.py): crc 4, magic 1, attributes 1, [timestamp 8,] key size 4, value size 4
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22

# indexes (indexes.py, txn_index.py)
OFFSET_INDEX_ENTRY_SIZE = 8  # relative_offset int32, position int32
TIME_INDEX_ENTRY_SIZE = 12  # timestamp int64, relative_offset int32
ABORTED_TXN_ENTRY_SIZE = 34  # version int16, producer_id, first_offset, last_offset, last_stable_offset int64

# producer state snapshot (producer_snapshot.py)
SNAPSHOT_VERSION = 1
SNAPSHOT_CRC_COVERED_START = 6  # after version int16 and crc uint32
SNAPSHOT_HEADER_SIZE = 10  # version int16, crc uint32, entry_count int32
PRODUCER_ENTRY_SIZE = 46

# control records (control.py)
ABORT = 0
COMMIT = 1
LEADER_CHANGE = 2
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
KRAFT_VERSION = 5
KRAFT_VOTERS = 6

CONTROL_TYPES = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}

CONTROL_KEY_SIZE = 4  # version int16, type int16
END_TXN_MARKER_VALUE_SIZE = 6  # version int16, coordinator_epoch int32
