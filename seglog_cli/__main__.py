from seglog_cli.cli import run

run()
