"""``seglog dump --deep-iteration --format jsonl`` against kafka-python, field for field.

The issue's acceptance check: every batch and record object of the JSON Lines output must equal
what an independent Kafka client library (kafka-python 3.0.12, ``kafka.record.MemoryRecords``)
decodes from the same bytes, for every codec and message format v0/v1/v2. Inputs:

* segments built by kafka-python's own builders (``DefaultRecordBatchBuilder`` for v2,
  ``LegacyRecordBatchBuilder`` for v0/v1), with the fields a broker assigns patched in the way
  a broker does (base offsets, partition leader epoch, LogAppendTime plus the CRC it covers);
* segments built by seglog's builder (control batches, delete horizons, cleaner-empty batches);
* every ``.log`` of the broker-written corpus (skipped, with the reason, if kafka-python could not
  read one; currently it reads them all).

Representation differences that are not disagreements are normalised in one place
(:func:`expected_objects`): kafka-python reports a v0 message's timestamp and timestamp type as
``None`` where Kafka uses ``RecordBatch.NO_TIMESTAMP`` (-1) and ``TimestampType.NO_TIMESTAMP_TYPE``
(id -1) (``LegacyRecord.timestamp()``/``timestampType()``); seglog prints -1 like Kafka. Real
disagreements are tested explicitly at the end, decided by Kafka's Java source.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import zlib
from pathlib import Path

import kafka.codec as kafka_codec
import pytest
from kafka.errors import CorruptRecordError, KafkaError
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32c

from seglog_cli.storage.write.builder import (
    NewRecord,
    build_batch,
    build_end_txn_marker,
    build_legacy_entry,
    build_legacy_wrapper,
)
from tests.conftest import CORPUS, CORPUS_MISSING, run_seglog
from tests.storage.log.test_codecs import Lz4Xxhash, payload

SEGMENT = "00000000000000000000.log"
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
TIMESTAMP_TYPE_NAMES = {None: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
# Kafka's ControlRecordType ids (clients/.../record/ControlRecordType.java)
CONTROL_TYPE_NAMES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                      4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
KRAFT_CONTROL_TYPES = {2, 3, 4, 5, 6}
T0 = 1_700_000_000_000
SNAPPY_MISSING = pytest.mark.skipif(not kafka_codec.has_snappy(),
                                    reason="kafka-python's snappy codec needs python-snappy")


def _codecs(*ids: int) -> list:
    return [pytest.param(c, id=CODEC_NAMES[c], marks=SNAPPY_MISSING if c == 2 else ()) for c in ids]


@pytest.fixture(autouse=True)
def _old_kafka_lz4(monkeypatch):
    """kafka-python's magic-0 LZ4 functions import ``xxhash``; lend them liblz4's XXH32."""
    if kafka_codec.xxhash is None:
        monkeypatch.setattr(kafka_codec, "xxhash", Lz4Xxhash)


# -- the two sides ------------------------------------------------------------------------------

def seglog_dump(log: Path) -> tuple[dict, list[dict]]:
    """The file object and the batch and record objects of ``seglog dump`` for one ``.log`` (no
    other output is allowed but notes on non-consecutive offsets)."""
    result = run_seglog("dump", "--deep-iteration", "--format", "jsonl", "--payload-encoding", "base64",
                        str(log))
    assert result.exit_code == 0, result.err
    lines = result.stdout.rstrip(b"\n")
    objects = json.loads(b"[" + lines.replace(b"\n", b",") + b"]")  # one call: ~30% faster
    file_object = objects[0]
    assert file_object["type"] == "file" and file_object["path"] == str(log)
    assert {o["type"] for o in objects[1:]} <= {"batch", "record", "nonConsecutiveOffsets"}, objects
    return file_object, [o for o in objects if o["type"] in ("batch", "record")]


def seglog_objects(log: Path) -> list[dict]:
    return seglog_dump(log)[1]


def _b64(data) -> str | None:
    return None if data is None else base64.b64encode(bytes(data)).decode("ascii")


def _size(data) -> int:
    return -1 if data is None else len(data)


def expected_objects(data: bytes, log: Path, topic: str | None, partition: int | None) -> list[dict]:
    """What kafka-python decodes from ``data``, in seglog's JSON Lines vocabulary. The topic and
    partition (not something kafka-python decodes) are the ones seglog parsed from the dir name."""
    path = str(log)
    out, position = [], 0
    for batch in MemoryRecords(data):
        # validate_crc must run before iteration (kafka-python swaps in the decompressed buffer)
        if batch.magic >= 2:
            out.append(_v2_batch(batch, path, position))
            shared = _v2_record_fields(batch, _record_context(batch, position, log, topic, partition))
            out.extend(_v2_record(record, batch, shared) for record in batch)
        else:
            out.append(_legacy_batch(batch, path, position))
            shared = _legacy_record_fields(_record_context(batch, position, log, topic, partition))
            out.extend(_legacy_record(record, shared) for record in batch)
        position += batch.size_in_bytes
    return out


def _v2_batch(batch, path, position) -> dict:
    return {
        "type": "batch", "path": path,
        "baseOffset": batch.base_offset, "lastOffset": batch.last_offset, "count": batch.records_count,
        "baseSequence": batch.base_sequence, "lastSequence": batch.last_sequence,
        "producerId": batch.producer_id, "producerEpoch": batch.producer_epoch,
        "partitionLeaderEpoch": batch.leader_epoch, "isTransactional": batch.is_transactional,
        "isControl": batch.is_control_batch,
        # kafka-python predates KIP-534; attribute bit 6 means baseTimestamp is the delete horizon
        "deleteHorizonMs": batch.first_timestamp if batch.attributes & 0x40 else None,
        "position": position, "timestampType": TIMESTAMP_TYPE_NAMES[batch.timestamp_type],
        "maxTimestamp": batch.max_timestamp, "size": batch.size_in_bytes, "magic": batch.magic,
        "compresscodec": CODEC_NAMES[batch.compression_type], "crc": batch.crc,
        "isvalid": batch.size_in_bytes >= 61 and batch.validate_crc(),
    }


def _legacy_batch(batch, path, position) -> dict:
    # LegacyRecordBatch has no public accessor for the wrapper's own timestamp and CRC.
    return {
        "type": "batch", "path": path, "offset": batch.base_offset, "position": position,
        "timestampType": TIMESTAMP_TYPE_NAMES[batch.timestamp_type],
        "maxTimestamp": -1 if batch._timestamp is None else batch._timestamp,  # v0: NO_TIMESTAMP
        "size": batch.size_in_bytes, "magic": batch.magic,
        "compresscodec": CODEC_NAMES[batch.compression_type], "crc": batch._crc,
        "isvalid": batch.validate_crc(),
    }


def _record_context(batch, position, log, topic, partition) -> dict:
    """The fields every record object of ``batch`` shares."""
    return {"type": "record", "topic": topic, "partition": partition,
            "compression": CODEC_NAMES[batch.compression_type], "segment": log.name, "position": position}


def _payload_fields(record) -> dict:
    key, value = record.key, record.value
    return {"offset": record.offset, "key": _b64(key), "value": _b64(value),
            "headers": [{"key": k, "value": _b64(v)} for k, v in record.headers], "encoding": "base64",
            "keySize": _size(key), "valueSize": _size(value)}


def _v2_record_fields(batch, context: dict) -> dict:
    return dict(context, baseOffset=batch.base_offset, producerId=batch.producer_id,
                producerEpoch=batch.producer_epoch, isTransactional=batch.is_transactional,
                isControl=batch.is_control_batch)


def _v2_record(record, batch, shared: dict) -> dict:
    obj = dict(shared)
    obj.update(_payload_fields(record))
    base_sequence = batch.base_sequence
    obj.update(
        timestamp=record.timestamp, timestampType=record.timestamp_type,
        # DefaultRecord.readFrom: baseSequence >= 0 ? incrementSequence(baseSequence, offsetDelta)
        sequence=(batch._increment_sequence(base_sequence, record.offset - batch.base_offset)
                  if base_sequence >= 0 else -1))
    if shared["isControl"]:
        obj["controlType"] = CONTROL_TYPE_NAMES.get(record.type, "UNKNOWN")
        if record.type in (0, 1):  # EndTransactionMarker value: version int16, coordinatorEpoch int32
            obj["coordinatorEpoch"] = struct.unpack_from(">hi", record.value)[1]
    return obj


def _legacy_record_fields(context: dict) -> dict:
    # no producer fields, sequences or headers before v2
    return dict(context, sequence=-1, baseOffset=None, producerId=-1, producerEpoch=-1,
                isTransactional=False, isControl=False)


def _legacy_record(record, shared: dict) -> dict:
    obj = dict(shared)
    obj.update(_payload_fields(record))
    obj.update(
        # v0: kafka-python None, Kafka NO_TIMESTAMP (-1) and NO_TIMESTAMP_TYPE (id -1)
        timestamp=-1 if record.timestamp is None else record.timestamp,
        timestampType=-1 if record.timestamp_type is None else record.timestamp_type,
        crc=record.checksum, isValid=record.validate_crc())
    return obj


def assert_same(log: Path, data: bytes, *, corpus: bool = False) -> list[dict]:
    """seglog's and kafka-python's objects are equal, one by one; returns seglog's."""
    file_object, ours = seglog_dump(log)
    topic, partition = file_object["topic"], file_object["partition"]
    if not corpus:
        assert (topic, partition) == ("topic", 0)
        theirs = expected_objects(data, log, topic, partition)
    else:
        try:
            theirs = expected_objects(data, log, topic, partition)
        except (KafkaError, AssertionError, ValueError, struct.error, RuntimeError) as exc:
            pytest.skip(f"kafka-python 3.0.12 cannot read {_corpus_id(log)}: {type(exc).__name__}: {exc}")
    for index, (mine, expected) in enumerate(zip(ours, theirs)):
        mine = dict(mine)
        control_data = mine.pop("controlData", None)
        if mine.get("controlType") in {CONTROL_TYPE_NAMES[t] for t in KRAFT_CONTROL_TYPES}:
            assert control_data is not None, mine  # seglog parses KRaft values; kafka-python cannot
        assert mine == expected, f"object {index} of {log}"
    assert len(ours) == len(theirs)
    return ours


