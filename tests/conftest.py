"""Shared fixtures: the broker-written corpus in ../shared/corpus and a CLI runner."""

from __future__ import annotations

import io
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest_plugins = ["tests.kafka_cluster", "tests.kafka_proxy"]  # a live broker on loopback; a fault-injecting proxy

REPO = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("SEGLOG_CORPUS", REPO.parent / "shared" / "corpus"))
CORPUS_MISSING = (f"../shared/corpus not found at {CORPUS} (a clone without ../shared; "
                  f"set SEGLOG_CORPUS to point at a copy)")

requires_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING)


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(CORPUS_MISSING)
    return CORPUS


def restore_preallocated(copy_dir: Path, corpus_subdir: str) -> int:
    """Give preallocated index files in a copy of a corpus dir their zero tails back (the
    corpus stores them trimmed; PREALLOCATED.tsv lists the true sizes)."""
    prefix = corpus_subdir.rstrip("/") + "/"
    restored = 0
    for line in (CORPUS / "PREALLOCATED.tsv").read_text().splitlines()[1:]:
        rel, size = line.split("\t")
        if rel.startswith(prefix):
            target = copy_dir / rel[len(prefix):]
            if target.exists() and target.stat().st_size < int(size):
                os.truncate(target, int(size))
                restored += 1
    return restored


@pytest.fixture(scope="session")
def live_copy(corpus, tmp_path_factory) -> Path:
    """kafka-4.2.0/live-copy exactly as the broker left it (preallocated indexes restored)."""
    target = tmp_path_factory.mktemp("live") / "live-copy"
    shutil.copytree(corpus / "kafka-4.2.0" / "live-copy", target)
    restore_preallocated(target, "kafka-4.2.0/live-copy")
    return target


@dataclass
class Result:
    exit_code: int
    stdout: bytes
    stderr: bytes

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")


class _Capture(io.TextIOWrapper):
    def __init__(self):
        super().__init__(io.BytesIO(), encoding="utf-8", write_through=True)

    def isatty(self) -> bool:
        return False

    def value(self) -> bytes:
        self.flush()
        return self.buffer.getvalue()


def run_seglog(*args: str, cwd: Path | None = None) -> Result:
    """Run the seglog CLI in-process (the same entry point as the console script) with
    captured binary stdout/stderr."""
    from seglog_cli.cli import main
    from seglog_cli.status import guarded

    out, err = _Capture(), _Capture()
    old = sys.stdout, sys.stderr, os.getcwd()
    sys.stdout, sys.stderr = out, err
    try:
        if cwd is not None:
            os.chdir(cwd)
        code = int(guarded(lambda: main(list(args))))
    finally:
        sys.stdout, sys.stderr = old[0], old[1]
        os.chdir(old[2])
    return Result(code, out.value(), err.value())


@pytest.fixture
def seglog():
    return run_seglog
