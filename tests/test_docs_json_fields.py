"""The JSON a command writes is the JSON its page documents.

Each case runs a command on a copy of the bundled example (``examples/logdir``, and
``examples/metadata`` for the metadata log) and collects the keys of every object it writes. Every
key must be named, in backticks, on the command's page: a field the code adds and the page leaves
out fails here. The other way round, every field a page's field table names (a table whose first
column is headed "field") must be a string the code writes somewhere under ``seglog_cli/``: a field
renamed or removed in the code fails here too.

Keys that are data, not names (partition numbers, config names with dots, offsets), are not
fields and are skipped: a field is a camelCase word.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from functools import cache

import pytest

from tests.conftest import REPO

DOCS = REPO / "docs" / "commands"
FIELD = re.compile(r"^[a-z][a-zA-Z0-9]*$")
SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
BREAK_ORDERS_0 = "truncate -s -7 logdir/orders-0/00000000000000000240.log && rm logdir/.kafka_cleanshutdown"
FLIP_ORDERS_0 = ("printf '\\xff' | dd of=logdir/orders-0/00000000000000000000.log bs=1 seek=1000 conv=notrunc "
                 "status=none && rm -f logdir/.kafka_cleanshutdown")

# (page, shell set-up or "", the seglog command whose stdout is JSON or JSON Lines)
CASES = [
    ("recover", BREAK_ORDERS_0, "recover --format json logdir"),
    ("recover", FLIP_ORDERS_0, "recover --mode salvage --format json logdir"),
    ("recover", BREAK_ORDERS_0, "recover --apply --format json logdir"),
    ("verify", "", "verify --format json logdir"),
    ("verify", FLIP_ORDERS_0, "verify --level deep --format json logdir"),
    ("simulate-retention", "", "simulate-retention --format json --config retention.ms=600000 "
                               "--now 2026-01-01T00:10:00Z --at +10m logdir"),
    ("simulate-retention", "", "simulate-retention --format json --config cleanup.policy=compact logdir/orders-0"),
    ("offsets", "", "offsets --format json logdir"),
    ("transactions", "", "transactions --format json logdir"),
    ("metadata", "", "metadata --format json examples/metadata/__cluster_metadata-0"),
    ("dump", "", "dump --format jsonl --deep-iteration logdir/payments-0/00000000000000000000.log"),
    ("dump", "", "dump --format jsonl --deep-iteration logdir/orders-1/00000000000000000000.log"),
    ("rebuild-index", "rm logdir/orders-0/00000000000000000120.index", "rebuild-index --format json logdir/orders-0"),
    ("append", "", "append --value hello --key k --format json logdir/orders-0"),
    ("diff", "cp -r logdir b2 && truncate -s -7 b2/orders-0/00000000000000000240.log",
     "diff --format json logdir/orders-0 b2/orders-0"),
    ("diff", "cp -r logdir b2 && truncate -s -7 b2/orders-0/00000000000000000240.log",
     "diff --format jsonl logdir/orders-0 b2/orders-0"),
    ("repair", "cp -r logdir b2 && " + FLIP_ORDERS_0.replace("logdir/", "b2/"),
     "repair --format json --from logdir/orders-0 b2/orders-0"),
]


def keys(value, found: set[str], pattern=FIELD) -> set[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if pattern.match(key):
                found.add(key)
            keys(item, found, pattern)
    elif isinstance(value, list):
        for item in value:
            keys(item, found, pattern)
    return found


def documents(text: str) -> list:
    text = text.strip()
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def emitted(setup: str, command: str, tmp_path, pattern=FIELD) -> set[str]:
    shutil.copytree(REPO / "examples" / "logdir", tmp_path / "logdir")
    shutil.copytree(REPO / "examples" / "metadata", tmp_path / "examples" / "metadata")
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    if setup:
        subprocess.run(["bash", "-c", setup], cwd=tmp_path, check=True, env=env)
    done = subprocess.run(["bash", "-c", f"seglog {command}"], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode in (0, 1, 3), done.stderr
    found: set[str] = set()
    for document in documents(done.stdout):
        keys(document, found, pattern)
    return found


def named_on(page: str) -> set[str]:
    """The words inside the page's inline code spans (a field table's `name`, or `{"version": 1, ...}`)."""
    text = re.sub(r"```.*?```", "", (DOCS / f"{page}.md").read_text(), flags=re.S)
    return {word for span in re.findall(r"`([^`\n]+)`", text) for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", span)}


def missing_fields(fields: set[str], page_text_spans: set[str]) -> list[str]:
    return sorted(fields - page_text_spans)


@pytest.mark.parametrize(("page", "setup", "command"), CASES, ids=[f"{p}: {c.split(' logdir')[0]}" for p, _, c in CASES])
def test_every_field_written_is_on_the_page(page, setup, command, tmp_path):
    assert missing_fields(emitted(setup, command, tmp_path), named_on(page)) == []


SNAKE_CASES = [*CASES,
               ("metadata", "", "metadata --format json --history orders-1 examples/metadata/__cluster_metadata-0"),
               ("metadata", "", "metadata --format json --history broker:2 examples/metadata/__cluster_metadata-0"),
               ("simulate-retention", "", "simulate-retention --model --records-per-sec 0.2 --record-size 150 "
                                          "--config segment.bytes=16384 --format json")]


@pytest.mark.parametrize(("page", "setup", "command"), SNAKE_CASES,
                         ids=[f"{p}: {c.split(' logdir')[0]}" for p, _, c in SNAKE_CASES])
def test_no_field_is_snake_case(page, setup, command, tmp_path):
    """Every seglog JSON document names its fields in camelCase, as Kafka's own JSON does."""
    assert emitted(setup, command, tmp_path, SNAKE) == set()


