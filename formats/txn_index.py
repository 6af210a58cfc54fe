"""Transaction index (``.txnindex``) entries, spec §11.

A bare array of 34-byte big-endian ``AbortedTxn`` entries, appended with plain writes (never
preallocated). A trailing partial entry is ignored by Kafka's reader.

    offset width field               notes
    ------ ----- ------------------- ---------------------------------------------------------
         0     2 version             int16, 0; Kafka checks only the FIRST byte (> 0 = error)
         2     8 producer_id         int64
        10     8 first_offset        int64, first data offset of the aborted transaction
        18     8 last_offset         int64, offset of the ABORT marker
        26     8 last_stable_offset  int64, the LSO when the abort was written
"""

from __future__ import annotations

from construct import GreedyRange, Int16sb, Int64sb, Struct

from seglog_cli.formats import layout

AbortedTxnEntry = Struct(
    "version" / Int16sb,
    "producer_id" / Int64sb,
    "first_offset" / Int64sb,
    "last_offset" / Int64sb,
    "last_stable_offset" / Int64sb,
)

ABORTED_TXN_ENTRY_SIZE = AbortedTxnEntry.sizeof()  # 34
assert ABORTED_TXN_ENTRY_SIZE == layout.ABORTED_TXN_ENTRY_SIZE

TransactionIndexFile = GreedyRange(AbortedTxnEntry)
