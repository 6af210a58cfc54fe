"""Verifying the files of a log dir that are not segments: checkpoints, metadata files, KRaft
snapshots and ``bootstrap.checkpoint``, leftovers (§13).

Each reader is Kafka's (``storage/log/checkpoints.py``, ``storage/log/log_dir_files.py``); a file Kafka
would reject is a finding whose severity says what the broker does about it:

* any offset checkpoint, ``leader-epoch-checkpoint``, ``partition.metadata``: read through
  ``CheckpointFileWithFailureHandler`` / a failing ``IOException``, so the broker marks the
  whole log dir offline (the recovery-point and log-start-offset readers log a warning and load
  the logs first, but the failure has already been queued): error;
* ``meta.properties``: the broker refuses to start: error;
* ``quorum-state``: the KRaft node refuses to start: error;
* ``.kafka_cleanshutdown``: any content means clean; unreadable JSON only loses the broker
  epoch: info;
* a KRaft snapshot or ``bootstrap.checkpoint``: a file of v2 batches, checked like a segment
  without indexes.
"""

from __future__ import annotations

from pathlib import Path

from seglog_cli.storage.log.checkpoints import (
    parse_leader_epoch_checkpoint,
    parse_offset_checkpoint,
    parse_partition_metadata,
)
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.files import read_small_file
from seglog_cli.storage.log.findings import Code, Finding, Severity
from seglog_cli.storage.log.log_dir_files import (
    BOOTSTRAP_CHECKPOINT,
    CLEAN_SHUTDOWN,
    CLEANER_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOCK,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    PARTITION_METADATA,
    QUORUM_STATE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    parse_clean_shutdown,
    parse_meta_properties,
    parse_quorum_state,
)
from seglog_cli.storage.log.naming import parse_kraft_snapshot_name
from seglog_cli.storage.log.segments import LogSegment

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO
TEXT_FILE_LIMIT = 64 << 20
OFFSET_CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT,
                      CLEANER_CHECKPOINT)
_PARSERS = {name: parse_offset_checkpoint for name in OFFSET_CHECKPOINTS}
_PARSERS.update({
    LEADER_EPOCH_CHECKPOINT: parse_leader_epoch_checkpoint,
    PARTITION_METADATA: parse_partition_metadata,
    META_PROPERTIES: parse_meta_properties,
    QUORUM_STATE: parse_quorum_state,
})
_CONSEQUENCE = {
    META_PROPERTIES: "the broker refuses to start",
    QUORUM_STATE: "the KRaft node refuses to start",
}
TEXT_FILES = frozenset(_PARSERS) | {CLEAN_SHUTDOWN, LOCK}


def is_batch_file(name: str) -> bool:
    """A KRaft snapshot (``<offset>-<epoch>.checkpoint``) or ``bootstrap.checkpoint``."""
    return name == BOOTSTRAP_CHECKPOINT or parse_kraft_snapshot_name(name) is not None


def read_text_file(path: Path | str, findings: list[Finding]):
    """The parsed content of a checkpoint or metadata file, or None (with a finding) when Kafka
    would reject it. ``.lock`` and ``.kafka_cleanshutdown`` always read as present."""
    name = path.rpartition("/")[2] if type(path) is str else path.name
    if name == LOCK:
        return True
    try:
        data = read_small_file(path, TEXT_FILE_LIMIT)
    except SeglogError as exc:
        findings.append(Finding(Code.UNREADABLE_FILE, ERROR, str(path), None, exc.message))
        return None
    if name == CLEAN_SHUTDOWN:
        if data and parse_clean_shutdown(data) is None:
            findings.append(Finding(Code.CHECKPOINT_UNREADABLE, INFO, str(path), None,
                                    "not the JSON Kafka 3.7+ writes; Kafka still reads the file's presence as a "
                                    "clean shutdown (only the broker epoch is lost)"))
        return True
    try:
        return _PARSERS[name](data, path)
    except SeglogError as exc:
        consequence = _CONSEQUENCE.get(name, "Kafka marks the log dir offline")
        findings.append(Finding(Code.CHECKPOINT_UNREADABLE, ERROR, str(path), exc.position,
                                f"{exc.message} ({consequence})"))
        return None


def verify_batch_file(path: Path, level: str, findings: list[Finding]):
    """A KRaft snapshot or ``bootstrap.checkpoint``: framing, CRCs (and records when deep) of
    its batches; it has no index and its batches need not start at the name's offset."""
    from seglog_cli.storage.verify.verify_segment import SegmentVerifier  # verify_segment imports nothing from here

    own: list[Finding] = []
    summary = SegmentVerifier(LogSegment(path, 0), own, active=True, level=level, indexes=False).run()
    findings.extend(f for f in own if f.code not in (Code.SEGMENT_BASE_GAP, Code.OFFSET_OVERFLOW))
    return summary


__all__ = ["OFFSET_CHECKPOINTS", "TEXT_FILES", "is_batch_file", "read_text_file", "verify_batch_file"]
