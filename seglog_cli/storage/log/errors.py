"""The one exception family of the storage engine, and the bridge from library errors.

Exceptions mean "cannot proceed with this input"; damage that can be reported and stepped over
is a :class:`~seglog_cli.storage.log.findings.Finding` instead. Every error carries the file, the
byte position and, when known, the logical offset, and renders as one line.

``kafka_class`` names the exception Kafka itself throws in the same situation, so the dump
command can print Kafka's own line for it.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from seglog_cli.storage.log.text import printable

if TYPE_CHECKING:
    from pathlib import Path

CORRUPT_RECORD = "org.apache.kafka.common.errors.CorruptRecordException"
INVALID_RECORD = "org.apache.kafka.common.InvalidRecordException"
KAFKA_EXCEPTION = "org.apache.kafka.common.KafkaException"
CORRUPT_INDEX = "org.apache.kafka.storage.internals.log.CorruptIndexException"
CORRUPT_SNAPSHOT = "org.apache.kafka.storage.internals.log.CorruptSnapshotException"


class SeglogError(Exception):
    """Root of every error the engine raises."""

    kafka_class: str | None = None

    def __init__(self, message: str, path: str | Path | None = None, position: int | None = None,
                 offset: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else str(path)
        self.position = position
        self.offset = offset

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(printable(self.path))
        if self.position is not None:
            where.append(f"position {self.position}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        message = printable(self.message)
        return f"{': '.join(where)}: {message}" if where else message

    def kafka_line(self) -> str:
        """The first stderr line Kafka's tools print for this failure."""
        name = self.kafka_class or KAFKA_EXCEPTION
        return f'Exception in thread "main" {name}: {printable(self.message)}'


class UnreadableInputError(SeglogError):
    """A path that does not exist, cannot be opened, or is not what the command needs."""


class CorruptRecordError(SeglogError):
    """Framing or CRC damage in a ``.log`` (Kafka: CorruptRecordException)."""

    kafka_class = CORRUPT_RECORD


class InvalidRecordError(SeglogError):
    """Records inside a batch that cannot be decoded (Kafka: InvalidRecordException)."""

    kafka_class = INVALID_RECORD


class DecodeError(SeglogError):
    """A batch that cannot be decompressed or otherwise read (Kafka: KafkaException)."""

    kafka_class = KAFKA_EXCEPTION


class CorruptIndexError(SeglogError):
    """An index that fails Kafka's sanity check (Kafka: CorruptIndexException)."""

    kafka_class = CORRUPT_INDEX


class CorruptSnapshotError(SeglogError):
    """A producer snapshot that fails its schema or CRC check (Kafka: CorruptSnapshotException)."""

    kafka_class = CORRUPT_SNAPSHOT


class WriteError(SeglogError):
    """A file could not be written (disk full, permissions, ...)."""


class CheckpointError(SeglogError):
    """A text checkpoint or metadata file that does not follow Kafka's format."""


# The write path's two refusals live here, not in durable.py / safety.py (which re-export them),
# so the exit-status mapping (seglog_cli/status.py) can catch them without importing the write path.

class CannotWriteError(SeglogError):
    """The file system refused a write (read-only, permission, disk full) or the target is not
    something seglog writes to (a symlink, a FIFO, a directory)."""


class LogDirLockedError(SeglogError):
    """A broker (or another seglog) holds the log dir's ``.lock``: nothing was written."""


class ClusterError(SeglogError):
    """A live cluster could not be reached, refused a request (authentication, authorization,
    a missing topic) or failed a produce: ``seglog replay``'s exit status 7."""


class DestinationRefusedError(SeglogError):
    """The destination of a replay fails a check made before anything is sent (a topic with too
    few partitions, LogAppendTime, records someone else wrote since the last run): status 3."""


class DecompressionError(Exception):
    """A compressed stream that cannot be decoded (raised by the codecs without file context;
    the record readers turn it into a :class:`DecodeError` naming the file and batch)."""


def parse_struct(schema, data, path=None, position: int | None = None, error=SeglogError):
    """Parse ``data`` with a construct schema; library errors become one seglog error.

    The bridge of STYLE habit 4: nothing above the engine ever sees ConstructError or
    struct.error.
    """
    from construct import ConstructError  # here: a command that never parses a schema need not import construct

    try:
        return schema.parse(data)
    except (ConstructError, struct.error, ValueError, UnicodeDecodeError) as exc:
        raise error(f"cannot parse {_schema_name(schema)}: {_first_line(exc)}", path, position) from None


def _schema_name(schema) -> str:
    return getattr(schema, "name", None) or type(schema).__name__


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__