@cache
def source_strings() -> str:
    return "\n".join(path.read_text() for path in (REPO / "seglog_cli").rglob("*.py"))


def table_fields(text: str) -> list[str]:
    """The names in the first column of every table headed ``field`` (``a``, ``b`` in one cell: both)."""
    fields, in_table = [], False
    for line in text.splitlines():
        if re.match(r"^\|\s*field\s*\|", line, re.I):
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        if in_table and not re.match(r"^\|[\s:-]+\|", line):
            first = line.split("|")[1]
            fields += [name for name in re.findall(r"`([^`]+)`", first) if FIELD.match(name)]
    return fields


@pytest.mark.parametrize("page", sorted(p.stem for p in DOCS.glob("*.md")))
def test_every_field_a_table_names_is_written_by_the_code(page):
    source = source_strings()
    unknown = [name for name in table_fields((DOCS / f"{page}.md").read_text()) if not written_by_code(name, source)]
    assert unknown == []


def written_by_code(name: str, source: str) -> bool:
    """``name`` is a string literal of the code, or a dataclass field the code writes camelCased
    (``recordsPerSec``: a field ``records_per_sec: float``)."""
    if f'"{name}"' in source or f"'{name}'" in source:
        return True
    snake = re.sub(r"([A-Z])", r"_\1", name).lower()
    return snake != name and re.search(rf"^\s+{snake}: ", source, re.M) is not None


def test_the_checks_catch_a_field_left_out_and_one_made_up():
    assert missing_fields({"version", "newField"}, {"version"}) == ["newField"]
    table = "| field | type | meaning |\n|---|---|---|\n| `version`, `noSuchFieldAnywhere` | int | x |\n"
    assert table_fields(table) == ["version", "noSuchFieldAnywhere"]
    assert f'"{"noSuchFieldAnywhere"}"' not in source_strings()
    assert keys({"a": {"0": {"bB": 1}, "retention.ms": 2}, "c": [{"dD": 1}]}, set()) == {"a", "bB", "c", "dD"}
    assert keys({"topicId": 1, "x": [{"leader_epoch": 2, "retention.ms": 3}]}, set(), SNAKE) == {"leader_epoch"}
