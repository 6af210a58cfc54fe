"""recover at scale: after a clean shutdown a partition costs what Kafka's loader spends on it
(one listing, the last segment's next offset, the leader epochs, no per-segment read), and the
plan is shown in lines that group alike steps and fit the terminal."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from seglog_cli.render.recover_report import render_text
from seglog_cli.storage.recovery.recover import plan_recover
from tests.conftest import run_seglog
from tests.work_count import count_work

DATA = "kafka-4.2.0/data"


def test_a_clean_partition_reads_only_what_kafkas_loader_reads(corpus):
    partition = corpus / DATA / "smallseg-0"  # 10 segments, 9 producer snapshots, clean shutdown
    assert len(list(partition.glob("*.log"))) == 10
    plan_recover([partition], fingerprint=False)  # warm-up: imports, the checkpoint views
    plan, work = count_work(lambda: plan_recover([partition], fingerprint=False))
    (recovered,) = plan.partitions
    assert recovered.steps == [] and recovered.log_end_offset == 3000
    # one listing of the partition; the last segment's .index and .log (readNextOffset) and the
    # leader-epoch-checkpoint: nothing per segment, no snapshot read
    assert work.listings == 1, work.figures()
    assert work.opens <= 3, work.figures()
    assert work.bytes_mapped <= 2 * 64 * 1024, work.figures()


def test_alike_steps_are_one_line_and_show_info_lists_every_file(corpus):
    partition = corpus / DATA / "compacted-0"
    deleted = sorted(p.name for p in partition.glob("*.deleted"))
    assert len(deleted) == 28
    grouped = run_seglog("recover", str(partition))
    assert grouped.exit_code == 1, grouped.err
    assert "  remove   28 .deleted files (Kafka removes them at start-up)\n" in grouped.out
    assert not any(name in grouped.out for name in deleted)
    every = run_seglog("recover", "--show", "info", str(partition))
    assert all(f"remove   {name}: a .deleted file" in every.out for name in deleted)
    document = json.loads(run_seglog("recover", "--format", "json", str(partition)).out)
    assert sorted(Path(s["path"]).name for s in document["partitions"][0]["steps"]) == deleted


def test_removals_after_a_truncation_are_one_line_with_the_offsets_they_lose(corpus, tmp_path):
    log_dir = tmp_path / "data"
    shutil.copytree(corpus / DATA / "smallseg-0", log_dir / "smallseg-0")
    for name in ("meta.properties", "log-start-offset-checkpoint", "replication-offset-checkpoint"):
        shutil.copy(corpus / DATA / name, log_dir / name)
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\nsmallseg 0 0\n")  # no clean shutdown marker
    log = log_dir / "smallseg-0" / "00000000000000001200.log"
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF
    log.chmod(0o644)
    log.write_bytes(bytes(data))
    plan = plan_recover([log_dir / "smallseg-0"])
    out = io.StringIO()
    render_text(plan, out)
    lines = out.getvalue().splitlines()
    removal = [line for line in lines if "after the truncation of segment 1200" in line]
    assert len(removal) == 1, lines
    removed = [s for s in plan.partitions[0].steps if s.op == "remove" and "after the truncation" in s.why]
    assert removal[0].startswith(f"  remove   {len(removed)} files: after the truncation of segment 1200")
    assert removal[0].endswith("; offsets 1500..2999 lost")


def test_plan_lines_fit_the_width_and_never_cut_a_name_or_an_offset(corpus):
    partition = corpus / "kafka-4.2.0" / "recovery-cases" / "a-append-garbage-active-log" / "before" / "plain-0"
    plan = plan_recover([partition])
    out = io.StringIO()
    render_text(plan, out, width=60)
    text = out.getvalue()
    # a word longer than the width (a path in Kafka's message) stays whole on a line of its own
    assert all(len(line) <= 60 or len(line.split()) == 1 for line in text.splitlines()), text
    words = text.split()
    assert "00000000000000008203.log" in words and "399586" in words
    narrow = io.StringIO()
    render_text(plan, narrow)  # not a terminal, no width: one line per step, for scripts
    assert any(len(line) > 60 and line.startswith("  truncate ") for line in narrow.getvalue().splitlines())


def test_the_same_config_note_about_many_topics_is_one_line(corpus, tmp_path):
    log_dir = tmp_path / "data"
    shutil.copytree(corpus / DATA / "__cluster_metadata-0", log_dir / "__cluster_metadata-0")
    for name in ("meta.properties", ".kafka_cleanshutdown"):
        shutil.copy(corpus / DATA / name, log_dir / name)
    for n in range(8):  # topics the cluster metadata does not know
        shutil.copytree(corpus / DATA / "smallseg-0", log_dir / f"gone{n}-0")
    result = run_seglog("recover", str(log_dir))
    notes = [line for line in result.out.splitlines() if "configs: note:" in line]
    assert len(notes) == 2, result.out
    assert "'__cluster_metadata' is not in __cluster_metadata-0" in notes[0]  # the first partition listed
    assert notes[1].strip().startswith("configs: note: the same for ") and "and 3 more (--format json lists each)" in notes[1]
    document = json.loads(run_seglog("recover", "--format", "json", str(log_dir)).out)
    assert len(document["configNotes"]) == 9  # every partition's note, in full
