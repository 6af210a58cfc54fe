"""The start-up preview: what a KRaft broker does with each partition dir of its log dirs when it
publishes its first metadata image after catching up (``LogManager`` / ``ReplicaManager``).

Kafka 4.2 (``LogManager.isStrayKraftReplica``, then ``ReplicaManager.applyDelta``) asks, for
each ``<topic>-<partition>`` dir it loaded (``-delete``, ``-future`` and ``-stray`` dirs and
``__cluster_metadata-0`` aside):

* no topic id (no ``partition.metadata``): stray ("The topicId does not exist in Log(...),
  treat it as a stray log");
* a topic id the image does not have (the topic was deleted, or deleted and re-created with a
  new id): stray;
* a topic id the image has, whose partition's replicas do not hold the broker: stray;
* otherwise kept, and the follower (or leader) resumes from its log end offset.

A stray dir is renamed ``<topic>-<p>.<32 hex>-stray`` and kept on disk (Kafka 4.2 never deletes
it). Then every partition the image assigns to the broker that has no kept dir is created
empty and fetched from the leader from offset 0. With several log dirs (JBOD), a kept dir in a
log dir whose ``directory.id`` is not the partition's assigned directory is reported (the
broker keeps the log where it is and tells the controller where it sits,
AssignReplicasToDirs).

The record that decided each outcome is found by replaying the metadata log with an observer:
the ``RemoveTopicRecord`` of a topic id, the ``PartitionRecord``/``PartitionChangeRecord`` that
set replicas without (or with) the broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from seglog_cli.storage.log.checkpoints import read_partition_metadata
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.findings import Code, Finding, Severity
from seglog_cli.storage.log.log_dir_files import read_meta_properties
from seglog_cli.storage.log.naming import METADATA_TOPIC, parse_partition_dir_name
from seglog_cli.storage.log.partition_log import LogDir
from seglog_cli.storage.metadata.image import MIGRATING_DIRECTORY, MetadataImage
from seglog_cli.storage.metadata.loader import LoadedImage, _log_end, load_image, log_segments

KEPT, STRAY, CREATED = "kept", "stray", "created"
NO_TOPIC_ID, TOPIC_ID_NOT_IN_IMAGE, NOT_A_REPLICA = "no_topic_id", "topic_id_not_in_image", "not_a_replica"
UNASSIGNED_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAQ"  # DirectoryId.UNASSIGNED, Uuid(0, 1)
LOST_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAg"  # DirectoryId.LOST, Uuid(0, 2)
RESERVED_DIRECTORIES = {MIGRATING_DIRECTORY, UNASSIGNED_DIRECTORY, LOST_DIRECTORY}


@dataclass(frozen=True)
class Decider:
    """The metadata record that decided an outcome: its offset, batch time and type."""

    offset: int
    timestamp: int
    record: str

    def as_dict(self) -> dict:
        return {"offset": self.offset, "timestamp": self.timestamp, "record": self.record}

    def text(self) -> str:
        return f"{self.record} at offset {self.offset}"


@dataclass(frozen=True)
class PartitionOutcome:
    """One partition dir (or, for ``created``, one partition without a dir) at start-up."""

    topic: str
    partition: int
    outcome: str  # kept, stray, created
    path: Path  # the dir, or where the created one will be
    topic_id: str | None = None  # the dir's (kept, stray) or the image's (created)
    reason: str | None = None  # stray: no_topic_id, topic_id_not_in_image, not_a_replica
    replicas: tuple[int, ...] | None = None  # the image's replicas of the partition
    decided_by: Decider | None = None
    resume_offset: int | None = None  # kept: the log end offset the replica resumes from
    assigned_directory: str | None = None  # JBOD: the image's directory id for this broker
    directory_id: str | None = None  # JBOD: the directory.id of the log dir the dir sits in

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def wrong_directory(self) -> bool:
        return (self.outcome == KEPT and self.assigned_directory not in (None, *RESERVED_DIRECTORIES)
                and self.directory_id is not None and self.assigned_directory != self.directory_id)

    def kafka_reason(self, broker_id: int) -> str | None:
        """The reason as Kafka's INFO line words it."""
        if self.reason == NO_TOPIC_ID:
            return "The topicId does not exist in the log (no partition.metadata), treat it as a stray log"
        if self.reason == TOPIC_ID_NOT_IN_IMAGE:
            return f"the topicId {self.topic_id} does not exist in the metadata image"
        if self.reason == NOT_A_REPLICA:
            replicas = ", ".join(str(r) for r in self.replicas or ())
            return f"the current replica assignment [{replicas}] does not contain the local brokerId {broker_id}"
        return None

    def as_dict(self, broker_id: int) -> dict:
        return {"topic": self.topic, "partition": self.partition, "outcome": self.outcome,
                "path": str(self.path), "topicId": self.topic_id, "reason": self.reason,
                "kafkaReason": self.kafka_reason(broker_id),
                "replicas": None if self.replicas is None else list(self.replicas),
                "decidedBy": None if self.decided_by is None else self.decided_by.as_dict(),
                "resumeOffset": self.resume_offset, "assignedDirectory": self.assigned_directory,
                "directoryId": self.directory_id, "wrongDirectory": self.wrong_directory}


