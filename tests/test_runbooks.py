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

def test_there_are_twelve_runbooks_linked_from_both_readmes():
    assert len(SCRIPTS) == 12
    readme = (REPO / "README.md").read_text()
    assert "## Runbooks" in readme
    local = (RUNBOOKS / "README.md").read_text()
    for script in SCRIPTS:
        assert f"examples/runbooks/{script}" in readme and f"({script})" in local
        assert os.access(RUNBOOKS / script, os.X_OK)


def runbook_statuses() -> dict[int, str]:
    """lib.sh's RB_* exit statuses, and what the README's table says each means."""
    defined = {int(v) for v in re.findall(r"RB_[A-Z_]+=(\d+)", (RUNBOOKS / "lib.sh").read_text())}
    readme = (RUNBOOKS / "README.md").read_text()
    table = readme.split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    meanings = {int(n): m.strip() for n, m in re.findall(r"^\| `(\d+)` \| (.*) \|$", table, re.M)}
    assert set(meanings) == defined, f"lib.sh defines {sorted(defined)}, the README explains {sorted(meanings)}"
    return meanings


def test_every_exit_status_of_lib_sh_is_explained_in_the_readme():
    meanings = runbook_statuses()
    assert {0, 1, 2, 3, 4, 5, 6, 70} <= set(meanings) and all(meanings.values())


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


@pytest.mark.parametrize("script", ["01-broker-wont-start.sh", "02-power-loss-tail.sh", "03-crc-error.sh",
                                    "06-retention-not-deleting.sh"])
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


