"""Loading the metadata image from a ``__cluster_metadata-0`` directory, at an offset or a time.

As a KRaft node does at start-up (``KafkaMetadataLog`` / ``MetadataLoader``): the latest
snapshot ``<end offset>-<epoch>.checkpoint`` at or below the target is replayed as a whole
image, then the log's records from the snapshot's end offset on. A snapshot with end offset E
holds the records below E, so :func:`load_image` with ``at_offset=N`` gives the image of the
records below N (the image a snapshot ``N-<epoch>.checkpoint`` would hold); ``at_time=T`` the
image of every batch whose max timestamp is at most T. Offline the high watermark is unknown:
the log's last records count as committed.

Records are streamed from memory-mapped files, one batch at a time; only the record types the
caller needs are decoded (the frame's type byte is peeked first), the frequent ones without
construct (:mod:`fast_records`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from seglog_cli.formats.metadata_records import RECORD_TYPES
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.log_dir_files import read_meta_properties
from seglog_cli.storage.log.naming import METADATA_TOPIC, parse_kraft_snapshot_name, parse_segment_file_name
from seglog_cli.storage.log.records import read_records
from seglog_cli.storage.metadata.delta import REPLAYED_TYPES, MetadataDelta
from seglog_cli.storage.metadata.fast_records import fast_decode
from seglog_cli.storage.metadata.image import MetadataImage, Provenance
from seglog_cli.storage.serde.metadata_decoder import MetadataRecordError, decode_metadata_record, read_frame

METADATA_DIR = METADATA_TOPIC + "-0"


class MetadataLogError(UnreadableInputError):
    """No metadata log where one was asked for, or a target it cannot reach."""


@dataclass(frozen=True)
class MetadataRecordAt:
    """One decoded record of the log with its offset and its batch's max timestamp."""

    offset: int
    timestamp: int
    type_name: str
    data: dict


@dataclass
class LoadedImage:
    """An image and how it was read: the directory, the node (``meta.properties``), the snapshot
    it started from, ``end_offset`` (the records below it are in the image), records Kafka could
    not decode (skipped), records dropped with aborted transactions, and the records of a
    transaction still open at the target (not applied)."""

    image: MetadataImage
    directory: Path
    node_id: int | None
    snapshot: str | None
    end_offset: int
    undecodable: int = 0
    aborted: int = 0
    open_transaction: int = 0


def find_metadata_dir(path: str | Path) -> Path:
    """``path`` itself when it is a ``__cluster_metadata-0`` dir, else the one in it (a broker's
    or controller's log dir)."""
    path = Path(path)
    for candidate in (path, path / METADATA_DIR):
        if candidate.is_dir() and candidate.name == METADATA_DIR:
            return candidate
    if not path.exists():
        raise MetadataLogError(f"no such directory: {path}")
    raise MetadataLogError(f"no {METADATA_DIR} in {path} (not a KRaft node's log dir)")


def node_id_of(directory: Path) -> int | None:
    """``node.id`` from ``meta.properties`` of the log dir holding the metadata log."""
    try:
        return read_meta_properties(Path(directory).parent / "meta.properties").node_id
    except (SeglogError, OSError):
        return None


def kraft_snapshots(directory: Path) -> list[tuple[int, int, Path]]:
    """``(end offset, epoch, path)`` of every snapshot, lowest first."""
    found = [(parse_kraft_snapshot_name(p.name), p) for p in Path(directory).glob("*.checkpoint")]
    return sorted((ident.end_offset, ident.epoch, p) for ident, p in found if ident is not None)


def log_segments(directory: Path) -> list[Path]:
    names = [(parse_segment_file_name(p.name), p) for p in Path(directory).glob("*.log")]
    return [p for _, p in sorted((n.base_offset, p) for n, p in names if n is not None and not n.is_temp)]


def offset_at_time(directory: Path, time_ms: int) -> int:
    """The end offset of the image at ``time_ms``: the base offset of the first batch whose max
    timestamp is after it (batch headers only), else the log end offset."""
    end = 0
    for path in log_segments(directory):
        with MappedFile(path) as mapped:
            for batch in LogScan(mapped, 0, None):
                if batch.max_timestamp > time_ms:
                    return batch.base_offset
                end = batch.last_offset + 1
    return end