@dataclass
class StartupPreview:
    """Every partition dir's outcome, and which metadata log it was judged against: ``metadata_dir``
    up to ``end_offset`` (its last record's batch time ``end_timestamp``); ``own_copy``: the
    broker's own metadata log, which the restart first catches up past."""

    broker_id: int
    log_dirs: list[Path]
    metadata_dir: Path
    end_offset: int
    end_timestamp: int
    snapshot: str | None
    own_copy: bool
    outcomes: list[PartitionOutcome] = field(default_factory=list)

    def of(self, outcome: str) -> list[PartitionOutcome]:
        return [o for o in self.outcomes if o.outcome == outcome]

    @property
    def source_text(self) -> str:
        """Which copy was read and up to where: ``<dir> up to offset N (time T)``."""
        when = "" if self.end_timestamp < 0 else f", last record at {utc_text(self.end_timestamp)}"
        return f"{self.metadata_dir} up to offset {self.end_offset}{when}"

    def findings(self) -> list[Finding]:
        """The preview as findings: a dir going stray, a partition created empty, a dir outside its
        assigned directory; when there are any and the preview was judged against the broker's
        own metadata log, a finding saying so (the preview's header says it in every case, so a
        healthy stopped broker's verify stays without findings)."""
        out = []
        for o in self.outcomes:
            by = "" if o.decided_by is None else f" ({o.decided_by.text()} of {self.metadata_dir.name})"
            if o.outcome == STRAY:
                out.append(Finding(Code.PARTITION_GOES_STRAY, Severity.WARNING, str(o.path), None,
                                   f"marked stray at start-up: {o.kafka_reason(self.broker_id)}{by}; renamed "
                                   f"{o.name}.<uuid>-stray and kept, its records no longer served"))
            elif o.outcome == CREATED:
                out.append(Finding(Code.PARTITION_CREATED_EMPTY, Severity.INFO, str(o.path), None,
                                   f"topic id {o.topic_id}, replicas {list(o.replicas or ())}{by}: created empty "
                                   "at start-up and fetched from the leader from offset 0"))
            elif o.wrong_directory:
                out.append(Finding(Code.PARTITION_WRONG_LOG_DIR, Severity.WARNING, str(o.path), None,
                                   f"assigned to directory {o.assigned_directory}{by}, sits in {o.directory_id}: "
                                   "the broker loads it here and tells the controller"))
        if out and self.own_copy:
            out.insert(0, Finding(Code.PREVIEW_FROM_OWN_METADATA, Severity.INFO, str(self.metadata_dir), None,
                                  f"judged against broker {self.broker_id}'s own metadata log, which ends at offset "
                                  f"{self.end_offset}: the restart first catches up past it; give --metadata-log "
                                  "with a controller's current copy"))
        return out

    def as_dict(self) -> dict:
        return {"brokerId": self.broker_id, "logDirs": [str(d) for d in self.log_dirs],
                "metadataLog": str(self.metadata_dir), "endOffset": self.end_offset,
                "endTimestamp": self.end_timestamp, "snapshot": self.snapshot, "ownCopy": self.own_copy,
                "partitions": [o.as_dict(self.broker_id) for o in self.outcomes]}


