"""``seglog recover``: Kafka's log recovery at broker start-up (``LogLoader``), offline.

Owns the loading plan (which files a broker keeps, renames or deletes, ``loading``), the
recovery of one segment (``segment_recovery``), the producer state snapshots a broker writes
(``producer_snapshots``), the plan of a whole log dir (``recover``) and its application
through the write protocol (``apply``).

May import: ``seglog_cli.formats``, ``storage.log``, ``storage.config`` and ``storage.write``.
"""
