"""The start-up preview against what Kafka 4.2 did at each start of the corpus's broker 3
(``stray/case.json``: every dir kept, marked stray and created) and broker 1's two log dirs
(``jbod/``)."""

from __future__ import annotations

import json
import shutil

import pytest

from seglog_cli.storage.metadata.startup import (CREATED, KEPT, NO_TOPIC_ID, NOT_A_REPLICA, STRAY,
                                                 TOPIC_ID_NOT_IN_IMAGE, preview_startup)
from tests.conftest import CORPUS, CORPUS_MISSING

STRAY_CASE = CORPUS / "kafka-4.2.0" / "metadata" / "stray"
JBOD = CORPUS / "kafka-4.2.0" / "metadata" / "jbod"
needs_stray = pytest.mark.skipif(not STRAY_CASE.is_dir(), reason=CORPUS_MISSING)
needs_jbod = pytest.mark.skipif(not JBOD.is_dir(), reason=CORPUS_MISSING)
REASONS = {"the topicId": TOPIC_ID_NOT_IN_IMAGE, "the current replica assignment": NOT_A_REPLICA,
           "The topicId does not exist": NO_TOPIC_ID}


def kafka_outcomes(restart: str) -> tuple[set, set, set, dict]:
    """(kept, stray, created, stray reasons) of one restart in case.json; a dir marked stray whose
    partition the image still assigns to broker 3 is also created anew."""
    case = json.loads((STRAY_CASE / "case.json").read_text())
    kept, stray, created, reasons = set(), set(), set(), {}
    for entry in case["restarts"][restart]["dirs"]:
        if entry["outcome"].startswith("kept"):
            kept.add(entry["dir"])
        elif entry["outcome"].startswith("marked stray"):
            stray.add(entry["dir"])
            reasons[entry["dir"]] = next(v for k, v in REASONS.items() if entry["reason_logged"].startswith(k))
            if entry.get("new_dir_with_same_name", {}).get("created_by_broker"):
                created.add(entry["dir"])
        elif entry["outcome"].startswith("created"):
            created.add(entry["dir"])
    return kept, stray, created, reasons


def outcomes(preview) -> tuple[set, set, set, dict]:
    return ({o.name for o in preview.of(KEPT)}, {o.name for o in preview.of(STRAY)},
            {o.name for o in preview.of(CREATED)}, {o.name: o.reason for o in preview.of(STRAY)})


@needs_stray
@pytest.mark.parametrize("restart, log_dir", [("restart-1", "broker-3-before"),
                                              ("restart-2-no-topic-id", "broker-3-before-no-topic-id")])
def test_the_preview_against_the_controllers_log_is_what_kafka_did(restart, log_dir):
    preview = preview_startup([STRAY_CASE / log_dir], STRAY_CASE / "controller")
    kept, stray, created, reasons = kafka_outcomes(restart)
    if restart == "restart-2-no-topic-id":
        created.add("ledger-0")  # its dir went stray and ledger-0 was created anew (README)
    assert outcomes(preview) == (kept, stray, created, reasons)
    assert preview.broker_id == 3 and not preview.own_copy
    assert preview.metadata_dir == STRAY_CASE / "controller" / "__cluster_metadata-0"


@needs_stray
def test_each_stray_dir_names_the_record_that_decided_it():
    preview = preview_startup([STRAY_CASE / "broker-3-before"], STRAY_CASE / "controller")
    by_name = {o.name: o for o in preview.of(STRAY)}
    assert by_name["ledger-2"].decided_by.record == "PARTITION_CHANGE_RECORD"
    assert by_name["ledger-2"].replicas == (1, 2)
    assert by_name["ledger-2"].kafka_reason(3) == (
        "the current replica assignment [1, 2] does not contain the local brokerId 3")
    assert by_name["metrics-0"].decided_by.record == "REMOVE_TOPIC_RECORD"
    assert by_name["metrics-0"].kafka_reason(3) == (
        "the topicId wK3faARKQ_CIl1cqxRYWIA does not exist in the metadata image")
    assert by_name["sessions-1"].decided_by.record == "REMOVE_TOPIC_RECORD"
    assert by_name["metrics-0"].decided_by.offset < by_name["sessions-1"].decided_by.offset
    kept = {o.name: o.resume_offset for o in preview.of(KEPT)}
    assert kept == {"ledger-0": 94, "ledger-1": 107}  # "Follower ledger-1 starts ... from offset 107"
    created = {o.name: o for o in preview.of(CREATED)}
    assert created["alerts-0"].topic_id == "9VVEswOgQkKtZFU_3nNKdg"
    assert created["metrics-3"].topic_id == "tCUMYjTuS12hdX9iztCvbw"
    assert created["metrics-3"].path == STRAY_CASE / "broker-3-before" / "metrics-3"


@needs_stray
def test_the_brokers_own_copy_predates_the_changes_and_says_so():
    preview = preview_startup([STRAY_CASE / "broker-3-before"])
    assert preview.own_copy
    assert preview.metadata_dir == STRAY_CASE / "broker-3-before" / "__cluster_metadata-0"
    assert outcomes(preview)[1:3] == (set(), set())  # every dir kept: its copy ends before the deletions
    controller = preview_startup([STRAY_CASE / "broker-3-before"], STRAY_CASE / "controller")
    assert preview.end_offset < controller.end_offset


@needs_stray
def test_stray_dirs_are_left_aside_and_a_third_start_keeps_everything():
    preview = preview_startup([STRAY_CASE / "broker-3-after-no-topic-id"], STRAY_CASE / "controller")
    kept, stray, created, _ = kafka_outcomes("restart-3-with-stray-dirs")
    assert outcomes(preview)[:3] == ({d for d in kept if not d.endswith("-stray")}, set(), set())


@needs_stray
def test_a_copy_of_the_controllers_metadata_dir_and_a_missing_node_id(tmp_path):
    shutil.copytree(STRAY_CASE / "controller" / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0")
    preview = preview_startup([STRAY_CASE / "broker-3-before"], tmp_path / "__cluster_metadata-0")
    assert outcomes(preview)[1] == kafka_outcomes("restart-1")[1]
    other = preview_startup([STRAY_CASE / "broker-3-before"], tmp_path, broker_id=1)
    assert "ledger-2" in outcomes(other)[0]  # broker 1 is still a replica of ledger-2


@needs_jbod
def test_jbod_a_partition_in_the_directory_the_image_does_not_assign():
    dirs = [JBOD / "broker-1" / "kafka-logs", JBOD / "broker-1" / "kafka-logs-2"]
    now = preview_startup(dirs, JBOD / "controller")
    assert [o.name for o in now.outcomes if o.wrong_directory] == []
    assert {o.name for o in now.of(KEPT)} == {"clicks-0", "clicks-1", "clicks-2", "clicks-3"}
    # between the PartitionChangeRecord placing clicks-1 in kafka-logs-2 (37) and the move (63)
    before_move = preview_startup(dirs, JBOD / "controller", at_offset=40)
    wrong = [o for o in before_move.outcomes if o.wrong_directory]
    assert [(o.name, o.assigned_directory, o.directory_id) for o in wrong] == [
        ("clicks-1", "juYyrBBjlUAQrX38z2w6lQ", "ltjxxj1K4xmKERvkII_YJQ")]
    assert (wrong[0].decided_by.record, wrong[0].decided_by.offset) == ("PARTITION_CHANGE_RECORD", 37)
    (finding,) = [f for f in before_move.findings() if f.code == "PARTITION_WRONG_LOG_DIR"]
    assert finding.severity.value == "warning" and "PARTITION_CHANGE_RECORD at offset 37" in finding.message
