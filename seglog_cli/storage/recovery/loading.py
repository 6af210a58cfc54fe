"""Kafka's ``LogLoader`` around segment recovery: the log dir's checkpoints, the temp files and
swaps (passes 1-3), the segments and their index files, and after recovery the log end and start
offsets, the leader-epoch-checkpoint and the log dir checkpoints (pass 6)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.checkpoints import (
    EpochEntry,
    TopicPartition,
    format_leader_epoch_checkpoint,
    format_offset_checkpoint,
    read_leader_epoch_checkpoint,
    offset_checkpoint_view,
)
from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.log.files import NOT_A_FILE_DIRECTORY, MappedFile, has_contents, regular_file_problem
from seglog_cli.storage.log.indexes import TransactionIndex
from seglog_cli.storage.log.log_dir_files import (
    CLEAN_SHUTDOWN,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
)
from seglog_cli.storage.log.naming import (
    METADATA_TOPIC,
    OFFSET_OUT_OF_RANGE,
    SegmentFileName,
    format_offset,
    offset_out_of_range,
    parse_partition_dir_name,
    parse_segment_file_name,
)
from seglog_cli.storage.log.segments import LogSegment
from seglog_cli.storage.recovery.plan import KAFKA, LEADER_EPOCH_CHECKPOINT, PartitionRecovery, Step
from seglog_cli.storage.recovery.producer_snapshots import plan_snapshots
from seglog_cli.storage.recovery.segment_recovery import Work, removed_whole, segment_files


# -- the log dir context --------------------------------------------------------------------------

@dataclass
class LogDirState:
    path: Path
    clean_shutdown: bool
    recovery_points: dict
    log_starts: dict
    high_watermarks: dict


def log_dir_state(log_dir: Path) -> LogDirState:
    def offsets(name):
        path = log_dir / name
        try:
            return offset_checkpoint_view(path) if path.is_file() else {}
        except SeglogError:
            return {}  # Kafka: errors reading these at load mean "empty"
    return LogDirState(log_dir, (log_dir / CLEAN_SHUTDOWN).exists(), offsets(RECOVERY_POINT_CHECKPOINT),
                        offsets(LOG_START_OFFSET_CHECKPOINT), offsets(REPLICATION_CHECKPOINT))


class Files(dict):
    """The files of a partition directory as the plan leaves them: name -> path. A value of
    None stands for ``directory / name`` and the path is made only when asked for (a log dir
    holds 10^5 files, and a step names few of them); an interrupted swap's name maps to the
    ``.swap`` file that holds it, a split's piece to its scratch copy."""

    def __init__(self, directory: Path):
        super().__init__()
        self.directory = directory

    def __getitem__(self, name: str) -> Path:
        path = dict.__getitem__(self, name)
        return self.directory / name if path is None else path

    def get(self, name: str, default=None):
        return self[name] if name in self else default

    def pop(self, name: str) -> Path:
        path = self[name]
        del self[name]
        return path

    def moved(self, name: str) -> bool:
        """Whether ``name``'s bytes are elsewhere than ``directory / name``."""
        return dict.get(self, name) is not None


def list_files(directory: Path, out: PartitionRecovery) -> tuple[Files, dict[str, SegmentFileName]] | None:
    """One listing of the partition directory, as Kafka's ``dir.listFiles()`` with ``isFile``:
    its regular files (a symlink to one included) and the parsed segment-family names among
    them. An entry that is no regular file is noted (Kafka's loader skips it); a name whose
    offset does not fit a long refuses the partition (Kafka's loader fails on it): None."""
    try:
        with os.scandir(directory) as scan:
            entries = sorted((entry.name, entry.is_file(follow_symlinks=False), entry.path) for entry in scan)
    except (FileNotFoundError, NotADirectoryError):
        raise UnreadableInputError("not a directory", directory) from None
    except OSError as exc:
        raise UnreadableInputError(f"cannot list directory: {exc.strerror}", directory) from None
    files, parsed = Files(directory), {}
    for name, regular, path in entries:
        problem = None if regular else regular_file_problem(path)
        name_parsed = parse_segment_file_name(name)
        if problem is None and name_parsed is None and offset_out_of_range(name):
            problem = OFFSET_OUT_OF_RANGE
        if problem is not None:
            if problem == OFFSET_OUT_OF_RANGE:
                out.refused = f"{name}: {problem}; rename or remove it; nothing is planned for this partition"
                return None
            if problem != NOT_A_FILE_DIRECTORY:
                out.notes.append(f"{name}: {problem}; Kafka's loader skips it, and so does this plan")
            continue
        dict.__setitem__(files, name, None)
        if name_parsed is not None:
            parsed[name] = name_parsed
    return files, parsed


