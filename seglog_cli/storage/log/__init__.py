"""The read path: Kafka's log as files (Kafka's ``storage.internals.log`` and ``common.record``).

Owns the memory-mapped files, the batch scan (``batches``) and the batch headers it decodes
(``batch_header``), records and control records, the codecs and CRC-32C (and the optional
compiled loops, ``native``/``_native*.c``), file names (``naming``; ``remote_layout``,
LocalTieredStorage's names, lives here because ``naming`` reads remote partition directory
names with it), the three indexes, producer snapshots and producer state, segments, partition
logs and log dirs, the checkpoint files and the log dir's small files (read by Java's text
rules, ``java_text``), the findings (damage as data), the one error root
(``errors.SeglogError``) and the process pool (``parallel``).

May import: ``seglog_cli.formats`` (no other storage package), the standard library and the
codec and CRC bindings. Every other storage package imports this one.
"""
