"""The source topics' partition counts and configs, for ``--create-topics``: from the
``__cluster_metadata`` of the sources' log dirs (a KRaft broker's or controller's metadata log:
TOPIC_RECORDs, PARTITION_RECORDs and topic CONFIG_RECORDs), else the partitions found on disk."""

from __future__ import annotations

from pathlib import Path

from seglog_cli.storage.log.errors import SeglogError

METADATA_DIR = "__cluster_metadata-0"


def source_topics(sources) -> tuple[dict[str, int], dict[str, dict[str, str]]]:
    """``(topic -> partition count, topic -> configs set on it)`` for the topics of ``sources``."""
    counts: dict[str, int] = {}
    for source in sources:
        counts[source.topic] = max(counts.get(source.topic, 0), source.partition + 1)
    configs: dict[str, dict[str, str]] = {}
    for log_dir in sorted({s.log_dir for s in sources if s.log_dir is not None}):
        directory = Path(log_dir) / METADATA_DIR
        if not directory.is_dir():
            continue
        # imported only here: the metadata decoder brings construct (~30 ms of start-up)
        from seglog_cli.storage.config.effective_config import TOPIC_RESOURCE, read_metadata_image
        try:
            image = read_metadata_image(directory, partitions=True)
        except (SeglogError, OSError):
            continue
        for topic in counts:
            topic_id = image.topics.get(topic)
            if topic_id is not None and image.partitions.get(topic_id):
                counts[topic] = max(counts[topic], max(image.partitions[topic_id]) + 1)
            values = image.resource(TOPIC_RESOURCE, topic)
            if values:
                configs.setdefault(topic, {}).update({name: value for name, (value, _where) in values.items()})
    return counts, configs
