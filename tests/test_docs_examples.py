"""Every ```console block of the README and the docs runs against a copy of examples/logdir.

A block's lines starting with ``$ `` are commands, run with bash in order from a temp dir holding a
copy of ``examples/logdir`` as ``./logdir`` (``seglog`` is this venv's); the lines after a command,
until the next command or the block's end, are its expected stdout, compared exactly except that a
line ``...`` matches any lines. The exit status must be 0 unless the expected output's last line is
``[exit N]``. A block preceded by ``<!-- not run: REASON -->`` is skipped with that reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(?:<!-- not run: (?P<reason>[^\n]*?) -->\n)?```console\n(?P<body>.*?)```", re.S)
EXIT = re.compile(r"^\[exit (\d+)\]$")


def _blocks():
    for page in PAGES:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("body"))
            yield pytest.param(match.group("reason"), match.group("body"),
                               id=f"{page.relative_to(REPO)}:{line}")


def _commands(body: str) -> list[tuple[str, list[str]]]:
    commands: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
    return commands


def _matches(expected: list[str], actual: list[str]) -> bool:
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and _matches(expected[1:], actual[1:])


@pytest.mark.parametrize(("reason", "body"), list(_blocks()))
def test_console_block_runs(reason, body, tmp_path):
    if reason is not None:
        pytest.skip(reason)
    shutil.copytree(REPO / "examples" / "logdir", tmp_path / "logdir")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    for command, expected in _commands(body):
        status = 0
        if expected and EXIT.match(expected[-1]):
            status = int(EXIT.match(expected[-1]).group(1))
            expected = expected[:-1]
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == status, f"$ {command}\n{done.stdout}{done.stderr}"
        actual = done.stdout.splitlines()
        assert _matches(expected, actual), f"$ {command}\n--- expected\n" + "\n".join(expected) + \
            "\n--- got\n" + "\n".join(actual)


def test_no_bash_blocks_in_the_docs():
    """Every shell example is a console block (run or marked); only the README's set-up is ```bash."""
    for page in PAGES:
        fences = re.findall(r"^```(bash|sh|shell)\s*$", page.read_text(), re.M)
        allowed = 1 if page.name == "README.md" and page.parent == REPO else 0
        assert len(fences) <= allowed, f"{page.relative_to(REPO)}: {fences}"
