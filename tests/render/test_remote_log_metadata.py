"""--remote-log-metadata-decoder: the payload text kafka-dump-log 4.2 prints for
``__remote_log_metadata`` records, its error lines, and the JSON Lines fields.

Vectors are encoded field by field from Kafka 4.2's message specs
(storage/src/main/resources/message/RemoteLogSegmentMetadataRecord.json,
RemoteLogSegmentMetadataUpdateRecord.json, RemotePartitionDeleteMetadataRecord.json,
RemoteLogSegmentMetadataSnapshotRecord.json) in the ``AbstractApiMessageSerde`` frame
(server-common/.../serialization/AbstractApiMessageSerde.java); the expected text is the
``toString`` of the objects ``RemoteLogMetadataSerde.deserialize`` builds
(storage/api/.../remote/storage/RemoteLogSegmentMetadata.java, RemoteLogSegmentMetadataUpdate.java,
RemotePartitionDeleteMetadata.java, storage/.../RemoteLogSegmentMetadataSnapshot.java), and the
first one is the case of Kafka's own
storage/src/test/java/org/apache/kafka/server/log/remote/metadata/storage/RemoteLogMetadataFormatterTest.java.
The error messages are those of the transforms' constructors and of the serde (see
seglog_cli/storage/serde/remote_log_metadata.py). The real broker's output
(../shared/corpus/kafka-4.2.0/tiered/golden) is replayed line for line by
tests/commands/test_dump_golden.py; here its JSON Lines are checked against it.
"""

from __future__ import annotations

import base64
import json

import pytest

from seglog_cli.render.remote_log_metadata import remote_log_metadata_fields, remote_log_metadata_parser
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.log.records import Record
from tests.conftest import CORPUS, requires_corpus, run_seglog
from tests.coordinator_bytes import NO_TAGS, carr, cb, cs, i8, i32, i64, tags, uvar

TOPIC_ID_TEXT = "NgDFhHPYTFCyTgfmgOxB0w"
SEGMENT_ID_TEXT = "zGmjh0csR4CRuy3KUp6llg"


def uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


TOPIC_ID, SEGMENT_ID = uuid(TOPIC_ID_TEXT), uuid(SEGMENT_ID_TEXT)
TIP = f"{TOPIC_ID_TEXT}:foo-0"


def frame(api_key: int, body: bytes, version: int = 0, frame_version: int = 1) -> bytes:
    return uvar(frame_version) + uvar(api_key) + uvar(version) + body


def topic_id_partition(topic="foo", topic_id=TOPIC_ID, partition=0) -> bytes:
    return cs(topic) + topic_id + i32(partition) + NO_TAGS


def segment_id(segment=SEGMENT_ID, **tip) -> bytes:
    return topic_id_partition(**tip) + segment + NO_TAGS


def epochs(pairs) -> bytes:
    return carr([i32(epoch) + i64(offset) + NO_TAGS for epoch, offset in pairs])


def segment_metadata(start=0, end=100, broker=1, max_ts=-1, event_ts=123, leader_epochs=((0, 0), (1, 20), (2, 80)),
                     size=1024, custom=None, state=0, txn_empty=None, extra_tags=(), version=0) -> bytes:
    tagged = ([(0, i8(1 if txn_empty else 0))] if txn_empty is not None else []) + list(extra_tags)
    body = (segment_id() + i64(start) + i64(end) + i32(broker) + i64(max_ts) + i64(event_ts) + epochs(leader_epochs)
            + i32(size) + cb(custom) + i8(state) + (tags(*tagged) if tagged else NO_TAGS))
    return frame(0, body, version)


def segment_update(state=1, broker=1, event_ts=456, custom=None) -> bytes:
    return frame(1, segment_id() + i32(broker) + i64(event_ts) + cb(custom) + i8(state) + NO_TAGS)


def partition_delete(state=0, broker=100, event_ts=789) -> bytes:
    return frame(2, topic_id_partition() + i32(broker) + i64(event_ts) + i8(state) + NO_TAGS)


def snapshot(start=0, end=100, leader_epochs=((0, 0),), state=1, custom=None, txn_empty=None) -> bytes:
    tagged = tags((0, i8(1 if txn_empty else 0))) if txn_empty is not None else NO_TAGS
    return frame(3, SEGMENT_ID + i64(start) + i64(end) + i32(1) + i64(-1) + i64(123) + epochs(leader_epochs)
                 + i32(1024) + cb(custom) + i8(state) + tagged)


def payload(value, offset=7):
    key, text = remote_log_metadata_parser(Record(offset, 0, 0, None, value, (), 0, 0))
    assert key is None  # no keys for remote log metadata records
    return text


SEGMENT_ID_TEXT_OF = f"RemoteLogSegmentId{{topicIdPartition={TIP}, id={SEGMENT_ID_TEXT}}}"


