"""Kafka's ``LocalTieredStorage`` layout (KIP-405): names only, no I/O.

LocalTieredStorage (Kafka's remote storage manager for tests and local use; Kafka 4.2
``storage/src/test/java/org/apache/kafka/server/log/remote/storage/LocalTieredStorage.java``)
writes every remote segment as a *fileset* under one directory per topic-partition::

    <dir>/kafka-tiered-storage/                          LocalTieredStorage's root
        <topic>-<partition>-<topic id>/                  RemoteTopicPartitionDirectory:
                                                         "(<topic chars>+)-(\\d+)-([a-zA-Z0-9_-]{22})"
            <start offset, 20 digits>-<segment id>.log                       SEGMENT
            <start offset>-<segment id>.index                                OFFSET_INDEX
            <start offset>-<segment id>.timeindex                            TIME_INDEX
            <start offset>-<segment id>.txnindex                             TRANSACTION_INDEX (optional)
            <start offset>-<segment id>.leader_epoch_checkpoint              LEADER_EPOCH_CHECKPOINT
            <start offset>-<segment id>.snapshot                             PRODUCER_SNAPSHOT

(``RemoteLogSegmentFileset.java``: ``FILENAME_FORMAT = (\\d+-)([a-zA-Z0-9_-]{22})(\\.[a-z_]+)``,
``RemoteLogSegmentFileType``; ``RemoteTopicPartitionDirectory.java`` for the directory name.)
Topic ids and segment ids are Kafka ``Uuid``s in their 22-character base64url form.

What the files hold (``RemoteLogManager.copyLogSegment``, core/src/main/java/kafka/log/remote/
RemoteLogManager.java): the ``.log``, ``.index``, ``.timeindex`` and ``.txnindex`` are the
local segment's files byte for byte; the ``.snapshot`` is the producer snapshot taken at the
*next* segment's base offset (``fetchSnapshot(nextSegmentBaseOffset)``), so the offset it
stands for is the segment's end offset + 1, not the one in its name; the
``.leader_epoch_checkpoint`` is the leader epoch cache from the log start up to the segment's
end (``epochEntriesInRange(-1, nextSegmentBaseOffset)``), in checkpoint text format.

This module maps names to ``(start offset, segment id, file type)`` and groups names into
filesets; it never touches a file, so a reader of an object store can reuse it with its own
listing.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Iterable

REMOTE_STORAGE_ROOT = "kafka-tiered-storage"  # LocalTieredStorage.STORAGE_DIR

SEGMENT = ".log"
OFFSET_INDEX = ".index"
TIME_INDEX = ".timeindex"
TRANSACTION_INDEX = ".txnindex"
LEADER_EPOCH_CHECKPOINT = ".leader_epoch_checkpoint"
PRODUCER_SNAPSHOT = ".snapshot"
FILE_TYPES = (SEGMENT, OFFSET_INDEX, TIME_INDEX, TRANSACTION_INDEX, LEADER_EPOCH_CHECKPOINT, PRODUCER_SNAPSHOT)
REQUIRED_FILE_TYPES = (SEGMENT, OFFSET_INDEX, TIME_INDEX, LEADER_EPOCH_CHECKPOINT, PRODUCER_SNAPSHOT)

_UUID = r"[a-zA-Z0-9_-]{22}"
_FILE_NAME = re.compile(rf"^(\d+)-({_UUID})(\.[a-z_]+)$")
_DIR_NAME = re.compile(rf"^([a-zA-Z0-9._-]+)-(\d+)-({_UUID})$")  # Topic.LEGAL_CHARS = [a-zA-Z0-9._-]
_MAX_OFFSET = 2**63 - 1
_MAX_PARTITION = 2**31 - 1


@dataclass(frozen=True)
class RemotePartitionName:
    """``<topic>-<partition>-<topic id>``."""

    topic: str
    partition: int
    topic_id: str


def parse_remote_partition_dir_name(name: str) -> RemotePartitionName | None:
    """RemoteTopicPartitionDirectory's name; None for anything else."""
    match = _DIR_NAME.match(name)
    if match is None or int(match.group(2)) > _MAX_PARTITION:
        return None
    return RemotePartitionName(match.group(1), int(match.group(2)), match.group(3))


def remote_partition_dir_name(topic: str, partition: int, topic_id: str) -> str:
    return f"{topic}-{partition}-{topic_id}"


@dataclass(frozen=True)
class RemoteFileName:
    """``<start offset>-<segment id><suffix>``; ``suffix`` is one of :data:`FILE_TYPES` or
    another ``.[a-z_]+`` that LocalTieredStorage would refuse."""

    name: str
    start_offset: int
    segment_id: str
    suffix: str

    @property
    def known(self) -> bool:
        return self.suffix in FILE_TYPES


def parse_remote_file_name(name: str) -> RemoteFileName | None:
    match = _FILE_NAME.match(name)
    if match is None or int(match.group(1)) > _MAX_OFFSET:
        return None
    return RemoteFileName(name, int(match.group(1)), match.group(2), match.group(3))


def remote_file_name(start_offset: int, segment_id: str, suffix: str) -> str:
    """``RemoteLogSegmentFileType.toFilename`` with ``LogFileUtils.filenamePrefixFromOffset``."""
    return f"{start_offset:020d}-{segment_id}{suffix}"


@dataclass(frozen=True)
class RemoteFileset:
    """One remote segment's files by type (suffix -> file name)."""

    start_offset: int
    segment_id: str
    files: dict[str, str] = field(default_factory=dict, compare=False)

    def name(self, suffix: str) -> str | None:
        return self.files.get(suffix)

    @property
    def missing(self) -> tuple[str, ...]:
        """Required file types absent (``openExistingFileset``: "Invalid fileset, missing files")."""
        return tuple(suffix for suffix in REQUIRED_FILE_TYPES if suffix not in self.files)


def group_filesets(names: Iterable[str]) -> tuple[list[RemoteFileset], list[str]]:
    """Names of one remote partition directory -> (filesets ordered by start offset then
    segment id, the names that belong to no fileset)."""
    grouped: dict[tuple[int, str], dict[str, str]] = {}
    others: list[str] = []
    for name in names:
        parsed = parse_remote_file_name(name)
        if parsed is None or not parsed.known:
            others.append(name)
            continue
        grouped.setdefault((parsed.start_offset, parsed.segment_id), {})[parsed.suffix] = name
    filesets = [RemoteFileset(start, segment_id, files) for (start, segment_id), files in sorted(grouped.items())]
    return filesets, sorted(others)


def uuid_bytes(text: str) -> bytes | None:
    """Kafka ``Uuid.fromString``: 22 base64url characters -> 16 bytes (None if not one)."""
    if not re.fullmatch(_UUID, text):
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        return None
    return raw if len(raw) == 16 else None
