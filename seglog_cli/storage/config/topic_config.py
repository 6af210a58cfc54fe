"""The topic configs that shape a partition's files, with Kafka's defaults and bounds.

A partition's values, as its broker has them (the cluster metadata, server.properties, the
flags), are resolved by :mod:`seglog_cli.storage.config.effective_config`; ``parse_config_args`` is the
flags alone. Only the keys the storage layer uses are known here; bounds are ``LogConfig``'s (``atLeast``), so a value Kafka would
refuse is refused with the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Mapping

from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.log.log_dir_files import parse_java_properties

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


class ConfigError(SeglogError):
    """A topic config Kafka would reject (unknown key, not a number, out of range)."""


@dataclass(frozen=True)
class TopicConfig:
    """Kafka's defaults (``LogConfig``)."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1024 * 1024 + 12  # 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = INT64_MAX
    message_timestamp_after_max_ms: int = 3600000  # 1 hour since Kafka 4.0 (KIP-1030)
    cleanup_policy: str = "delete"
    max_compaction_lag_ms: int = INT64_MAX
    preallocate: bool = False
    retention_ms: int = 7 * 24 * 3600 * 1000  # -1: no time limit
    retention_bytes: int = -1  # -1: no size limit
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    min_cleanable_dirty_ratio: float = 0.5
    file_delete_delay_ms: int = 60000

    @property
    def delete(self) -> bool:
        """``LogConfig.delete``: time and size retention apply (``delete`` in cleanup.policy)."""
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def max_segment_ms(self) -> int:
        """``LogConfig.maxSegmentMs``: for a compacted topic with a max compaction lag, the
        smaller of the two."""
        if "compact" in self.cleanup_policy.split(",") and self.max_compaction_lag_ms > 0:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    def max_index_entries(self, entry_size: int) -> int:
        """How many entries fit in an index of ``segment.index.bytes`` (Kafka rounds the size
        down to a multiple of the entry size)."""
        return self.segment_index_bytes // entry_size

    def with_overrides(self, overrides: dict[str, str]) -> "TopicConfig":
        changes = {}
        for key, text in overrides.items():
            spec = _KEYS.get(key)
            if spec is None:
                raise ConfigError(f"unknown or unsupported topic config {key!r} (known: {', '.join(sorted(_KEYS))})")
            name, kind, low, high = spec
            changes[name] = _parse(key, text.strip(), kind, low, high)
        return replace(self, **changes)


# key -> (field, type, lowest, highest): LogConfig's definitions
_KEYS = {
    "segment.bytes": ("segment_bytes", int, 14, INT32_MAX),
    "segment.ms": ("segment_ms", int, 1, INT64_MAX),
    "segment.jitter.ms": ("segment_jitter_ms", int, 0, INT64_MAX),
    "segment.index.bytes": ("segment_index_bytes", int, 4, INT32_MAX),
    "index.interval.bytes": ("index_interval_bytes", int, 0, INT32_MAX),
    "max.message.bytes": ("max_message_bytes", int, 0, INT32_MAX),
    "message.timestamp.type": ("message_timestamp_type", ("CreateTime", "LogAppendTime"), None, None),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", int, 0, INT64_MAX),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", int, 0, INT64_MAX),
    "cleanup.policy": ("cleanup_policy", str, None, None),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", int, 1, INT64_MAX),
    "preallocate": ("preallocate", bool, None, None),
    "retention.ms": ("retention_ms", int, -1, INT64_MAX),
    "retention.bytes": ("retention_bytes", int, -INT64_MAX - 1, INT64_MAX),  # no bound; < 0: no limit
    "delete.retention.ms": ("delete_retention_ms", int, 0, INT64_MAX),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", int, 0, INT64_MAX),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", float, 0, 1),
    "file.delete.delay.ms": ("file_delete_delay_ms", int, 0, INT64_MAX),
}
assert {spec[0] for spec in _KEYS.values()} == {f.name for f in fields(TopicConfig)}
TOPIC_CONFIG_KEYS = frozenset(_KEYS)


def _parse(key: str, text: str, kind, low, high):
    if kind is int:
        try:
            value = int(text)
        except ValueError:
            raise ConfigError(f"Invalid value {text} for configuration {key}: Not a number of type "
                              f"{'INT' if high == INT32_MAX else 'LONG'}") from None
        if value < low or value > high:
            raise ConfigError(f"Invalid value {value} for configuration {key}: Value must be at least {low}"
                              if value < low else f"Invalid value {value} for configuration {key}: out of range")
        return value
    if kind is float:
        try:
            number = float(text)
        except ValueError:
            raise ConfigError(f"Invalid value {text} for configuration {key}: Not a number of type DOUBLE") from None
        if not low <= number <= high:
            raise ConfigError(f"Invalid value {number} for configuration {key}: Value must be between {low} and {high}")
        return number
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"Invalid value {text} for configuration {key}: Expected value to be either true or false")
        return text.lower() == "true"
    if isinstance(kind, tuple):
        if text not in kind:
            raise ConfigError(f"Invalid value {text} for configuration {key}: String must be one of: {', '.join(kind)}")
        return text
    policies = [p.strip() for p in text.split(",") if p.strip()]
    if not policies or any(p not in ("delete", "compact") for p in policies):
        raise ConfigError(f"Invalid value {text} for configuration {key}: String must be one of: compact, delete")
    return ",".join(policies)


def parse_config_args(pairs: list[str] | None, properties_file: str | Path | None = None,
                      base: TopicConfig = TopicConfig()) -> TopicConfig:
    """``key=value`` arguments over a properties file over ``base``."""
    overrides: dict[str, str] = {}
    if properties_file is not None:
        try:
            text = Path(properties_file).read_text(encoding="latin-1")
        except OSError as exc:
            raise ConfigError(f"cannot read the config file: {exc.strerror}", properties_file) from None
        overrides.update(parse_java_properties(text))
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ConfigError(f"--config wants key=value, got {pair!r}")
        overrides[key.strip()] = value
    return base.with_overrides(overrides)


def config_for(config: "TopicConfig | Mapping[Path, TopicConfig]", partition_dir: str | Path) -> TopicConfig:
    """``config`` itself, or the one a mapping gives the partition in ``partition_dir`` (by
    absolute path; Kafka's defaults when it has none): each topic has its own configs."""
    if isinstance(config, TopicConfig):
        return config
    return config.get(Path(partition_dir).absolute(), TopicConfig())


__all__ = ["ConfigError", "TOPIC_CONFIG_KEYS", "TopicConfig", "config_for", "parse_config_args"]
