"""Offset index (``.index``) and time index (``.timeindex``) entries, spec §8-§9.

Both files are bare arrays of fixed-size big-endian entries: no header, no checksum, no footer.
A file may be preallocated (zero-filled past its last entry); Kafka counts entries as
``file_length // entry_size`` and a zero slot decodes as relative offset 0.

``.index`` entry, 8 bytes::

    offset width field            notes
    ------ ----- ---------------- -----------------------------------------------------------
         0     4 relative_offset  int32, absolute offset - segment base offset
         4     4 position         int32, byte position of the start of a batch in the .log

``.timeindex`` entry, 12 bytes::

    offset width field            notes
    ------ ----- ---------------- -----------------------------------------------------------
         0     8 timestamp        int64, the largest timestamp up to the batch ending at offset
         8     4 relative_offset  int32, absolute offset - segment base offset
"""

from __future__ import annotations

from construct import GreedyRange, Int32sb, Int64sb, Struct

from seglog_cli.formats import layout

OffsetIndexEntry = Struct(
    "relative_offset" / Int32sb,
    "position" / Int32sb,
)

TimeIndexEntry = Struct(
    "timestamp" / Int64sb,
    "relative_offset" / Int32sb,
)

OFFSET_INDEX_ENTRY_SIZE = OffsetIndexEntry.sizeof()  # 8
TIME_INDEX_ENTRY_SIZE = TimeIndexEntry.sizeof()  # 12
assert OFFSET_INDEX_ENTRY_SIZE == layout.OFFSET_INDEX_ENTRY_SIZE
assert TIME_INDEX_ENTRY_SIZE == layout.TIME_INDEX_ENTRY_SIZE

OffsetIndexFile = GreedyRange(OffsetIndexEntry)
TimeIndexFile = GreedyRange(TimeIndexEntry)