def write_segment(tmp_path: Path, data: bytes) -> Path:
    log = tmp_path / "topic-0" / SEGMENT
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(data)
    return log


# -- segments written by kafka-python's builders --------------------------------------------

def v2_records(big: bool) -> list[tuple]:
    """(offset delta, timestamp, key, value, headers) for kafka-python's append()."""
    records = [
        (0, T0, b"key-0", b"value " * 40, []),
        (1, T0 + 5, None, b"null key " * 10,
         [("h", b"x"), ("\u00e9t\u00e9 \U0001f600", None), ("empty", b"")]),
        (2, T0 - 100, b"tombstone", None, []),  # earlier than the first: a negative delta
        (3, T0 + 1, b"", b"", [("bin", b"\x00\xff\xed\xa0\x80")]),
        (4, T0 + 2, None, None, []),
        (6, T0 + 3, b"after-a-gap", b"\xed\xa0\x80 not UTF-8 " * 20, []),  # offset 5 is missing
    ]
    if big:  # crosses the 32 KiB snappy chunks and the 64 KiB lz4 blocks
        records.append((7, T0 + 9, b"big", payload(150 * 1024, 1, "mixed"),
                        [("big", payload(40 * 1024, 2))]))
    return records


def kp_v2_batch(records, *, codec: int, base_offset: int, producer=(-1, -1, -1), transactional=False,
                log_append_time: int | None = None, leader_epoch: int = 5) -> bytes:
    producer_id, producer_epoch, base_sequence = producer
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        base_sequence=base_sequence, batch_size=1 << 30)
    for offset_delta, timestamp, key, value, headers in records:
        assert builder.append(offset_delta, timestamp, key, value, headers) is not None
    batch = bytearray(builder.build())
    assert batch[22] & 0x07 == codec  # kafka-python falls back to none when compression does not pay
    # What the broker assigns: offsets and leader epoch in place (not covered by the CRC) ...
    struct.pack_into(">q", batch, 0, base_offset)
    struct.pack_into(">i", batch, 12, leader_epoch)
    if log_append_time is not None:  # ... and, for LogAppendTime topics, the type bit and time
        attributes = struct.unpack_from(">h", batch, 21)[0] | 0x08
        struct.pack_into(">h", batch, 21, attributes)
        struct.pack_into(">q", batch, 35, log_append_time)
        struct.pack_into(">I", batch, 17, calc_crc32c(bytes(batch[21:])))
    return bytes(batch)


