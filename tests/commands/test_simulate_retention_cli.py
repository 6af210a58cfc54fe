"""``seglog simulate-retention``: options, output formats, exit statuses, --apply and undo."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import run_seglog

OK, PLANNED, USAGE, UNREADABLE, LOCKED = 0, 1, 2, 4, 5
NEWEST = 1795346889867  # smallseg-0's largest timestamp


def sim(*args):
    return run_seglog("simulate-retention", *map(str, args))


@pytest.fixture
def data(corpus, tmp_path):
    """A writable log dir with smallseg-0 and compacted-retain-0 and the broker's checkpoints."""
    source = corpus / "kafka-4.2.0" / "data"
    target = tmp_path / "data"
    target.mkdir()
    for name in ("smallseg-0", "compacted-retain-0"):
        shutil.copytree(source / name, target / name)
    for checkpoint in source.glob("*checkpoint"):
        shutil.copy(checkpoint, target / checkpoint.name)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def test_json_plan_and_exit_status(data):
    result = sim("--format", "json", "--now", NEWEST + 1000, "--config", "retention.bytes=300000", data / "smallseg-0")
    assert result.exit_code == PLANNED, result.err
    document = json.loads(result.out)["partitions"][0]
    assert document["deletedSegments"] == [0, 300, 600, 900]
    assert document["newLogStartOffset"] == 1200 and document["reclaimedBytes"] == 56280 + 57128 + 55768 + 58259
    assert document["highWatermarkSource"] == "replication-offset-checkpoint"
    first = document["segments"][0]
    assert first["deletedBy"]["code"] == "RETENTION_SIZE_BREACH" and first["timestampSource"] == "timeindex"
    kept = document["segments"][4]
    assert kept["action"] == "keep" and {"RETENTION_SIZE_KEEPS", "RETENTION_MS_KEEPS"} <= \
        {hold["code"] for hold in kept["keptBy"]}
    nothing = sim("--format", "json", "--now", NEWEST, data / "smallseg-0")
    assert nothing.exit_code == OK and json.loads(nothing.out)["partitions"][0]["deletedSegments"] == []


def test_text_timeline_and_chart(data):
    result = sim("--now", NEWEST, "--config", "retention.ms=600000", "--at", "+5m", "--at", "+11m", "--at", "+2h",
                 data / "smallseg-0")
    assert result.exit_code == OK
    out = result.out
    assert "timeline (check interval 5.0 min" in out
    assert "at 2026-11-22T11:39:09.867Z: 10 segment(s) deletable, 577677 bytes, log start offset 3000" in out
    rows = [line for line in out.splitlines() if line.strip().startswith("2700 |")]
    assert rows and "=" in rows[0] and "~" in rows[0]


def test_log_dir_with_compaction(data):
    result = sim("--format", "json", "--now", 1795433366772, "--config", "cleanup.policy=compact", data)
    assert result.exit_code == PLANNED  # the tombstone of compacted-retain-0 is past its horizon
    partitions = {p["partition"].rsplit("/", 1)[1]: p for p in json.loads(result.out)["partitions"]}
    compaction = partitions["compacted-retain-0"]["compaction"]
    assert compaction["removedOffsets"] == [2155]
    assert compaction["range"]["firstDirtyOffset"] == 2156 and not compaction["range"]["wouldClean"]
    assert partitions["smallseg-0"]["deletedSegments"] == []  # compact only: just the log start offset rule
    text = sim("--now", 1795433366772 - 1, "--config", "cleanup.policy=compact", "--records", data / "compacted-retain-0")
    assert text.exit_code == OK and "TOMBSTONE" in text.out and "delete horizon 1795433366772 not reached" in text.out


def test_model_strimzi(seglog):
    result = sim("--model", "--records-per-sec", "0.2", "--record-size", "150", "--config", "segment.bytes=16384",
                 "--config", "retention.ms=600000")
    assert result.exit_code == OK
    assert "a segment holds 109 records" in result.out and "at most 25.0 min" in result.out
    document = json.loads(sim("--model", "--records-per-sec", "0.2", "--record-size", "150", "--format", "json",
                              "--config", "index.interval.bytes=150", "--config", "segment.index.bytes=300",
                              "--config", "segment.bytes=16384").out)
    assert document["roll"]["indexEntries"] == 24 and document["roll"]["rollCause"] == "time index full"


