"""Every ```console block of the README and the docs runs against a copy of examples/logdir.

A block's lines starting with ``$ `` are commands, run with bash in order from a temp dir holding a
copy of ``examples/logdir`` as ``./logdir`` and of the rest of ``examples/`` as ``./examples``
(``seglog`` and ``python`` are this venv's); a command whose line ends with ``\\`` goes on on the
next line, and one with a here-document (``<<'EOF'``) up to its end line. The lines after a command, until the next command or the block's end, are its expected
stdout, compared exactly except that a line ``...`` matches any lines and ``...`` inside a line
any text. The exit status must be 0
unless the expected output's last line is ``[exit N]``.

Comments before a block (one line each):

``<!-- run with: kafka -->``
    a live Kafka-protocol broker on loopback (the ``kafka_cluster`` fixture: tansu, or the cluster
    ``SEGLOG_TEST_KAFKA_BOOTSTRAP`` names) stands for ``localhost:9092``, and each topic named
    ``*-restored`` for a topic no other test uses; outputs are compared with the page's names.
``<!-- run with: s3 -->``
    a real S3 API server on loopback (moto's) with the example log dir uploaded as
    ``s3://backups/broker-1/data``; the environment's ``AWS_ENDPOINT_URL`` points at it.
``<!-- run with: spark -->``
    needs pyspark and Java (the test extra and the machine); skipped with the reason without them.
``<!-- not run: REASON -->``
    skipped with that reason. ``tested by: tests/PATH.py::NAME[, ...]`` in the reason names the
    tests that run the same steps (on a test cluster, or bounded); they must exist.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(?:<!-- (?P<kind>not run|run with): (?P<reason>[^\n]*?) -->\n)?```console\n(?P<body>.*?)```",
                   re.S)
EXIT = re.compile(r"^\[exit (\d+)\]$")
TESTED_BY = re.compile(r"(tests/[\w/]+\.py)::(\w+)")
BOOTSTRAP = "localhost:9092"
RESTORED = re.compile(r"\b[\w.]+-restored\b")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")


def _blocks():
    for page in PAGES:
        text = page.read_text()
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("body"))
            yield pytest.param(match.group("kind"), match.group("reason"), match.group("body"),
                               id=f"{page.relative_to(REPO)}:{line}")


def _commands(body: str) -> list[tuple[str, list[str]]]:
    commands: list[tuple[str, list[str]]] = []
    continued, until = False, None
    for line in body.splitlines():
        if continued or until is not None:
            commands[-1] = (commands[-1][0] + "\n" + line, [])
            if until is not None:
                until = None if line == until else until
                continue
        elif line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
            continue
        continued = line.endswith("\\")
        heredoc = HEREDOC.search(line)
        until = heredoc.group(2) if heredoc else None
    return commands


def _matches(expected: list[str], actual: list[str]) -> bool:
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and _line_matches(expected[0], actual[0]) and _matches(expected[1:], actual[1:])


def _line_matches(expected: str, actual: str) -> bool:
    """Equal, where ``...`` inside a line stands for any text (a temp path, a timestamp)."""
    if "..." not in expected:
        return expected == actual
    return re.fullmatch(".*".join(map(re.escape, expected.split("..."))), actual) is not None


def _services(kind: str | None, reason: str | None, body: str, request) -> dict[str, str]:
    """The page's names -> this run's (a broker's address, unique topic names)."""
    if kind == "not run":
        pytest.skip(reason)
    if kind is None:
        return {}
    if reason == "spark":
        for module in ("pyspark", "pyarrow"):
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"{module} is not installed (pip install -e '.[test]')")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            pytest.skip("Spark needs Java on the machine")
        return {}
    if reason == "s3":
        return _s3_service(request)
    assert reason == "kafka", f"unknown service {reason!r} (known: kafka, s3, spark)"
    cluster = request.getfixturevalue("kafka_cluster")
    names = {BOOTSTRAP: cluster.bootstrap}
    for topic in sorted(set(RESTORED.findall(body))):
        names[topic] = cluster.new_topic(topic)
    return names


