"""MkDocs hook: placeholders in the pages expanded from seglog's code at build time.

One source for each fact: the pages hold no copy of an option, an exit status, a finding code or
an import rule. Each is read here from the code the CLI and the tests use:

``<!-- seglog:reference COMMAND -->``
    the command's usage, arguments and options (click's help records: the text ``--help`` shows)
    and the "Exit status:" list of its HELP; options are anchored ``#option-NAME``, arguments
    ``#argument-NAME``, the exit list ``#exit-status``.
``<!-- seglog:exit-statuses -->``
    ``seglog_cli.status.ExitStatus`` with ``MEANINGS``.
``<!-- seglog:findings -->``
    every code of ``seglog_cli.storage.log.findings.Code`` with ``FINDING_DOCS``; anchored by code
    (``findings.md#TIERED_OFFSET_GAP``).
``<!-- seglog:import-rules -->``
    the storage sub-packages' ``__init__`` docstrings ("May import: ..."), the text
    ``tests/test_import_direction.py`` enforces.
``<!-- seglog:fact NAME -->``
    one fact inline: ``python`` (the oldest Python ``pyproject.toml``'s ``requires-python`` admits),
    ``kafka`` (the Kafka release seglog follows, major.minor: ``seglog_cli.KAFKA_VERSION``),
    ``kafka-release`` (all of it), ``version`` (seglog's own).
``<!-- seglog:dependencies -->``
    ``pyproject.toml``'s dependencies and extras as tables, with the comment beside each.
``<!-- seglog:runbooks -->``
    ``examples/runbooks/README.md`` (the scripts, the options they share, their exit statuses,
    the ``--json`` document, undo) below its title, links to the scripts made paths.

An unknown placeholder or command fails the build.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
from pathlib import Path

PLACEHOLDER = re.compile(r"<!--\s*seglog:([a-z-]+)(?:\s+([A-Za-z0-9_-]+))?\s*-->")
STORAGE = Path(__file__).resolve().parents[1] / "seglog_cli" / "storage"
RUNBOOKS = Path(__file__).resolve().parents[1] / "examples" / "runbooks"


class PlaceholderError(Exception):
    pass


def on_page_markdown(markdown: str, page, config, files) -> str:
    from mkdocs.exceptions import PluginError

    def expand(match: re.Match) -> str:
        try:
            return expand_placeholder(match.group(1), match.group(2))
        except PlaceholderError as exc:
            raise PluginError(f"{page.file.src_uri}: {match.group(0)}: {exc}") from exc

    return PLACEHOLDER.sub(expand, markdown)


def expand_placeholder(kind: str, argument: str | None) -> str:
    if kind == "reference":
        if argument is None:
            raise PlaceholderError("names no command")
        return command_reference(argument)
    if kind == "fact":
        if argument not in FACTS:
            raise PlaceholderError(f"unknown fact (known: {', '.join(FACTS)})")
        return FACTS[argument]()
    renderers = {"exit-statuses": exit_statuses, "findings": findings, "import-rules": import_rules,
                 "runbooks": runbooks, "dependencies": dependencies}
    if kind not in renderers or argument is not None:
        raise PlaceholderError(f"unknown placeholder (known: reference COMMAND, {', '.join(renderers)})")
    return renderers[kind]()


def text(value: str) -> str:
    """Plain text made inert for Markdown (what --help shows, character for character)."""
    value = html.escape(value, quote=False)
    return re.sub(r"([\\`*_\[\]{}#|])", r"\\\1", value)


def rst_to_markdown(value: str) -> str:
    """The docstrings' ``literal`` as Markdown's `literal`."""
    return re.sub(r"``(.+?)``", r"`\1`", " ".join(value.split()))


# --- seglog:fact NAME, seglog:dependencies ------------------------------------------------------

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def pyproject() -> dict:
    import tomllib

    return tomllib.loads(PYPROJECT.read_text())


def python_version() -> str:
    """The oldest Python ``requires-python`` admits: ``>=3.11`` is 3.11."""
    match = re.fullmatch(r"\s*>=\s*(\d+\.\d+)\s*", pyproject()["project"]["requires-python"])
    if not match:
        raise PlaceholderError("requires-python is not of the form >=X.Y")
    return match.group(1)


def kafka_version(full: bool = False) -> str:
    from seglog_cli import KAFKA_VERSION

    return KAFKA_VERSION if full else ".".join(KAFKA_VERSION.split(".")[:2])


def seglog_version() -> str:
    from seglog_cli import __version__

    return __version__


FACTS = {"python": python_version, "kafka": kafka_version, "kafka-release": lambda: kafka_version(True),
         "version": seglog_version}


def requirement_comments() -> dict[tuple[str, str], str]:
    """The comment on each requirement's line of pyproject.toml (what it is for, in our words), by
    (list, name): the list is ``dependencies`` or the extra's name."""
    comments, section = {}, ""
    for line in PYPROJECT.read_text().splitlines():
        opening = re.match(r"\s*([\w-]+)\s*=\s*\[", line)
        if opening:
            section = opening.group(1)
        match = re.match(r'\s*"([A-Za-z0-9_.\[\]-]+)[^"]*",?\s*(?:#\s*(.*))?$', line)
        if match:
            comments[section, requirement_name(match.group(1))] = (match.group(2) or "").strip()
    return comments


