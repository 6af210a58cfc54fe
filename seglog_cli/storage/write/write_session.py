"""The write protocol as a command uses it: lock, finish what was interrupted, plan, apply.

    with WriteSession([log_dir], "recover", backup_root) as session:
        plan = plan_recover(partitions)          # planned under the lock
        session.apply(steps, plan.fingerprint)   # journaled (see journal.py)

:meth:`WriteSession.apply` also puts the steps in an order Kafka can load at every instant
(:func:`kafka_order`): when a step changes a segment's files, the log dir's
``.kafka_cleanshutdown`` is removed first and put back last, and the partition's recovery
point is first lowered to the lowest segment changed (then set to the command's value, or put
back, at the end). A broker that starts on a killed run therefore recovers every segment the
run was changing, as after any crash. A library caller that planned without the lock passes
the plan's :func:`fingerprint`: applying refuses when any file changed since.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

from seglog_cli.storage.log.checkpoints import TopicPartition, format_offset_checkpoint, parse_offset_checkpoint
from seglog_cli.storage.write.durable import CannotWriteError, Spool, Tree, read_chunks
from seglog_cli.storage.log.errors import SeglogError
from seglog_cli.storage.write.file_steps import FileStep
from seglog_cli.storage.write.journal import Journal
from seglog_cli.storage.log.log_dir_files import CLEAN_SHUTDOWN, RECOVERY_POINT_CHECKPOINT
from seglog_cli.storage.log.naming import parse_partition_dir_name, parse_segment_file_name
from seglog_cli.storage.write.rollback import recover_pending, roll_back
from seglog_cli.storage.write.safety import (LOCK_FILE, LogDirLock, PlanOutdatedError, check_backup_root,
                                       default_backup_root, refuse_tiered_storage, resolve_log_dir)

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")
IGNORED_IN_FINGERPRINT = {LOCK_FILE}


class WriteSession:
    """The locks of ``log_dirs`` (real paths, taken in order), held for the ``with`` block."""

    def __init__(self, log_dirs, command: str, backup_root: str | Path | None = None, argv: list[str] | None = None):
        self.log_dirs = sorted({resolve_log_dir(d) for d in log_dirs})
        self.command = command
        self.backup_root = backup_root
        self.argv = list(sys.argv) if argv is None else argv
        self.notes: list[str] = []  # what was finished or rolled back on the way in
        self.backup_dirs: list[Path] = []
        self._by_log_dir: dict[Path, Path] = {}  # real log dir -> the backup directory of its last run
        self._log_dir_by_parent: dict[Path, Path] = {}
        self._locks: list[LogDirLock] = []

    def __enter__(self) -> "WriteSession":
        try:
            for log_dir in self.log_dirs:
                refuse_tiered_storage(log_dir)
            if self.backup_root is not None:
                check_backup_root(self.backup_root, self.log_dirs)
            for log_dir in self.log_dirs:
                self._locks.append(LogDirLock(log_dir).acquire())
            for log_dir in self.log_dirs:
                with Tree(log_dir) as tree:
                    self.notes += recover_pending(tree)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for lock in reversed(self._locks):
            lock.release()
        self._locks.clear()

    def spool(self) -> Spool:
        """An unnamed scratch file in the backup root of the first log dir, for planned bytes too
        many to hold in memory (it vanishes with the process, whatever ends it)."""
        if not self._locks:
            raise SeglogError("internal: a spool outside a WriteSession")
        root = check_backup_root(self.backup_root or default_backup_root(self.log_dirs[0]), self.log_dirs)
        return Spool(root)

    def log_dir_of(self, path: Path) -> Path:
        directory = Path(path).parent
        found = self._log_dir_by_parent.get(directory)  # each directory resolved once, not once per step
        if found is None:
            parent = Path(os.path.realpath(directory))
            found = next((c for c in (parent, parent.parent) if c in self.log_dirs), None)
            if found is None:
                raise CannotWriteError("is not inside a log dir this command locked; nothing was changed", path)
            self._log_dir_by_parent[directory] = found
        return found

    def backup_dir_of(self, log_dir: Path) -> Path | None:
        """The backup directory of the last run :meth:`apply` made in ``log_dir`` (None: none)."""
        return self._by_log_dir.get(Path(os.path.realpath(log_dir)))

    def apply(self, steps: list[FileStep], fingerprint: dict | None = None, extra: dict | None = None) -> Path | None:
        """Carry out ``steps`` (one journal per log dir); the last backup directory, or None."""
        if not self._locks:
            raise SeglogError("internal: apply outside a WriteSession")
        if fingerprint is not None and take_fingerprint(list(fingerprint)) != fingerprint:
            raise PlanOutdatedError("files changed between the plan and now; nothing was written",
                                    next(iter(fingerprint), None))
        by_dir: dict[Path, list[FileStep]] = {}
        for step in steps:
            by_dir.setdefault(self.log_dir_of(step.path), []).append(step)
        last = None
        for log_dir, group in by_dir.items():
            last = self._run(log_dir, group, extra)
        return last

    def _run(self, log_dir: Path, steps: list[FileStep], extra: dict | None) -> Path:
        root = check_backup_root(self.backup_root or default_backup_root(log_dir), self.log_dirs)
        with Tree(log_dir) as tree:
            journal = Journal.prepare(tree, self.command, kafka_order(tree, steps), root, self.argv, extra)
            self.backup_dirs.append(journal.directory)
            self._by_log_dir[log_dir] = journal.directory
            journal.publish()
            try:
                journal.execute()
            except CannotWriteError as exc:
                raise CannotWriteError(exc.message + _rolled_back(tree, journal), exc.path) from None
            journal.complete()
        return journal.directory


def _rolled_back(tree: Tree, journal: Journal) -> str:
    """After a failed step: put back what was done, and say so."""
    try:
        roll_back(journal)
    except SeglogError as exc:
        return (f"; some changes were made and could not be rolled back now ({exc.message}): the next seglog command "
                f"on {tree.root} rolls them back from {journal.directory}")
    return "; the changes made before it were rolled back: nothing was changed"


# -- an order Kafka loads at every instant ------------------------------------------------------------

def kafka_order(tree: Tree, steps: list[FileStep]) -> list[FileStep]:
    """``steps`` between a removal of ``.kafka_cleanshutdown`` and its return, with the recovery
    points lowered to the first segment changed (see the module doc)."""
    root = tree.root
    content = [s for s in steps if s.op in ("write", "append", "truncate") and _segment_base(root, s.path) is not None]
    if not content:
        return steps
    steps = list(steps)
    first, last = [], []
    marker, checkpoint = root / CLEAN_SHUTDOWN, root / RECOVERY_POINT_CHECKPOINT
    own_marker = [s for s in steps if s.path == marker]
    if own_marker:
        if own_marker[-1].op == "write" and own_marker[-1] is not steps[-1]:
            steps.remove(own_marker[-1])
            last.append(own_marker[-1])
    elif tree.regular(CLEAN_SHUTDOWN) is not None:
        data, mtime = _read(tree, CLEAN_SHUTDOWN)
        first.append(FileStep("remove", marker, "while seglog writes: a broker that starts on an interrupted run "
                                                "recovers (the marker comes back last)"))
        last.append(FileStep("write", marker, "back, as it was", data=data, mtime_ns=mtime))
    lowered = _lowered_recovery_points(tree, content)
    if lowered is not None:
        original, mtime, data = lowered
        first.append(FileStep("write", checkpoint, "recovery points lowered to the first segment changed, so a "
                                                   "broker recovers them if this run is interrupted", data=data))
        own = [s for s in steps if s.path == checkpoint]
        if own:
            steps.remove(own[-1])
            last.insert(0, own[-1])
        else:
            last.insert(0, FileStep("write", checkpoint, "recovery points back, as they were", data=original,
                                    mtime_ns=mtime))
    return first + steps + last


def _segment_base(root: Path, path: Path) -> int | None:
    if path.parent == root or not path.name.endswith(SEGMENT_SUFFIXES):
        return None
    parsed = parse_segment_file_name(path.name)
    return None if parsed is None else parsed.base_offset


def _read(tree: Tree, relative: str) -> tuple[bytes, int]:
    fd = tree.open_read(relative)
    try:
        return b"".join(read_chunks(fd, 0, 1 << 24)), os.fstat(fd).st_mtime_ns
    finally:
        os.close(fd)


def _lowered_recovery_points(tree: Tree, steps: list[FileStep]) -> tuple[bytes, int, bytes] | None:
    """(original bytes, mtime, lowered bytes) of the recovery-point checkpoint, or None when no
    partition's recovery point is above the first segment the steps change."""
    if tree.regular(RECOVERY_POINT_CHECKPOINT) is None:
        return None
    original, mtime = _read(tree, RECOVERY_POINT_CHECKPOINT)
    try:
        points = parse_offset_checkpoint(original)
    except SeglogError:
        return None  # Kafka reads an unreadable checkpoint as empty: every partition recovers from 0
    lowest: dict[TopicPartition, int] = {}
    for step in steps:
        name = parse_partition_dir_name(step.path.parent.name)
        if name is not None:
            tp = TopicPartition(name.topic, name.partition)
            base = _segment_base(tree.root, step.path)
            lowest[tp] = min(base, lowest.get(tp, base))
    changed = False
    for tp, base in lowest.items():
        if tp in points and points[tp] > base:
            points[tp] = base
            changed = True
    return (original, mtime, format_offset_checkpoint(points)) if changed else None


