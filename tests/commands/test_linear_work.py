"""Every whole-log-dir command does work linear in the partitions: counted, never timed.

Each command runs in-process on a broker-shaped log dir (``make_broker_logdir``: data partitions,
``__consumer_offsets``, ``__transaction_state`` and ``__cluster_metadata`` all scaled together,
every checkpoint listing every partition) of N and of 4N partitions, after a warm-up run on a
third dir. :mod:`tests.work_count` counts each Python function's calls, the files opened and
their bytes, the bytes mapped and the directory entries listed; each may grow at most 4x plus a
small constant. A per-partition re-read of a log-dir file (N opens of an N-line checkpoint), a
list searched once per partition or a log-dir listing per partition grows 16x and fails here.

Commands that touch one partition (``append``, ``repair``) must not grow with the partitions they
do not touch: the files they open and map stay the same, and a function may gain at most a few
calls per added partition (the checkpoint entries Kafka's format makes them read and rewrite, the
fingerprint's listing of the log dir).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.benchmarks.make_broker_logdir import make_broker_logdir
from tests.conftest import run_seglog
from tests.work_count import assert_linear, count_work, superlinear

SMALL, LARGE = 12, 48  # data partitions; the internal topics' partitions scale with them
FACTOR = LARGE / SMALL
SEGMENTS = 3


def build(root: Path, n: int, **options) -> Path:
    """N data partitions: ``n // SMALL`` copies of one layout of SMALL (so 4N is exactly 4 x N's
    shapes, commits and damage), and a third as many coordinator partitions of each kind."""
    make_broker_logdir(root, partitions=SMALL, topics=3, segments=SEGMENTS, repeat=n // SMALL,
                       coordinator_partitions=n // 3, **options)
    return root


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """Read-only dirs (hard-linked segments) per size: clean, unclean, 10 % damaged, a twin."""
    out = {}
    for label, n in (("warm", SMALL), ("small", SMALL), ("large", LARGE)):
        root = tmp_path_factory.mktemp(f"linear-{label}")
        out[label] = {"clean": build(root / "clean", n), "unclean": build(root / "unclean", n, unclean=True),
                      "damaged": build(root / "damaged", n, unclean=True, damage_percent=25),
                      "twin": build(root / "twin", n)}
    return out


def counted(args_for, dirs) -> tuple:
    """The work of the command at N and 4N, after a warm-up (imports, first-use tables)."""
    run_seglog(*args_for(dirs["warm"]))
    results = []
    for label in ("small", "large"):
        result, work = count_work(lambda: run_seglog(*args_for(dirs[label])), within=dirs[label]["clean"].parent)
        assert result.exit_code in (0, 1, 3), (label, result.exit_code, result.err[-500:])
        results.append((result, work))
    return results


READS = {
    "verify": lambda d: ["verify", "--jobs", "1", str(d["clean"])],
    "verify --level deep": lambda d: ["verify", "--jobs", "1", "--level", "deep", str(d["damaged"])],
    "verify unclean": lambda d: ["verify", "--jobs", "1", "--format", "json", str(d["unclean"])],
    "dump": lambda d: ["dump", str(d["clean"])],
    "dump --format jsonl": lambda d: ["dump", "--format", "jsonl", "--deep-iteration", str(d["damaged"])],
    "recover (clean)": lambda d: ["recover", "--jobs", "1", str(d["clean"])],
    "recover (unclean)": lambda d: ["recover", "--jobs", "1", str(d["unclean"])],
    "recover (damaged, salvage)": lambda d: ["recover", "--jobs", "1", "--mode", "salvage", "--format", "json",
                                             str(d["damaged"])],
    "rebuild-index": lambda d: ["rebuild-index", str(d["unclean"])],
    "simulate-retention": lambda d: ["simulate-retention", "--format", "json", str(d["clean"])],
    "offsets": lambda d: ["offsets", str(d["clean"])],
    "transactions": lambda d: ["transactions", str(d["clean"])],
    "diff": lambda d: ["diff", "--jobs", "1", str(d["clean"]), str(d["twin"])],
}


@pytest.mark.parametrize("name", READS)
def test_read_command_is_linear(name, dirs):
    (_, small), (_, large) = counted(READS[name], dirs)
    assert small.opens > 0 or small.bytes_mapped > 0 or small.listings > 0  # it did read the dir
    assert_linear(small, large, FACTOR, what=name)


def test_the_check_catches_quadratic_work(dirs):
    """The same counts fail a command that reads a log-dir checkpoint once per partition."""
    from seglog_cli.storage.log.checkpoints import read_offset_checkpoint

    def per_partition_rereads(root: Path):
        for directory in sorted(p for p in root.iterdir() if p.is_dir()):
            read_offset_checkpoint(root / "recovery-point-offset-checkpoint").get(directory.name)

    _, small = count_work(lambda: per_partition_rereads(dirs["small"]["clean"]))
    _, large = count_work(lambda: per_partition_rereads(dirs["large"]["clean"]))
    grown = superlinear(small, large, FACTOR)
    assert any("parse_offset_entry" in line for line in grown), grown
    assert any(line.startswith("bytes of files opened") for line in grown), grown


# -- writing commands, each on fresh private copies ------------------------------------------------

def fresh(tmp_path: Path, n: int, **options) -> Path:
    return build(tmp_path / f"copy-{n}-{len(list(tmp_path.iterdir()))}", n, copy=True, **options)


def counted_writes(tmp_path, make_args, **options) -> tuple:
    sizes = []
    for n in (SMALL, SMALL, LARGE):  # the first: the warm-up
        root = fresh(tmp_path, n, **options)
        result, work = count_work(lambda: run_seglog(*make_args(root, tmp_path)))
        assert result.exit_code in (0, 1), (n, result.exit_code, result.err[-500:])
        sizes.append((root, result, work))
        shutil.rmtree(root.parent / "backups", ignore_errors=True)
    return sizes[1:]


WRITES = {
    "recover --apply": (lambda root, tmp: ["recover", "--apply", "--jobs", "1", "--backup-dir",
                                           str(root.parent / "backups" / root.name), str(root)],
                        {"unclean": True, "damage_percent": 25}),
    "rebuild-index --apply": (lambda root, tmp: ["rebuild-index", "--apply", "--backup-dir",
                                                 str(root.parent / "backups" / root.name), str(root)],
                              {"unclean": True}),
    "simulate-retention --apply": (lambda root, tmp: ["simulate-retention", "--apply", "--config", "retention.bytes=1",
                                                      "--backup-dir", str(root.parent / "backups" / root.name),
                                                      str(root)], {}),
}


@pytest.mark.parametrize("name", WRITES)
def test_writing_command_is_linear(name, tmp_path):
    make_args, options = WRITES[name]
    (_, _, small), (_, _, large) = counted_writes(tmp_path, make_args, **options)
    assert_linear(small, large, FACTOR, what=name)


def test_undo_is_linear(tmp_path):
    works = []
    for n in (SMALL, SMALL, LARGE):
        root = fresh(tmp_path, n, unclean=True, damage_percent=25)
        backups = root.parent / "backups" / root.name
        applied = run_seglog("recover", "--apply", "--jobs", "1", "--backup-dir", str(backups), str(root))
        assert applied.exit_code in (0, 1), applied.err
        (backup,) = [p for p in backups.iterdir() if p.is_dir()]
        result, work = count_work(lambda: run_seglog("undo", "--apply", str(backup)))
        assert result.exit_code == 0, result.err
        works.append(work)
    assert_linear(works[1], works[2], FACTOR, what="undo --apply")


# -- one partition inside a big log dir -----------------------------------------------------------

PER_UNTOUCHED_PARTITION = 6  # calls a function may gain per added partition (checkpoint lines, listing)


def assert_untouched_partitions_cost_little(small, large, what: str, added: int) -> None:
    for figure in ("files opened", "bytes mapped"):
        before, after = small.figures()[figure], large.figures()[figure]
        assert after <= before + (5 if figure == "files opened" else 1 << 16), f"{what}: {figure} {before} -> {after}"
    grown = superlinear(small, large, 1, calls_slack=PER_UNTOUCHED_PARTITION * added,
                        bytes_slack=1 << 30, count_slack=PER_UNTOUCHED_PARTITION * added)
    # C builtins (len, hash) are called a few times more than the Python functions they serve
    grown = [line for line in grown if not line.startswith("~:0(") or _growth(line) > 2 * PER_UNTOUCHED_PARTITION * added]
    assert not grown, f"{what}: work grew with the partitions it does not touch:\n  " + "\n  ".join(grown[:30])


def _growth(line: str) -> int:
    before, after = line.rsplit(": ", 1)[1].removesuffix(" calls").split(" -> ")
    return int(after) - int(before)


def one_partition(tmp_path, command) -> tuple:
    works, totals = [], []
    for n in (SMALL, SMALL, LARGE):
        root = fresh(tmp_path, n)
        healthy = fresh(tmp_path, n)
        target = sorted(p for p in root.iterdir() if p.name.startswith("topic-"))[0]
        if command == "repair":
            log = sorted(target.glob("*.log"))[0]
            data = bytearray(log.read_bytes())
            data[len(data) // 2] ^= 0xFF
            log.write_bytes(bytes(data))
            args = ["repair", "--apply", "--from", str(healthy / target.name), str(target)]
        else:
            args = ["append", "--apply", "--value", "one more", str(target)]
        result, work = count_work(lambda: run_seglog(*args))
        assert result.exit_code in (0, 1), result.err
        works.append(work)
        totals.append(sum(1 for p in root.iterdir() if p.is_dir()))
    return works[1], works[2], totals[2] - totals[1]


@pytest.mark.parametrize("command", ["append", "repair"])
def test_one_partition_does_not_pay_for_the_others(command, tmp_path):
    small, large, added = one_partition(tmp_path, command)
    assert_untouched_partitions_cost_little(small, large, command, added)


# -- planning outside the commands ------------------------------------------------------------------

def test_spark_split_planning_is_linear(dirs):
    from seglog_cli.spark.plan import parse_options, plan_splits

    options = parse_options({})
    plan_splits([str(dirs["warm"]["clean"])], options)
    splits, works = [], []
    for label in ("small", "large"):
        # planning lists partitions from a thread pool: every thread's listings are counted, so
        # two counts of one dir agree
        counts = [count_work(lambda: plan_splits([str(dirs[label]["clean"])], options), within=dirs[label]["clean"])
                  for _ in range(2)]
        assert counts[0][1].figures() == counts[1][1].figures(), label
        found, work = counts[0]
        splits.append(len(found))
        works.append(work)
    assert splits[1] > splits[0] > 0
    assert_linear(works[0], works[1], FACTOR, what="plan_splits")


def test_tiered_pairing_is_linear(tmp_path):
    from seglog_cli.storage.tiered.tiered import pair_tiered

    def layout(n: int) -> list[Path]:
        root = tmp_path / f"tiered-{n}"
        dirs = []
        for p in range(n):
            local = root / f"t{p % 7}-{p}"
            remote = root / f"t{p % 7}-{p}-AAAAAAAAAAAAAAAAAAAAAA"
            local.mkdir(parents=True)
            remote.mkdir()
            dirs += [local, remote]
        return dirs

    small_dirs, large_dirs = layout(SMALL * 4), layout(LARGE * 4)
    pair_tiered(layout(SMALL * 4 + 1))  # warm-up on other paths (a Path caches its own hash)
    (alone, pairs), small = count_work(lambda: pair_tiered(small_dirs))
    (_, large_pairs), large = count_work(lambda: pair_tiered(large_dirs))
    assert len(pairs) == SMALL * 4 and len(large_pairs) == LARGE * 4 and all(p.local for p in pairs)
    assert_linear(small, large, FACTOR, what="pair_tiered")
