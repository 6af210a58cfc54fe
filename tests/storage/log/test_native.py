"""The compiled hot loops (``_native.c``) against the pure-Python reference.

Every compiled function must give exactly what the Python code gives, or decline (stop early,
return None) where the Python code raises or needs Java's UTF-8 replacement. Checked on
broker-written files, on generated batches of every shape, and on damaged bytes.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog_cli.render.text import TextDumpRenderer, batch_line
from seglog_cli.storage.log import native
from seglog_cli.storage.log.batch_header import BatchHeader
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.write.builder import NewRecord, build_batch, build_legacy_entry, build_legacy_wrapper
from seglog_cli.storage.log.codecs import decompress
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.records import Record, read_records
from tests.conftest import CORPUS, requires_corpus

pytestmark = pytest.mark.skipif(not native.available(), reason="the compiled module is not built")


@pytest.fixture
def python_only():
    native.set_enabled(False)
    yield
    native.set_enabled(True)


def _both(function):
    """(compiled result, pure-Python result) of ``function()``."""
    native.set_enabled(True)
    compiled = function()
    native.set_enabled(False)
    try:
        python = function()
    finally:
        native.set_enabled(True)
    return compiled, python


def _scan_all(path):
    with MappedFile(path) as mapped:
        scan = LogScan(mapped)
        headers = list(scan)
        return headers, [(f.code, f.position, f.length) for f in scan.findings], scan.valid_bytes


def _records_all(path):
    out = []
    with MappedFile(path) as mapped:
        for batch in LogScan(mapped):
            try:
                out.append((batch, list(read_records(mapped.buffer, batch))))
            except SeglogError as exc:
                out.append((batch, type(exc).__name__, exc.message))
    return out


records_strategy = st.lists(
    st.builds(NewRecord,
              key=st.one_of(st.none(), st.binary(max_size=20), st.text(max_size=10).map(str.encode)),
              value=st.one_of(st.none(), st.binary(max_size=200), st.text(max_size=60).map(str.encode)),
              headers=st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=8))),
                               max_size=3),
              timestamp=st.integers(0, 2**41)),
    min_size=0, max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.tuples(records_strategy, st.sampled_from([0, 1, 2, 3, 4]),
                                  st.booleans(), st.integers(-1, 5)), min_size=1, max_size=6))
def test_generated_batches_scan_and_decode_alike(tmp_path_factory, batches):
    path = tmp_path_factory.mktemp("native") / "00000000000000000000.log"
    offset, data = 0, b""
    for records, codec, log_append, sequence in batches:
        data += build_batch(records, base_offset=offset, compression=codec if records else 0,
                            timestamp_type=1 if log_append else 0, log_append_time=5 if log_append else None,
                            producer_id=7 if sequence >= 0 else -1, producer_epoch=0 if sequence >= 0 else -1,
                            base_sequence=sequence, partition_leader_epoch=3)
        offset += max(1, len(records))
    path.write_bytes(data)
    compiled, python = _both(lambda: (_scan_all(path), _records_all(path), _render(path)))
    assert compiled == python


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=records_strategy.filter(bool), codec=st.sampled_from([0, 1, 3]), data=st.data())
def test_damaged_batches_agree_or_decline(tmp_path_factory, records, codec, data):
    batch = bytearray(build_batch(records, compression=codec))
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(61 if data.draw(st.booleans()) else 0, len(batch) - 1))
        batch[index] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):  # fix the CRC so the damage reaches the record decoder
        from crc32c import crc32c
        batch[17:21] = struct.pack(">I", crc32c(bytes(batch[21:])))
    path = tmp_path_factory.mktemp("damaged") / "00000000000000000000.log"
    path.write_bytes(bytes(batch) + build_batch(records, base_offset=100))
    compiled, python = _both(lambda: (_scan_all(path), _records_all(path)))
    assert compiled == python


def test_legacy_entries_scan_alike(tmp_path):
    data = (build_legacy_entry(0, b"k", b"v", magic=0) + build_legacy_entry(1, None, b"v", magic=1, timestamp=5)
            + build_legacy_wrapper([NewRecord(b"a", b"b", timestamp=9)] * 3, last_offset=4, magic=1)
            + build_legacy_entry(5, b"k", b"v", magic=-3, timestamp=77))
    (tmp_path / "00000000000000000000.log").write_bytes(data)
    compiled, python = _both(lambda: (_scan_all(tmp_path / "00000000000000000000.log"),
                                      _records_all(tmp_path / "00000000000000000000.log")))
    assert compiled == python


def _corpus_logs():
    if not CORPUS.is_dir():
        return []
    logs = sorted((CORPUS / "kafka-4.2.0" / "data").glob("*/*.log")) + sorted((CORPUS / "public").rglob("*.log"))
    return [pytest.param(p, id=str(p.relative_to(CORPUS))) for p in logs if p.stat().st_size]


@requires_corpus
@pytest.mark.parametrize("path", _corpus_logs())
def test_broker_files_scan_decode_and_render_alike(path):
    compiled, python = _both(lambda: (_scan_all(path), _records_all(path), _render(path)))
    assert compiled == python


def _render(path) -> bytes:
    """The dump's text output (batch lines, deep, deep with a range) through each path."""
    import io

    from seglog_cli.storage.dump.dump import DumpOptions, dump

    out = []
    for options in (DumpOptions(), DumpOptions(deep_iteration=True), DumpOptions(deep_iteration=True, from_offset=1)):
        stdout, stderr = io.BytesIO(), io.BytesIO()
        TextDumpRenderer(stdout, stderr, print_data_log=options.deep_iteration).render(dump([str(path)], options))
        out.append((stdout.getvalue(), stderr.getvalue()))
    return out


