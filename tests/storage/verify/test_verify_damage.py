"""Damage matrix for ``seglog verify``: broker-written files damaged at chosen bytes, and the
exact findings the engine must report for each damage, no more.

Each case copies a corpus directory (or the seglog-written partition below) into ``tmp_path``,
damages one file and verifies the copy at both levels. ``expect`` lists (file name, code,
severity, position) of EVERY finding of severity warning or error (a multiset: extra or missing
ones fail), plus the info findings the case cares about; ``deep`` replaces it at
``level="deep"`` when the records add something. Every case runs in both engines (compiled and
pure Python) and the two must report identical findings.

A case the engine gets wrong may be marked a strict xfail (``xfail=``, per engine or both) whose
reason says what the engine reports instead; the engine is what should change, not the table.
"""

from __future__ import annotations

import os
import random
import shutil
import stat
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from crc32c import crc32c

from seglog_cli.storage.log import native
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.write.builder import NewRecord, build_batch
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.findings import Code, Severity
from seglog_cli.storage.verify.verify import CLEAN, VerifyOptions, verify
from seglog_cli.storage.write.writer import PartitionWriter, SegmentConfig
from tests.conftest import restore_preallocated

E, W, I = "error", "warning", "info"
LEVELS = ("shallow", "deep")

# -- where the damage goes -------------------------------------------------------------------------
# kafka-4.2.0/data/plain-0: segments 0, 2071, 4138 (rolled) and 6225 (active), 335 batches.
R = "00000000000000002071.log"  # rolled, 1044401 bytes, 113 batches, offsets 2071..4137
R_IDX, R_TIX = "00000000000000002071.index", "00000000000000002071.timeindex"
B = 492148  # R's batch 50: offsets 3048..3062, 6893 bytes (size field 6881), leader epoch 0
NEXT = 499041  # R's batch 51: offsets 3063..3084, 12332 bytes
R_LAST, R_END = 1032434, 1044401  # R's last batch (offsets 4115..4137) and its end
A = "00000000000000006225.log"  # the active segment, 252485 bytes, 29 batches, offsets 6225..6728
A_MID, A_LAST, A_END = 141905, 245919, 252485  # A's batch 14 (offset 6496..), last batch (6714..6728)
SNAP = "00000000000000006729.snapshot"  # written at the log end offset by the clean shutdown
IDX45 = 360  # R_IDX entry 45: (relative 991 -> offset 3062, position B)
TIX20, TIX21, TIX_LAST = 240, 252, 1200  # R_TIX entries 20, 21 and 100 (the last)
TXN_LOG, TXN_IDX = "00000000000000000000.log", "00000000000000000000.txnindex"
ABORT = 2323  # txn-0: the ABORT marker at offset 23 (78 bytes), of the first .txnindex entry
LOG0 = "00000000000000000000.log"  # the legacy partitions' only segment
V0 = 169797  # numbers-0: a v0 message at offset 5697 (30 bytes)
V0_GZ = 75202  # hamlet-gzip-0: a v0 gzip wrapper, inner offsets up to 3047 (6224 bytes)
V1 = 4355  # foo-0: a v1 message at offset 102 (43 bytes)

DATA, PUBLIC = "kafka-4.2.0/data", "public"
RECOVERY = "kafka-4.2.0/recovery-cases"


@dataclass(frozen=True)
class Source:
    path: str | None  # corpus sub-directory (None: the seglog-written partition)
    batches: int  # in the untouched copy
    empty_indexes: bool = False  # the repository did not commit them: give the segment empty ones
    damaged: bool = False  # a recovery case's "before": not clean to start with


SOURCES = {
    "plain": Source(f"{DATA}/plain-0", 335),
    "txn": Source(f"{DATA}/txn-0", 98),
    "idem": Source(f"{DATA}/idem-0", 197),
    "logdir": Source(DATA, 1536),
    "v0": Source(f"{PUBLIC}/asayers__kafkalite/tests/test-data/fs-data/numbers-0", 11394, True),
    "v0gz": Source(f"{PUBLIC}/asayers__kafkalite/tests/test-data/fs-data/hamlet-gzip-0", 22, True),
    "v1": Source(f"{PUBLIC}/xpxwo100__bullShit/tmp/kafka-logs/foo-0", 204, True),
    "gen": Source(None, 13),
    "recovery-a": Source(f"{RECOVERY}/a-append-garbage-active-log/before/plain-0", 596, damaged=True),
    "recovery-c": Source(f"{RECOVERY}/c-delete-oldest-index/before/plain-0", 596, damaged=True),
}

