"""The engine: Kafka's log dirs read, checked and repaired. It never prints, never exits, and never
imports typer, rich or pyspark; the supported entry points are in :mod:`seglog_cli.api`.

Sub-packages, lowest first (each ``__init__`` says what it owns and what it may import;
tests/test_import_direction.py holds them to it)::

    log/          the read path: files, batches, records, codecs, indexes, snapshots, producer
                  state, segments, partition logs, checkpoints, errors, findings
    serde/        record values of the internal topics, decoded (dump's --*-decoder options)
    config/       topic and broker configs, the effective config from __cluster_metadata
    tiered/       tiered storage: remote segments read with the local ones as one log
    write/        the write protocol (lock, journal, backups, undo) and the writers:
                  append, rebuild-index, segment split
    recovery/     recover: Kafka's log loading and segment recovery, planned then applied
    retention/    retention and compaction: which segments go, and when
    replicas/     diff and repair of a partition's replicas, follower truncation
    verify/       verify: findings for every file of a log dir
    dump/         dump: DumpLogSegments' events for every file type
    coordinator/  offsets, consumer lag and transactions from the coordinators' logs
"""
