"""File and directory names in a Kafka log dir (§14).

* Segment files: ``<base offset, 20 digits>.log|.index|.timeindex|.txnindex``; producer
  snapshots ``<offset>.snapshot``; suffixes ``.deleted``, ``.cleaned``, ``.swap`` appended for
  files being deleted, written by the cleaner or swapped in. Kafka parses the offset as the text
  before the FIRST ``.``.
* Tiered-storage copies: ``<offset>-<uuid>.log`` (and the same for indexes); the offset is the
  text before the first ``-``.
* KRaft snapshots: ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``.
* Partition directories: ``<topic>-<partition>``; ``<topic>-<partition>.<uuid32hex>-delete``,
  ``-future`` and ``-stray`` for partitions being deleted, moved in, or kept aside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
CHECKPOINT_SUFFIX = ".checkpoint"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TEMP_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
SEGMENT_SUFFIXES = (LOG_SUFFIX,) + INDEX_SUFFIXES

DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
METADATA_TOPIC = "__cluster_metadata"

_SEGMENT_NAME = re.compile(r"^(\d+)(?:-([A-Za-z0-9_-]{22}|[0-9a-fA-F-]{32,36}))?(\.[a-z]+)((?:\.[a-z]+)*)$")
_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
SEGMENT_NAME = _SEGMENT_NAME  # groups: offset digits, remote id, suffix, temp suffixes
KRAFT_SNAPSHOT_NAME = _KRAFT_SNAPSHOT
_SPECIAL_DIR = re.compile(r"^(\S+)-(\S+)\.(\S+)(-delete|-future|-stray)$")


MAX_OFFSET = 2**63 - 1  # Kafka parses names with Long.parseLong
OFFSET_OUT_OF_RANGE = ("the offset in the name is beyond 2^63-1: Kafka's Long.parseLong fails on it "
                       "(NumberFormatException) and the log dir cannot be loaded")


def format_offset(offset: int) -> str:
    """``LogFileUtils.filenamePrefixFromOffset``: at least 20 digits, zero-padded."""
    return f"{offset:020d}"


def offset_from_name(name: str) -> int | None:
    """Kafka's ``offsetFromFileName``: the number before the first ``.`` (or tiered ``-``)."""
    head = name.split(".", 1)[0].split("-", 1)[0]
    return int(head) if head.isdigit() and int(head) <= MAX_OFFSET else None


def offset_out_of_range(name: str) -> bool:
    """A segment, index, snapshot or KRaft snapshot name whose offset does not fit a Java long
    (``99999999999999999999.log``): Kafka cannot load it; seglog names it and never reads it."""
    match = _SEGMENT_NAME.match(name) or _KRAFT_SNAPSHOT.match(name)
    return match is not None and int(match.group(1)) > MAX_OFFSET


@dataclass(frozen=True)
class SegmentFileName:
    """A parsed segment-family file name, e.g. ``00000000000000000042.index.deleted``."""

    name: str
    base_offset: int
    suffix: str  # ".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint", ...
    temp_suffix: str  # "", ".deleted", ".cleaned", ".swap" (or a chain of them)
    remote_id: str | None = None  # tiered storage segment id

    @property
    def is_temp(self) -> bool:
        return bool(self.temp_suffix)


def parse_segment_file_name(name: str) -> SegmentFileName | None:
    match = _SEGMENT_NAME.match(name)
    if match is None:
        return None
    digits, remote_id, suffix, temp = match.groups()
    if int(digits) > MAX_OFFSET:
        return None  # see offset_out_of_range
    return SegmentFileName(name, int(digits), suffix, temp, remote_id)


@dataclass(frozen=True)
class KRaftSnapshotId:
    end_offset: int
    epoch: int


def parse_kraft_snapshot_name(name: str) -> KRaftSnapshotId | None:
    match = _KRAFT_SNAPSHOT.match(name)
    if match is None or int(match.group(1)) > MAX_OFFSET:
        return None
    return KRaftSnapshotId(int(match.group(1)), int(match.group(2)))


@dataclass(frozen=True)
class PartitionDirName:
    topic: str
    partition: int
    kind: str  # "current", "delete", "future", "stray", or "remote" (tiered storage, below)
    unique_id: str | None = None


def parse_partition_dir_name(name: str) -> PartitionDirName | None:
    """``UnifiedLog.parseTopicPartitionName``; None where Kafka would refuse the directory.
    A tiered-storage partition directory (LocalTieredStorage's ``<topic>-<partition>-<topic
    id>``, see :mod:`remote_layout`) is kind ``"remote"`` with the topic id as ``unique_id``."""
    if not name or "-" not in name:
        return None
    remote = _remote_dir_name(name)
    if remote is not None:
        return remote
    special = _SPECIAL_DIR.match(name)
    if special is not None:
        topic, partition, unique_id, suffix = special.groups()
        kind = suffix[1:]
    elif name.endswith((DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)):
        return None
    else:
        topic, _, partition = name.rpartition("-")
        kind, unique_id = "current", None
    if not topic or not partition or not re.fullmatch(r"-?\d+", partition):
        return None
    return PartitionDirName(topic, int(partition), kind, unique_id)


def _remote_dir_name(name: str) -> PartitionDirName | None:
    from seglog_cli.storage.log.remote_layout import parse_remote_partition_dir_name
    remote = parse_remote_partition_dir_name(name)
    if remote is None:
        return None
    return PartitionDirName(remote.topic, remote.partition, "remote", remote.topic_id)
