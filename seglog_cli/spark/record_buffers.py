"""The Spark reader's rows as Arrow-ready column buffers, filled two ways in file order.

* The compiled ``columns_run`` (``_native.c``) walks a chunk of batch headers and appends each
  v2 data batch's records, with the batch's values repeated per record, so no Python object is
  made per batch, record, key, value or header. It takes the batches the plain decoder would
  read cleanly (uncompressed, or decompressed by :func:`~seglog_cli.storage.log.codecs.decompress`,
  v2 data batches whose records parse without complaint and whose header keys are UTF-8) and
  stops at anything else (legacy messages, control batches, damage, header keys Java would
  decode with replacement characters, a batch failing its CRC when those are skipped).
* :meth:`RecordBuffers.add_records` appends the records the general decoder
  (:func:`~seglog_cli.storage.log.records.read_records`) made of such a batch, and is the only way
  in without the compiled module.

Both give the same values (``tests/spark/test_record_buffers.py`` compares them), and because
both fill the same buffers, Arrow batches stay full however the two kinds of batches alternate.
"""

from __future__ import annotations

from array import array
from itertools import accumulate, chain
from operator import itemgetter
from struct import Struct

import pyarrow as pa
import pyarrow.compute as pc

from seglog_cli.storage.log import native
from seglog_cli.storage.log.codecs import codec_label, decompress
from seglog_cli.storage.log.errors import DecompressionError, SeglogError
from seglog_cli.storage.log.text import java_utf8

BUFFERS = 21  # the order of columns_run's bytearrays
(OFFSET, TIMESTAMP, KEY_END, KEY_DATA, KEY_VALID, VALUE_END, VALUE_DATA, VALUE_VALID, HEADERS_END, HKEY_END,
 HKEY_DATA, HVALUE_END, HVALUE_DATA, HVALUE_VALID,
 BASE_OFFSET, PRODUCER_ID, PRODUCER_EPOCH, POSITION, ATTRIBUTES, CRC_VALID, MAGIC) = range(BUFFERS)
RUN_CHUNK, RUN_FULL, RUN_GENERAL, RUN_END = range(4)  # why columns_run returned
_ZERO_INT32 = bytes(4)
_EXPECTED = (DecompressionError, SeglogError)  # what the general decoder reports as the dump does
# never pa.array() of a Python list in a worker: pyarrow then imports pandas to check what the
# list is (a fixed 0.2-0.5 CPU-s per Python worker, more than reading 100,000 records costs)


def strings(items: list) -> pa.Array:
    """A string array of ``items`` (str or None), built from its buffers."""
    encoded = [item.encode() if item is not None else None for item in items]
    ends = bytearray()
    _append_binary([ends, bytearray(), bytearray()], 0, 1, 2, encoded)
    data = b"".join(item for item in encoded if item is not None)
    valid = bytes(item is not None for item in encoded)
    return _binary(pa.string(), len(items), ends, bytearray(data), bytearray(valid))


_CODECS = None  # by the attributes' low 3 bits, made on first use (strings() is defined below)
_OFFSET_OF, _TIMESTAMP_OF, _KEY_OF, _VALUE_OF, _HEADERS_OF = (itemgetter(i) for i in (0, 1, 3, 4, 5))  # Record
_INT64, _INT32 = Struct("=q"), Struct("=i")


def compiled_columns():
    """``columns_run`` when the compiled module has it, else None."""
    return getattr(native.module, "columns_run", None)