def no_op(step: Step) -> bool:
    """A replacement with the bytes already there (recovery rebuilt what was right)."""
    if step.op != "replace":
        return False
    if step.kept is not None:
        return len(step.kept) == 1 and step.kept[0][0] == 0 and step.kept[0][1] == step.path.stat().st_size
    return has_contents(step.path, step.data)


def housekeeping(directory: Path, files: Files, parsed: dict[str, SegmentFileName], out: PartitionRecovery) -> Files:
    """Passes 1-3 (temp files, swaps): the steps, and ``files`` as the directory will then be."""
    cleaned, swaps = [], []
    for name in list(files):
        if name.endswith(".deleted") and not name.endswith(".checkpoint.deleted"):
            out.steps.append(Step("remove", files.pop(name), "a .deleted file (Kafka removes it at start-up)"))
        elif name.endswith(".cleaned"):
            cleaned.append(name)
        elif name.endswith(".swap"):
            swaps.append(name)
    min_cleaned = min((parsed[n].base_offset for n in cleaned if n in parsed), default=None)
    for name in swaps[:]:
        if min_cleaned is not None and name in parsed and parsed[name].base_offset >= min_cleaned:
            out.steps.append(Step("remove", files.pop(name), "a .swap of an interrupted segment split"))
            swaps.remove(name)
    for name in cleaned:
        out.steps.append(Step("remove", files.pop(name), "a .cleaned file (an interrupted clean or split)"))
    log_swaps = [n for n in swaps if n.endswith(".log.swap")]
    if log_swaps:
        ranges = []
        for name in log_swaps:
            with MappedFile(files[name]) as mapped:
                base = parsed[name].base_offset
                end = base
                for batch in LogScan(mapped, resync=False):
                    end = batch.next_offset
                ranges.append((base, end))
        low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
        for name in list(files):
            found = parsed.get(name)
            if found is not None and not name.endswith(".swap") and low <= found.base_offset < high:
                out.steps.append(Step("remove", files.pop(name), f"replaced by the swap segments [{low}, {high})"))
    for name in swaps:
        target = name[: -len(".swap")]
        out.steps.append(Step("rename", files[name], "completing an interrupted swap", target=directory / target))
        files[target] = files.pop(name)
        found = parse_segment_file_name(target)
        if found is not None:
            parsed[target] = found
    return files


def segments_of(directory: Path, files: Files, parsed: dict[str, SegmentFileName],
                out: PartitionRecovery) -> list[LogSegment]:
    segments, orphans = [], []
    for name in sorted(files):
        found = parsed.get(name)
        if found is None or found.is_temp:
            continue
        stem = name[: name.index(found.suffix)]
        if found.suffix in (".index", ".timeindex", ".txnindex") and stem + ".log" not in files:
            out.steps.append(Step("remove", files[name], "an index file without its .log (Kafka deletes it)"))
            orphans.append(name)
        elif found.suffix == ".log":
            segment = LogSegment(files[name], found.base_offset)
            for suffix, attribute in _INDEX_ATTRIBUTES:
                if files.moved(stem + suffix) or files.moved(name):  # a completed swap: not beside the .log
                    setattr(segment, attribute, files.get(stem + suffix, directory / (stem + suffix)))
            segments.append(segment)
    for name in orphans:
        del files[name]
    return sorted(segments, key=lambda s: s.base_offset)


