"""The README's promises: two quick-start commands, every command documented with an example."""

from __future__ import annotations

import re

from tests.conftest import REPO, run_seglog

README = (REPO / "README.md").read_text()
INDEX = (REPO / "docs" / "index.md").read_text()
COMMANDS = ["dump", "verify", "rebuild-index", "recover", "undo", "append", "offsets", "transactions",
            "simulate-retention", "diff", "repair", "replay", "metadata"]


def test_readme_opens_with_exactly_two_commands():
    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(block) == 2
    assert "seglog dump" in block[0] and "examples/" in block[0]
    assert "pytest" in block[1] and "[test]" in block[1]
    assert README.index("```bash") < README.index("## ")  # the very first thing in the file


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert "README.md" in ci and "sed -n 2p" in ci


def test_every_command_is_documented_with_an_example():
    for command in COMMANDS:
        page = (REPO / "docs" / "commands" / f"{command}.md").read_text()
        assert page.startswith(f"# `seglog {command}`")
        assert page.rstrip().endswith(f"<!-- seglog:reference {command} -->")
        assert "```console" in page
        help_text = run_seglog(command, "--help").out
        assert "Example" in help_text and f"seglog {command}" in help_text


def test_readme_library_example_runs(capsys):
    snippet = re.search(r"```python\n(.*?)```", INDEX, re.S).group(1)
    example = str(REPO / "examples" / "logdir" / "orders-0")
    exec(compile(snippet.replace("/var/lib/kafka/data/orders-0", example), "docs/index.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    offsets = [int(line.split()[0]) for line in lines[:5]]
    assert offsets == [120, 121, 122, 123, 124]  # the records of the batch holding offset 120
    assert lines[5].split() == ["120", "124", "True"]  # then the batches from there on


def test_readme_library_example_past_the_log_end_says_so(capsys):
    """The same snippet with an offset past the log end (find_offset returns None): no TypeError."""
    snippet = re.search(r"```python\n(.*?)```", INDEX, re.S).group(1)
    example = str(REPO / "examples" / "logdir" / "orders-0")
    code = snippet.replace("/var/lib/kafka/data/orders-0", example).replace("120", "1000000")
    exec(compile(code, "docs/index.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "offset 1000000 is past the log end offset 300"


def test_readme_is_short_and_links_into_the_docs():
    assert len(README.splitlines()) <= 150
    for page in ("docs/index.md", "docs/commands/recover.md", "docs/spark.md", "docs/findings.md"):
        assert f"]({page})" in README