def _s3_service(request) -> dict[str, str]:
    """A real S3 API server on loopback (moto's), the environment pointing at it, and the example
    log dir uploaded as ``s3://backups/broker-1/data`` (with examples/tiered's remote storage as
    ``s3://backups/broker-1/rsm``)."""
    from contextlib import ExitStack

    from tests.s3_server import BUCKET, make_bucket, missing_packages, moto_server, s3_environment, s3_filesystem, upload

    if missing_packages():
        pytest.skip(missing_packages())
    stack = ExitStack()
    request.addfinalizer(stack.close)
    stack.enter_context(s3_environment(stack.enter_context(moto_server())))
    fs = s3_filesystem()
    make_bucket(fs)
    upload(fs, REPO / "examples" / "logdir", "broker-1/data")
    upload(fs, REPO / "examples" / "tiered" / "rsm", "broker-1/rsm")
    return {"s3://backups/": f"s3://{BUCKET}/"}


def _rename(text: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize(("kind", "reason", "body"), list(_blocks()))
def test_console_block_runs(kind, reason, body, tmp_path, request):
    names = _services(kind, reason, body, request)
    shutil.copytree(REPO / "examples" / "logdir", tmp_path / "logdir")
    shutil.copytree(REPO / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("logdir", "__pycache__"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb", "PYSPARK_PYTHON": sys.executable}
    for command, expected in _commands(body):
        status = 0
        if expected and EXIT.match(expected[-1]):
            status = int(EXIT.match(expected[-1]).group(1))
            expected = expected[:-1]
        done = subprocess.run(["bash", "-c", _rename(command, names)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=180)
        assert done.returncode == status, f"$ {command}\n{done.stdout}{done.stderr}"
        actual = _rename(done.stdout, {new: old for old, new in names.items()}).splitlines()
        assert _matches(expected, actual), f"$ {command}\n--- expected\n" + "\n".join(expected) + \
            "\n--- got\n" + "\n".join(actual)


def test_an_ellipsis_matches_lines_and_text():
    assert _matches(["a", "...", "z"], ["a", "b", "c", "z"]) and _matches(["a", "..."], ["a"])
    assert _matches(["wrote 2 in .../backups/...-undo"], ["wrote 2 in /tmp/x/backups/2026-undo"])
    assert not _matches(["wrote 2 in .../backups"], ["wrote 3 in /tmp/backups"])
    assert not _matches(["a", "z"], ["a", "b", "z"])


def test_commands_go_on_after_a_backslash_and_to_a_heredoc_end():
    body = "$ seglog dump \\\n    --deep-iteration logdir\nout\n$ python - <<'EOF'\nprint(1)\nEOF\n1\n$ echo x\\\n"
    assert _commands(body) == [("seglog dump \\\n    --deep-iteration logdir", ["out"]),
                               ("python - <<'EOF'\nprint(1)\nEOF", ["1"]), ("echo x\\", [])]


def test_a_block_not_run_names_a_test_that_exists():
    """A "tested by" reference in a reason names a test function of that file (it cannot rot)."""
    for page in PAGES:
        for match in BLOCK.finditer(page.read_text()):
            _, said, tests = (match.group("reason") or "").partition("tested by: ")
            assert not said or TESTED_BY.findall(tests), f"{page.relative_to(REPO)}: tested by what? {tests!r}"
            for path, name in TESTED_BY.findall(tests):
                tree = ast.parse((REPO / path).read_text())
                functions = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
                assert name in functions, f"{page.relative_to(REPO)}: {path}::{name} does not exist"


def test_no_bash_blocks_in_the_docs():
    """Every shell example is a console block (run or marked); only the README's set-up is ```bash."""
    for page in PAGES:
        fences = re.findall(r"^```(bash|sh|shell)\s*$", page.read_text(), re.M)
        allowed = 1 if page.name == "README.md" and page.parent == REPO else 0
        assert len(fences) <= allowed, f"{page.relative_to(REPO)}: {fences}"
