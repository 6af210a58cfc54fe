"""The ``seglog`` command line: one typer app, one module per subcommand.

Exit statuses are mapped in one place: commands return them through ``typer.Exit``; usage errors
caught while parsing become one ``seglog: usage error: ...`` line and status 2 here.
"""

from __future__ import annotations

import re
import sys

from seglog_cli import KAFKA_VERSION, __version__
from seglog_cli.status import ExitStatus, guarded

# name -> (module, function): a command's module (and what it imports: rich, the write path...)
# is imported only when that command runs, so a runbook calling seglog a dozen times per
# partition does not pay for the others at every start
COMMANDS = {
    "dump": ("dump", "dump_command"),
    "verify": ("verify", "verify_command"),
    "rebuild-index": ("rebuild_index", "rebuild_index_command"),
    "recover": ("recover", "recover_command"),
    "undo": ("undo", "undo_command"),
    "append": ("append", "append_command"),
    "simulate-retention": ("simulate_retention", "simulate_retention_command"),
    "offsets": ("offsets", "offsets_command"),
    "transactions": ("transactions", "transactions_command"),
    "diff": ("diff", "diff_command"),
    "repair": ("repair", "repair_command"),
    "replay": ("replay", "replay_command"),
    "metadata": ("metadata", "metadata_command"),
}


def flow_help(text: str) -> str:
    """A command's HELP, written hard-wrapped for the source, as one line per paragraph so that
    rich wraps it at the terminal's width (typer keeps the line breaks it is given). Kept as
    written: a block under a line ending in ':' whose lines are indented (examples), and list
    items ('- '; their indented continuation lines are joined to them)."""
    paragraphs = []
    for paragraph in text.strip().split("\n\n"):
        lines, out, state = paragraph.split("\n"), [], "text"
        for index, line in enumerate(lines):
            if line.startswith("- "):
                out.append(line)  # a list item
                state = "item"
            elif line.startswith("  ") and state == "item":
                out[-1] += " " + line.strip()  # the item goes on
            elif line.startswith("  ") and (state == "example" or (index > 0 and lines[index - 1].endswith(":"))):
                out.append(line)  # an example: as written
                state = "example"
            elif not out:
                out.append(line)
            else:
                out[-1] += " " + line.strip()  # the same paragraph, flowing
        paragraphs.append("\n".join(out))
    return "\n\n".join(paragraphs)


def _version(value: bool) -> None:
    import typer

    if value:
        typer.echo(f"seglog {__version__} (Apache Kafka {KAFKA_VERSION}'s formats and rules)")
        raise typer.Exit()


def build_app(names=None):
    """The typer app with the commands ``names`` (default: all, for ``--help``)."""
    import importlib

    import typer

    app = typer.Typer(
        name="seglog",
        help="Inspect and repair Apache Kafka log directories offline.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    for name in names or COMMANDS:
        module_name, function = COMMANDS[name]
        module = importlib.import_module(f"seglog_cli.commands.{module_name}")
        app.command(name, help=flow_help(module.HELP), no_args_is_help=True)(getattr(module, function))

    @app.callback()
    def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                           help="Print the version and exit.")) -> None:
        """Inspect and repair Apache Kafka log directories offline."""

    return app


def build_command(names=None):
    """The click group ``seglog`` runs: :func:`build_app`'s, with each argument's ``help=``.

    typer (0.25) sets an argument's help before click's ``Parameter.__init__``, which since click
    8.3 sets its own ``help`` (None) over it, so ``--help`` would list the arguments bare. The help
    is put back here from the command function's declaration, the one place it is written."""
    import inspect

    import typer

    group = typer.main.get_command(build_app(names))
    for name, command in group.commands.items():
        function = command.callback
        declared = inspect.signature(function).parameters if function is not None else {}
        for param in command.params:
            if getattr(param, "param_type_name", "") == "argument" and not getattr(param, "help", None):
                info = declared.get(param.name)
                param.help = getattr(info.default, "help", None) if info is not None else None
    return group


def _command_named(argv: list[str]) -> str | None:
    """The subcommand the arguments name (the first word that is not an option), if known."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def main(argv: list[str] | None = None) -> int:
    """Run seglog with ``argv`` (default: the process arguments) and return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # answered before anything else is imported
        print(f"seglog {__version__} (Apache Kafka {KAFKA_VERSION}'s formats and rules)")
        return ExitStatus.OK
    name = _command_named(argv)
    if name is not None and any("://" in word for word in argv):  # s3://, gs://, file://...: a local view
        from seglog_cli.commands.remote_inputs import run_with_views

        return run_with_views(argv, name, lambda local: guarded(lambda: _run_app(local)))
    return _run_app(argv)


def _run_app(argv: list[str]) -> int:
    import typer

    usage_error = typer.BadParameter.__mro__[1]  # click's UsageError, whether typer vendors click or not
    name = _command_named(argv)
    command = build_command([name] if name is not None else None)
    try:
        result = command.main(args=argv, prog_name="seglog", standalone_mode=False)
    except usage_error as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # no arguments: the help text
        else:
            print(f"seglog: usage error: {_one_line(exc.format_message())}", file=sys.stderr)
        return ExitStatus.USAGE
    except typer.Abort:
        print("seglog: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    return result if isinstance(result, int) else ExitStatus.OK


def _one_line(message: str) -> str:
    """click's message on one line, each sentence once (some versions repeat a suggestion)."""
    sentences = re.split(r"(?<=[.?!])\s+", " ".join(message.split()))
    return " ".join(dict.fromkeys(sentences))


def run() -> None:
    sys.exit(guarded(main))
