"""The one Jackson writer (render/jackson.py) that the coordinator, metadata and control-record
JSON all print through: Jackson's escapes and Java's doubles, and its C-encoder fast path equal
to the exact writer on every float-free tree."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seglog_cli.formats import group_coordinator as gc
from seglog_cli.formats import metadata_records as mr
from seglog_cli.formats import transaction_log as tl
from seglog_cli.render.jackson import declares_floats, jackson_text, java_double
from seglog_cli.render.kafka_json import to_kafka_json


def test_every_control_character_is_escaped_upper_case():
    short = {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}
    for code in range(0x20):
        expected = short.get(code, "\\u%04X" % code)
        assert jackson_text(chr(code)) == f'"{expected}"', code
        assert jackson_text(chr(code), floats=False) == f'"{expected}"', code
    assert jackson_text("\x1f") == '"\\u001F"'  # json.dumps writes \u001f


def test_quotes_backslashes_and_what_stays_raw():
    assert jackson_text({"k\"\x01": "\\ é \x7f \u2028 😀"}) == '{"k\\"\\u0001":"\\\\ é \x7f \u2028 😀"}'


def test_scalars_bytes_and_nesting():
    assert jackson_text([None, True, False, -1, 2**63 - 1, b"\x00\xff", b"", {"a": []}]) == (
        '[null,true,false,-1,9223372036854775807,"AP8=","",{"a":[]}]')


@pytest.mark.parametrize(("value", "text"), [
    (1e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"), (1e-4, "1.0E-4"), (-0.0, "-0.0"),
    (100.0, "100.0"), (1e16, "1.0E16"), (12345678.9, "1.23456789E7"), (5e-324, "4.9E-324"),
])
def test_doubles_are_javas(value, text):
    assert java_double(value) == text
    assert jackson_text({"d": value}) == '{"d":%s}' % text


def test_non_finite_doubles_are_quoted():
    assert jackson_text([float("nan"), float("inf"), float("-inf")]) == '["NaN","Infinity","-Infinity"]'


JSON_TREES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.text() | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(JSON_TREES)
def test_fast_path_equals_the_exact_writer(tree):
    assert jackson_text(tree, floats=False) == jackson_text(tree)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=6), st.text() | st.integers(), max_size=4))
def test_text_is_valid_json_with_the_same_data(tree):
    assert json.loads(jackson_text(tree)) == tree


def test_declares_floats():
    assert declares_floats(mr.RECORD_TYPES[14].schema.fields)  # ClientQuotaRecord's float64 value
    assert not declares_floats(mr.RECORD_TYPES[2].schema.fields)  # TopicRecord
    # the coordinator decoders take the fast path: none of their schemas has a double
    messages = [m for pair in gc.RECORD_TYPES.values() for m in pair]
    messages += [m for pair in tl.RECORD_TYPES.values() for m in pair]
    messages += [gc.CONSUMER_PROTOCOL_SUBSCRIPTION, gc.CONSUMER_PROTOCOL_ASSIGNMENT]
    assert not any(declares_floats(m.fields) for m in messages)


def test_control_record_json_uses_jacksons_escapes():
    assert to_kafka_json({"voter_id": 1, "host": "a\x1fb", "port": 9093}) == (
        '{"voterId":1,"host":"a\\u001Fb","port":9093}')
