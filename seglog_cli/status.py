"""Exit statuses, mapped in one place (STYLE habit 10).

The numbers are a public interface for shell runbooks: never renumber, only add.
"""

from __future__ import annotations

import os
import sys
from enum import IntEnum

# the engine's light error module only: the write path (durable, safety) is imported by writing commands
from seglog_cli.storage.log.errors import (
    CannotWriteError,
    ClusterError,
    LogDirLockedError,
    SeglogError,
    UnreadableInputError,
)
from seglog_cli.storage.log.text import printable


class ExitStatus(IntEnum):
    OK = 0
    WARNINGS = 1
    USAGE = 2
    DAMAGE = 3
    REFUSED = 3  # an alias of DAMAGE
    UNREADABLE = 4
    LOCKED = 5
    CANNOT_WRITE = 6
    CLUSTER = 7
    INTERRUPTED = 130
    INTERNAL = 70


# what each status means, by member name (an alias has its own line): the one source of the docs
# site's exit-status table; each command's HELP says what the status means for that command
MEANINGS = {
    "OK": "Success: done, nothing found, or nothing to do.",
    "WARNINGS": "Warnings, or a plan not applied: dump met an input damaged where kafka-dump-log stops (seglog "
                "carried on); verify found only warnings; a writing command without --apply listed what it "
                "would do.",
    "USAGE": "Bad options or arguments; nothing was read or written.",
    "DAMAGE": "verify / recover / repair: damage found, or a partition refused (the message says why).",
    "REFUSED": "replay / undo: a check failed (the destination is not as expected, someone else wrote there, "
               "files changed since): nothing was changed. The same number as DAMAGE.",
    "UNREADABLE": "An input could not be read at all (missing, unreadable, not a log).",
    "LOCKED": "A command that writes found the log dir locked by a running broker (its .lock); nothing written.",
    "CANNOT_WRITE": "Cannot write here (read-only file system, permission, disk full, a symlink): the message "
                    "says what, if anything, was changed.",
    "CLUSTER": "replay: the cluster is unreachable, refused a request (authentication, authorization) or a "
               "produce failed.",
    "INTERRUPTED": "Interrupted (Ctrl-C, SIGINT); a writing command's journal lets the next run roll it back.",
    "INTERNAL": "A bug in seglog; the message says so (set SEGLOG_DEBUG=1 for a traceback).",
}


class UsageError(Exception):
    """Bad options or arguments, found after parsing (exit status 2)."""


def guarded(action) -> int:
    """Run ``action()`` and turn any escape into a one-line message and an exit status."""
    try:
        return int(action())
    except BrokenPipeError:
        _silence_stdout()
        return ExitStatus.OK
    except UsageError as exc:
        print(f"seglog: usage error: {printable(str(exc))}", file=sys.stderr)
        return ExitStatus.USAGE
    except KeyboardInterrupt:
        print("seglog: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    except LogDirLockedError as exc:
        print(f"seglog: {exc}", file=sys.stderr)
        return ExitStatus.LOCKED
    except CannotWriteError as exc:
        print(f"seglog: {exc}", file=sys.stderr)
        return ExitStatus.CANNOT_WRITE
    except ClusterError as exc:
        print(f"seglog: {exc}", file=sys.stderr)
        return ExitStatus.CLUSTER
    except UnreadableInputError as exc:
        print(f"seglog: {exc}", file=sys.stderr)
        return ExitStatus.UNREADABLE
    except SeglogError as exc:
        print(f"seglog: {exc}", file=sys.stderr)
        return ExitStatus.DAMAGE
    except OSError as exc:  # a file the engine met while reading, not wrapped by it: still one line, status 4
        where = f"{printable(str(exc.filename))}: " if exc.filename is not None else ""
        print(f"seglog: {where}{printable(exc.strerror or str(exc))}", file=sys.stderr)
        return ExitStatus.UNREADABLE
    except Exception as exc:  # noqa: BLE001 - the last line of defence: never a traceback
        if os.environ.get("SEGLOG_DEBUG"):
            raise
        print(f"seglog: internal error: {type(exc).__name__}: {printable(str(exc))} (set SEGLOG_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return ExitStatus.INTERNAL


def _silence_stdout() -> None:
    """After a closed pipe (``| head``), stop Python from failing again when it flushes stdout."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
