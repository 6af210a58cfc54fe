"""How fast ``--offsets-decoder`` decodes ``__consumer_offsets``, against baselines measured in the
same run.

The records are what a group coordinator writes (generated, deterministic): offset commits of
many groups, topics and partitions, one batch per OffsetCommit request (1-8 records, the
partitions of one topic), uncompressed like ``offsets.topic.compression.codec=0``; value
versions 3 (about 87 %), 4 (8 %) and 1 with an expire timestamp (4 %), 1 % tombstones; one batch
in 100 is a classic GroupMetadata record (type 2, v3 value, 1-4 members with consumer-protocol
subscriptions and assignments: 0.2 % of the records) and one in 200 a legacy type-0 commit. Keys and values are encoded from the message specs by
``tests/coordinator_bytes.py`` (independent of the readers measured). Steps:

    parser            records/s of ``offsets_parser()`` (the key/payload texts) in process, on the
                      generated records
    parser_schema     the same with the hand-written readers off (a record-type table of new
                      tuples, and the consumer-protocol readers patched out: every record read
                      through the construct schemas), the way every record was read before them
    group_metadata    both parsers on the type-2 records alone (records/s)
    dump_offsets      ``seglog dump --offsets-decoder FILE > /dev/null``, wall, on a segment of
                      those records (default 200,000)
    dump_deep         ``seglog dump --deep-iteration --print-data-log FILE > /dev/null`` on the
                      same file (strings instead of decoded JSON: the plain deep dump)

Reported: records/s of each, ``parser / parser_schema`` (the fast path's speed-up), and
``dump_offsets / dump_deep`` (how much slower the decoder dump is than a plain deep dump). CLI
steps run in fresh processes, interleaved, best of ``--repeat``. Nothing asserts a time;
``test_bench_smoke.py`` checks it still runs.

Usage (from the repository root)::

    python tests/benchmarks/bench_decoders.py --records 200000 --json bench-decoders.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from seglog_cli.render.coordinator_json import CoordinatorRecordParser, offsets_parser  # noqa: E402
from seglog_cli.storage.serde import coordinator_records  # noqa: E402
from seglog_cli.storage.write.builder import NewRecord, build_batch  # noqa: E402
from seglog_cli.storage.serde.coordinator_records import GROUP_RECORD_TYPES  # noqa: E402
from seglog_cli.storage.log.records import Record  # noqa: E402
from tests import coordinator_bytes as cb  # noqa: E402
from tests.benchmarks import bench_dump  # noqa: E402

GENERATOR_VERSION = 1
START_TIMESTAMP = 1_767_225_600_000  # 2026-01-01T00:00:00Z
CLI_STEPS = {"dump_offsets": ["--offsets-decoder"], "dump_deep": ["--deep-iteration", "--print-data-log"]}
PARSER_RECORDS = 50_000


# -- the records ---------------------------------------------------------------------------------

def _subscription(rng: random.Random, topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v1 (int16 version, topics, userData null, ownedPartitions [])."""
    return cb.i16(1) + cb.arr([cb.s(t) for t in topics]) + cb.b(None) + cb.arr([])


