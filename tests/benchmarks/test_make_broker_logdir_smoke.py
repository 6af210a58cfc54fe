"""make_broker_logdir.py builds a log dir seglog reads as a healthy broker's: 60 partitions of
4 segments, clean, unclean and damaged, checked with seglog's own commands. No timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seglog_cli import api
from seglog_cli.storage.config.effective_config import ConfigSources, read_metadata_image
from seglog_cli.storage.log.checkpoints import parse_offset_checkpoint, read_offset_checkpoint, read_partition_metadata
from tests.benchmarks import make_broker_logdir as gen
from tests.conftest import run_seglog

N, S = 60, 4
DAMAGE_CODES = {"torn-tail": "TORN_TAIL", "crc-flip": "BATCH_CRC_MISMATCH", "missing-index": "INDEX_MISSING"}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return gen.make_broker_logdir(tmp_path_factory.mktemp("clean") / "data", N, segments=S)


@pytest.fixture(scope="module")
def unclean(tmp_path_factory):
    return gen.make_broker_logdir(tmp_path_factory.mktemp("unclean") / "data", N, segments=S, unclean=True)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    return gen.make_broker_logdir(tmp_path_factory.mktemp("damaged") / "data", N, segments=S, damage_percent=10)


def partition_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir())


def test_summary_is_what_is_on_disk(clean):
    dirs = partition_dirs(clean.path)
    logs = [f for d in dirs for f in d.glob("*.log")]
    assert [d.name for d in dirs] == list(clean.partitions)  # and no template directory left
    assert len(dirs) == N + 2 * 50 + 1 and clean.damaged == {}
    assert clean.segments == len(logs) > N
    assert clean.bytes == sum(f.stat().st_size for f in logs)
    assert max(f.stat().st_nlink for f in logs) > 1  # shared by hard links
    assert {tp.topic for tp in read_offset_checkpoint(clean.path / "recovery-point-offset-checkpoint")} == {
        p.rpartition("-")[0] for p in clean.partitions if p != gen.METADATA}
    assert (clean.path / ".kafka_cleanshutdown").read_text() == '{"version":0,"brokerEpoch":16}'


def test_segments_follow_each_other_and_indexes_are_kafkas(clean):
    for directory in partition_dirs(clean.path):
        log = api.open_partition(directory)
        ends = [segment.read_next_offset() for segment in log.segments]
        assert [s.base_offset for s in log.segments[1:]] == ends[:-1], directory.name
    assert api.plan_rebuild_index([clean.path]).changes == []  # .index/.timeindex/.txnindex as recovery writes them
    assert any(clean.path.glob("*/*.txnindex"))


def test_verify_finds_nothing(clean):
    result = run_seglog("verify", "--format", "json", str(clean.path))
    report = json.loads(result.out)
    assert result.exit_code == 0, result.out[:2000]
    assert report["findings"] == [] and all(p["findings"] == [] for p in report["partitions"])
    assert report["summary"]["segments"] == clean.segments and report["summary"]["bytes"] == clean.bytes


def test_metadata_log_creates_every_topic_with_its_id_and_configs(clean):
    result = run_seglog("dump", "--cluster-metadata-decoder", str(clean.path / gen.METADATA))
    assert result.exit_code == 0 and "Error at" not in result.out
    image = read_metadata_image(clean.path / gen.METADATA)
    topics = {p.rpartition("-")[0] for p in clean.partitions if p != gen.METADATA}
    assert result.out.count('"type":"TOPIC_RECORD"') == len(topics) == len(image.topics)
    for name in clean.partitions:
        if name != gen.METADATA:
            assert read_partition_metadata(clean.path / name / "partition.metadata").topic_id == \
                image.topics[name.rpartition("-")[0]]
    config = ConfigSources().resolve(clean.path / "topic-0000-0")
    assert config.notes == () and config.config.segment_ms == gen.ROLL_MS
    assert ConfigSources().resolve(clean.path / "__consumer_offsets-3").config.cleanup_policy == "compact"


def test_offsets_lists_every_group_on_every_partition(clean):
    result = run_seglog("offsets", "--format", "json", str(clean.path))
    report = json.loads(result.out)
    assert result.exit_code == 0 and report["unreadable"] == [] and report["flaggedGroups"] == []
    data = [p for p in clean.partitions if p.startswith("topic-")]
    committed = {(c["group"], f"{c['topic']}-{c['partition']}") for c in report["committed"]}
    assert len(committed) == 2 * len(data)
    for commit in report["committed"]:
        assert commit["lag"] >= 0 and commit["valueVersion"] == 4
        assert commit["coordinatorPartition"] == f"__consumer_offsets-{gen.rec.coordinator_partition(commit['group'])}"


def recovery_point_changes(plan) -> dict[str, tuple[int | None, int]]:
    """What the plan's log-dir steps change: only recovery-point-offset-checkpoint entries, by
    partition: (before, after)."""
    changes = {}
    for step in (s for steps in plan.log_dir_steps.values() for s in steps):
        assert step.path.name == "recovery-point-offset-checkpoint", step
        before = read_offset_checkpoint(step.path)
        changes.update({f"{tp.topic}-{tp.partition}": (before.get(tp), after)
                        for tp, after in parse_offset_checkpoint(step.data).items() if before.get(tp) != after})
    return changes


def test_recover_has_nothing_to_do_after_a_clean_shutdown(clean):
    plan = api.plan_recover(partition_dirs(clean.path))
    assert [s for p in plan.partitions for s in p.steps] == []
    # seglog adds __cluster_metadata-0 to recovery-point-offset-checkpoint, which Kafka's
    # LogManager never lists (nor does the corpus's file): tolerated until seglog stops doing it
    assert set(recovery_point_changes(plan)) <= {gen.METADATA}


def test_unclean_recovers_the_active_segments_only(unclean, clean):
    assert not (unclean.path / ".kafka_cleanshutdown").exists()
    active = max((unclean.path / "topic-0000-0").glob("*.index"))
    assert active.stat().st_size == 10485760 and active.stat().st_blocks * 512 < 65536  # preallocated, sparse
    plan = api.plan_recover(partition_dirs(unclean.path))
    ends = {}
    for partition in plan.partitions:
        log = api.open_partition(partition.path)
        assert partition.recovered_segments == [log.segments[-1].base_offset], partition.path.name
        assert partition.bytes_truncated == 0 and partition.removed_segments == []
        ends[partition.path.name] = partition.log_end_offset
    changes = recovery_point_changes(plan)
    assert changes and all(after == ends[name] for name, (_, after) in changes.items())
    # what recovery writes (trimmed indexes with the close-time entry, the snapshot at the log
    # end offset) is byte for byte what the clean shutdown of the same log dir left
    written = [(step.path.relative_to(unclean.path), step.data) for step in plan.steps if step.data is not None]
    assert written and all((clean.path / path).read_bytes() == data for path, data in written
                           if path.name != "recovery-point-offset-checkpoint")


def test_damage_is_reported_on_the_damaged_partitions_only(damaged):
    assert len(damaged.damaged) == round(N * 0.10) and set(damaged.damaged.values()) == set(DAMAGE_CODES)
    report = api.verify([damaged.path])
    found = {Path(p.path).name: {f.code for f in p.findings} for p in report.partitions if p.findings}
    assert set(found) == set(damaged.damaged)
    for name, kind in damaged.damaged.items():
        assert DAMAGE_CODES[kind] in found[name], (name, found[name])
    assert all(f.message.split()[0] in damaged.damaged for f in report.findings)  # checkpoints past a torn tail
    logs = [f for d in partition_dirs(damaged.path) for f in d.glob("*.log")]
    assert damaged.segments == len(logs) and damaged.bytes == sum(f.stat().st_size for f in logs)


def test_same_seed_same_bytes_and_copies_are_private(tmp_path):
    linked = gen.make_broker_logdir(tmp_path / "linked", 12, segments=2, unclean=True)
    copied = gen.make_broker_logdir(tmp_path / "copied", 12, segments=2, unclean=True, copy=True)
    files = sorted(f.relative_to(linked.path) for f in linked.path.rglob("*") if f.is_file())
    assert files == sorted(f.relative_to(copied.path) for f in copied.path.rglob("*") if f.is_file())
    data = [f for f in files if f.parts[0].startswith("topic-")]
    small = [f for f in data if (linked.path / f).stat().st_size < 1 << 20]  # not the 10 MiB preallocated indexes
    assert all((linked.path / f).read_bytes() == (copied.path / f).read_bytes() for f in small)
    assert all((copied.path / f).stat().st_nlink == 1 for f in data)
    preallocated = [copied.path / f for f in data if f not in small]
    assert preallocated and all(f.stat().st_size >= 10485756 and f.stat().st_blocks * 512 < 65536 for f in preallocated)
    assert (linked.segments, linked.bytes) == (copied.segments, copied.bytes)


def test_runs_as_a_script(tmp_path):
    script = Path(gen.__file__)
    result = subprocess.run([sys.executable, str(script), str(tmp_path / "out"), "--partitions", "6",
                             "--segments", "1", "--seed", "7"], capture_output=True, text=True,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": ""})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["partitions"] == 6 + 2 * 50 + 1
