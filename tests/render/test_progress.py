"""The progress bar passes the dump's events through untouched, whatever their shape."""

from __future__ import annotations

from seglog_cli.render.progress import dump_progress
from seglog_cli.storage.dump.dump import DumpOptions, dump, expand_paths
from tests.conftest import REPO


def test_progress_passes_every_event_through():
    logdir = str(REPO / "examples" / "logdir")
    for options in (DumpOptions(), DumpOptions(deep_iteration=True)):
        plain = list(dump(expand_paths([logdir], options=options), options))
        wrapped = list(dump_progress(dump(expand_paths([logdir], options=options), options)))
        assert [type(e) for e in wrapped] == [type(e) for e in plain]
        assert len(wrapped) > 4
