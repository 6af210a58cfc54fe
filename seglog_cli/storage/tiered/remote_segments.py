"""Remote segments as ``__remote_log_metadata`` describes them, for verifying remote storage.

The topic-based remote log metadata manager writes one record per event (Kafka 4.2,
storage/src/main/java/org/apache/kafka/server/log/remote/metadata/storage/serialization/
RemoteLogMetadataSerde.java): a ``RemoteLogSegmentMetadataRecord`` when a copy starts (state
``COPY_SEGMENT_STARTED``), then ``RemoteLogSegmentMetadataUpdateRecord``s (``COPY_SEGMENT_FINISHED``,
``DELETE_SEGMENT_STARTED``, ``DELETE_SEGMENT_FINISHED``). Each value is decoded by
:func:`seglog_cli.storage.serde.remote_log_metadata.decode_remote_log_metadata` (the reader behind
``seglog dump --remote-log-metadata-decoder``); this module folds them, in log order, into each
segment's metadata with its latest state, as the metadata manager's cache does.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.serde.remote_log_metadata import (
    SEGMENT_METADATA,
    SEGMENT_METADATA_UPDATE,
    RemoteLogMetadataError,
    decode_remote_log_metadata,
)

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
COPY_SEGMENT_STARTED = "COPY_SEGMENT_STARTED"
COPY_SEGMENT_FINISHED = "COPY_SEGMENT_FINISHED"


@dataclass(frozen=True)
class RemoteSegmentMetadata:
    """A remote segment as the metadata topic describes it, after its updates."""

    topic: str
    topic_id: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]  # (epoch, start offset), by epoch
    segment_size_in_bytes: int
    state: str
    where: str = ""  # "<metadata partition dir> offset N" of the record that set the state


@dataclass
class RemoteSegments:
    """Every remote segment found in the ``__remote_log_metadata`` partitions read."""

    segments: dict[str, RemoteSegmentMetadata] = field(default_factory=dict)  # segment id -> metadata
    orphan_updates: list[tuple[str, str]] = field(default_factory=list)  # (segment id, where)
    undecodable: list[tuple[str, int, str]] = field(default_factory=list)  # (path, offset, Kafka's message)

    def for_partition(self, topic_id: str, partition: int) -> list[RemoteSegmentMetadata]:
        return [m for m in self.segments.values() if m.topic_id == topic_id and m.partition == partition]


def read_remote_segments(directories: list[Path]) -> RemoteSegments:
    """Fold the records of the given ``__remote_log_metadata-N`` directories, in log order."""
    out = RemoteSegments()
    for directory in directories:
        log = PartitionLog(directory)
        try:
            for segment in log.segments:
                buf = segment.log.buffer
                for batch in LogScan(segment.log, 0, resync=True, check_crc=True):
                    if batch.is_control:
                        continue
                    try:
                        records = list(read_records(buf, batch, str(segment.log_path)))
                    except SeglogError:
                        continue  # reported by verify of that partition
                    for record in records:
                        _fold(out, record.value, f"{directory.name} offset {record.offset}",
                              str(segment.log_path), record.offset)
                segment.close()
        finally:
            log.close()
    return out


def _fold(out: RemoteSegments, value: bytes | None, where: str, path: str, offset: int) -> None:
    try:
        record = decode_remote_log_metadata(value)
    except RemoteLogMetadataError as exc:
        out.undecodable.append((path, offset, exc.message))
        return
    if record.api_key == SEGMENT_METADATA:
        tip = record.topic_id_partition
        out.segments[record.segment_id] = RemoteSegmentMetadata(
            tip.topic, tip.topic_id, tip.partition, record.segment_id, record.start_offset, record.end_offset,
            record.broker_id, record.max_timestamp_ms, tuple(record.leader_epochs), record.segment_size_in_bytes,
            record.state, where)
    elif record.api_key == SEGMENT_METADATA_UPDATE:
        known = out.segments.get(record.segment_id)
        if known is None:
            out.orphan_updates.append((record.segment_id, where))
        else:
            out.segments[record.segment_id] = replace(known, state=record.state, where=where)