_INDEX_ATTRIBUTES = ((".index", "index_path"), (".timeindex", "time_index_path"), (".txnindex", "txn_index_path"))


def has_file(files: dict[str, Path], segment: LogSegment, suffix: str) -> bool:
    return format_offset(segment.base_offset) + suffix in files


def txn_index_sane(files: dict[str, Path], segment: LogSegment) -> bool:
    if not has_file(files, segment, ".txnindex"):
        return True
    try:
        TransactionIndex(segment.txn_index_path, segment.base_offset).sanity_check()
    except SeglogError:
        return False
    return True


def finish(work: Work, kept: list[LogSegment], log_start_checkpoint: int) -> None:
    """Pass 6: log end and start offsets (every segment deleted when the log ends below its
    start offset, and an empty segment created when none is left), leader epochs, producer
    snapshots."""
    out = work.out
    end = _end_offset(work, kept, log_start_checkpoint)
    if kept and end < log_start_checkpoint:
        if out.mode == KAFKA:
            kept = _delete_all(work, kept, end, log_start_checkpoint)
            end = log_start_checkpoint
        else:
            out.lowered_log_start = kept[0].base_offset
            out.notes.append(f"salvage: the log ends at {end}, below its log start offset checkpoint "
                             f"{log_start_checkpoint} (Kafka would delete every segment); the checkpoint is lowered "
                             f"to {kept[0].base_offset} so the broker keeps them")
            log_start_checkpoint = kept[0].base_offset
    if not kept:
        _create_empty_segment(work, log_start_checkpoint)
        end = log_start_checkpoint
    out.log_end_offset = end
    out.log_start_offset = max(log_start_checkpoint, kept[0].base_offset) if kept else log_start_checkpoint
    _leader_epochs(work.directory, out, work.clear_epochs)
    plan_snapshots(work, kept)


def _delete_all(work: Work, kept: list[LogSegment], end: int, log_start: int) -> list[LogSegment]:
    """``deleteSegmentsIfLogStartGreaterThanLogEnd``: every segment and producer snapshot goes,
    the leader epochs are cleared. Returns the segments left (none)."""
    out = work.out
    out.notes.append(f"the log end offset {end} is below the log start offset checkpoint {log_start}: Kafka deletes "
                     f"every segment and starts an empty one at {log_start}")
    doomed = {format_offset(segment.base_offset) for segment in kept}
    # the rebuilt indexes and truncations of these segments are moot: they go whole
    out.steps = [step for step in out.steps
                 if not (step.op in ("replace", "truncate") and step.path.parent == work.directory
                         and step.path.suffix in (".log", ".index", ".timeindex", ".txnindex")
                         and step.path.name.split(".")[0] in doomed)]
    removals: list[list[Step]] = []
    for segment in kept:
        last = work.ends.get(segment.log_path)
        last = (last if last is not None else segment.read_next_offset()) - 1
        segment.close()
        lost = (segment.base_offset, last) if last >= segment.base_offset else None
        removed_whole(out, segment)
        removals.append([Step("remove", path, f"the log ends below its start offset {log_start} (Kafka deletes every "
                                              "segment)", offsets_lost=lost if path.suffix == ".log" else None)
                         for path in segment_files(work.files, segment)])
        if lost is not None:
            out.offsets_lost.append(lost)
    for group in reversed(removals):  # the last segment first: a valid prefix at every instant
        out.steps.extend(group)
    work.snapshots.present.clear()
    work.snapshots.written.clear()
    work.snapshots.log_start = work.snapshots.last_snap = log_start
    work.clear_epochs = True
    return []