def kp_v2_segment(codec: int) -> bytes:
    small, big = v2_records(False), v2_records(True)
    parts = [
        kp_v2_batch(big, codec=codec, base_offset=0),
        # idempotent, with a base sequence that wraps past INT32_MAX inside the batch
        kp_v2_batch(small, codec=codec, base_offset=8, producer=(4000, 3, 2**31 - 3)),
        kp_v2_batch(small, codec=codec, base_offset=15, producer=(4001, 0, 0), transactional=True),
        build_end_txn_marker(commit=True, base_offset=22, producer_id=4001, producer_epoch=0,
                             coordinator_epoch=7, timestamp=T0 + 50, partition_leader_epoch=5),
        kp_v2_batch(small, codec=codec, base_offset=23, producer=(4001, 0, 7), transactional=True),
        build_end_txn_marker(commit=False, base_offset=30, producer_id=4001, producer_epoch=0,
                             coordinator_epoch=8, timestamp=T0 + 60, partition_leader_epoch=5),
        kp_v2_batch(small, codec=codec, base_offset=31, log_append_time=T0 + 99_999),
    ]
    return b"".join(parts)


def legacy_records(magic: int) -> list[tuple]:
    """(timestamp, key, value): null and empty keys and values, a large value."""
    return [
        (T0, b"k0", b"legacy value " * 30),
        (T0 + 1, None, b"null key " * 5),
        (T0 - 10, b"tombstone", None),
        (T0 + 2, b"", b""),
        (T0 + 3, None, None),
        (T0 + 4, b"big", payload(100 * 1024, 3, "mixed") if magic else payload(70 * 1024, 3)),
    ]


