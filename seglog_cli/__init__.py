"""seglog: inspect and repair Apache Kafka log directories offline.

The library's supported entry points are in :mod:`seglog_cli.api`; every other module is internal.
"""

__version__ = "0.1.0"

# The Apache Kafka release whose bytes, rules and tool output seglog follows (the docs' "Kafka 4.2" is
# generated from it and checked against it; `seglog --version` prints it)
KAFKA_VERSION = "4.2.0"
