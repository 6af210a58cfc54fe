"""The configs read the engine's one metadata image (``effective_config.read_metadata_image``
wraps :func:`~seglog_cli.storage.metadata.loader.load_image`)."""

from __future__ import annotations

import pytest

from seglog_cli.storage.config.effective_config import BROKER_RESOURCE, TOPIC_RESOURCE, read_metadata_image
from seglog_cli.storage.metadata.image import MetadataImage
from tests.storage.metadata.test_image import HISTORY, needs_corpus


@needs_corpus
@pytest.mark.parametrize("partitions", [False, True])
def test_the_config_view_is_the_engines_image(partitions):
    view = read_metadata_image(HISTORY / "data" / "broker-1" / "__cluster_metadata-0", partitions=partitions)
    assert isinstance(view.image, MetadataImage)
    assert view.snapshot == "00000000000000000831-0000000001.checkpoint"
    assert view.topics["orders"] == "YaZrWuNcQXuBvAPfDQjPvg" and "audit-log" not in view.topics
    assert view.resource(BROKER_RESOURCE, "1") == {
        "log.cleaner.threads": ("2", "snapshot 00000000000000000831-0000000001.checkpoint")}
    assert view.resource(TOPIC_RESOURCE, "orders")["retention.ms"][0] == "172800000"
    # only what configs depend on is decoded, unless partitions are asked for
    assert view.image.brokers == {}
    assert view.partitions == ({"YaZrWuNcQXuBvAPfDQjPvg": set(range(8))} | {
        topic_id: {0, 1, 2} for name, topic_id in view.topics.items() if name != "orders"} if partitions else {})
