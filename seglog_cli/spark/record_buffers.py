"""Record columns straight from the bytes: the compiled ``columns_v2`` (``_native.c``) appends a
v2 batch's records to Arrow-ready buffers, so no Python object is made per record, key, value
or header.

It takes the batches the plain decoder would read cleanly (uncompressed or decompressed v2
data batches whose records parse without complaint and whose header keys are UTF-8); anything
else (legacy messages, control batches, damage, header keys Java would decode with
replacement characters) goes through :func:`~seglog_cli.storage.records.read_records` as
before. Both give the same values: ``tests/spark/test_record_buffers.py`` compares them.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from seglog_cli.storage import native
from seglog_cli.storage.batches import BatchHeader
from seglog_cli.storage.codecs import decompress
from seglog_cli.storage.errors import DecompressionError, SeglogError

BUFFERS = 14  # the order of columns_v2's bytearrays
(OFFSET, TIMESTAMP, KEY_END, KEY_DATA, KEY_VALID, VALUE_END, VALUE_DATA, VALUE_VALID, HEADERS_END, HKEY_END,
 HKEY_DATA, HVALUE_END, HVALUE_DATA, HVALUE_VALID) = range(BUFFERS)
_ZERO_INT32 = bytes(4)
RECORD_BATCH_OVERHEAD = 61


def compiled_columns():
    """``columns_v2`` when the compiled module has it, else None."""
    return getattr(native.module, "columns_v2", None)


class RecordBuffers:
    """The records of consecutive clean v2 batches, as column buffers."""

    def __init__(self, columns_v2):
        self.columns_v2 = columns_v2
        self.buffers = [bytearray() for _ in range(BUFFERS)]

    def __len__(self) -> int:
        return len(self.buffers[OFFSET]) // 8

    def add(self, buf, batch: BatchHeader) -> int | None:
        """Append ``batch``'s records; their number, or None (nothing appended) when the batch is
        for the general decoder."""
        if batch[4] < 2 or batch[6] & 0x20 or batch[13] is None or batch[13] <= 0:
            return None  # legacy, control or empty batches
        start, end = batch[0] + RECORD_BATCH_OVERHEAD, batch[0] + 12 + batch[2]
        codec = batch[6] & 7
        log_append_time = batch[9] if batch[6] & 0x08 else None
        before = len(self)
        with memoryview(buf) as whole, whole[start:end] as section:
            if codec:
                try:
                    data = decompress(codec, section, 2)
                except (DecompressionError, SeglogError):
                    return None  # the general decoder reports it as the dump does
            else:
                data = section
            if not self.columns_v2(data, batch[13], batch[1], batch[8], log_append_time, bool(codec),
                                   self.buffers):
                return None
        return len(self) - before

    def arrays(self) -> dict[str, pa.Array]:
        """The record-level columns (``offset``, ``timestamp`` in ms, ``key``, ``value``,
        ``headers``), and a fresh set of buffers for what comes next."""
        b, n = self.buffers, len(self)
        self.buffers = [bytearray() for _ in range(BUFFERS)]
        headers = len(b[HKEY_END]) // 4
        entries = pa.StructArray.from_arrays(
            [_binary(pa.string(), headers, b[HKEY_END], b[HKEY_DATA], None),
             _binary(pa.binary(), headers, b[HVALUE_END], b[HVALUE_DATA], b[HVALUE_VALID])],
            names=["key", "value"])
        offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(_ZERO_INT32 + b[HEADERS_END])])
        return {
            "offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(b[OFFSET])]),
            "timestamp": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(b[TIMESTAMP])]),
            "key": _binary(pa.binary(), n, b[KEY_END], b[KEY_DATA], b[KEY_VALID]),
            "value": _binary(pa.binary(), n, b[VALUE_END], b[VALUE_DATA], b[VALUE_VALID]),
            "headers": (offsets, entries),
        }


def _binary(kind, n: int, ends: bytearray, data: bytearray, valid: bytearray | None) -> pa.Array:
    """A binary/string array from int32 end positions, the bytes and one validity byte per item."""
    bitmap = None
    if valid is not None and valid.count(0):
        mask = pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(valid)])
        bitmap = pc.cast(mask, pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(kind, n, [bitmap, pa.py_buffer(_ZERO_INT32 + ends), pa.py_buffer(data)])


__all__ = ["RecordBuffers", "compiled_columns"]
