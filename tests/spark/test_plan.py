"""Split planning and options, without Spark or Arrow."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from seglog_cli.spark.plan import OptionError, ScanOptions, option_paths, parse_options, plan_splits
from seglog_cli.storage.log.batches import LogScan
from seglog_cli.storage.log.files import MappedFile
from seglog_cli.storage.log.indexes import OffsetIndex
from tests.conftest import requires_corpus
from tests.spark.conftest import make_partition

MB = 1024 * 1024


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    log_dir = tmp_path_factory.mktemp("plan") / "logdir"
    make_partition(log_dir / "events-0", 6)
    return log_dir


def _positions(split) -> list[int]:
    with MappedFile(split.path) as mapped:
        return [b.position for b in LogScan(mapped, split.start) if b.position < split.end]


def test_options_parse_spark_strings():
    options = parse_options({"checkCrc": "false", "FROMOFFSET": "10", "toTimestamp": "2025-01-01T00:00:00Z",
                             "topics": "a, b", "splitBytes": "0"})
    assert options == ScanOptions(check_crc=False, from_offset=10, to_timestamp=1735689600000,
                                  topics=("a", "b"), split_bytes=0)
    assert parse_options({}) == ScanOptions()
    assert option_paths({"path": "/x", "paths": "/y,/z"}) == ["/x", "/y", "/z"]


@pytest.mark.parametrize("options, message", [
    ({"checkCrc": "maybe"}, "checkcrc: 'maybe' is not true or false"),
    ({"fromOffset": "ten"}, "fromoffset: 'ten' is not an integer"),
    ({"onCrcMismatch": "drop"}, "onCrcMismatch: 'drop' is not one of keep, skip, fail"),
    ({"onCrcMismatch": "skip", "checkCrc": "false"}, "onCrcMismatch=skip needs checkCrc=true"),
    ({"topicPattern": "("}, "topicPattern: '(' is not a regular expression"),
    ({"fromTimestamp": "yesterday"}, "fromtimestamp: 'yesterday' is neither epoch milliseconds nor an ISO-8601 time"),
])
def test_bad_options_name_the_option(options, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace("'", "'")):
        parse_options(options)
    with pytest.raises(OptionError, match="give a path"):
        option_paths({})


def test_splits_cut_at_index_entries_and_cover_every_batch_once(generated):
    log = generated / "events-0" / "00000000000000000000.log"
    splits = plan_splits([str(generated)], ScanOptions(split_bytes=MB))
    assert len(splits) >= 5
    assert splits[0].start == 0 and splits[-1].end == log.stat().st_size
    assert all(a.end == b.start for a, b in zip(splits, splits[1:]))
    with OffsetIndex(log.with_suffix(".index"), 0) as index:
        indexed = {e.position for e in index.iter_entries(index.dump_entry_count())}
    assert all(s.start in indexed for s in splits[1:])
    assert all(s.size >= MB for s in splits[:-1])  # no split below the target but the last
    with MappedFile(log) as mapped:
        whole = [b.position for b in LogScan(mapped)]
    assert [p for s in splits for p in _positions(s)] == whole


def test_no_split_without_index_or_when_disabled(generated, tmp_path):
    assert len(plan_splits([str(generated)], ScanOptions(split_bytes=0))) == 1
    copy = tmp_path / "events-0"
    shutil.copytree(generated / "events-0", copy)
    (copy / "00000000000000000000.index").unlink()
    assert len(plan_splits([str(copy)], ScanOptions(split_bytes=MB))) == 1


def test_a_stale_index_entry_is_not_a_cut(generated, tmp_path):
    """Entries whose position frames no valid batch (an index from another log) give no cut."""
    copy = tmp_path / "events-0"
    shutil.copytree(generated / "events-0", copy)
    index = copy / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    for at in range(4, len(data), 8):  # every position moved 5 bytes into its batch
        data[at:at + 4] = (int.from_bytes(data[at:at + 4], "big") + 5).to_bytes(4, "big")
    index.write_bytes(bytes(data))
    assert len(plan_splits([str(copy)], ScanOptions(split_bytes=MB))) == 1


def test_offset_range_skips_splits_and_starts_at_the_index_floor(generated):
    all_splits = plan_splits([str(generated)], ScanOptions(split_bytes=MB))
    middle = all_splits[2]
    with MappedFile(middle.path) as mapped:
        first = next(iter(LogScan(mapped, middle.start)))
    splits = plan_splits([str(generated)], ScanOptions(split_bytes=MB, from_offset=first.base_offset + 1,
                                                        to_offset=first.base_offset + 5))
    assert splits[0].start <= first.position and splits[0].from_offset == first.base_offset + 1
    assert splits[0].start >= all_splits[1].start
    assert all(s.to_offset == first.base_offset + 5 for s in splits)


def test_topic_filters(generated, tmp_path):
    shutil.copytree(generated / "events-0", tmp_path / "events-0")
    shutil.copytree(generated / "events-0", tmp_path / "orders-3")
    assert {s.topic for s in plan_splits([str(tmp_path)], ScanOptions(topics=("orders",)))} == {"orders"}
    assert {(s.topic, s.partition) for s in plan_splits([str(tmp_path)], ScanOptions(topic_pattern="ev.*"))} == {
        ("events", 0)}
    assert plan_splits([str(tmp_path)], ScanOptions(topic_pattern="ev")) == []


@requires_corpus
def test_corpus_segments_are_one_split_each(corpus):
    data = corpus / "kafka-4.2.0" / "data"
    splits = plan_splits([str(data)], ScanOptions())
    logs = sorted(data.glob("*/*.log"))
    assert sorted(Path(s.path) for s in splits) == sorted(p for p in logs if p.stat().st_size)
    small = plan_splits([str(data / "plain-0")], ScanOptions(split_bytes=128 * 1024))
    assert len(small) > len(list((data / "plain-0").glob("*.log")))


@pytest.mark.slow
def test_a_600_mib_segment_is_read_by_several_tasks_in_bounded_memory(tmp_path):
    """The issue's check: a 600 MB segment becomes several input partitions (about 128 MiB
    each, cut at .index entries), and reading the largest one keeps a worker process under
    400 MB (measured in a child process, as a Spark Python worker would run it)."""
    import json
    import subprocess
    import sys

    pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'seglog[spark]')")
    make_partition(tmp_path / "logdir" / "big-0", 600)
    splits = plan_splits([str(tmp_path / "logdir")], ScanOptions())
    assert len(splits) == 5  # 600 MiB: four of 128 MiB and the 88 MiB left (only a sliver under 32 MiB is folded in)
    assert all(128 * MB <= s.size < 128 * MB + 64 * 1024 for s in splits[:-1])
    largest = max(splits, key=lambda s: s.size)
    code = ("import json, sys; from seglog_cli.spark.plan import Split, ScanOptions; "
            "from seglog_cli.spark.columns import record_batches; "
            "split = Split(**json.loads(sys.argv[1])); "
            "rows = sum(b.num_rows for b in record_batches(split, ScanOptions())); "
            "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]; "
            "print(rows, peak)")
    argument = json.dumps({k: getattr(largest, k) for k in ("path", "topic", "partition", "base_offset",
                                                            "start", "end", "segment")})
    # the child's own high-water mark (wait4's ru_maxrss would include this process's, from the fork)
    done = subprocess.run([sys.executable, "-c", code, argument], stdout=subprocess.PIPE, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    rows, peak_kib = map(int, done.stdout.split())
    with MappedFile(largest.path) as mapped:
        expected = sum(b.records_count for b in LogScan(mapped, largest.start) if b.position < largest.end)
    assert rows == expected > 100_000
    assert peak_kib / 1024 < 400, f"peak RSS {peak_kib / 1024:.0f} MB"


def test_the_engine_and_the_cli_never_import_spark_or_arrow():
    """pyspark stays an optional extra: the CLI, the engine and the planner load without it."""
    import subprocess
    import sys

    code = ("import sys, pkgutil, importlib, seglog_cli.storage as s, seglog_cli.cli, seglog_cli.spark.plan; "
            "[importlib.import_module(m.name) for m in pkgutil.walk_packages(s.__path__, 'seglog_cli.storage.')]; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow', 'py4j', 'pandas')))")
    done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, check=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "[]"


@requires_corpus
def test_a_tiered_partition_given_both_ways_is_planned_as_one_log(corpus, tmp_path):
    """The corpus's tiered-0: remote segments 0 and 1040 (below the local log start 2080), then the
    local 2080, 3120, 4160, each once, topic and partition from the directory names; the remote
    directory alone is planned as a partition too."""
    tiered = corpus / "kafka-4.2.0" / "tiered"
    if not (tiered / "remote").is_dir():
        pytest.skip("no tiered/remote in this corpus")
    splits = plan_splits([str(tiered / "remote"), str(tiered / "data" / "tiered-0")], ScanOptions(split_bytes=0))
    assert [(Path(s.path).parent.name, s.base_offset, s.topic, s.partition) for s in splits] == [
        ("tiered-0-NgDFhHPYTFCyTgfmgOxB0w", 0, "tiered", 0), ("tiered-0-NgDFhHPYTFCyTgfmgOxB0w", 1040, "tiered", 0),
        ("tiered-0", 2080, "tiered", 0), ("tiered-0", 3120, "tiered", 0), ("tiered-0", 4160, "tiered", 0)]
    alone = plan_splits([str(tiered / "remote")], ScanOptions(split_bytes=0))
    assert [(s.base_offset, s.topic, s.partition) for s in alone] == [
        (0, "tiered", 0), (1040, "tiered", 0), (2080, "tiered", 0), (3120, "tiered", 0)]


def test_load_list_and_isolation_options():
    """``load([a, b])`` reaches the source as a JSON list in ``paths`` (a path may hold a comma)."""
    assert option_paths({"paths": '["/data/a,b","/data/c"]'}) == ["/data/a,b", "/data/c"]
    with pytest.raises(OptionError, match="paths"):
        option_paths({"paths": '["/a", 3]'})
    assert parse_options({"isolationLevel": "READ_COMMITTED"}).read_committed
    assert not parse_options({}).read_committed
    with pytest.raises(OptionError, match="isolationLevel: 'serializable'"):
        parse_options({"isolationLevel": "serializable"})


def test_to_offset_drops_the_cuts_past_it(generated):
    """A range ending early in a big segment plans only the splits up to it: the rows are the
    same as with every split, and the last split ends at the first cut past ``toOffset``."""
    every = plan_splits([str(generated)], parse_options({"splitBytes": str(256 * 1024)}))
    ranged = plan_splits([str(generated)], parse_options({"splitBytes": str(256 * 1024), "toOffset": "100"}))
    assert len(every) > 8 and len(ranged) == 1
    assert ranged[0].start == 0 and ranged[0].end == every[1].start
    with MappedFile(ranged[0].path) as mapped:
        after = next(iter(LogScan(mapped, ranged[0].end)))
    assert after.base_offset > 100


def test_pushed_filters_become_the_options_seeks():
    """push_filters on Spark's filter objects (no JVM): exact filters on topic, partition and
    offset are consumed, the rest (NOT, an offset IN list, timestamps) go back to Spark."""
    datasource = pytest.importorskip("pyspark.sql.datasource")
    from datetime import datetime, timezone

    from seglog_cli.spark.source import push_filters

    eq_topic = datasource.EqualTo(("topic",), "orders")
    in_partition = datasource.In(("partition",), (1, 3))
    low = datasource.GreaterThanOrEqual(("offset",), 100)
    high = datasource.LessThan(("offset",), 200)
    negated = datasource.Not(datasource.EqualTo(("isControl",), True))
    stamp = datasource.GreaterThan(("timestamp",), datetime(2025, 1, 1, tzinfo=timezone.utc))
    listed = datasource.In(("offset",), (150, 120))
    options, remaining = push_filters(parse_options({"fromOffset": "110"}),
                                      [eq_topic, in_partition, low, high, negated, stamp, listed])
    assert remaining == [negated, stamp, listed]
    assert (options.topics, options.partitions, options.from_offset, options.to_offset) == (("orders",), (1, 3), 120, 150)
    assert options.from_timestamp == 1735689600000 and not options.nothing
    options, _ = push_filters(parse_options({"topics": "a"}), [eq_topic])
    assert options.nothing


# -- planning cost: the same splits as a walk of every index entry --------------------------------

def _both_ways(monkeypatch, paths, options):
    """The splits as planned, and as the entry-by-entry walk of every index on one thread
    (``bench_plan.walked_cut_positions``: how planning cut segments before it bisected)."""
    import seglog_cli.spark.plan as plan
    from tests.benchmarks.bench_plan import walked_cut_positions

    fast = plan_splits(paths, options)
    with monkeypatch.context() as patched:
        patched.setattr(plan, "_cut_positions", walked_cut_positions)
        patched.setattr(plan, "PLANNING_THREADS", 1)
        walked = plan_splits(paths, options)
    return fast, walked


@requires_corpus
@pytest.mark.parametrize("split_bytes", [0, 4096, 65536, 1024 * 1024])
def test_planning_gives_the_walks_splits_on_the_corpus(corpus, monkeypatch, split_bytes):
    """Bisected index positions, several planning threads: the split list of the corpus (every
    log dir, in order, with segment names and log dirs) equals the entry-by-entry walk's."""
    fast, walked = _both_ways(monkeypatch, [str(corpus / "kafka-4.2.0")], ScanOptions(split_bytes=split_bytes))
    assert len(fast) > 100
    assert [(s, s.segment) for s in fast] == [(s, s.segment) for s in walked]