# The seglog-written partition: one rolled segment per codec (base offsets 0, 15, 30, 45), each an
# uncompressed batch, a compressed one at GEN_AT and an uncompressed one; then an active segment.
GEN_CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _gen_batch(offset: int, codec: int) -> bytes:
    records = [NewRecord(key=b"k%d" % i, value=b"value %04d " % (offset + i) * 20,
                         timestamp=1_700_000_000_000 + offset + i) for i in range(5)]
    return build_batch(records, base_offset=offset, compression=codec, partition_leader_epoch=0)


GEN_AT = len(_gen_batch(0, 0))


def _gen_segment(codec: int) -> str:
    return f"{15 * (codec - 1):020d}.log"


def build_generated(directory: Path) -> None:
    writer = PartitionWriter(directory, SegmentConfig(index_interval_bytes=100))
    offset = 0
    for codec in [*GEN_CODECS.values(), None]:
        if offset:
            writer.roll(offset)
        for batch_codec in ((0, codec, 0) if codec else (0,)):
            writer.append(_gen_batch(offset, batch_codec))
            offset += 5
    writer.close()


# -- damage ------------------------------------------------------------------------------------
Mutation = Callable[[Path], None]


def put(pos: int, data: bytes) -> Mutation:
    def mutate(path):
        with open(path, "r+b") as f:
            f.seek(pos)
            f.write(data)
    return mutate


def xor(pos: int, mask: int = 0xFF) -> Mutation:
    def mutate(path):
        put(pos, bytes([path.read_bytes()[pos] ^ mask]))(path)
    return mutate


def i32(pos: int, value: int) -> Mutation:
    return put(pos, struct.pack(">i", value))


def i64(pos: int, value: int) -> Mutation:
    return put(pos, struct.pack(">q", value))


def add_i64(pos: int, delta: int) -> Mutation:
    def mutate(path):
        i64(pos, struct.unpack_from(">q", path.read_bytes(), pos)[0] + delta)(path)
    return mutate


def truncate(size: int) -> Mutation:
    return lambda path: os.truncate(path, size)


def append(data: bytes) -> Mutation:
    def mutate(path):
        with open(path, "ab") as f:
            f.write(data)
    return mutate


def zero_from(pos: int) -> Mutation:
    return lambda path: put(pos, bytes(path.stat().st_size - pos))(path)


def randomize(pos: int, count: int, seed: int) -> Mutation:
    return put(pos, random.Random(seed).randbytes(count))


def swap(entry: int, width: int) -> Mutation:
    """Swap index entries ``entry`` and ``entry + 1``."""
    def mutate(path):
        data = path.read_bytes()
        a, b = data[entry * width:(entry + 1) * width], data[(entry + 1) * width:(entry + 2) * width]
        put(entry * width, b + a)(path)
    return mutate


def drop_entry(entry: int, width: int) -> Mutation:
    def mutate(path):
        data = path.read_bytes()
        path.write_bytes(data[:entry * width] + data[(entry + 1) * width:])
    return mutate


def delete(path: Path) -> None:
    path.unlink()


def copy_of(name: str) -> Mutation:
    return lambda path: path.write_bytes((path.parent / name).read_bytes())


def replace(old: str, new: str) -> Mutation:
    def mutate(path):
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))
    return mutate


def fix_crc(pos: int) -> Mutation:
    """Give the v2 batch at ``pos`` the CRC-32C of its (damaged) bytes 21..end."""
    def mutate(path):
        data = path.read_bytes()
        end = pos + 12 + struct.unpack_from(">i", data, pos + 8)[0]
        put(pos + 17, struct.pack(">I", crc32c(data[pos + 21:end])))(path)
    return mutate


def fix_legacy_crc(pos: int) -> Mutation:
    """Give the v0/v1 entry at ``pos`` the CRC-32 of its (damaged) bytes 16..end."""
    def mutate(path):
        data = path.read_bytes()
        end = pos + 12 + struct.unpack_from(">i", data, pos + 8)[0]
        put(pos + 12, struct.pack(">I", zlib.crc32(data[pos + 16:end])))(path)
    return mutate


def sibling(name: str, text: str) -> Mutation:
    """Write ``text`` into the file ``name`` beside the damaged one."""
    def mutate(path):
        (path.parent / name).write_text(text)
    return mutate


def then(*mutations: Mutation) -> Mutation:
    def mutate(path):
        for mutation in mutations:
            mutation(path)
    return mutate


# -- the matrix --------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    source: str
    file: str  # the damaged file, relative to the copy
    mutate: Mutation | None
    expect: list[tuple]  # (file name, code, severity, position): every warning/error, listed infos
    deep: list[tuple] | None = None  # at level="deep", when it differs from expect
    batches: int | None = None  # report summary batches (default: the source's)
    lengths: dict = field(default_factory=dict)  # (code, position) -> length
    xfail: str | dict | None = None  # reason (both engines) or {engine: reason}