def test_usage_and_unreadable(data, tmp_path):
    assert sim("--model", "--record-size", "10").exit_code == USAGE
    assert sim("--at", "soon", data).exit_code == USAGE
    assert sim("--config", "retention.ms=abc", data).exit_code == USAGE
    assert sim(tmp_path / "nope").exit_code == UNREADABLE


def test_apply_quarantines_and_undo_restores(data, tmp_path):
    partition = data / "smallseg-0"
    before = {p.name: p.read_bytes() for p in partition.iterdir()}
    checkpoint = (data / "log-start-offset-checkpoint").read_bytes()
    result = sim("--apply", "--backup-dir", tmp_path / "bk", "--now", NEWEST + 1000, "--config", "retention.bytes=300000",
                 partition)
    assert result.exit_code == OK, result.err
    left = sorted(p.name for p in partition.glob("*.log"))
    assert left[0] == "00000000000000001200.log" and not list(partition.glob("*.deleted"))
    assert "smallseg 0 1200" in (data / "log-start-offset-checkpoint").read_text()
    backup = next((tmp_path / "bk").iterdir())
    manifest = json.loads((backup / "manifest.json").read_text())
    assert manifest["state"] == "complete" and {c["op"] for c in manifest["steps"]} == {"remove", "write"}
    assert any(c["path"] == "smallseg-0/00000000000000000000.log" and c["before"]["sha256"]
               for c in manifest["steps"] if c["op"] == "remove")
    again = sim("--format", "json", "--now", NEWEST + 1000, "--config", "retention.bytes=300000", partition)
    assert json.loads(again.out)["partitions"][0]["deletedSegments"] == []  # 350242 left: under 300000 + a segment
    assert run_seglog("undo", "--apply", str(backup)).exit_code == OK
    assert {p.name: p.read_bytes() for p in partition.iterdir()} == before
    assert (data / "log-start-offset-checkpoint").read_bytes() == checkpoint


