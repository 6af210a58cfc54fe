"""The other small files of a Kafka log dir (spec §13.3-§13.6) and what each file name is.

``meta.properties`` (log dir root): a Java ``.properties`` file written by
``Properties.store(writer, "")`` as UTF-8 but read by ``Properties.load(InputStream)`` as
ISO-8859-1 (so any byte sequence decodes; non-ASCII values come back as Kafka would see them)::

    #\\n#<date>\\n<key>=<value>\\n...     version=0: broker.id, cluster.id optional
                                        version=1: node.id, cluster.id required; directory.id optional

``.kafka_cleanshutdown`` (log dir root): presence means "clean"; content is empty (before 3.7) or
``{"version":0,"brokerEpoch":<int64>}``; unreadable content only loses the epoch.

``quorum-state`` (``__cluster_metadata-0``): one line of JSON, ``QuorumStateData`` plus
``data_version`` (0: clusterId, leaderId, leaderEpoch, votedId, appliedOffset, currentVoters;
1: leaderId, leaderEpoch, votedId, votedDirectoryId). Unknown fields are ignored.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from seglog_cli.storage.log.checkpoints import TMP_SUFFIX, decode_utf8, location, show
from seglog_cli.storage.log.errors import CheckpointError, UnreadableInputError
from seglog_cli.storage.log.files import read_small_file
from seglog_cli.storage.log.java_text import decode_uuid, java_lines, java_parse_int, java_trim, parse_java_properties
from seglog_cli.storage.log.text import java_utf8

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
QUORUM_STATE = "quorum-state"
LOCK = ".lock"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"

FILE_KINDS = {
    RECOVERY_POINT_CHECKPOINT: "recovery-point",
    REPLICATION_CHECKPOINT: "replication",
    LOG_START_OFFSET_CHECKPOINT: "log-start",
    CLEANER_CHECKPOINT: "cleaner",
    LEADER_EPOCH_CHECKPOINT: "leader-epoch",
    PARTITION_METADATA: "partition-metadata",
    META_PROPERTIES: "meta-properties",
    CLEAN_SHUTDOWN: "clean-shutdown",
    QUORUM_STATE: "quorum-state",
    LOCK: "lock",
    BOOTSTRAP_CHECKPOINT: "bootstrap-checkpoint",
}
OFFSET_CHECKPOINT_KINDS = ("recovery-point", "replication", "log-start", "cleaner")
QUORUM_STATE_VERSIONS = (0, 1)

_INT16 = 1 << 15
_INT32 = 1 << 31
_INT64 = 1 << 63


def classify_log_dir_file(name: str) -> str | None:
    """The kind of a root- or partition-level file name (``FILE_KINDS`` values, or ``"tmp"``)."""
    if name.endswith(TMP_SUFFIX):
        return "tmp"
    return FILE_KINDS.get(name)


# ---------------------------------------------------------------------------------------------
# meta.properties


@dataclass(frozen=True)
class MetaProperties:
    """``MetaProperties``: ``node_id`` is node.id (v1) or broker.id (v0), as Kafka reads it."""

    version: int
    cluster_id: str | None
    node_id: int | None
    broker_id: int | None  # broker.id of a version 0 file
    directory_id: str | None
    extra: dict = field(default_factory=dict)  # every key Kafka does not interpret


def parse_meta_properties(data: bytes, path: str | Path | None = None) -> MetaProperties:
    """``MetaProperties.Builder(Properties).build()``."""
    try:
        props = parse_java_properties(data.decode("latin-1"))
    except ValueError as exc:
        raise CheckpointError(f"Error while reading meta.properties file {location(path)}: {exc}", path) from None
    version_text = props.get("version", "0")
    version = java_parse_int(java_trim(version_text))
    if version is None:
        raise CheckpointError(f"Invalid meta.properties version string '{show(version_text)}'", path)
    if version not in (0, 1):
        raise CheckpointError(f"Unknown meta.properties version number {version}", path)
    used = {"version", "cluster.id", "directory.id", "broker.id" if version == 0 else "node.id"}
    broker_id = _int_prop(props, "broker.id", path) if version == 0 and "broker.id" in props else None
    node_id = broker_id if version == 0 else _int_prop(props, "node.id", path)
    cluster_id = props.get("cluster.id")
    if version == 1 and cluster_id is None:
        raise CheckpointError("cluster.id was not found.", path)
    directory_id = props.get("directory.id")
    if directory_id is not None:
        try:
            decode_uuid(directory_id)
        except ValueError as exc:
            raise CheckpointError(f"Unable to read directory.id as a Uuid: {show(str(exc))}", path) from None
    extra = {key: value for key, value in props.items() if key not in used}
    return MetaProperties(version, cluster_id, node_id, broker_id, directory_id, extra)


def read_meta_properties(path: str | Path) -> MetaProperties:
    return parse_meta_properties(read_small_file(path), path)


def _int_prop(props: dict[str, str], key: str, path) -> int:
    """``PropertiesUtils.loadRequiredIntProp``: no trimming."""
    if key not in props:
        raise CheckpointError(f"Failed to find {key}", path)
    value = java_parse_int(props[key])
    if value is None:
        raise CheckpointError(f"Unable to read {key} as a base-10 number. ({key}={show(props[key])})", path)
    return value


# ---------------------------------------------------------------------------------------------
# .kafka_cleanshutdown


@dataclass(frozen=True)
class CleanShutdown:
    present: bool  # the previous shutdown of this log dir was clean
    broker_epoch: int | None  # from the 3.7+ JSON content, when readable


def parse_clean_shutdown(data: bytes) -> int | None:
    """The broker epoch, as ``CleanShutdownFileHandler.read`` gets it; None for anything else."""
    document = _json_prefix(java_utf8(data))
    if not isinstance(document, dict):
        return None
    if _jackson_long(document.get("version", 0), _INT32) is None:
        return None
    return _jackson_long(document.get("brokerEpoch"), _INT64)


def read_clean_shutdown(path: str | Path) -> CleanShutdown:
    """Never raises: an existing path of any kind means clean (``File.exists``)."""
    if not os.path.exists(path):
        return CleanShutdown(False, None)
    try:
        return CleanShutdown(True, parse_clean_shutdown(read_small_file(path, limit=1 << 20)))
    except UnreadableInputError:
        return CleanShutdown(True, None)


def format_clean_shutdown(broker_epoch: int) -> bytes:
    return json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode()


def write_clean_shutdown(path: str | Path, broker_epoch: int) -> None:
    """``CleanShutdownFileHandler.write``: written in place (no ``.tmp``), then fsynced."""
    try:
        with open(path, "wb") as handle:
            handle.write(format_clean_shutdown(broker_epoch))
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise CheckpointError(f"cannot write: {exc.strerror or exc}", path) from None


def _json_prefix(text: str):
    """The JSON value ``text`` starts with, or None when it does not start with one."""
    try:
        return json_document(text)
    except ValueError:
        return None


def json_document(text: str):
    """Jackson ``readTree``/``readValue``: leading blanks skipped, trailing content ignored.

    Raises ValueError (also for nesting too deep for Python, which Jackson limits too).
    """
    try:
        return json.JSONDecoder(parse_constant=_reject_constant).raw_decode(text.lstrip(" \t\r\n"))[0]
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _reject_constant(name: str):
    raise ValueError(f"non-standard JSON token {name}")


def _jackson_long(value, limit: int) -> int | None:
    """Jackson's default coercions to int/long: integers, truncated floats, numeric strings."""
    if isinstance(value, bool) or value is None:
        return 0 if value is None and limit == _INT32 else None
    if isinstance(value, float):
        value = int(value) if math.isfinite(value) else None
    elif isinstance(value, str):
        value = java_parse_int(value.strip(), 64)
    if not isinstance(value, int):
        return None
    return value if -limit <= value < limit else None


