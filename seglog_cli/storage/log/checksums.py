"""CRC-32C (v2 batches, producer snapshots) from the compiled module when it is built (it uses
the SSE4.2 instruction when the CPU has it), else from the ``crc32c`` package. Both take any
bytes-like object, memoryviews of the mapped file included."""

from __future__ import annotations

from seglog_cli.storage.log import native

if native.module is not None:
    crc32c = native.module.crc32c
else:  # pragma: no cover - exercised with SEGLOG_PURE_PYTHON=1
    from crc32c import crc32c  # noqa: F401