def test_segment_metadata_as_the_formatter_test_expects():
    value = segment_metadata(custom=bytes(10), txn_empty=True)
    assert payload(value) == (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEGMENT_ID_TEXT_OF}, startOffset=0, endOffset=100, "
        f"brokerId=1, maxTimestampMs=-1, eventTimestampMs=123, segmentLeaderEpochs={{0=0, 1=20, 2=80}}, "
        f"segmentSizeInBytes=1024, customMetadata=Optional[CustomMetadata{{10 bytes}}], state=COPY_SEGMENT_STARTED, "
        f"txnIdxEmpty=true}}")


def test_segment_metadata_epochs_sorted_and_last_repeat_wins_txn_index_default_false():
    value = segment_metadata(leader_epochs=((5, 60), (2, 10), (5, 70)), state=1)
    assert payload(value) == (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEGMENT_ID_TEXT_OF}, startOffset=0, endOffset=100, "
        f"brokerId=1, maxTimestampMs=-1, eventTimestampMs=123, segmentLeaderEpochs={{2=10, 5=70}}, "
        f"segmentSizeInBytes=1024, customMetadata=Optional.empty, state=COPY_SEGMENT_FINISHED, txnIdxEmpty=false}}")


def test_segment_metadata_of_a_later_version_reads_as_4_2_does():
    # a later Kafka's version 1 with BrokerLeaderEpoch (tag 1): 4.2 reads the version-0 fields and
    # skips the tag it does not know
    later = segment_metadata(txn_empty=True, extra_tags=[(1, i32(4))], version=1)
    assert payload(later) == payload(segment_metadata(txn_empty=True))


def test_segment_update():
    assert payload(segment_update(state=2, custom=b"abc")) == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SEGMENT_ID_TEXT_OF}, "
        f"customMetadata=Optional[CustomMetadata{{3 bytes}}], state=DELETE_SEGMENT_STARTED, eventTimestampMs=456, "
        f"brokerId=1}}")
    assert payload(segment_update(state=3)) == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SEGMENT_ID_TEXT_OF}, customMetadata=Optional.empty, "
        f"state=DELETE_SEGMENT_FINISHED, eventTimestampMs=456, brokerId=1}}")


@pytest.mark.parametrize("state,name", [(0, "DELETE_PARTITION_MARKED"), (1, "DELETE_PARTITION_STARTED"),
                                        (2, "DELETE_PARTITION_FINISHED")])
def test_partition_delete(state, name):
    assert payload(partition_delete(state=state)) == (
        f"RemotePartitionDeleteMetadata{{topicPartition={TIP}, state={name}, eventTimestampMs=789, brokerId=100}}")


def test_snapshot():
    assert payload(snapshot(leader_epochs=((3, 50), (1, 0)), custom=b"\x00\x01", txn_empty=True)) == (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={SEGMENT_ID_TEXT}, startOffset=0, endOffset=100, "
        f"maxTimestampMs=-1, segmentLeaderEpochs={{1=0, 3=50}}, segmentSizeInBytes=1024, "
        f"customMetadata=Optional[CustomMetadata{{2 bytes}}], state=COPY_SEGMENT_FINISHED, txnIdxEmpty=true}}")
    # the snapshot's constructor does not check offsets
    assert payload(snapshot(start=-5, end=-9)).startswith(
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={SEGMENT_ID_TEXT}, startOffset=-5, endOffset=-9, ")


@pytest.mark.parametrize("value,message", [
    # the serde's frame and reader (AbstractApiMessageSerde)
    (frame(4, b""), "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 4"),
    (frame(0, b"", frame_version=0), "Could not deserialize metadata record with frame version 0. Note that "
     "upgrades from the preview release of KRaft in 2.8 to newer versions are not supported."),
    (frame(0, b"", frame_version=2), "Could not deserialize metadata record due to unknown frame version "
     "2(only frame version 1 is supported)"),
    (b"", "Error while reading frame version"),
    (b"\x01\x80", "Error while reading type"),
    (uvar(1) + uvar(0x8000), "Value for type was too large."),
    (segment_metadata()[:40], "Failed to deserialize record with type 0"),
    (segment_update() + b"\x00", "Found 1 byte(s) of garbage after 1"),
    (frame(2, cs(None) + TOPIC_ID + i32(0) + NO_TAGS + i32(1) + i64(1) + i8(0) + NO_TAGS),
     "Failed to deserialize record with type 2"),  # a null topic name
    # the objects' constructors, in the order the transforms meet them
    (segment_metadata(start=-1), "Unexpected start offset = -1. StartOffset for a remote segment cannot be negative"),
    (segment_metadata(start=10, end=9),
     "Unexpected end offset = 9. EndOffset for a remote segment cannot be less than startOffset = 10"),
    (segment_metadata(leader_epochs=()), "segmentLeaderEpochs can not be null or empty"),
    (segment_metadata(leader_epochs=(), state=9), "segmentLeaderEpochs can not be null or empty"),
    (segment_metadata(state=4), "state can not be null"),
    (segment_update(state=-1), "state can not be null"),
    (partition_delete(state=3), "null"),
    (snapshot(state=7, leader_epochs=()), "state can not be null"),
    (snapshot(leader_epochs=()), "segmentLeaderEpochs can not be null or empty"),
])
def test_error_lines(value, message):
    assert payload(value, offset=12) == f"Error at offset 12, skipping. {message}"


def test_null_value_is_the_jvm_null_pointer_message():
    assert payload(None, offset=3) == (
        'Error at offset 3, skipping. Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
        '"org.apache.kafka.common.record.Record.value()" is null')


def test_json_lines_fields():
    fields = remote_log_metadata_fields(Record(0, 0, 0, None, segment_metadata(custom=b"\xff", txn_empty=True), (), 0, 0))
    meta = fields["remoteLogMetadata"]
    assert (meta["type"], meta["apiKey"], meta["version"]) == ("RemoteLogSegmentMetadataRecord", 0, 0)
    assert meta["data"] == {
        "remoteLogSegmentId": {"topicIdPartition": {"name": "foo", "id": TOPIC_ID_TEXT, "partition": 0},
                               "id": SEGMENT_ID_TEXT},
        "startOffset": 0, "endOffset": 100, "brokerId": 1, "maxTimestampMs": -1, "eventTimestampMs": 123,
        "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": 0}, {"leaderEpoch": 1, "offset": 20},
                                {"leaderEpoch": 2, "offset": 80}],
        "segmentSizeInBytes": 1024, "customMetadata": "/w==", "remoteLogSegmentState": 0, "txnIndexEmpty": True}
    assert meta["text"] == payload(segment_metadata(custom=b"\xff", txn_empty=True))
    assert "remoteLogMetadataUnknown" not in fields
    later = remote_log_metadata_fields(Record(0, 0, 0, None, segment_metadata(version=1), (), 0, 0))
    assert later["remoteLogMetadataUnknown"] is True
    assert remote_log_metadata_fields(Record(0, 0, 0, None, frame(9, b""), (), 0, 0)) == {
        "remoteLogMetadataError": "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 9",
        "remoteLogMetadataUnknown": True}
    assert remote_log_metadata_fields(Record(0, 0, 0, None, partition_delete(state=5), (), 0, 0)) == {
        "remoteLogMetadataError": "null", "remoteLogMetadataUnknown": False}