def requirement_name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower()


def dependencies() -> str:
    project = pyproject()["project"]
    comments = requirement_comments()

    def table(section: str, requirements: list[str]) -> list[str]:
        rows = ["| Package | Version | Why |", "|---|---|---|"]
        for requirement in requirements:
            name = requirement_name(requirement)
            extras = re.match(r"\[[^\]]*\]", requirement[len(name):])
            spec = requirement[len(name) + (extras.end() if extras else 0):].strip() or "any"
            shown = name + (extras.group(0) if extras else "")
            rows.append(f"| `{shown}` | `{spec}` | {text(comments.get((section, name), ''))} |")
        return rows

    lines = ["Installed with seglog (`pip install .`):", "", *table("dependencies", project["dependencies"]), ""]
    for extra, requirements in project["optional-dependencies"].items():
        lines += [f"The `{extra}` extra (`pip install '.[{extra}]'`):", "", *table(extra, requirements), ""]
    return "\n".join(lines)


# --- seglog:reference COMMAND -------------------------------------------------------------------

def command_objects(name: str):
    """(click context, click command, HELP) of the command ``name``, built as ``seglog`` builds it."""
    import click

    from seglog_cli.cli import COMMANDS, build_command

    if name not in COMMANDS:
        raise PlaceholderError(f"no command {name!r} (commands: {', '.join(COMMANDS)})")
    group = build_command([name])
    command = group.commands[name]
    context = click.Context(command, info_name=name, parent=click.Context(group, info_name="seglog"))
    module = importlib.import_module(f"seglog_cli.commands.{COMMANDS[name][0]}")
    return context, command, module.HELP


def option_anchor(param) -> str:
    longest = max(param.opts, key=len).lstrip("-")
    return f"option-{longest}"


def argument_anchor(param) -> str:
    return f"argument-{param.name.replace('_', '-')}"


def documented_params(name: str):
    """(anchor, names as --help shows them, help text with its [default: ...], param) of every
    argument and option of the command ``name`` but --help."""
    context, command, _ = command_objects(name)
    out = []
    for param in command.get_params(context):
        if param.name in ("help", "_click_default_help") or "--help" in param.opts:
            continue
        if param.param_type_name == "argument":
            names = param.make_metavar(context) if _takes_context(param.make_metavar) else param.make_metavar()
            help_text = getattr(param, "help", None) or ""
            out.append((argument_anchor(param), names, help_text, param))
        else:
            names, help_text = param.get_help_record(context)
            out.append((option_anchor(param), names, help_text, param))
    return out


def _takes_context(method) -> bool:
    return "ctx" in inspect.signature(method).parameters


def exit_status_items(help_text: str) -> list[tuple[str, str]]:
    """(status, meaning) of the HELP's "Exit status:" list, continuation lines joined."""
    _, found, tail = help_text.partition("\nExit status:\n")
    if not found:
        raise PlaceholderError("its HELP has no 'Exit status:' list")
    items: list[list[str]] = []
    for line in tail.splitlines():
        if line.startswith("- "):
            items.append(line[2:].split(":", 1))
        elif line.startswith("  ") and items:
            items[-1][-1] += " " + line.strip()
        elif line.strip():
            break
    return [(status.strip(), " ".join(meaning.split())) for status, meaning in items]


