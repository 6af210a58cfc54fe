"""``verify --level deep`` with the records of a segment decoded by several processes finds
exactly what one process finds: the same findings (codes, positions, messages), the same counts,
on segments of every codec holding control batches, legacy entries, a compressed batch that does
not decompress, offset gaps and damage the scan resyncs past."""

from __future__ import annotations

import pytest

from seglog_cli.storage.log import decode_pool, native
from seglog_cli.storage.verify.verify import VerifyOptions, verify
from seglog_cli.storage.verify.verify_segment import DEEP
from tests.storage.dump.test_parallel_decode import CODECS, segment, spy_workers

pytestmark = pytest.mark.skipif(not native.available(), reason="the parallel path uses the compiled decoder")


def outcome(path: str, jobs: int):
    report = verify([path], VerifyOptions(level=DEEP, jobs=jobs))
    return [f.to_dict() if hasattr(f, "to_dict") else repr(f) for f in report.findings], report.files


@pytest.mark.parametrize("codec", CODECS)
def test_parallel_deep_verify_finds_what_one_process_finds(tmp_path, monkeypatch, codec):
    monkeypatch.setattr(decode_pool, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(decode_pool, "UNIT_BYTES", 2048)
    path = segment(tmp_path / "00000000000000000000.log", codec)
    serial = outcome(path, 1)
    assert len(serial[0]) > 2, "the segment holds damage verify reports"
    if codec != CODECS[0]:  # a deep finding, from a batch the workers hand back to the Python path
        assert "DECOMPRESSION_FAILED" in repr(serial[0]) or "decompress" in repr(serial[0]).lower()
    spied = spy_workers(monkeypatch)
    assert outcome(path, 2) == serial
    if codec == CODECS[0]:  # uncompressed records are checked here, cheaper than handing them over
        assert spied["processes"] == 0
    else:
        assert spied["processes"] > 10, "the units went to the workers"