def test_locked_log_dir_exit_5(data):
    (data / ".lock").touch()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
                               "fcntl.lockf(fd, fcntl.LOCK_EX); print('ok', flush=True); sys.stdin.read()",
                               str(data / ".lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        result = sim("--apply", "--now", NEWEST + 1000, "--config", "retention.bytes=300000", data / "smallseg-0")
        assert result.exit_code == LOCKED and "locked" in result.err
        assert (data / "smallseg-0" / "00000000000000000000.log").exists()
        assert sim("--now", NEWEST + 1000, "--config", "retention.bytes=300000", data / "smallseg-0").exit_code == PLANNED
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_any_at_or_ratio_text_is_a_result_or_a_usage_error(corpus, at, ratio):
    partition = corpus / "kafka-4.2.0" / "data" / "smallseg-0"
    if at.startswith("-"):
        at = "x" + at  # an option name, not a value
    result = sim("--now", NEWEST, "--at", at, "--config", f"min.cleanable.dirty.ratio={ratio}", "--format", "json",
                 partition)
    assert result.exit_code in (OK, PLANNED, USAGE), result.err
    assert "internal error" not in result.err and "Traceback" not in result.err


def test_a_brokers_server_properties_as_config_file(data, tmp_path):
    server = tmp_path / "server.properties"
    server.write_text("broker.id=1\nlog.dirs=/var/lib/kafka\nlog.retention.minutes=10\n"
                      "log.retention.check.interval.ms=60000\nlog.segment.delete.delay.ms=1000\n")
    result = sim("--config-file", server, "--now", NEWEST, "--at", "+11m", "--format", "json", data / "smallseg-0")
    document = json.loads(result.out)["partitions"][0]
    assert document["retentionMs"] == 600_000
    assert document["timeline"]["checkIntervalMs"] == 60_000 and document["timeline"]["fileDeleteDelayMs"] == 1000
    assert sim("--config", "broker.id=1", data / "smallseg-0").exit_code == USAGE  # a flag must be a known key


def test_compacted_logs_are_checked_by_the_cleaner_thread(data):
    """LogManager.cleanupLogs skips compacted logs; the cleaner thread runs their retention every
    log.cleaner.backoff.ms when idle."""
    result = sim("--config", "cleanup.policy=compact,delete", "--config", "log.cleaner.backoff.ms=20000", "--now", NEWEST,
                 "--at", "+1m", "--format", "json", data / "smallseg-0")
    timeline = json.loads(result.out)["partitions"][0]["timeline"]
    assert timeline["checkIntervalMs"] == 20000 and timeline["checkIntervalSource"].startswith("log.cleaner.backoff.ms")
    plain = sim("--now", NEWEST, "--at", "+1m", "--format", "json", data / "smallseg-0")
    assert json.loads(plain.out)["partitions"][0]["timeline"]["checkIntervalMs"] == 300000


def test_apply_over_many_partitions_is_one_run_with_one_checkpoint_write(data, tmp_path):
    """Every partition's deletions in one journal; log-start-offset-checkpoint written once for
    all of them (not rewritten whole once per partition); the output names the one backup."""
    copies = []
    for n in range(1, 4):  # smallseg-1..3: copies of smallseg-0, in the checkpoint too
        target = data / f"smallseg-{n}"
        shutil.copytree(data / "smallseg-0", target)
        copies.append(target)
    checkpoint = data / "log-start-offset-checkpoint"
    lines = checkpoint.read_text().splitlines()
    checkpoint.write_text("\n".join([lines[0], str(int(lines[1]) + 3)] + lines[2:]
                                    + [f"smallseg {n} 0" for n in range(1, 4)]) + "\n")
    partitions = [data / "smallseg-0"] + copies
    result = sim("--apply", "--backup-dir", tmp_path / "bk", "--now", NEWEST + 1000, "--config", "retention.bytes=300000",
                 *partitions)
    assert result.exit_code == OK, result.err
    (backup,) = (tmp_path / "bk").iterdir()
    assert result.out.count(f"quarantined in {backup};") == 4 and "\x00" not in result.out
    manifest = json.loads((backup / "manifest.json").read_text())
    writes = [c["path"] for c in manifest["steps"] if c["path"] == "log-start-offset-checkpoint"]
    assert len(writes) == 1
    assert all(f"smallseg {n} 1200" in checkpoint.read_text() for n in range(4))
    as_json = sim("--format", "json", "--apply", "--backup-dir", tmp_path / "bk2", "--now", NEWEST + 1000,
                  "--config", "retention.bytes=100000", *partitions)
    assert as_json.exit_code == OK, as_json.err
    (second,) = (tmp_path / "bk2").iterdir()
    documents = json.loads(as_json.out)["partitions"]
    assert [d["applied"]["backupDir"] for d in documents] == [str(second)] * 4
    assert run_seglog("undo", "--apply", str(second)).exit_code == OK
    assert run_seglog("undo", "--apply", str(backup)).exit_code == OK
    assert not list(data.glob("smallseg-*/*.deleted"))
    assert (data / "smallseg-3" / "00000000000000000000.log").exists()


def test_a_refused_partition_stops_the_apply_before_anything_is_written(corpus, data, tmp_path):
    """A compact-only topic after a partition that could be applied: nothing is written, and no
    half-made output."""
    source = corpus / "kafka-4.2.0" / "data"
    shutil.copytree(source / "__cluster_metadata-0", data / "__cluster_metadata-0")
    shutil.copytree(source / "compacted-0", data / "compacted-0")
    before = {p.name: p.read_bytes() for p in (data / "smallseg-0").iterdir()}
    result = sim("--apply", "--backup-dir", tmp_path / "bk", "--now", NEWEST + 10**12,
                 "--config", "retention.ms=1000", "--config", "cleanup.policy=delete", data / "smallseg-0",
                 data / "compacted-0")
    assert result.exit_code == 3 and "compact" in result.err, result.err
    assert {p.name: p.read_bytes() for p in (data / "smallseg-0").iterdir()} == before
    assert result.out == "" and (not (tmp_path / "bk").exists() or not list((tmp_path / "bk").iterdir()))


def test_apply_run_again_has_nothing_to_do(data, tmp_path):
    """--apply run again at the same --now: no segment is due any more; it says so, exits 0, and
    changes nothing (no backup made)."""
    args = ("--apply", "--now", NEWEST + 1000, "--config", "retention.bytes=300000", data / "smallseg-0")
    assert sim("--backup-dir", tmp_path / "b1", *args).exit_code == OK
    applied = {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()}
    again = sim("--backup-dir", tmp_path / "b2", "--format", "text", *args)
    assert again.exit_code == OK, again.out + again.err
    assert again.out.splitlines()[-1] == "applied: nothing to do (no segment is due for deletion)"
    assert {p.relative_to(data): p.read_bytes() for p in data.rglob("*") if p.is_file()} == applied
    assert not (tmp_path / "b2").exists()