def command_reference(name: str) -> str:
    context, command, help_text = command_objects(name)
    usage = " ".join(["seglog", name] + command.collect_usage_pieces(context))
    params = documented_params(name)
    lines = ["## Reference", "", "Generated from the command's own definition: the text `seglog "
             f"{name} --help` shows.", "", "```text", usage, "```", ""]
    arguments = [p for p in params if p[3].param_type_name == "argument"]
    options = [p for p in params if p[3].param_type_name != "argument"]
    for title, group in (("Arguments", arguments), ("Options", options)):
        if not group:
            continue
        lines += [f"### {title}", ""]
        for anchor, names, help_record, param in group:
            lines += [f'<a id="{anchor}"></a>`{names}`', f":   {text(help_record) or '(no help text)'}"]
            facts = _facts(param)
            if facts:
                lines.append(f"    <br>{facts}")
            lines.append("")
    lines += ["### Exit status {#exit-status}", ""]
    lines += [f"- **{status}:** {text(meaning)}" for status, meaning in exit_status_items(help_text)]
    lines.append("")
    lines.append("What each number means for every command: [exit statuses](../exit-statuses.md).")
    return "\n".join(lines) + "\n"


def _facts(param) -> str:
    """Type or choices, and whether the option is required or may repeat: from click's param."""
    import click

    facts = []
    if isinstance(param.type, click.Choice):
        facts.append("one of " + ", ".join(f"`{choice}`" for choice in param.type.choices))
    elif not getattr(param, "is_flag", False) and param.type.name:
        facts.append(f"type: {text(param.type.name)}")
    if param.required:
        facts.append("required")
    if getattr(param, "multiple", False) or param.nargs == -1:
        facts.append("may be given more than once")
    return "<small>" + "; ".join(facts) + "</small>" if facts else ""


# --- seglog:exit-statuses -----------------------------------------------------------------------

def exit_statuses() -> str:
    from seglog_cli.status import MEANINGS, ExitStatus

    lines = ["| Status | Name | Meaning |", "|---:|---|---|"]
    for member_name, member in sorted(ExitStatus.__members__.items(), key=lambda item: int(item[1])):
        meaning = MEANINGS.get(member_name)
        if not meaning:
            raise PlaceholderError(f"ExitStatus.{member_name} has no meaning in seglog_cli.status.MEANINGS")
        lines.append(f'| <span id="status-{int(member)}-{member_name.lower()}">{int(member)}</span> '
                     f"| `{member_name}` | {text(meaning)} |")
    return "\n".join(lines) + "\n"


# --- seglog:findings ----------------------------------------------------------------------------

def finding_groups() -> list[tuple[str, list[str]]]:
    """The codes in the order ``Code`` declares them, under its comment lines (``# .index``)."""
    from seglog_cli.storage.log.findings import Code

    groups: list[tuple[str, list[str]]] = []
    for line in inspect.getsource(Code).splitlines():
        comment = re.match(r"\s+# (.+)", line)
        code = re.match(r"\s+([A-Z0-9_]+) = \"\1\"", line)
        if comment:
            groups.append((comment.group(1), []))
        elif code:
            if not groups:
                groups.append(("", []))
            groups[-1][1].append(code.group(1))
    return groups


def finding_severities(code: str) -> tuple[list[str], str]:
    """(severities, what decides between them) of ``code``: FINDING_DOCS, plus the warning an
    index error becomes in a segment Kafka's next start-up rebuilds (verify's REBUILT_BY_RECOVERY)."""
    from seglog_cli.storage.log.findings import FINDING_DOCS, Severity
    from seglog_cli.storage.verify.verify_partition import REBUILT_BY_RECOVERY

    doc = FINDING_DOCS[code]
    severities = set(doc.severities)
    notes = [doc.depends] if doc.depends else []
    if code in REBUILT_BY_RECOVERY and Severity.ERROR in severities:
        severities.add(Severity.WARNING)
        notes.append("an error becomes a warning in a segment Kafka's next start-up recovers anyway (no "
                     ".kafka_cleanshutdown, at or past the recovery point): its indexes are rebuilt then")
    ordered = [s.value for s in sorted(severities, key=lambda s: s.rank)]
    return ordered, "; ".join(notes)


