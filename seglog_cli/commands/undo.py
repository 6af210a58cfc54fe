"""``seglog undo``: put back every file a seglog command changed, from its backup directory."""

from __future__ import annotations

import sys

import typer

from seglog_cli.status import ExitStatus, guarded
from seglog_cli.storage.write.undo import undo

HELP = """Undo what a seglog command wrote, from the backup directory it left (its manifest.json).

Every command that writes (recover, rebuild-index, append, repair, simulate-retention --apply) journals
each step and copies what it replaces, truncates or removes into
seglog-backups/<time>-<command>-<pid>/ beside the log dir first. undo takes the log dir's .lock,
plans the inverse of every step from the files as they are now, and refuses (exit 3, nothing
changed, one reason per file) when a file is no longer as the command left it or the partition
has new files since: undoing would throw those later writes away. --force undoes anyway, after
saving the current files in a new backup (so a forced undo loses nothing and can itself be
undone). Modification times come back too. Without --apply it only lists what it would do. An
interrupted run in the log dir is rolled back first, as by every writing command. Run again on a
backup it already undid, it names that undo and does nothing (undoing an undo redoes the run; a
file written after the undo still makes it refuse).

Example:
  seglog undo --apply \\
      /var/lib/kafka/seglog-backups/20261122T154500Z-rebuild-index-4242

Exit status:
- 0: done, or nothing to do: also when run again after it finished ("already undone by
  seglog-backups/<time>-undo-<pid>": the undo whose files are still in place)
- 1: actions listed (not applied)
- 2: usage error
- 3: refused (files changed since, or the backup is unusable: a bad checksum, paths outside its log
  dir)
- 5: a broker holds the log dir's .lock
- 6: cannot write here (read-only file system, permission, disk full): the message says what, if
  anything, was changed
"""


def undo_command(
    backup_dir: str = typer.Argument(..., help="A directory under seglog-backups/ holding manifest.json."),
    apply: bool = typer.Option(False, "--apply", help="Restore (default: only list what would be restored)."),
    force: bool = typer.Option(False, "--force", help="Undo even files changed since (they are backed up first)."),
    backup_root: str = typer.Option(None, "--backup-dir", help="Where the undo's own backup goes (default: beside the one undone)."),
) -> None:
    arguments = dict(locals())
    raise typer.Exit(guarded(lambda: _run(**arguments)))


def _run(backup_dir, apply, force, backup_root) -> int:
    plan, done, notes = undo(backup_dir, force=force, dry_run=not apply, backup_root=backup_root)
    for note in notes:
        sys.stderr.write(f"seglog: {note}\n")
    if plan.conflicts:
        for conflict in plan.conflicts:
            sys.stderr.write(f"seglog: refused: {conflict}\n")
        sys.stderr.write(f"seglog: nothing was changed; {len(plan.conflicts)} file(s) are no longer as "
                         f"`{plan.manifest['command']}` left them (undo --force undoes anyway, keeping the current "
                         "files in a new backup)\n")
        return ExitStatus.DAMAGE
    lines = plan.lines()
    for line in lines:
        sys.stdout.write(("" if apply else "would ") + line + "\n")
    manifest = plan.manifest
    actions = f"{len(lines)} action{'' if len(lines) == 1 else 's'}"
    if plan.note:
        summary = plan.note
    elif apply:
        summary = f"{actions} done; the files replaced are in {done} (seglog undo --apply {done} redoes)"
    else:
        summary = f"{actions} to do; run again with --apply"
    sys.stdout.write(f"{manifest['command']} of {manifest['started']} ({manifest['state']}, "
                     f"{len(manifest['steps'])} step{'' if len(manifest['steps']) == 1 else 's'}): {summary}\n")
    return ExitStatus.OK if apply or not lines else ExitStatus.WARNINGS