class RecordBuffers:
    """The records of the clean v2 data batches read so far, as column buffers."""

    def __init__(self, columns_run=None, *, max_rows: int, max_payload: int, skip_invalid: bool):
        self.columns_run = columns_run
        self.max_rows, self.max_payload, self.skip_invalid = max_rows, max_payload, skip_invalid
        self.buffers = [bytearray() for _ in range(BUFFERS)]
        self.payload = 0  # the batches' length fields
        self.control_types: dict[int, str] = {}  # row -> control type, for control records (null elsewhere)

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

    def add_records(self, batch, records: list, crc_valid: bool, control_types: list | None = None) -> None:
        """Append the general decoder's records of ``batch`` (a BatchHeader), with its values
        (and, for a control batch, each record's control type)."""
        b, n = self.buffers, len(records)
        if control_types:
            first = len(self)
            self.control_types.update((first + i, name) for i, name in enumerate(control_types))
        b[OFFSET] += array("q", map(_OFFSET_OF, records))
        b[TIMESTAMP] += array("q", map(_TIMESTAMP_OF, records))
        _append_binary(b, KEY_END, KEY_DATA, KEY_VALID, list(map(_KEY_OF, records)))
        _append_binary(b, VALUE_END, VALUE_DATA, VALUE_VALID, list(map(_VALUE_OF, records)))
        headers = list(map(_HEADERS_OF, records))
        flat = list(chain.from_iterable(headers))
        b[HEADERS_END] += array("i", accumulate(map(len, headers), initial=len(b[HKEY_END]) // 4))[1:]
        _append_binary(b, HKEY_END, HKEY_DATA, None, [java_utf8(key).encode() for key, _ in flat])
        _append_binary(b, HVALUE_END, HVALUE_DATA, HVALUE_VALID, [value for _, value in flat])
        magic = batch[4]
        legacy = magic < 2
        b[BASE_OFFSET] += _INT64.pack(0 if legacy else batch[1]) * n
        b[PRODUCER_ID] += _INT64.pack(batch[10]) * n
        b[PRODUCER_EPOCH] += _INT32.pack(batch[11]) * n
        b[POSITION] += _INT64.pack(batch[0]) * n
        b[ATTRIBUTES] += bytes((batch[6] & (0x0f if legacy else 0xff),)) * n  # legacy: codec, timestamp type
        b[CRC_VALID] += (b"\x01" if crc_valid else b"\x00") * n
        b[MAGIC] += (b"\x02" if magic >= 2 else b"\x00" if magic == 0 else b"\x01") * n  # 1: v1 and damaged
        self.payload += batch[2]

    def arrays(self, check_crc: bool) -> dict[str, pa.Array]:
        """The columns read so far (by name; ``headers`` as its list offsets and entries), and a
        fresh set of buffers for what comes next."""
        b, n = self.buffers, len(self)
        control_types = self.control_types
        self.buffers, self.payload, self.control_types = [bytearray() for _ in range(BUFFERS)], 0, {}
        headers = len(b[HKEY_END]) // 4
        entries = pa.StructArray.from_arrays(
            [_binary(pa.string(), headers, b[HKEY_END], b[HKEY_DATA], None),
             _binary(pa.binary(), headers, b[HVALUE_END], b[HVALUE_DATA], b[HVALUE_VALID])],
            names=["key", "value"])
        attributes = _fixed(pa.uint8(), n, b[ATTRIBUTES])
        magic = _fixed(pa.uint8(), n, b[MAGIC])
        v2 = pc.equal(magic, const(pa.uint8(), 2))
        return {
            "offset": _fixed(pa.int64(), n, b[OFFSET]),
            "timestamp": _fixed(pa.int64(), n, b[TIMESTAMP]),
            "key": _binary(pa.binary(), n, b[KEY_END], b[KEY_DATA], b[KEY_VALID]),
            "value": _binary(pa.binary(), n, b[VALUE_END], b[VALUE_DATA], b[VALUE_VALID]),
            "headers": (_fixed(pa.int32(), n + 1, _ZERO_INT32 + b[HEADERS_END]), entries),
            "baseOffset": pc.if_else(v2, _fixed(pa.int64(), n, b[BASE_OFFSET]), const(pa.int64(), None)),  # null for legacy
            "producerId": _fixed(pa.int64(), n, b[PRODUCER_ID]),
            "producerEpoch": _fixed(pa.int32(), n, b[PRODUCER_EPOCH]),
            "position": _fixed(pa.int64(), n, b[POSITION]),
            "timestampType": pc.if_else(pc.equal(magic, const(pa.uint8(), 0)), const(pa.int32(), -1),
                                        _flag(attributes, 0x08).cast(pa.int32())),
            "isTransactional": _flag(attributes, 0x10),
            "isControl": _flag(attributes, 0x20),
            "compression": _codecs().take(pc.bit_wise_and(attributes, const(pa.uint8(), 7))),  # legacy: the same low bits
            "isValid": (_fixed(pa.uint8(), n, b[CRC_VALID]).cast(pa.bool_()) if check_crc
                        else pa.nulls(n, pa.bool_())),
            "controlType": (strings([control_types.get(i) for i in range(n)]) if control_types
                            else pa.nulls(n, pa.string())),
        }


_FORMATS = {"int8": "b", "uint8": "B", "int32": "i", "int64": "q"}
_constants: dict = {}


def const(kind, value):
    """A pyarrow scalar of ``kind`` (int8/uint8/int32/int64/string) holding ``value`` (None:
    null), built from buffers: a scalar made from a Python value (and a compute call given
    one) makes pyarrow import pandas."""
    key = (str(kind), value)
    found = _constants.get(key)
    if found is None:
        if value is None:
            found = pa.nulls(1, kind)[0]
        elif kind == pa.string():
            found = strings([value])[0]
        else:
            found = _fixed(kind, 1, Struct("=" + _FORMATS[str(kind)]).pack(value))[0]
        if len(_constants) < 4096:
            _constants[key] = found
    return found


def _codecs() -> pa.Array:
    global _CODECS
    if _CODECS is None:
        _CODECS = strings([codec_label(codec) for codec in range(8)])
    return _CODECS


def _fixed(kind, n: int, data) -> pa.Array:
    return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(data)])


def _flag(attributes: pa.Array, bit: int) -> pa.Array:
    return pc.not_equal(pc.bit_wise_and(attributes, const(pa.uint8(), bit)), const(pa.uint8(), 0))


def _append_binary(b: list, ends: int, data: int, valid: int | None, items: list) -> None:
    """Append items (bytes, or None for null) to a binary column's end positions, bytes and
    validity bytes."""
    buffer = b[data]
    b[ends] += array("i", accumulate((len(item) if item is not None else 0 for item in items),
                                     initial=len(buffer)))[1:]
    buffer += b"".join(item for item in items if item is not None)
    if valid is not None:
        b[valid] += bytes(item is not None for item in items)


def _binary(kind, n: int, ends: bytearray, data: bytearray, valid: bytearray | None) -> pa.Array:
    """A binary/string array from int32 end positions, the bytes and one validity byte per item."""
    bitmap = None
    if valid is not None and valid.count(0):
        bitmap = _fixed(pa.uint8(), n, valid).cast(pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(kind, n, [bitmap, pa.py_buffer(_ZERO_INT32 + ends), pa.py_buffer(data)])


__all__ = ["RecordBuffers", "compiled_columns", "const", "strings", "RUN_CHUNK", "RUN_FULL", "RUN_GENERAL", "RUN_END"]