def crc(position: int, file: str = R) -> tuple:
    return (file, Code.BATCH_CRC_MISMATCH, E, position)


OOO, LEPOCH, MAGIC = Code.OFFSET_OUT_OF_ORDER, Code.LEADER_EPOCH_OUT_OF_ORDER, Code.UNKNOWN_MAGIC
REGION, SIZE_MISMATCH = Code.CORRUPT_REGION, Code.BATCH_SIZE_MISMATCH
TORN, ZEROS, GARBAGE = Code.TORN_TAIL, Code.ZERO_FILLED_TAIL, Code.TRAILING_GARBAGE
NOT_START, IDX_OFFSET = Code.INDEX_ENTRY_NOT_BATCH_START, Code.INDEX_OFFSET_MISMATCH
TIX_MISMATCH = Code.TIME_INDEX_MISMATCH
SNAP_PAST = (SNAP, Code.SNAPSHOT_PAST_LOG_END, W, None)


CASES = [
    # v2 header fields of a batch in the middle of a rolled segment
    Case("base-offset-msb", "plain", R, xor(B), [(R, OOO, E, B)]),
    Case("base-offset-down-128", "plain", R, xor(B + 7, 0x80), [(R, OOO, E, B)]),
    Case("base-offset-up-256", "plain", R, xor(B + 6, 0x01), [(R, OOO, E, B)]),
    Case("base-offset-up-1", "plain", R, xor(B + 7, 0x01), [(R, OOO, E, B)]),
    Case("first-batch-below-base", "plain", R, i64(0, 2070), [(R, Code.SEGMENT_BASE_MISMATCH, E, 0)]),
    Case("first-batch-far-below-base", "plain", R, i64(0, 2000), [(R, Code.SEGMENT_BASE_MISMATCH, E, 0)]),
    Case("batch-length-msb", "plain", R, xor(B + 8), [(R, REGION, E, B)], batches=334, lengths={(REGION, B): 6893}),
    Case("batch-length-negative", "plain", R, i32(B + 8, -1), [(R, REGION, E, B)], batches=334),
    Case("batch-length-13", "plain", R, i32(B + 8, 13), [(R, REGION, E, B)], batches=334),
    # a wrong size field whose batch's CRC matches up to the next valid batch: only the size is damaged
    Case("batch-length-plus-256", "plain", R, xor(B + 10, 0x01), [(R, SIZE_MISMATCH, E, B)],
         lengths={(SIZE_MISMATCH, B): 6893}),
    Case("batch-length-plus-65536", "plain", R, xor(B + 9, 0x01), [(R, SIZE_MISMATCH, E, B)]),
    Case("batch-length-minus-128", "plain", R, xor(B + 11, 0x80), [(R, SIZE_MISMATCH, E, B)],
         lengths={(SIZE_MISMATCH, B): 6893}),
    Case("batch-length-covers-next-batch", "plain", R, i32(B + 8, 6881 + 12332), [(R, SIZE_MISMATCH, E, B)]),
    # the size field and a body byte: the CRC fails whatever the size, the next batch is found all the same
    Case("batch-length-and-body", "plain", R, then(xor(B + 10, 0x01), xor(B + 100)), [crc(B), (R, SIZE_MISMATCH, E, B)],
         lengths={(SIZE_MISMATCH, B): 6893}),
    Case("leader-epoch-negative", "plain", R, xor(B + 12), [(R, LEPOCH, E, B)]),
    Case("leader-epoch-raised", "plain", R, xor(B + 15, 0x01), [(R, LEPOCH, E, B)]),
    Case("magic-3", "plain", R, xor(B + 16, 0x01), [(R, MAGIC, E, B)]),
    Case("magic-negative", "plain", R, xor(B + 16, 0x80), [(R, MAGIC, E, B)]),
    Case("magic-0", "plain", R, put(B + 16, b"\0"), [crc(B)]),
    Case("magic-1", "plain", R, put(B + 16, b"\1"), [crc(B)]),
    Case("crc-msb", "plain", R, xor(B + 17), [crc(B)]),
    Case("crc-lsb-bit", "plain", R, xor(B + 20, 0x01), [crc(B)]),
    Case("attributes-gzip-bit", "plain", R, xor(B + 22, 0x01), [crc(B)]),
    Case("attributes-codec-7", "plain", R, xor(B + 22, 0x07), [crc(B)]),
    Case("last-offset-delta", "plain", R, xor(B + 26, 0x01), [crc(B)]),
    Case("base-timestamp", "plain", R, xor(B + 34, 0x01), [crc(B)]),
    Case("max-timestamp", "plain", R, xor(B + 42, 0x01), [crc(B)]),
    Case("producer-id", "plain", R, xor(B + 43), [crc(B)]),
    Case("producer-epoch", "plain", R, xor(B + 51), [crc(B)]),
    Case("base-sequence", "plain", R, xor(B + 53), [crc(B)]),
    Case("records-count", "plain", R, xor(B + 60, 0x01), [crc(B)]),
    Case("first-record-byte", "plain", R, xor(B + 61), [crc(B)]),
    Case("last-record-byte", "plain", R, xor(B + 6892, 0x01), [crc(B)]),
    # damage over several batches
    Case("5000-random-bytes-across-two-batches", "plain", R, randomize(400000, 5000, 400000),
         [crc(393022), (R, REGION, E, 404931)], batches=334, lengths={(REGION, 404931): 5248}),
    Case("5000-random-bytes-from-batch-start", "plain", R, randomize(B, 5000, B), [(R, REGION, E, B)], batches=334),
    Case("20000-random-bytes-over-three-batches", "plain", R, randomize(B, 20000, 1), [(R, REGION, E, B)],
         batches=332, lengths={(REGION, B): 29565}),
    # truncations and tails
    # nothing in the .log tells, but the time index still names the lost batch: a warning, as the
    # active segment is what a crash truncates (the index has no entry for that batch)
    Case("active-truncated-at-batch-boundary", "plain", A, truncate(A_LAST),
         [SNAP_PAST, ("00000000000000006225.timeindex", Code.TIME_INDEX_OFFSET_NOT_FOUND, W, 288)], batches=334),
    Case("active-torn-in-header-before-magic", "plain", A, truncate(A_LAST + 12), [(A, TORN, W, A_LAST), SNAP_PAST],
         batches=334, lengths={(TORN, A_LAST): 12}),
    Case("active-torn-in-header-after-magic", "plain", A, truncate(A_LAST + 40), [(A, TORN, W, A_LAST), SNAP_PAST],
         batches=334),
    Case("active-torn-in-records", "plain", A, truncate(A_LAST + 200), [(A, TORN, W, A_LAST), SNAP_PAST], batches=334),
    Case("active-torn-last-byte", "plain", A, truncate(A_END - 1), [(A, TORN, W, A_LAST), SNAP_PAST], batches=334),
    Case("active-torn-mid-file", "plain", A, truncate(A_MID + 200), [(A, TORN, W, A_MID), SNAP_PAST], batches=320),
    Case("rolled-torn-in-header", "plain", R, truncate(R_LAST + 12), [(R, TORN, E, R_LAST)], batches=334),
    Case("rolled-torn-in-records", "plain", R, truncate(R_LAST + 200), [(R, TORN, E, R_LAST)], batches=334),
    Case("active-zeros-appended", "plain", A, append(bytes(1000)), [(A, ZEROS, W, A_END)],
         lengths={(ZEROS, A_END): 1000}),
    Case("active-last-batch-zeroed", "plain", A, zero_from(A_LAST), [(A, ZEROS, W, A_LAST), SNAP_PAST], batches=334),
    Case("rolled-last-batch-zeroed", "plain", R, zero_from(R_LAST), [(R, ZEROS, E, R_LAST)], batches=334),
    Case("active-garbage-appended", "plain", A, append(random.Random(42).randbytes(100)), [(A, GARBAGE, W, A_END)]),
    Case("rolled-garbage-appended", "plain", R, append(random.Random(42).randbytes(100)), [(R, GARBAGE, E, R_END)]),
    Case("broker-case-a-garbage-after-active-log", "recovery-a", "00000000000000008203.log", None,
         [("00000000000000008203.log", GARBAGE, W, 399586)], lengths={(GARBAGE, 399586): 100}),
    Case("broker-case-c-oldest-index-deleted", "recovery-c", LOG0, None,
         [("00000000000000000000.index", Code.INDEX_MISSING, W, None)]),
    # .index (8-byte entries) and .timeindex (12-byte entries) of the rolled segment
    Case("index-position-plus-1", "plain", R_IDX, i32(IDX45 + 4, B + 1), [(R_IDX, NOT_START, E, IDX45)]),
    Case("index-position-minus-1", "plain", R_IDX, i32(IDX45 + 4, B - 1), [(R_IDX, NOT_START, E, IDX45)]),
    Case("index-position-plus-65536", "plain", R_IDX, xor(117, 0x01), [(R_IDX, NOT_START, E, 112)]),
    Case("index-offset-plus-1", "plain", R_IDX, i32(IDX45, 992), [(R_IDX, IDX_OFFSET, E, IDX45)]),
    Case("index-offset-minus-1", "plain", R_IDX, i32(IDX45, 990), [(R_IDX, IDX_OFFSET, E, IDX45)]),
    # out of order with its neighbour; of the two suspects, the log says which one is wrong
    Case("index-offset-equals-previous", "plain", R_IDX, i32(IDX45, 976), [(R_IDX, IDX_OFFSET, E, IDX45)]),
    Case("index-offset-above-next", "plain", R_IDX, i32(IDX45, 1991), [(R_IDX, IDX_OFFSET, E, IDX45)]),
    Case("index-last-entry-past-log-end", "plain", R_IDX, i32(800 + 4, R_END + 10),
         [(R_IDX, Code.INDEX_ENTRY_PAST_LOG_END, E, 800)]),
    Case("index-entry-past-log-end", "plain", R_IDX, i32(IDX45 + 4, R_END + 10),
         [(R_IDX, Code.INDEX_ENTRY_PAST_LOG_END, E, IDX45)]),
    Case("index-entries-swapped", "plain", R_IDX, swap(45, 8), [(R_IDX, Code.INDEX_NOT_INCREASING, E, IDX45 + 8)]),
    Case("index-cut-mid-entry", "plain", R_IDX, truncate(IDX45 + 5), [(R_IDX, Code.INDEX_SANITY_FAILED, E, None)]),
    Case("index-deleted", "plain", R_IDX, delete, [(R_IDX, Code.INDEX_MISSING, W, None)]),
    Case("orphan-index", "plain", "00000000000000009999.index", copy_of(R_IDX),
         [("00000000000000009999.index", Code.ORPHAN_INDEX, W, None)]),
    Case("timeindex-entries-swapped", "plain", R_TIX, swap(20, 12), [(R_TIX, Code.TIME_INDEX_OUT_OF_ORDER, E, TIX21)]),
    Case("timeindex-timestamp-plus-1", "plain", R_TIX, add_i64(TIX20, 1), [(R_TIX, TIX_MISMATCH, E, TIX20)]),
    Case("timeindex-timestamp-minus-1", "plain", R_TIX, add_i64(TIX20, -1), [(R_TIX, TIX_MISMATCH, E, TIX20)]),
    # the last entry (...6778) lowered just above the one before (...6760): still increasing, but
    # it no longer matches its batch, and time retention reads a timestamp below the segment's max
    Case("timeindex-last-entry-lowered", "plain", R_TIX, i64(TIX_LAST, 1795346886761),
         [(R_TIX, TIX_MISMATCH, E, TIX_LAST), (R_TIX, Code.TIME_INDEX_LAST_ENTRY_STALE, W, None)]),
    Case("timeindex-deleted", "plain", R_TIX, delete, [(R_TIX, Code.TIME_INDEX_MISSING, W, None)]),
    # producer snapshots (idem-0: 148 bytes, 3 producers), transaction index (txn-0: 34-byte entries)
    Case("snapshot-version-flipped", "idem", "00000000000000004974.snapshot", xor(1),
         [("00000000000000004974.snapshot", Code.SNAPSHOT_CORRUPT, W, 0)]),
    Case("snapshot-body-flipped", "idem", "00000000000000004974.snapshot", xor(50),
         [("00000000000000004974.snapshot", Code.SNAPSHOT_CORRUPT, W, None)]),
    Case("snapshot-truncated", "idem", "00000000000000004974.snapshot", truncate(50),
         [("00000000000000004974.snapshot", Code.SNAPSHOT_CORRUPT, W, 50)]),
    Case("txnindex-entry-removed", "txn", TXN_IDX, drop_entry(5, 34), [(TXN_IDX, Code.TXN_INDEX_MISMATCH, E, None)]),
    Case("txnindex-bogus-entry", "txn", TXN_IDX, append(struct.pack(">hqqqq", 0, 9999, 10, 20, 5)),
         [(TXN_IDX, Code.TXN_INDEX_MISMATCH, E, None)]),
    Case("abort-marker-record-flipped", "txn", TXN_LOG, xor(ABORT + 77, 0x01), [crc(ABORT, TXN_LOG)]),
    Case("abort-marker-timestamp-flipped", "txn", TXN_LOG, xor(ABORT + 30, 0x01), [crc(ABORT, TXN_LOG)]),
    # log-dir and partition files
    Case("recovery-point-past-log-end", "logdir", "recovery-point-offset-checkpoint",
         replace("plain 0 6729", "plain 0 99999"),
         [("recovery-point-offset-checkpoint", Code.CHECKPOINT_PAST_LOG_END, W, None)]),
    Case("replication-offset-past-log-end", "logdir", "replication-offset-checkpoint",
         replace("plain 0 6729", "plain 0 99999"),
         [("replication-offset-checkpoint", Code.CHECKPOINT_PAST_LOG_END, W, None)]),
    Case("cleaner-offset-past-log-end", "logdir", "cleaner-offset-checkpoint",
         replace("compacted 0 2156", "compacted 0 99999"),
         [("cleaner-offset-checkpoint", Code.CHECKPOINT_PAST_LOG_END, W, None)]),
    # a log start offset of 3000 in plain-0 (its first segment starts at 0, Kafka takes the max)
    Case("replication-offset-below-log-start", "logdir", "replication-offset-checkpoint",
         then(replace("plain 0 6729", "plain 0 2000"), sibling("log-start-offset-checkpoint", "0\n1\nplain 0 3000\n")),
         [("replication-offset-checkpoint", Code.CHECKPOINT_BEFORE_LOG_START, W, None)]),
    Case("cleaner-offset-below-log-start", "logdir", "cleaner-offset-checkpoint",
         then(replace("compacted 0 2156", "compacted 0 100"), sibling("log-start-offset-checkpoint", "0\n1\ncompacted 0 500\n")),
         [("cleaner-offset-checkpoint", Code.CHECKPOINT_BEFORE_LOG_START, W, None)]),
    Case("log-start-offset-past-log-end", "logdir", "log-start-offset-checkpoint",
         lambda p: p.write_text("0\n1\nplain 0 6730\n"),
         [("log-start-offset-checkpoint", Code.CHECKPOINT_PAST_LOG_END, E, None)]),
    Case("checkpoint-malformed-line", "logdir", "recovery-point-offset-checkpoint",
         replace("plain 0 6729", "plain 0 x"),
         [("recovery-point-offset-checkpoint", Code.CHECKPOINT_UNREADABLE, E, None)]),
    Case("leader-epochs-decreasing", "plain", "leader-epoch-checkpoint", lambda p: p.write_text("0\n2\n3 0\n1 100\n"),
         [("leader-epoch-checkpoint", Code.LEADER_EPOCH_NOT_INCREASING, E, None)]),
    *(Case(f"stray{suffix}", "plain", f"00000000000000004138.log{suffix}", copy_of("00000000000000004138.log"),
           [(f"00000000000000004138.log{suffix}", Code.STRAY_TEMP_FILE, severity, None)])
      for suffix, severity in ((".swap", W), (".cleaned", W), (".deleted", I))),
    # legacy entries: CRC-32 over bytes 16..end
    Case("v0-value-flipped", "v0", LOG0, xor(V0 + 29, 0x01), [crc(V0, LOG0)]),
    Case("v0-crc-flipped", "v0", LOG0, xor(V0 + 12), [crc(V0, LOG0)]),
    Case("v0-gzip-wrapper-flipped", "v0gz", LOG0, xor(V0_GZ + 3000), [crc(V0_GZ, LOG0)]),
    Case("v0-gzip-wrapper-flipped-crc-fixed", "v0gz", LOG0, then(xor(V0_GZ + 6223), fix_legacy_crc(V0_GZ)), [],
         deep=[(LOG0, Code.DECOMPRESSION_FAILED, E, V0_GZ)]),
    Case("v1-value-flipped", "v1", LOG0, xor(V1 + 42, 0x01), [crc(V1, LOG0)]),
    Case("v1-crc-flipped", "v1", LOG0, xor(V1 + 15, 0x01), [crc(V1, LOG0)]),
    Case("v1-attributes-codec-7", "v1", LOG0, xor(V1 + 17, 0x07), [crc(V1, LOG0)]),
    # seglog-written compressed batches: the first byte of the compressed section (a codec header)
    *(Case(f"{name}-section-flipped", "gen", _gen_segment(codec), xor(GEN_AT + 61), [crc(GEN_AT, _gen_segment(codec))])
      for name, codec in GEN_CODECS.items()),
    *(Case(f"{name}-section-flipped-crc-fixed", "gen", _gen_segment(codec), then(xor(GEN_AT + 61), fix_crc(GEN_AT)), [],
           deep=[(_gen_segment(codec), Code.DECOMPRESSION_FAILED, E, GEN_AT)])
      for name, codec in GEN_CODECS.items()),
    Case("uncompressed-record-flipped-crc-fixed", "gen", _gen_segment(1), then(xor(70), fix_crc(0)), [],
         deep=[(_gen_segment(1), Code.RECORD_PARSE_ERROR, E, 0)]),
]


