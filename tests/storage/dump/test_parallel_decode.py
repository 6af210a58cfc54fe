"""Deep dump decoded by several workers gives exactly the one-worker output.

The units handed to workers are made tiny here (a few KiB, so a file of a few hundred batches is
cut into dozens of units, boundaries falling everywhere), and the parallel path is taken for any
file size. Every output is compared byte for byte with ``jobs=1``: lines, stderr, the report
(non-consecutive offsets, damaged files), on segments holding what takes the odd paths: every
codec, control batches, legacy entries, a value that is not UTF-8 (the compiled formatter
refuses it), a compressed batch that does not decompress, offset gaps at and inside unit
boundaries, and damage the scan resyncs past.
"""

from __future__ import annotations

import io
import os
import struct

import pytest

from seglog_cli.render.text import TextDumpRenderer
from seglog_cli.storage.dump.dump import DumpOptions, dump
from seglog_cli.storage.log import decode_pool, native
from seglog_cli.storage.log.checksums import crc32c
from seglog_cli.storage.log.codecs import GZIP, LZ4, NONE, SNAPPY, ZSTD
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_end_txn_marker, build_legacy_wrapper

pytestmark = pytest.mark.skipif(not native.available(), reason="the parallel path uses the compiled decoder")

CODECS = (NONE, GZIP, SNAPPY, LZ4, ZSTD)


def records(offset: int, count: int, odd: bool = False) -> list[NewRecord]:
    out = []
    for i in range(count):
        value = (b"\xff\xfe not utf-8 " if odd and i == 1 else f"value-{offset + i}-".encode()) * (1 + i % 5)
        out.append(NewRecord(key=f"k{(offset + i) % 7}".encode(), value=value,
                             headers=((f"h{i % 3}", b"x"),) if i % 2 else (), timestamp=1_700_000_000_000 + offset + i))
    return out