def _set_legacy_wrapper(entry: bytearray, *, offset: int, log_append_time: int | None = None) -> bytes:
    """Broker-side fields of a legacy entry: its offset, and for v1 LogAppendTime the attribute
    bit and timestamp (both covered by the message CRC, which is recomputed)."""
    struct.pack_into(">q", entry, 0, offset)
    if log_append_time is not None:
        entry[17] |= 0x08
        struct.pack_into(">q", entry, 18, log_append_time)
        struct.pack_into(">I", entry, 12, zlib.crc32(bytes(entry[16:])))
    return bytes(entry)


def kp_legacy_set(magic: int, codec: int, first_offset: int, records, *, relative: bool) -> bytearray:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i, (timestamp, key, value) in enumerate(records):
        offset = i if relative else first_offset + i
        assert builder.append(offset, timestamp, key, value) is not None
    return bytearray(builder.build())


def kp_legacy_segment(magic: int, codec: int) -> bytes:
    records = legacy_records(magic)
    n = len(records)
    if codec == 0:
        entries = kp_legacy_set(magic, 0, 0, records, relative=False)
        parts = [bytes(entries)]
        if magic == 1:  # a LogAppendTime entry (broker-stamped)
            single = kp_legacy_set(1, 0, n, records[:1], relative=False)
            parts.append(_set_legacy_wrapper(single, offset=n, log_append_time=T0 + 77_777))
        return b"".join(parts)
    # The producer writes wrapper offset 0 (v1 inner offsets relative 0..n-1, v0 absolute);
    # the broker sets the wrapper offset to the last inner absolute offset. The first wrapper is
    # left at 0, as a producer (or some librdkafka versions) sent it.
    relative = magic == 1
    parts = [bytes(kp_legacy_set(magic, codec, 0, records, relative=relative))]
    parts.append(_set_legacy_wrapper(kp_legacy_set(magic, codec, n, records, relative=relative),
                                     offset=2 * n - 1))
    if magic == 1:
        parts.append(_set_legacy_wrapper(kp_legacy_set(1, codec, 2 * n, records, relative=True),
                                         offset=3 * n - 1, log_append_time=T0 + 88_888))
    return b"".join(parts)


