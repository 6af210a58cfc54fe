"""The ``__remote_log_metadata`` schemas (formats/remote_log_metadata.py) on byte literals commented
field by field: values a real Kafka 4.2.0 broker wrote (kafka-4.2.0/tiered, __remote_log_metadata-0,
offsets 0 and 1), each parsed and written back by the layer's build side, after the 3-byte frame
(frame version 1, api key, version 0)."""

from __future__ import annotations

from seglog_cli.formats import remote_log_metadata as rlm
from tests.coordinator_bytes import hex_bytes as _hex
from tests.coordinator_bytes import round_trip as _round_trip

TOPIC_ID = "3600c58473d84c50b24e07e680ec41d3"  # NgDFhHPYTFCyTgfmgOxB0w
SEGMENT_ID = "cc69a387472c478091bb2dca529ea596"  # zGmjh0csR4CRuy3KUp6llg
SEGMENT_ID_FIELDS = ("07" "746965726564"  # topicIdPartition.name "tiered" (compact: 6 + 1)
                     + TOPIC_ID  # topicIdPartition.id
                     + "00000000" "00"  # topicIdPartition.partition 0, no tags
                     + SEGMENT_ID + "00")  # id, no tags


def _segment_id_value():
    return {"topicIdPartition": {"name": "tiered", "id": bytes.fromhex(TOPIC_ID), "partition": 0,
                                 "tagged_fields": {}},
            "id": bytes.fromhex(SEGMENT_ID), "tagged_fields": {}}


def test_record_types():
    assert {k: (t.name, t.schema.name) for k, t in rlm.RECORD_TYPES.items()} == {
        0: ("REMOTE_LOG_SEGMENT_METADATA_RECORD", "RemoteLogSegmentMetadataRecord"),
        1: ("REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD", "RemoteLogSegmentMetadataUpdateRecord"),
        2: ("REMOTE_PARTITION_DELETE_METADATA_RECORD", "RemotePartitionDeleteMetadataRecord"),
        3: ("REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD", "RemoteLogSegmentMetadataSnapshotRecord")}
    for record_type in rlm.RECORD_TYPES.values():
        assert record_type.schema.is_valid(0) and not record_type.schema.is_valid(1)
        assert record_type.schema.is_flexible(0)


def test_segment_metadata_record():
    # frame 01 00 00 (frame version 1, api key 0, version 0), then:
    data = _hex(SEGMENT_ID_FIELDS,
                "0000000000000000",  # startOffset 0
                "000000000000040f",  # endOffset 1039
                "00000001",  # brokerId 1
                "000001a213711a9d",  # maxTimestampMs 1795622509213
                "000001a2137122f4",  # eventTimestampMs 1795622511348
                "02" "00000000" "0000000000000000" "00",  # segmentLeaderEpochs [{0, 0}]
                "000fd18d",  # segmentSizeInBytes 1036685
                "00",  # customMetadata null (compact bytes: 0)
                "00",  # remoteLogSegmentState 0 COPY_SEGMENT_STARTED
                "01" "00" "01" "01")  # 1 tagged field: tag 0, size 1, txnIndexEmpty true
    value = {"remoteLogSegmentId": _segment_id_value(), "startOffset": 0, "endOffset": 1039, "brokerId": 1,
             "maxTimestampMs": 1795622509213, "eventTimestampMs": 1795622511348,
             "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 0, "tagged_fields": {}}],
             "segmentSizeInBytes": 1036685, "customMetadata": None, "remoteLogSegmentState": 0,
             "tagged_fields": {"txnIndexEmpty": True}}
    parsed = _round_trip(rlm.REMOTE_LOG_SEGMENT_METADATA, data, value)
    assert parsed.tagged_fields["txnIndexEmpty"] is True


def test_segment_metadata_update_record():
    data = _hex(SEGMENT_ID_FIELDS,
                "00000001",  # brokerId 1
                "000001a21371236b",  # eventTimestampMs 1795622511467
                "00",  # customMetadata null
                "01",  # remoteLogSegmentState 1 COPY_SEGMENT_FINISHED
                "00")  # no tags
    value = {"remoteLogSegmentId": _segment_id_value(), "brokerId": 1, "eventTimestampMs": 1795622511467,
             "customMetadata": None, "remoteLogSegmentState": 1, "tagged_fields": {}}
    _round_trip(rlm.REMOTE_LOG_SEGMENT_METADATA_UPDATE, data, value)


def test_partition_delete_and_snapshot_records():
    # not written by a 4.2 broker (nothing calls putRemotePartitionDeleteMetadata; the snapshot is
    # the metadata manager's own file format): encoded from their specs
    data = _hex("07" "746965726564", TOPIC_ID, "00000000" "00",  # topicIdPartition tiered-0
                "00000064",  # brokerId 100
                "0000000000000315",  # eventTimestampMs 789
                "01",  # remotePartitionDeleteState 1 DELETE_PARTITION_STARTED
                "00")
    value = {"topicIdPartition": _segment_id_value()["topicIdPartition"], "brokerId": 100, "eventTimestampMs": 789,
             "remotePartitionDeleteState": 1, "tagged_fields": {}}
    _round_trip(rlm.REMOTE_PARTITION_DELETE_METADATA, data, value)
    data = _hex(SEGMENT_ID,  # segmentId
                "0000000000000000", "000000000000040f",  # startOffset 0, endOffset 1039
                "00000001", "000001a213711a9d", "000001a2137122f4",  # brokerId, maxTimestampMs, eventTimestampMs
                "02" "00000000" "0000000000000000" "00",  # segmentLeaderEpochs [{0, 0}]
                "000fd18d",  # segmentSizeInBytes
                "04" "616263",  # customMetadata "abc" (compact: 3 + 1)
                "01",  # remoteLogSegmentState 1
                "00")  # txnIndexEmpty absent: false
    value = {"segmentId": bytes.fromhex(SEGMENT_ID), "startOffset": 0, "endOffset": 1039, "brokerId": 1,
             "maxTimestampMs": 1795622509213, "eventTimestampMs": 1795622511348,
             "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 0, "tagged_fields": {}}],
             "segmentSizeInBytes": 1036685, "customMetadata": b"abc", "remoteLogSegmentState": 1, "tagged_fields": {}}
    parsed = _round_trip(rlm.REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT, data, value)
    assert parsed.customMetadata == b"abc"
