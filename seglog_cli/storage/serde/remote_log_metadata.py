"""Tiered storage's ``__remote_log_metadata`` record values, decoded as Kafka 4.2's
``RemoteLogMetadataSerde.deserialize`` reads them.

:func:`decode_remote_log_metadata` turns one record value into a :class:`RemoteLogMetadata`:
the record type, its version, the fields the generated reader fills (``data``, camelCase names,
in schema order, tagged fields at their default when absent) and the Java object Kafka builds
from them (``RemoteLogSegmentMetadata``, ``RemoteLogSegmentMetadataUpdate``,
``RemotePartitionDeleteMetadata``, ``RemoteLogSegmentMetadataSnapshot``), whose ``toString`` is
what ``kafka-dump-log --remote-log-metadata-decoder`` prints
(:mod:`seglog_cli.render.remote_log_metadata`).

A value Kafka refuses raises :class:`RemoteLogMetadataError` with the message of Kafka's
exception, which kafka-dump-log prints after ``Error at offset <offset>, skipping.``:

- the frame (version, type, version varints), an unknown type, bytes the generated reader
  cannot read and bytes left after the message: ``AbstractApiMessageSerde``'s messages, as for
  the KRaft metadata records (:func:`seglog_cli.storage.serde.metadata_decoder.read_frame`);
- the checks of the objects' constructors, in the order the transforms of
  ``storage/.../remote/metadata/storage/serialization/*Transform.java`` meet them: a negative
  start offset, an end offset below the start, no leader epoch, a state id the state enum does
  not have (``Objects.requireNonNull(state, "state can not be null")``; a partition delete's
  ``requireNonNull`` has no message: Java prints ``null``);
- a null value: the parser calls ``record.value().remaining()`` and the JVM's helpful
  ``NullPointerException`` message is printed.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from construct import ConstructError

from seglog_cli.formats.remote_log_metadata import PARTITION_DELETE_STATES, RECORD_TYPES, SEGMENT_STATES
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.serde.metadata_decoder import (
    UNSUPPORTED_VERSION,
    MetadataRecordError,
    read_frame,
    struct_data,
)

NULL_VALUE = ('Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
              '"org.apache.kafka.common.record.Record.value()" is null')

SEGMENT_METADATA, SEGMENT_METADATA_UPDATE, PARTITION_DELETE_METADATA, SEGMENT_METADATA_SNAPSHOT = 0, 1, 2, 3


class RemoteLogMetadataError(SeglogError):
    """A ``__remote_log_metadata`` value Kafka's serde refuses; ``message`` is Kafka's text;
    ``unknown`` is set for a record type seglog (and Kafka 4.2) does not know."""

    def __init__(self, message: str, *, unknown: bool = False):
        super().__init__(message)
        self.unknown = unknown


@dataclass(frozen=True)
class TopicIdPartition:
    topic_id: str  # Uuid.toString
    topic: str
    partition: int


@dataclass(frozen=True)
class RemoteLogMetadata:
    """One decoded record.

    ``api_key``/``type_name``/``version``/``data``: the record as read (``data`` maps the
    camelCase field names of the message spec to ints, bools, strings, uuids as Kafka's text,
    ``bytes`` and nested dicts/lists). The rest is the Java object Kafka builds from it:
    ``topic_id_partition`` (absent for a snapshot), ``segment_id`` (the segment's uuid text;
    absent for a partition delete), ``state`` (the state enum's name), ``leader_epochs``
    (epoch -> start offset, sorted, the last entry of a repeated epoch winning, as a HashMap put
    does), ``custom_metadata_size`` (None when absent) and ``txn_index_empty``."""

    api_key: int
    type_name: str
    version: int
    data: dict
    state: str
    broker_id: int
    event_timestamp_ms: int
    topic_id_partition: TopicIdPartition | None = None
    segment_id: str | None = None
    start_offset: int | None = None
    end_offset: int | None = None
    max_timestamp_ms: int | None = None
    leader_epochs: tuple = ()
    segment_size_in_bytes: int | None = None
    custom_metadata_size: int | None = None
    txn_index_empty: bool = False
    unknown_version: bool = False


def decode_remote_log_metadata(value: bytes | None) -> RemoteLogMetadata:
    """The record in one ``__remote_log_metadata`` value; raises :class:`RemoteLogMetadataError`."""
    if value is None:
        raise RemoteLogMetadataError(NULL_VALUE)
    stream = io.BytesIO(bytes(value))
    try:
        api_key, version = read_frame(stream)
    except MetadataRecordError as exc:
        raise RemoteLogMetadataError(exc.message) from None
    record_type = RECORD_TYPES.get(api_key)
    if record_type is None:
        raise RemoteLogMetadataError(f"{UNSUPPORTED_VERSION}: Unknown metadata id {api_key}", unknown=True)
    # Kafka's generated readers do not check the top-level version: a version above 0 is read
    # with the fields the spec declares for it (those of version 0 plus unknown tags skipped)
    layout = max(version, 0)
    try:
        parsed = record_type.schema.struct(layout).parse_stream(stream)
    except (ConstructError, IndexError, OverflowError):
        raise RemoteLogMetadataError(f"Failed to deserialize record with type {api_key}") from None
    left = len(stream.getbuffer()) - stream.tell()
    if left > 0:
        raise RemoteLogMetadataError(f"Found {left} byte(s) of garbage after {api_key}")
    data = struct_data(record_type.schema.fields, parsed, layout)
    return _transform(api_key, record_type.name, version, data,
                      unknown_version=not record_type.schema.is_valid(version))


def _topic_id_partition(entry: dict) -> TopicIdPartition:
    return TopicIdPartition(entry["id"], entry["name"], entry["partition"])


def _leader_epochs(entries: list) -> tuple:
    epochs = {}
    for entry in entries:
        epochs[entry["leaderEpoch"]] = entry["offset"]  # HashMap.put: the last one wins
    if not epochs:
        raise RemoteLogMetadataError("segmentLeaderEpochs can not be null or empty")
    return tuple(sorted(epochs.items()))  # TreeMap


def _segment_state(state_id: int) -> str:
    state = SEGMENT_STATES.get(state_id)
    if state is None:  # RemoteLogSegmentState.forId gives null
        raise RemoteLogMetadataError("state can not be null")
    return state


def _custom_size(data: dict) -> int | None:
    custom = data["customMetadata"]
    return None if custom is None else len(custom)


def _transform(api_key: int, type_name: str, version: int, data: dict, *, unknown_version: bool) -> RemoteLogMetadata:
    common = dict(api_key=api_key, type_name=type_name, version=version, data=data, broker_id=data["brokerId"],
                  event_timestamp_ms=data["eventTimestampMs"], unknown_version=unknown_version)
    if api_key == SEGMENT_METADATA:
        # RemoteLogSegmentMetadataTransform: a RemoteLogSegmentMetadata (state COPY_SEGMENT_STARTED)
        # checked by its constructor, then the record's state applied as an update
        start, end = data["startOffset"], data["endOffset"]
        if start < 0:
            raise RemoteLogMetadataError(f"Unexpected start offset = {start}. StartOffset for a remote segment "
                                         f"cannot be negative")
        if end < start:
            raise RemoteLogMetadataError(f"Unexpected end offset = {end}. EndOffset for a remote segment cannot "
                                         f"be less than startOffset = {start}")
        epochs = _leader_epochs(data["segmentLeaderEpochs"])
        segment_id = data["remoteLogSegmentId"]
        return RemoteLogMetadata(
            **common, state=_segment_state(data["remoteLogSegmentState"]),
            topic_id_partition=_topic_id_partition(segment_id["topicIdPartition"]), segment_id=segment_id["id"],
            start_offset=start, end_offset=end, max_timestamp_ms=data["maxTimestampMs"], leader_epochs=epochs,
            segment_size_in_bytes=data["segmentSizeInBytes"], custom_metadata_size=_custom_size(data),
            txn_index_empty=data.get("txnIndexEmpty", False))
    if api_key == SEGMENT_METADATA_UPDATE:
        segment_id = data["remoteLogSegmentId"]
        return RemoteLogMetadata(
            **common, state=_segment_state(data["remoteLogSegmentState"]),
            topic_id_partition=_topic_id_partition(segment_id["topicIdPartition"]), segment_id=segment_id["id"],
            custom_metadata_size=_custom_size(data))
    if api_key == PARTITION_DELETE_METADATA:
        state = PARTITION_DELETE_STATES.get(data["remotePartitionDeleteState"])
        if state is None:  # Objects.requireNonNull(state) without a message
            raise RemoteLogMetadataError("null")
        return RemoteLogMetadata(**common, state=state,
                                 topic_id_partition=_topic_id_partition(data["topicIdPartition"]))
    # RemoteLogSegmentMetadataSnapshot: state checked before the epochs; no offset checks
    state = _segment_state(data["remoteLogSegmentState"])
    return RemoteLogMetadata(
        **common, state=state, segment_id=data["segmentId"], start_offset=data["startOffset"],
        end_offset=data["endOffset"], max_timestamp_ms=data["maxTimestampMs"],
        leader_epochs=_leader_epochs(data["segmentLeaderEpochs"]), segment_size_in_bytes=data["segmentSizeInBytes"],
        custom_metadata_size=_custom_size(data), txn_index_empty=data.get("txnIndexEmpty", False))


__all__ = ["NULL_VALUE", "RemoteLogMetadata", "RemoteLogMetadataError", "TopicIdPartition",
           "decode_remote_log_metadata"]