# -- running -----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("generated") / "gen-0"
    build_generated(directory)
    return directory


@pytest.fixture
def engine(request):
    """``compiled`` or ``python``: the engine verify runs with (restored afterwards)."""
    if request.param == "compiled" and not native.available():
        pytest.skip("the compiled module is not built")
    before = native.module is not None
    native.set_enabled(request.param == "compiled")
    yield request.param
    native.set_enabled(before)


def _writable(root: Path) -> None:
    for directory, dirs, files in os.walk(root):
        for name in [directory, *(os.path.join(directory, entry) for entry in dirs + files)]:
            os.chmod(name, os.stat(name).st_mode | stat.S_IWUSR)


def _prepare(request, source_name: str, tmp_path: Path) -> Path:
    """A writable copy of the source, in tmp_path."""
    source = SOURCES[source_name]
    if source.path is None:
        original = request.getfixturevalue("generated")
    else:
        original = request.getfixturevalue("corpus") / source.path
    target = tmp_path / original.name
    shutil.copytree(original, target)
    _writable(target)
    if source.path is not None and source.path.startswith(RECOVERY):
        restore_preallocated(target, source.path)
    if source.empty_indexes:
        for log in target.glob("*.log"):
            log.with_suffix(".index").touch()
            log.with_suffix(".timeindex").touch()
    return target