def findings() -> str:
    from seglog_cli.storage.log.findings import FINDING_DOCS

    groups = finding_groups()
    missing = [code for _, codes in groups for code in codes
               if code not in FINDING_DOCS or not FINDING_DOCS[code].meaning or not FINDING_DOCS[code].action]
    if missing:
        raise PlaceholderError(f"finding codes without a meaning or action in FINDING_DOCS: {', '.join(missing)}")
    lines = ["| Code | Severity | Meaning |", "|---|---|---|"]
    for _, codes in groups:
        for code in codes:
            severities, _ = finding_severities(code)
            first = FINDING_DOCS[code].meaning.split(": ")[0].split(". ")[0].rstrip(".")
            lines.append(f"| [`{code}`](#{code}) | {' / '.join(severities)} | {text(first)} |")
    lines.append("")
    for title, codes in groups:
        lines += [f"## {text(title[0].upper() + title[1:])}", ""]
        for code in codes:
            doc = FINDING_DOCS[code]
            severities, depends = finding_severities(code)
            severity = " or ".join(severities) + (f" ({text(depends)})" if depends else "")
            lines += [f"### `{code}` {{#{code}}}", "", f"**Severity:** {severity}", "",
                      _inline_code(text(doc.meaning)), "", f"**What to do:** {_inline_code(text(doc.action))}", ""]
    return "\n".join(lines)


def _inline_code(escaped: str) -> str:
    """`seglog recover ...` in FINDING_DOCS as code (the one markup the docs there use)."""
    return re.sub(r"\\`(.+?)\\`", lambda m: "`" + m.group(1).replace("\\", "") + "`", escaped)


# --- seglog:import-rules ------------------------------------------------------------------------

def storage_rules() -> dict[str, tuple[str, str, set[str]]]:
    """package -> (first paragraph, "May import: ..." sentence, storage packages it names)."""
    rules = {}
    for init in sorted(STORAGE.glob("*/__init__.py")):
        doc = _module_docstring(init)
        match = re.search(r"May import:(.*?)(?:\n\n|$)", doc, re.S)
        if not match:
            raise PlaceholderError(f"storage/{init.parent.name}/__init__.py says nothing of what it may import")
        rules[init.parent.name] = (doc.split("\n\n")[0], "May import:" + match.group(1),
                                   set(re.findall(r"``storage\.(\w+)``", match.group(1))))
    return rules


def _module_docstring(path: Path) -> str:
    import ast

    return ast.get_docstring(ast.parse(path.read_text())) or ""


def import_rules() -> str:
    rules = storage_rules()
    depth: dict[str, int] = {}

    def layer(name: str) -> int:
        if name not in depth:
            depth[name] = 1 + max((layer(other) for other in rules[name][2] if other in rules), default=-1)
        return depth[name]

    lines = ["| Layer | Package | What it is | May import |", "|---:|---|---|---|"]
    for name in sorted(rules, key=lambda n: (layer(n), n)):
        what, may, _ = rules[name]
        may = may.removeprefix("May import:").strip()
        cells = [rst_to_markdown(what).replace("|", "\\|"), rst_to_markdown(may).replace("|", "\\|")]
        lines.append(f"| {layer(name)} | `storage.{name}` | {cells[0]} | {cells[1]} |")
    lines += ["", "Outside the engine, what each part of `seglog_cli` may not import (the test's `FORBIDDEN`):", "",
              "| Part | May not import |", "|---|---|"]
    for part, forbidden in _forbidden().items():
        lines.append(f"| `{part}` | {', '.join(f'`{name}`' for name in sorted(forbidden))} |")
    return "\n".join(lines) + "\n"


