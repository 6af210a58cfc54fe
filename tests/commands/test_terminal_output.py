"""What an operator's terminal shows: tables at 80 columns that never break a file name, an
offset or a timestamp; quiet partitions counted in one line; ages a person reads; no progress
bar left behind when the reader of a pipe goes away."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seglog_cli.commands.options import show_progress
from tests.conftest import CORPUS, CORPUS_MISSING, run_seglog

DATA = CORPUS / "kafka-4.2.0" / "data"
LONG_TOPIC = "payments-settlement-events-eu-west-1-reconciliation"
needs_corpus = pytest.mark.skipif(not DATA.is_dir(), reason=CORPUS_MISSING)


def _flip_bit(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ 0x01]))


@pytest.fixture
def damaged(tmp_path) -> Path:
    """A copy of the broker's log dir; ``plain-0`` copied again under a long topic name, with
    one flipped bit in its first segment and a torn tail on its last."""
    log_dir = tmp_path / "data"
    shutil.copytree(DATA, log_dir, symlinks=True)
    long_partition = log_dir / f"{LONG_TOPIC}-0"
    shutil.copytree(log_dir / "plain-0", long_partition)
    (long_partition / "partition.metadata").unlink()
    segments = sorted(long_partition.glob("*.log"))
    _flip_bit(segments[0], 5000)
    with open(segments[-1], "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00")
    (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
    return log_dir


def _assert_fits(text: str, width: int, tokens: list[str]) -> None:
    lines = text.splitlines()
    for line in lines:
        assert len(line) <= width or len(line.split()) == 1, f"{len(line)} columns: {line!r}"
    words = {word for line in lines for word in line.split()}
    for token in tokens:
        assert token in words, f"{token!r} broken or missing in:\n{text}"


@needs_corpus
def test_verify_table_at_80_columns_breaks_no_token(damaged, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    table = run_seglog("verify", "--format", "table", str(damaged))
    report = json.loads(run_seglog("verify", "--format", "json", str(damaged)).out)
    assert table.exit_code == report_exit(report) == 3
    findings = [f for p in report["partitions"] for f in p["findings"] if f["severity"] != "info"]
    assert findings
    tokens = [f"{LONG_TOPIC}-0"]
    for f in findings:
        tokens += [f["code"], "/".join(Path(f["path"]).parts[-2:])]
        tokens += [str(v) for v in (f["position"], f["offset"]) if v is not None]
    _assert_fits(table.out, 80, tokens)
    # the 100+ partitions with nothing to report are one line, not a screenful
    quiet = len(report["partitions"]) - len({f["path"].split("/")[-2] for f in findings})
    assert f"{quiet} partitions with nothing to report (--show info lists them)" in table.out
    assert "__consumer_offsets-17" not in table.out
    listed = run_seglog("verify", "--format", "table", "--show", "info", str(damaged))
    assert "__consumer_offsets-17" in listed.out and "nothing to report" not in listed.out
    _assert_fits(listed.out, 80, [f"{LONG_TOPIC}-0", "__consumer_offsets-17"])


def report_exit(report: dict) -> int:
    return {"damage": 3, "unreadable": 4, "warnings": 1, "clean": 0}[report["status"]]


@needs_corpus
def test_recover_table_at_80_columns_and_quiet_partitions(damaged, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    shown = run_seglog("recover", "--mode", "salvage", str(damaged))
    plan = json.loads(run_seglog("recover", "--mode", "salvage", "--format", "json", str(damaged)).out)
    changed = [p for p in plan["partitions"] if p["steps"] or p["refused"] or p["notes"]]
    quiet = len(plan["partitions"]) - len(changed)
    assert changed and quiet > 100
    assert f"{quiet} partitions with nothing to change (--show info lists them)" in shown.out
    table = shown.out[shown.out.index("recover --mode salvage\n"):].splitlines()[:-1]  # the last: the summary
    table = "\n".join(table)
    tokens = [f"{LONG_TOPIC}-0"] + [Path(p["path"]).name for p in changed]
    _assert_fits(table, 80, tokens)
    assert "__consumer_offsets-3:" not in shown.out
    every = run_seglog("recover", "--mode", "salvage", "--show", "info", str(damaged))
    assert "__consumer_offsets-3:" in every.out and "nothing to change" not in every.out


@needs_corpus
def test_retention_table_ages_read_as_days_and_json_keeps_ms(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    log_dir = tmp_path / "data"
    shutil.copytree(DATA, log_dir, symlinks=True)
    args = ["simulate-retention", str(log_dir / "plain-0"), "--now", "2099-01-01", "--config", "cleanup.policy=delete"]
    table = run_seglog(*args, "--format", "table")
    document = json.loads(run_seglog(*args, "--format", "json").out)
    assert " ms old" not in table.out and re.search(r"\b\d+\.\d d old > retention\.ms 604800000 \(7\.0 d\)",
                                                    " ".join(table.out.split()))
    segments = document["segments"] if "segments" in document else document["partitions"][0]["segments"]
    reasons = json.dumps(segments)
    assert re.search(r"is \d+ ms old > retention\.ms 604800000", reasons), reasons[:400]
    bases = [str(s.get("baseOffset", s.get("base_offset"))) for s in segments]
    section = table.out[table.out.index("plain-0: retention at"):]  # the table and its summary
    _assert_fits(section, 80, ["2026-11-22T11:28:04.665Z", "1039636", "0..2070"])
    assert all(any(line.split()[:1] == [f"{b}..{int(n) - 1}"] or line.split()[:1] == ["empty"]
                   for line in table.out.splitlines()) for b, n in zip(bases, bases[1:] + ["6729"]))


def test_no_progress_bar_by_default_when_stdout_is_a_pipe(monkeypatch):
    class Terminal:
        def isatty(self):
            return True

    read, write = os.pipe()
    try:
        with open(write, "w", closefd=False) as piped:
            monkeypatch.setattr(sys, "stderr", Terminal())
            monkeypatch.setattr(sys, "stdout", piped)
            assert show_progress(None) is False
            assert show_progress(True) is True
        with open(os.devnull, "w") as null:
            monkeypatch.setattr(sys, "stdout", null)
            assert show_progress(None) is True
            assert show_progress(False) is False
    finally:
        os.close(read)
        os.close(write)


def _on_a_terminal(command: str) -> tuple[list[str], bytes]:
    """Run ``command`` in bash on a pty (an operator's terminal) and replay what it wrote on a
    VT100 screen: the lines left on the screen, and the raw bytes."""
    pyte = pytest.importorskip("pyte", reason="pyte (a test dependency) draws the terminal's screen")
    pid, fd = pty.fork()
    if pid == 0:  # the child: bash on the pty
        os.environ["COLUMNS"], os.environ["LINES"] = "250", "30"
        os.execv("/bin/bash", ["bash", "-c", command])
    output = bytearray()
    while True:
        ready, _, _ = select.select([fd], [], [], 120)
        if not ready:
            os.kill(pid, 9)
            pytest.fail(f"{command} did not finish")
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    os.waitpid(pid, 0)
    screen = pyte.Screen(250, 30)
    pyte.ByteStream(screen).feed(bytes(output).replace(b"\n", b"\r\n"))
    return [line.rstrip() for line in screen.display if line.strip()], bytes(output)


@pytest.fixture
def big_segment(tmp_path) -> Path:
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    subprocess.run([sys.executable, str(Path(__file__).parents[1] / "benchmarks" / "make_segment.py"),
                    "--size-mb", "48", str(segment)], check=True, capture_output=True)
    return segment


def _no_bar(shown: list[str]) -> bool:
    return not any(("MB" in line and "/" in line) or "batches" in line or "\u2501" in line for line in shown)


def test_a_closed_pipe_leaves_no_progress_bar_on_the_terminal(big_segment):
    """``seglog dump big.log | head -1`` on a terminal: no bar is drawn over head's lines (the
    default when stdout is a pipe), head's line is whole, no traceback, exit 0."""
    shown, raw = _on_a_terminal(f"{sys.executable} -m seglog_cli dump --deep-iteration --print-data-log "
                                f"{big_segment} | head -1; echo done-${{PIPESTATUS[0]}}")
    assert shown == [f"Dumping {big_segment}", "done-0"], shown
    assert b"Traceback" not in raw


def test_a_progress_bar_is_gone_from_the_terminal_when_the_command_ends(big_segment):
    shown, raw = _on_a_terminal(f"{sys.executable} -m seglog_cli verify --level deep --format text "
                                f"{big_segment.parent} >/dev/null; echo done-$?")
    assert "\u2501".encode() in raw or b"MB" in raw  # the bar was drawn ...
    assert _no_bar(shown) and shown in (["done-0"], ["done-1"]), shown  # ... and nothing of it is left