def _verify(root: Path, level: str):
    report = verify([str(root)], VerifyOptions(level=level))
    return report, report.all_findings()


def _key(finding) -> tuple:
    return Path(finding.path).name, finding.code, finding.severity.value, finding.position


def _check(case: Case, root: Path) -> None:
    for level in LEVELS:
        expected = Counter(case.deep if level == "deep" and case.deep is not None else case.expect)
        report, findings = _verify(root, level)
        actual = Counter(_key(f) for f in findings if f.severity is not Severity.INFO or _key(f) in expected)
        assert actual == expected, f"level={level}: {[str(f) for f in findings if f.severity is not Severity.INFO]}"
        batches = case.batches if case.batches is not None else SOURCES[case.source].batches
        assert report.as_dict()["summary"]["batches"] == batches, level
        for (code, position), length in case.lengths.items():
            assert [f.length for f in findings if f.code == code and f.position == position] == [length], level


def _damage(request, case: Case, tmp_path: Path) -> Path:
    root = _prepare(request, case.source, tmp_path)
    if case.mutate is not None:
        case.mutate(root / case.file)
    return root


def _engine_params():
    for case in CASES:
        for engine_name in ("compiled", "python"):
            reason = case.xfail.get(engine_name) if isinstance(case.xfail, dict) else case.xfail
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(case, engine_name, id=f"{case.name}-{engine_name}", marks=marks)