@requires_corpus
@pytest.mark.parametrize("case", ["torn-header", "zero-run"])
def test_01_prints_the_plans_numbers(tmp_path, case):
    """Runbook 01's numbers are the plan's: the segments and bytes start-up re-reads (per
    partition and in total), the bytes truncated, each lost range, and the offsets below the
    recovery point that the log no longer holds (a batch torn inside its header)."""
    log_dir = copy_log_dir(tmp_path / "data", "plain-0", "smallseg-0")
    (log_dir / ".kafka_cleanshutdown").unlink()
    if case == "torn-header":
        last = golden_batches("plain-0", "00000000000000006225")[-1]
        os.truncate(log_dir / "plain-0" / "00000000000000006225.log", last["position"] + 20)
    else:
        _zero_run(log_dir / "plain-0")
    plan = json.loads(run_seglog("recover", "--mode", "kafka", "--format", "json", str(log_dir)).out)
    result = run("01-broker-wont-start.sh", "--dry-run", log_dir, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "?" not in out and "None" not in out and not re.search(r"(?<![\w-])-\d", out), out
    lost_lines = re.findall(r"^  LOST offsets (\d+)\.\.(\d+)", out, re.M)
    expected_lost = []
    for p in plan["partitions"]:
        name = p["path"].rsplit("/", 1)[-1]
        reread = re.search(rf"^{name}: .*start-up re-reads (\d+) segment\(s\), (\d+) bytes$", out, re.M)
        assert (int(reread[1]), int(reread[2])) == (len(p["recoveredSegments"]), p["recoveredBytes"])
        assert p["recoveredBytes"] == sum((log_dir / name / f"{b:020d}.log").stat().st_size
                                          for b in p["recoveredSegments"])
        expected_lost += [tuple(map(str, r)) for r in p["offsetsLost"]]
        if p["flushedOffsetsLost"]:
            expected_lost.append(tuple(map(str, p["flushedOffsetsLost"])))
    assert lost_lines == expected_lost and expected_lost
    s = plan["summary"]
    total = re.search(r"^plan: (\d+) step\(s\) in (\d+) partition\(s\), (\d+) byte\(s\) truncated, (\d+) offset "
                      r"range\(s\) lost, (\d+) refused; (\d+) segment\(s\), (\d+) bytes re-read at start-up$", out, re.M)
    assert [int(x) for x in total.groups()] == [s["steps"], s["partitions"], s["bytesTruncated"], len(expected_lost),
                                                s["refused"], s["recoveredSegments"], s["recoveredBytes"]]
    if case == "torn-header":  # the torn batch's offsets, named by the recovery point alone
        assert f"LOST offsets {last['baseOffset']}..{last['lastOffset']}: below the recovery point" in out


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
    after = [b for b in batches if b["position"] >= first_good["position"]]
    assert document["keptBeyondDamageBySalvage"] == {"batches": len(after), "records": 6728 - first_good["baseOffset"] + 1}
    [cut] = document["damage"]
    assert "CORRUPT_REGION" in cut["codes"] and (cut["position"], cut["bytes"]) == \
        (first_bad["position"], first_good["position"] - first_bad["position"])

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
    assert "salvage keeps nothing beyond the damage" in result.stdout
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
    assert torn["codes"] == ["TORN_TAIL"] and torn["why"] == "a torn batch whose header claims these offsets"
    assert (torn["firstOffset"], torn["lastOffset"]) == (last["baseOffset"], last["lastOffset"])
    assert active.stat().st_size == last["position"]


def _plans(log_dir) -> dict[str, dict]:
    """The plans the runbook reads, made here by the test itself."""
    plans = {}
    for mode in ("kafka", "salvage"):
        result = run_seglog("recover", "--mode", mode, "--format", "json", str(log_dir))
        assert result.exit_code in (0, 1, 3), result.err
        plans[mode] = json.loads(result.out)
    return plans


_DAMAGE = re.compile(r"^  (?P<codes>[A-Z_ ]+) (?P<partition>[^/ ]+)/(?P<segment>\d{20}\.log): position (?P<position>\d+), "
                     r"(?P<bytes>\d+) byte\(s\), (?P<offsets>[^:]+)(?:: (?P<why>.+))?$")
_DAMAGED = re.compile(r"^(\d+) damaged range\(s\), (\d+) byte\(s\), in the \.log files$")
_WHOLE = r"(?:, (?P<segments>\d+) later segment\(s\) \((?P<segment_bytes>\d+) byte\(s\)\) deleted whole)?"
_MODE = re.compile(r"^--mode (?P<mode>kafka|salvage): (?P<bytes>\d+) byte\(s\) removed" + _WHOLE +
                   r", (?P<lost>\d+) offset\(s\) lost(?: \((?P<ranges>[^)]*)\))?"
                   r"(?: and the offsets of (?P<unknown>\d+) range\(s\) that cannot be named)?; (?P<records>\d+) "
                   r"record\(s\) in (?P<batches>\d+) batch\(es\) kept beyond the damage(?:; REFUSED .*)?$")
_PARTITION = re.compile(r"^  (?P<partition>\S+): (?P<bytes>\d+) byte\(s\) removed" + _WHOLE +
                        r", (?P<lost>\d+) offset\(s\) lost(?: \((?P<ranges>[^)]*)\))?, "
                        r"(?:nothing kept beyond the damage|(?P<records>\d+) record\(s\) in (?P<batches>\d+) "
                        r"batch\(es\) kept beyond the damage, offsets (?P<first>\d+)\.\.(?P<last>\d+))$")
_RANGE = re.compile(r"^    (\d{20}\.log) position (\d+): (\d+) byte\(s\), (.+)$")
_FLUSHED = re.compile(r"^    and offsets (\d+)\.\.(\d+), below the recovery point \(so flushed once\), are no longer in "
                      r"the log$")
_KEEPS = re.compile(r"^salvage keeps (\d+) record\(s\) in (\d+) batch\(es\) that lie beyond the damage")


def _offsets_words(r: dict) -> str:
    if r["offsets"] == "known":
        return f"offsets {r['firstOffset']}..{r['lastOffset']} ({r['offsetCount']} offset(s))"
    if r["offsets"] == "none":
        return "no offsets"
    assert r["offsets"] == "unknown" and r["offsetCount"] is None
    return f"offsets from {r['firstOffset']} on that cannot be named (no batch header can be read there)"


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _assert_02_prints_the_plans(out: str, plans: dict[str, dict]) -> None:
    """Every number runbook 02 printed is the plans' (and every range of the plans is printed):
    the damaged places, and per mode, per partition and in total the bytes removed, the offsets
    lost and the records kept beyond the damage. Never a placeholder or a negative count."""
    assert "?" not in out and "None" not in out and not re.search(r"(?<![\w-])-\d", out), out
    lines = out.splitlines()
    salvage = plans["salvage"]
    ranges = [(p, r) for p in salvage["partitions"] for r in p["damagedRanges"]]
    damage = [m for m in map(_DAMAGE.match, lines) if m]
    assert len(damage) == len(ranges), out
    for m, (p, r) in zip(damage, ranges):
        assert (m["partition"], m["segment"]) == (_name(p["path"]), _name(r["path"]))
        assert (int(m["position"]), int(m["bytes"])) == (r["position"], r["bytes"])
        assert m["offsets"] == _offsets_words(r)
        assert m["why"] == (None if r["offsets"] == "unknown" else r["why"])  # unknown: its words say why
    [damaged] = [m for m in map(_DAMAGED.match, lines) if m]
    assert (int(damaged[1]), int(damaged[2])) == (salvage["summary"]["damagedRanges"], salvage["summary"]["damagedBytes"])

    seen = {}
    mode = partition = None
    expected_partition_lines = {}
    for line in lines:
        if m := _MODE.match(line):
            mode, partition = m["mode"], None
            s = plans[mode]["summary"]
            unknown = sum(r["offsets"] == "unknown" for p in plans[mode]["partitions"] for r in p["damagedRanges"])
            ranges_text = ", ".join(f"{_name(p['path'])} {a}..{b}" for p in plans[mode]["partitions"]
                                    for a, b in p["offsetsLost"])
            assert (int(m["bytes"]), int(m["lost"]), m["ranges"] or "", int(m["unknown"] or 0)) == \
                (s["bytesTruncated"], s["offsetCountLost"], ranges_text, unknown), line
            assert (int(m["segments"] or 0), int(m["segment_bytes"] or 0)) == \
                (s["removedSegments"], s["removedSegmentBytes"]), line
            assert (int(m["records"]), int(m["batches"])) == \
                (s["keptBeyondDamage"]["records"], s["keptBeyondDamage"]["batches"]), line
            seen[mode] = []
            expected_partition_lines[mode] = [p for p in plans[mode]["partitions"] if not p["refused"] and (
                p["damagedRanges"] or p["offsetsLost"] or p["removedSegments"])]
        elif mode and (m := _PARTITION.match(line)):
            partition = next(p for p in plans[mode]["partitions"] if _name(p["path"]) == m["partition"])
            seen[mode].append(partition)
            kept = partition["keptBeyondDamage"]
            assert (int(m["bytes"]), int(m["lost"])) == (partition["bytesTruncated"], partition["offsetCountLost"]), line
            assert (int(m["segments"] or 0), int(m["segment_bytes"] or 0)) == \
                (len(partition["removedSegments"]), partition["removedSegmentBytes"]), line
            assert (m["ranges"] or "") == ", ".join(f"{a}..{b}" for a, b in partition["offsetsLost"]), line
            if m["records"] is None:
                assert kept["batches"] == 0, line
            else:
                assert [int(m[k]) for k in ("records", "batches", "first", "last")] == \
                    [kept["records"], kept["batches"], kept["firstOffset"], kept["lastOffset"]], line
            partition["_printed"] = []
        elif partition is not None and (m := _RANGE.match(line)):
            partition["_printed"].append((m[1], int(m[2]), int(m[3]), m[4]))
        elif partition is not None and (m := _FLUSHED.match(line)):
            assert [int(m[1]), int(m[2])] == partition["flushedOffsetsLost"], line
            partition["_flushed"] = True
    for mode, plan in plans.items():
        assert seen[mode] == expected_partition_lines[mode], mode
        for p in seen[mode]:
            assert p.pop("_printed") == [(_name(r["path"]), r["position"], r["bytes"], _offsets_words(r))
                                         for r in p["damagedRanges"]]
            assert p.pop("_flushed", False) == bool(p["flushedOffsetsLost"])
    beyond = salvage["summary"]["keptBeyondDamage"]
    keeps = [m for m in map(_KEEPS.match, lines) if m]
    if beyond["batches"]:
        assert [(int(m[1]), int(m[2])) for m in keeps] == [(beyond["records"], beyond["batches"])]
    else:
        assert not keeps and "salvage keeps nothing beyond the damage" in out


def _assert_02_document_is_the_plans(document: dict, plans: dict[str, dict]) -> None:
    for mode, plan in plans.items():
        mine, s = document["modes"][mode], plan["summary"]
        assert (mine["bytesRemoved"], mine["offsetCountLost"], mine["keptBeyondDamage"], mine["damagedRanges"]) == \
            (s["bytesTruncated"], s["offsetCountLost"], s["keptBeyondDamage"], s["damagedRanges"])
        assert [(p["bytesRemoved"], p["offsetCountLost"], p["keptBeyondDamage"], p["damagedRanges"])
                for p in mine["partitions"]] == \
            [(p["bytesTruncated"], p["offsetCountLost"], p["keptBeyondDamage"], p["damagedRanges"])
             for p in plan["partitions"]]
    assert document["keptBeyondDamageBySalvage"] == plans["salvage"]["summary"]["keptBeyondDamage"]
    assert [{k: v for k, v in d.items() if k not in ("partition", "codes")} for d in document["damage"]] == \
        [r for p in plans["salvage"]["partitions"] for r in p["damagedRanges"]]
    for mode in document["modes"].values():
        assert mode["offsetCountLost"] >= 0 and mode["bytesRemoved"] >= 0
        assert mode["keptBeyondDamage"]["records"] >= 0 and mode["keptBeyondDamage"]["batches"] >= 0


def _damaged_plain_0(tmp_path, damage, clean_shutdown: bool = False):
    """A log dir with a copy of plain-0 (4 segments) whose .log files ``damage`` changes."""
    log_dir = copy_log_dir(tmp_path / "data", "plain-0")
    if not clean_shutdown:
        (log_dir / ".kafka_cleanshutdown").unlink()
    damage(log_dir / "plain-0")
    return log_dir


def _torn_tail(partition):
    last = golden_batches("plain-0", "00000000000000006225")[-1]
    os.truncate(partition / "00000000000000006225.log", last["position"] + last["size"] // 3)


def _torn_header(partition):
    last = golden_batches("plain-0", "00000000000000006225")[-1]
    os.truncate(partition / "00000000000000006225.log", last["position"] + 20)  # not even its header is whole


def _zero_run(partition):
    active = partition / "00000000000000006225.log"
    body = bytearray(active.read_bytes())
    body[60_000:75_000] = bytes(15_000)  # pages that never reached the disk, valid batches after them
    active.write_bytes(bytes(body))


def _bit_flip_in(segment: str):
    def flip(partition):
        batch = golden_batches("plain-0", segment)[5]
        log = partition / f"{segment}.log"
        body = bytearray(log.read_bytes())
        body[batch["position"] + batch["size"] - 100] ^= 0x20  # one bit of a record: the CRC fails
        log.write_bytes(bytes(body))
    return flip


@requires_corpus
@pytest.mark.parametrize("case", ["torn-tail", "torn-tail-clean-shutdown", "torn-header", "zero-run",
                                  "bit-flip-active", "bit-flip-older-segment", "bit-flip-recovered-older-segment"])
def test_02_prints_the_plans_numbers(tmp_path, case):
    """Runbook 02 on plain-0 with a torn tail (after an unclean and a clean shutdown: there Kafka
    does not look, salvage still cuts), a run of zeros in the middle of the active segment with
    valid batches after it, and one flipped bit (in the active segment; in an older one, where
    salvage keeps the later segments): every number printed, in text and in --json, is that of
    the plans `seglog recover --format json` gives, and --yes applies exactly that plan."""
    damage = {"torn-tail": _torn_tail, "torn-tail-clean-shutdown": _torn_tail, "zero-run": _zero_run,
              "bit-flip-recovered-older-segment": _bit_flip_in("00000000000000002071"),
              "torn-header": _torn_header,
              "bit-flip-active": _bit_flip_in("00000000000000006225"),
              "bit-flip-older-segment": _bit_flip_in("00000000000000002071")}[case]
    log_dir = _damaged_plain_0(tmp_path, damage, clean_shutdown=case == "torn-tail-clean-shutdown")
    if case == "bit-flip-recovered-older-segment":  # recovery starts at segment 2071: Kafka truncates it, drops the rest
        checkpoint = log_dir / "recovery-point-offset-checkpoint"
        checkpoint.write_text(re.sub(r"(?m)^plain 0 \d+$", "plain 0 2071", checkpoint.read_text()))
    before = tree(log_dir)
    plans = _plans(log_dir)
    assert plans["salvage"]["summary"]["damagedRanges"] == 1

    dry = run("02-power-loss-tail.sh", "--dry-run", log_dir, cwd=tmp_path)
    assert dry.returncode == 1, dry.stdout + dry.stderr
    _assert_02_prints_the_plans(dry.stdout, plans)
    status, document = run_json("02-power-loss-tail.sh", "--dry-run", log_dir, cwd=tmp_path)
    assert status == 1 and tree(log_dir) == before
    _assert_02_document_is_the_plans(document, plans)
    _assert_02_prints_the_plans("\n".join(document["summary"]), plans)

    mode = "kafka" if case in ("torn-tail", "bit-flip-active", "torn-header",
                               "bit-flip-recovered-older-segment") else "salvage"
    sizes = {p.name: p.stat().st_size for p in (log_dir / "plain-0").glob("*.log")}
    applied = run("02-power-loss-tail.sh", "--mode", mode, "--yes", log_dir, cwd=tmp_path)
    assert applied.returncode == 1, applied.stdout + applied.stderr
    _assert_02_prints_the_plans(applied.stdout, plans)
    assert "verify after the repair: exit 0" in applied.stdout
    for r in (r for p in plans[mode]["partitions"] for r in p["damagedRanges"]):
        segment = log_dir / "plain-0" / _name(r["path"])
        assert segment.stat().st_size == sizes[segment.name] - r["bytes"]  # the plan's bytes, and no more, went
    for base in (b for p in plans[mode]["partitions"] for b in p["removedSegments"]):
        assert not (log_dir / "plain-0" / f"{base:020d}.log").exists()
    assert sum(sizes[f"{b:020d}.log"] for p in plans[mode]["partitions"] for b in p["removedSegments"]) == \
        plans[mode]["summary"]["removedSegmentBytes"]
    if case == "bit-flip-recovered-older-segment":
        assert plans["kafka"]["summary"]["removedSegments"] == 2
    run_undo(undo_line(applied.stdout), tmp_path)
    assert tree(log_dir) == before
    if case == "torn-header":  # offsets the bytes cannot name, but the recovery point can
        last = golden_batches("plain-0", "00000000000000006225")[-1]
        assert (f"offsets from {last['baseOffset']} on that cannot be named" in dry.stdout
                and f"and offsets {last['baseOffset']}..{last['lastOffset']}, below the recovery point" in dry.stdout)


@requires_corpus
def test_02_real_trailing_garbage_says_its_offsets_cannot_be_named(tmp_path):
    """The broker's own recovery case a (100 random bytes after the last batch; the broker kept
    every offset): the runbook says the bytes' offsets cannot be named and counts none lost."""
    log_dir = copy_case("a-append-garbage-active-log", tmp_path / "data")
    plans = _plans(log_dir)
    result = run("02-power-loss-tail.sh", "--dry-run", log_dir, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    _assert_02_prints_the_plans(result.stdout, plans)
    assert "TRAILING_GARBAGE plain-0/00000000000000008203.log: position" in result.stdout
    assert "offsets from 8929 on that cannot be named" in result.stdout
    assert "--mode kafka: 100 byte(s) removed, 0 offset(s) lost and the offsets of 1 range(s) that cannot be " \
           "named" in result.stdout


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


def _flip_last_batch(partition):
    last = golden_batches("plain-0", "00000000000000006225")[-1]
    log = partition / "00000000000000006225.log"
    body = bytearray(log.read_bytes())
    body[last["position"] + last["size"] - 50] ^= 0x01
    log.write_bytes(bytes(body))


@requires_corpus
@pytest.mark.parametrize("case", ["bit-flip-active", "bit-flip-last-batch", "bit-flip-older-segment", "zero-run"])
def test_03_ranges_are_the_salvage_plans(tmp_path, case):
    """Runbook 03's unreadable ranges, consumer resets and delete-records offsets are the offsets
    of the salvage plan's damaged ranges (made here by the test). A flipped bit in the last batch
    of the log loses that whole batch (it used to print one offset, and a reset into the middle
    of the damaged batch)."""
    damage = {"bit-flip-active": _bit_flip_in("00000000000000006225"), "bit-flip-last-batch": _flip_last_batch,
              "bit-flip-older-segment": _bit_flip_in("00000000000000002071"), "zero-run": _zero_run}[case]
    log_dir = _damaged_plain_0(tmp_path, damage)
    before = tree(log_dir)
    plan = _plans(log_dir)["salvage"]
    [cut] = [r for p in plan["partitions"] for r in p["damagedRanges"]]
    assert cut["offsets"] == "known"
    status, document = run_json("03-crc-error.sh", log_dir, cwd=tmp_path)
    assert status == 3 and tree(log_dir) == before
    out = "\n".join(document["summary"])
    assert "?" not in out and "None" not in out and not re.search(r"(?<![\w-])-\d", out), out
    [r] = document["ranges"]
    assert (r["topic"], r["partition"], r["first"], r["last"]) == ("plain", 0, cut["firstOffset"], cut["lastOffset"])
    assert f"plain-0: offsets {cut['firstOffset']}..{cut['lastOffset']} unreadable ({cut['offsetCount']} offset(s))" in out
    assert f"--reset-offsets --to-offset {cut['lastOffset'] + 1} --execute" in r["consumerReset"]
    assert document["deleteRecords"]["partitions"] == [{"topic": "plain", "partition": 0, "offset": cut["lastOffset"] + 1}]
    if case == "bit-flip-last-batch":
        last = golden_batches("plain-0", "00000000000000006225")[-1]
        assert (cut["firstOffset"], cut["lastOffset"]) == (last["baseOffset"], last["lastOffset"])


@requires_corpus
def test_03_deep_damage_inside_a_batch_whose_crc_holds(tmp_path):
    """A record that cannot be parsed in a batch whose CRC was recomputed over it: salvage keeps
    the batch (nothing for its plan to place), --deep finds it, and seglog dump places it: the
    batch's own offsets."""
    import struct

    from seglog_cli.storage.log.checksums import crc32c

    batch = golden_batches("plain-0", "00000000000000006225")[5]

    def damage(partition):
        log = partition / "00000000000000006225.log"
        body = bytearray(log.read_bytes())
        start = batch["position"]
        body[start + 61] = 0x7F  # the first record's length varint
        body[start + 17:start + 21] = struct.pack(">I", crc32c(bytes(body[start + 21:start + batch["size"]])))
        log.write_bytes(bytes(body))

    log_dir = _damaged_plain_0(tmp_path, damage)
    assert _plans(log_dir)["salvage"]["summary"]["damagedRanges"] == 0
    assert run("03-crc-error.sh", log_dir, cwd=tmp_path).returncode == 0  # shallow: every CRC holds
    status, document = run_json("03-crc-error.sh", "--deep", log_dir, cwd=tmp_path)
    assert status == 3
    [r] = document["ranges"]
    assert (r["first"], r["last"]) == (batch["baseOffset"], batch["lastOffset"])
    assert r["places"][0]["code"] == "RECORD_PARSE_ERROR"


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