def iter_records(path: Path, start: int = 0, end: int | None = None, types: frozenset | None = None,
                 skipped: list | None = None, keep=None, topic_ids: dict | None = None) -> Iterator[MetadataRecordAt]:
    """The decoded records of one file (a segment or a snapshot) with ``start <= offset < end``;
    ``types`` (api keys): only those are decoded; ``keep(value)``: a record of those types it
    says False of is not decoded either. A record Kafka cannot decode is counted in ``skipped``
    (a one-element list) and left out. ``topic_ids``: the raw topic ids' text met so far (kept
    from one file to the next by the caller)."""
    topic_ids = {} if topic_ids is None else topic_ids
    with MappedFile(path) as mapped:
        for batch in LogScan(mapped, 0, None):
            if end is not None and batch.base_offset >= end:
                return
            if batch.is_control or batch.last_offset < start:
                continue
            for record in read_records(mapped.buffer, batch, str(path)):
                if record.offset < start or (end is not None and record.offset >= end):
                    continue
                try:
                    if types is not None and not wanted(record.value, types):
                        continue
                    if keep is not None and not keep(record.value):
                        continue
                    fast = fast_decode(record.value, topic_ids)
                    if fast is None:
                        decoded = decode_metadata_record(record.value)
                        fast = decoded.type_name, decoded.data
                except MetadataRecordError:
                    if skipped is not None:
                        skipped[0] += 1
                    continue
                yield MetadataRecordAt(record.offset, batch.max_timestamp, fast[0], fast[1])


def wanted(value, types: frozenset) -> bool:
    """Whether this record's type is in ``types`` (read from its frame, nothing decoded); a
    frame Kafka cannot read raises :class:`MetadataRecordError`."""
    if value is not None and len(value) >= 2 and value[0] == 1 and value[1] < 0x80:
        return value[1] in types  # frame version 1 and a one-byte type: what Kafka writes
    if value is None:
        raise MetadataRecordError("Error while reading frame version")
    api_key, _ = read_frame(io.BytesIO(bytes(value[:16])))
    return api_key in types


def api_keys(type_names) -> frozenset:
    return frozenset(t.api_key for t in RECORD_TYPES.values() if t.name in set(type_names))


ALL_TYPES = api_keys(REPLAYED_TYPES | {"NO_OP_RECORD"})  # NoOps only move the image's offset on


def load_image(path: str | Path, at_offset: int | None = None, at_time: int | None = None, *,
               observer=None, types: frozenset | None = None, from_start: bool = False, keep=None) -> LoadedImage:
    """The image of the metadata log in ``path`` (a ``__cluster_metadata-0`` dir or a log dir
    holding one) below ``at_offset``, or at ``at_time`` (epoch ms), or at the log end.

    ``observer`` hears of every partition and broker change the log's records make (not the
    snapshot's); ``from_start``: start from the log's first offset when it is there (no snapshot),
    so the observer hears the whole history. ``types``: the api keys to replay (default all);
    ``keep(value)``: a record it says False of is not replayed (a filter on the raw value, e.g.
    the topic id of partition records)."""
    directory = find_metadata_dir(path)
    segments = log_segments(directory)
    if at_time is not None:
        at_offset = offset_at_time(directory, at_time)
    log_start = _log_start(segments)
    snapshots = [s for s in kraft_snapshots(directory) if at_offset is None or s[0] <= at_offset]
    if from_start and log_start == 0:
        snapshots = []
    elif log_start is not None and from_start:
        snapshots = [s for s in snapshots if s[0] >= log_start][:1] or snapshots[-1:]
    snapshot = snapshots[-1] if snapshots else None
    if snapshot is None and log_start not in (None, 0) and at_offset is not None:
        raise MetadataLogError(f"{directory}: offset {at_offset} is before the log start {log_start} "
                               "and no snapshot is at or below it")
    types = ALL_TYPES if types is None else types
    delta = MetadataDelta(MetadataImage())
    skipped = [0]
    topic_ids: dict = {}
    start = 0
    if snapshot is not None:
        start, _, snapshot_path = snapshot
        where = f"snapshot {snapshot_path.name}"
        for record in iter_records(snapshot_path, 0, None, types, skipped, keep, topic_ids):
            delta.replay(record.type_name, record.data, -1, -1, where)
        delta.image.provenance = Provenance(start - 1, -1, snapshot_path.name)
    delta.observer = observer
    label = directory.name
    for segment in segments:
        for record in iter_records(segment, start, at_offset, types, skipped, keep, topic_ids):
            delta.replay(record.type_name, record.data, record.offset, record.timestamp,
                         f"{label} offset {record.offset}")
    end = max(start, delta.image.provenance.offset + 1)
    if at_offset is not None:
        end = min(at_offset, max(end, _log_end(segments)))  # a target past the log end: the log end
    return LoadedImage(delta.image, directory, node_id_of(directory),
                       None if snapshot is None else snapshot[2].name, end, skipped[0], delta.aborted,
                       len(delta.pending or ()))


def _log_end(segments: list[Path]) -> int:
    """The offset after the last batch of the last segment holding one (batch headers only)."""
    for path in reversed(segments):
        with MappedFile(path) as mapped:
            end = None
            for batch in LogScan(mapped, 0, None):
                end = batch.last_offset + 1
        if end is not None:
            return end
    return 0


def _log_start(segments: list[Path]) -> int | None:
    if not segments:
        return None
    return parse_segment_file_name(segments[0].name).base_offset