@pytest.mark.parametrize("case, engine", list(_engine_params()), indirect=["engine"])
def test_damage(request, case, engine, tmp_path):
    _check(case, _damage(request, case, tmp_path))


def _agree_params():
    for case in CASES:
        reasons = case.xfail if isinstance(case.xfail, dict) else {}
        marks = [pytest.mark.xfail(strict=True, reason="the engines disagree: " + "; ".join(
            f"{name}: {reason}" for name, reason in reasons.items()))] if reasons else []
        yield pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", list(_agree_params()))
def test_engines_agree(request, case, tmp_path):
    if not native.available():
        pytest.skip("the compiled module is not built")
    root = _damage(request, case, tmp_path)
    before = native.module is not None
    try:
        for level in LEVELS:
            native.set_enabled(True)
            compiled = _verify(root, level)[1]
            native.set_enabled(False)
            python = _verify(root, level)[1]
            assert compiled == python, level
    finally:
        native.set_enabled(before)


@pytest.mark.parametrize("source_name", [name for name, source in SOURCES.items() if not source.damaged])
@pytest.mark.parametrize("engine", ["compiled", "python"], indirect=True)
def test_untouched_copies_are_clean(request, source_name, engine, tmp_path):
    root = _prepare(request, source_name, tmp_path)
    for level in LEVELS:
        report, findings = _verify(root, level)
        assert report.status == CLEAN, [str(f) for f in findings if f.severity is not Severity.INFO]
        assert report.as_dict()["summary"]["batches"] == SOURCES[source_name].batches


