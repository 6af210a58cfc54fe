"""Planning cost of the Spark sources (``seglog_cli.spark.plan.plan_splits``) per segment,
against reading each segment's ``.index`` once (the floor: planning must read it to cut).

Three log dirs: many small segments (default 1,000 of 64 KiB, one partition, written by
``PartitionWriter`` as a broker rolls them), a few big ones (default 4 partitions of one 1 GiB
segment each, indexed as Kafka's recovery indexes them; the same ``.log`` hard-linked, so only
one is written), and any ``--path`` given (the corpus, a real log dir). For each: the planner
as it is, the planner walking every ``.index`` entry one at a time (how it cut segments
before: the reference the tests compare its splits with), and the index read; best of
``--repeat``, warm page cache. The ratio that matters is ``plan / index read`` per segment.

    python tests/benchmarks/bench_plan.py                      # 1,000 small + 4 x 1 GiB
    python tests/benchmarks/bench_plan.py --big-mb 256 --path /work/shared/corpus --json bench-plan.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

SMALL_SEGMENT_BYTES = 64 * 1024


def walked_cut_positions(log_path, index_path, base_offset, start, size, split_bytes):
    """The cuts as planning found them before it bisected: every ``.index`` entry read one at
    a time, in file order (the reference the fast path must agree with, tests/spark/test_plan.py)."""
    from seglog_cli.spark.plan import _frames_valid_batch
    from seglog_cli.storage.log.errors import SeglogError
    from seglog_cli.storage.log.files import MappedFile
    from seglog_cli.storage.log.indexes import OffsetIndex

    if split_bytes <= 0 or size - start <= split_bytes or index_path is None or not index_path.is_file():
        return []
    try:
        with OffsetIndex(index_path, base_offset) as index:
            positions = [entry.position for entry in index.iter_entries(index._stop_at_zero_slot())]
    except (SeglogError, OSError, ValueError):
        return []
    cuts, target = [], start + split_bytes
    with MappedFile(log_path) as mapped:
        for position in positions:
            if position >= target and position < size and position > (cuts[-1] if cuts else start):
                if _frames_valid_batch(mapped, position):
                    cuts.append(position)
                    target = position + split_bytes
    if cuts and size - cuts[-1] < split_bytes // 4:
        cuts.pop()
    return cuts


# -- data -----------------------------------------------------------------------------------------

def small_segments(root: Path, count: int) -> Path:
    """One partition of ``count`` rolled 64 KiB segments (10 records of ~400 B per batch)."""
    from seglog_cli.storage.write.builder import NewRecord, build_batch
    from seglog_cli.storage.write.writer import PartitionWriter, SegmentConfig

    log_dir = root / f"small-{count}"
    if (log_dir / "done").is_file():
        return log_dir
    shutil.rmtree(log_dir, ignore_errors=True)
    writer = PartitionWriter(log_dir / "small-0", SegmentConfig(segment_bytes=SMALL_SEGMENT_BYTES))
    records = [NewRecord(key=b"key-%d" % i, value=bytes(400)) for i in range(10)]
    per_segment = SMALL_SEGMENT_BYTES // len(build_batch(records)) + 1
    offset = 0
    while offset < count * per_segment * len(records) - 1:
        writer.append(build_batch(records, base_offset=offset))
        offset += len(records)
    writer.close()
    (log_dir / "done").write_text("")
    return log_dir


def big_segments(root: Path, partitions: int, size_mb: int) -> Path:
    """``partitions`` partitions of one ``size_mb`` segment each, with the indexes a broker
    writes (one generated ``.log``, hard-linked into each partition dir)."""
    from seglog_cli.storage.log.batches import LogScan
    from seglog_cli.storage.log.files import MappedFile
    from seglog_cli.storage.write.writer import SegmentConfig, SegmentWriter
    from tests.benchmarks.make_segment import write_segment

    log_dir = root / f"big-{partitions}x{size_mb}"
    if (log_dir / "done").is_file():
        return log_dir
    shutil.rmtree(log_dir, ignore_errors=True)
    log_dir.mkdir(parents=True)
    source = log_dir / "source.log"
    write_segment(source, size_mb * 1024 * 1024)
    names = ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex")
    with tempfile.TemporaryDirectory(dir=log_dir) as scratch:
        writer = SegmentWriter(scratch, 0, SegmentConfig(segment_bytes=1 << 31))
        with MappedFile(source) as mapped:
            for batch in LogScan(mapped):
                writer.append(bytes(mapped.view[batch.position:batch.end_position]))
        writer.close()
        for number in range(partitions):
            directory = log_dir / f"big-{number}"
            directory.mkdir()
            os.link(source, directory / names[0])
            for name in names[1:]:
                shutil.copyfile(Path(scratch) / name, directory / name)
    source.unlink()
    (log_dir / "done").write_text("")
    return log_dir


# -- measuring ------------------------------------------------------------------------------------

def best(function, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(path: str, repeat: int) -> dict:
    import seglog_cli.spark.plan as plan

    options = plan.ScanOptions()
    splits = plan.plan_splits([path], options)
    segments = sorted({split.path for split in splits})
    indexes = [Path(p[:-len(".log")] + ".index") for p in segments]
    indexes = [p for p in indexes if p.is_file()]
    planned = best(lambda: plan.plan_splits([path], options), repeat)
    saved = plan._cut_positions, plan.PLANNING_THREADS
    plan._cut_positions, plan.PLANNING_THREADS = walked_cut_positions, 1
    try:
        walked_splits = plan.plan_splits([path], options)
        walked = best(lambda: plan.plan_splits([path], options), repeat)
    finally:
        plan._cut_positions, plan.PLANNING_THREADS = saved
    index_read = best(lambda: [p.read_bytes() for p in indexes], repeat)
    count = max(len(segments), 1)
    return {
        "path": path, "segments": len(segments), "splits": len(splits),
        "same_splits_as_walk": splits == walked_splits,
        "index_bytes": sum(p.stat().st_size for p in indexes),
        "plan_ms_per_segment": planned * 1000 / count,
        "walk_ms_per_segment": walked * 1000 / count,
        "index_read_ms_per_segment": index_read * 1000 / max(len(indexes), 1),
        "plan_over_index_read": planned / index_read if index_read and indexes else None,
        "walk_over_plan": walked / planned if planned else None,
    }


def report(args) -> dict:
    root = Path(args.cache_dir)
    root.mkdir(parents=True, exist_ok=True)
    paths = [str(small_segments(root, args.small))]
    if args.big:
        paths.append(str(big_segments(root, args.big, args.big_mb)))
    paths += args.path or []
    results = [measure(path, args.repeat) for path in paths]
    if not args.quiet:
        print(f"{'log dir':<48} {'segs':>5} {'splits':>6} {'plan ms/seg':>11} {'walk ms/seg':>11} "
              f"{'index ms/seg':>12} {'plan/index':>10} {'walk/plan':>9} same")
        for r in results:
            ratio = "-" if r["plan_over_index_read"] is None else f"{r['plan_over_index_read']:.1f}x"
            print(f"{r['path'][-48:]:<48} {r['segments']:>5} {r['splits']:>6} {r['plan_ms_per_segment']:>11.3f} "
                  f"{r['walk_ms_per_segment']:>11.3f} {r['index_read_ms_per_segment']:>12.3f} {ratio:>10} "
                  f"{r['walk_over_plan']:>8.1f}x {r['same_splits_as_walk']}")
    out = {"results": results}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return out


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000, help="small segments (default 1000)")
    parser.add_argument("--big", type=int, default=4, help="partitions of one big segment (default 4; 0: none)")
    parser.add_argument("--big-mb", type=int, default=1024, help="big segment size in MiB (default 1024)")
    parser.add_argument("--path", action="append", help="another log dir to plan (repeatable), e.g. the corpus")
    parser.add_argument("--cache-dir", default=os.environ.get("SEGLOG_BENCH_DIR", "/tmp/seglog-bench") + "/plan")
    parser.add_argument("--repeat", type=int, default=5, help="runs per step; the best is kept")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--quiet", action="store_true")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    return report(parse_args(argv))


if __name__ == "__main__":
    main()