@pytest.mark.parametrize("codec", _codecs(0, 1, 2, 3, 4))
def test_kafka_python_v2_segments(tmp_path, codec):
    data = kp_v2_segment(codec)
    ours = assert_same(write_segment(tmp_path, data), data)
    batches = [o for o in ours if o["type"] == "batch"]
    records = [o for o in ours if o["type"] == "record"]
    name = CODEC_NAMES[codec]
    assert [b["compresscodec"] for b in batches] == [name, name, name, "none", name, "none", name]
    assert [r["sequence"] for r in records if r["producerId"] == 4000] == [
        2**31 - 3, 2**31 - 2, 2**31 - 1, 0, 1, 3]  # 31-bit wrap
    assert [r["controlType"] for r in records if r["isControl"]] == ["COMMIT", "ABORT"]
    assert {r["timestamp"] for r in records if r["timestampType"] == 1} == {T0 + 99_999}
    assert len(records) == 7 + 6 * 4 + 2


@pytest.mark.parametrize("codec", _codecs(0, 1, 2, 3))
@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_legacy_segments(tmp_path, magic, codec):
    data = kp_legacy_segment(magic, codec)
    ours = assert_same(write_segment(tmp_path, data), data)
    records = [o for o in ours if o["type"] == "record"]
    batches = [o for o in ours if o["type"] == "batch"]
    assert all(r["isValid"] for r in records) and all(b["isvalid"] for b in batches)
    if codec:
        assert [r["offset"] for r in records] == list(range(len(records)))
        assert {b["compresscodec"] for b in batches} == {CODEC_NAMES[codec]}
    if magic == 0:
        assert {(r["timestamp"], r["timestampType"]) for r in records} == {(-1, -1)}
    else:
        assert {r["timestamp"] for r in records if r["timestampType"] == 1} in ({T0 + 77_777}, {T0 + 88_888})


# -- segments written by seglog's builder -----------------------------------------------------

def seglog_v2_records(big: bool) -> list[NewRecord]:
    records = [
        NewRecord(b"k0", b"value " * 40, timestamp=T0),
        NewRecord(None, b"null key", headers=[("h", b"x"), (b"\xc3\xa9", None), ("empty", b"")],
                  timestamp=T0 + 3),
        NewRecord(b"tombstone", None, timestamp=T0 - 7),
        NewRecord(b"", b"", timestamp=T0 + 1, offset_delta=5),  # a compaction gap
    ]
    if big:
        records.append(NewRecord(b"big", payload(140 * 1024, 4, "mixed"), timestamp=T0 + 8, offset_delta=6))
    return records


def seglog_v2_segment(codec: int) -> bytes:
    return b"".join([
        build_batch(seglog_v2_records(True), base_offset=0, compression=codec, partition_leader_epoch=2),
        build_batch(seglog_v2_records(False), base_offset=7, compression=codec, producer_id=9,
                    producer_epoch=1, base_sequence=2**31 - 2, partition_leader_epoch=2),
        build_batch(seglog_v2_records(False), base_offset=13, compression=codec, timestamp_type=1,
                    log_append_time=T0 + 4242, partition_leader_epoch=2),
        build_batch(seglog_v2_records(False), base_offset=19, compression=codec, producer_id=10,
                    producer_epoch=0, base_sequence=0, transactional=True, partition_leader_epoch=2),
        build_end_txn_marker(commit=True, base_offset=25, producer_id=10, producer_epoch=0,
                             coordinator_epoch=3, timestamp=T0 + 20, partition_leader_epoch=2),
        # cleaner output: a delete horizon, then an empty batch keeping producer metadata
        build_batch(seglog_v2_records(False), base_offset=26, compression=codec,
                    delete_horizon_ms=T0 + 86_400_000, partition_leader_epoch=2),
        build_batch([], base_offset=32, last_offset_delta=4, producer_id=11, producer_epoch=0,
                    base_sequence=5, max_timestamp=T0 + 200, partition_leader_epoch=2),
        # control records Kafka reads leniently: a newer key version (parsed as version 0) and
        # an unknown type (ControlRecordType.UNKNOWN)
        build_batch([NewRecord(struct.pack(">hh", 3, 1), struct.pack(">hi", 0, 12), timestamp=T0 + 300),
                     NewRecord(struct.pack(">hh", 0, 7), b"whatever", timestamp=T0 + 301)],
                    base_offset=37, producer_id=10, producer_epoch=1, transactional=True, control=True,
                    partition_leader_epoch=2),
    ])


