"""Topic and broker configs: Kafka's defaults, ``server.properties``, and the effective
topic config a KRaft broker resolves from its ``__cluster_metadata`` log.

May import: ``seglog_cli.formats``, ``storage.log``, ``storage.serde`` and ``storage.metadata``
(the metadata image the topic and broker configs are read from).
"""
