"""The runbooks that repair (examples/runbooks/01-04) and what every runbook shares, run as an
operator runs them: bash, seglog from PATH, from another directory, against copies of real broker
data that each test damages first. Each test checks the exit status, the summary, the --json
document and the files left behind (undo included) against what Kafka's own files and tools say
(the broker's recovery results, the broker-written indexes, the corpus goldens)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil

import pytest

from tests.conftest import REPO, requires_corpus, run_seglog
from tests.runbook_helpers import (
    RUNBOOKS, SCRIPTS, DATA, CASES, ENV, run, run_json, copy_log_dir, copy_case, tree,
    undo_line, run_undo, golden_batches,
)

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")


# -- every script ----------------------------------------------------------------------------

def test_there_are_ten_runbooks_linked_from_both_readmes():
    assert len(SCRIPTS) == 10
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
    marked = run("02-power-loss-tail.sh", "--mode", "kafka", "--yes", log_dir, cwd=tmp_path)
    # with the clean-shutdown marker Kafka does not recover: --mode kafka has nothing to repair
    assert marked.returncode == 3 and "where Kafka's recovery does not look" in marked.stdout
    marked = run("02-power-loss-tail.sh", "--dry-run", log_dir, cwd=tmp_path)  # salvage cuts it out even so
    assert marked.returncode == 1 and "salvage keeps" in marked.stdout
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
    # recover names the torn batch's offsets (its header claims them; the recovery point says they
    # were flushed once): the same range as the runbook's "below the recovery point" fallback
    assert last["lastOffset"] == recovery_point - 1
    assert f"LOST offsets {last['baseOffset']}..{last['lastOffset']} ({last['lastOffset'] - last['baseOffset'] + 1} " \
           "offset(s))" in plan.stdout
    status, document = run_json("02-power-loss-tail.sh", "--mode", "kafka", "--yes", log_dir, cwd=tmp_path)
    assert status == 1 and document["applied"] is True and "--mode kafka" in document["decision"]
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
