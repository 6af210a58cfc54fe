"""JSON Lines as a replay source: the records ``seglog dump --format jsonl`` and ``seglog diff
--export-lost`` write, read exactly (:func:`~seglog_cli.storage.serde.jsonl_records.read_json_records`
with ``exact=True``: a lossy record stops the replay with one line naming the file and line).

A first pass finds the partitions each file holds and the outcome of every transaction in it
(a producer's transactional records up to its COMMIT or ABORT marker; records with no marker in
the file are an open transaction): a read_committed replay sends committed ones only. The
second pass, per partition, yields the records to send in the order the file holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from seglog_cli.storage.log.errors import UnreadableInputError
from seglog_cli.storage.log.codecs import CODEC_NAMES
from seglog_cli.storage.replay.sources import Selection, Skipped, SourcePartition, TxnOutcomes


CODEC_IDS = {name: codec for codec, name in CODEC_NAMES.items()}


@dataclass
class _Partition:
    source: SourcePartition
    first_at_or_after: int | None = None  # from_timestamp: the first offset whose timestamp is >= it
    first_after: int | None = None  # to_timestamp: the first offset whose timestamp is > it
    spans: list = field(default_factory=list)  # (producer, first, end or None, state)
    open: dict = field(default_factory=dict)  # producer -> first offset of its open transaction


class JsonLinesSources:
    def __init__(self, files: list[str], payload_encoding: str | None, selection: Selection,
                 topics: set[str] | None = None):
        self.files, self.encoding, self.selection, self.topics = files, payload_encoding, selection, topics
        self.notes: list[str] = []
        self._parts: dict[tuple[str, str, int], _Partition] = {}
        for path in files:
            self._first_pass(path)
        for part in self._parts.values():  # transactions with no marker in the file are open
            part.source.outcomes = TxnOutcomes(part.spans + [(p, f, None, "open") for p, f in part.open.items()])
        self.sources = [part.source for part in self._parts.values()]

    def _read(self, path: str):
        from seglog_cli.storage.serde.jsonl_records import read_json_records
        return read_json_records(path, default_encoding=self.encoding, exact=True)

    def _first_pass(self, path: str) -> None:
        selection = self.selection
        found = False
        for record in self._read(path):
            if record.topic is None or record.partition is None or record.offset is None:
                raise UnreadableInputError(f"line {record.line}: a record without topic, partition or offset cannot "
                                           f"be replayed", path)
            if self.topics is not None and record.topic not in self.topics:
                continue
            found = True
            key = (path, record.topic, record.partition)
            part = self._parts.get(key)
            if part is None:
                part = self._parts[key] = _Partition(SourcePartition(record.topic, record.partition, jsonl=path))
            if record.is_control:
                first = part.open.pop(record.producer_id, None)
                control = getattr(record, "control_type", None)
                if first is not None and control in ("COMMIT", "ABORT"):
                    part.spans.append((record.producer_id, first, record.offset,
                                       "committed" if control == "COMMIT" else "aborted"))
                continue
            if record.is_transactional and record.producer_id is not None:
                part.open.setdefault(record.producer_id, record.offset)
            stamp = record.timestamp
            if selection.from_timestamp is not None and part.first_at_or_after is None and stamp is not None \
                    and stamp >= selection.from_timestamp:
                part.first_at_or_after = record.offset
            if selection.to_timestamp is not None and part.first_after is None and stamp is not None \
                    and stamp > selection.to_timestamp:
                part.first_after = record.offset
        if not found:
            self.notes.append(f"{path}: no records to replay in it")

    def records_factory(self, source: SourcePartition):
        return lambda: self.records(source, None, Skipped())

    def records(self, source: SourcePartition, start: int | None, skipped: Skipped) -> Iterator[tuple]:
        """``(offset, timestamp, key, value, headers, codec)`` of the records of ``source`` to send."""
        key = (source.jsonl, source.topic, source.partition)
        part, outcomes = self._parts[key], source.outcomes
        low, high = self._range(part)
        if start is not None:
            low = start if low is None else max(low, start)
        include_aborted = self.selection.include_aborted
        for record in self._read(source.jsonl):
            if record.topic != source.topic or record.partition != source.partition:
                continue
            offset = record.offset
            if (low is not None and offset < low) or (high is not None and offset > high):
                continue
            if record.is_control:
                skipped.control += 1
                continue
            if record.is_transactional and not include_aborted:
                state = outcomes.state(record.producer_id, offset)
                if state != "committed":
                    skipped.add(state, 1)
                    continue
            codec = CODEC_IDS.get(record.compression, 0)
            yield offset, record.timestamp if record.timestamp is not None else -1, record.key, record.value, \
                record.headers, codec

    def batches(self, source: SourcePartition, start: int | None, skipped: Skipped) -> Iterator[tuple[int, list]]:
        """``(codec, records)`` runs of records of one codec, each record shaped as the first six
        fields of a :class:`~seglog_cli.storage.log.records.Record` (what replay sends from)."""
        codec_now, run = None, []
        for offset, stamp, key, value, headers, codec in self.records(source, start, skipped):
            if codec != codec_now or len(run) >= 1024:
                if run:
                    yield codec_now, run
                codec_now, run = codec, []
            run.append((offset, stamp, 0, key, value, headers))
        if run:
            yield codec_now, run

    def _range(self, part: _Partition) -> tuple[int | None, int | None]:
        s = self.selection
        low, high = s.from_offset, s.to_offset
        if s.from_timestamp is not None:
            found = part.first_at_or_after if part.first_at_or_after is not None else 2**63 - 1
            low = found if low is None else max(low, found)
        if s.to_timestamp is not None and part.first_after is not None:
            high = part.first_after - 1 if high is None else min(high, part.first_after - 1)
        return low, high
