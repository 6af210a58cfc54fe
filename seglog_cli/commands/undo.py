"""``seglog undo``: put back every file a seglog command changed, from its backup directory."""

from __future__ import annotations

import sys

import typer

from seglog_cli.status import ExitStatus, guarded
from seglog_cli.storage.safety import read_manifest, undo_under_lock

HELP = """Undo what a seglog command wrote, from the backup directory it left (its manifest.json).

Every command that writes (rebuild-index, append, ...) first copies what it replaces, truncates
or removes into seglog-backups/<time>-<command>-<pid>/ beside the log dir, with a manifest of
each step. undo replays that manifest backwards: created files removed, appended files cut back,
originals restored. It works after a crash in the middle of the command too. Without --apply it
only lists what it would do. It takes the log dir's .lock like the other writing commands.

Example: seglog undo --apply /var/lib/kafka/seglog-backups/20261122T154500Z-rebuild-index-4242

Exit status: 0 done (or nothing to do); 1 actions listed (not applied); 2 usage error;
3 the backup is unusable; 5 a broker holds the log dir's .lock.
"""


def undo_command(
    backup_dir: str = typer.Argument(..., help="A directory under seglog-backups/ holding manifest.json."),
    apply: bool = typer.Option(False, "--apply", help="Restore (default: only list what would be restored)."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(backup_dir, apply) -> int:
    document = read_manifest(backup_dir)
    lines = undo_under_lock(backup_dir, dry_run=not apply)
    for line in lines:
        sys.stdout.write(("" if apply else "would ") + line + "\n")
    state = "complete" if document["complete"] else "interrupted"
    sys.stdout.write(f"{document['command']} of {document['started']} ({state}, {len(document['changes'])} "
                     f"change(s)): {len(lines)} action(s) {'done' if apply else 'to do; run again with --apply'}\n")
    return ExitStatus.OK if apply or not lines else ExitStatus.WARNINGS