@settings(max_examples=200, deadline=None)
@given(fields=st.tuples(st.integers(0, 2**40), st.integers(-2**63, 2**63 - 1), st.integers(49, 2**31 - 1),
                        st.integers(-2**31, 2**31 - 1), st.sampled_from([0, 1, 2, 3, -5]),
                        st.integers(0, 2**32 - 1), st.integers(-2**15, 2**15 - 1), st.integers(-2**31, 2**31 - 1),
                        st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1),
                        st.integers(-2**15, 2**15 - 1), st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1),
                        st.one_of(st.none(), st.integers(0, 2**32 - 1))))
def test_batch_line_alike(fields):
    header = BatchHeader(*fields)
    if header.magic < 2:
        header = BatchHeader(*fields[:13], None, fields[14])
    assert native.module.batch_line(header) == batch_line(header).encode("ascii")


@settings(max_examples=300, deadline=None)
@given(key=st.one_of(st.none(), st.binary(max_size=12)), value=st.one_of(st.none(), st.binary(max_size=40)),
       header_keys=st.lists(st.binary(max_size=6), max_size=3), magic=st.sampled_from([0, 1, 2]),
       print_data_log=st.booleans(), skip=st.booleans())
def test_record_line_alike_or_declined(key, value, header_keys, magic, print_data_log, skip):
    batch = BatchHeader(10, 5, 100, 0, magic, 1, 0, 0, 1000, 1000, -1, -1, -1, 1 if magic >= 2 else None, 1)
    record = Record(5, 1000, 0, key, value, tuple((k, b"v") for k in header_keys), -1, 20,
                    None if magic >= 2 else 77, True, magic)
    renderer = TextDumpRenderer(None, None, print_data_log=print_data_log, skip_record_metadata=skip)
    renderer._batch = batch
    expected = renderer.record_line(record, None).encode("utf-8")
    line = native.module.record_line(record, batch, print_data_log, skip)
    if line is None:  # declined: only for bytes that are not strict UTF-8
        texts = list(header_keys) + [key or b"", value or b""]
        assert any(_needs_java_replacement(t) for t in texts)
    else:
        assert line == expected


def _needs_java_replacement(data: bytes) -> bool:
    try:
        data.decode("utf-8", "strict")
        return False
    except UnicodeDecodeError:
        return True


def test_crc32c_matches_the_package():
    from crc32c import crc32c

    for data in (b"", b"123456789", bytes(range(256)) * 40):
        assert native.module.crc32c(data) == crc32c(data)
