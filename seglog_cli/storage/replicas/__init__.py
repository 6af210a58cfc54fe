"""Replicas of one partition: ``seglog diff`` (``replicas``: each replica read into summaries by
``replica_scan``, compared with the reference by ``replica_comparison``), Kafka's follower
truncation by leader epochs (``epoch_truncation``) and ``seglog repair`` (``replica_repair`` plans
from what ``repair_scan`` reads of each ``.log``, ``repair_divergence`` says where DAMAGED is
another history, ``repair_apply`` assembles the segments).

May import: ``seglog_cli.formats``, ``storage.log``, ``storage.config`` and ``storage.write``.
"""