# ---------------------------------------------------------------------------------------------
# quorum-state


@dataclass(frozen=True)
class QuorumState:
    """``QuorumStateData`` of ``FileQuorumStateStore``; None marks a field absent from the file."""

    data_version: int
    leader_id: int
    leader_epoch: int
    voted_id: int
    voted_directory_id: str | None = None  # version 1
    applied_offset: int | None = None  # version 0
    current_voters: tuple[int, ...] | None = None  # version 0 (nullable)
    cluster_id: str | None = None  # version 0


_QUORUM_FIELDS = (  # (JSON name, type, versions where it is mandatory)
    ("clusterId", "string", (0,)),
    ("leaderId", "int32", (0, 1)),
    ("leaderEpoch", "int32", (0, 1)),
    ("votedId", "int32", (0, 1)),
    ("votedDirectoryId", "uuid", (1,)),
    ("appliedOffset", "int64", (0,)),
    ("currentVoters", "voters", (0,)),
)


def parse_quorum_state(data: bytes, path: str | Path | None = None) -> QuorumState:
    """``FileQuorumStateStore.readStateFromFile``: the first line only."""
    lines = java_lines(decode_utf8(data, path))
    if not lines:
        raise CheckpointError(f"Error while reading the Quorum status from the file {location(path)}: "
                              "File ended prematurely.", path)
    try:
        document = json_document(lines[0])
    except ValueError as exc:
        raise CheckpointError(f"Error while reading the Quorum status from the file {location(path)}: "
                              f"line 1 is not JSON: {show(str(exc))}", path) from None
    if not isinstance(document, dict):
        raise CheckpointError(f"Deserialized node {show(lines[0])} is not an object node", path)
    if "data_version" not in document:
        raise CheckpointError("Deserialized node does not have data_version field", path)
    version = _short_value(document["data_version"])
    if version not in QUORUM_STATE_VERSIONS:
        raise CheckpointError(f"data_version ({version}) is not within the min (0) and max (1) "
                              "supported version", path)
    values = {}
    for name, kind, mandatory in _QUORUM_FIELDS:
        if name in document:
            values[name] = _quorum_field(name, kind, document[name], path)
        elif version in mandatory:
            raise CheckpointError(f"QuorumStateData: unable to locate field '{name}', which is "
                                  f"mandatory in version {version}", path)
    return QuorumState(version, values["leaderId"], values["leaderEpoch"], values["votedId"],
                       values.get("votedDirectoryId"), values.get("appliedOffset"),
                       values.get("currentVoters"), values.get("clusterId"))


