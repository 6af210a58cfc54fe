"""The library module's examples are tests: every docstring example of ``seglog_cli.api`` runs,
from a fresh copy of examples/logdir (the examples write to it), with nothing imported for it."""

from __future__ import annotations

import doctest
import shutil
from pathlib import Path

import pytest

from seglog_cli import api

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "logdir"
TESTS = sorted((t for t in doctest.DocTestFinder().find(api, globs={}) if t.examples), key=lambda t: t.name)


def test_every_entry_point_has_a_docstring_and_an_example():
    functions = [name for name in api.__all__ if callable(getattr(api, name)) and name[0].islower()]
    with_examples = {t.name.rpartition(".")[2] for t in TESTS}
    assert [name for name in functions if name not in with_examples] == []
    assert len(functions) == 26


@pytest.mark.parametrize("test", TESTS, ids=[t.name.rpartition(".")[2] for t in TESTS])
def test_example(test, tmp_path, monkeypatch):
    shutil.copytree(EXAMPLES, tmp_path / "examples" / "logdir")
    monkeypatch.chdir(tmp_path)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    outputs = []
    runner.run(test, out=outputs.append)
    assert runner.failures == 0, "".join(outputs)
