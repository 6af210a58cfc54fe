"""seglog: inspect and repair Apache Kafka log directories offline.

The library's supported entry points are in :mod:`seglog_cli.api`; every other module is internal.
"""

__version__ = "0.1.0"
