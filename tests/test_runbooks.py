"""The runbooks in examples/runbooks/ run as an operator runs them: bash, seglog from PATH, from
another directory, against copies of real broker data that each test damages first. Each test
checks the exit status, the summary, the --json document and the files left behind (undo
included), against what Kafka's own files and tools say (the corpus goldens, the broker's
recovery results, the broker-written indexes)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO, requires_corpus, restore_preallocated, run_seglog

RUNBOOKS = REPO / "examples" / "runbooks"
SCRIPTS = sorted(p.name for p in RUNBOOKS.glob("[0-9][0-9]-*.sh"))
DATA = CORPUS / "kafka-4.2.0" / "data"
GOLDEN = CORPUS / "kafka-4.2.0" / "golden"
CASES = CORPUS / "kafka-4.2.0" / "recovery-cases"
LOG_DIR_FILES = ("meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                 "log-start-offset-checkpoint", "cleaner-offset-checkpoint", ".kafka_cleanshutdown")
NOW = "2026-11-23T00:00:00Z"  # a fixed clock a few hours after the corpus was written

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


# -- helpers ----------------------------------------------------------------------------------

def _env() -> dict:
    """seglog from PATH as an operator has it: the interpreter's bin dir first (the console
    script lives there), python3 being this interpreter."""
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.pop("SEGLOG", None)
    if shutil.which("seglog", path=env["PATH"]) is None:
        env["SEGLOG"] = f"{sys.executable} -m seglog_cli"
    env["PYTHON"] = sys.executable
    return env


ENV = _env()


def run(script: str, *args, cwd: Path, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(RUNBOOKS / script), *map(str, args)], cwd=cwd, env=env or ENV,
                          input=stdin, capture_output=True, text=True, timeout=600)


def run_json(script: str, *args, cwd: Path, stdin: str = "") -> tuple[int, dict]:
    result = run(script, "--json", *args, cwd=cwd, stdin=stdin)
    document = json.loads(result.stdout)
    assert document["status"] == result.returncode
    assert document["summary"] and document["summary"][-1].endswith(f"(exit {result.returncode})")
    return result.returncode, document


def make_writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def copy_log_dir(dest: Path, *partitions: str, source: Path = DATA) -> Path:
    """A log dir holding copies of some corpus partitions and the log-dir files."""
    dest.mkdir(parents=True)
    for name in LOG_DIR_FILES:
        if (source / name).exists():
            shutil.copy2(source / name, dest / name)
    for partition in partitions:
        shutil.copytree(source / partition, dest / partition)
    make_writable(dest)
    return dest


def copy_case(case: str, dest: Path) -> Path:
    shutil.copytree(CASES / case / "before", dest)
    make_writable(dest)
    restore_preallocated(dest, f"kafka-4.2.0/recovery-cases/{case}/before")
    return dest


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file; .lock is left out (reading it would drop a POSIX lock this process holds)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


def undo_line(out: str) -> str:
    match = re.search(r"^UNDO: (.+)$", out, re.M)
    assert match, out
    return match.group(1)


def run_undo(command: str, cwd: Path) -> None:
    result = subprocess.run(["bash", "-c", command], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def golden_batches(partition: str, segment: str) -> list[dict]:
    """kafka-dump-log's batch lines of one segment (no flags)."""
    batches = []
    for line in (GOLDEN / partition / f"{segment}.log.plain.out").read_text().splitlines():
        if line.startswith("baseOffset:"):
            fields = dict(re.findall(r"(\w+): (\S+)", line))
            batches.append({k: int(fields[k]) for k in ("baseOffset", "lastOffset", "position", "size")})
    return batches


# -- every script ----------------------------------------------------------------------------

