"""Facts stated in the docs' prose are checked against the files they come from.

The pages may say a fact in words (the generated parts, ``<!-- seglog:fact ... -->`` and the
reference, say it for them), but what they say must be what the project's files say:

- the Python version: ``requires-python`` in pyproject.toml;
- the Kafka version: ``seglog_cli.KAFKA_VERSION`` (an older one only where the sentence says so:
  "deleted in Kafka 4.1");
- the extras and the packages ``pip install`` names: pyproject.toml;
- an exit status a command page states: that command's "Exit status:" list (or the other command
  the sentence names);
- a ``--option``: an option of some seglog command (of the page's command, on a command page,
  unless the sentence names another);
- a default stated beside an option: the option's default, or a value its help gives;
- a code name in capitals (``PARTITION_GOES_STRAY``, ``LEADER_NOT_AVAILABLE``): a name seglog's
  code has.

Code blocks are not checked here: ``tests/test_docs_examples.py`` runs them.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from tests.conftest import REPO
from tests.docs_prose import blocks
from tests.test_docs_site import hooks

DOCS = REPO / "docs"
PAGES = [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]
PYTHON = re.compile(r"\bPython (\d+\.\d+)")
KAFKA = re.compile(r"\b(?:Apache )?Kafka(?:'s)? (\d+\.\d+(?:\.\d+)?)\b|\bkafka-dump-log(?:\.sh)? (\d+\.\d+(?:\.\d+)?)\b")
HISTORY = re.compile(r"\b(?:in|since|before|until|up to|from|pre-|as of|older|earlier|removed|deleted|added|"
                     r"introduced|through|to)\s*$", re.I)
EXTRA = re.compile(r"(?:\.|seglog)\[([\w,-]+)\]")
PIP_INSTALL = re.compile(r"\bpip install ([^`\n]+)")
EXIT = re.compile(r"\b(?:exit(?:s|ed|ing)?|exit status(?:es)?|status)(?: with| of| is)?:? (\d{1,3})\b(?!\s*(?:%|ms|s\b|bytes|MB))",
                  re.I)
OPTION = re.compile(r"`(--[a-z][a-z0-9-]*)")
DEFAULT = re.compile(r"`(--[a-z][a-z0-9-]*)[^`]*`[^.;]*?\bdefault(?:s)?(?: is| to| of)?:? `?([^\s`,;)]+)", re.I)
CODE_NAME = re.compile(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`")
SEGLOG_COMMAND = re.compile(r"\bseglog ([a-z][a-z-]+)")
NOT_SEGLOG = re.compile(r"\b(?:pytest|kafka-[\w-]+|java|spark-submit|pip|runbook|script|\.sh\b)", re.I)
# environment variables of the libraries seglog runs on (boto/s3fs, Google's, fsspec's, Spark's, Java's)
OTHERS_NAMES = re.compile(r"^(?:AWS|GOOGLE|FSSPEC|AZURE|SPARK|PYSPARK|JAVA|HADOOP)_")


def page_id(page):
    return str(page.relative_to(REPO))


@cache
def commands() -> dict[str, tuple[set[int], dict[str, object]]]:
    """Each command's exit statuses and options (every name of each, to its click param)."""
    from seglog_cli.cli import COMMANDS

    found = {}
    for name in COMMANDS:
        _, _, help_text = hooks.command_objects(name)
        statuses = {int(status) for status, _ in hooks.exit_status_items(help_text)}
        options = {}
        for _, _, _, param in hooks.documented_params(name):
            for opt in (*param.opts, *param.secondary_opts):
                options[opt] = param
        found[name] = (statuses, options)
    return found


def sentences(page) -> list[str]:
    """The page's prose (paragraphs, list items, table rows, admonition titles) as sentences."""
    text = []
    for block in blocks(page.read_text()):
        if block.kind in ("prose", "item", "admonition"):
            text.append(block.text)
        elif block.kind == "table":
            text.extend(block.text.splitlines())
    return [s for chunk in text for s in re.split(r"(?<=[.;!?])\s+(?=[A-Z`(])", chunk)]


def page_command(page) -> str | None:
    return page.stem if page.parent.name == "commands" and page.suffix == ".md" else None


def python_problems(page) -> list[str]:
    wanted = hooks.python_version()
    return [f"'Python {v}': pyproject.toml's requires-python says {wanted}"
            for s in sentences(page) for v in PYTHON.findall(s) if v != wanted]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def kafka_problems(page) -> list[str]:
    from seglog_cli import KAFKA_VERSION

    ours = _version(KAFKA_VERSION)
    problems = []
    for sentence in sentences(page):
        for match in KAFKA.finditer(sentence):
            stated = _version(match.group(1) or match.group(2))
            if stated == ours[:len(stated)]:
                continue
            historic = HISTORY.search(sentence[:match.start()][-40:]) is not None
            if stated > ours[:len(stated)] or not historic:
                problems.append(f"'{match.group(0)}': seglog follows Kafka {KAFKA_VERSION} "
                                "(an older release only after 'in', 'since', 'before', ...)")
    return problems


