"""seglog offsets' table at 80 columns: long group and topic names, 13-digit offsets, flags;
no line over 80 characters and no name or number broken across lines, whichever layout the
width forces (narrowed table, one table per group, stacked rows). Text/CSV/JSON keep all."""

from __future__ import annotations

import json
import re

import pytest

from seglog_cli.storage.write.writer import PartitionWriter
from tests.conftest import run_seglog
from tests.coordinator_bytes import batch, offset_commit_key, offset_commit_value

BASE = 1_234_567_890_000  # offsets with 13 digits


def write_partition(directory, batches, base_offset=0):
    writer = PartitionWriter(directory, base_offset=base_offset)
    for data in batches:
        writer.append(data)
    writer.close()


def build(root, groups, topics):
    """Each topic: 20 records from BASE; each group commits BASE + 5 + its index on every topic,
    the first group below the log start (the log-start-offset-checkpoint says BASE + 3)."""
    entries, checkpoint = [], []
    for topic in topics:
        write_partition(root / f"{topic}-0", [batch(BASE + n, b"k", b"v") for n in range(20)], base_offset=BASE)
        checkpoint.append(f"{topic} 0 {BASE + 3}")
        for index, group in enumerate(groups):
            entries.append((group, topic, BASE + 5 + index if index else BASE + 1))
    write_partition(root / "__consumer_offsets-0", [
        batch(n, offset_commit_key(group, topic, 0), offset_commit_value(offset, "m" * 40, 1_700_000_000_000))
        for n, (group, topic, offset) in enumerate(entries)])
    (root / "log-start-offset-checkpoint").write_text(f"0\n{len(checkpoint)}\n" + "\n".join(checkpoint) + "\n")
    (root / "replication-offset-checkpoint").write_text(
        f"0\n{len(topics)}\n" + "".join(f"{topic} 0 {BASE + 20}\n" for topic in topics))
    return entries


def tokens_intact(text: str, tokens) -> None:
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    for token in tokens:
        pattern = re.compile(rf"(?<!\S){re.escape(str(token))}(?!\S)")
        assert any(pattern.search(line) for line in lines), (token, text)


CASES = {
    # fits once the less important columns are dropped and headings shortened
    "narrowed": (["payments-recon", "fraud-scoring"], ["payments.settlement"]),
    # a group name and a topic that no single table fits beside each other: one table per group
    "per-group": (["eu-west-1.payments-reconciliation.consumer-group.v3", "b"],
                  ["payments.settlement.ledger.v2"]),
    # a topic so long that only stacked rows fit
    "stacked": (["payments-reconciliation-app"],
                ["payments.settlement.ledger.reconciliation.eu-west-1.events.v2.compacted"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_table_at_80_columns_never_breaks_a_token(tmp_path, monkeypatch, case):
    groups, topics = CASES[case]
    entries = build(tmp_path, groups, topics)
    monkeypatch.setenv("COLUMNS", "80")
    result = run_seglog("offsets", str(tmp_path), "--format", "table")
    assert result.exit_code == 1  # the first group is below the log start: flagged
    document = json.loads(run_seglog("offsets", str(tmp_path), "--format", "json").out)
    lags = [c["lag"] for c in document["committed"]]
    assert sorted(lags) == sorted(BASE + 20 - offset for *_, offset in entries)
    tokens_intact(result.out, groups + topics + [offset for *_, offset in entries] + lags + ["BELOW-START"])
    lines = result.out.splitlines()
    assert (f"GROUP {groups[0]}" in lines) == (case == "per-group")
    assert (lines[0].split()[:2] == ["GROUP", "TOPIC"]) == (case == "narrowed")
    assert (lines[1].split() == ["TOPIC"]) == (case == "stacked")  # the long topic alone on its line
    # the text format carries every column, whatever the width
    text = run_seglog("offsets", str(tmp_path), "--format", "text").out
    header = text.splitlines()[0].split()
    assert header == ["GROUP", "TOPIC", "PARTITION", "OFFSET", "LOG-START", "LOG-END", "HIGH-WATERMARK", "LAG",
                      "FLAGS", "LEADER-EPOCH", "COMMITTED-AT", "METADATA", "RECORD"]
    assert "m" * 40 in text and "COMMITTED_BELOW_LOG_START" in text


def test_wide_terminal_shows_every_column(tmp_path, monkeypatch):
    build(tmp_path, ["app"], ["orders"])
    monkeypatch.setenv("COLUMNS", "250")
    table = run_seglog("offsets", str(tmp_path), "--format", "table").out
    text = run_seglog("offsets", str(tmp_path), "--format", "text").out
    assert table.splitlines()[:2] == text.splitlines()[:2]  # the same table (prose wraps at 250)
    for width, header in [(100, ["GROUP", "TOPIC", "PART", "OFFSET", "START", "END", "HW", "LAG", "FLAGS"]),
                          (60, ["GROUP", "TOPIC", "PART", "OFFSET", "LAG", "FLAGS"])]:
        monkeypatch.setenv("COLUMNS", str(width))
        narrow = run_seglog("offsets", str(tmp_path), "--format", "table").out.splitlines()
        assert narrow[0].split() == header and len(narrow[0]) <= width < len(narrow[0]) + 20
        assert all(len(line) <= width for line in narrow)


def test_readme_offsets_examples_run(tmp_path, monkeypatch):
    """The docs' `seglog offsets` examples (docs/commands/offsets.md), on a built log dir in place
    of the example's ``logdir`` (tests/test_docs_examples.py runs them on the example itself)."""
    from tests.conftest import REPO

    page = (REPO / "docs" / "commands" / "offsets.md").read_text()
    blocks = re.findall(r"```console\n(.*?)```", page, re.S)
    examples = [line.split(">")[0].split()[2:] for block in blocks for line in block.splitlines()
                if line.startswith("$ seglog offsets")]
    assert len(examples) == 2, examples
    write_partition(tmp_path / "orders-0", [batch(n, b"k", b"v") for n in range(12)])
    write_partition(tmp_path / "__consumer_offsets-0", [
        batch(0, offset_commit_key("orders-app", "orders", 0), offset_commit_value(9, "", 1_700_000_000_000))])
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\norders 0 12\n")
    for args in examples:
        result = run_seglog(*[str(tmp_path) if arg == "logdir" else arg for arg in args])
        assert result.exit_code == 0, result.err
        assert "orders-app" in result.out
    rows = run_seglog("offsets", str(tmp_path), "--format", "csv").out.splitlines()
    header, row = rows[0].split(","), rows[1].split(",")
    assert dict(zip(header, row))["lag"] == "3"
