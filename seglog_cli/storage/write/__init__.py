"""The write path: the one write protocol and the commands built on it.

Owns the write protocol every writing command goes through (``durable``: directory-relative file
operations; ``journal`` and ``rollback``: the kill-safe journal and its replay, with the steps it
carries out in ``file_steps`` and its backup's ``manifest``; ``safety``: lock and backups;
``write_session``: all of it for one command; ``undo``), the segment writer and batch builder
(``writer``, ``builder``), ``append`` (with its plan's values in ``append_plan``, the segment it
writes to in ``active_segment`` and the producer checks in ``producer_append``), ``rebuild_index``
and ``segment_split``.

May import: ``seglog_cli.formats``, ``storage.log`` and ``storage.config``.
"""
