"""Findings: damage and oddities reported as data (STYLE habit 5).

A finding has a stable ``code``, a ``severity``, the file, the byte ``position`` (and ``length``
of the affected region when known), the logical ``offset`` when known and a one-line
``message``. Codes are part of seglog's public interface (runbooks match on them): never rename
one, only add. The README lists every code with its meaning.

Severities:

* ``info``: an expected state worth knowing (a preallocated index of the active segment, a
  ``.deleted`` file waiting for its deletion delay, an offset gap left by compaction);
* ``warning``: something a broker repairs by itself at start-up without losing data (a torn
  tail of the active segment, a missing index, an untrimmed index of a rolled segment);
* ``error``: damage: data a broker would lose, refuse, or serve wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from seglog_cli.storage.log.text import printable


class Severity(str, Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


class Code:
    """Stable finding codes."""

    # .log framing (LogScan)
    TORN_TAIL = "TORN_TAIL"  # the last batch is incomplete: a crash during append
    ZERO_FILLED_TAIL = "ZERO_FILLED_TAIL"  # zeros from here to EOF: preallocation or a crash
    TRAILING_GARBAGE = "TRAILING_GARBAGE"  # bytes after the last batch that frame no batch
    CORRUPT_REGION = "CORRUPT_REGION"  # damage in the middle of the file, valid batches follow
    BATCH_SIZE_TOO_SMALL = "BATCH_SIZE_TOO_SMALL"  # size field below 14 (v2: below 61)
    BATCH_SIZE_MISMATCH = "BATCH_SIZE_MISMATCH"  # a damaged batch's size field misses the next batch
    # .log batches
    BATCH_CRC_MISMATCH = "BATCH_CRC_MISMATCH"  # stored CRC differs from the computed one
    UNKNOWN_MAGIC = "UNKNOWN_MAGIC"  # magic byte not 0, 1 or 2
    UNKNOWN_CODEC = "UNKNOWN_CODEC"  # codec 5-7 (or zstd in a legacy message)
    OFFSET_OUT_OF_ORDER = "OFFSET_OUT_OF_ORDER"  # a batch's offsets do not follow its neighbours'
    LEADER_EPOCH_OUT_OF_ORDER = "LEADER_EPOCH_OUT_OF_ORDER"  # a batch's leader epoch goes back (or < -1)
    OFFSET_OVERFLOW = "OFFSET_OVERFLOW"  # last offset - segment base does not fit an int32
    SEGMENT_BASE_MISMATCH = "SEGMENT_BASE_MISMATCH"  # first batch below the file's base offset
    SEGMENT_BASE_GAP = "SEGMENT_BASE_GAP"  # first batch above the base offset (compaction)
    EMPTY_SEGMENT = "EMPTY_SEGMENT"  # a .log without a batch
    # records (deep)
    RECORD_PARSE_ERROR = "RECORD_PARSE_ERROR"  # records Kafka cannot decode
    DECOMPRESSION_FAILED = "DECOMPRESSION_FAILED"  # the records section does not decompress
    RECORD_OFFSET_OUT_OF_RANGE = "RECORD_OFFSET_OUT_OF_RANGE"  # record offsets not increasing in the batch
    LAST_OFFSET_DELTA_MISMATCH = "LAST_OFFSET_DELTA_MISMATCH"  # last record before the batch's last offset
    MAX_TIMESTAMP_MISMATCH = "MAX_TIMESTAMP_MISMATCH"  # records' max timestamp vs the batch's
    CONTROL_RECORD_INVALID = "CONTROL_RECORD_INVALID"  # a control batch Kafka cannot read
    # cross-segment
    OVERLAPPING_SEGMENTS = "OVERLAPPING_SEGMENTS"  # a segment starts at or below the previous end
    OFFSET_GAP = "OFFSET_GAP"  # offsets missing between segments (retention, compaction)
    # .index
    INDEX_MISSING = "INDEX_MISSING"  # a segment without .index: Kafka recovers the segment
    TIME_INDEX_MISSING = "TIME_INDEX_MISSING"  # a segment without .timeindex
    ORPHAN_INDEX = "ORPHAN_INDEX"  # an index file without its .log: Kafka deletes it
    INDEX_SANITY_FAILED = "INDEX_SANITY_FAILED"  # Kafka's sanityCheck throws
    INDEX_PREALLOCATED = "INDEX_PREALLOCATED"  # zero-filled tail of the active segment's index
    INDEX_NOT_TRIMMED = "INDEX_NOT_TRIMMED"  # zero-filled tail on a rolled segment's index
    INDEX_ENTRY_NOT_BATCH_START = "INDEX_ENTRY_NOT_BATCH_START"  # position is not a batch start
    INDEX_OFFSET_MISMATCH = "INDEX_OFFSET_MISMATCH"  # entry offset is not the batch's last offset
    INDEX_NOT_INCREASING = "INDEX_NOT_INCREASING"  # offsets or positions going backwards
    INDEX_ENTRY_PAST_LOG_END = "INDEX_ENTRY_PAST_LOG_END"  # position beyond the .log
    # .timeindex
    TIME_INDEX_OUT_OF_ORDER = "TIME_INDEX_OUT_OF_ORDER"  # timestamps not increasing
    TIME_INDEX_OFFSET_NOT_FOUND = "TIME_INDEX_OFFSET_NOT_FOUND"  # no batch ends at the entry's offset
    TIME_INDEX_MISMATCH = "TIME_INDEX_MISMATCH"  # timestamp differs from the batch's max timestamp
    TIME_INDEX_LAST_ENTRY_STALE = "TIME_INDEX_LAST_ENTRY_STALE"  # last entry below the segment's max
    # .txnindex
    TXN_INDEX_MISMATCH = "TXN_INDEX_MISMATCH"  # entry without its ABORT marker, or marker without entry
    TXN_INDEX_SANITY_FAILED = "TXN_INDEX_SANITY_FAILED"  # last offset below the segment base
    # producer snapshots
    SNAPSHOT_CORRUPT = "SNAPSHOT_CORRUPT"  # CRC, version or schema failure
    SNAPSHOT_STRAY = "SNAPSHOT_STRAY"  # not at a segment base: Kafka deletes it at start-up
    SNAPSHOT_PAST_LOG_END = "SNAPSHOT_PAST_LOG_END"  # beyond the log end offset: Kafka deletes it
    # partition and log dir files
    STRAY_TEMP_FILE = "STRAY_TEMP_FILE"  # .deleted / .cleaned / .swap leftovers
    INTERRUPTED_SEGLOG_RUN = "INTERRUPTED_SEGLOG_RUN"  # .seglog-journal: rolled back by the next writing command
    CHECKPOINT_UNREADABLE = "CHECKPOINT_UNREADABLE"  # a checkpoint or metadata file Kafka rejects
    CHECKPOINT_PAST_LOG_END = "CHECKPOINT_PAST_LOG_END"  # an offset beyond the log end offset
    CHECKPOINT_BEFORE_LOG_START = "CHECKPOINT_BEFORE_LOG_START"  # an offset below the log start
    CHECKPOINT_UNKNOWN_PARTITION = "CHECKPOINT_UNKNOWN_PARTITION"  # names a partition not on disk
    LEADER_EPOCH_NOT_INCREASING = "LEADER_EPOCH_NOT_INCREASING"  # epochs or offsets going backwards
    LEADER_EPOCH_PAST_LOG_END = "LEADER_EPOCH_PAST_LOG_END"  # an epoch starting past the log end
    LEADER_EPOCH_NOT_IN_CHECKPOINT = "LEADER_EPOCH_NOT_IN_CHECKPOINT"  # a batch's epoch the checkpoint lacks
    UNEXPECTED_DIRECTORY = "UNEXPECTED_DIRECTORY"  # a sub-directory Kafka refuses to start with
    UNREADABLE_FILE = "UNREADABLE_FILE"  # a file that cannot be opened or mapped
    # tiered storage (remote segments in LocalTieredStorage's layout, with the local log)
    TIERED_OFFSET_GAP = "TIERED_OFFSET_GAP"  # offsets in no remote segment and not in the local log
    TIERED_OVERLAP = "TIERED_OVERLAP"  # the same offsets in two segments with different batches
    TIERED_EPOCH_MISMATCH = "TIERED_EPOCH_MISMATCH"  # remote epochs not the partition's lineage
    TIERED_REMOTE_PAST_LOG_END = "TIERED_REMOTE_PAST_LOG_END"  # a remote segment at or past the log end
    TIERED_TOPIC_ID_MISMATCH = "TIERED_TOPIC_ID_MISMATCH"  # remote and local directories of different topics
    REMOTE_FILESET_INCOMPLETE = "REMOTE_FILESET_INCOMPLETE"  # a remote segment without a required file
    REMOTE_METADATA_MISMATCH = "REMOTE_METADATA_MISMATCH"  # __remote_log_metadata disagrees with the files
    REMOTE_METADATA_STATE = "REMOTE_METADATA_STATE"  # files of a segment not COPY_SEGMENT_FINISHED
    REMOTE_SEGMENT_WITHOUT_METADATA = "REMOTE_SEGMENT_WITHOUT_METADATA"  # files no metadata record names
    REMOTE_METADATA_WITHOUT_SEGMENT = "REMOTE_METADATA_WITHOUT_SEGMENT"  # a copied segment whose files are gone


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    path: str
    position: int | None
    message: str
    length: int | None = None
    offset: int | None = None
    kafka_message: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        path = printable(self.path)
        where = path if self.position is None else f"{path}: position {self.position}"
        if self.offset is not None:
            where += f" (offset {self.offset})"
        return f"{where}: {self.code}: {printable(self.message)}"

    def as_dict(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "path": self.path,
            "position": self.position,
            "length": self.length,
            "offset": self.offset,
            "message": self.message,
        }
