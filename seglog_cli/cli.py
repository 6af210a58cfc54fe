"""The ``seglog`` command line: one typer app, one module per subcommand."""

from __future__ import annotations

import typer

from seglog_cli import __version__
from seglog_cli.commands import dump

app = typer.Typer(
    name="seglog",
    help="Inspect and repair Apache Kafka log directories offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

app.command("dump", help=dump.HELP, no_args_is_help=True)(dump.dump_command)


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
