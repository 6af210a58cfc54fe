"""Kafka's text checkpoint files and ``partition.metadata`` (spec §13.1, §13.2): read and write.

Layout of a checkpoint file (``CheckpointFile``), UTF-8, ``\\n`` after every line::

    <version>\\n          int32, must equal the reader's version
    <count>\\n            int32, number of entry lines that follow
    <entry>\\n            count times; fields separated by one space when written

    file                              location        version  entry fields
    recovery-point-offset-checkpoint  log dir root    0        topic partition(int32) offset(int64)
    replication-offset-checkpoint     log dir root    0        topic partition(int32) offset(int64)
    log-start-offset-checkpoint       log dir root    0        topic partition(int32) offset(int64)
    cleaner-offset-checkpoint         log dir root    0        topic partition(int32) offset(int64)
    leader-epoch-checkpoint           partition dir   0        epoch(int32) start_offset(int64)

Layout of ``partition.metadata`` (``PartitionMetadataFile``), no newline after the last line::

    version: <int32 >= 0>\\ntopic_id: <22-char base64url Uuid>

Reading mirrors ``CheckpointFile.CheckpointReadBuffer.read`` and
``PartitionMetadataReadBuffer.read``: lines end at ``\\n``, ``\\r`` or ``\\r\\n`` (Java
``BufferedReader.readLine``); an empty file or a missing count line means "no entries"; every
line after the count is an entry (extra lines or blank lines count, so they trip the count
check); fields are split on runs of ASCII whitespace, a leading blank gives an empty first
field; numbers follow ``Integer.parseInt``/``Long.parseLong`` (optional sign, decimal digits,
no spaces, range-checked). Where Kafka lets a raw Java exception escape (a non-number inside an
entry line, a negative count, an empty ``partition.metadata``, a bad Uuid) this module raises
:class:`CheckpointError` with Kafka's wording where it has one.

Writing mirrors ``CheckpointFile.write``: ``<file>.tmp``, flush + fsync, atomic rename over
``<file>``, fsync of the directory.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Callable, Iterable, Mapping, TypeVar

from seglog_cli.storage.log.errors import CheckpointError, SeglogError
from seglog_cli.storage.log import files
from seglog_cli.storage.log.files import read_small_file
from seglog_cli.storage.log.java_text import decode_uuid, java_lines, java_parse_int, java_split

T = TypeVar("T")

OFFSET_CHECKPOINT_VERSION = 0
LEADER_EPOCH_CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0
TMP_SUFFIX = ".tmp"
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

_JAVA_SPACES = re.compile(r"[ \t\n\x0b\f\r]+")  # Java regex \s (ASCII only)
_METADATA_SEPARATOR = re.compile(r":[ \t\n\x0b\f\r]+")  # PartitionMetadataReadBuffer ":\s+"
_INT_BITS = {32: 1 << 31, 64: 1 << 63}
_PLAIN_OFFSET_ENTRY = re.compile(r"([^ \t\n\x0b\f\r]+) ([+-]?[0-9]{1,10}) ([+-]?[0-9]{1,19})")
_SHOWN_CHARS = 200


@dataclass(frozen=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class EpochEntry:
    """One ``leader-epoch-checkpoint`` line: the first offset written in ``epoch``."""

    epoch: int
    start_offset: int


@dataclass(frozen=True)
class PartitionMetadata:
    version: int
    topic_id: str  # base64url, as written; decodes to 16 bytes


# ---------------------------------------------------------------------------------------------
# Messages and decoding


def show(text: str) -> str:
    """Text fit for a one-line message: control characters escaped, long text cut."""
    shown = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text[:_SHOWN_CHARS])
    return shown + "..." if len(text) > _SHOWN_CHARS else shown


def location(path: str | Path | None) -> str:
    """The file as Kafka names it in messages (``toAbsolutePath``, not normalised)."""
    return "<bytes>" if path is None else str(Path(path).absolute())


def decode_utf8(data: bytes, path: str | Path | None) -> str:
    """Strict UTF-8 (``Files.newBufferedReader(path, UTF_8)`` reports malformed input)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CheckpointError(f"Input is not valid UTF-8 (MalformedInputException) at byte {exc.start}, "
                              f"line {line}", path) from None


# ---------------------------------------------------------------------------------------------
# Generic checkpoint format