def test_planning_gives_the_walks_splits_on_generated_and_disordered_indexes(generated, tmp_path, monkeypatch):
    """The same on a generated 6 MiB segment, cut at several sizes, also with its index entries
    shuffled (a damaged index that goes back: walked, not bisected) and in reverse, and with a
    zeroed entry in the middle (DumpLogSegments' count stops there)."""
    import random

    copies = {}
    for kind in ("plain", "shuffled", "reversed", "zeroed"):
        copy = tmp_path / kind / "events-0"
        shutil.copytree(generated / "events-0", copy)
        index = copy / "00000000000000000000.index"
        data = index.read_bytes()
        entries = [data[i:i + 8] for i in range(0, len(data), 8)]
        if kind == "shuffled":
            head = entries[:1]
            rest = entries[1:]
            random.Random(7).shuffle(rest)
            entries = head + rest
        elif kind == "reversed":
            entries = entries[:1] + entries[1:][::-1]
        elif kind == "zeroed":
            entries[len(entries) // 2] = bytes(8)
        index.write_bytes(b"".join(entries))
        copies[kind] = copy
    for split_bytes in (4096, 100_000, MB, 3 * MB):
        counts = []
        for kind, copy in copies.items():
            fast, walked = _both_ways(monkeypatch, [str(copy)], ScanOptions(split_bytes=split_bytes))
            assert fast == walked, (kind, split_bytes)
            counts.append(len(fast))
        assert counts[0] > 1
    fast, walked = _both_ways(monkeypatch, [str(tmp_path)], ScanOptions(split_bytes=MB))
    assert fast == walked and len({s.path for s in fast}) == 4
