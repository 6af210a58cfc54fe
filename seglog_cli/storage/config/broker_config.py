"""Broker settings (``server.properties``) as the topic configs they default, plus the few
broker-only settings retention and the cleaner use.

A topic config left unset takes the broker's ``log.*`` synonym (``LogConfig`` /
``ServerTopicConfigSynonyms``): ``log.retention.ms`` over ``log.retention.minutes`` over
``log.retention.hours`` for ``retention.ms``, ``log.roll.ms`` over ``log.roll.hours`` for
``segment.ms``. A topic key given next to its broker synonym wins. Keys that are neither (a
broker file holds many: ``broker.id``, ``listeners``...) are left to the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

TOPIC_SYNONYMS = {
    "log.retention.bytes": "retention.bytes",
    "log.segment.bytes": "segment.bytes",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.cleanup.policy": "cleanup.policy",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "message.max.bytes": "max.message.bytes",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
    "log.preallocate": "preallocate",
}
# topic key -> broker keys from the most to the least precise, with their unit in ms
UNIT_SYNONYMS = {
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)),
}
CHECK_INTERVAL = "log.retention.check.interval.ms"
PRODUCER_EXPIRATION = "producer.id.expiration.ms"
CLEANER_BACKOFF = "log.cleaner.backoff.ms"  # the cleaner thread runs retention for compacted logs
DEFAULT_CLEANER_BACKOFF_MS = 15000
BROKER_ONLY = (CHECK_INTERVAL, PRODUCER_EXPIRATION, CLEANER_BACKOFF)


@dataclass(frozen=True)
class SplitConfig:
    topic: dict[str, str]  # topic config key -> value text
    broker: dict[str, str]  # broker-only keys (check interval, producer expiration)
    unknown: list[str]


def broker_synonym_values(pairs: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Topic config key -> (value text, the broker key it came from) for the broker keys in
    ``pairs``: the first synonym present wins (``ServerTopicConfigSynonyms``), hours and minutes
    are turned into ms, and a negative ``log.retention.*`` is -1 (``KafkaConfig.logRetentionTimeMillis``)."""
    out: dict[str, tuple[str, str]] = {}
    for topic_key, synonyms in UNIT_SYNONYMS.items():
        for broker_key, unit in synonyms:
            if broker_key in pairs:
                text = pairs[broker_key].strip()
                if text.lstrip("-").isdigit():
                    number = int(text) * unit
                    text = str(-1 if topic_key == "retention.ms" and number < 0 else number)
                out[topic_key] = (text, broker_key)
                break
    for broker_key, topic_key in TOPIC_SYNONYMS.items():
        if broker_key in pairs:
            out[topic_key] = (pairs[broker_key], broker_key)
    return out


def split_config(pairs: dict[str, str], known_topic_keys) -> SplitConfig:
    """Topic configs (broker synonyms translated, topic keys winning), broker-only settings,
    and the keys that are neither."""
    topic = {key: value for key, (value, _) in broker_synonym_values(pairs).items()}
    synonyms = set(TOPIC_SYNONYMS) | {b for keys in UNIT_SYNONYMS.values() for b, _ in keys}
    broker = {key: value for key, value in pairs.items() if key in BROKER_ONLY}
    unknown = [key for key in pairs if key not in synonyms and key not in BROKER_ONLY and key not in known_topic_keys]
    for key, value in pairs.items():  # topic keys win over broker synonyms
        if key in known_topic_keys:
            topic[key] = value
    return SplitConfig(topic, broker, unknown)