def _forbidden() -> dict[str, set[str]]:
    """``FORBIDDEN`` of tests/test_import_direction.py, the rule as the test enforces it."""
    import importlib.util

    path = STORAGE.parents[1] / "tests" / "test_import_direction.py"
    spec = importlib.util.spec_from_file_location("_seglog_import_direction", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FORBIDDEN


# --- the library page: seglog_cli.api's docstrings as mkdocstrings reads them --------------------

try:
    from griffe import Extension as _GriffeExtension
except ImportError:  # the hook's placeholders work without mkdocstrings
    _GriffeExtension = object


def docstring_markdown(value: str) -> str:
    """A reST-flavoured docstring as Markdown: doctest blocks (``>>>`` to the next blank line) fenced
    as ``pycon``, ``:func:`name``` roles as `name`, ``literal`` as `literal` (outside the blocks)."""
    out, block = [], []
    for line in value.splitlines() + [""]:
        if block and line.strip():
            block.append(line)
            continue
        if block:
            indent = block[0][: len(block[0]) - len(block[0].lstrip())]
            out += [indent + "```pycon", *block, indent + "```"]
            block = []
        if line.lstrip().startswith(">>>"):
            block.append(line)
        else:
            line = re.sub(r":(?:func|class|meth|attr|mod|data|exc|obj):`~?([^`]+)`", r"`\1`", line)
            out.append(re.sub(r"``([^`]+)``", r"`\1`", line))
    return "\n".join(out[:-1])


class DocstringMarkdown(_GriffeExtension):
    """Griffe extension (mkdocs.yml: ``extensions: [docs/hooks.py:DocstringMarkdown]``)."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if getattr(obj, "docstring", None) is not None:
            obj.docstring.value = docstring_markdown(obj.docstring.value)


# --- seglog:runbooks -----------------------------------------------------------------------------

def runbooks() -> str:
    """The runbooks' README below its title, one heading level down, ``[`x.sh`](x.sh)`` links as
    the path ``examples/runbooks/x.sh`` (the site holds no scripts to link to)."""
    text = (RUNBOOKS / "README.md").read_text()
    body = text.split("\n", 1)[1] if text.startswith("# ") else text
    body = re.sub(r"\[`([\w.-]+)`\]\(\1\)", r"`examples/runbooks/\1`", body)
    body = re.sub(r"^## ", "### ", body, flags=re.M)
    if re.search(r"\]\((?!https?:)[^)]*\)", body):
        raise PlaceholderError("examples/runbooks/README.md links to a file the site does not have")
    return body


# --- the pictures: drawn from the bundled example by seglog's own code at every build ------------

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "logdir"
# the retention picture is the one `seglog simulate-retention` draws with these arguments (the
# page shows the command); the layout picture is orders-0's
RETENTION_ARGS = ["--config", "retention.ms=600000", "--now", "2026-01-01T00:10:00Z", "--at", "+2m", "--at", "+10m"]
LAYOUT_PARTITION = "orders-0"


def retention_picture() -> bytes:
    """``seglog simulate-retention RETENTION_ARGS --plot x.svg examples/logdir``, run in process."""
    import contextlib
    import io
    import tempfile

    from seglog_cli.cli import main

    with tempfile.TemporaryDirectory() as scratch:
        target = Path(scratch) / "retention-timeline.svg"
        shown, errors = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(errors):
            status = main(["simulate-retention", *RETENTION_ARGS, "--plot", str(target), str(EXAMPLE)])
        if status not in (0, 1) or not target.is_file():
            raise PlaceholderError(f"simulate-retention --plot exited {status}: {errors.getvalue().strip()}")
        return target.read_bytes()


def layout_picture() -> bytes:
    import io

    from seglog_cli.render.plots import layout_figure, read_layout
    from seglog_cli.storage.retention.retention import read_partition_state

    partition = EXAMPLE / LAYOUT_PARTITION
    out = io.BytesIO()
    layout_figure(read_layout(partition, read_partition_state(partition)), out, "svg")
    return out.getvalue()


PICTURES = {"retention-timeline.svg": retention_picture, "partition-layout.svg": layout_picture}


def on_files(files, config):
    """Add the pictures to the site as img/NAME (the pages link ``img/NAME``; strict mode checks it)."""
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    for name, draw in PICTURES.items():
        try:
            content = draw()
        except Exception as exc:  # noqa: BLE001 - any failure fails the build with its reason
            raise PluginError(f"img/{name}: {type(exc).__name__}: {exc}") from exc
        files.append(File.generated(config, f"img/{name}", content=content))
    return files
