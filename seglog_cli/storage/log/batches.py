"""Shallow iteration of a ``.log`` file: batch headers only, straight from the mapped bytes.

:class:`LogScan` walks a ``.log`` (or KRaft ``.checkpoint``) exactly like Kafka's
``FileLogInputStream`` (§7.2): stop when 17 or fewer bytes remain, a size field below 14 is
damage, an entry that runs past the end stops the walk. Where Kafka stops or throws, the scan
records a :class:`Finding` instead, classifies the rest of the file (zero-filled tail, torn tail,
trailing garbage) and, when asked to, resynchronises on the next position holding a whole batch
with a valid CRC, so damage in the middle of a file does not hide everything after it.

The hot loop uses precompiled ``struct`` layouts checked against the construct schemas in
``formats`` by the tests; no construct parsing happens per batch. Each entry comes as a
:class:`~seglog_cli.storage.log.batch_header.BatchHeader` (:mod:`batch_header` decodes the
headers), or, for consumers that take a region at once, as a :class:`BatchRun` or
:class:`VerifyRun` of the compiled scanner.
"""

from __future__ import annotations

import re
import zlib
from typing import Iterator

from seglog_cli.storage.log import native
from seglog_cli.storage.log.batch_header import (HEADER_SIZE_UP_TO_MAGIC, INT32_MAX, LEGACY_HEADER, LOG_OVERHEAD,
                                                 MIN_ENTRY_SIZE, OFFSET_AND_SIZE, RECORD_BATCH_OVERHEAD, V2_HEADER,
                                                 BatchHeader, read_batch_header)
from seglog_cli.storage.log.checksums import crc32c
from seglog_cli.storage.log.errors import CorruptRecordError
from seglog_cli.storage.log.files import RELEASE_STEP, MappedFile
from seglog_cli.storage.log.findings import Code, Finding, Severity


NATIVE_CHUNK = 1024  # entries per call into the compiled scanner
NATIVE_RUN = 4096  # entries per BatchRun
ENTRIES, RUNS, CHUNKS, VERIFY, COLUMNS = 0, 1, 2, 3, 4  # what LogScan._walk yields


# A position that could start an entry: offset in [0, 2^48) (no broker gets near 2^48; this
# keeps random payload bytes from posing as candidates), size field >= 14 and < 2^31, magic
# byte 0, 1 or 2.
_SIZE_AT_LEAST_14 = (rb"(?:[\x01-\x7f][\s\S]{3}|\x00[\x01-\xff][\s\S]{2}"
                     rb"|\x00\x00[\x01-\xff][\s\S]|\x00\x00\x00[\x0e-\xff])")
_CANDIDATE = re.compile(rb"(?=\x00\x00[\s\S]{6}" + _SIZE_AT_LEAST_14 + rb"[\s\S]{4}[\x00-\x02])")
# Bytes a scan may checksum while resynchronising (on top of 4x the scanned range): crafted
# input full of candidates that frame huge entries would otherwise cost quadratic time.
RESYNC_CRC_BUDGET = 256 * 1024 * 1024
CANDIDATE_WINDOW = 1 << 20  # bytes searched for candidates between two zero-run skips


class BatchRun:
    """Consecutive well-framed entries ``mapped[start:end]`` (``count`` of them), not decoded
    yet: consumers that want each entry iterate ``LogScan(mapped, start, end)`` over it."""

    __slots__ = ("mapped", "start", "end", "count", "check_crc")

    def __init__(self, mapped: MappedFile, start: int, end: int, count: int, check_crc: bool = True):
        self.mapped, self.start, self.end, self.count, self.check_crc = mapped, start, end, count, check_crc

    def __iter__(self) -> Iterator[BatchHeader]:
        return iter(LogScan(self.mapped, self.start, self.end, resync=False, check_crc=self.check_crc,
                            bounded=True))

    def chunks(self) -> Iterator[list[BatchHeader]]:
        """The entries in lists (as many as the compiled scanner reads in one call), for
        consumers that take the headers of many batches at once."""
        return LogScan(self.mapped, self.start, self.end, resync=False, check_crc=self.check_crc,
                       bounded=True).chunks()

    def __repr__(self) -> str:
        return f"BatchRun(start={self.start}, end={self.end}, count={self.count})"


