"""A partition's topic configs as its KRaft broker resolves them, each value with its source.

Lowest to highest, as Kafka layers them:

1. ``LogConfig``'s defaults (:class:`TopicConfig`);
2. the broker's static ``server.properties`` (``--server-config``): the topic configs' broker
   synonyms (``ServerTopicConfigSynonyms``: ``log.retention.ms`` over ``log.retention.minutes``
   over ``log.retention.hours``, ``KafkaConfig.logRetentionTimeMillis``);
3. the dynamic cluster default: ``CONFIG_RECORD`` resourceType 4 (BROKER), resourceName ``""``;
4. the dynamic config of this broker: resourceType 4, resourceName its ``node.id``
   (``meta.properties``);
5. the topic's own configs: resourceType 2 (TOPIC), resourceName the topic;
6. seglog's ``--config-file`` and ``--config``.

2-4 are overlaid key by key into one broker config (``DynamicBrokerConfig.updateCurrentConfig``)
which is then read through the synonyms; the topic configs go over it (``LogConfig.fromProps``).
``internal.segment.bytes``, when set, is the segment size (``LogConfig.segmentSize()``).

The cluster metadata is the broker's own copy of ``__cluster_metadata-0`` (in the log dir, or
``metadata.log.dir``): the latest KRaft snapshot ``<end offset>-<epoch>.checkpoint`` replayed
as a whole image, then the log's records from the snapshot's end offset on
(``ConfigurationsDelta``: a null value removes a key; ``REMOVE_TOPIC_RECORD`` removes the topic
and its configs). Records of an aborted metadata transaction (``BEGIN_TRANSACTION_RECORD`` ...
``ABORT_TRANSACTION_RECORD``) are dropped, as ``MetadataBatchLoader`` drops them (and those of a
transaction not ended yet are not applied). The image is the engine's one
(:mod:`seglog_cli.storage.metadata`), read with only the record types configs depend on. Offline the
high watermark of the metadata log is unknown, so its last records count as committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from seglog_cli.storage.config.broker_config import BROKER_ONLY, broker_synonym_values
from seglog_cli.storage.log.checkpoints import read_partition_metadata
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.log_dir_files import parse_java_properties, read_meta_properties
from seglog_cli.storage.log.naming import METADATA_TOPIC, parse_partition_dir_name
from seglog_cli.storage.metadata.delta import TRANSACTION_TYPES
from seglog_cli.storage.metadata.image import MetadataImage as ClusterImage
from seglog_cli.storage.metadata.loader import api_keys, load_image
from seglog_cli.storage.config.topic_config import TOPIC_CONFIG_KEYS, ConfigError, TopicConfig

METADATA_DIR = METADATA_TOPIC + "-0"
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # ConfigResource.Type ids
INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"  # LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG
KNOWN_KEYS = TOPIC_CONFIG_KEYS | {INTERNAL_SEGMENT_BYTES}
DEFAULT = "default"


class RetentionRefusedError(SeglogError):
    """Deleting by retention from a topic the broker keeps compact-only: refused, nothing changed."""


# -- the cluster metadata ---------------------------------------------------------------------------

CONFIG_TYPES = ("TOPIC_RECORD", "REMOVE_TOPIC_RECORD", "CONFIG_RECORD") + TRANSACTION_TYPES  # what configs depend on


@dataclass
class MetadataImage:
    """The configs' view of the engine's metadata image (:mod:`seglog_cli.storage.metadata`, one
    image for every reader): topics by name, config resources with each value's origin
    (``snapshot <file>`` or ``__cluster_metadata-0 offset N``), each topic's partitions when read
    with ``partitions=True``. ``image`` is the engine's image itself."""

    directory: Path
    image: ClusterImage = field(default_factory=ClusterImage)
    snapshot: str | None = None
    undecodable: int = 0  # records Kafka's serde refuses (skipped), among the types replayed

    @cached_property
    def topics(self) -> dict[str, str]:
        """name -> topic id (Kafka's base64 text)."""
        return {topic.name: topic_id for topic_id, topic in self.image.topics_by_id.items()}

    @cached_property
    def partitions(self) -> dict[str, set]:
        """topic id -> partition ids (only when read with ``partitions=True``)."""
        return {topic_id: set(topic.partitions) for topic_id, topic in self.image.topics_by_id.items()
                if topic.partitions}

    @property
    def configs(self) -> dict[tuple[int, str], dict[str, tuple[str, str]]]:
        return {resource: self.resource(*resource) for resource in self.image.configs}

    def resource(self, resource_type: int, name: str) -> dict[str, tuple[str, str]]:
        """key -> (value, where it was read) of one config resource."""
        return {key: (value, self.image.config_origin(resource_type, name, key))
                for key, value in self.image.resource(resource_type, name).items()}