def read_quorum_state(path: str | Path) -> QuorumState:
    return parse_quorum_state(read_small_file(path), path)


def _quorum_field(name: str, kind: str, value, path):
    if kind in ("int32", "int64"):
        limit = _INT32 if kind == "int32" else _INT64
        if isinstance(value, int) and not isinstance(value, bool) and -limit <= value < limit:
            return value
        raise CheckpointError(f"QuorumStateData.{name}: expected an {kind}, got {show(json.dumps(value))}", path)
    if kind == "voters":
        if value is None:
            return None
        if not isinstance(value, list):
            raise CheckpointError(f"QuorumStateData.{name}: expected a JSON array", path)
        voters = (_voter(voter, path) for voter in value)
        return tuple(voters)
    if not isinstance(value, str):
        raise CheckpointError(f"QuorumStateData.{name}: expected a string", path)
    if kind == "uuid":
        try:
            decode_uuid(value)
        except ValueError as exc:
            raise CheckpointError(f"QuorumStateData.{name}: {show(str(exc))}", path) from None
    return value


def _voter(voter, path) -> int:
    if not isinstance(voter, dict) or "voterId" not in voter:
        raise CheckpointError("Voter: unable to locate field 'voterId', which is mandatory in version 0", path)
    return _quorum_field("currentVoters.voterId", "int32", voter["voterId"], path)


def _short_value(value) -> int:
    """Jackson ``JsonNode.shortValue()``: numbers narrowed like a Java cast, anything else 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float):  # Java (short) of a double: to int (saturating, NaN is 0) first
        if math.isnan(value):
            return 0
        value = -_INT32 if value < -_INT32 else _INT32 - 1 if value >= _INT32 else int(value)
    return (value + _INT16) % (1 << 16) - _INT16
