"""Applying a recovery plan through the write protocol (one journal per log dir, backups for
``seglog undo``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.recovery.plan import RecoveryPlan, Step
from seglog_cli.storage.write.file_steps import FileStep
from seglog_cli.storage.write.write_session import WriteSession


# -- applying -----------------------------------------------------------------------------------------

@dataclass
class RecoveryResult:
    backup_dir: Path | None
    steps: int


def apply_recover(plan: RecoveryPlan, backup_root: str | Path | None = None,
                  session: WriteSession | None = None) -> RecoveryResult:
    """Carry out the plan through the write protocol, one journal per log dir, every byte
    removed kept in the backup (``seglog undo`` restores it). ``session``: the command's, taken
    before it planned; without one the log dirs are locked here and the plan re-validated."""
    steps = [_file_step(step) for step in plan.steps if step.op != "remove" or os.path.lexists(step.path)]
    if session is None:
        log_dirs = {p.path.parent for p in plan.partitions} | set(plan.log_dir_steps)
        with WriteSession(log_dirs, "recover", backup_root) as session:
            return apply_recover(plan, backup_root, session)
    backup_dir = session.apply(steps, plan.fingerprint) if steps else None
    return RecoveryResult(backup_dir, len(steps))


def _file_step(step: Step) -> FileStep:
    op = {"replace": "write", "cut": "write"}.get(step.op, step.op)
    if step.kept is not None:  # salvage: copied from the .log itself while the step runs
        return FileStep(op, step.path, step.why, source=step.path, ranges=step.kept, offsets=step.offsets_lost)
    return FileStep(op, step.path, step.why, data=step.data, size=step.size, target=step.target,
                    offsets=step.offsets_lost)
