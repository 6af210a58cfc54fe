"""The start-up preview's inputs for ``seglog verify`` and ``seglog recover``: the KRaft broker
log dirs among a command's paths, and the metadata log to judge them against."""

from __future__ import annotations

from pathlib import Path

METADATA_DIR = "__cluster_metadata-0"


def startup_previews(inputs, metadata_log) -> list:
    """The start-up previews (storage.metadata.startup) of the KRaft brokers among ``inputs``,
    against ``metadata_log`` or a broker's own ``__cluster_metadata-0``. The metadata engine (and
    construct) is loaded only when there is a metadata log to read."""
    dirs = [Path(p) for p in inputs if Path(p).is_dir()]
    if metadata_log is None and not any((d / METADATA_DIR).is_dir() for d in dirs):
        return []
    from seglog_cli.storage.metadata.startup import previews_for

    return previews_for(dirs, metadata_log)