# -- did anything change since the plan? ------------------------------------------------------------

def take_fingerprint(directories) -> dict:
    """For each directory: a digest of (name, size, mtime, inode, type) of every entry (``.lock``
    aside), or None when it cannot be listed. Taken before planning; compared before applying.
    A digest, not the entries: a plan over 10,000 partitions keeps 10,000 short strings."""
    out = {}
    for directory in directories:
        entries = []
        try:
            with os.scandir(directory) as scan:
                for entry in scan:
                    if entry.name in IGNORED_IN_FINGERPRINT:
                        continue
                    info = entry.stat(follow_symlinks=False)
                    entries.append((entry.name, info.st_size, info.st_mtime_ns, info.st_ino, stat.S_IFMT(info.st_mode)))
        except OSError:
            entries = None
        out[str(directory)] = None if entries is None else hashlib.blake2b(repr(sorted(entries)).encode(),
                                                                         digest_size=16).hexdigest()
    return out


def plan_directories(partition_dirs) -> list[Path]:
    """The directories a plan over ``partition_dirs`` reads: each one and its log dir."""
    out: dict[Path, None] = {}  # ordered, and a lookup per directory (thousands of partitions)
    for directory in partition_dirs:
        directory = Path(directory).absolute()
        out[directory] = out[directory.parent] = None
    return list(out)


__all__ = ["WriteSession", "kafka_order", "plan_directories", "take_fingerprint"]