def read_metadata_image(directory: str | Path, partitions: bool = False) -> MetadataImage:
    """Replay ``directory`` (a ``__cluster_metadata-0``): the latest snapshot, then the log from
    the snapshot's end offset on (:func:`~seglog_cli.storage.metadata.loader.load_image`), only
    the record types configs depend on. ``partitions``: also each topic's partitions
    (``image.partitions``; a cluster's worth of PARTITION_RECORDs is decoded only when asked)."""
    types = api_keys(CONFIG_TYPES + (("PARTITION_RECORD",) if partitions else ()))
    loaded = load_image(directory, types=types)
    return MetadataImage(Path(directory), loaded.image, loaded.snapshot, loaded.undecodable)


# -- effective values ------------------------------------------------------------------------------

@dataclass(frozen=True)
class ConfigValue:
    """One value that is not Kafka's default, and where it comes from: ``kind`` (``server.properties
    FILE``, ``cluster default``, ``broker N config``, ``topic config``, ``--config``...) and
    ``where`` (the record's offset or snapshot; the broker key it was given as)."""

    key: str
    value: str
    kind: str
    where: str | None = None

    @property
    def source(self) -> str:
        return self.kind if self.where is None else f"{self.kind} ({self.where})"

    def describe(self) -> str:
        """``cleanup.policy=compact (topic config, __cluster_metadata-0 offset 72)``"""
        return f"{self.key}={self.value} ({self.kind}" + ("" if self.where is None else f", {self.where}") + ")"

    def as_dict(self) -> dict:
        return {"key": self.key, "value": self.value, "source": self.source}


@dataclass(frozen=True)
class EffectiveConfig:
    """``config`` as the commands use it; ``values`` the non-default ones with their sources;
    ``cluster_config`` the same without seglog's own flags (what the broker itself runs with);
    ``broker`` the broker-only settings (check interval, cleaner backoff, producer expiration)."""

    partition: Path
    config: TopicConfig
    values: tuple[ConfigValue, ...]
    cluster_config: TopicConfig
    cluster_values: tuple[ConfigValue, ...] = ()  # the values without seglog's flags
    broker: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    metadata_log: Path | None = None

    def value_of(self, key: str) -> ConfigValue | None:
        return next((v for v in self.values if v.key == key), None)

    def as_dict(self) -> list[dict]:
        return [value.as_dict() for value in self.values]


