"""A minimal reader of ``__remote_log_metadata`` records, for verifying remote segments.

The topic-based remote log metadata manager writes one record per event, key null, value
``RemoteLogMetadataSerde.serialize`` (Kafka 4.2, storage/src/main/java/org/apache/kafka/server/
log/remote/metadata/storage/serialization/RemoteLogMetadataSerde.java) through
``AbstractApiMessageSerde.write`` (server-common/.../serialization/AbstractApiMessageSerde.java)::

    unsigned varint  frame version (1)
    unsigned varint  api key: 0 RemoteLogSegmentMetadataRecord, 1 RemoteLogSegmentMetadataUpdateRecord,
                     2 RemotePartitionDeleteMetadataRecord, 3 RemoteLogSegmentMetadataSnapshotRecord
    unsigned varint  version (0)
    message          flexible version (compact strings/arrays, uuid = 16 bytes, tagged fields)

RemoteLogSegmentMetadataRecord v0 (storage/src/main/resources/message/RemoteLogSegmentMetadataRecord.json)::

    RemoteLogSegmentId   { TopicIdPartition { Name string, Id uuid, Partition int32, tags }, Id uuid, tags }
    StartOffset int64, EndOffset int64, BrokerId int32, MaxTimestampMs int64, EventTimestampMs int64,
    SegmentLeaderEpochs  [] { LeaderEpoch int32, Offset int64, tags }
    SegmentSizeInBytes int32, CustomMetadata nullable bytes, RemoteLogSegmentState int8, tags
    (tag 0: TxnIndexEmpty bool, which Kafka 4.2 prints as ``txnIdxEmpty``)

RemoteLogSegmentMetadataUpdateRecord v0::

    RemoteLogSegmentId (as above), BrokerId int32, EventTimestampMs int64,
    CustomMetadata nullable bytes, RemoteLogSegmentState int8, tags

States (``RemoteLogSegmentState``): 0 COPY_SEGMENT_STARTED, 1 COPY_SEGMENT_FINISHED,
2 DELETE_SEGMENT_STARTED, 3 DELETE_SEGMENT_FINISHED.

This reader is deliberately small and separate from the ``--remote-log-metadata-decoder`` of
``seglog dump`` (which prints every record type as Kafka's formatter does): it decodes only the
two record types verify needs and folds them into each segment's latest state.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

from seglog_cli.storage.batches import LogScan
from seglog_cli.storage.errors import SeglogError
from seglog_cli.storage.partition_log import PartitionLog
from seglog_cli.storage.records import read_records
from seglog_cli.storage.remote_layout import uuid_text

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
SEGMENT_METADATA, SEGMENT_UPDATE, PARTITION_DELETE, SNAPSHOT = 0, 1, 2, 3
STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
          3: "DELETE_SEGMENT_FINISHED"}
COPY_SEGMENT_FINISHED = "COPY_SEGMENT_FINISHED"
DELETE_SEGMENT_FINISHED = "DELETE_SEGMENT_FINISHED"


class MetadataRecordError(ValueError):
    """A value this reader cannot decode."""


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
    segment_leader_epochs: tuple[tuple[int, int], ...]  # (epoch, start offset), as written
    segment_size_in_bytes: int
    state: str
    where: str = ""  # "<metadata partition dir> offset N" of the record that set the state


@dataclass
class RemoteLogMetadata:
    """Every remote segment found in the ``__remote_log_metadata`` partitions read."""

    segments: dict[str, RemoteSegmentMetadata] = field(default_factory=dict)  # segment id -> metadata
    orphan_updates: list[tuple[str, str]] = field(default_factory=list)  # (segment id, where)
    undecodable: list[tuple[str, int, str]] = field(default_factory=list)  # (path, offset, why)

    def for_partition(self, topic_id: str, partition: int) -> list[RemoteSegmentMetadata]:
        return [m for m in self.segments.values() if m.topic_id == topic_id and m.partition == partition]


def read_remote_log_metadata(directories: list[Path]) -> RemoteLogMetadata:
    """Fold the records of the given ``__remote_log_metadata-N`` directories, in log order."""
    out = RemoteLogMetadata()
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


def _fold(out: RemoteLogMetadata, value: bytes | None, where: str, path: str, offset: int) -> None:
    if value is None:
        return
    try:
        decoded = decode_value(value)
    except MetadataRecordError as exc:
        out.undecodable.append((path, offset, str(exc)))
        return
    if isinstance(decoded, RemoteSegmentMetadata):
        out.segments[decoded.segment_id] = replace(decoded, where=where)
    elif isinstance(decoded, tuple):
        segment_id, state = decoded
        known = out.segments.get(segment_id)
        if known is None:
            out.orphan_updates.append((segment_id, where))
        else:
            out.segments[segment_id] = replace(known, state=state, where=where)


def decode_value(value: bytes) -> RemoteSegmentMetadata | tuple[str, str] | None:
    """A record value -> segment metadata, ``(segment id, new state)`` for an update, or None
    for the record types verify does not use."""
    reader = _Reader(value)
    frame = reader.uvarint()
    if frame != 1:
        raise MetadataRecordError(f"unknown frame version {frame}")
    api_key, version = reader.uvarint(), reader.uvarint()
    if api_key not in (SEGMENT_METADATA, SEGMENT_UPDATE):
        return None
    if version != 0:
        raise MetadataRecordError(f"unknown version {version} of record type {api_key}")
    topic, topic_id, partition, segment_id = _segment_id(reader)
    if api_key == SEGMENT_UPDATE:
        reader.int32()  # BrokerId
        reader.int64()  # EventTimestampMs
        reader.compact_bytes()  # CustomMetadata
        state = _state(reader.int8())
        reader.tags()
        return segment_id, state
    start, end, broker, max_ts = reader.int64(), reader.int64(), reader.int32(), reader.int64()
    reader.int64()  # EventTimestampMs
    epochs = []
    for _ in range(reader.compact_count()):
        epochs.append((reader.int32(), reader.int64()))
        reader.tags()
    size = reader.int32()
    reader.compact_bytes()  # CustomMetadata
    state = _state(reader.int8())
    reader.tags()
    return RemoteSegmentMetadata(topic, topic_id, partition, segment_id, start, end, broker, max_ts,
                                 tuple(epochs), size, state)


def _segment_id(reader: "_Reader") -> tuple[str, str, int, str]:
    topic = reader.compact_string()
    topic_id = uuid_text(reader.raw(16))
    partition = reader.int32()
    reader.tags()
    segment_id = uuid_text(reader.raw(16))
    reader.tags()
    return topic, topic_id, partition, segment_id


def _state(raw: int) -> str:
    if raw not in STATES:
        raise MetadataRecordError(f"unknown remote log segment state {raw}")
    return STATES[raw]


class _Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.position = 0

    def raw(self, size: int) -> bytes:
        if size < 0 or self.position + size > len(self.data):
            raise MetadataRecordError(f"value ends at byte {len(self.data)}, {size} more bytes expected at "
                                      f"byte {self.position}")
        out = self.data[self.position:self.position + size]
        self.position += size
        return out

    def uvarint(self) -> int:
        value = shift = 0
        for _ in range(5):
            (byte,) = self.raw(1)
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
        raise MetadataRecordError("varint is too long")

    def int8(self) -> int:
        return struct.unpack(">b", self.raw(1))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.raw(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self.raw(8))[0]

    def compact_count(self) -> int:
        count = self.uvarint() - 1
        if count < 0:
            raise MetadataRecordError("null where an array is required")
        return count

    def compact_bytes(self) -> bytes | None:
        size = self.uvarint() - 1
        return None if size < 0 else self.raw(size)

    def compact_string(self) -> str:
        data = self.compact_bytes()
        if data is None:
            raise MetadataRecordError("null where a string is required")
        return data.decode("utf-8", "replace")

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.raw(self.uvarint())  # size, then the field (TxnIndexEmpty: not needed here)
