"""The ``seglog`` command line: one typer app, one module per subcommand.

Exit statuses are mapped in one place: commands return them through ``typer.Exit``; usage errors
caught while parsing become one ``seglog: usage error: ...`` line and status 2 here.
"""

from __future__ import annotations

import re
import sys

import typer

from seglog_cli import __version__
from seglog_cli.commands import append, dump, offsets, rebuild_index, recover, simulate_retention, transactions, undo, verify
from seglog_cli.status import ExitStatus, guarded

# click's UsageError, whether typer vendors click or depends on it
_UsageError = typer.BadParameter.__mro__[1]

app = typer.Typer(
    name="seglog",
    help="Inspect and repair Apache Kafka log directories offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

app.command("dump", help=dump.HELP, no_args_is_help=True)(dump.dump_command)
app.command("verify", help=verify.HELP, no_args_is_help=True)(verify.verify_command)
app.command("rebuild-index", help=rebuild_index.HELP, no_args_is_help=True)(rebuild_index.rebuild_index_command)
app.command("recover", help=recover.HELP, no_args_is_help=True)(recover.recover_command)
app.command("undo", help=undo.HELP, no_args_is_help=True)(undo.undo_command)
app.command("append", help=append.HELP, no_args_is_help=True)(append.append_command)
app.command("simulate-retention", help=simulate_retention.HELP, no_args_is_help=True)(
    simulate_retention.simulate_retention_command)
app.command("offsets", help=offsets.HELP, no_args_is_help=True)(offsets.offsets_command)
app.command("transactions", help=transactions.HELP, no_args_is_help=True)(transactions.transactions_command)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"seglog {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Inspect and repair Apache Kafka log directories offline."""


def main(argv: list[str] | None = None) -> int:
    """Run seglog with ``argv`` (default: the process arguments) and return the exit status."""
    try:
        result = app(args=argv, prog_name="seglog", standalone_mode=False)
    except _UsageError as exc:
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