def test_there_are_nine_runbooks_linked_from_both_readmes():
    assert len(SCRIPTS) == 9
    readme = (REPO / "README.md").read_text()
    assert "## Runbooks" in readme
    local = (RUNBOOKS / "README.md").read_text()
    for script in SCRIPTS:
        assert f"examples/runbooks/{script}" in readme and f"({script})" in local
        assert os.access(RUNBOOKS / script, os.X_OK)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_usage_and_header(script, tmp_path):
    result = run(script, "-h", cwd=tmp_path)
    assert result.returncode == 0
    text = result.stdout
    assert text.startswith(script) and "Usage: " + script in text
    for part in ("When to use it:", "What it changes:", "How to undo it:", "Exit status",
                 "0  ", "2  usage error", "4  bad input", "--json"):
        assert part in text, part
    bad = run(script, "--no-such-option", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown option --no-such-option" in bad.stderr
    assert run(script, cwd=tmp_path).returncode == 2  # no path given


@pytest.mark.parametrize("script", ["01-broker-wont-start.sh", "03-crc-error.sh", "06-retention-not-deleting.sh"])
def test_a_seglog_that_misbehaves_is_exit_70_never_a_decision(script, tmp_path):
    (tmp_path / "data").mkdir()
    garbage = run(script, tmp_path / "data", cwd=tmp_path, env=dict(ENV, SEGLOG="echo"))  # not JSON
    assert garbage.returncode == 70 and "unexpected failure" in garbage.stderr
    missing = run(script, tmp_path / "data", cwd=tmp_path, env=dict(ENV, SEGLOG="/no/such/seglog"))
    assert missing.returncode == 70 and "cannot run seglog" in missing.stdout


# -- 01 broker will not start -----------------------------------------------------------------

@requires_corpus
def test_01_real_crash_plan_then_apply_matches_the_broker_then_undo(tmp_path):
    case = "a-append-garbage-active-log"
    log_dir = copy_case(case, tmp_path / "kafka" / "data")
    damaged = tree(log_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    plan = run("01-broker-wont-start.sh", log_dir, cwd=elsewhere)  # no answer on stdin: no
    assert plan.returncode == 1, plan.stderr
    assert "TRAILING_GARBAGE" in plan.stdout and "100 byte(s) truncated" in plan.stdout
    assert "plan shown, not applied" in plan.stdout
    assert tree(log_dir) == damaged

    applied = run("01-broker-wont-start.sh", log_dir, cwd=elsewhere, stdin="y\n")
    assert applied.returncode == 1, applied.stderr
    assert "The broker will now skip no offset" in applied.stdout
    assert "The broker will now skip re-reading 1 of the 2 segment(s)" in applied.stdout
    assert "finds nothing to change" in applied.stdout
    after = CASES / case / "after" / "plain-0"
    for name in ("00000000000000008203.log", "00000000000000008203.index", "00000000000000006225.log"):
        assert (log_dir / "plain-0" / name).read_bytes() == (after / name).read_bytes(), name

    again, document = run_json("01-broker-wont-start.sh", log_dir, cwd=elsewhere)
    assert again == 0 and document["applied"] is False and document["plan"]["steps"] == 0

    run_undo(undo_line(applied.stdout), elsewhere)
    assert tree(log_dir) == damaged


@requires_corpus
def test_01_and_04_refuse_while_a_broker_holds_the_lock(tmp_path):
    import fcntl

    log_dir = copy_case("a-append-garbage-active-log", tmp_path / "data")  # the broker left its .lock
    before = tree(log_dir)
    with open(log_dir / ".lock", "r+b") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what a running broker holds
        result = run("01-broker-wont-start.sh", "--yes", log_dir, cwd=tmp_path)
        assert result.returncode == 5 and "stop it first" in result.stdout
        (log_dir / "plain-0" / "00000000000000000000.index").unlink()
        before = tree(log_dir)
        result = run("04-rebuild-index.sh", "--yes", log_dir, cwd=tmp_path)
        assert result.returncode == 5 and "stop it first" in result.stdout
    assert tree(log_dir) == before


@requires_corpus
def test_01_json_yes_and_lost_offsets(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "plain-0")
    (log_dir / ".kafka_cleanshutdown").unlink(missing_ok=True)
    active = log_dir / "plain-0" / "00000000000000006225.log"
    body = bytearray(active.read_bytes())
    body[100_000:100_100] = bytes(100)  # a hole in the active segment
    active.write_bytes(bytes(body))
    before = tree(log_dir)
    dry = run("01-broker-wont-start.sh", "--dry-run", log_dir, cwd=tmp_path)
    assert dry.returncode == 1 and "LOST offsets" in dry.stdout and tree(log_dir) == before

    status, document = run_json("01-broker-wont-start.sh", "--yes", log_dir, cwd=tmp_path)
    assert status == 1 and document["applied"] is True
    lost = document["plan"]["offsetsLost"]
    # Kafka truncates at the damaged batch: everything from it to the log end is lost
    batch = next(b for b in golden_batches("plain-0", "00000000000000006225")
                 if b["position"] <= 100_000 < b["position"] + b["size"])
    assert lost == [{"partition": "plain-0", "first": batch["baseOffset"], "last": 6728}]
    assert active.stat().st_size == batch["position"]
    assert any(line.startswith(f"The broker will now skip plain-0 offsets {batch['baseOffset']}..6728")
               for line in document["summary"])
    run_undo(document["undo"], tmp_path)
    assert tree(log_dir) == before


@requires_corpus
def test_01_healthy_and_bad_input(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0", "compacted-0")  # cleanly stopped
    leftovers = sorted(p.name for p in (log_dir / "compacted-0").glob("*.deleted"))
    assert leftovers  # the cleaner's files waiting for file.delete.delay.ms
    before = tree(log_dir)
    status, document = run_json("01-broker-wont-start.sh", "--yes", log_dir, cwd=tmp_path)
    assert status == 0 and document["decision"].startswith("healthy") and document["plan"]["routineOnly"]
    assert f"only routine work: {len(leftovers)} leftover .deleted/.cleaned file(s)" in " ".join(document["summary"])
    assert document["applied"] is False and tree(log_dir) == before
    missing = run("01-broker-wont-start.sh", tmp_path / "nope", cwd=tmp_path)
    assert missing.returncode == 4 and "no such file or directory" in missing.stdout


# -- 02 power-loss tail -----------------------------------------------------------------------

@requires_corpus
def test_02_zeroed_pages_salvage_keeps_what_lies_beyond_then_undo(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "plain-0")
    active = log_dir / "plain-0" / "00000000000000006225.log"
    body = bytearray(active.read_bytes())
    body[100_000:140_000] = bytes(40_000)  # pages that never reached the disk
    active.write_bytes(bytes(body))
    marked = run("02-power-loss-tail.sh", "--yes", log_dir, cwd=tmp_path)
    # with the clean-shutdown marker Kafka does not recover: nothing to repair, a human decides
    assert marked.returncode == 3 and "where recovery does not look" in marked.stdout
    (log_dir / ".kafka_cleanshutdown").unlink()  # a power loss leaves none
    before = tree(log_dir)
    batches = golden_batches("plain-0", "00000000000000006225")
    first_bad = next(b for b in batches if b["position"] + b["size"] > 100_000)
    first_good = next(b for b in batches if b["position"] >= 140_000)

    status, document = run_json("02-power-loss-tail.sh", log_dir, cwd=tmp_path)
    assert status == 1 and document["applied"] is False and tree(log_dir) == before
    kafka, salvage = document["modes"]["kafka"], document["modes"]["salvage"]
    assert kafka["offsetsLost"][0]["first"] == first_bad["baseOffset"]
    assert kafka["offsetsLost"][0]["last"] == 6728
    assert salvage["offsetsLost"][0]["first"] == first_bad["baseOffset"]
    assert salvage["offsetsLost"][0]["last"] == first_good["baseOffset"] - 1
    assert document["offsetsSavedBySalvage"] == 6728 - first_good["baseOffset"] + 1
    assert {d["code"] for d in document["damage"]} >= {"CORRUPT_REGION"}

    applied = run("02-power-loss-tail.sh", "--yes", log_dir, cwd=tmp_path)
    assert applied.returncode == 1, applied.stderr
    assert "salvage keeps" in applied.stdout and "verify after the repair: exit 0" in applied.stdout
    records = run_seglog("dump", "--format", "jsonl", "--deep-iteration", str(active))
    offsets = [json.loads(line)["offset"] for line in records.out.splitlines() if '"type":"record"' in line]
    assert offsets[-1] == 6728 and first_good["baseOffset"] in offsets and first_bad["baseOffset"] not in offsets
    run_undo(undo_line(applied.stdout), tmp_path)
    assert tree(log_dir) == before


@requires_corpus
def test_02_zero_filled_tail_and_healthy(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0")
    (log_dir / ".kafka_cleanshutdown").unlink()
    active = log_dir / "smallseg-0" / "00000000000000002700.log"
    with open(active, "ab") as f:
        f.write(bytes(4096))  # preallocated zeros after the last batch
    result = run("02-power-loss-tail.sh", "--dry-run", log_dir, cwd=tmp_path)
    assert result.returncode == 1
    assert "ZERO_FILLED_TAIL" in result.stdout and "4096 byte(s)" in result.stdout
    assert "--mode kafka: 4096 byte(s) removed, 0 offset(s) lost" in result.stdout
    assert "salvage keeps nothing more" in result.stdout
    clean = copy_log_dir(tmp_path / "clean", "smallseg-0")
    assert run("02-power-loss-tail.sh", clean, cwd=tmp_path).returncode == 0


@requires_corpus
def test_02_torn_last_batch_names_its_offsets(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0")
    (log_dir / ".kafka_cleanshutdown").unlink()
    last = golden_batches("smallseg-0", "00000000000000002700")[-1]
    active = log_dir / "smallseg-0" / "00000000000000002700.log"
    os.truncate(active, last["position"] + last["size"] // 2)  # the power went mid-write
    recovery_point = int(re.search(r"(?m)^smallseg 0 (\d+)$",
                                   (log_dir / "recovery-point-offset-checkpoint").read_text()).group(1))
    plan = run("01-broker-wont-start.sh", "--dry-run", log_dir, cwd=tmp_path)
    assert plan.returncode == 1
    assert f"LOST offsets {last['baseOffset']}..{recovery_point - 1}: below the recovery point" in plan.stdout
    status, document = run_json("02-power-loss-tail.sh", "--yes", log_dir, cwd=tmp_path)
    assert status == 1 and document["applied"] is True
    [torn] = document["damage"]
    assert torn["code"] == "TORN_TAIL" and torn["tornOffsets"] == [last["baseOffset"], last["lastOffset"]]
    assert active.stat().st_size == last["position"]


# -- 03 CRC error -----------------------------------------------------------------------------

@requires_corpus
def test_03_flipped_byte_gives_the_batch_range_and_commands(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "plain-0", "plain-1")
    segment = log_dir / "plain-0" / "00000000000000002071.log"
    body = bytearray(segment.read_bytes())
    body[500_000] ^= 0xFF
    segment.write_bytes(bytes(body))
    before = tree(log_dir)
    batch = next(b for b in golden_batches("plain-0", "00000000000000002071")
                 if b["position"] <= 500_000 < b["position"] + b["size"])

    out_file = tmp_path / "offsets.json"
    result = run("03-crc-error.sh", "--group", "billing", "--out", out_file, log_dir, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert f"plain-0: offsets {batch['baseOffset']}..{batch['lastOffset']} unreadable" in result.stdout
    assert (f"--group billing --topic plain:0 --reset-offsets --to-offset {batch['lastOffset'] + 1} --execute"
            in result.stdout)
    assert json.loads(out_file.read_text()) == {
        "partitions": [{"topic": "plain", "partition": 0, "offset": batch["lastOffset"] + 1}], "version": 1}
    assert f"UNDO (the file this runbook wrote): rm -- {shlex.quote(str(out_file))}" in result.stdout
    assert tree(log_dir) == before  # reads only
    again = run("03-crc-error.sh", "--out", out_file, log_dir, cwd=tmp_path)
    assert again.returncode == 4 and "exists" in again.stdout

    status, document = run_json("03-crc-error.sh", log_dir / "plain-1", cwd=tmp_path)
    assert status == 0 and "ranges" not in document


# -- 04 rebuild index -------------------------------------------------------------------------

@requires_corpus
def test_04_missing_and_garbled_indexes_rebuilt_as_the_broker_wrote_them_then_undo(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0")
    part = log_dir / "smallseg-0"
    (part / "00000000000000000300.index").unlink()
    with open(part / "00000000000000000900.index", "r+b") as f:
        f.write(b"\x7f" * 8)
    damaged = tree(log_dir)

    plan = run("04-rebuild-index.sh", log_dir, cwd=tmp_path)
    assert plan.returncode == 1 and "INDEX_MISSING" in plan.stdout
    assert "plan: 2 index file(s) to write" in plan.stdout and tree(log_dir) == damaged

    status, document = run_json("04-rebuild-index.sh", "--yes", part, cwd=tmp_path)
    assert status == 1 and document["applied"] is True
    for name in ("00000000000000000300.index", "00000000000000000900.index"):
        assert (part / name).read_bytes() == (DATA / "smallseg-0" / name).read_bytes()
    assert run("04-rebuild-index.sh", log_dir, cwd=tmp_path).returncode == 0
    run_undo(document["undo"], tmp_path)
    assert tree(log_dir) == damaged


@requires_corpus
def test_04_real_deleted_index_and_refusal_on_a_damaged_log(tmp_path):
    case = "c-delete-oldest-index"
    log_dir = copy_case(case, tmp_path / "data")
    result = run("04-rebuild-index.sh", "--yes", log_dir / "plain-0", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    oldest = "00000000000000000000.index"
    assert (log_dir / "plain-0" / oldest).read_bytes() == (CASES / case / "after" / "plain-0" / oldest).read_bytes()

    broken = copy_log_dir(tmp_path / "broken", "smallseg-0")
    segment = broken / "smallseg-0" / "00000000000000000600.log"
    body = bytearray(segment.read_bytes())
    body[30_000] ^= 0x01
    segment.write_bytes(bytes(body))
    before = tree(broken)
    damaged = run("04-rebuild-index.sh", "--yes", broken, cwd=tmp_path)
    assert damaged.returncode == 3 and f"DAMAGED .log {segment}" in damaged.stdout
    assert "02-power-loss-tail.sh" in damaged.stdout and tree(broken) == before
    (broken / "smallseg-0" / "00000000000000000600.index").unlink()  # and its index is gone too
    before = tree(broken)
    refused = run("04-rebuild-index.sh", "--yes", broken, cwd=tmp_path)
    assert refused.returncode == 3 and "REFUSED" in refused.stdout and "INDEX_MISSING" in refused.stdout
    assert tree(broken) == before


@requires_corpus
def test_04_live_copy_preallocated_indexes_are_healthy(live_copy, tmp_path):
    before = tree(live_copy)
    status, document = run_json("04-rebuild-index.sh", "--yes", live_copy, cwd=tmp_path)
    assert status == 0 and document["applied"] is False and tree(live_copy) == before


# -- 05 disk full -----------------------------------------------------------------------------

@requires_corpus
def test_05_proposed_retention_bytes(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "plain-0", "plain-1", "smallseg-0", "__consumer_offsets-38")
    before = tree(log_dir)
    status, document = run_json("05-disk-full.sh", "--config", "retention.bytes=2000000", "--now", NOW,
                                log_dir, cwd=tmp_path)
    assert status == 1
    # each plain partition (~3.3 MB) is over by ~1.3 MB: its oldest ~1 MB segment goes, the next one
    # would leave it under 2 MB; smallseg-0 (~0.6 MB) keeps everything
    first = [log_dir / p / "00000000000000000000.log" for p in ("plain-0", "plain-1")]
    assert document["freedBytes"] == sum(f.stat().st_size for f in first)
    assert [(s["partition"], s["file"]) for s in document["segments"]] == sorted(
        [("plain-0", "00000000000000000000.log"), ("plain-1", "00000000000000000000.log")],
        key=lambda x: next(s["largestTimestamp"] for s in document["segments"] if s["partition"] == x[0]))
    assert all(not p["partition"].startswith("__") for p in document["partitions"])
    assert document["commands"] == ["kafka-configs.sh --bootstrap-server localhost:9092 --alter --entity-type "
                                    "topics --entity-name plain --add-config retention.bytes=2000000"]
    assert tree(log_dir) == before

    short = run("05-disk-full.sh", "--config", "retention.ms=604800000", "--topic", "smallseg", "--now", NOW,
                log_dir, cwd=tmp_path)
    assert short.returncode == 3 and "frees nothing" in short.stdout
    enough = run("05-disk-full.sh", "--config", "retention.ms=3600000", "--need", "1K", "--now", NOW,
                 log_dir, cwd=tmp_path)
    assert enough.returncode == 0  # any test machine has a KiB free
    assert run("05-disk-full.sh", "--need", "12Q", log_dir, cwd=tmp_path).returncode == 2
    assert run("05-disk-full.sh", "--topic", "nosuch", log_dir, cwd=tmp_path).returncode == 4


# -- 06 retention not deleting ----------------------------------------------------------------

def _append(partition: Path, *args: str) -> None:
    result = run_seglog("append", "--apply", *args, str(partition))
    assert result.exit_code == 0, result.err


@requires_corpus
def test_06_future_timestamp_blocks_later_segments_and_high_watermark(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0")
    part = log_dir / "smallseg-0"
    # a producer with a clock ten years ahead, then normal records in a later segment
    _append(part, "--value", "from-the-future", "--timestamp", "2036-01-01T00:00:00Z",
            "--config", "message.timestamp.after.max.ms=9223372036854775807")
    _append(part, "--value", "late-1", "--value", "late-2", "--timestamp", "2026-11-22T11:30:00Z",
            "--config", "segment.bytes=100")
    checkpoint = log_dir / "replication-offset-checkpoint"
    log_end = max(int(p.stem) for p in part.glob("*.snapshot"))
    checkpoint.write_text(re.sub(r"(?m)^smallseg 0 \d+$", f"smallseg 0 {log_end}", checkpoint.read_text()))

    status, document = run_json("06-retention-not-deleting.sh", "--config", "retention.ms=3600000", "--now", NOW,
                                part, cwd=tmp_path)
    assert status == 1 and "FUTURE_TIMESTAMP" in document["found"]
    rows = document["partitions"][0]["segments"]
    codes = [r["code"] for r in rows]
    future = codes.index("FUTURE_TIMESTAMP")
    assert rows[future]["largestTimestamp"] == 2082758400000  # 2036-01-01T00:00:00Z
    assert codes[:future] == ["DUE"] * future and codes[future + 1:] == ["WAITING_BEHIND"]

    checkpoint.write_text(re.sub(r"(?m)^smallseg 0 \d+$", "smallseg 0 1000", checkpoint.read_text()))
    stuck = run("06-retention-not-deleting.sh", "--config", "retention.ms=3600000", "--now", NOW, part, cwd=tmp_path)
    assert stuck.returncode == 1
    assert "smallseg-0: HIGH_WATERMARK: segment 900 holds offsets up to 1199" in stuck.stdout


@requires_corpus
def test_06_within_retention_and_compact_only(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0", "compacted-0")
    ok = run("06-retention-not-deleting.sh", "--now", NOW, log_dir / "smallseg-0", cwd=tmp_path)
    assert ok.returncode == 0 and "WITHIN_RETENTION" in ok.stdout and "deletable after 2026-11-29" in ok.stdout
    compact = run("06-retention-not-deleting.sh", "--config", "cleanup.policy=compact", "--now", NOW,
                  log_dir / "compacted-0", cwd=tmp_path)
    assert compact.returncode == 1 and "COMPACT_ONLY" in compact.stdout


# -- 07 hanging transaction -------------------------------------------------------------------

@requires_corpus
def test_07_open_transaction_of_an_unknown_producer_is_hanging(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "txn-0")
    healthy = run("07-hanging-transaction.sh", log_dir, cwd=tmp_path)
    assert healthy.returncode == 0 and "0 open (0 hanging)" in healthy.stdout
    log_end = json.loads(run_seglog("verify", "--format", "json", str(log_dir / "txn-0")).out)[
        "partitions"][0]["logEndOffset"]
    _append(log_dir / "txn-0", "--transactional", "--producer-id", "77", "--producer-epoch", "3",
            "--value", "a", "--value", "b", "--timestamp", "2026-11-22T11:40:00Z")

    status, document = run_json("07-hanging-transaction.sh", "--now", NOW, "--bootstrap-server", "kafka1:9092",
                                log_dir, cwd=tmp_path)
    assert status == 1
    [txn] = document["open"]
    assert (txn["producer_id"], txn["producer_epoch"], txn["first_offset"], txn["hanging"]) == (77, 3, log_end, True)
    assert document["lastStableOffsets"] == {"txn-0": log_end}
    assert document["abortCommands"] == [f"kafka-transactions.sh --bootstrap-server kafka1:9092 abort --topic txn "
                                         f"--partition 0 --start-offset {log_end}"]
    assert any(line.startswith(f"HANGING txn-0: producer id 77, epoch 3, first offset {log_end}")
               for line in document["summary"])


# -- 08 consumer offsets ----------------------------------------------------------------------

def _golden_committed() -> dict:
    """Replay kafka-dump-log --offsets-decoder output: the latest offset commit per key wins."""
    latest = {}
    for out in sorted(GOLDEN.glob("__consumer_offsets-*/*.log.offsets-decoder.out")):
        for line in out.read_text().splitlines():
            match = re.search(r"offset: (\d+) .* key: (\{.*?\}\}) payload: (.*)$", line)
            if not match or '"type":"1"' not in match.group(2):
                continue
            key = json.loads(match.group(2))["data"]
            ident = (key["group"], key["topic"], key["partition"])
            if match.group(3).startswith("<DELETE>"):
                latest.pop(ident, None)
            else:
                latest[ident] = json.loads(match.group(3))["data"]["offset"]
    return latest


@requires_corpus
def test_08_offsets_equal_kafka_dump_log_replay(tmp_path):
    partitions = sorted(p.name for p in DATA.glob("__consumer_offsets-*"))
    log_dir = copy_log_dir(tmp_path / "data", *partitions)
    out_csv = tmp_path / "offsets.csv"
    status, document = run_json("08-consumer-offsets.sh", "--out", out_csv, log_dir, cwd=tmp_path)
    assert status == 0 and document["undo"] == f"rm -- {shlex.quote(str(out_csv))}"
    expected = _golden_committed()
    assert expected
    assert {(r["group"], r["topic"], r["partition"]): r["offset"] for r in document["committed"]} == expected
    with open(out_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    assert {(r["group"], r["topic"], int(r["partition"])): int(r["offset"]) for r in rows} == expected
    group, topic, partition = next(iter(expected))
    assert (f"--group {group} --topic {topic}:{partition} --reset-offsets --to-offset "
            f"{expected[(group, topic, partition)]} --execute") in " ".join(document["restoreCommands"])

    assert run("08-consumer-offsets.sh", "--group", "no-such-group", log_dir, cwd=tmp_path).returncode == 4
    assert run("08-consumer-offsets.sh", "--out", out_csv, log_dir, cwd=tmp_path).returncode == 4
    (tmp_path / "not-kafka").mkdir()
    assert run("08-consumer-offsets.sh", tmp_path / "not-kafka", cwd=tmp_path).returncode == 4
    empty = [p for p in partitions if not any(f.stat().st_size for f in (DATA / p).glob("*.log"))]
    other_broker = copy_log_dir(tmp_path / "broker2", *empty[:3])
    none = run("08-consumer-offsets.sh", other_broker, cwd=tmp_path)
    assert none.returncode == 1 and "other brokers' log dirs" in none.stdout


@requires_corpus
def test_08_damaged_offsets_partition_needs_a_human(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "__consumer_offsets-38")
    segment = log_dir / "__consumer_offsets-38" / "00000000000000000000.log"
    body = bytearray(segment.read_bytes())
    body[200] ^= 0xFF
    segment.write_bytes(bytes(body))
    result = run("08-consumer-offsets.sh", log_dir, cwd=tmp_path)
    assert result.returncode == 3 and "damaged" in result.stdout


# -- 09 export a topic ------------------------------------------------------------------------

def _golden_record_offsets(partition: str) -> list[int]:
    offsets = []
    for out in sorted((GOLDEN / partition).glob("*.log.deep-iteration+print-data-log.out")):
        offsets += [int(m) for m in re.findall(r"^\| offset: (\d+)", out.read_text(), re.M)]
    return offsets


@requires_corpus
def test_09_export_equals_kafka_dump_log_and_skips_damage(tmp_path):
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0", "txn-0")
    before = tree(log_dir)
    status, document = run_json("09-export-topic.sh", "--topic", "smallseg", "--out", tmp_path / "export",
                                log_dir, cwd=tmp_path)
    assert status == 0 and document["undo"] == f"rm -r -- {shlex.quote(str(tmp_path / 'export'))}"
    lines = (tmp_path / "export" / "smallseg-0.jsonl").read_text().splitlines()
    assert [json.loads(line)["offset"] for line in lines] == _golden_record_offsets("smallseg-0")
    assert tree(log_dir) == before

    # transaction markers are left out: the data records only
    txn = run("09-export-topic.sh", "--topic", "txn", "--out", tmp_path / "txn", log_dir, cwd=tmp_path)
    assert txn.returncode == 0
    exported = [json.loads(line) for line in (tmp_path / "txn" / "txn-0.jsonl").read_text().splitlines()]
    golden = (GOLDEN / "txn-0" / "00000000000000000000.log.deep-iteration+print-data-log.out").read_text()
    markers = set(int(m) for m in re.findall(r"^\| offset: (\d+) .*endTxnMarker", golden, re.M))
    assert markers and [r["offset"] for r in exported] == [o for o in _golden_record_offsets("txn-0")
                                                          if o not in markers]

    segment = log_dir / "smallseg-0" / "00000000000000000900.log"
    body = bytearray(segment.read_bytes())
    body[20_000:30_000] = bytes(10_000)
    segment.write_bytes(bytes(body))
    damaged = run("09-export-topic.sh", "--topic", "smallseg", "--out", tmp_path / "export2", log_dir, cwd=tmp_path)
    assert damaged.returncode == 3 and "SKIPPED" in damaged.stdout
    kept = [json.loads(line)["offset"] for line in (tmp_path / "export2" / "smallseg-0.jsonl").read_text().splitlines()]
    assert 0 < len(lines) - len(kept) < 300 and kept[-1] == _golden_record_offsets("smallseg-0")[-1]

    exists = run("09-export-topic.sh", "--topic", "smallseg", "--out", tmp_path / "export", log_dir, cwd=tmp_path)
    assert exists.returncode == 4 and "exists" in exists.stdout
    assert run("09-export-topic.sh", "--topic", "nosuch", "--out", tmp_path / "x", log_dir, cwd=tmp_path).returncode == 4


@requires_corpus
def test_09_parquet(tmp_path):
    pyarrow = pytest.importorskip("pyarrow.parquet")
    log_dir = copy_log_dir(tmp_path / "data", "codecs-0")
    result = run("09-export-topic.sh", "--topic", "codecs", "--format", "parquet", "--out", tmp_path / "pq",
                 log_dir, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    table = pyarrow.read_table(tmp_path / "pq" / "codecs-0.parquet")
    assert table.column("offset").to_pylist() == _golden_record_offsets("codecs-0")


@requires_corpus
def test_09_spark_is_only_called_when_pyspark_is_importable(tmp_path):
    bare = tmp_path / "python-without-site-packages"
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    bare.chmod(0o755)
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0")
    result = run("09-export-topic.sh", "--spark", "--topic", "smallseg", "--out", tmp_path / "sp", log_dir,
                 cwd=tmp_path, env=dict(ENV, PYTHON=str(bare)))
    assert result.returncode == 2 and "--spark needs pyspark" in result.stderr
    assert not (tmp_path / "sp").exists()


@requires_corpus
@pytest.mark.skipif(os.environ.get("SEGLOG_SPARK_TESTS") != "1",
                    reason="starts a JVM (~30 s): set SEGLOG_SPARK_TESTS=1 to run the Spark export")
def test_09_spark_export(tmp_path):
    pytest.importorskip("pyspark")
    parquet = pytest.importorskip("pyarrow.parquet")
    log_dir = copy_log_dir(tmp_path / "data", "smallseg-0")
    result = run("09-export-topic.sh", "--spark", "--topic", "smallseg", "--out", tmp_path / "sp", log_dir,
                 cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    table = parquet.read_table(tmp_path / "sp" / "spark" / "data" / "topic=smallseg")
    rows = table.select(["offset", "isControl"]).to_pylist()
    assert sorted(r["offset"] for r in rows if not r["isControl"]) == _golden_record_offsets("smallseg-0")