def _create_empty_segment(work: Work, base_offset: int) -> None:
    """``LogSegment.open`` of the empty active segment Kafka creates when no segment is left
    (its indexes as a clean shutdown leaves them: empty)."""
    stem = format_offset(base_offset)
    for suffix in (".log", ".index", ".timeindex"):
        path = work.directory / (stem + suffix)
        if path.name not in work.files or any(s.op == "remove" and s.path == path for s in work.out.steps):
            work.out.steps.append(Step("replace", path, f"the empty active segment Kafka creates at offset "
                                                        f"{base_offset} when no segment is left", data=b""))


def _end_offset(work: Work, kept: list[LogSegment], log_start: int) -> int:
    """The last kept segment's next offset: from its walk when recovery walked it, else read
    (``LogSegment.readNextOffset``: the last index entry, then a scan)."""
    if not kept:
        return log_start
    last = kept[-1]
    if last.log_path in work.ends:
        return work.ends[last.log_path]
    end = last.read_next_offset()
    last.close()
    return end


def _leader_epochs(directory: Path, out: PartitionRecovery, clear: bool = False) -> None:
    path = directory / LEADER_EPOCH_CHECKPOINT
    if not path.is_file():
        return
    entries = read_leader_epoch_checkpoint(path)
    if clear:  # clearAndFlush
        if entries:
            out.steps.append(Step("replace", path, "leader epochs cleared with the deleted segments",
                                  data=format_leader_epoch_checkpoint([])))
        return
    # truncateFromEnd: entries past the log end go. (Kafka's loader also drops an epoch that starts
    # exactly at the log end, and the broker assigns it again when it is elected leader; seglog
    # keeps that one, so an idle partition's file is not rewritten for nothing.)
    kept = [e for e in entries if e.start_offset <= out.log_end_offset]
    if kept and out.log_start_offset > kept[0].start_offset:  # truncateFromStart
        below = [e for e in kept if e.start_offset <= out.log_start_offset]
        kept = [EpochEntry(below[-1].epoch, out.log_start_offset)] + [e for e in kept if e.start_offset > out.log_start_offset]
    if kept != entries:
        out.steps.append(Step("replace", path, f"leader epochs cut to [{out.log_start_offset}, {out.log_end_offset})",
                              data=format_leader_epoch_checkpoint(kept)))


def checkpoint_steps(state: LogDirState, partitions: list[PartitionRecovery]) -> list[Step]:
    steps = []
    points = dict(state.recovery_points)
    marks = dict(state.high_watermarks)
    starts = dict(state.log_starts)
    changed_points = changed_marks = changed_starts = False
    for p in partitions:
        name = parse_partition_dir_name(p.path.name)
        # __cluster_metadata-0 is the Raft log, never one of LogManager's: none of these files lists it
        if name is None or p.refused is not None or name.topic == METADATA_TOPIC:
            continue
        tp = TopicPartition(name.topic, name.partition)
        if p.lowered_log_start is not None and starts.get(tp) != p.lowered_log_start:
            starts[tp] = p.lowered_log_start
            changed_starts = True
        if points.get(tp) != p.log_end_offset:
            points[tp] = p.log_end_offset
            changed_points = True
        if tp in marks:
            clamped = min(max(marks[tp], p.log_start_offset), p.log_end_offset)
            if clamped != marks[tp]:
                marks[tp] = clamped
                changed_marks = True
    steps_out = steps
    if changed_points and (state.path / RECOVERY_POINT_CHECKPOINT).exists():
        steps.append(Step("replace", state.path / RECOVERY_POINT_CHECKPOINT,
                          "recovery points at the log end offsets (everything below is recovered and fsynced)",
                          data=format_offset_checkpoint(points)))
    if changed_marks:
        steps.append(Step("replace", state.path / REPLICATION_CHECKPOINT,
                          "high watermarks clamped into [log start, log end] as Kafka does at load",
                          data=format_offset_checkpoint(marks)))
    if changed_starts:
        steps.append(Step("replace", state.path / LOG_START_OFFSET_CHECKPOINT,
                          "salvage: log start offsets lowered to the first kept segment",
                          data=format_offset_checkpoint(starts)))
    return [step for step in steps_out if not no_op(step)]