@dataclass
class ConfigSources:
    """What a command was given; :meth:`resolve` gives each partition its :class:`EffectiveConfig`.

    ``overrides``: topic key -> (value, label) from ``--config-file``/``--config`` (highest);
    ``broker_overrides``: broker-only keys given the same way."""

    server_config: Path | None = None
    metadata_log: Path | None = None
    overrides: dict[str, tuple[str, str]] = field(default_factory=dict)
    broker_overrides: dict[str, str] = field(default_factory=dict)
    _images: dict = field(default_factory=dict, repr=False)
    _server: dict | None = field(default=None, repr=False)

    def resolve(self, partition_dir: str | Path | None) -> EffectiveConfig:
        """The configs of the partition in ``partition_dir`` (None: no partition, no cluster
        metadata: defaults, server.properties and the flags)."""
        partition = Path(partition_dir) if partition_dir is not None else Path("-")
        log_dir = partition.absolute().parent
        notes: list[str] = []
        image = self._image(log_dir, notes) if partition_dir is not None else None
        broker_id = _node_id(log_dir, image) if partition_dir is not None else None
        layers = self._broker_layers(image, broker_id)
        topic_values = _topic_layer(image, partition, notes)
        cluster = {**layers, **topic_values}
        flags = {key: ConfigValue(key, value, label) for key, (value, label) in self.overrides.items()}
        cluster_config = _topic_config(cluster, notes)
        config = _topic_config({**cluster, **flags}, notes)
        broker = {key: v.value for key, v in self._raw_broker(image, broker_id).items() if key in BROKER_ONLY}
        broker.update(self.broker_overrides)
        values = tuple(sorted({**cluster, **flags}.values(), key=_key))
        return EffectiveConfig(partition, config, values, cluster_config, tuple(sorted(cluster.values(), key=_key)),
                               broker, tuple(notes), None if image is None else image.directory)

    def _image(self, log_dir: Path, notes: list[str]) -> MetadataImage | None:
        directory = _metadata_dir(self.metadata_log, log_dir)
        if directory is None:
            where = self.metadata_log or log_dir
            notes.append(f"no {METADATA_DIR} in {where} (a ZooKeeper-era log dir, or metadata.log.dir elsewhere: "
                         f"--metadata-log): Kafka's defaults" + (", server.properties" if self.server_config else "")
                         + " and --config are used")
            return None
        if directory not in self._images:
            try:
                self._images[directory] = read_metadata_image(directory)
            except SeglogError as exc:
                self._images[directory] = exc
        image = self._images[directory]
        if isinstance(image, SeglogError):
            notes.append(f"cannot read {directory}: {image}; its configs are not used")
            return None
        if image.undecodable:
            notes.append(f"{directory}: {image.undecodable} record(s) Kafka cannot decode were skipped")
        return image

    def _server_properties(self) -> dict[str, str]:
        if self._server is None:
            self._server = {}
            if self.server_config is not None:
                try:
                    text = Path(self.server_config).read_text(encoding="latin-1")
                except OSError as exc:
                    raise ConfigError(f"cannot read the server config: {exc.strerror}", self.server_config) from None
                self._server = parse_java_properties(text)
        return self._server

    def _raw_broker(self, image: MetadataImage | None, broker_id: int | None) -> dict[str, ConfigValue]:
        """The broker config, key by key: static < cluster default < this broker's dynamic config."""
        raw = {key: ConfigValue(key, value, f"server.properties {self.server_config}")
               for key, value in self._server_properties().items()}
        dynamic = [("", "cluster default")] + ([] if broker_id is None else [(str(broker_id), f"broker {broker_id} config")])
        for name, kind in dynamic if image is not None else []:
            for key, (value, where) in image.resource(BROKER_RESOURCE, name).items():
                raw[key] = ConfigValue(key, value, kind, where)
        return raw

    def _broker_layers(self, image: MetadataImage | None, broker_id: int | None) -> dict[str, ConfigValue]:
        raw = self._raw_broker(image, broker_id)
        out = {}
        for topic_key, (value, broker_key) in broker_synonym_values({k: v.value for k, v in raw.items()}).items():
            given = raw[broker_key]
            where = broker_key if given.where is None else f"{given.where}: {broker_key}"
            where = f"{where}={given.value}" if given.value != value else where  # log.retention.hours=1
            out[topic_key] = ConfigValue(topic_key, value, given.kind, where)
        return out


def _key(value: ConfigValue) -> str:
    return value.key


def _metadata_dir(option: Path | None, log_dir: Path) -> Path | None:
    """``--metadata-log`` (the ``__cluster_metadata-0`` dir, or the log dir holding it), else
    the one beside the partition."""
    for candidate in ([Path(option), Path(option) / METADATA_DIR] if option is not None else [log_dir / METADATA_DIR]):
        if candidate.is_dir() and candidate.name == METADATA_DIR:
            return candidate.absolute()
    return None