def dependency_problems(page) -> list[str]:
    extras = set(hooks.pyproject()["project"]["optional-dependencies"])
    named = (REPO / "pyproject.toml").read_text().lower()
    problems = []
    for sentence in [*sentences(page), *[b.text for b in blocks(page.read_text()) if b.kind == "code"]]:
        for match in EXTRA.finditer(sentence):
            problems += [f"extra '{e}' is not in pyproject.toml" for e in match.group(1).split(",") if e not in extras]
        for match in PIP_INSTALL.finditer(sentence):
            for word in re.split(r"\s*(?:&&|\|\||;|\|)", match.group(1))[0].split():
                word = word.strip("'\"").rstrip(".,;:)")
                name = re.fullmatch(r"([A-Za-z][\w-]*)(?:\[[\w,-]*\])?(?:[<>=!~].*)?", word)
                if word.startswith(("-", ".", "/", "$")) or not name or word == "seglog":
                    continue  # an option, a path or a wheel file, this project
                if not re.search(rf"\b{re.escape(name.group(1).lower())}\b", named):
                    problems.append(f"'pip install {name.group(1)}': pyproject.toml names no such package")
    return problems


def exit_problems(page) -> list[str]:
    from seglog_cli.status import ExitStatus

    everything = {int(s) for s in ExitStatus}
    own = page_command(page)
    problems = []
    for sentence in sentences(page):
        if NOT_SEGLOG.search(sentence):
            continue
        others = [c for c in SEGLOG_COMMAND.findall(sentence) if c in commands() and c != own]
        for value in map(int, EXIT.findall(sentence)):
            if own is not None and not others:
                allowed, whose = commands()[own][0], f"seglog {own}'s exit statuses"
            elif others:
                allowed = set().union(*(commands()[c][0] for c in others))
                whose = "the exit statuses of " + ", ".join(f"seglog {c}" for c in others)
            else:
                allowed, whose = everything, "ExitStatus"
            if value not in allowed:
                problems.append(f"exit {value} in '{sentence[:80]}': not one of {whose} {sorted(allowed)}")
    return problems


def option_problems(page) -> list[str]:
    own = page_command(page)
    problems = []
    for sentence in sentences(page):
        others = [c for c in SEGLOG_COMMAND.findall(sentence) if c in commands()]
        if NOT_SEGLOG.search(sentence) or (own is None and not others):
            continue  # another program's options, or a guide's sentence that names no seglog command
        allowed = set().union(*(commands()[c][1] for c in others)) if others else set(commands()[own][1])
        allowed |= {"--help", "--version"} | (set(commands()[own][1]) if own else set())
        for option in OPTION.findall(sentence):
            if option not in allowed:
                problems.append(f"'{option}' in '{sentence[:80]}': no such option"
                                + " of " + ", ".join(f"seglog {c}" for c in (others or [own])))
    return problems


def default_problems(page) -> list[str]:
    own = page_command(page)
    problems = []
    for sentence in sentences(page):
        for option, value in DEFAULT.findall(sentence):
            owners = [c for c in ([own] if own else []) + SEGLOG_COMMAND.findall(sentence) if c in commands()]
            params = [commands()[c][1][option] for c in owners if option in commands()[c][1]]
            if not params:
                continue
            value = value.rstrip(".,;:()'\"")
            if not any(default_says(param, value) for param in params):
                problems.append(f"'{option}' default '{value}' in '{sentence[:80]}': the option's default is "
                                f"{params[0].default!r}, its help does not say {value!r}")
    return problems


def default_says(param, value: str) -> bool:
    """Whether ``value`` is the option's default: its value, or what its help says the default is
    (an option whose default is computed has None and says it in words)."""
    default = getattr(param.default, "value", param.default)
    if default not in (None, (), [], False):
        return value.lower() == str(default).lower() or \
            (re.fullmatch(r"[\d.]+", value) is not None and float(value) == float(default))
    help_text = getattr(param, "help", "") or ""
    return re.search(rf"\bdefault(?:s)?(?: is| to)?:? `?{re.escape(value)}", help_text, re.I) is not None


@cache
def code_names() -> str:
    return "\n".join(path.read_text(errors="replace") for folder in ("seglog_cli", "formats", "tests")
                     for path in (REPO / folder).rglob("*.py") if path.name != "test_docs_facts.py")


def code_name_problems(page) -> list[str]:
    source = code_names()
    return sorted({f"`{name}`: no such name in seglog_cli/, formats/ or tests/" for s in sentences(page)
                   for name in CODE_NAME.findall(s)
                   if not OTHERS_NAMES.match(name) and not re.search(rf"\b{name}\b", source)})


CHECKS = {"python": python_problems, "kafka": kafka_problems, "dependencies": dependency_problems,
          "exit": exit_problems, "options": option_problems, "defaults": default_problems,
          "code-names": code_name_problems}


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_facts_are_the_codes(page, check):
    assert CHECKS[check](page) == []


def test_the_checks_catch_a_wrong_fact(tmp_path):
    page = tmp_path / "commands" / "recover.md"
    page.parent.mkdir()
    page.write_text("# `seglog recover`\n\nNeeds Python 3.10 and Kafka 4.3, not Kafka 4.1. Deleted in Kafka 4.1.\n\n"
                    "Install `.[nosuch]`, then pip install leftpad.\n\nIt exits 9 when damaged. `seglog verify` "
                    "exits 3.\n\n`--mode` (default `salvage`) and `--frobnicate`.\n\nFinds `NO_SUCH_FINDING`.\n")
    found = {name: check(page) for name, check in CHECKS.items()}
    assert len(found["python"]) == 1 and len(found["kafka"]) == 2, found
    assert len(found["dependencies"]) == 2, found
    assert len(found["exit"]) == 1 and "exit 9" in found["exit"][0], found
    assert found["options"] == ["'--frobnicate' in '`--mode` (default `salvage`) and `--frobnicate`.': no such "
                                "option of seglog recover"], found
    assert len(found["defaults"]) == 1 and "salvage" in found["defaults"][0], found
    assert found["code-names"] == ["`NO_SUCH_FINDING`: no such name in seglog_cli/, formats/ or tests/"]