@pytest.mark.parametrize("engine", ["compiled", "python"], indirect=True)
def test_every_crc_covered_header_byte(request, engine, tmp_path):
    """A single-bit flip anywhere from the CRC field to the end of batch B (every header byte, a
    sample of the records): exactly one BATCH_CRC_MISMATCH at B, at both levels."""
    log = _prepare(request, "plain", tmp_path) / R
    original = log.read_bytes()
    for relative in [*range(17, 61), *range(61, 6893, 401), 6892]:
        for mask in (0x01, 0x80):
            log.write_bytes(original)
            xor(B + relative, mask)(log)
            for level in LEVELS:
                keys = [_key(f) for f in _verify(log, level)[1]]
                assert keys == [crc(B)], (relative, mask, level)


@pytest.mark.parametrize("engine", ["compiled", "python"], indirect=True)
def test_every_snapshot_byte(request, engine, tmp_path):
    """Any byte of a producer snapshot flipped: exactly one SNAPSHOT_CORRUPT warning."""
    snapshot = _prepare(request, "idem", tmp_path) / "00000000000000004974.snapshot"
    original = snapshot.read_bytes()
    for position in range(len(original)):
        for mask in (0xFF, 0x01):
            snapshot.write_bytes(original)
            xor(position, mask)(snapshot)
            findings = _verify(snapshot, "shallow")[1]
            assert [(f.code, f.severity.value) for f in findings] == [(Code.SNAPSHOT_CORRUPT, W)], (position, mask)