@pytest.mark.parametrize("codec", _codecs(0, 1, 2, 3, 4))
def test_seglog_built_v2_segments(tmp_path, codec):
    data = seglog_v2_segment(codec)
    ours = assert_same(write_segment(tmp_path, data), data)
    batches = [o for o in ours if o["type"] == "batch"]
    records = [o for o in ours if o["type"] == "record"]
    assert batches[5]["deleteHorizonMs"] == T0 + 86_400_000 and batches[6]["count"] == 0
    assert len(batches) == 8 and len(records) == 5 + 4 * 4 + 1 + 2
    assert [(r["controlType"], r.get("coordinatorEpoch")) for r in records if r["isControl"]] == [
        ("COMMIT", 3), ("COMMIT", 12), ("UNKNOWN", None)]


def seglog_legacy_segment(magic: int, codec: int) -> bytes:
    records = [NewRecord(b"k%d" % i, payload(3000 + i, i) if i % 2 else None, timestamp=T0 + i)
               for i in range(5)] + [NewRecord(None, payload(80 * 1024, 9, "mixed"), timestamp=T0 + 9)]
    if codec == 0:
        return b"".join(build_legacy_entry(i, r.key, r.value, magic=magic, timestamp=r.timestamp)
                        for i, r in enumerate(records))
    parts = [build_legacy_wrapper(records, last_offset=5, magic=magic, compression=codec)]
    if magic == 1:
        parts.append(build_legacy_wrapper(records, last_offset=11, magic=1, compression=codec,
                                          timestamp_type=1, wrapper_timestamp=T0 + 5555))
    return b"".join(parts)


@pytest.mark.parametrize("codec", _codecs(0, 1, 2, 3))
@pytest.mark.parametrize("magic", [0, 1])
def test_seglog_built_legacy_segments(tmp_path, magic, codec):
    data = seglog_legacy_segment(magic, codec)
    ours = assert_same(write_segment(tmp_path, data), data)
    records = [o for o in ours if o["type"] == "record"]
    assert len(records) == (12 if codec and magic == 1 else 6)
    assert [r["offset"] for r in records] == list(range(len(records)))


# -- the broker-written corpus ----------------------------------------------------------------

def _corpus_logs() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    logs = sorted((CORPUS / "kafka-4.2.0" / "data").glob("*/*.log"))
    logs += sorted((CORPUS / "public").glob("**/*.log"))
    return logs


def _unique_non_empty(logs: list[Path]) -> tuple[list[Path], dict[Path, Path]]:
    """Non-empty logs, one per distinct content (a few public repos hold byte-identical copies
    of a segment), and each skipped copy -> the tested log with the same bytes."""
    first_with: dict[bytes, Path] = {}
    copies: dict[Path, Path] = {}
    for log in logs:
        if log.stat().st_size:
            digest = hashlib.sha256(log.read_bytes()).digest()
            copies.setdefault(log, first_with.setdefault(digest, log))
    tested = list(first_with.values())
    return tested, {copy: original for copy, original in copies.items() if copy != original}


CORPUS_LOGS = _corpus_logs()
NON_EMPTY, DUPLICATES = _unique_non_empty(CORPUS_LOGS)


def _corpus_id(log: Path) -> str:
    return str(log.relative_to(CORPUS))


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING)
@pytest.mark.parametrize("log", NON_EMPTY or [None], ids=_corpus_id if NON_EMPTY else None)
def test_corpus_segment(log):
    ours = assert_same(log, log.read_bytes(), corpus=True)
    assert ours, f"{_corpus_id(log)} is not empty but nothing was decoded"


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING)
def test_corpus_is_covered():
    """The corpus walk above sees both directories, skips only byte-identical copies, and the
    empty segments decode to nothing."""
    assert len(NON_EMPTY) > 250
    assert len(NON_EMPTY) + len(DUPLICATES) == sum(1 for log in CORPUS_LOGS if log.stat().st_size)
    for copy, original in DUPLICATES.items():
        assert copy.read_bytes() == original.read_bytes()
    roots = {log.relative_to(CORPUS).parts[0] for log in NON_EMPTY}
    assert roots == {"kafka-4.2.0", "public"}
    for log in CORPUS_LOGS:
        if log.stat().st_size == 0:
            assert seglog_objects(log) == [] and list(MemoryRecords(b"")) == []


