"""Tiered storage (KIP-405): a partition's remote segments (LocalTieredStorage's layout)
read together with its local ones as one log.

May import: ``seglog_cli.formats``, ``storage.log`` and ``storage.serde``.
"""
