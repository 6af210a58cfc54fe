"""A ``.log`` entry's header, decoded from the mapped bytes: :class:`BatchHeader`.

One class for both kinds of entry a ``.log`` can hold: a v2 record batch (Kafka's
``DefaultRecordBatch``, 61 header bytes) and a legacy v0/v1 log entry (``LegacyRecord``), with
Kafka's field names and derived values (last offset, next offset, last sequence, timestamp
type, control and transactional bits, ``isValid``). :func:`read_batch_header` decodes one entry
whose framing was already checked, with the precompiled ``struct`` layouts below (checked
against the construct schemas in ``formats`` by the tests); the size constants and Java's
``int``/``long`` wrap-around (:func:`wrap_int32`, :func:`wrap_int64`,
:func:`increment_sequence`) live here too. The scan that finds the entries is
:mod:`~seglog_cli.storage.log.batches`.
"""

from __future__ import annotations

import struct
import zlib
from operator import itemgetter

from seglog_cli.formats import layout
from seglog_cli.storage.log.checksums import crc32c


LOG_OVERHEAD = layout.LOG_OVERHEAD  # 12
HEADER_SIZE_UP_TO_MAGIC = layout.MAGIC_OFFSET + 1  # 17
MIN_ENTRY_SIZE = layout.RECORD_OVERHEAD_V0  # 14: the smallest legal size field
RECORD_BATCH_OVERHEAD = layout.RECORD_BATCH_OVERHEAD  # 61

# base_offset, length, partition_leader_epoch, magic, crc, attributes, last_offset_delta,
# base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, records_count
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
# offset, message_size, crc, magic, attributes, timestamp (v1; garbage for v0)
LEGACY_HEADER = struct.Struct(">qiIbbq")
OFFSET_AND_SIZE = struct.Struct(">qi")

INT32_MAX = 2**31 - 1
INT64_LIMIT = 2**63
NO_TIMESTAMP = -1

CREATE_TIME, LOG_APPEND_TIME, NO_TIMESTAMP_TYPE = 0, 1, -1
TIMESTAMP_TYPE_NAMES = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime",
                        NO_TIMESTAMP_TYPE: "NoTimestampType"}


def wrap_int32(value: int) -> int:
    """Java ``int`` overflow."""
    return ((value + 2**31) & 0xFFFFFFFF) - 2**31


