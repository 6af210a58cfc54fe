"""The cluster metadata image: what a KRaft broker or controller knows after replaying its
``__cluster_metadata-0`` (``org.apache.kafka.image``): topics and their partition
registrations, the cluster's brokers and controllers, features, configs, client quotas, SCRAM
users (names and mechanisms, never secrets), ACLs, delegation token ids and the next producer
id; ``delta`` replays one record at a time (metadata transactions honoured), ``loader`` reads
a snapshot and the log after it at an offset or a time, ``history`` names every change of a
partition or a broker and why.

May import: ``seglog_cli.formats``, ``storage.log`` and ``storage.serde``.
"""