def test_layout_constants(corpus, generated):
    """The positions the table names are where the corpus and the generated partition have them."""
    def batches(path):
        with MappedFile(str(path)) as mapped:
            return {b.position: (b.base_offset, b.last_offset, b.size, b.magic) for b in LogScan(mapped)}

    plain = corpus / DATA / "plain-0"
    rolled, active = batches(plain / R), batches(plain / A)
    assert (len(rolled), (plain / R).stat().st_size) == (113, R_END)
    assert rolled[B] == (3048, 3062, 6893, 2) and rolled[NEXT] == (3063, 3084, 12332, 2)
    assert rolled[0][:2] == (2071, 2101) and rolled[R_LAST][:2] == (4115, 4137) and R_LAST + 11967 == R_END
    assert (len(active), (plain / A).stat().st_size) == (29, A_END)
    assert A_MID in active and active[A_LAST][:2] == (6714, 6728)
    assert struct.unpack_from(">ii", (plain / R_IDX).read_bytes(), IDX45) == (991, B)
    assert len((plain / R_TIX).read_bytes()) == TIX_LAST + 12
    assert batches(corpus / DATA / "txn-0" / TXN_LOG)[ABORT][:3] == (23, 23, 78)
    assert batches(corpus / SOURCES["v0"].path / LOG0)[V0] == (5697, 5697, 30, 0)
    assert batches(corpus / SOURCES["v0gz"].path / LOG0)[V0_GZ] == (3047, 3047, 6224, 0)
    assert batches(corpus / SOURCES["v1"].path / LOG0)[V1] == (102, 102, 43, 1)
    for codec in GEN_CODECS.values():
        gen = batches(generated / _gen_segment(codec))
        assert sorted(gen) == [0, GEN_AT, sorted(gen)[2]] and gen[GEN_AT][:2] == (15 * codec - 10, 15 * codec - 6)


@pytest.mark.parametrize("engine", ["compiled", "python"], indirect=True)
def test_corrupt_region_names_the_unreadable_offsets(request, engine, tmp_path):
    """Batch B (offsets 3048..3062) with a garbage size field: the region ends at the next batch,
    whose base offset 3063 closes the range of offsets nobody can read."""
    root = _damage(request, next(case for case in CASES if case.name == "batch-length-msb"), tmp_path)
    _, findings = _verify(root, "shallow")
    (region,) = [f for f in findings if f.code == Code.CORRUPT_REGION]
    assert region.offset == 3048
    assert region.message.endswith("; offsets 3048 to 3062 are unreadable"), region.message


@pytest.mark.parametrize("engine", ["compiled", "python"], indirect=True)
@pytest.mark.parametrize("small", [True, False])
def test_a_zero_filled_index_has_no_entry(engine, small, tmp_path):
    """A broker stopped before its active segment's first index entry leaves both indexes all
    zeros (every ``-stray`` dir Kafka 4.2 sets aside looks so): no entry, only preallocation.
    Kafka never writes an offset entry at position 0 (a batch is indexed once more than
    index.interval.bytes precede it), so the zeros are not an entry 0 -> 0."""
    partition = tmp_path / "metrics-0"
    partition.mkdir()
    records = [NewRecord(key=b"k%d" % i, value=b"v" * 90, timestamp=1_767_225_600_000 + i) for i in range(122)]
    (partition / "00000000000000000000.log").write_bytes(build_batch(records, base_offset=0))
    slots = 8 if small else 1024  # within SMALL_INDEX decoded at once, or past it
    (partition / "00000000000000000000.index").write_bytes(b"\0" * 8 * slots)
    (partition / "00000000000000000000.timeindex").write_bytes(b"\0" * 12 * slots)
    report = verify([str(partition)])
    codes = Counter(f.code for f in report.all_findings())
    assert report.status == CLEAN and Code.INDEX_OFFSET_MISMATCH not in codes and Code.TIME_INDEX_MISMATCH not in codes
    assert codes[Code.INDEX_PREALLOCATED] == 2, codes
