"""Findings: damage and oddities reported as data (STYLE habit 5).

A finding has a stable ``code``, a ``severity``, the file, the byte ``position`` (and ``length``
of the affected region when known), the logical ``offset`` when known and a one-line
``message``. ``kafka_message`` keeps the exact text Kafka's own tools print for the same
condition, when they print one.

Codes are part of seglog's public interface: never rename one, only add.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Severity(str, Enum):
    INFO = "info"  # expected state, e.g. a preallocated index of an active segment
    WARNING = "warning"  # a broker repairs it by itself at start-up (e.g. a torn tail)
    ERROR = "error"  # damage: data a broker would lose or refuse


class Code:
    """Stable finding codes of the ``.log`` scan (more are added by verify)."""

    TORN_TAIL = "TORN_TAIL"  # the last batch is incomplete: a crash during append
    ZERO_FILLED_TAIL = "ZERO_FILLED_TAIL"  # zeros from here to EOF: preallocation or a crash
    TRAILING_GARBAGE = "TRAILING_GARBAGE"  # bytes after the last batch that frame no batch
    CORRUPT_REGION = "CORRUPT_REGION"  # damage in the middle of the file, valid batches follow
    BATCH_SIZE_TOO_SMALL = "BATCH_SIZE_TOO_SMALL"  # size field below 14 (v2: below 61)
    BATCH_CRC_MISMATCH = "BATCH_CRC_MISMATCH"  # stored CRC differs from the computed one


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    path: str
    position: int
    message: str
    length: int | None = None
    offset: int | None = None
    kafka_message: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        where = f"{self.path}: position {self.position}"
        if self.offset is not None:
            where += f" (offset {self.offset})"
        return f"{where}: {self.code}: {self.message}"

    def as_dict(self) -> dict:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "path": self.path,
            "position": self.position,
            "length": self.length,
            "offset": self.offset,
            "message": self.message,
        }
