"""``seglog verify`` and ``seglog recover`` (plan) of a KRaft broker's log dir: the start-up
preview, checked against what Kafka 4.2 did at the corpus's restarts of broker 3 (every dir it
marked stray named as stray, no kept dir named so) and the finding codes and exit statuses."""

from __future__ import annotations

import json
import shutil

from tests.storage.metadata.test_startup import STRAY_CASE, kafka_outcomes, needs_stray


def _stray_names(findings) -> set[str]:
    return {f["path"].rsplit("/", 1)[-1] for f in findings if f["code"] == "PARTITION_GOES_STRAY"}


@needs_stray
def test_verify_with_the_controllers_metadata_log_names_every_stray_dir(seglog):
    result = seglog("verify", str(STRAY_CASE / "broker-3-before"), "--metadata-log", str(STRAY_CASE / "controller"),
                    "--format", "json")
    assert result.exit_code == 1, result.err  # warnings: dirs go stray
    document = json.loads(result.out)
    kept, stray, created, _ = kafka_outcomes("restart-1")
    assert _stray_names(document["findings"]) == stray
    (preview,) = document["startupPreview"]
    assert preview["brokerId"] == 3 and preview["endOffset"] == 702 and not preview["ownCopy"]
    by_outcome = {}
    for partition in preview["partitions"]:
        by_outcome.setdefault(partition["outcome"], set()).add(f"{partition['topic']}-{partition['partition']}")
    assert by_outcome == {"kept": kept, "stray": stray, "created": created}
    created_codes = {f["path"].rsplit("/", 1)[-1] for f in document["findings"] if f["code"] == "PARTITION_CREATED_EMPTY"}
    assert created_codes == created


@needs_stray
def test_verify_text_of_the_copy_without_partition_metadata(seglog):
    result = seglog("verify", str(STRAY_CASE / "broker-3-before-no-topic-id"), "--metadata-log",
                    str(STRAY_CASE / "controller" / "__cluster_metadata-0"), "--format", "text")
    assert result.exit_code == 1, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("Start-up preview of broker 3 (log dir ") and "up to offset 702" in lines[0]
    assert any(line.split()[:2] == ["stray", "ledger-0"] and "no partition.metadata" in line for line in lines)
    assert any(line.split()[:2] == ["stray", "ledger-2"] and "PARTITION_CHANGE_RECORD at offset" in line
               for line in lines)
    assert "  1 kept, 7 marked stray, 7 created (--show info lists the kept ones)" in lines
    assert not any(line.split()[:1] == ["kept"] for line in lines)
    listed = seglog("verify", str(STRAY_CASE / "broker-3-before-no-topic-id"), "--metadata-log",
                    str(STRAY_CASE / "controller"), "--format", "text", "--show", "info").out.splitlines()
    assert any(line.split()[:3] == ["kept", "ledger-1", "resumes"] for line in listed)


@needs_stray
def test_verify_with_only_the_brokers_own_copy_says_it_catches_up_first(seglog, tmp_path):
    result = seglog("verify", str(STRAY_CASE / "broker-3-before"), "--format", "json")
    document = json.loads(result.out)
    assert _stray_names(document["findings"]) == set()
    assert not [f for f in document["findings"] if f["code"] == "PREVIEW_FROM_OWN_METADATA"]  # nothing else to say
    assert document["startupPreview"][0]["ownCopy"] is True and document["startupPreview"][0]["endOffset"] == 94
    text = seglog("verify", str(STRAY_CASE / "broker-3-before"), "--format", "text").out.splitlines()
    assert text[1] == ("  (the broker's own copy: the restart first catches up past offset 94; "
                       "--metadata-log DIR names a current one)")
    # the own copy of a broker whose ledger-0 lost its partition.metadata: that finding comes with it
    log_dir = tmp_path / "broker-3"
    shutil.copytree(STRAY_CASE / "broker-3-before-no-topic-id", log_dir, symlinks=True)
    document = json.loads(seglog("verify", str(log_dir), "--format", "json").out)
    (own,) = [f for f in document["findings"] if f["code"] == "PREVIEW_FROM_OWN_METADATA"]
    assert own["severity"] == "info" and "ends at offset 94" in own["message"]
    assert _stray_names(document["findings"]) == {"ledger-0"}


@needs_stray
def test_recover_plan_shows_the_preview_and_apply_does_not(seglog, tmp_path):
    log_dir = tmp_path / "kafka-logs"
    shutil.copytree(STRAY_CASE / "broker-3-before", log_dir, symlinks=True)
    result = seglog("recover", str(log_dir), "--metadata-log", str(STRAY_CASE / "controller"), "--format", "json")
    assert result.exit_code == 0, result.err
    (preview,) = json.loads(result.out)["startupPreview"]
    stray = {f"{p['topic']}-{p['partition']}" for p in preview["partitions"] if p["outcome"] == "stray"}
    assert stray == kafka_outcomes("restart-1")[1]
    text = seglog("recover", str(log_dir), "--metadata-log", str(STRAY_CASE / "controller"))
    assert "  2 kept, 6 marked stray, 6 created (--show info lists the kept ones)" in text.out.splitlines()
    assert sorted(p.name for p in log_dir.iterdir()) == sorted(p.name for p in (STRAY_CASE / "broker-3-before").iterdir())


def test_a_log_dir_without_node_id_gets_no_preview(seglog, tmp_path):
    (tmp_path / "orders-0").mkdir()
    result = seglog("verify", str(tmp_path), "--format", "json")
    assert "startupPreview" not in json.loads(result.out)
