"""Generate a log dir shaped like a Kafka 4.2 KRaft broker's (node 1), at any scale, fast.

Layout of ``OUT_DIR`` (every file in the format and under the name the broker uses)::

    topic-0000-0/ ... topic-<T-1>-<p>/   N data partitions over T topics (default N // 20)
        <base>.log .index .timeindex     S segments, base offsets following each other exactly
        <base>.txnindex                  where a segment holds an ABORT marker (medium shape)
        <offset>.snapshot                producer state at each later segment's base offset and
                                         (clean shutdown) at the log end offset
        partition.metadata               version 0, the topic's id
        leader-epoch-checkpoint          epoch 0 from offset 0 (and epoch 1 from mid-log)
    __consumer_offsets-0..49/            offset commits (OffsetCommitKey, OffsetCommitValue v4) of two
                                         groups per topic, each group in partition abs(hashCode) % 50;
                                         busy groups' partitions span several segments (segment.ms 7 days)
    __transaction_state-0..49/           mostly empty; the transactional ids' state transitions
    __cluster_metadata-0/                KRaft log: leader change, features, broker registration, every
                                         topic (TOPIC_RECORD, CONFIG_RECORDs, PARTITION_RECORDs), quorum-state
    meta.properties, recovery-point-offset-checkpoint, replication-offset-checkpoint,
    log-start-offset-checkpoint (empty: every log starts at 0), cleaner-offset-checkpoint (the
    __consumer_offsets partitions with rolled segments, at their active segment's base offset; those
    segments are not deduplicated), .kafka_cleanshutdown (absent with --unclean)

Data partitions take one of six shapes (``SHAPES``): ~1 % large (S segments of ~1 MiB, rolled by
segment.bytes), medium (S x up to 64 KiB, with a transactional producer), small (S x a few KiB,
rolled by segment.ms), short (2 segments), single (1 segment), empty (one empty active segment).
Each shape's files are built once in ``OUT_DIR/.templates/<shape>/`` and hard-linked into every
partition of that shape (``--copy``: private copies, for commands that write in place); only
``partition.metadata`` and ``leader-epoch-checkpoint`` are written per partition. The template
directory is removed at the end (the links keep the files): Kafka refuses to start with a
directory that is not ``<topic>-<partition>`` in a log dir, and ``seglog verify`` says so.

``--unclean``: no ``.kafka_cleanshutdown``, recovery points at each active segment's base offset,
active indexes preallocated (10485760 / 10485756 bytes, sparse) without the close-time time
index entry, no snapshot at the log end offset: a killed broker's log dir.
``--damage-percent P``: P % of the data partitions (non-empty ones, chosen by the seed) get one
damage each, cycling over torn-tail (the active ``.log`` cut in its last batch), crc-flip (a
byte flipped in the records of a batch of a middle segment) and missing-index (a middle
segment's ``.index`` removed). A damaged file is always a private copy; the checkpoints say what
the broker wrote before the damage.

Usage::

    python tests/benchmarks/make_broker_logdir.py /tmp/logdir --partitions 10000 --segments 20
    python tests/benchmarks/make_broker_logdir.py OUT --partitions 60 --unclean --damage-percent 10

The same arguments and ``--seed`` give the same bytes.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import random
import shutil
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from seglog_cli.storage.log.checkpoints import TopicPartition, format_offset_checkpoint  # noqa: E402
from seglog_cli.storage.log.log_dir_files import format_clean_shutdown  # noqa: E402
from tests.benchmarks import broker_records as rec  # noqa: E402
from tests.benchmarks.broker_internal import (  # noqa: E402
    BROKER_EPOCH, METADATA, OFFSETS, TXN_STATE, write_coordinators, write_metadata_log)
from tests.benchmarks.broker_segments import (  # noqa: E402
    ROLL_MS, T0, BatchStamper, WrittenLog, batch_pool, batch_spans, write_log, write_partition_files)

TEMPLATES = ".templates"
DAMAGE_KINDS = ("torn-tail", "crc-flip", "missing-index")


@dataclass(frozen=True)
class Shape:
    """A kind of data partition: its share of N, segments (None: ``--segments``), bytes per
    rolled segment (0: empty log) and per batch (the producer's batch.size in use)."""

    name: str
    weight: float
    segments: int | None
    segment_bytes: int
    batch_bytes: int
    transactional: bool = False


SHAPES = (
    Shape("large", 0.01, None, 1 << 20, 16384),
    Shape("medium", 0.15, None, 64 << 10, 2048, transactional=True),
    Shape("small", 0.35, None, 8 << 10, 600),
    Shape("short", 0.25, 2, 16 << 10, 1024),
    Shape("single", 0.14, 1, 6 << 10, 600),
    Shape("empty", 0.10, 1, 0, 0),
)
SHAPE_BY_NAME = {shape.name: shape for shape in SHAPES}


@dataclass(frozen=True)
class DataPartition:
    topic: str
    partition: int
    shape: str

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Template:
    directory: Path
    log: WrittenLog
    markers: tuple[tuple[bool, int], ...]  # the transactions it holds: (commit, marker timestamp)


@dataclass(frozen=True)
class LogDirSummary:
    """What was generated: every partition directory, the damaged ones, ``segments`` (.log files in
    partition directories) and ``bytes`` (their total size, each partition's copy counted)."""

    path: Path
    partitions: tuple[str, ...]
    damaged: dict[str, str]
    segments: int
    bytes: int


# -- the data partitions ----------------------------------------------------------------------------

def shape_names(n: int) -> list[str]:
    """How many partitions of each shape: the weights, at least one of each when N allows."""
    if n < len(SHAPES):
        return [SHAPES[(2 + i) % len(SHAPES)].name for i in range(n)]
    counts = {shape.name: max(1, int(n * shape.weight)) for shape in SHAPES}
    counts["small"] += n - sum(counts.values())
    return [name for name, count in counts.items() for _ in range(count)]


def plan_partitions(n: int, topics: int, rng: random.Random) -> list[DataPartition]:
    shapes = shape_names(n)
    rng.shuffle(shapes)
    width = max(4, len(str(topics - 1)))
    out = []
    for t in range(topics):
        for p in range(n // topics + (t < n % topics)):
            out.append(DataPartition(f"topic-{t:0{width}d}", p, shapes[len(out)]))
    return out


def shape_segments(shape: Shape, count: int, pool: list[bytes], txn_pool: list[bytes],
                   rng: random.Random) -> tuple[list[tuple[int, list[bytes]]], BatchStamper]:
    """The shape's segments ((base offset, batches)); the stamper knows the markers written."""
    stamper = BatchStamper(rng)
    if shape.segment_bytes == 0:
        return [(0, [])], stamper
    segments = []
    for k in range(count):
        stamper.leader_epoch = 1 if count >= 4 and k >= count // 2 else 0
        stamper.timestamp = max(stamper.timestamp, T0 + k * (ROLL_MS + 1000))  # rolled by segment.ms
        budget = shape.segment_bytes if shape.name == "large" else int(shape.segment_bytes * rng.uniform(0.5, 1))
        if k == count - 1:
            budget = int(budget * rng.uniform(0.2, 0.8))
        batches = _fill(stamper, budget, pool, rng, txn_pool if shape.transactional else None, abort=k % 3 == 2)
        segments.append((_first_offset(batches), batches))
    return segments, stamper


def _first_offset(batches: list[bytes]) -> int:
    return int.from_bytes(batches[0][:8], "big", signed=True)


def _fill(stamper: BatchStamper, budget: int, pool: list[bytes], rng: random.Random,
          txn_pool: list[bytes] | None, abort: bool) -> list[bytes]:
    """Batches until the next would pass ``budget`` (Kafka's roll rule); with ``txn_pool`` one
    transaction (two transactional batches among the others, then its marker)."""
    batches, size, txn_open = [], 0, False
    while True:
        slot = len(batches)
        if txn_pool and slot == 5 and txn_open:
            batch, txn_open = stamper.marker(commit=not abort), False
        else:
            in_txn = bool(txn_pool) and slot in (1, 3)
            template = rng.choice(txn_pool if in_txn else pool)
            if batches and size + len(template) > budget:
                break
            batch, txn_open = stamper.stamp(template), txn_open or in_txn
        batches.append(batch)
        size += len(batch)
    if txn_open:
        batches.append(stamper.marker(commit=not abort))
    return batches


def build_templates(root: Path, names: set[str], segments: int, clean: bool, seed: int) -> dict[str, Template]:
    rng = random.Random(f"{seed}-batches")
    pools = {size: batch_pool(rng, size, 48) for size in sorted({SHAPE_BY_NAME[n].batch_bytes for n in names}) if size}
    txn_pool = batch_pool(rng, 2048, 8, transactional=True)
    templates = {}
    for shape in SHAPES:
        if shape.name not in names:
            continue
        directory = root / shape.name
        directory.mkdir(parents=True)
        count = min(shape.segments or segments, segments)
        written, stamper = shape_segments(shape, count, pools.get(shape.batch_bytes, []), txn_pool, rng)
        templates[shape.name] = Template(directory, write_log(directory, written, clean), tuple(stamper.markers))
    return templates


def place(directory: Path, template: Template, copy: bool) -> None:
    """The template's files in ``directory``: hard links, or private copies."""
    directory.mkdir()
    source, target = f"{template.directory}{os.sep}", f"{directory}{os.sep}"
    for name in template.log.files:
        if copy:
            copy_file(source + name, target + name)
        else:
            link(source + name, target + name)


def link(source: str, target: str) -> None:
    """``os.link``; an inode at the file system's link limit is replaced by a fresh copy first."""
    try:
        os.link(source, target)
    except OSError as exc:
        if exc.errno != errno.EMLINK:
            raise
        copy_file(source, source + ".fresh")
        os.replace(source + ".fresh", source)
        os.link(source, target)


def copy_file(source: str, target: str) -> None:
    """A private copy; a preallocated index keeps its zero tail as a hole (sparse)."""
    with open(source, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data_end = os.lseek(handle.fileno(), 0, os.SEEK_HOLE) if size else 0
        os.lseek(handle.fileno(), 0, os.SEEK_SET)
        data = handle.read(data_end)
    with open(target, "wb") as handle:
        handle.write(data)
    if data_end < size:
        os.truncate(target, size)


# -- damage and the log-dir files -------------------------------------------------------------------

def apply_damage(out: Path, data: list[DataPartition], logs: dict[str, WrittenLog], percent: float,
                 rng: random.Random, layout: int | None = None) -> tuple[dict[str, str], int]:
    """Damage ``percent`` % of the data partitions; returns {name: kind} and the bytes cut off.
    The choice is made among the first ``layout`` partitions and repeated in each later copy."""
    layout = layout or len(data)
    candidates = [i for i, p in enumerate(data[:layout]) if logs[p.name].log_bytes > 0]
    picked = sorted(rng.sample(candidates, min(len(candidates), round(layout * percent / 100))))
    chosen = sorted(((data[i + k], DAMAGE_KINDS[n % len(DAMAGE_KINDS)]) for k in range(0, len(data), layout)
                     for n, i in enumerate(picked)), key=lambda item: (item[0].topic, item[0].partition))
    damaged, cut = {}, 0
    for partition, kind in chosen:
        log = logs[partition.name]
        directory = out / partition.name
        middle = f"{log.segment_bases[(len(log.segment_bases) - 1) // 2]:020d}"
        if kind == "missing-index":
            (directory / f"{middle}.index").unlink()
        else:
            stem = f"{log.active_base:020d}" if kind == "torn-tail" else middle
            cut += _damage_log(directory / f"{stem}.log", kind)
        damaged[partition.name] = kind
    return damaged, cut


def _damage_log(path: Path, kind: str) -> int:
    """Replace ``path`` (perhaps a link) by a damaged private copy; returns the bytes removed."""
    data = bytearray(path.read_bytes())
    spans = batch_spans(data)
    position, size = spans[-1] if kind == "torn-tail" else spans[len(spans) // 2]
    if kind == "torn-tail":
        del data[position + size // 2:]
    else:
        data[position + 61 + (size - 61) // 2] ^= 0xFF  # inside the records: the CRC no longer matches
    removed = path.stat().st_size - len(data)
    path.unlink()
    path.write_bytes(data)
    return removed


def write_log_dir_files(out: Path, logs: dict[str, WrittenLog], ids: dict[str, bytes], clean: bool) -> None:
    def partition_of(name: str) -> TopicPartition:
        topic, _, partition = name.rpartition("-")
        return TopicPartition(topic, int(partition))

    ends = {partition_of(name): log.log_end_offset for name, log in logs.items()}
    recovery = ends if clean else {partition_of(name): log.active_base for name, log in logs.items()}
    cleaned = {partition_of(name): log.active_base for name, log in logs.items()
               if name.startswith(OFFSETS) and len(log.segment_bases) > 1}  # compacted up to the active segment
    files = {"recovery-point-offset-checkpoint": recovery, "replication-offset-checkpoint": ends,
             "log-start-offset-checkpoint": {}, "cleaner-offset-checkpoint": cleaned}
    for name, offsets in files.items():  # seglog's formats; its writers' fsyncs are not needed here
        (out / name).write_bytes(format_offset_checkpoint(offsets))
    (out / "meta.properties").write_text(rec.meta_properties(rec.uuid_text(ids["cluster"]),
                                                             rec.uuid_text(ids["directory"])))
    if clean:
        (out / ".kafka_cleanshutdown").write_bytes(format_clean_shutdown(BROKER_EPOCH))


def draw_ids(data: list[DataPartition], seed: int) -> dict[str, bytes]:
    rng = random.Random(f"{seed}-ids")
    names = ["cluster", "directory", "incarnation", OFFSETS, TXN_STATE] + sorted({p.topic for p in data})
    return {name: rec.random_uuid(rng) for name in names}


# -- the whole log dir ------------------------------------------------------------------------------

def make_broker_logdir(out: str | Path, partitions: int, topics: int | None = None, segments: int = 20,
                       unclean: bool = False, damage_percent: float = 0.0, seed: int = 1,
                       copy: bool = False, coordinator_partitions: int = rec.COORDINATOR_PARTITIONS,
                       repeat: int = 1) -> LogDirSummary:
    """Generate the log dir in ``out`` (created; must be empty) and describe it.
    ``coordinator_partitions``: of ``__consumer_offsets`` and of ``__transaction_state`` each
    (offsets.topic.num.partitions, transaction.state.log.num.partitions). ``repeat``: the data
    partitions are that many copies of the layout of ``partitions`` (shapes, groups' commits and
    damage alike), the k-th copy's topics named ``<topic>.r<k>``: a log dir exactly k times
    another's, for tests that compare the work at N and k x N partitions."""
    if partitions < 1 or segments < 1:
        raise ValueError("--partitions and --segments must be at least 1")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise ValueError(f"{out} is not empty")
    clean = not unclean
    layout = plan_partitions(partitions, min(partitions, topics or max(1, partitions // 20)),
                             random.Random(f"{seed}-layout"))
    data = layout + [replace(p, topic=f"{p.topic}.r{k}") for k in range(1, repeat) for p in layout]
    ids = draw_ids(data, seed)
    templates = build_templates(out / TEMPLATES, {p.shape for p in data}, segments, clean, seed)
    logs = {}
    for partition in data:
        template = templates[partition.shape]
        place(out / partition.name, template, copy)
        write_partition_files(out / partition.name, ids[partition.topic], template.log.epochs)
        logs[partition.name] = template.log
    markers = templates["medium"].markers if "medium" in templates else ()
    logs.update(write_coordinators(out, data, logs, markers, ids, clean, seed, coordinator_partitions,
                                   repeat if coordinator_partitions % repeat == 0 else 1))
    metadata = write_metadata_log(out, data, logs, ids, clean, coordinator_partitions)
    write_log_dir_files(out, logs, ids, clean)
    damaged, cut = apply_damage(out, data, logs, damage_percent, random.Random(f"{seed}-damage"), len(layout))
    shutil.rmtree(out / TEMPLATES)
    every = list(logs.values()) + [metadata]
    return LogDirSummary(out, tuple(sorted([*logs, METADATA])), damaged,
                         sum(len(log.segment_bases) for log in every), sum(log.log_bytes for log in every) - cut)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the log dir to create (must not exist or be empty)")
    parser.add_argument("--partitions", type=int, required=True, help="data partitions (N)")
    parser.add_argument("--topics", type=int, default=None, help="topics (default max(1, N // 20))")
    parser.add_argument("--segments", type=int, default=20, help="segments of the multi-segment shapes (S)")
    parser.add_argument("--unclean", action="store_true", help="a killed broker's log dir")
    parser.add_argument("--damage-percent", type=float, default=0.0, help="damaged data partitions, in %%")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--copy", action="store_true", help="private copies instead of hard links")
    parser.add_argument("--repeat", type=int, default=1, help="that many copies of the layout of --partitions")
    parser.add_argument("--coordinator-partitions", type=int, default=rec.COORDINATOR_PARTITIONS,
                        help="partitions of __consumer_offsets and of __transaction_state each (default 50)")
    return parser.parse_args(argv)


def main(argv=None) -> LogDirSummary:
    args = parse_args(argv)
    started = time.perf_counter()
    summary = make_broker_logdir(args.out, args.partitions, args.topics, args.segments, args.unclean,
                                 args.damage_percent, args.seed, args.copy, args.coordinator_partitions,
                                 args.repeat)
    report = {**asdict(summary), "path": str(summary.path), "partitions": len(summary.partitions),
              "seconds": round(time.perf_counter() - started, 2)}
    print(json.dumps(report, indent=2))
    return summary


if __name__ == "__main__":
    main()
