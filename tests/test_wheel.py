"""The installed wheel: what ``pip install seglog`` puts in a fresh venv.

The wheel is built from a clean copy of the source (no build leftovers, no compiled module of the
checkout), installed with its dependencies in a new venv (pip's cache makes that a few seconds),
and run from outside the checkout: only seglog-named top-level packages (``formats/`` is
installed as ``seglog_cli.formats``), the engine and the library module import, and ``seglog
dump`` on the bundled example prints what the checkout prints.

Select it with ``-m wheel``, leave it out with ``-m "not wheel"``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from seglog_cli.storage.log import native

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "logdir" / "orders-0"

pytestmark = pytest.mark.wheel

LEFTOVERS = shutil.ignore_patterns(".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "*.so",
                                   ".pytest_cache", ".hypothesis", "bench-data", "tmp", "tests", "examples")


def run(*argv, **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, argv))}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def build_and_install(tmp: Path) -> tuple[Path, Path]:
    """(the wheel, the venv it is installed in)."""
    source = tmp / "src"
    shutil.copytree(REPO, source, ignore=LEFTOVERS, symlinks=True)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist", source)
    (wheel,) = (tmp / "dist").glob("seglog-*.whl")
    venv = tmp / "venv"
    run(sys.executable, "-m", "venv", venv)
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", wheel)
    return wheel, venv


def test_the_installed_wheel(tmp_path):
    """One test (one build) for the three checks, so that xdist's workers do not each build it."""
    wheel, venv = build_and_install(tmp_path)
    elsewhere = tmp_path / "elsewhere"  # an empty working directory: nothing to import from there
    elsewhere.mkdir()
    check_contents(wheel)
    check_imports(venv, elsewhere)
    check_dump(venv, elsewhere)


def check_contents(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert archive.read(top_level).decode().split() == ["seglog_cli"]
    assert {n.split("/")[0] for n in names} == {"seglog_cli", wheel.name.split("-")[0] + "-" +
                                                wheel.name.split("-")[1] + ".dist-info"}
    assert "seglog_cli/formats/record_batch.py" in names and not any(n.startswith("formats/") for n in names)
    # every storage sub-package made it, and the compiled loops when this machine can build them
    assert {n.split("/")[2] for n in names if n.startswith("seglog_cli/storage/") and n.count("/") == 3} == {
        "log", "objectstore", "serde", "metadata", "config", "tiered", "write", "recovery", "retention", "replicas", "verify",
        "dump",
        "coordinator", "replay"}
    assert any(n.startswith("seglog_cli/storage/log/_native.") for n in names) == native.available()


def check_imports(venv: Path, cwd: Path) -> None:
    code = ("import importlib.util, seglog_cli, seglog_cli.api, seglog_cli.formats.record_batch; "
            "print(seglog_cli.__file__); print(seglog_cli.formats.record_batch.__file__); "
            "print(importlib.util.find_spec('formats'))")
    lines = run(venv / "bin" / "python", "-c", code, cwd=cwd).stdout.splitlines()
    assert all(Path(line).is_relative_to(venv) for line in lines[:2]), lines
    assert lines[2] == "None"  # no top-level 'formats' to clash with the PyPI project of that name


def check_dump(venv: Path, cwd: Path) -> None:
    argv = ["dump", "--deep-iteration", "--print-data-log", str(EXAMPLE)]
    from_wheel = run(venv / "bin" / "seglog", *argv, cwd=cwd).stdout
    from_checkout = run(sys.executable, "-m", "seglog_cli", *argv, cwd=REPO).stdout
    assert "baseOffset: 0" in from_wheel and "payload:" in from_wheel
    assert from_wheel == from_checkout
