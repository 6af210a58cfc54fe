"""The cluster metadata image, as ``org.apache.kafka.image.MetadataImage`` holds it.

A :class:`MetadataImage` is what a node knows after replaying ``__cluster_metadata-0`` up to
some offset: topics (by id and by name, each partition a :class:`PartitionRegistration`), the
cluster (:class:`BrokerRegistration`, :class:`ControllerRegistration`), finalized features,
configs by resource, client quotas, SCRAM users (names and mechanisms only: the salt, keys and
iterations are never kept), ACLs, delegation token ids and the next producer id.

Registrations are frozen value objects; :mod:`~seglog_cli.storage.metadata.delta` replaces them
as records are replayed (``PartitionRegistration.merge``, ``BrokerRegistration.cloneWith``).
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field, replace

NO_LEADER = -1  # LeaderConstants.NO_LEADER
NO_LEADER_CHANGE = -2  # LeaderConstants.NO_LEADER_CHANGE
RECOVERED, RECOVERING = 0, 1  # LeaderRecoveryState
LEADER_RECOVERY_STATES = {RECOVERED: "RECOVERED", RECOVERING: "RECOVERING"}
MIGRATING_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAA"  # DirectoryId.MIGRATING, Uuid(0, 0)
# ConfigResource.Type ids
CONFIG_RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}  # ScramMechanism.type
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
# MetadataVersion: feature level -> release name (metadata.version)
METADATA_VERSIONS = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2", 7: "3.3-IV3",
    8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0", 13: "3.6-IV1", 14: "3.6-IV2",
    15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3", 19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0",
    22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2", 25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0",
    29: "4.2-IV1",
}
METADATA_VERSION = "metadata.version"


def uuid_order(text: str) -> tuple[int, int]:
    """``Uuid.compareTo``: the most then the least significant 64 bits, as signed longs
    (``BrokerRegistration`` keeps its directories sorted so)."""
    raw = base64.urlsafe_b64decode(text + "==")
    return struct.unpack(">qq", raw) if len(raw) == 16 else (0, 0)


def _ints(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


@dataclass(frozen=True)
class PartitionRegistration:
    """One partition's replicas, ISR, ELR, leader and epochs (``PartitionRegistration``)."""

    replicas: tuple[int, ...]
    directories: tuple[str, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: int = RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0

    @classmethod
    def from_record(cls, data: dict) -> "PartitionRegistration":
        """A ``PartitionRecord``'s registration (directories default to MIGRATING)."""
        replicas = tuple(data["replicas"])
        return cls(replicas, _directories(data.get("directories"), len(replicas)), tuple(data["isr"]),
                   tuple(data.get("removing_replicas") or ()), tuple(data.get("adding_replicas") or ()),
                   tuple(data.get("eligible_leader_replicas") or ()), tuple(data.get("last_known_elr") or ()),
                   data.get("leader", NO_LEADER), data.get("leader_recovery_state", RECOVERED),
                   data.get("leader_epoch", -1), data.get("partition_epoch", -1))

    def merge(self, change: dict) -> "PartitionRegistration":
        """This registration after a ``PartitionChangeRecord`` (``PartitionRegistration.merge``): a
        field absent (null) is unchanged; a leader other than NO_LEADER_CHANGE (-2), even the same
        one or NO_LEADER (-1), bumps the leader epoch; the partition epoch always goes up."""
        state = dict(self.__dict__)  # the fields, changed below as the record says
        for key, name in _MERGED_LISTS:
            value = change.get(key)
            if value is not None:
                state[name] = tuple(value)
        directories = change.get("directories")
        if directories is not None or state["replicas"] is not self.replicas:
            state["directories"] = _directories(self.directories if directories is None else tuple(directories),
                                                len(state["replicas"]))
        leader = change.get("leader", NO_LEADER_CHANGE)
        if leader != NO_LEADER_CHANGE:
            state["leader"] = leader
            state["leader_epoch"] = self.leader_epoch + 1
        recovery = change.get("leader_recovery_state", -1)
        if recovery != -1:
            state["leader_recovery_state"] = recovery
        state["partition_epoch"] = self.partition_epoch + 1
        return PartitionRegistration(**state)  # built by __init__: its instance dict shares its keys (~400 B less)

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @property
    def recovery_state_name(self) -> str:
        return LEADER_RECOVERY_STATES.get(self.leader_recovery_state, str(self.leader_recovery_state))

    def kafka_text(self) -> str:
        """``PartitionRegistration.toString()``, as kafka-metadata-shell prints it."""
        return (f"PartitionRegistration(replicas={_ints(self.replicas)}, directories=[{', '.join(self.directories)}], "
                f"isr={_ints(self.isr)}, removingReplicas={_ints(self.removing_replicas)}, "
                f"addingReplicas={_ints(self.adding_replicas)}, elr={_ints(self.elr)}, "
                f"lastKnownElr={_ints(self.last_known_elr)}, leader={self.leader}, "
                f"leaderRecoveryState={self.recovery_state_name}, leaderEpoch={self.leader_epoch}, "
                f"partitionEpoch={self.partition_epoch})")

    def as_dict(self) -> dict:
        return {"leader": self.leader, "leaderEpoch": self.leader_epoch, "partitionEpoch": self.partition_epoch,
                "replicas": list(self.replicas), "isr": list(self.isr), "elr": list(self.elr),
                "lastKnownElr": list(self.last_known_elr), "removingReplicas": list(self.removing_replicas),
                "addingReplicas": list(self.adding_replicas), "leaderRecoveryState": self.recovery_state_name,
                "directories": list(self.directories)}


# PartitionChangeRecord's list fields and the registration's: null leaves one as it is
_MERGED_LISTS = (("replicas", "replicas"), ("isr", "isr"), ("removing_replicas", "removing_replicas"),
                 ("adding_replicas", "adding_replicas"), ("eligible_leader_replicas", "elr"),
                 ("last_known_elr", "last_known_elr"))


def _directories(directories, replica_count: int) -> tuple[str, ...]:
    """``defaultToMigrating``: no directories, or only MIGRATING ones, means each replica's is
    MIGRATING (as many as there are replicas)."""
    if all(directory == MIGRATING_DIRECTORY for directory in directories or ()):
        return (MIGRATING_DIRECTORY,) * replica_count
    return tuple(directories)


@dataclass
class TopicImage:
    """A topic: name, id (Kafka's base64 text) and partitions by id."""

    name: str
    topic_id: str
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"name": self.name, "topicId": self.topic_id,
                "partitions": {str(p): r.as_dict() for p, r in sorted(self.partitions.items())}}


