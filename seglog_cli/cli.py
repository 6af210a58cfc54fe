"""The ``seglog`` command line: one typer app, one module per subcommand."""

from __future__ import annotations

import sys

import typer
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperCommand

from seglog_cli import __version__
from seglog_cli.commands import dump
from seglog_cli.status import ExitStatus


class OneLineUsageErrors(TyperCommand):
    """A bad option or argument is one ``seglog: usage error:`` line and exit status 2, like
    the usage errors found after parsing, instead of click's usage block."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except NoArgsIsHelpError:
            raise
        except UsageError as exc:
            message = " ".join(exc.format_message().split())
            print(f"seglog: usage error: {message}", file=sys.stderr)
            raise typer.Exit(ExitStatus.USAGE) from None


app = typer.Typer(
    name="seglog",
    help="Inspect and repair Apache Kafka log directories offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

app.command("dump", help=dump.HELP, no_args_is_help=True, cls=OneLineUsageErrors)(dump.dump_command)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"seglog {__version__}")
        raise typer.Exit()


@app.callback()
def main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit.")) -> None:
    """Inspect and repair Apache Kafka log directories offline."""


def run() -> None:
    app()
