"""Kafka on-disk formats as construct schemas: declarations only, no I/O, no policy.

Modules: ``varint`` (zig-zag and unsigned varints), ``fields`` (nullable bytes),
``record_batch`` (v2 batches and records), ``legacy`` (v0/v1 messages), ``control`` (control
records), ``protocol`` (flexible-version primitives), ``indexes`` (.index/.timeindex),
``txn_index`` (.txnindex) and ``producer_snapshot`` (.snapshot); ``metadata_fields`` (Kafka's
flexible message encoding as its generated readers read it) and ``metadata_records`` (KRaft
``__cluster_metadata`` record values).
"""