def _node_id(log_dir: Path, image: MetadataImage | None) -> int | None:
    """``node.id`` from the log dir's ``meta.properties`` (else the metadata log dir's)."""
    places = [log_dir] + ([] if image is None else [image.directory.parent])
    for place in places:
        try:
            return read_meta_properties(place / "meta.properties").node_id
        except (SeglogError, OSError):
            continue
    return None


def _topic_layer(image: MetadataImage | None, partition: Path, notes: list[str]) -> dict[str, ConfigValue]:
    name = parse_partition_dir_name(partition.absolute().name)
    if image is None or name is None:
        return {}
    topic = name.topic
    known_id = image.topics.get(topic)
    if known_id is None:
        notes.append(f"topic {topic!r} is not in {image.directory.name} (deleted, or never created there): "
                     "no topic configs")
        return {}
    local_id = _local_topic_id(partition)
    if local_id is not None and local_id != known_id:
        notes.append(f"topic id mismatch: {partition.name}/partition.metadata has {local_id}, "
                     f"{image.directory.name} has topic {topic!r} as {known_id} (deleted and re-created?): "
                     "its topic configs are not used")
        return {}
    return {key: ConfigValue(key, value, "topic config", where)
            for key, (value, where) in image.resource(TOPIC_RESOURCE, topic).items() if key in KNOWN_KEYS}


def _local_topic_id(partition: Path) -> str | None:
    path = partition / "partition.metadata"
    if not path.is_file():
        return None
    try:
        return read_partition_metadata(path).topic_id
    except SeglogError:
        return None


def _topic_config(values: dict[str, ConfigValue], notes: list[str]) -> TopicConfig:
    """``LogConfig`` of these values over the defaults; a value Kafka would refuse is noted and
    left out. ``internal.segment.bytes`` is the segment size when set (``segmentSize()``)."""
    config = TopicConfig()
    for key, value in values.items():
        target = "segment.bytes" if key == INTERNAL_SEGMENT_BYTES else key
        if key == "segment.bytes" and INTERNAL_SEGMENT_BYTES in values:
            continue
        try:
            config = config.with_overrides({target: value.value})
        except ConfigError as exc:
            note = f"{value.describe()} is not used: {exc.message}"
            if note not in notes:
                notes.append(note)
    return config


def configs_by_partition(resolved: list[EffectiveConfig]) -> "TopicConfig | dict[Path, TopicConfig]":
    """What an engine call over these partitions takes: one config when they all have the same,
    else each partition dir's (absolute path) own (``topic_config.config_for``)."""
    configs = {effective.partition.absolute(): effective.config for effective in resolved}
    distinct = set(configs.values())
    return distinct.pop() if len(distinct) == 1 else configs


def compact_only_refusal(effective: EffectiveConfig, rules: set[str]) -> str | None:
    """Why deleting segments by ``rules`` (``retention.ms``, ``retention.bytes``) must not be
    done: the broker's own cleanup.policy has no ``delete`` (``UnifiedLog.deleteOldSegments``
    runs the time and size walks only when ``config.delete``), whatever ``--config`` simulates."""
    rules = rules & {"retention.ms", "retention.bytes"}
    policy = effective.cluster_config
    if not rules or policy.delete:
        return None
    given = next((v for v in effective.cluster_values if v.key == "cleanup.policy"), None)
    setting = f"cleanup.policy={policy.cleanup_policy}" if given is None else given.describe()
    return (f"refusing to delete segments of {effective.partition.name} by {' and '.join(sorted(rules))}: the "
            f"broker has {setting} and never deletes such segments by retention; nothing was changed")


def overrides_from(pairs: dict[str, str], label: str) -> dict[str, tuple[str, str]]:
    """Topic keys given on the command line or in a file, labelled with where they came from."""
    return {key: (value, label) for key, value in pairs.items()}


__all__ = ["ConfigSources", "RetentionRefusedError", "compact_only_refusal", "configs_by_partition", "ConfigValue", "EffectiveConfig", "MetadataImage",
           "overrides_from", "read_metadata_image"]
