"""Broker settings as topic config defaults: synonyms, unit precedence, topic keys winning."""

from seglog_cli.storage.config.broker_config import split_config
from seglog_cli.storage.config.topic_config import TOPIC_CONFIG_KEYS, TopicConfig


def test_synonyms_units_and_precedence():
    split = split_config({"broker.id": "1", "log.retention.hours": "2", "log.retention.minutes": "30",
                          "log.segment.bytes": "1000", "segment.bytes": "2000", "log.roll.hours": "1",
                          "log.retention.check.interval.ms": "60000", "log.cleaner.min.cleanable.ratio": "0.1"},
                         TOPIC_CONFIG_KEYS)
    assert split.topic == {"retention.ms": str(30 * 60_000), "segment.bytes": "2000", "segment.ms": "3600000",
                           "min.cleanable.dirty.ratio": "0.1"}
    assert split.broker == {"log.retention.check.interval.ms": "60000"} and split.unknown == ["broker.id"]
    config = TopicConfig().with_overrides(split.topic)
    assert (config.retention_ms, config.segment_bytes, config.min_cleanable_dirty_ratio) == (1_800_000, 2000, 0.1)
    assert split_config({"log.retention.ms": "5", "log.retention.hours": "9"}, TOPIC_CONFIG_KEYS).topic == \
        {"retention.ms": "5"}
