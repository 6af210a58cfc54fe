"""The group and transaction coordinators' logs: committed offsets and consumer lag
(``offsets``, ``consumer_lag``), transactions (``transactions``), both read from
``__consumer_offsets`` / ``__transaction_state`` partitions (``coordinator_log``).

May import: ``seglog_cli.formats``, ``storage.log``, ``storage.serde``, ``storage.config`` and
``storage.tiered``.
"""
