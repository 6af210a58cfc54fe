"""A command imports only what it runs (issue 20): each command runs in a fresh interpreter,
which then reports the modules it loaded.

Not a timing test: the start-up benchmark (tests/benchmarks/bench_startup.py) measures time;
this pins down the reasons it is short, so an innocent top-level import cannot quietly undo
them. Read-only commands on small, uncompressed inputs load no rich, no write path, no Spark,
no construct and no codec binding; ``--version`` loads not even typer; writing commands that
only plan load no Spark.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, requires_corpus

EXAMPLES = REPO / "examples" / "logdir"
SEGMENT = "orders-0/00000000000000000000.log"

# run seglog's console-script entry point, then write the names in sys.modules to argv[1]
WRAPPER = """
import json, sys
report, sys.argv = sys.argv[1], ["seglog", *sys.argv[2:]]
try:
    from seglog_cli.cli import run
    run()
finally:
    with open(report, "w") as handle:
        json.dump(sorted(sys.modules), handle)
"""

RICH = ("rich",)
WRITE_PATH = tuple(f"seglog_cli.storage.write.{name}" for name in ("journal", "manifest", "file_steps",
                                                                   "write_session", "durable", "rollback",
                                                                   "safety"))
SPARK = ("pyspark", "pyarrow", "pandas", "seglog_cli.spark")
SCHEMAS = ("construct",)
CODECS = ("cramjam", "zstandard", "lz4")
READ_ONLY_NEVER = RICH + WRITE_PATH + SPARK + SCHEMAS + CODECS


def loaded_modules(tmp_path: Path, *args: str, statuses=(0,)) -> set[str]:
    report = tmp_path / "modules.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(report), *args], capture_output=True,
                          env=env, cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert done.returncode in statuses, done.stderr.decode()
    assert done.stdout or done.returncode != 0, "the command printed nothing"
    return set(json.loads(report.read_text()))


def loaded_from(modules: set[str], families: tuple[str, ...]) -> list[str]:
    """The loaded modules that are, or are inside, one of ``families``."""
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in families))


@pytest.fixture
def log_dir(tmp_path) -> Path:
    """A copy of examples/logdir with a generated __consumer_offsets-1 (200 offset commits)."""
    from tests.benchmarks.bench_decoders import write_offsets_segment

    target = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, target)
    write_offsets_segment(target / "__consumer_offsets-1" / "00000000000000000000.log", 200)
    return target


def test_version_loads_no_cli_framework(tmp_path):
    modules = loaded_modules(tmp_path, "--version")
    assert loaded_from(modules, ("typer", "click", "rich")) == []
    # the exit-status mapping and the engine's error classes it catches, nothing more
    assert loaded_from(modules, ("seglog_cli", "formats")) == [
        "seglog_cli", "seglog_cli.cli", "seglog_cli.status", "seglog_cli.storage", "seglog_cli.storage.log",
        "seglog_cli.storage.log.errors", "seglog_cli.storage.log.text"]


@pytest.mark.parametrize("options", [[], ["--deep-iteration", "--print-data-log"], ["--format", "jsonl"],
                                     ["--deep-iteration", "--format", "jsonl", "--payload-encoding", "base64"]],
                         ids=["batches", "deep", "jsonl", "jsonl-deep"])
def test_dump_of_a_data_segment(tmp_path, log_dir, options):
    modules = loaded_modules(tmp_path, "dump", *options, str(log_dir / SEGMENT))
    assert "seglog_cli.storage.dump.dump" in modules  # the wrapper saw the command run
    assert loaded_from(modules, READ_ONLY_NEVER) == []
    other_commands = {f"seglog_cli.commands.{name}" for name in ("verify", "recover", "append", "offsets")}
    assert modules.isdisjoint(other_commands)


@pytest.mark.parametrize("options", [["--format", "text"], ["--format", "json"],
                                     ["--level", "deep", "--format", "text"]], ids=["text", "json", "deep-text"])
def test_verify_of_a_partition(tmp_path, log_dir, options):
    modules = loaded_modules(tmp_path, "verify", str(log_dir / "orders-0"), *options)
    assert "seglog_cli.storage.verify.verify" in modules
    assert loaded_from(modules, READ_ONLY_NEVER + ("multiprocessing",)) == []


def test_verify_of_a_log_dir_with_two_jobs_forks_but_loads_nothing_else(tmp_path, log_dir):
    modules = loaded_modules(tmp_path, "verify", str(log_dir), "--jobs", "2", "--format", "text", statuses=(0, 1))
    assert "multiprocessing" in modules  # the lazy import is where the forking is
    assert loaded_from(modules, READ_ONLY_NEVER) == []


def test_offsets_of_a_log_dir(tmp_path, log_dir):
    modules = loaded_modules(tmp_path, "offsets", str(log_dir))
    assert "seglog_cli.storage.serde.coordinator_fast" in modules
    assert loaded_from(modules, READ_ONLY_NEVER) == []


@requires_corpus
def test_offsets_of_a_real_brokers_log_dir(tmp_path, corpus):
    """Real __consumer_offsets partitions: the hand-written readers cover what a broker wrote,
    so the construct schemas (and construct) are not loaded."""
    modules = loaded_modules(tmp_path, "offsets", str(corpus / "kafka-4.2.0" / "data"))
    assert loaded_from(modules, READ_ONLY_NEVER) == []


@pytest.mark.parametrize("command", [
    ["recover", "{log_dir}"],
    ["rebuild-index", "{log_dir}/orders-0"],
    ["append", "--value", "v1", "--value", "v2", "{log_dir}/orders-0"],
    ["simulate-retention", "{log_dir}/orders-0", "--now", "2099-01-01"],
], ids=lambda command: command[0])
def test_writing_commands_that_only_plan_load_no_spark(tmp_path, log_dir, command):
    argv = [word.format(log_dir=log_dir) for word in command]
    before = sorted(p.relative_to(log_dir) for p in log_dir.rglob("*") if p.name != ".lock")
    modules = loaded_modules(tmp_path, *argv, statuses=(0, 1, 3))
    assert f"seglog_cli.commands.{command[0].replace('-', '_')}" in modules
    assert loaded_from(modules, SPARK) == []
    assert sorted(p.relative_to(log_dir) for p in log_dir.rglob("*") if p.name != ".lock") == before  # planned only
