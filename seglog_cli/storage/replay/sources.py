"""What a replay reads: the source partitions its arguments hold and, for each, the records a
read_committed consumer of that partition would have been given, in offset order.

Arguments are partition dirs, log dirs (``<topic>-<n>.<id>-delete`` directories of a deleted
topic included, and tiered partitions given with their remote directory, read as one log as
``seglog dump`` reads them) or JSON Lines files written by ``seglog dump --format jsonl`` or
``seglog diff --export-lost``. The same partition found in several places (each broker's log
dir, a ``-future`` copy) is one source: the copy whose log ends last is read, the others are
named in the plan. Internal topics (``__consumer_offsets`` and the like) are never replayed;
the consumer groups' offsets are carried over from ``__consumer_offsets`` instead
(:mod:`~seglog_cli.storage.replay.groups`).

A record is sent when a read_committed consumer would see it: control batches never; records of
aborted transactions not, nor those of transactions with no marker yet (open, or hanging); the
records of a batch whose CRC fails are not sent either (counted in the plan; a salvage would cut
that batch out first). Each skipped record is counted by reason.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from seglog_cli.storage.dump.dump import DumpOptions, dump, partition_dirs_of, readable_partition_files, tiered_pairs
from seglog_cli.storage.dump.dump_events import ControlRecordEntry, Problem
from seglog_cli.storage.log import native
from seglog_cli.storage.log.batch_header import BatchHeader
from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.log.naming import parse_partition_dir_name
from seglog_cli.storage.log.partition_log import PartitionLog
from seglog_cli.storage.log.records import Record, RecordRun

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__cluster_metadata",
                             "__remote_log_metadata", "__share_group_state"})


@dataclass
class SourcePartition:
    """One topic partition to replay, and where its records are read."""

    topic: str
    partition: int
    directory: str | None = None  # the partition dir read (None: JSON Lines)
    remote: str | None = None  # its tiered remote directory, read first
    jsonl: str | None = None  # the JSON Lines file holding it
    copies: list[str] = field(default_factory=list)  # other copies found, not read
    outcomes: "TxnOutcomes | None" = field(default=None, repr=False, compare=False)  # see directory_outcomes

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def where(self) -> str:
        return self.jsonl if self.jsonl is not None else self.directory

    @property
    def log_dir(self) -> str | None:
        return None if self.directory is None else str(Path(self.directory).absolute().parent)


@dataclass
class Selection:
    """Which records of each source are wanted (dump's range options, and the read mode)."""

    from_offset: int | None = None
    to_offset: int | None = None
    from_timestamp: int | None = None
    to_timestamp: int | None = None
    include_aborted: bool = False  # read_uncommitted: aborted and open transactions' records too

    def dump_options(self, start: int | None = None) -> DumpOptions:
        first = self.from_offset
        if start is not None:
            first = start if first is None else max(first, start)
        return DumpOptions(deep_iteration=True, from_offset=first, to_offset=self.to_offset,
                           from_timestamp=self.from_timestamp, to_timestamp=self.to_timestamp)


@dataclass
class Skipped:
    """Records of a source not sent, by reason (control records are counted apart: they are
    never records a consumer sees)."""

    aborted: int = 0
    open: int = 0  # a transaction with no marker in the source (open or hanging)
    unknown: int = 0  # transactional records past damage, whose outcome the source does not say
    damaged: int = 0  # in batches whose CRC fails
    control: int = 0
    problems: list[str] = field(default_factory=list)  # damage met while reading (one line each)

    def add(self, verdict: str, count: int) -> None:
        """``count`` records not sent for ``verdict`` (a :func:`batch_verdict` other than "send")."""
        setattr(self, verdict, getattr(self, verdict) + count)

    def total(self) -> int:
        return self.aborted + self.open + self.unknown + self.damaged

    def as_dict(self) -> dict:
        return {"aborted": self.aborted, "open": self.open, "unknown": self.unknown, "damaged": self.damaged,
                "control": self.control, "problems": list(self.problems)}


# -- finding the sources ----------------------------------------------------------------------------

def find_sources(paths: list[str], topics: set[str] | None = None) -> tuple[list[SourcePartition], list[str]]:
    """The source partitions ``paths`` hold (``topics``: only these), sorted by topic and
    partition, and the JSON Lines files among the paths. A path that holds nothing to replay
    raises :class:`UnreadableInputError`."""
    found: dict[tuple[str, int], list[SourcePartition]] = {}
    jsonl_files = []
    directories = []
    for raw in paths:
        if os.path.isdir(raw):
            partitions = partition_dirs_of(raw)
            if not partitions:
                raise UnreadableInputError("no partition directories here (a log dir, a partition dir or a "
                                           "JSON Lines file was expected)", raw)
            directories.extend(partitions)
        elif os.path.isfile(raw):
            jsonl_files.append(raw)
        else:
            raise UnreadableInputError("no such file or directory" if not os.path.lexists(raw)
                                       else "not a directory or a regular file", raw)
    # a tiered partition's remote directory (LocalTieredStorage's) is read with its local one,
    # whichever arguments each came from, as seglog dump joins them
    remote_of = tiered_pairs(directories)
    joined = set(remote_of.values())
    for directory in directories:
        if directory in joined:
            continue
        name = parse_partition_dir_name(Path(directory).absolute().name)
        if name is None or name.topic in INTERNAL_TOPICS:
            continue
        if topics is not None and name.topic not in topics:
            continue
        source = SourcePartition(name.topic, name.partition, directory=directory, remote=remote_of.get(directory))
        found.setdefault(source.key, []).append(source)
    sources = [_longest(copies) for copies in found.values()]
    return sorted(sources, key=lambda s: s.key), jsonl_files


class TwoTopicsError(SeglogError):
    """Copies of one partition name hold two topics (a topic deleted and created again: its old
    dir, ``-stray`` or ``-delete``, beside the new one): which to replay is the user's choice."""


def _longest(copies: list[SourcePartition]) -> SourcePartition:
    """Of several copies of one partition, the one whose log ends last (then the first given);
    a partition found once is not opened here. Copies whose ``partition.metadata`` name
    different topic ids are not copies: :class:`TwoTopicsError`."""
    if len(copies) == 1:
        return copies[0]
    ids = {}
    for copy in copies:
        topic_id = _topic_id(copy.directory)
        if topic_id is not None:
            ids.setdefault(topic_id, copy.directory)
    if len(ids) > 1:
        (first_id, first), (second_id, second) = sorted(ids.items(), key=lambda item: str(item[1]))[:2]
        raise TwoTopicsError(f"{copies[0].label} is two topics: {first} (topic id {first_id}) and {second} "
                             f"(topic id {second_id}), a topic deleted and created again; give the partition dir "
                             f"of the one to replay")
    ends = [_log_end_offset(copy.directory) for copy in copies]
    best = copies[max(range(len(copies)), key=lambda i: -1 if ends[i] is None else ends[i])]
    best.copies = [c.directory for c in copies if c is not best]
    return best


def _topic_id(directory: str) -> str | None:
    """The topic id of a partition dir's ``partition.metadata`` (None: none, or unreadable)."""
    from seglog_cli.storage.log.checkpoints import read_partition_metadata
    try:
        return read_partition_metadata(Path(directory) / "partition.metadata").topic_id
    except (SeglogError, OSError):
        return None


def _log_end_offset(directory: str) -> int | None:
    try:
        log = PartitionLog(directory)
    except (UnreadableInputError, OSError):
        return None
    try:
        return log.log_end_offset()
    except (UnreadableInputError, OSError):
        return None
    finally:
        log.close()


# -- transaction outcomes ---------------------------------------------------------------------------

class TxnOutcomes:
    """Where each producer's transactions start and end in one partition, and how they ended:
    a transactional batch is committed, aborted, open (no marker yet) or unknown (no walk saw it)."""

    def __init__(self, spans: list[tuple[int, int, int | None, str]] = ()):
        # producer id -> sorted [(first offset, end offset or None, state)]
        self._by_producer: dict[int, tuple[list[int], list[tuple[int, int | None, str]]]] = {}
        for producer, first, end, state in sorted(spans, key=lambda s: (s[0], s[1])):
            starts, rows = self._by_producer.setdefault(producer, ([], []))
            starts.append(first)
            rows.append((first, end, state))

    def state(self, producer_id: int, offset: int) -> str:
        found = self._by_producer.get(producer_id)
        if found is None:
            return "unknown"
        starts, rows = found
        at = bisect.bisect_right(starts, offset) - 1
        if at < 0:
            return "unknown"
        first, end, state = rows[at]
        if end is None or offset <= end:
            return state
        return "unknown"


def directory_outcomes(source: SourcePartition) -> TxnOutcomes:
    """The transactions of a partition dir (and its tiered remote part), from its markers: walked
    once per source (the plan, the resume and the send share it)."""
    if source.outcomes is None:
        from seglog_cli.storage.coordinator.transactions import partition_transactions

        report = partition_transactions(source.directory, source.remote)
        source.outcomes = TxnOutcomes([(t.producer_id, t.first_offset, t.marker_offset if t.state != "open" else None,
                                        t.state) for t in report.transactions if t.first_offset is not None])
    return source.outcomes


def batch_verdict(source: SourcePartition, batch: BatchHeader, include_aborted: bool) -> str:
    """Whether a read_committed consumer is given ``batch``'s records ("send"), or why not:
    "control", "damaged" (its CRC fails), or its transaction's "aborted", "open" or "unknown".
    The transaction walk runs only once a transactional batch asks."""
    # BatchHeader's is_control, is_valid and is_transactional, from the fields (called for
    # every batch, twice: the properties' calls would cost more than the rest of the plan)
    magic, attributes = batch.magic, batch.attributes
    if magic >= 2 and attributes & 0x20:
        return "control"
    if batch.computed_crc is None or batch.crc != batch.computed_crc or batch.size < batch.min_size:
        return "damaged"
    if magic < 2 or not attributes & 0x10 or include_aborted:
        return "send"
    state = directory_outcomes(source).state(batch.producer_id, batch.base_offset)
    return "send" if state == "committed" else state


# -- reading records --------------------------------------------------------------------------------

# batches joined into one list until they hold this much (one batch more): few enough that
# their records are still in the CPU's caches when produced (1 MiB cost the sender ~10 % more)
JOINED_BYTES = 1 << 16


def directory_batches(source: SourcePartition, selection: Selection, skipped: Skipped,
                      start: int | None = None) -> Iterator[tuple[int, list]]:
    """``(codec, records)`` per source batch to send (consecutive batches of one codec joined),
    in offset order, from ``start`` (an offset) on: ``records`` are
    :class:`~seglog_cli.storage.log.records.Record` tuples (offset, timestamp, timestamp type,
    key, value, headers, ...). What is not sent is counted in ``skipped``. The transaction walk
    runs only once a transactional batch shows up."""
    options = selection.dump_options(start)
    files = list(readable_partition_files(source.directory, ("log",), options, source.remote))
    low = options.from_offset
    high = options.to_offset
    include_aborted = selection.include_aborted

    def cut(records: list) -> list:
        if (low is not None and records and records[0][0] < low) or (high is not None and records and
                                                                      records[-1][0] > high):
            return [r for r in records if (low is None or r[0] >= low) and (high is None or r[0] <= high)]
        return records

    ranged = low is not None or high is not None
    decode = native.module.decode_v2_batch if native.module is not None else None
    for event in dump(files, options):
        kind = type(event)
        if kind is RecordRun:
            # consecutive batches of one codec go as one list (about JOINED_BYTES of them): what
            # the sender does per list is then done once for them
            buffer, records_of = event.buffer, event.records
            joined, joined_codec, joined_bytes = None, None, 0
            for batch, section in zip(event.headers, event.sections):
                attributes = batch.attributes
                if (batch.magic == 2 and not attributes & 0x30 and batch.crc == batch.computed_crc
                        and batch.length >= 49):
                    # a valid data batch outside transactions: batch_verdict's "send", without its call;
                    # an uncompressed one decoded straight from the file (RecordRun.records' first case)
                    records = None
                    if section is None and decode is not None:
                        records = decode(Record, buffer, batch)
                    if records is None:
                        records = records_of(batch, section)
                else:
                    verdict = batch_verdict(source, batch, include_aborted)
                    if verdict != "send":
                        skipped.add(verdict, batch.records_count)
                        continue
                    records = records_of(batch, section)
                if ranged:
                    records = cut(records)
                if not records:
                    continue
                codec = attributes & 0x07
                if joined is not None and (codec != joined_codec or joined_bytes >= JOINED_BYTES):
                    yield joined_codec, joined
                    joined = None
                if joined is None:
                    joined, joined_codec, joined_bytes = records, codec, 0
                else:
                    joined += records
                joined_bytes += batch.length
            if joined is not None:
                yield joined_codec, joined
        elif kind is list:
            verdict, records = None, []
            for item in event:
                item_kind = type(item)
                if item_kind is Record:
                    if verdict == "send":
                        records.append(item)
                    elif verdict is not None:
                        skipped.add(verdict, 1)
                elif item_kind is BatchHeader:
                    if records:
                        yield codec, cut(records)
                        records = []
                    verdict = batch_verdict(source, item, include_aborted)
                    codec = item.compression if item.magic >= 1 else 0
                elif item_kind is ControlRecordEntry:
                    skipped.control += 1
            if records:
                records = cut(records)
                if records:
                    yield codec, records
        elif kind is Problem:
            skipped.problems.append(event.text if event.error is None else str(event.error))


def directory_records(source: SourcePartition, selection: Selection, skipped: Skipped,
                      start: int | None = None) -> Iterator[tuple]:
    """``(offset, timestamp, key, value, headers, codec)`` of every record of ``source`` to send,
    from ``start`` (an offset) on, in offset order (:func:`directory_batches`, one by one)."""
    for codec, records in directory_batches(source, selection, skipped, start):
        for record in records:
            yield record[0], record[1], record[3], record[4], record[5], codec
