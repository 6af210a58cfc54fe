"""Kafka on-disk formats as construct schemas: declarations only, no I/O, no policy.

Modules: ``varint`` (zig-zag and unsigned varints), ``fields`` (nullable bytes),
``record_batch`` (v2 batches and records), ``legacy`` (v0/v1 messages), ``control`` (control
records), ``protocol`` (flexible-version primitives), ``indexes`` (.index/.timeindex),
``txn_index`` (.txnindex) and ``producer_snapshot`` (.snapshot); ``kafka_message`` (Kafka's
generated-message encoding, classic and flexible: the declarations, plain data) and
``message_constructs`` (the constructs that read and write them, as its generated readers do),
with the schemas declared on it: ``group_coordinator`` (``__consumer_offsets``), ``transaction_log``
(``__transaction_state``) and ``metadata_records`` (KRaft ``__cluster_metadata`` record values).
``layout`` holds the plain numbers (sizes, positions, type ids) the engine's ``struct`` readers
need, so they and a command's start-up need not import construct; the schema modules check them.
"""
