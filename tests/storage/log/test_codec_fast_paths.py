"""The fast paths of the decompressors (gzip's one member through ISA-L, zstd's one frame, snappy's
one xerial chunk) give exactly what the exact models give: the same bytes for every input they
take, and the same error text (or the same bytes) for every damaged or odd input, which they hand
back to the exact models. Checked on valid sections of every size and on fuzzed damage."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog_cli.storage.log import codecs
from seglog_cli.storage.log.errors import DecompressionError


def outcome(codec: int, data: bytes, max_output: int = codecs.DEFAULT_MAX_OUTPUT):
    try:
        return "ok", codecs.decompress(codec, data, 2, max_output)
    except DecompressionError as exc:
        return "error", str(exc)


def exact(monkeypatch, codec: int, data: bytes, max_output: int = codecs.DEFAULT_MAX_OUTPUT):
    with monkeypatch.context() as patched:
        patched.setattr(codecs, "_gunzip_one_member", lambda *args: None)
        patched.setattr(codecs, "_zstd_one_frame", lambda *args: None)
        patched.setattr(codecs, "_xerial_one_chunk", lambda *args: False)
        return outcome(codec, data, max_output)


FAST = (codecs.GZIP, codecs.ZSTD, codecs.SNAPPY)
records = st.binary(min_size=0, max_size=3000).map(lambda b: b * 3)


@pytest.mark.parametrize("codec", FAST)
@given(plain=records)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fast_paths_decode_what_the_exact_models_decode(monkeypatch, codec, plain):
    data = codecs.compress(codec, plain)
    assert outcome(codec, data) == exact(monkeypatch, codec, data) == ("ok", plain)


@pytest.mark.parametrize("codec", FAST)
@given(plain=records.filter(bool), data=st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_damaged_input_gives_the_exact_models_outcome(monkeypatch, codec, plain, data):
    compressed = bytearray(codecs.compress(codec, plain))
    how = data.draw(st.sampled_from(["flip", "truncate", "append", "trailer"]))
    if how == "flip":
        at = data.draw(st.integers(0, len(compressed) - 1))
        compressed[at] ^= data.draw(st.integers(1, 255))
    elif how == "truncate":
        del compressed[data.draw(st.integers(0, len(compressed) - 1)):]
    elif how == "append":
        compressed += data.draw(st.binary(min_size=1, max_size=40))
    else:  # the last bytes: gzip's CRC and size, zstd's last block, snappy's chunk end
        compressed[-1] ^= 0x01
    damaged = bytes(compressed)
    cap = data.draw(st.sampled_from([codecs.DEFAULT_MAX_OUTPUT, max(1, len(plain) - 1)]))
    assert outcome(codec, damaged, cap) == exact(monkeypatch, codec, damaged, cap)


def test_a_second_gzip_member_is_read_by_the_exact_model(monkeypatch):
    two = codecs.compress(codecs.GZIP, b"first ") + codecs.compress(codecs.GZIP, b"second")
    assert outcome(codecs.GZIP, two) == exact(monkeypatch, codecs.GZIP, two) == ("ok", b"first second")


def test_gzip_trailer_that_lies_about_the_size(monkeypatch):
    data = bytearray(codecs.compress(codecs.GZIP, b"x" * 1000))
    struct.pack_into("<I", data, len(data) - 4, 999)
    assert outcome(codecs.GZIP, bytes(data)) == exact(monkeypatch, codecs.GZIP, bytes(data))
    assert outcome(codecs.GZIP, bytes(data))[0] == "error"


def test_the_fast_paths_take_the_usual_batch():
    plain = b"a usual batch of records " * 100
    gz, zst, xerial = (codecs.compress(c, plain) for c in FAST)
    assert codecs._gunzip_one_member(gz, 10, codecs.DEFAULT_MAX_OUTPUT) == plain
    assert codecs._zstd_one_frame(zst, codecs.DEFAULT_MAX_OUTPUT) == plain
    assert codecs._xerial_one_chunk(xerial)
