"""The read path: Kafka's log as files (Kafka's ``storage.internals.log`` and ``common.record``).

Owns the memory-mapped files, the batch scan (``batches``), records and control records, the
codecs and CRC-32C (and the optional compiled loops, ``native``/``_native.c``), file names
(``naming``, ``remote_layout``), the three indexes, producer snapshots and producer state,
segments, partition logs and log dirs, the checkpoint files and the log dir's small files, the
findings (damage as data), the one error root (``errors.SeglogError``) and the process pool
(``parallel``).

May import: ``seglog_cli.formats`` and the standard library. Every other storage package
imports this one; it imports none of them.
"""