def test_cli_on_a_built_segment(tmp_path):
    values = [segment_metadata(txn_empty=True), segment_update(), partition_delete(), snapshot(), None,
              b"\x01\x00"]
    data = b"".join(build_batch([NewRecord(key=None, value=v, timestamp=1_000)], base_offset=n, producer_id=0,
                                producer_epoch=0, base_sequence=n, partition_leader_epoch=0)
                    for n, v in enumerate(values))
    log = tmp_path / "__remote_log_metadata-0" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(data)
    result = run_seglog("dump", "--remote-log-metadata-decoder", str(log))
    assert result.exit_code == 0
    lines = [line for line in result.out.splitlines() if line.startswith("| ")]
    assert [line.split(" headerKeys: [] ", 1)[1] for line in lines] == [
        "payload: " + payload(v, offset=n) for n, v in enumerate(values)]
    assert lines[4].endswith("payload: Error at offset 4, skipping. Cannot invoke \"java.nio.ByteBuffer.remaining()\" "
                             "because the return value of \"org.apache.kafka.common.record.Record.value()\" is null")
    assert lines[5].endswith("payload: Error at offset 5, skipping. Error while reading version")


@requires_corpus
def test_json_lines_agree_with_the_broker_golden():
    """Every record of the real __remote_log_metadata partitions: the JSON Lines ``text`` is the
    payload kafka-dump-log 4.2 printed, and ``data`` holds the same values."""
    data = CORPUS / "kafka-4.2.0" / "tiered" / "data"
    golden = CORPUS / "kafka-4.2.0" / "tiered" / "golden"
    states = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
              3: "DELETE_SEGMENT_FINISHED"}
    checked = 0
    for partition in range(3):
        rel = f"__remote_log_metadata-{partition}/00000000000000000000.log"
        expected = [line.split(" payload: ", 1)[1]
                    for line in (golden / f"{rel}.remote-log-metadata-decoder.out").read_text().splitlines()
                    if line.startswith("| ")]
        result = run_seglog("dump", "--remote-log-metadata-decoder", "--format", "jsonl", "--files", rel, cwd=data)
        records = [obj for obj in map(json.loads, result.out.splitlines()) if obj["type"] == "record"]
        assert [obj["remoteLogMetadata"]["text"] for obj in records] == expected
        for obj in records:
            meta = obj["remoteLogMetadata"]
            assert f"state={states[meta['data']['remoteLogSegmentState']]}," in meta["text"]
            assert f"id={meta['data']['remoteLogSegmentId']['id']}}}" in meta["text"]
            checked += 1
    assert checked == 8 + 0 + 12
