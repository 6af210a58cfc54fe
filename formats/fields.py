"""Small named parts shared by the format schemas.

``NullableBytes(length)``::

    length   any integer construct (zig-zag varint in v2 records, int32 in legacy messages)
    data     ``length`` bytes; a negative length means null (no bytes follow)

Kafka reads any negative length as null (``Utils.readBytes``), and writes -1 for null.
"""

from __future__ import annotations

from construct import Construct, SizeofError, stream_read, stream_write


class NullableBytes(Construct):
    """Length-prefixed bytes where a negative length stands for ``None``."""

    def __init__(self, length: Construct):
        super().__init__()
        self.length = length

    def _parse(self, stream, context, path):
        size = self.length._parsereport(stream, context, path)
        if size < 0:
            return None
        return stream_read(stream, size, path)

    def _build(self, obj, stream, context, path):
        if obj is None:
            self.length._build(-1, stream, context, path)
            return None
        data = bytes(obj)
        self.length._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return data

    def _sizeof(self, context, path):
        raise SizeofError("nullable bytes have no fixed size", path=path)
