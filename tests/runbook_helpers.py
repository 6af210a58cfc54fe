"""Helpers of the runbook tests (tests/test_runbooks*.py): run a runbook as an operator does
(bash, seglog from PATH, another working directory) on copies of corpus data, and compare trees."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from tests.conftest import CORPUS, REPO, restore_preallocated

RUNBOOKS = REPO / "examples" / "runbooks"
SCRIPTS = sorted(p.name for p in RUNBOOKS.glob("[0-9][0-9]-*.sh"))
DATA = CORPUS / "kafka-4.2.0" / "data"
GOLDEN = CORPUS / "kafka-4.2.0" / "golden"
CASES = CORPUS / "kafka-4.2.0" / "recovery-cases"
LOG_DIR_FILES = ("meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                 "log-start-offset-checkpoint", "cleaner-offset-checkpoint", ".kafka_cleanshutdown")
NOW = "2026-11-23T00:00:00Z"  # a fixed clock a few hours after the corpus was written



# -- helpers ----------------------------------------------------------------------------------

def _env() -> dict:
    """seglog from PATH as an operator has it: the interpreter's bin dir first (the console
    script lives there), python3 being this interpreter."""
    env = dict(os.environ)
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env.pop("SEGLOG", None)
    if shutil.which("seglog", path=env["PATH"]) is None:
        env["SEGLOG"] = f"{sys.executable} -m seglog_cli"
    env["PYTHON"] = sys.executable
    return env


ENV = _env()


def run(script: str, *args, cwd: Path, stdin: str = "", env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(RUNBOOKS / script), *map(str, args)], cwd=cwd, env=env or ENV,
                          input=stdin, capture_output=True, text=True, timeout=600)


def run_json(script: str, *args, cwd: Path, stdin: str = "") -> tuple[int, dict]:
    result = run(script, "--json", *args, cwd=cwd, stdin=stdin)
    document = json.loads(result.stdout)
    assert document["status"] == result.returncode
    assert document["summary"] and document["summary"][-1].endswith(f"(exit {result.returncode})")
    return result.returncode, document


def make_writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def copy_log_dir(dest: Path, *partitions: str, source: Path = DATA) -> Path:
    """A log dir holding copies of some corpus partitions and the log-dir files."""
    dest.mkdir(parents=True)
    for name in LOG_DIR_FILES:
        if (source / name).exists():
            shutil.copy2(source / name, dest / name)
    for partition in partitions:
        shutil.copytree(source / partition, dest / partition)
    make_writable(dest)
    return dest


def copy_case(case: str, dest: Path) -> Path:
    shutil.copytree(CASES / case / "before", dest)
    make_writable(dest)
    restore_preallocated(dest, f"kafka-4.2.0/recovery-cases/{case}/before")
    return dest


def tree(root: Path) -> dict[str, str]:
    """sha256 of every file; .lock is left out (reading it would drop a POSIX lock this process holds)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


def undo_line(out: str) -> str:
    match = re.search(r"^UNDO: (.+)$", out, re.M)
    assert match, out
    return match.group(1)


def run_undo(command: str, cwd: Path) -> None:
    result = subprocess.run(["bash", "-c", command], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def golden_batches(partition: str, segment: str) -> list[dict]:
    """kafka-dump-log's batch lines of one segment (no flags)."""
    batches = []
    for line in (GOLDEN / partition / f"{segment}.log.plain.out").read_text().splitlines():
        if line.startswith("baseOffset:"):
            fields = dict(re.findall(r"(\w+): (\S+)", line))
            batches.append({k: int(fields[k]) for k in ("baseOffset", "lastOffset", "position", "size")})
    return batches