@dataclass(frozen=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int

    def kafka_text(self) -> str:
        protocol = SECURITY_PROTOCOLS.get(self.security_protocol, str(self.security_protocol))
        return f"Endpoint(listenerName='{self.name}', securityProtocol={protocol}, host='{self.host}', port={self.port})"


def _listener_name(endpoint: Endpoint) -> str:
    return endpoint.name  # toString lists the listeners by name


def _endpoints(data) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(e["name"], e["host"], e["port"], e["security_protocol"]) for e in data or ())


def _features(data) -> tuple[tuple[str, int, int], ...]:
    return tuple(sorted((f["name"], f["min_supported_version"], f["max_supported_version"]) for f in data or ()))


def _features_text(features) -> str:
    return "{" + ", ".join(f"{name}: {low}-{high}" for name, low, high in features) + "}"


@dataclass(frozen=True)
class BrokerRegistration:
    """A broker as registered (``BrokerRegistration``): epoch, incarnation, listeners, rack,
    fencing, controlled shutdown and log directories."""

    id: int
    epoch: int
    incarnation_id: str
    listeners: tuple[Endpoint, ...]
    supported_features: tuple[tuple[str, int, int], ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool = False
    directories: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, data: dict) -> "BrokerRegistration":
        return cls(data["broker_id"], data["broker_epoch"], data["incarnation_id"], _endpoints(data["end_points"]),
                   _features(data["features"]), data.get("rack"), data.get("fenced", True),
                   data.get("in_controlled_shutdown", False), data.get("is_migrating_zk_broker", False),
                   tuple(sorted(data.get("log_dirs") or (), key=uuid_order)))

    def with_changes(self, fenced: bool | None = None, in_controlled_shutdown: bool | None = None,
                     directories=None) -> "BrokerRegistration":
        """``cloneWith``: None leaves a field as it is."""
        return replace(self, fenced=self.fenced if fenced is None else fenced,
                       in_controlled_shutdown=(self.in_controlled_shutdown if in_controlled_shutdown is None
                                               else in_controlled_shutdown),
                       directories=self.directories if directories is None else tuple(sorted(directories, key=uuid_order)))

    def kafka_text(self) -> str:
        rack = "Optional.empty" if self.rack is None else f"Optional[{self.rack}]"
        return (f"BrokerRegistration(id={self.id}, epoch={self.epoch}, incarnationId={self.incarnation_id}, "
                f"listeners=[{', '.join(e.kafka_text() for e in sorted(self.listeners, key=_listener_name))}], "
                f"supportedFeatures={_features_text(self.supported_features)}, rack={rack}, "
                f"fenced={str(self.fenced).lower()}, inControlledShutdown={str(self.in_controlled_shutdown).lower()}, "
                f"isMigratingZkBroker={str(self.is_migrating_zk_broker).lower()}, "
                f"directories=[{', '.join(self.directories)}])")

    def as_dict(self) -> dict:
        return {"id": self.id, "epoch": self.epoch, "incarnationId": self.incarnation_id,
                "listeners": [f"{e.name}://{e.host}:{e.port}" for e in self.listeners], "rack": self.rack,
                "fenced": self.fenced, "inControlledShutdown": self.in_controlled_shutdown,
                "directories": list(self.directories)}


