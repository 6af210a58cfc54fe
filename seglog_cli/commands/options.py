"""Option parsing shared by the commands."""

from __future__ import annotations

import glob
import os
import stat
import sys
from datetime import datetime, timezone
from enum import Enum

from seglog_cli.status import UsageError


class ReportFormat(str, Enum):
    """``--format`` of the commands that report findings (verify, diff)."""

    table = "table"
    text = "text"
    json = "json"
    jsonl = "jsonl"


class TableFormat(str, Enum):
    """``--format`` of the commands that print records as a table (offsets, transactions)."""

    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"


class PlanFormat(str, Enum):
    """``--format`` of the commands that plan, then write (rebuild-index, recover, append, repair,
    replay): the plan and what was done, as text or one JSON document."""

    text = "text"
    json = "json"


class PayloadEncoding(str, Enum):
    """``--payload-encoding``: how keys, values and header values are text in JSON Lines (dump,
    diff --export-lost) and are read back (append, replay)."""

    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"


JOBS_HELP = "(default: the CPUs available to seglog; 1 runs in this process alone)"


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, as ``nproc`` counts them)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def jobs_or_default(jobs: int | None, work_items: int | None = None) -> int:
    """``--jobs``, else one process per available CPU, but never more than there is work for
    (a single partition is read in this process: a fork would only add its start-up)."""
    chosen = available_cpus() if jobs is None else jobs
    return chosen if work_items is None else max(1, min(chosen, work_items))


def show_progress(progress: bool | None) -> bool:
    """``--progress/--no-progress``, else a bar only when stderr is a terminal and stdout is not
    a pipe: the reader of a pipe (``| head``, ``| less``) usually writes to the same terminal,
    where a bar redrawn over its lines would leave pieces of both behind."""
    if progress is not None:
        return progress
    try:
        if not sys.stderr.isatty():
            return False
        return not stat.S_ISFIFO(os.fstat(sys.stdout.fileno()).st_mode)
    except (AttributeError, ValueError, OSError):
        return False


def parse_timestamp(text: str | None, option: str) -> int | None:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC when no zone is given)."""
    if text is None:
        return None
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{option}: {text!r} is neither epoch milliseconds nor an ISO-8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def command_paths(paths, what: str = "file, partition directory or log dir", inputs: list[str] | None = None) -> list[str]:
    """The command-line paths with globs expanded (a pattern matching nothing stays as it is,
    to be reported as missing); a usage error when there are none."""
    inputs = list(inputs or [])
    for path in paths or ():
        matches = sorted(glob.glob(path)) if glob.has_magic(path) else []
        inputs.extend(matches or [path])
    if not inputs:
        raise UsageError(f"give at least one {what}")
    return inputs


def log_dirs_of(inputs: list[str]) -> list:
    """The real log dirs that writing to ``inputs`` (segment files, partition dirs, log dirs,
    trees of them) changes: the locks to take before planning."""
    from pathlib import Path

    from seglog_cli.storage.log.partition_log import partition_dirs_under
    from seglog_cli.storage.write.safety import log_dir_of

    out = []
    for raw in inputs:
        path = Path(raw)
        if path.is_file():
            dirs = [log_dir_of(path.parent)]
        elif path.is_dir():
            dirs = [log_dir_of(partition) for partition in partition_dirs_under(path)]
        else:
            continue
        out.extend(d for d in dirs if d not in out)
    return out


def writing(apply: bool, log_dirs, command: str, backup_dir: str | None):
    """The write session of a command: its log dirs locked (and anything an interrupted run
    left finished) before it plans; a no-op context when it only plans (no --apply)."""
    import contextlib
    import sys

    if not apply:
        for log_dir in log_dirs:
            if (log_dir / ".seglog-journal").is_file():  # journal.POINTER, without importing the write path
                sys.stderr.write(f"seglog: {log_dir}: an interrupted seglog run is pending there; --apply (or any "
                                 "writing seglog command) rolls it back first, so the plan below may change\n")
        return contextlib.nullcontext(None)
    from seglog_cli.storage.write.write_session import WriteSession

    @contextlib.contextmanager
    def session():
        with WriteSession(log_dirs, command, backup_dir) as held:
            for note in held.notes:
                sys.stderr.write(f"seglog: {note}\n")
            yield held
    return session()


SERVER_CONFIG_HELP = ("The broker's server.properties: its log.* settings (log.retention.ms/minutes/hours, "
                      "log.segment.bytes, log.cleanup.policy...) are the topic configs' defaults.")
METADATA_LOG_HELP = ("The broker's __cluster_metadata-0 directory (or the log dir holding it) when it is not "
                     "in the partition's log dir (metadata.log.dir); default: the one beside the partition.")


def config_sources(pairs, config_file, server_config, metadata_log, lenient_file: bool = False):
    """The configs a command was given (``--config``, ``--config-file``, ``--server-config``,
    ``--metadata-log``) as an engine :class:`ConfigSources`. Unknown ``--config`` keys are usage
    errors; a ``--config-file`` may be a broker's server.properties when ``lenient_file``."""
    from pathlib import Path

    from seglog_cli.storage.config.broker_config import split_config
    from seglog_cli.storage.config.effective_config import KNOWN_KEYS, METADATA_DIR, ConfigSources
    from seglog_cli.storage.log.errors import UnreadableInputError
    from seglog_cli.storage.log.java_text import parse_java_properties

    sources = ConfigSources(None if server_config is None else Path(server_config),
                            None if metadata_log is None else Path(metadata_log))
    if server_config is not None and not Path(server_config).is_file():
        raise UnreadableInputError("no such server config file", server_config)
    if metadata_log is not None and not any(p.is_dir() for p in (Path(metadata_log) / METADATA_DIR, Path(metadata_log))
                                            if p.name == METADATA_DIR):
        raise UnreadableInputError(f"no {METADATA_DIR} here (give it, or the log dir holding it)", metadata_log)
    if config_file is not None:
        try:
            text = Path(config_file).read_text(encoding="latin-1")
        except OSError as exc:
            raise UnreadableInputError(f"cannot read the config file: {exc.strerror}", config_file) from None
        _add(sources, split_config(parse_java_properties(text), KNOWN_KEYS), f"--config-file {config_file}",
             lenient_file)
    flags = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--config wants key=value, got {pair!r}")
        flags[key.strip()] = value
    _add(sources, split_config(flags, KNOWN_KEYS), "--config", False)
    _check(sources)
    return sources


