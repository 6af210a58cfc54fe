"""Verifying one segment: its ``.log`` batch by batch, and its ``.index``/``.timeindex``
against it, in one streaming pass (memory does not grow with the segment).

Shallow checks (every batch): framing (torn tails, zero-filled tails, trailing garbage, damage
in the middle with resync), size, CRC, magic, codec, offset order, relative offset overflow,
the first batch against the file's base offset (the offset order in ``offset_order``). Deep
checks (``level="deep"``, in ``deep_records``): every record decoded as Kafka decodes it, record
offsets within their batch, the batch's last offset and max timestamp against its records,
control records. The offset and time index entries are checked against the batches as the scan
passes them (Kafka's lookup depends on both).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log import native
from seglog_cli.storage.log.batch_header import HEADER_SIZE_UP_TO_MAGIC, BatchHeader, read_batch_header
from seglog_cli.storage.log.batches import NATIVE_RUN, LogScan, VerifyRun
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import READ_WHOLE_BYTES, MappedFile
from seglog_cli.storage.log.findings import Code, Finding, Severity
from seglog_cli.storage.log.naming import parse_segment_file_name
from seglog_cli.storage.verify.deep_records import DeepRecordChecks
from seglog_cli.storage.verify.index_checks import NO_INDEX, IndexChecker, TimeIndexChecker
from seglog_cli.storage.verify.offset_order import OffsetOrder
from seglog_cli.storage.log.segments import LogSegment

SHALLOW, DEEP = "shallow", "deep"
ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
MAX_HELD = 64  # stretches held back for a late outlier verdict (bounds memory on pathological logs)


@dataclass
class TxnEvent:
    """A transactional batch, for the partition's transaction index check."""

    position: int
    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    is_control: bool
    marker: str | None = None  # "ABORT" / "COMMIT" for control batches, once read


@dataclass
class SegmentSummary:
    base_offset: int
    path: str
    size: int = 0
    batches: int = 0
    records: int = 0  # deep only
    first_offset: int | None = None
    last_offset: int | None = None
    max_timestamp: int = -1
    end_position: int = 0
    damaged: bool = False  # a batch or region whose header fields cannot be trusted
    txn_events: list[TxnEvent] = field(default_factory=list)
    epochs: list[tuple[int, int, int]] = field(default_factory=list)  # (position, leader epoch, first base offset)
    unknown_offsets: list[tuple[int, float]] = field(default_factory=list)  # (lo, hi): unreadable in between


class _Stretch:
    """Batches passed by the scan, held back until none of them can still be blamed as an
    ``outlier`` (known only once a later batch has been read) before the index checks see them."""

    __slots__ = ("packed", "trusted", "end", "damage_after")

    def __init__(self, packed: bytes, trusted: bytes | None, end: int):
        self.packed = packed  # 5 int64 per batch, as VerifyRun.packed
        self.trusted, self.end = trusted, end  # trusted: one byte per batch, None when all are
        self.damage_after = False