class VerifyRun:
    """Well-framed entries ``[start, end)`` checked by the compiled walker (see ``_native.c``,
    ``verify_walk``): ``packed`` holds 5 int64 per batch (position, base offset, last offset,
    max timestamp, flags), ``anomalies`` what the checks found, ``txn_events`` the
    transactional batches."""

    __slots__ = ("start", "end", "count", "packed", "anomalies", "txn_events", "epochs")

    def __init__(self, start, end, count, packed, anomalies, txn_events, epochs):
        self.start, self.end, self.count = start, end, count
        self.packed, self.anomalies, self.txn_events, self.epochs = packed, anomalies, txn_events, epochs

    @property
    def last_trusted(self) -> bool:
        """Whether the run's last batch passed its CRC and magic checks (flag bit 24)."""
        return bool(memoryview(self.packed)[-8:].cast("q")[0] >> 24 & 1)


def _last_position(run: VerifyRun) -> int:
    """Where a run's last entry starts."""
    return memoryview(run.packed)[-40:].cast("q")[0]


class LogScan:
    """Iterate the entries of ``mapped[start:end]`` and collect what stopped or interrupted it.

    After iteration:

    * ``findings``: framing problems met, in file order (CRC mismatches are on the batches);
    * ``kafka_error``: the exception Kafka's iterator would have thrown, if any;
    * ``valid_bytes``: sum of the sizes of the entries yielded (Kafka's ``validBytes``);
    * ``end_position``: where the last yielded entry ends;
    * ``resynced``: True when damage was skipped to reach later entries.

    With ``resync=False`` the scan stops where Kafka's iterator stops. ``bounded=True`` means
    ``end`` is a caller's limit (``--max-bytes``), not the end of the file: an entry crossing it
    is simply not returned.
    """

    def __init__(self, mapped: MappedFile, start: int = 0, end: int | None = None, *,
                 resync: bool = True, check_crc: bool = True, bounded: bool = False):
        self.mapped = mapped
        self.start = start
        self.end = mapped.size if end is None else min(end, mapped.size)
        self.resync = resync and not bounded
        self.check_crc = check_crc
        self.bounded = bounded
        self.findings: list[Finding] = []
        self.kafka_error: CorruptRecordError | None = None
        self.valid_bytes = 0
        self.end_position = start
        self.resynced = False
        self._verify_args = (0, False)
        self._order = None
        self.size_field_only: set[int] = set()  # damaged batches whose CRC matches once resized
        self._resync_budget = RESYNC_CRC_BUDGET + 4 * max(0, self.end - start)

    def __iter__(self) -> Iterator[BatchHeader]:
        return self._walk(ENTRIES)

    def runs(self) -> Iterator["BatchRun | BatchHeader"]:
        """Like iterating, but well-framed stretches come as :class:`BatchRun` regions when the
        compiled scanner is there (entries are then only framed, not decoded), for consumers
        that handle a whole region at once. Findings and resync work the same."""
        return self._walk(RUNS)

    def chunks(self) -> Iterator[list[BatchHeader]]:
        """Like iterating, but the headers come in lists (as many as the compiled scanner reads
        in one call; one at a time without it)."""
        return self._walk(CHUNKS)

    def columns(self) -> Iterator["bytes | list[BatchHeader]"]:
        """Like :meth:`chunks`, but a stretch the compiled scanner read comes as ``bytes``: 8
        native int64 per entry (position, base offset, last offset, partition leader epoch,
        stored CRC, size field, valid, records count or -1), no Python object per batch (seglog
        diff). Without the compiled module, and where the scan steps entry by entry, lists of
        headers as :meth:`chunks` gives them."""
        return self._walk(COLUMNS)

    def verify_runs(self, segment_base: int, want_txn: bool, order) -> Iterator["VerifyRun | BatchHeader"]:
        """For seglog verify: well-framed stretches come as :class:`VerifyRun` (checked by the
        compiled walker: CRC, magic, codec, offset order, relative offset overflow), everything
        else (and everything, without the compiled module) as ``BatchHeader`` for the Python
        checks. ``order`` carries the offset-order state (``.state``, ``.expected_offset``)
        between the two.

        Unlike the other walks, a batch failing its CRC or magic check is not trusted to frame
        the next one: when what follows it is no plausible batch header, the scan searches for
        the next valid batch from just after its start and reports a damaged size field
        (``BATCH_SIZE_MISMATCH``) or a corrupt region."""
        self._verify_args = (segment_base, want_txn)
        self._order = order
        return self._walk(VERIFY)

    def _walk(self, mode: int):
        runs = mode == RUNS
        mapped = self.mapped
        # data, not buffer: a remote file's bytes are read only inside the windows made present
        # here (scan_window: the whole file for a local one, so ``avail == end`` throughout)
        buf, view, end = mapped.data, mapped.data_view, self.end
        check_crc = self.check_crc
        unpack_size = OFFSET_AND_SIZE.unpack_from
        unpack_v2 = V2_HEADER.unpack_from
        compiled = native.module
        limit = end - HEADER_SIZE_UP_TO_MAGIC
        pos = self.start
        # a scan from the start reads on (read ahead at once); one from an index position is
        # often a seek for a few batches (its second window is read ahead)
        avail = mapped.scan_window(pos, end, ahead=pos == 0) if pos < end else end
        last_good_next_offset = None
        while True:
            if pos >= limit:
                self._finish(pos, last_good_next_offset)
                return
            if avail < end and pos + HEADER_SIZE_UP_TO_MAGIC > avail:
                avail = mapped.scan_window(pos, end)
            if compiled is not None:  # a stretch of well-framed entries in one call
                if mode == VERIFY:
                    order = self._order
                    next_pos, count, order.state, packed, anomalies, txn, epochs = compiled.verify_walk(
                        buf, pos, avail, check_crc, NATIVE_RUN, order.state, *self._verify_args)
                    if count:
                        run = VerifyRun(pos, next_pos, count, packed, anomalies, txn, epochs)
                        last_next = order.expected_offset
                elif mode == COLUMNS:
                    next_pos, count, chunk, last_next = compiled.columns(buf, pos, avail, check_crc, NATIVE_RUN)
                elif runs:
                    next_pos, count, last_next = compiled.walk(buf, pos, avail, NATIVE_RUN)
                    if count:
                        run = BatchRun(mapped, pos, next_pos, count, check_crc)
                else:
                    chunk, next_pos = compiled.scan(BatchHeader, buf, pos, avail, check_crc, NATIVE_CHUNK)
                    count = len(chunk)
                    if count:
                        last_next = chunk[-1].next_offset
                if count:
                    self.valid_bytes += next_pos - pos
                    self.end_position = next_pos
                    last_good_next_offset = last_next
                    if runs or mode == VERIFY:
                        yield run
                    elif mode in (CHUNKS, COLUMNS):
                        yield chunk
                    else:
                        yield from chunk
                    if mode == VERIFY and not run.last_trusted:
                        next_pos = self._after_untrusted(_last_position(run), next_pos)
                    pos = next_pos
                    if pos - mapped._released_to > RELEASE_STEP:
                        mapped.release_behind(pos)
                    continue
            size = unpack_size(buf, pos)[1]
            next_pos = pos + LOG_OVERHEAD + size
            if avail < next_pos <= end and size >= MIN_ENTRY_SIZE:  # an entry past the present window
                avail = max(mapped.scan_window(pos, end), next_pos)
                mapped.ensure(pos, next_pos)
                if compiled is not None:
                    continue
            if size < MIN_ENTRY_SIZE or next_pos > end:
                if self.bounded and size >= MIN_ENTRY_SIZE:
                    self.end_position = pos
                    return
                resume = self._damage(pos, size, last_good_next_offset)
                if resume is None:
                    return
                pos = resume
                avail = mapped.scan_window(pos, end) if avail < end and pos < end else avail
                continue
            if avail < end and pos + RECORD_BATCH_OVERHEAD > avail:  # a short entry's header is read padded
                mapped.ensure(pos, pos + RECORD_BATCH_OVERHEAD)
            magic = buf[pos + 16]
            if 2 <= magic < 0x80 and size >= 49:
                fields = unpack_v2(buf, pos)
                computed = crc32c(view[pos + 21:next_pos]) if check_crc else None
                batch = BatchHeader(pos, *fields, computed)
            else:
                batch = read_batch_header(buf, view, pos, end, check_crc)
            self.valid_bytes += size + LOG_OVERHEAD
            self.end_position = next_pos
            last_good_next_offset = batch.next_offset
            yield [batch] if mode in (CHUNKS, COLUMNS) else batch
            if mode == VERIFY:
                last_good_next_offset = self._order.expected_offset
                if not (0 <= batch.magic <= 2 and (batch.computed_crc is None or batch.crc_matches)):
                    next_pos = self._after_untrusted(pos, next_pos)
            pos = next_pos
            if pos - mapped._released_to > RELEASE_STEP:
                mapped.release_behind(pos)

    # -- what stopped the walk -------------------------------------------------------------

    def _finish(self, pos: int, expected_offset: int | None) -> None:
        """Fewer than 18 bytes remain: Kafka stops silently; classify what is left."""
        remaining = self.end - pos
        if remaining <= 0 or self.bounded:
            return
        if self._all_zero(pos):
            self._add(Code.ZERO_FILLED_TAIL, Severity.WARNING, pos, remaining,
                      f"{remaining} zero bytes at the end of the file (preallocated or unflushed)")
        else:
            self._add(Code.TORN_TAIL, Severity.WARNING, pos, remaining,
                      f"{remaining} bytes at the end are a partial batch header", expected_offset)

    def _damage(self, pos: int, size: int, expected_offset: int | None) -> int | None:
        """The entry at ``pos`` is too small or runs past the end; returns where to resume."""
        remaining = self.end - pos
        too_small = size < MIN_ENTRY_SIZE
        if too_small and self.kafka_error is None:
            self.kafka_error = CorruptRecordError(
                f"Found record size {size} smaller than minimum record overhead "
                f"({MIN_ENTRY_SIZE}) in file {self.mapped.path}.", self.mapped.path, pos)
        if self._all_zero(pos):
            self._add(Code.ZERO_FILLED_TAIL, Severity.WARNING, pos, remaining,
                      f"{remaining} zero bytes at the end of the file (preallocated or unflushed)")
            return None
        resume = self._find_next_batch(pos + 1) if self.resync else None
        if resume is not None:
            self.resynced = True
            what = f"size field {size}" if too_small else f"size field {size} runs past the end"
            self._add(Code.CORRUPT_REGION, Severity.ERROR, pos, resume - pos,
                      f"{resume - pos} unreadable bytes ({what}); next valid batch at position {resume}",
                      expected_offset)
            return resume
        if self._resync_budget < 0:
            self._add(Code.TRAILING_GARBAGE, Severity.ERROR, pos, remaining,
                      f"{remaining} bytes at the end were not searched for a valid batch (size field "
                      f"{size}): resync gave up, too many candidate positions", expected_offset)
        elif too_small:
            self._add(Code.TRAILING_GARBAGE, Severity.ERROR, pos, remaining,
                      f"{remaining} bytes at the end frame no batch (size field {size} is below {MIN_ENTRY_SIZE})",
                      expected_offset)
        elif self._plausible_header(pos, expected_offset):
            self._add(Code.TORN_TAIL, Severity.WARNING, pos, remaining,
                      f"last batch is incomplete: its size is {size + LOG_OVERHEAD} bytes but only "
                      f"{remaining} remain", expected_offset)
        else:
            self._add(Code.TRAILING_GARBAGE, Severity.ERROR, pos, remaining,
                      f"{remaining} bytes at the end frame no batch (size field {size} runs past the end)",
                      expected_offset)
        return None

    def _after_untrusted(self, bad: int, pos: int) -> int:
        """Where to go on after the batch at ``bad`` failed its CRC or magic check, its size
        field having led to ``pos``.

        1. A valid batch (CRC good, offset plausible) starting inside the claimed extent: the
           size field is too large; resume there (``BATCH_SIZE_MISMATCH``).
        2. A plausible batch header at ``pos`` (or the end of the file): resume at ``pos``.
        3. Else the next valid batch from ``pos`` on: if the damaged batch's CRC matches its
           bytes up to it, the size field was too small (``BATCH_SIZE_MISMATCH``), else the bytes
           in between are a ``CORRUPT_REGION``.
        """
        if not self.resync:
            return pos
        end = self.end
        expected = self._order.expected_offset
        inside = self._find_next_batch(bad + 1, limit=min(pos, end), expected_offset=expected)
        if inside is not None:
            return self._size_mismatch(bad, inside, expected)
        if pos >= end:
            return pos
        if pos + HEADER_SIZE_UP_TO_MAGIC <= end:
            size = OFFSET_AND_SIZE.unpack_from(self.mapped.buffer, pos)[1]
            if MIN_ENTRY_SIZE <= size and pos + LOG_OVERHEAD + size <= end and self._plausible_header(pos, expected):
                return pos
        found = self._find_next_batch(pos)
        if found is None or found == pos:
            return pos
        if self._crc_matches(bad, found):
            return self._size_mismatch(bad, found, expected)
        self.resynced = True
        self._add(Code.CORRUPT_REGION, Severity.ERROR, pos, found - pos,
                  f"{found - pos} unreadable bytes after a damaged batch; next valid batch at position {found}",
                  expected)
        return found

    def _size_mismatch(self, bad: int, found: int, expected: int | None) -> int:
        self.resynced = True
        stored = OFFSET_AND_SIZE.unpack_from(self.mapped.buffer, bad)[1]
        intact = self._crc_matches(bad, found)
        if intact:
            self.size_field_only.add(bad)
        self._add(Code.BATCH_SIZE_MISMATCH, Severity.ERROR, bad, found - bad,
                  f"the size field says {stored + LOG_OVERHEAD} bytes but the next valid batch starts {found - bad} "
                  f"bytes in, at position {found}: the size field is damaged"
                  + ("; the batch's CRC matches those bytes, so only its size field is" if intact else ""),
                  expected)
        return found

    def _crc_matches(self, position: int, end: int) -> bool:
        """Whether the entry at ``position`` would pass its CRC if it ended at ``end``."""
        buf, view = self.mapped.buffer, self.mapped.view
        magic = buf[position + 16]
        if magic == 2 and end - position >= 61:
            return V2_HEADER.unpack_from(buf, position)[4] == crc32c(view[position + 21:end])
        if magic in (0, 1) and end - position >= 17:
            return LEGACY_HEADER.unpack_from(buf, position)[2] == zlib.crc32(view[position + 16:end])
        return False

    def _plausible_header(self, pos: int, expected_offset: int | None) -> bool:
        buf = self.mapped.buffer
        if buf[pos + 16] > 2:
            return False
        if expected_offset is None:
            return True
        offset = OFFSET_AND_SIZE.unpack_from(buf, pos)[0]
        return expected_offset <= offset <= expected_offset + INT32_MAX

    def _all_zero(self, pos: int) -> bool:
        return self.mapped.find_non_zero(pos, self.end) is None

    def _candidates(self, pos: int, end: int) -> Iterator[int]:
        """Positions in ``[pos, end)`` where an entry could start (``_CANDIDATE``), searched a
        window at a time: a run of zeros is crossed by ``find_non_zero`` (an entry's size
        field, at +8, is at least 14, so no entry starts more than 11 bytes before a non-zero
        byte) and the pages behind are dropped, so a hole of gigabytes costs no memory."""
        mapped, buf = self.mapped, self.mapped.buffer
        while pos < end:
            non_zero = mapped.find_non_zero(pos, end)
            if non_zero is None:
                return
            pos = max(pos, non_zero - (HEADER_SIZE_UP_TO_MAGIC - 6))
            window_end = min(end, pos + CANDIDATE_WINDOW)
            for match in _CANDIDATE.finditer(buf, pos, min(end, window_end + HEADER_SIZE_UP_TO_MAGIC)):
                if match.start() >= window_end:
                    break
                yield match.start()
            pos = window_end
            mapped.release_behind(pos)

    def _find_next_batch(self, pos: int, limit: int | None = None, expected_offset: int | None = None) -> int | None:
        """First position >= ``pos`` (and below ``limit``) that frames a whole entry with a
        valid CRC (and, given ``expected_offset``, a plausible offset)."""
        buf, view, end = self.mapped.buffer, self.mapped.view, self.end
        for candidate in self._candidates(pos, end):
            if limit is not None and candidate >= limit:
                return None
            if candidate + HEADER_SIZE_UP_TO_MAGIC > end:
                return None
            size = OFFSET_AND_SIZE.unpack_from(buf, candidate)[1]
            batch_end = candidate + LOG_OVERHEAD + size
            if batch_end > end:
                continue
            self._resync_budget -= size
            if self._resync_budget < 0:
                return None
            if buf[candidate + 16] == 2:
                if size < 49 or V2_HEADER.unpack_from(buf, candidate)[4] != crc32c(view[candidate + 21:batch_end]):
                    continue
            elif LEGACY_HEADER.unpack_from(buf, candidate)[2] != zlib.crc32(view[candidate + 16:batch_end]):
                continue
            if expected_offset is not None and not self._plausible_header(candidate, expected_offset):
                continue
            return candidate
        return None

    def _add(self, code, severity, position, length, message, offset=None) -> None:
        self.findings.append(Finding(code, severity, self.mapped.path, position, message,
                                     length=length, offset=offset))