def parse_checkpoint(data: bytes, version: int, parse_entry: Callable[[str], T | None],
                     path: str | Path | None = None) -> list[T]:
    """Entries of a checkpoint file; ``parse_entry`` returns None for a wrong field count.

    ``parse_entry`` may raise ``ValueError`` for a field that is not a number (Kafka: a raw
    NumberFormatException); it becomes a CheckpointError naming the line.
    """
    where = location(path)
    lines = java_lines(decode_utf8(data, path))
    if not lines:
        return []
    read_version = _header_int(lines[0], 1, where, path)
    if read_version != version:
        raise CheckpointError(f"Unrecognised version:{read_version}, expected version: {version} "
                              f"in checkpoint file at: {where} (line 1)", path)
    if len(lines) == 1:
        return []
    expected = _header_int(lines[1], 2, where, path)
    if expected < 0:
        raise CheckpointError(f"Illegal Capacity: {expected} (negative entry count on line 2 of "
                              f"checkpoint file [{where}])", path)
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        try:
            entry = parse_entry(line)
        except ValueError as exc:
            raise CheckpointError(f"{_malformed(where, line)} (line {number}: {exc})", path) from None
        if entry is None:
            raise CheckpointError(f"{_malformed(where, line)} (line {number})", path)
        entries.append(entry)
    if len(entries) != expected:
        raise CheckpointError(f"Expected [{expected}] entries in checkpoint file [{where}], "
                              f"but found only [{len(entries)}]", path)
    return entries


def read_checkpoint(path: str | Path, version: int, parse_entry: Callable[[str], T | None]) -> list[T]:
    return parse_checkpoint(read_small_file(path), version, parse_entry, path)


def format_checkpoint(lines: Iterable[str], version: int) -> bytes:
    """``CheckpointWriteBuffer.write``: version, count, one line per entry, each ending ``\\n``."""
    lines = list(lines)
    return "".join(f"{line}\n" for line in [str(version), str(len(lines)), *lines]).encode("utf-8")


def write_atomically(path: str | Path, data: bytes) -> None:
    """``files.write_atomically`` with failures reported as :class:`CheckpointError`."""
    files.write_atomically(path, data, error=CheckpointError)


def _header_int(line: str, number: int, where: str, path) -> int:
    value = java_parse_int(line)
    if value is None:
        raise CheckpointError(f"{_malformed(where, line)} (line {number})", path)
    return value


def _malformed(where: str, line: str) -> str:
    return f"Malformed line in checkpoint file [{where}]: {show(line)}"


def _number(text: str, bits: int) -> int:
    value = java_parse_int(text, bits)
    if value is None:
        raise ValueError(f'For input string: "{show(text)}"')
    return value


# ---------------------------------------------------------------------------------------------
# Offset checkpoints and the leader epoch checkpoint


def parse_offset_entry(line: str) -> tuple[TopicPartition, int] | None:
    """``OffsetCheckpointFile.Formatter.fromString``."""
    plain = _PLAIN_OFFSET_ENTRY.fullmatch(line)  # what Kafka writes: one regex, no splitting
    if plain is not None:
        topic, partition, offset = plain.groups()
        partition, offset = int(partition), int(offset)
        if -_INT_BITS[32] <= partition < _INT_BITS[32] and -_INT_BITS[64] <= offset < _INT_BITS[64]:
            return TopicPartition(topic, partition), offset
    fields = java_split(_JAVA_SPACES, line)
    if len(fields) != 3:
        return None
    return TopicPartition(fields[0], _number(fields[1], 32)), _number(fields[2], 64)


def parse_offset_checkpoint(data: bytes, path: str | Path | None = None) -> dict[TopicPartition, int]:
    """Offsets by partition, in file order; a repeated partition keeps its last offset (HashMap)."""
    return dict(parse_checkpoint(data, OFFSET_CHECKPOINT_VERSION, parse_offset_entry, path))


def read_offset_checkpoint(path: str | Path) -> dict[TopicPartition, int]:
    """``recovery-point-offset-checkpoint``, ``replication-``, ``log-start-``, ``cleaner-``."""
    return parse_offset_checkpoint(read_small_file(path), path)