def _assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v1: [{topic, partitions}], userData null."""
    return cb.i16(1) + cb.arr([cb.s(topic) + cb.arr([cb.i32(p) for p in partitions])]) + cb.b(None)


def _group_metadata_value(rng: random.Random, group: str, topic: str, timestamp: int) -> bytes:
    members = []
    for index in range(rng.randint(1, 4)):
        member = f"consumer-{group}-{index}-{rng.getrandbits(64):016x}"
        members.append(cb.s(member) + cb.s(None) + cb.s(f"consumer-{group}-{index}") + cb.s("/10.1.2.3")
                       + cb.i32(300_000) + cb.i32(45_000) + cb.b(_subscription(rng, [topic]))
                       + cb.b(_assignment(topic, [index])))
    return (cb.i16(3) + cb.s("consumer") + cb.i32(rng.randint(1, 50)) + cb.s("range") + cb.s(f"consumer-{group}-0")
            + cb.i64(timestamp) + cb.arr(members))


def offsets_records(count: int, seed: int = 20260101) -> list[list[tuple[bytes, bytes | None, int]]]:
    """``count`` records as batches: lists of (key, value or None, timestamp)."""
    rng = random.Random(seed)
    groups = [f"{rng.choice(['orders', 'billing', 'search', 'audit', 'etl'])}-service-{n}" for n in range(60)]
    topics = [f"{rng.choice(['orders', 'payments', 'clicks', 'events'])}.v{n % 3}.{n}" for n in range(40)]
    batches, made, timestamp = [], 0, START_TIMESTAMP
    while made < count:
        timestamp += rng.randint(1, 40)
        group, topic = rng.choice(groups), rng.choice(topics)
        roll = rng.random()
        if roll < 0.01:  # a rebalance's GroupMetadata record
            batch = [(cb.i16(2) + cb.s(group), _group_metadata_value(rng, group, topic, timestamp), timestamp)]
        elif roll < 0.015:  # a commit of a 0.8.2-era client (legacy type 0, value v0)
            key = cb.offset_commit_key(group, topic, rng.randrange(12), record_type=0)
            batch = [(key, cb.i16(0) + cb.i64(rng.randrange(10**9)) + cb.s("") + cb.i64(timestamp), timestamp)]
        else:
            batch = []
            for partition in rng.sample(range(12), rng.randint(1, 8)):
                key = cb.offset_commit_key(group, topic, partition)
                kind = rng.random()
                if kind < 0.01:
                    value = None  # offset deleted / expired
                elif kind < 0.05:
                    value = cb.offset_commit_value(rng.randrange(10**9), "", timestamp, version=1,
                                                   expire=timestamp + 86_400_000)
                elif kind < 0.13:
                    value = cb.offset_commit_value(rng.randrange(10**9), "", timestamp, leader_epoch=rng.randrange(9),
                                                   version=4)
                else:
                    metadata = "" if rng.random() < 0.9 else f"host-{rng.randrange(100)}"
                    value = cb.offset_commit_value(rng.randrange(10**9), metadata, timestamp,
                                                   leader_epoch=rng.randrange(9), version=3)
                batch.append((key, value, timestamp))
        batches.append(batch)
        made += len(batch)
    return batches


def write_offsets_segment(path: str | Path, count: int, seed: int = 20260101) -> dict:
    """A ``__consumer_offsets`` segment of about ``count`` records (whole batches)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    offset = batches = 0
    with open(path, "wb") as out:
        for batch in offsets_records(count, seed):
            records = [NewRecord(key=key, value=value, timestamp=ts) for key, value, ts in batch]
            out.write(build_batch(records, base_offset=offset, partition_leader_epoch=0))
            offset += len(records)
            batches += 1
    return {"path": str(path), "size_bytes": path.stat().st_size, "records": offset, "batches": batches,
            "seed": seed, "generator": GENERATOR_VERSION}


def cached_offsets_segment(cache_dir: Path, count: int, seed: int) -> dict:
    directory = cache_dir / f"consumer-offsets-{count}-g{GENERATOR_VERSION}-s{seed}" / "__consumer_offsets-0"
    log, meta_path = directory / "00000000000000000000.log", directory / "segment.json"
    if meta_path.is_file() and log.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("size_bytes") == log.stat().st_size:
            return meta
    meta = write_offsets_segment(log, count, seed)
    meta_path.write_text(json.dumps(meta))
    return meta


# -- the steps -------------------------------------------------------------------------------------

def _records(count: int, seed: int) -> list[Record]:
    out = []
    for batch in offsets_records(count, seed):
        for key, value, timestamp in batch:
            out.append(Record(len(out), timestamp, 0, key, value, (), -1, 0))
    return out[:count]


def schema_only_parser() -> CoordinatorRecordParser:
    """The parser over a table of new (key, value) tuples: the fast readers only serve the
    record-type table's own pairs, so every record goes through the schemas."""
    return CoordinatorRecordParser({t: (pair[0], pair[1]) for t, pair in GROUP_RECORD_TYPES.items()})


def time_parser(parser, records: list[Record], repeat: int) -> dict:
    best = None
    for _ in range(repeat):
        started = time.perf_counter()
        for record in records:
            parser(record)
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    return {"seconds": best, "records": len(records), "records_per_s": len(records) / best}


@contextmanager
def schemas_only():
    """The embedded consumer-protocol messages read through the schemas too."""
    with mock.patch.object(coordinator_records, "read_consumer_subscription", lambda data: None), \
            mock.patch.object(coordinator_records, "read_consumer_assignment", lambda data: None):
        yield