class SegmentVerifier:
    """Verifies a segment; findings are appended to ``findings``.

    Damage is reported where it is, once: batches whose headers cannot be trusted (CRC or magic
    failed, offsets out of order) and unreadable regions are kept out of the index, time index,
    transaction and leader-epoch checks, whose entries there cannot be judged.
    """

    def __init__(self, segment: LogSegment, findings: list[Finding], *, active: bool, level: str = SHALLOW,
                 want_txn: bool = True, indexes: bool = True, deep_jobs: int = 1):
        self.segment = segment
        self.findings = findings
        self.active = active
        self.level = level
        self.want_txn = want_txn
        self.indexes = indexes
        self.path = segment.log_file
        self.summary = SegmentSummary(segment.base_offset, self.path)
        self.deep = DeepRecordChecks(self.path, findings, self.summary, deep_jobs)  # deep level: the records
        self.order = OffsetOrder(segment.base_offset)
        self.blamed: set[int] = set()  # positions of batches whose offsets are out of order
        self.damaged_ranges: list[tuple[int, int]] = []  # byte ranges that hold no trusted batch
        self.unknown_offsets: list[tuple[int, float]] = []  # (lo, hi): offsets strictly between are unreadable
        self._held: list[_Stretch] = []
        self._last_trusted: int = segment.base_offset - 1
        self._window_lo: int | None = None  # an open unknown-offsets window
        self._first_finding: Finding | None = None  # SEGMENT_BASE_GAP / _MISMATCH of the first batch
        self._first_position: int | None = None
        self._overflows: dict[int, Finding] = {}
        self._lost_before_first = False  # damage before the first trusted batch
        self.tail_damaged = False  # a torn, zero-filled or garbage tail of the .log was found

    def add(self, code, severity, position, message, offset=None, length=None, path=None) -> Finding:
        finding = Finding(code, severity, path or self.path, position, message, length=length, offset=offset)
        self.findings.append(finding)
        return finding

    # -- the pass ----------------------------------------------------------------------------

    def run(self) -> SegmentSummary:
        try:
            mapped = MappedFile(self.path)
        except SeglogError as exc:
            self.add(Code.UNREADABLE_FILE, ERROR, None, exc.message)
            return self.summary
        with mapped:
            self._mapped = mapped
            self.summary.size = mapped.size
            if self.indexes:
                self.index = IndexChecker.open(self.segment, mapped.size, self, self.active)
                self.time_index = TimeIndexChecker.open(self.segment, self, self.active)
            else:
                self.index = self.time_index = NO_INDEX
            try:
                if not self._whole_run(mapped):
                    self._scan_all(mapped)
                self.deep.drain(mapped)
            finally:
                self.deep.close()
            while self._held:
                self._flush()
            self.index.finish(self.summary.end_position)
            self.time_index.finish(self.summary.max_timestamp)
            self.index = self.time_index = NO_INDEX  # the checkers point back here: no cycle left for the GC
        self.summary.last_offset = self.order.state[0]
        self.summary.unknown_offsets = list(self.unknown_offsets)
        if self._window_lo is not None:
            self.summary.unknown_offsets.append((self._window_lo, float("inf")))
        if self.summary.batches == 0 and not self.active and not any(f.path == self.path for f in self.findings):
            self.add(Code.EMPTY_SEGMENT, INFO, None, "a rolled segment without a batch")
        return self.summary

    def _whole_run(self, mapped) -> bool:
        """The common case in one call of the compiled walker: a file read into memory that is
        well-framed batches from its first byte to its last, none with an anomaly. False, with
        nothing done, otherwise: the scan then takes the file from the start."""
        compiled = native.module
        size = mapped.size
        if compiled is None or type(mapped) is not MappedFile or not HEADER_SIZE_UP_TO_MAGIC < size <= READ_WHOLE_BYTES:
            return False
        next_pos, count, state, packed, anomalies, txn, epochs = compiled.verify_walk(
            mapped.data, 0, size, True, NATIVE_RUN, self.order.state, self.segment.base_offset, self.want_txn)
        if next_pos != size or anomalies or not count:
            return False
        self.order.state = state
        self._run(mapped, VerifyRun(0, size, count, packed, anomalies, txn, epochs))
        self.summary.end_position = size
        return True

    def _scan_all(self, mapped) -> None:
        """The file through :class:`LogScan`: damage reported, skipped and resynchronised on."""
        scan = self._scan = LogScan(mapped, check_crc=True, resync=True)
        seen = 0
        for item in scan.verify_runs(self.segment.base_offset, self.want_txn, self.order):
            if len(scan.findings) > seen:  # damage between the held stretch and this one
                self._damage_after(scan.findings[seen:])
                seen = len(scan.findings)
            if type(item) is VerifyRun:
                self._run(mapped, item)
            else:
                self._batch(mapped, item)
        if len(scan.findings) > seen:
            self._damage_after(scan.findings[seen:])
        self.summary.end_position = scan.end_position
        self._scan_findings(scan)

    def _run(self, mapped, run: VerifyRun) -> None:
        summary = self.summary
        summary.batches += run.count
        summary.epochs.extend(run.epochs)  # before the anomalies, which may retract one
        trusted = None
        if run.anomalies:
            for kind, position, offset, a, b in run.anomalies:
                self._anomaly(kind, position, offset, a, b)
            rows = memoryview(run.packed).cast("q")
            flags = rows[4::5]
            if any(not flag >> 24 & 1 for flag in flags):
                trusted = bytes(flag >> 24 & 1 for flag in flags)
            del flags
            rows.release()
        self._hold(_Stretch(run.packed, trusted, run.end))
        if self.want_txn:
            for event in run.txn_events:
                self.summary.txn_events.append(TxnEvent(*event))
        if self.level == DEEP:  # data: the run lies in the scan's present window (remote files)
            self.deep.check_run(mapped, run)

    def _batch(self, mapped, batch: BatchHeader) -> None:
        """The same checks as the compiled walker, in Python (no C compiler, or odd entries)."""
        anomalies, epochs = [], []
        magic_ok = 0 <= batch.magic <= 2
        crc_ok = batch.computed_crc is None or batch.crc_matches
        if magic_ok and not crc_ok:
            anomalies.append(("crc", batch.position, batch.base_offset, batch.crc, batch.computed_crc))
        if not magic_ok:
            anomalies.append(("magic", batch.position, batch.base_offset, batch.magic, 0))
        trusted = magic_ok and crc_ok
        if trusted and batch.compression > (4 if batch.magic >= 2 else 3):  # attributes are CRC-covered
            anomalies.append(("codec", batch.position, batch.base_offset, batch.compression, batch.magic))
        if trusted:
            self.order.step(batch.position, batch.magic, batch.base_offset, batch.last_offset,
                            batch.partition_leader_epoch, self.segment.base_offset, anomalies, epochs)
            self.summary.epochs.extend(epochs)
        for anomaly in anomalies:
            self._anomaly(*anomaly)
        if batch.size < batch.min_size:
            self.add(Code.BATCH_SIZE_TOO_SMALL, ERROR, batch.position,
                     f"batch size {batch.size} is below the minimum {batch.min_size} of magic {batch.magic}",
                     offset=batch.base_offset)
        self.summary.batches += 1
        self._hold(_Stretch(array("q", (batch.position, batch.base_offset, batch.last_offset, batch.max_timestamp,
                                        0)).tobytes(), None if trusted else b"\0", batch.end_position))
        if trusted and self.want_txn and batch.is_transactional:
            self.summary.txn_events.append(TxnEvent(batch.position, batch.base_offset, batch.last_offset,
                                                    batch.producer_id, batch.producer_epoch, batch.is_control))
        if trusted and self.level == DEEP:
            self.deep.check_batch(mapped, batch)

    # -- the index feed ----------------------------------------------------------------------

    def _hold(self, stretch: _Stretch) -> None:
        """Hold ``stretch`` back until no batch in it can still be blamed: only the last batch
        in offset order (``OffsetOrder``'s previous batch) can turn out to be an outlier."""
        held = self._held
        held.append(stretch)
        state = self.order.state
        candidate = state[2] if state[0] is not None else None
        while held and (len(held) > MAX_HELD or (candidate is not None and held[0].end <= candidate)):
            self._flush()

    def _damage_after(self, findings: list[Finding]) -> None:
        for finding in findings:
            self.damaged_ranges.append((finding.position, finding.position + (finding.length or 0)))
            if finding.code in (Code.TORN_TAIL, Code.ZERO_FILLED_TAIL, Code.TRAILING_GARBAGE):
                self.tail_damaged = True
            if finding.code == Code.BATCH_SIZE_MISMATCH:
                if self._held:  # the damaged batch ends where the next valid one starts
                    self._held[-1].end = min(self._held[-1].end, finding.position + finding.length)
                if finding.position in self._scan.size_field_only:  # its CRC was only wrong over the wrong bytes
                    self.findings[:] = [f for f in self.findings if not (
                        f.code == Code.BATCH_CRC_MISMATCH and f.position == finding.position and f.path == self.path)]
        self.summary.damaged = True
        held = self._held
        if self.summary.first_offset is None and not any(h.trusted is None or any(h.trusted) for h in held):
            self._lost_before_first = True  # no trusted batch before this damage
        if held:
            held[-1].damage_after = True
        elif self._window_lo is None:
            self._window_lo = self._last_trusted

    def _flush(self) -> None:
        """Give the oldest held stretch to the index checks, without its untrusted batches."""
        if not self._held:
            return
        stretch = self._held.pop(0)
        packed = stretch.packed
        rows = memoryview(packed).cast("q")
        positions, bases, lasts, max_ts = rows[0::5], rows[1::5], rows[2::5], rows[3::5]
        blamed = self.blamed
        suspect = (stretch.trusted is not None
                   or (blamed and any(position in blamed for position in positions)))
        if suspect:
            keep = [i for i in range(len(positions))
                    if (stretch.trusted is None or stretch.trusted[i]) and positions[i] not in blamed]
            kept = set(keep)
            for i in range(len(positions)):
                if i in kept:
                    if self._window_lo is not None:
                        self.unknown_offsets.append((self._window_lo, bases[i]))
                        self._window_lo = None
                    self._last_trusted = lasts[i]
                else:
                    self.summary.damaged = True
                    if self.summary.first_offset is None and not (keep and keep[0] < i):  # keep is ascending
                        self._lost_before_first = True
                    self.damaged_ranges.append((positions[i], positions[i + 1] if i + 1 < len(positions)
                                                else stretch.end))
                    if self._window_lo is None:
                        self._window_lo = self._last_trusted
            positions, bases, lasts, max_ts = (array("q", (a[i] for i in keep)) for a in (positions, bases, lasts,
                                                                                        max_ts))
            packed = b"".join(packed[40 * i:40 * i + 40] for i in keep)
        elif len(positions):
            if self._window_lo is not None:
                self.unknown_offsets.append((self._window_lo, bases[0]))
                self._window_lo = None
            self._last_trusted = lasts[-1]
        if len(positions):
            self.summary.max_timestamp = max(self.summary.max_timestamp, max(max_ts))
            self._first_batch(positions[0], bases[0], lasts[0])
        self.index.check(positions, lasts, stretch.end, packed)
        self.time_index.check(bases, lasts, max_ts, packed)
        if stretch.damage_after and self._window_lo is None:
            self._window_lo = self._last_trusted

    def is_damaged_position(self, position: int) -> bool:
        return any(start <= position < end for start, end in self.damaged_ranges)

    def is_unknown_offset(self, offset: int) -> bool:
        if self._window_lo is not None and offset > self._window_lo:
            return True
        return any(lo < offset < hi for lo, hi in self.unknown_offsets)

    def damaged_between(self, start: int, end: int) -> bool:
        """Whether an untrusted batch or region lies in the byte range [start, end)."""
        return any(s < end and start < e for s, e in self.damaged_ranges)

    # -- checks ------------------------------------------------------------------------------

    def _first_batch(self, position: int, base_offset: int, last_offset: int) -> None:
        if self.summary.first_offset is not None:
            return
        self.summary.first_offset = base_offset
        self._first_position = position
        base = self.segment.base_offset
        if base_offset < base or last_offset < base:
            self._first_finding = self.add(
                Code.SEGMENT_BASE_MISMATCH, ERROR, position,
                f"the first batch starts at offset {base_offset}, below the segment's base offset {base}",
                offset=base_offset)
        elif base_offset > base and not self._lost_before_first:
            self._first_finding = self.add(
                Code.SEGMENT_BASE_GAP, INFO, position,
                f"the first batch starts at offset {base_offset}, after the base offset {base} "
                f"(offsets removed by compaction or the log start offset)", offset=base_offset)

    def _anomaly(self, kind, position, offset, a, b) -> None:
        if kind == "crc":
            self.add(Code.BATCH_CRC_MISMATCH, ERROR, position,
                     f"stored CRC {a} but the bytes give {b}", offset=offset)
        elif kind == "magic":
            self.add(Code.UNKNOWN_MAGIC, ERROR, position, f"magic byte {a} is not 0, 1 or 2", offset=offset)
        elif kind == "codec":
            self.add(Code.UNKNOWN_CODEC, ERROR, position,
                     f"compression codec id {a} is not valid for magic {b}", offset=offset)
        elif kind == "order":
            self.blamed.add(position)
            self.add(Code.OFFSET_OUT_OF_ORDER, ERROR, position,
                     f"batch starts at offset {b}, not after the previous batch's last offset {a}", offset=offset)
        elif kind == "delta":
            self.blamed.add(position)
            self.add(Code.OFFSET_OUT_OF_ORDER, ERROR, position,
                     f"batch ends at offset {a}, before its base offset {b} (a negative last offset delta)",
                     offset=offset)
        elif kind == "outlier":
            self.blamed.add(position)
            overflow = self._overflows.pop(position, None)
            if overflow is not None:
                self.findings.remove(overflow)
            if position == self._first_position and self._first_finding is not None:
                self.findings.remove(self._first_finding)
                self._first_finding = None
                self.summary.first_offset = None
            self.add(Code.OFFSET_OUT_OF_ORDER, ERROR, position,
                     f"batch starts at offset {offset}, past the next batch's base offset {b} (the batch before "
                     f"ends at {a}): its base offset field, which no CRC covers, is damaged", offset=offset)
        elif kind == "overflow":
            if a < 0:
                return  # below the base offset: SEGMENT_BASE_MISMATCH or OFFSET_OUT_OF_ORDER says it once
            self._overflows[position] = self.add(
                Code.OFFSET_OVERFLOW, ERROR, position,
                f"last offset {offset} is {a} past the segment base {self.segment.base_offset}: "
                f"not a 32-bit relative offset", offset=offset)
            if len(self._overflows) > 64:
                self._overflows.pop(next(iter(self._overflows)))
        elif kind == "epoch":
            self.add(Code.LEADER_EPOCH_OUT_OF_ORDER, ERROR, position,
                     f"partition leader epoch {a} " + ("is not a valid epoch" if a < -1 else
                                                       f"is below the previous batch's {b}") +
                     " (the field is not covered by the CRC)", offset=offset)
        elif kind == "epoch_outlier":
            self.summary.epochs[:] = [e for e in self.summary.epochs if e[0] != position]
            mapped = self._mapped
            outlier = read_batch_header(mapped.buffer, mapped.view, position, mapped.size)
            self.add(Code.LEADER_EPOCH_OUT_OF_ORDER, ERROR, position,
                     f"partition leader epoch {a} is above both neighbours' ({b}): the field, which no CRC "
                     f"covers, is damaged", offset=outlier.base_offset)

    def _scan_findings(self, scan: LogScan) -> None:
        """Framing findings, with the severity the segment's place gives them: a torn or
        garbage tail is what a crash leaves in the active segment (the broker truncates it);
        in a rolled segment it is damage (recovery would delete every later segment)."""
        for finding in scan.findings:
            severity = framing_severity(finding, self.active)
            message = finding.message
            if finding.code == Code.CORRUPT_REGION:
                message += _unreadable_offsets(finding, scan.mapped.buffer)
            self.findings.append(Finding(finding.code, severity, finding.path, finding.position, message,
                                         length=finding.length, offset=finding.offset))


