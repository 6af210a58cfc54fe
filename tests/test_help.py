"""Every command's ``--help`` reads well on a narrow and on a wide terminal.

The help paragraphs are written hard-wrapped in the source and flowed before typer sees them
(``cli.flow_help``), so rich wraps them at the terminal's width. Rendered at 80 and at 200
columns, no line of a paragraph or list item may end where the next word would still have fit
(a "stub" line: what hard wraps inside a narrower panel look like); examples are one block of
indented lines that fit 80 columns; the exit statuses are a list, one status per item.
"""

from __future__ import annotations

import re

import pytest

from seglog_cli.cli import COMMANDS, flow_help
from tests.conftest import run_seglog

PANEL = ("╭", "│", "╰")


def rendered_help(monkeypatch, width: int, *argv: str) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    result = run_seglog(*argv, "--help")
    assert result.exit_code == 0, result.stderr
    return result.out.splitlines()


def text_lines(lines: list[str]) -> list[str]:
    """The help text: the lines after 'Usage:' up to the first panel, right-stripped."""
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:")) + 1
    end = next((i for i, line in enumerate(lines) if line.lstrip().startswith(PANEL)), len(lines))
    return [line.rstrip() for line in lines[start:end]]


def stubs(lines: list[str], width: int) -> list[str]:
    """Lines that end although the next word of the same paragraph or item would have fit."""
    found = []
    room = width - 2  # typer pads the help text by one column on each side
    for line, following in zip(lines, lines[1:]):
        if not line.strip() or not following.strip():
            continue
        starts_anew = following.startswith("   ") or following.lstrip().startswith("- ")
        if starts_anew or line.startswith("   ") or line.endswith(":"):
            continue  # an example line, a new item, a heading
        if len(line) + 1 + len(following.split()[0]) <= room + 1:
            found.append(f"{line!r} then {following.strip()[:30]!r}")
    return found


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_has_no_stub_lines(monkeypatch, command, width):
    lines = rendered_help(monkeypatch, width, *([command] if command else []))
    assert max(len(line) for line in lines) <= width
    assert stubs(text_lines(lines), width) == []


@pytest.mark.parametrize("command", list(COMMANDS))
def test_examples_are_a_block_and_exit_statuses_a_list(monkeypatch, command):
    text = text_lines(rendered_help(monkeypatch, 80, command))
    heading = next(i for i, line in enumerate(text) if line.strip() in ("Example:", "Examples:"))
    block = text[heading + 1:text.index("", heading)]
    assert block and all(line.startswith("   ") for line in block), block  # fits 80 columns, never re-wrapped
    assert any(line.strip().startswith(f"seglog {command}") for line in block)
    statuses = text[text.index(" Exit status:") + 1:]
    items = [line for line in statuses if line.startswith(" - ")]
    numbers = [int(re.match(r" - (\d+):", item).group(1)) for item in items]
    assert numbers == sorted(numbers) and 0 in numbers and len(numbers) >= 3


def test_the_checker_sees_a_stub_line():
    hard_wrapped = [" Takes partition directories and log dirs. --mode kafka does what the broker would",
                    " do at start-up", " (temp files, swaps)"]
    assert len(stubs(hard_wrapped, 80)) == 1  # the second line: '(temp' would have fitted after it
    assert len(stubs(hard_wrapped, 200)) == 2  # at 200 columns the first line ends early too


def test_flow_help_keeps_examples_and_items_and_flows_the_rest():
    text = ("Summary line.\n\nA paragraph written\nhard-wrapped ends:\nhere.\n\nExample:\n  seglog x \\\n"
            "      --y\n\nExit status:\n- 0: fine\n- 1: a long item\n  that goes on\n")
    assert flow_help(text) == ("Summary line.\n\nA paragraph written hard-wrapped ends: here.\n\n"
                               "Example:\n  seglog x \\\n      --y\n\nExit status:\n- 0: fine\n"
                               "- 1: a long item that goes on")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_argument_is_explained_in_help(monkeypatch, command):
    """The arguments panel shows each argument's help= (typer 0.25 on click >= 8.3 drops it unless
    cli.build_command puts it back)."""
    import inspect

    from seglog_cli.cli import build_command

    group = build_command([command])
    arguments = [p for p in group.commands[command].params if p.param_type_name == "argument"]
    assert arguments
    panel = " ".join(" ".join(line.strip(" │") for line in rendered_help(monkeypatch, 200, command)).split())
    for argument in arguments:
        declared = inspect.signature(group.commands[command].callback).parameters[argument.name].default.help
        assert declared and argument.help == declared
        assert " ".join(declared.split()) in panel, f"seglog {command} --help: {argument.name}'s help"
