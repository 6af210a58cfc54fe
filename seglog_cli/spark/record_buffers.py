"""Record columns straight from the bytes: the compiled ``columns_run`` (``_native.c``) walks a
chunk of batch headers and appends each v2 data batch's records to Arrow-ready buffers, with the
batch's values repeated per record, so no Python object is made per batch, record, key, value
or header.

It takes the batches the plain decoder would read cleanly (uncompressed, or decompressed by
:func:`~seglog_cli.storage.codecs.decompress`, v2 data batches whose records parse without
complaint and whose header keys are UTF-8), and stops at anything else (legacy messages, control
batches, damage, header keys Java would decode with replacement characters, a batch failing
its CRC when those are skipped): :mod:`seglog_cli.spark.columns` reads that one through
:func:`~seglog_cli.storage.records.read_records` as before and calls it again for the rest.
Both give the same values: ``tests/spark/test_record_buffers.py`` compares them.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from seglog_cli.storage import native
from seglog_cli.storage.codecs import CODEC_NAMES, decompress
from seglog_cli.storage.errors import DecompressionError, SeglogError

BUFFERS = 20  # the order of columns_run's bytearrays
(OFFSET, TIMESTAMP, KEY_END, KEY_DATA, KEY_VALID, VALUE_END, VALUE_DATA, VALUE_VALID, HEADERS_END, HKEY_END,
 HKEY_DATA, HVALUE_END, HVALUE_DATA, HVALUE_VALID,
 BASE_OFFSET, PRODUCER_ID, PRODUCER_EPOCH, POSITION, ATTRIBUTES, CRC_VALID) = range(BUFFERS)
RUN_CHUNK, RUN_FULL, RUN_GENERAL, RUN_END = range(4)  # why columns_run returned
_ZERO_INT32 = bytes(4)
_EXPECTED = (DecompressionError, SeglogError)  # what the general decoder reports as the dump does
_CODECS = pa.array([CODEC_NAMES[codec] for codec in range(5)], pa.string())  # the only ones it decompresses


def compiled_columns():
    """``columns_run`` when the compiled module has it, else None."""
    return getattr(native.module, "columns_run", None)


class RecordBuffers:
    """The records of the clean v2 data batches read so far, as column buffers."""

    def __init__(self, columns_run, *, max_rows: int, max_payload: int, skip_invalid: bool):
        self.columns_run = columns_run
        self.max_rows, self.max_payload, self.skip_invalid = max_rows, max_payload, skip_invalid
        self.buffers = [bytearray() for _ in range(BUFFERS)]
        self.payload = 0  # the batches' length fields

    def __len__(self) -> int:
        return len(self.buffers[OFFSET]) // 8

    def run(self, buf, chunk: list, index: int, split_end: int) -> tuple[int, int]:
        """Read ``chunk[index:]`` until something stops it: (the index it stopped at, why:
        ``RUN_CHUNK`` the chunk is done, ``RUN_FULL`` the buffers hold an Arrow batch's worth,
        ``RUN_GENERAL`` ``chunk[index]`` is for the general decoder, ``RUN_END`` it starts past the
        split)."""
        index, reason, self.payload = self.columns_run(
            buf, chunk, index, split_end, self.skip_invalid, self.max_rows, self.payload, self.max_payload,
            self.buffers, decompress, _EXPECTED)
        return index, reason

    def arrays(self, check_crc: bool) -> dict[str, pa.Array]:
        """The columns read so far (by name; ``headers`` as its list offsets and entries), and a
        fresh set of buffers for what comes next."""
        b, n = self.buffers, len(self)
        self.buffers, self.payload = [bytearray() for _ in range(BUFFERS)], 0
        headers = len(b[HKEY_END]) // 4
        entries = pa.StructArray.from_arrays(
            [_binary(pa.string(), headers, b[HKEY_END], b[HKEY_DATA], None),
             _binary(pa.binary(), headers, b[HVALUE_END], b[HVALUE_DATA], b[HVALUE_VALID])],
            names=["key", "value"])
        attributes = _fixed(pa.uint8(), n, b[ATTRIBUTES])
        return {
            "offset": _fixed(pa.int64(), n, b[OFFSET]),
            "timestamp": _fixed(pa.int64(), n, b[TIMESTAMP]),
            "key": _binary(pa.binary(), n, b[KEY_END], b[KEY_DATA], b[KEY_VALID]),
            "value": _binary(pa.binary(), n, b[VALUE_END], b[VALUE_DATA], b[VALUE_VALID]),
            "headers": (_fixed(pa.int32(), n + 1, _ZERO_INT32 + b[HEADERS_END]), entries),
            "baseOffset": _fixed(pa.int64(), n, b[BASE_OFFSET]),
            "producerId": _fixed(pa.int64(), n, b[PRODUCER_ID]),
            "producerEpoch": _fixed(pa.int32(), n, b[PRODUCER_EPOCH]),
            "position": _fixed(pa.int64(), n, b[POSITION]),
            "timestampType": _flag(attributes, 0x08).cast(pa.int32()),
            "isTransactional": _flag(attributes, 0x10),
            "isControl": _flag(attributes, 0x20),
            "compression": _CODECS.take(pc.bit_wise_and(attributes, 7)),
            "isValid": (_fixed(pa.uint8(), n, b[CRC_VALID]).cast(pa.bool_()) if check_crc
                        else pa.nulls(n, pa.bool_())),
        }


def _fixed(kind, n: int, data) -> pa.Array:
    return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(data)])


def _flag(attributes: pa.Array, bit: int) -> pa.Array:
    return pc.not_equal(pc.bit_wise_and(attributes, bit), 0)


def _binary(kind, n: int, ends: bytearray, data: bytearray, valid: bytearray | None) -> pa.Array:
    """A binary/string array from int32 end positions, the bytes and one validity byte per item."""
    bitmap = None
    if valid is not None and valid.count(0):
        bitmap = _fixed(pa.uint8(), n, valid).cast(pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(kind, n, [bitmap, pa.py_buffer(_ZERO_INT32 + ends), pa.py_buffer(data)])


__all__ = ["RecordBuffers", "compiled_columns", "RUN_CHUNK", "RUN_FULL", "RUN_GENERAL", "RUN_END"]