def corrupt_payload(batch: bytes) -> bytes:
    """A batch whose compressed section is damaged, with its CRC made to match again (so only
    the decompression fails)."""
    data = bytearray(batch)
    middle = 61 + (len(data) - 61) // 2
    for i in range(middle, min(len(data), middle + 8)):
        data[i] ^= 0x5A
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def segment(path, codec: int, batches: int = 240, damaged: bool = True) -> str:
    """A segment of ``batches`` batches of ``codec``, with the odd ones among them."""
    out, offset = bytearray(), 0
    for n in range(batches):
        count = 1 + n % 9
        if n % 37 == 5:
            offset += 1000  # a gap: DumpLogSegments' non-consecutive offsets
        if n % 53 == 7:
            out += build_end_txn_marker(commit=True, base_offset=offset, producer_id=9, producer_epoch=0,
                                        timestamp=1_700_000_000_000 + offset)
            offset += 1
            continue
        if n % 61 == 11 and codec != NONE:
            out += build_legacy_wrapper(records(offset, 3), last_offset=offset + 2, compression=codec if codec in (GZIP, SNAPPY, LZ4) else GZIP)
            offset += 3
            continue
        batch = build_batch(records(offset, count, odd=n % 29 == 3), base_offset=offset, compression=codec)
        if damaged and codec != NONE and n % 71 == 13:
            batch = corrupt_payload(batch)
        out += batch
        offset += count
    if damaged:
        out[len(out) // 3:len(out) // 3 + 40] = bytes(40)  # damage the scan resyncs past
    with open(path, "wb") as file:
        file.write(out)
    return str(path)


def render(paths: list[str], jobs: int, *, print_data_log: bool = True, skip: bool = False):
    out, err = io.BytesIO(), io.BytesIO()
    renderer = TextDumpRenderer(out, err, print_data_log=print_data_log, skip_record_metadata=skip)
    options = DumpOptions(deep_iteration=True, jobs=jobs, format_run=renderer.format_run)
    report = renderer.render(dump(paths, options))
    return out.getvalue(), err.getvalue(), report.non_consecutive if report else None, \
        sorted(report.damaged_files) if report else None


@pytest.fixture
def tiny_units(monkeypatch):
    monkeypatch.setattr(decode_pool, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(decode_pool, "UNIT_BYTES", 2048)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("mode", ["processes", "threads"])
def test_parallel_dump_is_the_serial_dump(tmp_path, tiny_units, monkeypatch, codec, mode):
    monkeypatch.setenv("SEGLOG_DECODE_MODE", mode)
    path = segment(tmp_path / "00000000000000000000.log", codec)
    serial = render([path], jobs=1)
    assert serial[0].count(b"\n") > 500 and serial[1], "the segment holds records and damage"
    assert serial[2], "the segment holds offset gaps"
    spied = spy_workers(monkeypatch)
    for jobs in (2, 3):
        assert render([path], jobs=jobs) == serial
    if codec == NONE:  # uncompressed: formatted here, cheaper than handing the lines over
        assert spied == {"processes": 0, "threads": 0}
    else:
        assert spied[mode] > 20, "the units went to the workers"


def spy_workers(monkeypatch) -> dict:
    """How many units went to forked children and to threads."""
    counts = {"processes": 0, "threads": 0}
    send, submit = decode_pool._Child.send, decode_pool.ThreadPoolExecutor.submit

    def counting_send(self, item):
        counts["processes"] += 1
        return send(self, item)

    def counting_submit(self, *args, **kwargs):
        counts["threads"] += 1
        return submit(self, *args, **kwargs)

    monkeypatch.setattr(decode_pool._Child, "send", counting_send)
    monkeypatch.setattr(decode_pool.ThreadPoolExecutor, "submit", counting_submit)
    return counts


@pytest.mark.parametrize("codec", [ZSTD, GZIP])
def test_parallel_dump_without_data_or_metadata(tmp_path, tiny_units, codec):
    path = segment(tmp_path / "00000000000000000000.log", codec, damaged=False)
    for print_data_log, skip in ((False, False), (True, True)):
        assert render([path], 2, print_data_log=print_data_log, skip=skip) == \
            render([path], 1, print_data_log=print_data_log, skip=skip)


def test_unit_size_does_not_change_the_output(tmp_path, monkeypatch):
    """Units of one batch, of a few, and of the whole file: the same lines and the same gaps
    (a gap falls at a unit boundary or inside a unit)."""
    monkeypatch.setattr(decode_pool, "MIN_PARALLEL_BYTES", 0)
    path = segment(tmp_path / "00000000000000000000.log", LZ4)
    serial = render([path], 1)
    for unit in (1, 700, 5000, 1 << 30):
        monkeypatch.setattr(decode_pool, "UNIT_BYTES", unit)
        assert render([path], 2) == serial, unit


def test_a_worker_that_fails_loses_nothing(tmp_path, tiny_units, monkeypatch):
    """A child that raises (or dies) has its units decoded by the parent, in their place."""
    path = segment(tmp_path / "00000000000000000000.log", SNAPPY)
    serial = render([path], 1)
    parent = os.getpid()
    real = decode_pool._child_loop

    def failing_loop(fn, tasks, results, shared, base):
        calls = {"n": 0}

        def sometimes(item):
            calls["n"] += 1
            if calls["n"] == 3:
                if base == 0:
                    os._exit(3)  # the first child dies
                raise RuntimeError("a worker failure")
            return fn(item)

        assert os.getpid() != parent
        real(sometimes, tasks, results, shared, base)

    monkeypatch.setattr(decode_pool, "_child_loop", failing_loop)
    assert render([path], 2) == serial


def test_stopping_early_leaves_no_worker(tmp_path, tiny_units, monkeypatch):
    path = segment(tmp_path / "00000000000000000000.log", ZSTD, damaged=False)
    pids = []
    init = decode_pool._Child.__init__

    def recording_init(self, *args):
        init(self, *args)
        pids.append(self.pid)

    monkeypatch.setattr(decode_pool._Child, "__init__", recording_init)
    events = dump([path], DumpOptions(deep_iteration=True, jobs=2, format_run=lambda run: None))
    for count, _event in enumerate(events):
        if count == 5:
            break
    events.close()
    assert len(pids) == 2
    for pid in pids:  # every worker was killed and reaped
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_small_files_and_one_job_fork_nothing(tmp_path, monkeypatch):
    """A file under MIN_PARALLEL_BYTES, and jobs=1, are decoded in this process alone."""
    path = segment(tmp_path / "00000000000000000000.log", ZSTD, damaged=False)
    assert os.path.getsize(path) < decode_pool.MIN_PARALLEL_BYTES
    forks = []
    monkeypatch.setattr(decode_pool, "_Child", lambda *a: forks.append(a))
    render([path], 2)
    monkeypatch.setattr(decode_pool, "MIN_PARALLEL_BYTES", 0)
    render([path], 1)
    out, err = io.BytesIO(), io.BytesIO()  # JSON Lines renders from records, here: no workers
    from seglog_cli.render.jsonl import JsonLinesDumpRenderer

    JsonLinesDumpRenderer(out, err, payload_encoding="utf8", deep_iteration=True).render(
        dump([path], DumpOptions(deep_iteration=True, jobs=2)))
    assert forks == [] and out.getvalue()


def test_results_come_in_order_with_ready_items_in_place():
    items = [decode_pool.Ready("a"), 1, 2, decode_pool.Ready("b"), 3, 4, 5, decode_pool.Ready("c")] + list(range(6, 40))
    for mode in ("processes", "threads"):
        got = [r.value if type(r) is decode_pool.Ready else r
               for r in decode_pool.ordered_map(lambda x: x * 10, items, 2, mode=mode)]
        assert got == [i.value if type(i) is decode_pool.Ready else i * 10 for i in items]


def test_a_result_bigger_than_a_slot_comes_through_the_pipe(monkeypatch):
    monkeypatch.setattr(decode_pool, "SLOT_BYTES", 1024)
    big = list(decode_pool.ordered_map(lambda n: bytes([n]) * (n * 300), range(12), 2))
    assert big == [bytes([n]) * (n * 300) for n in range(12)]