def utc_text(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class DeciderObserver:
    """Hears the metadata log's partition changes: per topic id its ``RemoveTopicRecord``, per
    (topic id, partition) the last record that set its replicas and the last that set its
    directories."""

    def __init__(self):
        self.removed: dict[str, Decider] = {}
        self.replicas_set: dict[tuple[str, int], Decider] = {}
        self.directories_set: dict[tuple[str, int], Decider] = {}

    def partition_changed(self, offset, timestamp, topic, partition, before, after, record):
        if after is None:
            self.removed[topic.topic_id] = Decider(offset, timestamp, record)
        else:
            if before is None or before.replicas != after.replicas:
                self.replicas_set[(topic.topic_id, partition)] = Decider(offset, timestamp, record)
            if before is None or before.directories != after.directories:
                self.directories_set[(topic.topic_id, partition)] = Decider(offset, timestamp, record)

    def broker_changed(self, offset, timestamp, broker_id, before, after, record):
        pass


@dataclass(frozen=True)
class BrokerLogDir:
    """One ``log.dirs`` entry: its path and its ``meta.properties`` node id and directory id."""

    path: Path
    node_id: int | None
    directory_id: str | None


def read_broker_log_dir(path: str | Path) -> BrokerLogDir:
    path = Path(path)
    try:
        meta = read_meta_properties(path / "meta.properties")
    except (SeglogError, OSError):
        return BrokerLogDir(path, None, None)
    return BrokerLogDir(path, meta.node_id, meta.directory_id)


def broker_metadata_dir(log_dirs: list[BrokerLogDir]) -> Path | None:
    """The broker's own ``__cluster_metadata-0`` in one of its log dirs (``metadata.log.dir``)."""
    for log_dir in log_dirs:
        candidate = log_dir.path / f"{METADATA_TOPIC}-0"
        if candidate.is_dir():
            return candidate
    return None


def previews_for(paths: list[str | Path], metadata_log: str | Path | None = None) -> list[StartupPreview]:
    """The previews of the KRaft brokers whose log dirs are among ``paths``: a log dir with a
    ``node.id`` in ``meta.properties`` (the dirs of one node together, JBOD), given a metadata log
    (``metadata_log``, else a ``__cluster_metadata-0`` in one of its dirs). A node with no partition
    dir and none assigned to it (a controller) gets none; nor does one whose own metadata log
    cannot be read when ``metadata_log`` is not given."""
    nodes: dict[int, list[BrokerLogDir]] = {}
    for path in paths:
        log_dir = read_broker_log_dir(path) if Path(path).is_dir() else None
        if log_dir is not None and log_dir.node_id is not None:
            nodes.setdefault(log_dir.node_id, []).append(log_dir)
    out = []
    for node_id, dirs in nodes.items():
        if metadata_log is None and broker_metadata_dir(dirs) is None:
            continue
        try:
            preview = preview_startup([d.path for d in dirs], metadata_log, node_id)
        except SeglogError:
            if metadata_log is not None:
                raise
            continue  # its own metadata log unreadable: verify reports that log itself
        if preview.outcomes:
            out.append(preview)
    return out


def preview_startup(log_dirs: list[str | Path], metadata_log: str | Path | None = None,
                    broker_id: int | None = None, at_offset: int | None = None) -> StartupPreview:
    """The start-up preview of the broker whose ``log.dirs`` are ``log_dirs`` against the metadata
    log in ``metadata_log`` (a ``__cluster_metadata-0`` dir or a log dir holding one; default: the
    broker's own) below ``at_offset`` (default its end). ``broker_id``: default the ``node.id`` of
    ``meta.properties``."""
    dirs = [read_broker_log_dir(d) for d in log_dirs]
    if broker_id is None:
        broker_id = next((d.node_id for d in dirs if d.node_id is not None), None)
    if broker_id is None:
        raise SeglogError(f"no node.id in meta.properties of {', '.join(str(d.path) for d in dirs)}")
    source = metadata_log if metadata_log is not None else broker_metadata_dir(dirs)
    if source is None:
        raise SeglogError("no __cluster_metadata-0 in the log dirs: give --metadata-log DIR")
    observer = DeciderObserver()
    loaded = load_image(source, at_offset, observer=observer, from_start=True)
    return assess(dirs, broker_id, loaded, observer)


def assess(dirs: list[BrokerLogDir], broker_id: int, loaded: LoadedImage,
           observer: DeciderObserver | None = None) -> StartupPreview:
    """The outcomes of ``dirs`` against ``loaded`` (``observer``: the one it was loaded with)."""
    observer = observer or DeciderObserver()
    own = _is_own_copy(dirs, broker_id, loaded)
    image = loaded.image
    preview = StartupPreview(broker_id, [d.path for d in dirs], loaded.directory, loaded.end_offset,
                             image.provenance.timestamp, loaded.snapshot, own)
    kept = set()
    for log_dir in dirs:
        for path in LogDir(log_dir.path).partition_dirs():
            name = parse_partition_dir_name(path.name)
            if name is None or name.kind != "current" or name.topic == METADATA_TOPIC:
                continue
            outcome = _judge(path, name.topic, name.partition, log_dir, broker_id, image, observer)
            preview.outcomes.append(outcome)
            if outcome.outcome == KEPT:
                kept.add((name.topic, name.partition))
    preview.outcomes.extend(_created(dirs, broker_id, image, observer, kept))
    return preview


def _is_own_copy(dirs: list[BrokerLogDir], broker_id: int, loaded: LoadedImage) -> bool:
    directory = loaded.directory.resolve()
    return any(directory.parent == d.path.resolve() for d in dirs) or loaded.node_id == broker_id


def _judge(path: Path, topic: str, partition: int, log_dir: BrokerLogDir, broker_id: int,
           image: MetadataImage, observer: DeciderObserver) -> PartitionOutcome:
    try:
        topic_id = read_partition_metadata(path / "partition.metadata").topic_id
    except (SeglogError, OSError):  # absent; an unreadable one fails the log's load (verify says so)
        return PartitionOutcome(topic, partition, STRAY, path, None, NO_TOPIC_ID)
    topic_image = image.topics_by_id.get(topic_id)
    registration = None if topic_image is None else topic_image.partitions.get(partition)
    if registration is None:
        return PartitionOutcome(topic, partition, STRAY, path, topic_id, TOPIC_ID_NOT_IN_IMAGE,
                                decided_by=observer.removed.get(topic_id))
    if broker_id not in registration.replicas:
        return PartitionOutcome(topic, partition, STRAY, path, topic_id, NOT_A_REPLICA, registration.replicas,
                                observer.replicas_set.get((topic_id, partition)))
    assigned = registration.directories[registration.replicas.index(broker_id)] \
        if len(registration.directories) == len(registration.replicas) else None
    outcome = PartitionOutcome(topic, partition, KEPT, path, topic_id, None, registration.replicas,
                               observer.replicas_set.get((topic_id, partition)), _log_end(log_segments(path)),
                               assigned, log_dir.directory_id)
    if outcome.wrong_directory:  # decided by the record that set the directories
        outcome = replace(outcome, decided_by=observer.directories_set.get((topic_id, partition)))
    return outcome


def _created(dirs: list[BrokerLogDir], broker_id: int, image: MetadataImage, observer: DeciderObserver,
             kept: set) -> list[PartitionOutcome]:
    by_id = {d.directory_id: d.path for d in dirs if d.directory_id}
    out = []
    for topic in sorted(image.topics_by_id.values(), key=lambda t: t.name):
        for partition, registration in sorted(topic.partitions.items()):
            if broker_id not in registration.replicas or (topic.name, partition) in kept:
                continue
            assigned = registration.directories[registration.replicas.index(broker_id)] \
                if len(registration.directories) == len(registration.replicas) else None
            where = by_id.get(assigned, dirs[0].path)
            out.append(PartitionOutcome(topic.name, partition, CREATED, where / f"{topic.name}-{partition}",
                                        topic.topic_id, None, registration.replicas,
                                        observer.replicas_set.get((topic.topic_id, partition)), 0, assigned))
    return out
