"""``seglog verify``: findings for log dirs, partitions, segments, indexes, the small files
and tiered partitions. Reads only; corruption is returned as findings, never raised.

May import: ``seglog_cli.formats``, ``storage.log``, ``storage.serde``, ``storage.config`` and
``storage.tiered``.
"""