def offset_checkpoint_view(path: str | Path) -> Mapping[TopicPartition, int]:
    """The offsets of a log dir's checkpoint file, read-only, parsed once per process for each
    version of the file (its device, inode, size, mtime and ctime): what per-partition code
    looks its partition up in, so a log dir of N partitions reads each checkpoint once, not N
    times. Errors are those of :func:`read_offset_checkpoint`, kept and raised again."""
    try:
        st = os.stat(path)
    except OSError:
        return read_offset_checkpoint(path)  # raises its one-line error
    key = (os.fspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    found = _OFFSET_VIEWS.get(key)
    if found is None:
        try:
            found = MappingProxyType(read_offset_checkpoint(path))
        except SeglogError as exc:
            found = exc
        if len(_OFFSET_VIEWS) >= _MAX_VIEWS:
            _OFFSET_VIEWS.clear()
        _OFFSET_VIEWS[key] = found
    if isinstance(found, SeglogError):
        raise found
    return found


_OFFSET_VIEWS: dict[tuple, Mapping[TopicPartition, int] | SeglogError] = {}
_MAX_VIEWS = 64


def format_offset_checkpoint(offsets: Mapping[TopicPartition, int]) -> bytes:
    lines = (f"{tp.topic} {tp.partition} {offset}" for tp, offset in offsets.items())
    return format_checkpoint(lines, OFFSET_CHECKPOINT_VERSION)


def write_offset_checkpoint(path: str | Path, offsets: Mapping[TopicPartition, int]) -> None:
    write_atomically(path, format_offset_checkpoint(offsets))


def parse_epoch_entry(line: str) -> EpochEntry | None:
    """``LeaderEpochCheckpointFile.Formatter.fromString``."""
    fields = java_split(_JAVA_SPACES, line)
    if len(fields) != 2:
        return None
    return EpochEntry(_number(fields[0], 32), _number(fields[1], 64))


def parse_leader_epoch_checkpoint(data: bytes, path: str | Path | None = None) -> list[EpochEntry]:
    return parse_checkpoint(data, LEADER_EPOCH_CHECKPOINT_VERSION, parse_epoch_entry, path)


def read_leader_epoch_checkpoint(path: str | Path) -> list[EpochEntry]:
    return parse_leader_epoch_checkpoint(read_small_file(path), path)


def format_leader_epoch_checkpoint(entries: Iterable[EpochEntry]) -> bytes:
    lines = (f"{entry.epoch} {entry.start_offset}" for entry in entries)
    return format_checkpoint(lines, LEADER_EPOCH_CHECKPOINT_VERSION)


def write_leader_epoch_checkpoint(path: str | Path, entries: Iterable[EpochEntry]) -> None:
    write_atomically(path, format_leader_epoch_checkpoint(entries))


# ---------------------------------------------------------------------------------------------
# partition.metadata


def parse_partition_metadata(data: bytes, path: str | Path | None = None) -> PartitionMetadata:
    """``PartitionMetadataReadBuffer.read``: only the first two lines matter; keys are not checked."""
    where = location(path)
    lines = java_lines(decode_utf8(data, path))
    version_text = _metadata_value(lines, 0, where, path)
    version = java_parse_int(version_text)
    if version is None:
        raise CheckpointError(f"{_malformed(where, lines[0])} (line 1)", path)
    if version < PARTITION_METADATA_VERSION:
        raise CheckpointError(f"Unrecognized version of partition metadata file + ({where}): {version}", path)
    topic_id = _metadata_value(lines, 1, where, path)
    try:
        raw = decode_uuid(topic_id)
    except ValueError as exc:
        raise CheckpointError(f"Invalid topic ID in partition metadata file ({where}) (line 2): "
                              f"{show(str(exc))}", path) from None
    if raw == bytes(16):
        raise CheckpointError(f"Invalid topic ID in partition metadata file ({where})", path)
    return PartitionMetadata(version, topic_id)


def read_partition_metadata(path: str | Path) -> PartitionMetadata:
    return parse_partition_metadata(read_small_file(path), path)


def format_partition_metadata(metadata: PartitionMetadata) -> bytes:
    """``PartitionMetadata.encode``: two lines, no newline at the end."""
    return f"version: {metadata.version}\ntopic_id: {metadata.topic_id}".encode("utf-8")


def write_partition_metadata(path: str | Path, metadata: PartitionMetadata) -> None:
    write_atomically(path, format_partition_metadata(metadata))


def _metadata_value(lines: list[str], index: int, where: str, path) -> str:
    if index >= len(lines):
        raise CheckpointError(f"Missing line {index + 1} in partition metadata file ({where}) "
                              "(Kafka: NullPointerException)", path)
    fields = java_split(_METADATA_SEPARATOR, lines[index])
    if len(fields) != 2:
        raise CheckpointError(f"{_malformed(where, lines[index])} (line {index + 1})", path)
    return fields[1]