def parser_steps(count: int, seed: int, repeat: int) -> dict:
    records = _records(count, seed)
    group_metadata = [r for r in records if r.key[:2] == b"\x00\x02" and r.value is not None]
    fast, schema = offsets_parser(), schema_only_parser()
    lines = [fast(r) for r in records]
    with schemas_only():
        mismatched = sum(line != schema(r) for line, r in zip(lines, records))  # the same lines both ways
        schema_all = time_parser(schema, records, repeat)
        schema_group = time_parser(schema, group_metadata, repeat) if group_metadata else None
    return {"parser": time_parser(fast, records, repeat), "parser_schema": schema_all,
            "group_metadata": time_parser(fast, group_metadata, repeat) if group_metadata else None,
            "group_metadata_schema": schema_group, "lines_differing": mismatched}


def cli_steps(path: str, repeat: int) -> dict:
    best: dict = {}
    for _ in range(repeat):
        for step, options in CLI_STEPS.items():
            run = bench_dump.run_process(bench_dump.seglog_command() + ["dump", *options, path])
            if run["returncode"] != 0:
                raise RuntimeError(f"{step} failed ({run['returncode']}): {run['stderr'][-2000:]}")
            if step not in best or run["wall"] < best[step]["wall"]:
                best[step] = {"wall": run["wall"], "peak_rss_mb": run["peak_rss_mb"]}
    return best


def run(count: int, seed: int, repeat: int, cache_dir: Path, parser_records: int) -> dict:
    meta = cached_offsets_segment(cache_dir, count, seed)
    load_before = os.getloadavg()
    parsers = parser_steps(min(parser_records, count), seed, repeat)
    cli = cli_steps(meta["path"], repeat)
    records = meta["records"]
    for step in cli.values():
        step["records_per_s"] = records / step["wall"]
    ratios = {"parser_vs_schema": parsers["parser"]["records_per_s"] / parsers["parser_schema"]["records_per_s"],
              "dump_offsets_time_vs_dump_deep": cli["dump_offsets"]["wall"] / cli["dump_deep"]["wall"]}
    return {"segment": meta, "steps": {**parsers, **cli}, "ratios": ratios, "machine": bench_dump.machine_info(),
            "load_average": {"before": load_before, "after": os.getloadavg()}}


def print_report(report: dict, file=sys.stdout) -> None:
    steps, meta = report["steps"], report["segment"]
    print(f"segment: {meta['records']} records in {meta['batches']} batches, {meta['size_bytes'] / 2**20:.1f} MiB",
          file=file)
    print(f"parser (fast readers)  {steps['parser']['records_per_s']:>10,.0f} records/s", file=file)
    print(f"parser (schemas only)  {steps['parser_schema']['records_per_s']:>10,.0f} records/s   "
          f"fast/schema {report['ratios']['parser_vs_schema']:.2f}x, lines differing: {steps['lines_differing']}",
          file=file)
    if steps.get("group_metadata"):
        print(f"group metadata only    {steps['group_metadata']['records_per_s']:>10,.0f} records/s   "
              f"schemas only {steps['group_metadata_schema']['records_per_s']:,.0f} records/s "
              f"({steps['group_metadata']['records']} records)", file=file)
    for step in CLI_STEPS:
        print(f"{step:<22} {steps[step]['records_per_s']:>10,.0f} records/s   wall {steps[step]['wall']:.2f} s, "
              f"peak RSS {steps[step]['peak_rss_mb']:.0f} MB", file=file)
    print(f"dump --offsets-decoder takes {report['ratios']['dump_offsets_time_vs_dump_deep']:.2f}x the time of "
          f"dump --deep-iteration --print-data-log (load average {report['load_average']['before'][0]:.1f})",
          file=file)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000, help="records in the segment (default 200000)")
    parser.add_argument("--parser-records", type=int, default=PARSER_RECORDS,
                        help=f"records timed in process (default {PARSER_RECORDS})")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--repeat", type=int, default=3, help="runs per step; the best is kept")
    parser.add_argument("--cache-dir", default=os.environ.get("SEGLOG_BENCH_DIR", "/tmp/seglog-bench"))
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--quiet", action="store_true")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    report = run(args.records, args.seed, args.repeat, Path(args.cache_dir), args.parser_records)
    if not args.quiet:
        print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
