"""``seglog dump``: the event stream behind DumpLogSegments' lines for every file type.

May import: ``seglog_cli.formats``, ``storage.log``, ``storage.serde`` and ``storage.tiered``.
"""
