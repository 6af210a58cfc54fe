"""Record values of Kafka's internal topics, decoded as Kafka's serdes read them.

Owns the decoders behind ``seglog dump``'s ``--offsets-decoder`` / ``--transaction-log-decoder``
(``coordinator_fast``, ``coordinator_records``), ``--cluster-metadata-decoder``
(``metadata_decoder``) and ``--remote-log-metadata-decoder`` (``remote_log_metadata``): bytes in,
values out, no files; and the one reader of seglog's JSON Lines records (``jsonl_records``: what
``append --input-format jsonl`` and ``replay`` read, each record in the encoding it names).

May import: ``seglog_cli.formats`` and ``storage.log``.
"""