def _add(sources, split, label: str, lenient: bool) -> None:
    from seglog_cli.storage.config.broker_config import BROKER_ONLY, CHECK_INTERVAL, PRODUCER_EXPIRATION
    from seglog_cli.storage.config.effective_config import overrides_from

    if split.unknown and not lenient:
        raise UsageError(f"unknown or unsupported config {split.unknown[0]!r} in {label} (topic configs, their "
                         f"log.* broker synonyms, {CHECK_INTERVAL}, {PRODUCER_EXPIRATION})")
    sources.overrides.update(overrides_from(split.topic, label))
    sources.broker_overrides.update({k: v for k, v in split.broker.items() if k in BROKER_ONLY})


def _check(sources) -> None:
    """A bad --config value is a usage error before anything is read."""
    from seglog_cli.storage.config.effective_config import INTERNAL_SEGMENT_BYTES
    from seglog_cli.storage.config.topic_config import ConfigError, TopicConfig

    try:
        TopicConfig().with_overrides({("segment.bytes" if key == INTERNAL_SEGMENT_BYTES else key): value
                                      for key, (value, _) in sources.overrides.items()})
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def effective_configs(sources, partition_dirs) -> list:
    """Each partition's :class:`EffectiveConfig` (a config Kafka would refuse: a usage error)."""
    from seglog_cli.storage.config.topic_config import ConfigError

    try:
        return [sources.resolve(partition) for partition in partition_dirs]
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


ELECTIONS_METADATA_LOG_HELP = ("A KRaft node's __cluster_metadata-0 directory (or the log dir holding it) whose "
                               "elections name the leader epochs compared; default: the one in a replica's log "
                               "dir, if any.")


def metadata_elections(metadata_log, log_dirs, partitions):
    """The elections (:func:`~seglog_cli.storage.metadata.elections.leader_elections`) of
    ``partitions`` in ``--metadata-log``, else in the first ``__cluster_metadata-0`` of
    ``log_dirs``; None when there is none. A log found beside a replica that cannot be read is
    said on stderr and left out; ``--metadata-log`` unreadable fails (exit 4)."""
    from seglog_cli.storage.log.errors import SeglogError
    from seglog_cli.storage.metadata.elections import leader_elections, metadata_dir_beside

    partitions = {p for p in partitions if p[0] is not None}
    if metadata_log is not None:
        return leader_elections(metadata_log, partitions)
    directory = metadata_dir_beside(dict.fromkeys(log_dirs))
    if directory is None or not partitions:
        return None
    try:
        return leader_elections(directory, partitions)
    except (SeglogError, OSError) as exc:
        sys.stderr.write(f"seglog: {directory}: the elections behind the leader epochs are not named: {exc}\n")
        return None