@dataclass(frozen=True)
class ControllerRegistration:
    id: int
    incarnation_id: str
    zk_migration_ready: bool
    listeners: tuple[Endpoint, ...]
    supported_features: tuple[tuple[str, int, int], ...]

    @classmethod
    def from_record(cls, data: dict) -> "ControllerRegistration":
        return cls(data["controller_id"], data["incarnation_id"], data["zk_migration_ready"],
                   _endpoints(data["end_points"]), _features(data["features"]))

    def kafka_text(self) -> str:
        return (f"ControllerRegistration(id={self.id}, incarnationId={self.incarnation_id}, "
                f"zkMigrationReady={str(self.zk_migration_ready).lower()}, "
                f"listeners=[{', '.join(e.kafka_text() for e in sorted(self.listeners, key=_listener_name))}], "
                f"supportedFeatures={_features_text(self.supported_features)})")

    def as_dict(self) -> dict:
        return {"id": self.id, "incarnationId": self.incarnation_id,
                "listeners": [f"{e.name}://{e.host}:{e.port}" for e in self.listeners]}


@dataclass(frozen=True)
class AclEntry:
    """An ``AccessControlEntryRecord`` (its numeric enums as Kafka stores them)."""

    id: str
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True)
class Provenance:
    """Where an image ends: the last record applied (offset, its batch's max timestamp) and the
    snapshot it started from, if any."""

    offset: int = -1
    timestamp: int = -1
    snapshot: str | None = None


@dataclass
class MetadataImage:
    """The whole image. ``configs`` maps (resource type, name) -> {key: value}; ``config_origins``
    the same keys to where each value was read (``snapshot <file>`` or ``<dir> offset N``);
    ``client_quotas`` maps an entity (tuple of (entity type, name) pairs, sorted) -> {key: value};
    ``scram`` user -> set of mechanism names."""

    topics_by_id: dict[str, TopicImage] = field(default_factory=dict)
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    controllers: dict[int, ControllerRegistration] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    config_origins: dict[tuple[int, str, str], str] = field(default_factory=dict)
    client_quotas: dict[tuple, dict[str, float]] = field(default_factory=dict)
    scram: dict[str, set[str]] = field(default_factory=dict)
    acls: dict[str, AclEntry] = field(default_factory=dict)
    delegation_tokens: set[str] = field(default_factory=set)
    next_producer_id: int = -1
    provenance: Provenance = field(default_factory=Provenance)

    @property
    def topics_by_name(self) -> dict[str, TopicImage]:
        return {topic.name: topic for topic in self.topics_by_id.values()}

    def topic(self, name: str) -> TopicImage | None:
        return next((t for t in self.topics_by_id.values() if t.name == name), None)

    def partition(self, topic: str, partition: int) -> PartitionRegistration | None:
        image = self.topic(topic)
        return None if image is None else image.partitions.get(partition)

    @property
    def metadata_version(self) -> str | None:
        level = self.features.get(METADATA_VERSION)
        return None if level is None else METADATA_VERSIONS.get(level, f"level {level}")

    def resource(self, resource_type: int, name: str) -> dict[str, str]:
        return self.configs.get((resource_type, name), {})

    def config_origin(self, resource_type: int, name: str, key: str) -> str | None:
        return self.config_origins.get((resource_type, name, key))

    def as_dict(self) -> dict:
        return {
            "provenance": {"offset": self.provenance.offset, "timestamp": self.provenance.timestamp,
                           "snapshot": self.provenance.snapshot},
            "features": {**{k: v for k, v in sorted(self.features.items())},
                         **({"metadata.version.name": self.metadata_version} if self.metadata_version else {})},
            "brokers": [b.as_dict() for _, b in sorted(self.brokers.items())],
            "controllers": [c.as_dict() for _, c in sorted(self.controllers.items())],
            "topics": [t.as_dict() for t in sorted(self.topics_by_id.values(), key=_topic_name)],
            "configs": [{"resourceType": CONFIG_RESOURCE_TYPES.get(t, str(t)), "resourceName": n, "configs": dict(v)}
                        for (t, n), v in sorted(self.configs.items())],
            "clientQuotas": [{"entity": [list(e) for e in entity], "quotas": dict(q)}
                              for entity, q in sorted(self.client_quotas.items(), key=_quota_key)],
            "scramUsers": {user: sorted(m) for user, m in sorted(self.scram.items())},
            "acls": len(self.acls),
            "delegationTokens": sorted(self.delegation_tokens),
            "nextProducerId": self.next_producer_id,
        }


def _topic_name(topic: TopicImage) -> str:
    return topic.name


def _quota_key(item) -> str:
    return repr(item[0])
