"""Retention and compaction: which segments Kafka deletes (``retention``: predicates plus
reasons), the simulation over time (``retention_model``, ``retention_timeline``), applying a
deletion (``retention_apply``), and the log cleaner's compaction (``compaction``,
``compaction_report``).

May import: ``seglog_cli.formats``, ``storage.log``, ``storage.config`` and ``storage.write``.
"""
