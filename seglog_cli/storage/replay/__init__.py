"""Records from log dirs (or seglog's JSON Lines) back into a live cluster, exactly once:
which records a source holds and where each goes (``sources``, ``partitioner``), the progress
file that maps every source offset to the offset it was given (``progress``), the consumer
groups' positions carried over through that map (``groups``), the one adapter to the Kafka
client (``cluster``) and the plan and its application (``replay``).

May import: ``seglog_cli.formats``, ``storage.log``, ``storage.serde``, ``storage.config``,
``storage.tiered``, ``storage.dump`` and ``storage.coordinator``.
"""