def wrap_int64(value: int) -> int:
    """Java ``long`` overflow (a corrupt base offset near 2^63 plus a delta wraps negative)."""
    return ((value + 2**63) & 0xFFFFFFFFFFFFFFFF) - 2**63


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's ``DefaultRecordBatch.incrementSequence``: sequences wrap from 2147483647 to 0,
    computed with Java int arithmetic (so a negative increment from a corrupt record wraps too)."""
    if 0 <= increment <= INT32_MAX - sequence:
        return sequence + increment  # the common case, no overflow anywhere
    if sequence > wrap_int32(INT32_MAX - increment):
        return wrap_int32(increment - wrap_int32(INT32_MAX - sequence) - 1)
    return wrap_int32(sequence + increment)


_HEADER_FIELDS = ("position", "base_offset", "length", "partition_leader_epoch", "magic", "crc",
                  "attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
                  "producer_epoch", "base_sequence", "records_count", "computed_crc")


class BatchHeader(tuple):
    """One entry of a ``.log``: a v2 record batch or a legacy (v0/v1) log entry.

    Field names follow Kafka. For legacy entries ``base_offset`` is the entry's offset field
    (for a compressed wrapper that is the offset of its last inner message), ``length`` is the
    message size and the producer fields are -1. A tuple underneath (fields in the order of
    ``_HEADER_FIELDS``), so the compiled scanner can build it directly.
    """

    __slots__ = ()
    _fields = _HEADER_FIELDS

    def __new__(cls, position, base_offset, length, partition_leader_epoch, magic, crc, attributes,
                last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                base_sequence, records_count, computed_crc=None):
        return tuple.__new__(cls, (position, base_offset, length, partition_leader_epoch, magic, crc,
                                   attributes, last_offset_delta, base_timestamp, max_timestamp,
                                   producer_id, producer_epoch, base_sequence, records_count,
                                   computed_crc))

    position = property(itemgetter(0))
    base_offset = property(itemgetter(1))
    length = property(itemgetter(2))
    partition_leader_epoch = property(itemgetter(3))
    magic = property(itemgetter(4))
    crc = property(itemgetter(5))
    attributes = property(itemgetter(6))
    last_offset_delta = property(itemgetter(7))
    base_timestamp = property(itemgetter(8))
    max_timestamp = property(itemgetter(9))
    producer_id = property(itemgetter(10))
    producer_epoch = property(itemgetter(11))
    base_sequence = property(itemgetter(12))
    records_count = property(itemgetter(13))
    computed_crc = property(itemgetter(14))

    @property
    def size(self) -> int:
        return self.length + LOG_OVERHEAD

    @property
    def end_position(self) -> int:
        return self.position + self.length + LOG_OVERHEAD

    @property
    def is_legacy(self) -> bool:
        return self.magic < 2

    @property
    def last_offset(self) -> int:
        last = self.base_offset + self.last_offset_delta
        return last if -INT64_LIMIT <= last < INT64_LIMIT else wrap_int64(last)

    @property
    def next_offset(self) -> int:
        return wrap_int64(self.last_offset + 1)

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp_type(self) -> int:
        if self.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self.attributes & 0x08 else CREATE_TIME

    @property
    def timestamp_type_name(self) -> str:
        return TIMESTAMP_TYPE_NAMES[self.timestamp_type]

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x20)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & 0x40)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == -1:
            return -1
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def min_size(self) -> int:
        return RECORD_BATCH_OVERHEAD if self.magic >= 2 else LOG_OVERHEAD + MIN_ENTRY_SIZE

    @property
    def crc_matches(self) -> bool:
        return self.computed_crc is not None and self.crc == self.computed_crc

    @property
    def is_valid(self) -> bool:
        """Kafka's ``isValid``: size at least the format's minimum and the CRC matches."""
        return self.size >= self.min_size and self.crc_matches

    def __repr__(self) -> str:
        return (f"BatchHeader(position={self.position}, base_offset={self.base_offset}, "
                f"last_offset={self.last_offset}, size={self.size}, magic={self.magic})")


def read_batch_header(buf, view, position: int, end: int, check_crc: bool = True) -> BatchHeader:
    """Decode the header of the entry at ``position`` whose framing was already checked.

    ``end`` is the end of the readable region; a v2 header smaller than 61 bytes is read from
    the bytes that follow it when they exist (as Kafka does), else from zero padding.
    """
    length = OFFSET_AND_SIZE.unpack_from(buf, position)[1]
    batch_end = position + LOG_OVERHEAD + length
    magic = buf[position + 16]
    if magic < 0x80 and magic >= 2:
        if position + RECORD_BATCH_OVERHEAD <= end:
            fields = V2_HEADER.unpack_from(buf, position)
        else:
            padded = bytes(view[position:end]).ljust(RECORD_BATCH_OVERHEAD, b"\0")
            fields = V2_HEADER.unpack(padded)
        computed = crc32c(view[position + 21:batch_end]) if check_crc and length >= 9 else None
        return BatchHeader(position, *fields, computed)
    if position + LEGACY_HEADER.size <= end:
        offset, size, crc, magic, attributes, timestamp = LEGACY_HEADER.unpack_from(buf, position)
    else:
        padded = bytes(view[position:end]).ljust(LEGACY_HEADER.size, b"\0")
        offset, size, crc, magic, attributes, timestamp = LEGACY_HEADER.unpack(padded)
    if magic == 0:
        timestamp = NO_TIMESTAMP  # LegacyRecord.timestamp(): only v0 has none
    computed = zlib.crc32(view[position + 16:batch_end]) if check_crc and size >= 4 else None
    return BatchHeader(position, offset, size, -1, magic, crc, attributes & 0xFF, 0,
                       timestamp, timestamp, -1, -1, -1, None, computed)
