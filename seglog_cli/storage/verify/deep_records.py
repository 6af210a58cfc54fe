"""The deep level of ``seglog verify`` for one segment: every record decoded as Kafka decodes it,
record offsets within their batch, the batch's last offset and max timestamp against its
records, control records. A run of batches is decoded by the compiled ``verify_records`` in this
process, or, for a big segment, by worker processes whose results are applied in order; a batch
the compiled code leaves aside (or every batch, without it) is decoded in Python, for Kafka's
exact error message.
"""

from __future__ import annotations

import bisect
from array import array

from seglog_cli.storage.log import decode_pool, native
from seglog_cli.storage.log.batch_header import BatchHeader, read_batch_header, wrap_int64
from seglog_cli.storage.log.batches import VerifyRun
from seglog_cli.storage.log.codecs import decompress
from seglog_cli.storage.log.control import parse_control_record
from seglog_cli.storage.log.errors import DecodeError, SeglogError
from seglog_cli.storage.log.findings import Code, Finding, Severity
from seglog_cli.storage.log.records import read_records

ERROR, INFO = Severity.ERROR, Severity.INFO


class DeepRecordChecks:
    """The deep checks of one segment's batches; findings are appended to ``findings`` and the
    records counted in ``summary.records``. :meth:`close` ends the workers, if any were started."""

    def __init__(self, path, findings: list[Finding], summary, jobs: int = 1):
        self.path = path
        self.findings = findings
        self.summary = summary
        self.jobs = jobs  # processes decoding the records of a big segment
        self._workers = None

    def add(self, code, severity, position, message, offset=None) -> Finding:
        finding = Finding(code, severity, self.path, position, message, offset=offset)
        self.findings.append(finding)
        return finding

    def check_run(self, mapped, run: VerifyRun) -> None:
        """The records of a run (its data lies in the scan's present window: remote files)."""
        workers = self._workers
        if workers is None and self.jobs > 1 and decode_pool.worth_workers(mapped, _first_run_at(run)):
            workers = self._workers = decode_pool.OrderedWorkers(
                lambda packed: _verify_records_released(mapped, packed), self.jobs)
        if workers is None:
            self._result(mapped, native.module.verify_records(mapped.data, run.packed, decompress))
            return
        for packed in _packed_units(run.packed):  # checked by the workers, applied in order
            for result in workers.submit(packed):
                self._result(mapped, result)

    def drain(self, mapped) -> None:
        """The results the workers still hold, applied in order."""
        if self._workers is not None:
            for result in self._workers.drain():
                self._result(mapped, result)

    def close(self) -> None:
        if self._workers is not None:
            self._workers.close()
            self._workers = None

    def _result(self, mapped, result) -> None:
        """What ``verify_records`` found in a run (the findings are put in order at the end, so
        a worker's results may come after later batches' shallow findings)."""
        anomalies, python_positions, records = result
        self.summary.records += records
        for kind, position, a, b, c in anomalies:
            self._record_anomaly(kind, position, a, b, c)
        for position in python_positions:
            self.check_batch(mapped, read_batch_header(mapped.buffer, mapped.view, position, mapped.size))

    def _record_anomaly(self, kind, position, a, b, c) -> None:
        if kind == "record_offset":
            self.add(Code.RECORD_OFFSET_OUT_OF_RANGE, ERROR, position,
                     f"record offset {a} does not follow {b} inside its batch", offset=a)
        elif kind == "last_delta":
            self.add(Code.LAST_OFFSET_DELTA_MISMATCH, INFO, position,
                     f"the batch ends at offset {a} but its last record is {b} (records removed by compaction)",
                     offset=a)
        elif kind == "max_ts":
            severity = ERROR if b > c else INFO
            why = "above" if b > c else "below (records removed by compaction)"
            self.add(Code.MAX_TIMESTAMP_MISMATCH, severity, position,
                     f"records' largest timestamp {b} is {why} the batch's max timestamp {c}", offset=a)

    def check_batch(self, mapped, batch: BatchHeader) -> None:
        """Kafka's own decoding of one batch, for its exact error message."""
        try:
            records = list(read_records(mapped.buffer, batch, self.path))
        except DecodeError as exc:
            self.add(Code.DECOMPRESSION_FAILED, ERROR, batch.position, exc.message, offset=batch.base_offset)
            return
        except SeglogError as exc:
            self.add(Code.RECORD_PARSE_ERROR, ERROR, batch.position, exc.message, offset=batch.base_offset)
            return
        self.summary.records += len(records)
        if batch.is_control:
            self._control(batch, records)
        elif batch.magic < 2:
            for record in records:
                if not record.is_valid:
                    self.add(Code.BATCH_CRC_MISMATCH, ERROR, batch.position,
                             f"the inner message at offset {record.offset} fails its CRC-32", offset=record.offset)
        if batch.magic >= 2 and records:
            self._record_checks(batch, records)

    def _record_checks(self, batch: BatchHeader, records) -> None:
        previous = None
        for record in records:
            if ((record.offset < batch.base_offset if previous is None else record.offset <= previous)
                    or record.offset > batch.last_offset):
                self._record_anomaly("record_offset", batch.position, record.offset,
                                     wrap_int64(batch.base_offset - 1) if previous is None else previous, 0)
                break
            previous = record.offset
        if records[-1].offset != batch.last_offset:
            self._record_anomaly("last_delta", batch.position, batch.last_offset, records[-1].offset, 0)
        if batch.timestamp_type == 0:
            largest = max(record.timestamp for record in records)
            if largest != batch.max_timestamp:
                self._record_anomaly("max_ts", batch.position, batch.base_offset, largest, batch.max_timestamp)

    def _control(self, batch: BatchHeader, records) -> None:
        for record in records:
            try:
                control = parse_control_record(record, self.path, batch.position)
            except SeglogError as exc:
                self.add(Code.CONTROL_RECORD_INVALID, ERROR, batch.position, exc.message, offset=record.offset)
                continue
            if control.is_transaction_marker and not batch.is_transactional:
                self.add(Code.CONTROL_RECORD_INVALID, ERROR, batch.position,
                         f"{control.type_name} marker in a non-transactional batch", offset=record.offset)


def _first_run_at(run: VerifyRun) -> int:
    return array("q", run.packed[:8])[0] if run.packed else 0  # the run's first row: its position


def _verify_records_released(mapped, packed: bytes):
    """``verify_records`` of a worker's unit, its pages dropped after (a worker keeps none)."""
    result = native.module.verify_records(mapped.data, packed, decompress)
    rows = memoryview(packed).cast("q")
    first, last = rows[0], rows[len(rows) - 5]
    rows.release()
    mapped.release(first, last)
    return result


def _packed_units(packed: bytes):
    """A run's packed rows (5 int64 per batch, its position first) in pieces spanning about
    ``decode_pool.UNIT_BYTES`` of the file each."""
    rows = memoryview(packed).cast("q")
    positions = rows[0::5].tolist()
    rows.release()
    count = len(positions)
    start = 0
    while start < count:
        end = bisect.bisect_left(positions, positions[start] + decode_pool.UNIT_BYTES, lo=start + 1)
        yield packed if start == 0 and end == count else packed[start * 40:end * 40]
        start = end


__all__ = ["DeepRecordChecks"]