TAIL_CODES = (Code.TORN_TAIL, Code.ZERO_FILLED_TAIL, Code.TRAILING_GARBAGE)


def framing_severity(finding: Finding, active: bool) -> Severity:
    """The severity of a :class:`LogScan` finding in a segment that is (``active``) or is not
    the last of its partition: a torn, zero-filled or garbage tail of the active segment is what
    a crash leaves and the broker truncates at start-up without losing data (warning); the same
    tail in a rolled segment, and any other framing damage, is an error."""
    if finding.code in TAIL_CODES:
        return WARNING if active else ERROR
    return finding.severity


def is_last_segment(log_path: Path) -> bool:
    """Whether ``log_path`` is the active (highest base offset) segment of its directory; a file
    whose name is no segment name counts as active."""
    bases = [parse_segment_file_name(p.name) for p in log_path.parent.glob("*.log")]
    highest = max((b.base_offset for b in bases if b is not None and not b.is_temp), default=None)
    parsed = parse_segment_file_name(log_path.name)
    return parsed is None or highest is None or parsed.base_offset >= highest


def _unreadable_offsets(finding: Finding, buffer) -> str:
    """The offsets a corrupt region hides: from the offset expected there up to the base
    offset of the v2 batch the scan resumed at (a legacy message starts with its *last*
    offset, so there the range stays open)."""
    expected = finding.offset
    if expected is None:
        return ""
    resume = finding.position + (finding.length or 0)
    if resume + 17 <= len(buffer) and buffer[resume + 16] == 2:
        next_base = int.from_bytes(buffer[resume:resume + 8], "big", signed=True)
        if next_base <= expected:
            return f"; no offsets lost (the next batch starts at offset {next_base})"
        if next_base == expected + 1:
            return f"; offset {expected} is unreadable"
        return f"; offsets {expected} to {next_base - 1} are unreadable"
    return f"; offsets from {expected} are unreadable up to the next batch"


def verify_segment_file(path: str | Path, findings: list[Finding], level: str = SHALLOW,
                        active: bool = True) -> SegmentSummary:
    """A single ``.log`` checked on its own (with its sibling indexes when they exist)."""
    return SegmentVerifier(LogSegment(path), findings, active=active, level=level).run()


__all__ = ["DEEP", "SHALLOW", "SegmentSummary", "SegmentVerifier", "TxnEvent", "verify_segment_file"]