# -- where kafka-python and Kafka disagree (decided by Kafka's Java source) -------------------

def test_non_utf8_header_key_is_replaced_like_java(tmp_path):
    """DefaultRecord.readHeaders decodes a header key with Utils.utf8 (new String(bytes, UTF_8)),
    which replaces malformed input; kafka-python decodes strictly and fails the whole batch."""
    data = build_batch([NewRecord(b"k", b"v", headers=[(b"\xed\xa0\x80key\xff", b"1")], timestamp=T0)])
    (batch_obj, record_obj) = seglog_objects(write_segment(tmp_path, data))
    assert record_obj["headers"] == [{"key": "\ufffdkey\ufffd", "value": _b64(b"1")}]
    (batch,) = list(MemoryRecords(data))
    with pytest.raises(CorruptRecordError, match="invalid record structure"):
        list(batch)


def test_v1_wrapper_offset_below_last_inner_offset_is_invalid(tmp_path):
    """AbstractLegacyRecordBatch.DeepRecordsIterator: a v1 wrapper whose offset is non-zero and
    below its last inner (relative) offset throws InvalidRecordException; kafka-python silently
    keeps the relative offsets (its absolute base would be negative)."""
    records = [NewRecord(b"k", b"v%d" % i, timestamp=T0 + i) for i in range(10)]
    bad = bytearray(build_legacy_wrapper(records, last_offset=9, magic=1))
    struct.pack_into(">q", bad, 0, 5)
    good = build_legacy_wrapper(records[:1], last_offset=20, magic=1)
    log = write_segment(tmp_path, bytes(bad) + good)
    result = run_seglog("dump", "--deep-iteration", "--format", "jsonl", str(log))
    objects = [json.loads(line) for line in result.out.splitlines()]
    assert [o["type"] for o in objects] == ["file", "batch", "error", "batch", "record"]
    assert "Found invalid wrapper offset in compressed v1 message set, wrapper offset '5' is less " \
           "than the last inner message offset '9' and it is not zero." in objects[2]["message"]
    assert objects[4]["offset"] == 20
    kafka_python = [[r.offset for r in batch] for batch in MemoryRecords(bytes(bad) + good)]
    assert kafka_python == [list(range(10)), [20]]


def test_v1_wrapper_offset_zero_keeps_relative_offsets(tmp_path):
    """Both agree on the librdkafka case (wrapper offset 0 => absolute base 0), kafka-python by
    accident: its negative base is ignored."""
    records = [NewRecord(b"k", b"v%d" % i, timestamp=T0 + i) for i in range(4)]
    data = bytearray(build_legacy_wrapper(records, last_offset=3, magic=1))
    struct.pack_into(">q", data, 0, 0)
    ours = assert_same(write_segment(tmp_path, bytes(data)), bytes(data))
    assert [o["offset"] for o in ours if o["type"] == "record"] == [0, 1, 2, 3]


def test_control_record_key_longer_than_4_bytes(tmp_path):
    """ControlRecordType.parseTypeId needs at least 4 key bytes and reads the version and type
    at 0 and 2, ignoring the rest; kafka-python's ControlRecord unpacks exactly 4 bytes and fails."""
    key = struct.pack(">hh", 0, 1) + b"\x00\x2a"
    data = build_batch([NewRecord(key, struct.pack(">hi", 0, 9), timestamp=T0)], producer_id=1,
                       producer_epoch=0, transactional=True, control=True)
    (_, record_obj) = seglog_objects(write_segment(tmp_path, data))
    assert (record_obj["controlType"], record_obj["coordinatorEpoch"]) == ("COMMIT", 9)
    (batch,) = list(MemoryRecords(data))
    with pytest.raises(struct.error):
        list(batch)
