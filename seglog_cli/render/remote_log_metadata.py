"""``--remote-log-metadata-decoder``: ``__remote_log_metadata`` records as kafka-dump-log prints them.

Kafka 4.2's ``DumpLogSegments.RemoteMetadataLogMessageParser`` prints no key and, as the payload,
``RemoteLogMetadataSerde.deserialize(value).toString()``: the ``toString`` of the object the
record becomes (``storage/api/.../remote/storage/RemoteLogSegmentMetadata.java`` and its
siblings, ``RemoteLogSegmentMetadataSnapshot.java``)::

    RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=<topic id>:<topic>-<partition>,
      id=<segment id>}, startOffset=.., endOffset=.., brokerId=.., maxTimestampMs=.., eventTimestampMs=..,
      segmentLeaderEpochs={<epoch>=<offset>, ..}, segmentSizeInBytes=.., customMetadata=Optional.empty
      | Optional[CustomMetadata{<n> bytes}], state=<state>, txnIdxEmpty=<bool>}
    RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=.., customMetadata=.., state=.., eventTimestampMs=.., brokerId=..}
    RemotePartitionDeleteMetadata{topicPartition=<topic id>:<topic>-<partition>, state=.., eventTimestampMs=.., brokerId=..}
    RemoteLogSegmentMetadataSnapshot{segmentId=.., startOffset=.., endOffset=.., maxTimestampMs=..,
      segmentLeaderEpochs=.., segmentSizeInBytes=.., customMetadata=.., state=.., txnIdxEmpty=..}

(each on one line). A value Kafka cannot read prints ``Error at offset <offset>, skipping.
<message>`` in its place (:mod:`seglog_cli.storage.serde.remote_log_metadata` has the messages).
"""

from __future__ import annotations

import base64

from seglog_cli.storage.serde.remote_log_metadata import (
    PARTITION_DELETE_METADATA,
    SEGMENT_METADATA,
    SEGMENT_METADATA_UPDATE,
    RemoteLogMetadata,
    RemoteLogMetadataError,
    decode_remote_log_metadata,
)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _custom(metadata: RemoteLogMetadata) -> str:
    if metadata.custom_metadata_size is None:
        return "Optional.empty"
    return f"Optional[CustomMetadata{{{metadata.custom_metadata_size} bytes}}]"


def _epochs(metadata: RemoteLogMetadata) -> str:
    return "{" + ", ".join(f"{epoch}={offset}" for epoch, offset in metadata.leader_epochs) + "}"


def _topic_id_partition(metadata: RemoteLogMetadata) -> str:
    tip = metadata.topic_id_partition
    return f"{tip.topic_id}:{tip.topic}-{tip.partition}"


def _segment_id(metadata: RemoteLogMetadata) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(metadata)}, id={metadata.segment_id}}}"


def remote_log_metadata_text(metadata: RemoteLogMetadata) -> str:
    """The ``toString`` of the object Kafka builds from the record."""
    if metadata.api_key == SEGMENT_METADATA:
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(metadata)}, "
                f"startOffset={metadata.start_offset}, endOffset={metadata.end_offset}, "
                f"brokerId={metadata.broker_id}, maxTimestampMs={metadata.max_timestamp_ms}, "
                f"eventTimestampMs={metadata.event_timestamp_ms}, segmentLeaderEpochs={_epochs(metadata)}, "
                f"segmentSizeInBytes={metadata.segment_size_in_bytes}, customMetadata={_custom(metadata)}, "
                f"state={metadata.state}, txnIdxEmpty={_bool(metadata.txn_index_empty)}}}")
    if metadata.api_key == SEGMENT_METADATA_UPDATE:
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(metadata)}, "
                f"customMetadata={_custom(metadata)}, state={metadata.state}, "
                f"eventTimestampMs={metadata.event_timestamp_ms}, brokerId={metadata.broker_id}}}")
    if metadata.api_key == PARTITION_DELETE_METADATA:
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_topic_id_partition(metadata)}, "
                f"state={metadata.state}, eventTimestampMs={metadata.event_timestamp_ms}, "
                f"brokerId={metadata.broker_id}}}")
    return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={metadata.segment_id}, "
            f"startOffset={metadata.start_offset}, endOffset={metadata.end_offset}, "
            f"maxTimestampMs={metadata.max_timestamp_ms}, segmentLeaderEpochs={_epochs(metadata)}, "
            f"segmentSizeInBytes={metadata.segment_size_in_bytes}, customMetadata={_custom(metadata)}, "
            f"state={metadata.state}, txnIdxEmpty={_bool(metadata.txn_index_empty)}}}")


def remote_log_metadata_parser(record) -> tuple[str | None, str | None]:
    """Kafka's ``RemoteMetadataLogMessageParser.parse``: (no key, the payload text)."""
    try:
        return None, remote_log_metadata_text(decode_remote_log_metadata(record.value))
    except RemoteLogMetadataError as exc:
        return None, f"Error at offset {record.offset}, skipping. {exc.message}"


def _json_data(value):
    if isinstance(value, dict):
        return {name: _json_data(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_json_data(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def remote_log_metadata_fields(record) -> dict:
    """JSON Lines: the fields a record object gains under ``--remote-log-metadata-decoder``:
    ``remoteLogMetadata`` ({type, apiKey, version, data, text}: ``type`` the record's message
    name, ``data`` its fields as read (camelCase, custom metadata as base64), ``text`` Kafka's
    payload line) or ``remoteLogMetadataError`` (Kafka's message) with
    ``remoteLogMetadataUnknown`` (true for a record type Kafka 4.2 does not know); beside a
    ``remoteLogMetadata``, ``remoteLogMetadataUnknown`` is true when the version is above 4.2's."""
    try:
        decoded = decode_remote_log_metadata(record.value)
    except RemoteLogMetadataError as exc:
        return {"remoteLogMetadataError": exc.message, "remoteLogMetadataUnknown": exc.unknown}
    from seglog_cli.formats.remote_log_metadata import RECORD_TYPES

    fields = {"remoteLogMetadata": {"type": RECORD_TYPES[decoded.api_key].schema.name, "apiKey": decoded.api_key,
                                    "version": decoded.version, "data": _json_data(decoded.data),
                                    "text": remote_log_metadata_text(decoded)}}
    if decoded.unknown_version:
        fields["remoteLogMetadataUnknown"] = True
    return fields


__all__ = ["remote_log_metadata_fields", "remote_log_metadata_parser", "remote_log_metadata_text"]
