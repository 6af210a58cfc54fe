"""Findings: damage and oddities reported as data (STYLE habit 5).

A finding has a stable ``code``, a ``severity``, the file, the byte ``position`` (and ``length``
of the affected region when known), the logical ``offset`` when known and a one-line
``message``. Codes are part of seglog's public interface (runbooks match on them): never rename
one, only add. ``FINDING_DOCS`` says what each code means and what to do (the docs site's
findings page is generated from it).

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
    # the start-up preview of a KRaft broker's log dirs against a metadata image (storage.metadata.startup)
    PARTITION_GOES_STRAY = "PARTITION_GOES_STRAY"  # the broker renames the dir <topic>-<p>.<uuid>-stray
    PARTITION_CREATED_EMPTY = "PARTITION_CREATED_EMPTY"  # a partition of the broker without a dir: created empty
    PARTITION_WRONG_LOG_DIR = "PARTITION_WRONG_LOG_DIR"  # JBOD: a dir outside its assigned directory
    PREVIEW_FROM_OWN_METADATA = "PREVIEW_FROM_OWN_METADATA"  # judged against the broker's own (old) metadata log


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


@dataclass(frozen=True)
class CodeDoc:
    """What a finding code means and what to do about it: the one source of the docs site's
    findings page (docs/findings.md). ``severities``: every severity the engine gives the code;
    ``depends``: what decides between them when there are several."""

    severities: tuple[Severity, ...]
    meaning: str
    action: str
    depends: str = ""


_I, _W, _E = Severity.INFO, Severity.WARNING, Severity.ERROR
_RECOVER = ("Preview Kafka's start-up recovery with `seglog recover --mode kafka DIR`, then `--apply` it "
            "(backups kept; `seglog undo --apply BACKUP` reverts). With a healthy replica, `seglog repair` "
            "puts its bytes back instead of truncating.")
_REBUILD = ("Nothing is lost: the index is derived from the .log. `seglog rebuild-index --apply DIR` rewrites it "
            "as Kafka's recovery does (or let the broker rebuild it at start-up).")
_ACTIVE_OR_ROLLED = "info on the active (last) segment, where it is normal; warning on a rolled segment"

FINDING_DOCS: dict[str, CodeDoc] = {
    Code.TORN_TAIL: CodeDoc(
        (_W,), "The last batch of the .log is incomplete: the broker crashed (or the disk filled) while "
        "appending it. Those records were never acknowledged to a producer with acks=all.",
        "Kafka truncates it at start-up without losing acknowledged data. `seglog recover` does the same offline."),
    Code.ZERO_FILLED_TAIL: CodeDoc(
        (_W,), "Zeros from this position to the end of the .log: a preallocated file "
        "(file.preallocate) or blocks allocated but never written before a crash.",
        "Kafka truncates the zeros at start-up; `seglog recover` does the same offline."),
    Code.TRAILING_GARBAGE: CodeDoc(
        (_E,), "Bytes after the last valid batch that do not frame a batch: overwritten or foreign data "
        "at the end of the .log.",
        "Kafka's recovery truncates here and the bytes are lost. " + _RECOVER),
    Code.CORRUPT_REGION: CodeDoc(
        (_E,), "Damage in the middle of the .log: bytes that frame no batch, with valid batches after them. "
        "Kafka's recovery truncates at the first invalid batch, so every later batch is lost too.",
        _RECOVER + " Check the disk (dmesg, SMART) first."),
    Code.BATCH_SIZE_TOO_SMALL: CodeDoc(
        (_E,), "A batch's size field is below the smallest possible batch (14 bytes; 61 for the v2 "
        "format): the header is damaged and the batches after it cannot be found by walking the file.",
        _RECOVER),
    Code.BATCH_SIZE_MISMATCH: CodeDoc(
        (_E,), "A damaged batch's size field does not lead to the next batch (seglog found the next batch "
        "by searching): the size field itself is damaged.", _RECOVER),
    Code.BATCH_CRC_MISMATCH: CodeDoc(
        (_E,), "The batch's stored CRC-32C differs from the one computed over its bytes: bit rot, a torn "
        "write or a bad copy. Kafka's recovery truncates the log here; consumers fetching it get a "
        "CorruptRecordException.", _RECOVER),
    Code.UNKNOWN_MAGIC: CodeDoc(
        (_E,), "The batch's magic byte is not 0, 1 or 2: a damaged header, or not Kafka data.", _RECOVER),
    Code.UNKNOWN_CODEC: CodeDoc(
        (_E,), "The batch names a compression codec Kafka does not have (5-7, or zstd in a legacy "
        "message): a damaged attributes field.", _RECOVER),
    Code.OFFSET_OUT_OF_ORDER: CodeDoc(
        (_E,), "A batch's offsets do not follow its neighbours' (they go back or overlap): a damaged "
        "header, or segments pieced together by hand.", _RECOVER),
    Code.LEADER_EPOCH_OUT_OF_ORDER: CodeDoc(
        (_E,), "A batch's partition leader epoch is below the previous batch's (or below -1): a damaged "
        "header, or data from another replica's history spliced in.",
        "Compare the replicas with `seglog diff`; " + _RECOVER),
    Code.OFFSET_OVERFLOW: CodeDoc(
        (_E,), "A batch's last offset minus the segment's base offset does not fit in 32 bits, so the "
        "offset index cannot address it (Kafka's LogSegmentOffsetOverflowException).",
        "Kafka splits such a segment at start-up; `seglog recover --mode kafka` shows the split, "
        "`--apply` does it."),
    Code.SEGMENT_BASE_MISMATCH: CodeDoc(
        (_E,), "The first batch of the .log is below the offset in the file's name: the file was renamed "
        "or copied to the wrong place.", "Check where the file came from; " + _RECOVER),
    Code.SEGMENT_BASE_GAP: CodeDoc(
        (_I,), "The first batch is above the offset in the file's name: normal after compaction removed "
        "the first records.", "Nothing."),
    Code.EMPTY_SEGMENT: CodeDoc(
        (_I,), "A .log with no batch: a segment just rolled, or emptied by compaction.", "Nothing."),
    Code.RECORD_PARSE_ERROR: CodeDoc(
        (_E,), "A batch's records cannot be decoded as Kafka decodes them (varint, lengths or headers "
        "damaged) although its CRC may match: consumers fail on it.",
        _RECOVER + " If the CRC matches, the producer wrote bad data: `seglog dump` shows the batch."),
    Code.DECOMPRESSION_FAILED: CodeDoc(
        (_E,), "The batch's records section does not decompress with its codec: consumers fail on it.",
        _RECOVER),
    Code.RECORD_OFFSET_OUT_OF_RANGE: CodeDoc(
        (_E,), "Records' offset deltas are not increasing inside the batch, or run past its last offset.",
        _RECOVER),
    Code.LAST_OFFSET_DELTA_MISMATCH: CodeDoc(
        (_I,), "The batch's last record is before the batch's last offset: records removed by compaction "
        "(the batch keeps its offsets).", "Nothing."),
    Code.MAX_TIMESTAMP_MISMATCH: CodeDoc(
        (_I, _E), "The records' largest timestamp differs from the batch's max timestamp field.",
        "If an error: time-based lookups and retention read a wrong value; " + _RECOVER,
        "info when the records' largest is below the batch's (records removed by compaction); error when "
        "it is above"),
    Code.CONTROL_RECORD_INVALID: CodeDoc(
        (_E,), "A control batch (a transaction's COMMIT/ABORT marker) Kafka cannot read: consumers with "
        "isolation.level=read_committed stall or fail on it.", _RECOVER),
    Code.OVERLAPPING_SEGMENTS: CodeDoc(
        (_E,), "A segment starts at or below the previous segment's last offset: two copies of the same "
        "offsets (a segment restored by hand next to a newer one).",
        "Find which copy is right with `seglog dump`; move the other out of the partition directory."),
    Code.OFFSET_GAP: CodeDoc(
        (_I,), "Offsets missing between two segments: normal after compaction or retention.", "Nothing."),
    Code.INDEX_MISSING: CodeDoc(
        (_W,), "A segment without its .index: Kafka recovers the segment (reads it whole) at start-up.",
        _REBUILD),
    Code.TIME_INDEX_MISSING: CodeDoc((_W,), "A segment without its .timeindex.", _REBUILD),
    Code.ORPHAN_INDEX: CodeDoc(
        (_I, _W), "An index file without its .log: Kafka deletes it at start-up.",
        "Nothing to keep; `seglog recover --apply` deletes it as Kafka would.",
        "info in a log dir where a seglog run was interrupted (the next writing command rolls it back); "
        "warning otherwise"),
    Code.INDEX_SANITY_FAILED: CodeDoc(
        (_E,), "The index fails Kafka's sanityCheck (a size not a multiple of its entry, a last entry "
        "below the base): the broker refuses to load it.", _REBUILD),
    Code.INDEX_PREALLOCATED: CodeDoc(
        (_I,), "A zero-filled tail on the active segment's index: Kafka preallocates it "
        "(segment.index.bytes) and trims it when the segment rolls.", "Nothing."),
    Code.INDEX_NOT_TRIMMED: CodeDoc(
        (_W,), "A zero-filled tail on a rolled segment's index: the broker stopped before trimming it.",
        _REBUILD),
    Code.INDEX_ENTRY_NOT_BATCH_START: CodeDoc(
        (_E,), "An .index entry points at a position where no batch starts: fetches through it read wrong "
        "bytes.", _REBUILD),
    Code.INDEX_OFFSET_MISMATCH: CodeDoc(
        (_E,), "An .index entry maps an offset to a batch that does not end at that offset.", _REBUILD),
    Code.INDEX_NOT_INCREASING: CodeDoc(
        (_E,), "Offsets or positions in the .index go backwards: lookups by binary search go wrong.",
        _REBUILD),
    Code.INDEX_ENTRY_PAST_LOG_END: CodeDoc(
        (_E,), "An .index entry points past the end of the .log (the .log was truncated, the index was not).",
        _REBUILD),
    Code.TIME_INDEX_OUT_OF_ORDER: CodeDoc(
        (_E,), "Timestamps or offsets in the .timeindex go backwards: offsetsForTimes answers wrongly.",
        _REBUILD),
    Code.TIME_INDEX_OFFSET_NOT_FOUND: CodeDoc(
        (_E,), "A .timeindex entry names an offset no batch of the segment holds.", _REBUILD),
    Code.TIME_INDEX_MISMATCH: CodeDoc(
        (_E,), "A .timeindex entry's timestamp differs from the max timestamp of the batch it names.",
        _REBUILD),
    Code.TIME_INDEX_LAST_ENTRY_STALE: CodeDoc(
        (_I, _W), "The .timeindex's last entry is below the segment's largest timestamp; time-based "
        "retention reads that entry, so the segment may be deleted early.",
        "On a rolled segment: " + _REBUILD, _ACTIVE_OR_ROLLED + " (the entry is written when it rolls)"),
    Code.TXN_INDEX_MISMATCH: CodeDoc(
        (_I, _E), "The .txnindex and the log's ABORT markers disagree: an entry without its marker, or an "
        "aborted transaction's marker without its entry. read_committed consumers may then deliver "
        "aborted records.", _REBUILD,
        "info for a difference that is valid (a last stable offset a follower computed over several "
        "batches, an entry at or past the log end left by an interrupted append); error otherwise"),
    Code.TXN_INDEX_SANITY_FAILED: CodeDoc(
        (_W,), "The .txnindex fails Kafka's sanityCheck (an entry's last offset below the segment's base).",
        _REBUILD),
    Code.SNAPSHOT_CORRUPT: CodeDoc(
        (_W,), "A producer state .snapshot fails its CRC, version or schema: Kafka ignores it and rebuilds "
        "producer state by reading the log (a slower start-up).",
        "`seglog recover --apply` writes the snapshots Kafka would."),
    Code.SNAPSHOT_STRAY: CodeDoc(
        (_I,), "A .snapshot not at a segment's base offset: Kafka deletes it at start-up.", "Nothing."),
    Code.SNAPSHOT_PAST_LOG_END: CodeDoc(
        (_W,), "A .snapshot beyond the log end offset (the log was truncated after it was written): Kafka "
        "deletes it at start-up.", "`seglog recover --apply` deletes it as Kafka would."),
    Code.STRAY_TEMP_FILE: CodeDoc(
        (_I, _W), "A .deleted, .cleaned, .swap or .tmp file left by retention, the log cleaner, a segment "
        "swap or a checkpoint write.",
        "Kafka finishes or removes them at start-up; `seglog recover --apply` does the same offline.",
        "info for .deleted (waiting for file.delete.delay.ms) and .tmp (harmless); warning for .cleaned and "
        ".swap (an interrupted cleaning or swap)"),
    Code.INTERRUPTED_SEGLOG_RUN: CodeDoc(
        (_W,), "A .seglog-journal: a seglog command that writes was interrupted here.",
        "The next writing seglog command on the log dir (or `seglog undo`) rolls it back first; a broker "
        "ignores the journal and recovers what the run was changing."),
    Code.CHECKPOINT_UNREADABLE: CodeDoc(
        (_I, _E), "A checkpoint or metadata file (recovery-point, replication, log-start, cleaner, "
        "leader-epoch-checkpoint, partition.metadata, meta.properties) Kafka cannot parse.",
        "If an error, the broker fails to start or loses the values: restore the file from a backup or "
        "another replica; `seglog recover --mode kafka` shows what Kafka does without it.",
        "info for a .kafka_cleanshutdown that is not Kafka 3.7+'s JSON (its presence still counts); error "
        "for the others (the message says what Kafka does: often marks the log dir offline)"),
    Code.CHECKPOINT_PAST_LOG_END: CodeDoc(
        (_W, _E), "A checkpoint names an offset beyond the partition's log end offset on this disk.",
        "`seglog recover --mode kafka` shows what the broker will do; for log-start-offset-checkpoint, fix "
        "or remove the entry before starting the broker.",
        "error in log-start-offset-checkpoint (Kafka deletes every segment of the log); warning in the "
        "recovery-point, replication and cleaner checkpoints"),
    Code.CHECKPOINT_BEFORE_LOG_START: CodeDoc(
        (_I, _W), "A checkpoint names an offset below the log start offset.",
        "Kafka raises or resets it by itself: nothing, unless segments were removed by hand.",
        "info in log-start-offset-checkpoint (normal for a tiered topic); warning in the replication and "
        "cleaner checkpoints"),
    Code.CHECKPOINT_UNKNOWN_PARTITION: CodeDoc(
        (_I,), "A checkpoint names a partition that has no directory in this log dir (deleted or moved).",
        "Nothing: Kafka drops the entry."),
    Code.LEADER_EPOCH_NOT_INCREASING: CodeDoc(
        (_E,), "The leader-epoch-checkpoint's epochs or start offsets go backwards: follower truncation "
        "after a leader change uses wrong offsets.", _RECOVER),
    Code.LEADER_EPOCH_PAST_LOG_END: CodeDoc(
        (_W,), "A leader epoch in the checkpoint starts past the log end offset: Kafka truncates the cache "
        "at start-up.", "`seglog recover --apply` does the same offline."),
    Code.LEADER_EPOCH_NOT_IN_CHECKPOINT: CodeDoc(
        (_W,), "A batch carries a leader epoch the leader-epoch-checkpoint lacks: the checkpoint is stale.",
        "`seglog recover --mode kafka --apply` rebuilds the epoch cache from the batches."),
    Code.UNEXPECTED_DIRECTORY: CodeDoc(
        (_E,), "A sub-directory Kafka refuses to start with (not a topic-partition, not a -delete or "
        "-future directory).", "Move it out of the log dir before starting the broker."),
    Code.UNREADABLE_FILE: CodeDoc(
        (_E,), "A file that cannot be opened or memory-mapped (permissions, I/O error, not a regular file).",
        "Check the permissions and the disk (dmesg); the broker fails on it too."),
    Code.TIERED_OFFSET_GAP: CodeDoc(
        (_E,), "Offsets of the partition that are in no remote segment and not in the local log: a remote "
        "segment is missing (deleted from the object store, or never copied) or the local log was "
        "truncated past what was tiered. Consumers fetching those offsets fail (OffsetOutOfRange or "
        "remote fetch errors); the records are lost unless a copy exists.",
        "Look for the missing segment in the object store (versioning, backups) and in "
        "__remote_log_metadata (`seglog verify` with its partitions); another replica's local log may still "
        "hold the offsets (`seglog diff`). If they are gone, consumers must reset past the gap."),
    Code.TIERED_OVERLAP: CodeDoc(
        (_E,), "The same offsets are in two segments (remote/remote or remote/local) with different "
        "batches: two histories, e.g. a segment tiered by a leader whose log was later truncated.",
        "Find which one follows the partition's leader epochs with `seglog dump`; Kafka serves the one "
        "__remote_log_metadata names."),
    Code.TIERED_EPOCH_MISMATCH: CodeDoc(
        (_E,), "A remote segment's leader epochs are not the partition's lineage (its epoch checkpoint "
        "disagrees with its batches, or the local log starts in an older epoch).",
        "Kafka rejects the segment (isRemoteSegmentWithinLeaderEpochs): compare replicas with `seglog diff`."),
    Code.TIERED_REMOTE_PAST_LOG_END: CodeDoc(
        (_E,), "A remote segment ends at or past the local log end offset: not part of this partition's "
        "history as this replica knows it.", "Kafka ignores it; check the replica is the current leader's."),
    Code.TIERED_TOPIC_ID_MISMATCH: CodeDoc(
        (_E,), "The remote and local directories belong to topics with different topic ids (a topic "
        "deleted and re-created with the same name).", "Point seglog at the remote directory of this topic id."),
    Code.REMOTE_FILESET_INCOMPLETE: CodeDoc(
        (_E,), "A remote segment lacks a required file (.log, .index, .timeindex, .snapshot or "
        ".leader_epoch_checkpoint): remote fetches of it fail.", "Restore the file from the object store's "
        "versioning or backups."),
    Code.REMOTE_METADATA_MISMATCH: CodeDoc(
        (_E,), "__remote_log_metadata disagrees with a remote segment's files (offsets, epochs or size).",
        "Kafka trusts the metadata: restore the files the metadata describes."),
    Code.REMOTE_METADATA_STATE: CodeDoc(
        (_W,), "A remote segment's files exist but its metadata is not COPY_SEGMENT_FINISHED (a copy not "
        "finished, a deletion not done): Kafka does not serve it.", "Nothing: the broker retries or "
        "deletes it."),
    Code.REMOTE_SEGMENT_WITHOUT_METADATA: CodeDoc(
        (_I, _W), "Remote segment files no __remote_log_metadata record names: Kafka never reads them "
        "(a copy that failed before its metadata was written).", "Nothing to serve; they can be removed.",
        "info when no metadata record of the partition was given at all (give all __remote_log_metadata "
        "partitions to cross-check); warning for one segment without its record"),
    Code.REMOTE_METADATA_WITHOUT_SEGMENT: CodeDoc(
        (_E,), "__remote_log_metadata says a segment was copied (COPY_SEGMENT_FINISHED) but its files are "
        "gone: fetches of its offsets fail.", "Restore the files from the object store's versioning or "
        "backups; otherwise the offsets are lost (see TIERED_OFFSET_GAP)."),
    Code.PARTITION_GOES_STRAY: CodeDoc(
        (_W,), "At its next start this KRaft broker marks the partition dir stray (Kafka's "
        "isStrayKraftReplica, after catching up with the metadata log): it has no partition.metadata "
        "(no topic id), or its topic id is not in the metadata image (the topic was deleted, or deleted "
        "and re-created with a new id), or the partition's replicas no longer hold the broker (a "
        "reassignment while it was down). The message names Kafka's reason and the metadata record "
        "that decided it. Kafka 4.2 renames the dir (its name, a dot, 32 hex digits and -stray) and keeps "
        "it: its records are no longer served, and nothing deletes the dir.",
        "If its records matter (a topic deleted by mistake, records only this replica holds), save them "
        "before starting the broker (runbook 12: a copy with `cp -a`, or `seglog dump --format jsonl`), "
        "or after it from the -stray dir, which every seglog read command reads like a -delete dir; "
        "`seglog replay --topic-map` puts them into the re-created topic. Remove the -stray dir by hand "
        "when done."),
    Code.PARTITION_CREATED_EMPTY: CodeDoc(
        (_I,), "The metadata image assigns this partition to the broker and no kept dir of its log dirs "
        "holds it (a topic created while the broker was down, a re-created topic, a reassignment to it, "
        "or a dir that goes stray): the broker creates it empty at start-up and fetches it from the "
        "leader from offset 0.", "Nothing; expect replication traffic until it joins the ISR."),
    Code.PARTITION_WRONG_LOG_DIR: CodeDoc(
        (_W,), "JBOD: the metadata image assigns the broker's replica to another of its log dirs "
        "(the partition's directory id) than the one the dir sits in: the dir was moved by hand, or "
        "a log dir was replaced. The broker loads the log where it is and tells the controller "
        "(AssignReplicasToDirs).", "Nothing if the dir is where you want it; otherwise move it with "
        "kafka-reassign-partitions --execute (log_dirs), never by hand while the broker runs."),
    Code.PREVIEW_FROM_OWN_METADATA: CodeDoc(
        (_I,), "The start-up preview was judged against the broker's own __cluster_metadata-0, which "
        "ends where the broker stopped following the log: the restart first catches up past that "
        "offset, and changes made since (topics deleted, reassignments) are not in it. Reported with "
        "the preview's other findings; the preview's first line says it in every case.",
        "Give `--metadata-log DIR` naming a current copy: a controller's or a running broker's "
        "metadata log dir, or a copy of one."),
}


def codes() -> list[str]:
    """Every finding code, in the order they are declared."""
    return [value for name, value in vars(Code).items() if not name.startswith("_") and isinstance(value, str)
            and name == value]
