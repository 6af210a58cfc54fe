"""Bad input never crashes, hangs or balloons (issue 15, the read side).

Each command runs as a child process (``tests/fuzz_hostile.py``) with a timeout and its own peak
RSS (``wait4``): FIFOs, device symlinks and symlink loops named like Kafka files, unreadable
files and directories, sparse 2 GiB segments, names beyond Long.MAX, damaged bytes. Commands with
a parallel path run with ``--jobs 3`` on a log dir of four partitions; section 9 compares their
messages and statuses with ``--jobs 1`` (issue 34). The long sweep, which compares them on every
case, is ``python tests/fuzz_hostile.py --runs N``.
"""

from __future__ import annotations

import io
import os
import random
import re
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from seglog_cli.render import recover_report, verify_report
from seglog_cli.storage.log.errors import SeglogError, UnreadableInputError
from seglog_cli.storage.log.files import MappedFile, read_small_file
from seglog_cli.storage.log.findings import Code, Finding, Severity
from seglog_cli.storage.write.rebuild_index import MAX_SEGMENT_BYTES, plan_rebuild
from seglog_cli.storage.recovery.recover import plan_recover
from seglog_cli.storage.verify.verify import verify
from tests import fuzz_hostile as hostile
from tests.conftest import CORPUS, CORPUS_MISSING
from tests.fuzz_helpers import SEEDS

UNREADABLE = 4
PERMISSIONS_SKIP = hostile.can_drop_permissions()
SEVERAL_JOBS = (3,)  # each command with a parallel path run once, with --jobs 3 (section 9 compares job counts)


@pytest.fixture
def root():
    path = Path(tempfile.mkdtemp(prefix="seglog-hostile-", dir="/tmp"))
    yield path
    hostile.cleanup(path)


def _ok(runs) -> None:
    for run in runs:
        assert not run.failures, f"seglog {' '.join(run.argv)} -> {run.status} {run.failures}: {run.stderr[-400:]}"


# -- 1. only regular files are opened ------------------------------------------------------------

SPECIALS = {"fifo": "not a regular file: a FIFO", "symlink-zero": "not a regular file: a character device",
            "symlink-fifo": "not a regular file: a FIFO", "socket": "not a regular file: a socket",
            "symlink-loop": "Too many levels of symbolic links", "symlink-dangling": "dangling symbolic link"}


@pytest.mark.parametrize("kind", sorted(SPECIALS))
@pytest.mark.parametrize("role", ["log", "index", "snapshot", "leader-epoch-checkpoint"])
def test_a_file_that_is_not_regular_is_one_line_status_4(root, kind, role):
    case = hostile.build_case(root, kind, role, random.Random(0))
    target = str(case.target)
    dump, verified = (hostile.run_seglog(argv, timeout=10) for argv in (["dump", target], ["verify", target]))
    _ok([dump, verified])
    assert verified.status == UNREADABLE, verified.stderr
    if role != "leader-epoch-checkpoint":  # dump reports a name it does not know as Kafka does
        assert dump.status == UNREADABLE, dump.stderr
        assert dump.stderr == f"seglog: {target}: {SPECIALS[kind]}\n" or (
            kind == "symlink-loop" and dump.stderr == f"seglog: {target}: cannot open: {SPECIALS[kind]}\n"), dump.stderr


@pytest.mark.parametrize("kind", ["fifo", "symlink-zero"])
@pytest.mark.parametrize("role", ["active-log", "index", "snapshot", "partition.metadata", "meta.properties"])
def test_directory_walks_report_a_special_file_and_go_on(root, kind, role):
    case = hostile.build_case(root, kind, role, random.Random(0))
    _ok(hostile.run_case(case, SEVERAL_JOBS))
    report = verify([str(case.log_dir)])
    unreadable = [f for f in report.all_findings() if f.code == Code.UNREADABLE_FILE]
    assert [f.path for f in unreadable] == [str(case.target)], unreadable
    assert report.partitions and report.partitions[0].segments >= 1  # the rest was still verified


def test_read_small_file_and_mapped_file_refuse_before_reading(root):
    fifo = root / "00000000000000000000.snapshot"
    os.mkfifo(fifo)
    zero = root / "00000000000000000000.log"
    zero.symlink_to("/dev/zero")
    for path, why in ((fifo, "a FIFO"), (zero, "a character device")):
        for reader in (read_small_file, MappedFile):
            with pytest.raises(UnreadableInputError, match=why) as caught:
                reader(path)
            assert caught.value.path == str(path)


# -- 2. memory stays flat whatever the file --------------------------------------------------------

@pytest.mark.parametrize("kind", hostile.SIZE_KINDS)
def test_sparse_segments_cost_neither_memory_nor_time(root, kind):
    case = hostile.build_case(root, kind, "log", random.Random(0))
    runs = hostile.run_case(case, SEVERAL_JOBS)
    _ok(runs)
    for run in runs:
        assert 0 < run.max_rss_kb < hostile.RSS_LIMIT_KB and run.seconds < 15, (run.argv, run.max_rss_kb, run.seconds)


def test_a_hole_before_real_batches_is_one_corrupt_region(root):
    case = hostile.build_case(root, "hole-2g", "log", random.Random(0))
    log_size = case.target.stat().st_size
    data_size = log_size - (2**31 + 4096)
    report = verify([str(case.target)])
    regions = [f for f in report.all_findings() if f.code == Code.CORRUPT_REGION]
    assert len(regions) == 1, regions
    assert regions[0].position == data_size and regions[0].position + regions[0].length == 2**31 + 4096


# -- 3. permission denied is status 4 naming the file ---------------------------------------------

@pytest.mark.skipif(PERMISSIONS_SKIP is not None, reason=PERMISSIONS_SKIP or "")
@pytest.mark.parametrize("kind,role", [("chmod-file", "log"), ("chmod-file", "index"),
                                       ("chmod-file", "leader-epoch-checkpoint"),
                                       ("chmod-file", "recovery-point-offset-checkpoint"), ("chmod-dir", "log")])
def test_permission_denied_is_status_4_or_a_finding(root, kind, role):
    case = hostile.build_case(root, kind, role, random.Random(1))
    case.target.chmod(0)
    runs = hostile.run_case(case, SEVERAL_JOBS)
    _ok(runs)
    command = "verify" if role in ("leader-epoch-checkpoint", "recovery-point-offset-checkpoint") else "dump"
    direct = hostile.run_seglog([command, "--format", "text", str(case.target)] if command == "verify"
                                else [command, str(case.target)], unprivileged=True)
    assert direct.status == UNREADABLE, direct.stderr
    if command == "dump":
        reason = "cannot list directory" if case.target.is_dir() else "cannot open"
        assert direct.stderr == f"seglog: {case.target}: {reason}: Permission denied\n", direct.stderr


@pytest.mark.skipif(PERMISSIONS_SKIP is not None, reason=PERMISSIONS_SKIP or "")
@pytest.mark.parametrize("mode", [0o000, 0o311])
def test_a_log_dir_that_cannot_be_listed_is_status_4_naming_it(root, mode):
    """Not "no partition found" (simulate-retention said usage error, 2) nor a log dir with
    nothing in it (diff compared the other replica alone and said in-sync, 0)."""
    log_dir, _partition = hostile.fresh_log_dir(root)
    (root / "other").mkdir()
    replica, _ = hostile.fresh_log_dir(root / "other")
    log_dir.chmod(mode)
    runs = [hostile.run_seglog(argv, unprivileged=True) for argv in (
        ["simulate-retention", str(log_dir)], ["diff", str(replica), str(log_dir)], ["recover", str(log_dir)],
        ["rebuild-index", str(log_dir)])]
    _ok(runs)
    for run in runs:
        assert (run.status, run.stderr) == (UNREADABLE, f"seglog: {log_dir}: cannot list directory: Permission denied\n"), run


# -- 5. names beyond Long.MAX ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["99999999999999999999.log", "9223372036854775808.index"])
def test_offsets_beyond_long_max_in_names(root, name):
    log_dir, partition = hostile.fresh_log_dir(root)
    target = partition / name
    target.write_bytes((partition / "00000000000000000000.log").read_bytes())
    runs = [hostile.run_seglog(argv) for argv in (["dump", str(target)], ["verify", str(log_dir)],
                                                   ["recover", str(partition)], ["rebuild-index", str(partition)],
                                                   ["rebuild-index", str(target)])]
    _ok(runs)
    assert [run.status for run in runs] == [UNREADABLE, UNREADABLE, 3, UNREADABLE, UNREADABLE]
    assert all("Long.parseLong" in run.stderr for run in runs[:1])
    findings = verify([str(log_dir)]).all_findings()
    assert [(f.code, f.path) for f in findings if f.code == Code.UNREADABLE_FILE] == [(Code.UNREADABLE_FILE, str(target))]


# -- 6. salvage over legacy entries with a size field of Int.MAX -------------------------------------

LEGACY = sorted(n for n in SEEDS if n[:2] in ("v0", "v1")) + ["v2-none"]


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.sampled_from(LEGACY), min_size=1, max_size=4), at=st.integers(0, 10**4),
       value=st.sampled_from([2**31 - 1, 2**31 - 12, 2**30]))
@example(picks=["v1-gzip", "v1-lz4", "v0-none", "v2-none"], at=421, value=2**31 - 1)
def test_recover_plans_never_escape_on_huge_legacy_sizes(root, picks, at, value):
    partition = root / "t-0"
    partition.mkdir(exist_ok=True)
    data, offset = bytearray(), 0
    for name in picks:
        entry = bytearray(SEEDS[name])
        struct.pack_into(">q", entry, 0, offset + (struct.unpack_from(">q", entry, 0)[0] if entry[16] < 2 else 0))
        offset, data = offset + 20, data + entry
    at %= len(data) - 11
    struct.pack_into(">i", data, at + 8, value)
    (partition / "00000000000000000000.log").write_bytes(bytes(data))
    for mode in ("salvage", "kafka"):
        plan = plan_recover([partition], mode=mode)  # anything but a SeglogError fails the test
        for part in plan.partitions:
            assert part.refused is None or "\n" not in part.refused
    plan_rebuild([str(partition)])


# -- 7. rebuild-index refuses a segment past 2^31 - 1 bytes -------------------------------------------

def test_rebuild_index_refuses_a_segment_larger_than_an_int(root):
    case = hostile.build_case(root, "hole-2g", "log", random.Random(0))
    assert case.target.stat().st_size > MAX_SEGMENT_BYTES
    before = {p.name: p.read_bytes() for p in case.partition.iterdir() if p.suffix in (".index", ".timeindex")}
    plan = plan_rebuild([str(case.partition)])
    big = next(s for s in plan.segments if s.log_path == case.target)
    assert "larger than the maximum allowed segment size of 2147483647" in big.refused
    assert not big.files and all(change.path.parent != case.target.parent or change.path.stem != case.target.stem
                                 for change in plan.changes)
    run = hostile.run_seglog(["rebuild-index", "--format", "json", str(case.target)])
    assert run.status == 3 and not run.failures, run.stderr
    after = {p.name: p.read_bytes() for p in case.partition.iterdir() if p.suffix in (".index", ".timeindex")}
    assert after == before


# -- 4. names and messages from disk are printed literally --------------------------------------------

HOSTILE_NAMES = ["o[bold]x[red]-1", "a\x1b[31mred.tmp", "[red]", "cr\rERROR forged.tmp", "nl\nERROR forged.tmp"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _hostile_report(root: Path):
    log_dir, partition = hostile.fresh_log_dir(root)
    (partition / "leader-epoch-checkpoint").write_bytes(b"0\n-1\n")  # Kafka's message quotes "[<path>]"
    for name in HOSTILE_NAMES[1:]:
        (partition / (name if name.endswith(".tmp") else name + ".tmp")).write_bytes(b"")
    (partition.parent / HOSTILE_NAMES[0]).mkdir()
    report = verify([str(log_dir)])
    report.findings.append(Finding(Code.UNREADABLE_FILE, Severity.ERROR, "p/[bold]x[/]", None, "[/] and [bold]x[/]"))
    return report


def test_verify_table_and_text_print_names_literally(root):
    report = _hostile_report(root)
    out = io.StringIO()
    verify_report.render_table(report, out, Severity.INFO, width=250, color=True)
    table = ANSI.sub("", out.getvalue())
    for literal in ("[bold]x[/]", "[/] and [bold]x[/]", "a\\x1b[31mred.tmp", "cr\\x0dERROR forged.tmp",
                    "nl\\x0aERROR forged.tmp", "[/tmp"):
        assert literal in table, literal
    text = io.StringIO()
    verify_report.render_text(report, text, Severity.INFO)
    lines = text.getvalue().splitlines()
    assert not any(line.startswith("ERROR forged") for line in lines)
    assert "\x1b" not in text.getvalue() and "\r" not in text.getvalue()


def test_stderr_one_liners_and_recover_report_escape_control_characters(root):
    error = SeglogError("bad \x1b[2J byte\n", root / "x\x1b[31m\r.log", 7)
    assert str(error) == f"{root}/x\\x1b[31m\\x0d.log: position 7: bad \\x1b[2J byte\\x0a"
    log_dir, partition = hostile.fresh_log_dir(root)
    renamed = partition.rename(log_dir / "t[bold]x[red]\x1b[31m-0")
    (log_dir / "u[red]-0").mkdir()
    (log_dir / "u[red]-0" / "00000000000000000000.log").write_bytes(b"")
    plan = plan_recover([renamed, log_dir / "u[red]-0"])
    out = io.StringIO()
    out.isatty = lambda: True  # a terminal: the summary table in colour
    recover_report.render_text(plan, out, show_all=True)
    shown = ANSI.sub("", out.getvalue())
    assert "t[bold]x[red]\\x1b[31m-0" in shown and shown.count("u[red]-0") >= 2, shown


# -- 8. property: any hostile case, any command ----------------------------------------------------

@settings(deadline=None, max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(hostile.SPECIAL_KINDS + hostile.OTHER_KINDS), role=st.sampled_from(hostile.ROLES),
       seed=st.integers(0, 2**32 - 1))
def test_no_hostile_case_crashes_hangs_or_balloons(kind, role, seed):
    if kind in ("chmod-file", "chmod-dir") and PERMISSIONS_SKIP is not None:
        kind = "fifo"  # cannot deny a read here; a FIFO exercises the same paths
    root = Path(tempfile.mkdtemp(prefix="seglog-hostile-", dir="/tmp"))
    try:
        _ok(hostile.run_case(hostile.build_case(root, kind, role, random.Random(seed)), SEVERAL_JOBS))
    finally:
        hostile.cleanup(root)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING)
@settings(deadline=None, max_examples=8)
@given(kind=st.sampled_from(hostile.BYTE_KINDS), role=st.sampled_from(hostile.ROLES[:8]),
       source=st.sampled_from(hostile.CORPUS_PARTITIONS), seed=st.integers(0, 2**32 - 1))
def test_damaged_corpus_files_never_crash(kind, role, source, seed):
    root = Path(tempfile.mkdtemp(prefix="seglog-hostile-", dir="/tmp"))
    try:
        case = hostile.build_case(root, kind, role, random.Random(seed), source)
        runs = hostile.run_case(case, SEVERAL_JOBS)
        _ok(runs)
        verified = next(run for run in runs if run.argv[0] == "verify")
        assert verified.status in (0, 1, 3, 4)
    finally:
        hostile.cleanup(root)


def test_the_sweep_script_counts_runs_and_failures(capsys):
    assert hostile.main(["--runs", "6", "--kinds", "fifo,huge-name,bad-version", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert re.match(r"runs: \d+  failed runs: 0 ", printed), printed
    compared = int(re.search(r"compared across --jobs: (\d+)", printed).group(1))
    assert compared >= 8, printed  # 4 commands with a parallel path, --jobs 3 twice after --jobs 1


# -- 9. one job or several: the same message and status, on every run (issue 34) -----------------

def _unprivileged(kind: str, role: str, source: str | None = None):
    marks = pytest.mark.skipif(PERMISSIONS_SKIP is not None, reason=PERMISSIONS_SKIP or "")
    return pytest.param(kind, role, source, marks=marks, id=f"{kind}:{role}")


JOBS_CASES = [
    pytest.param("bad-version", "leader-epoch-checkpoint", None, id="bad-version:leader-epoch-checkpoint"),
    _unprivileged("chmod-file", "leader-epoch-checkpoint"),
    _unprivileged("chmod-file", "log"),
    pytest.param("fifo", "log", None, id="fifo:log"),
    pytest.param("truncate", "log", None, id="truncate:log"),
    pytest.param("flip", "index", None, id="flip:index"),
    pytest.param("bad-version", "partition.metadata", None, id="bad-version:partition.metadata"),
    pytest.param("flip", "log", hostile.BIG, id="flip:big-compressed-log"),  # under dump's and verify's decode workers
]


@pytest.mark.parametrize("kind,role,source", JOBS_CASES)
def test_one_job_and_several_give_the_same_message_and_status(root, kind, role, source):
    """recover, verify and diff fork over the log dir's four partitions (the damaged one second),
    dump and verify --level deep hand the big segment's batches to decode workers; rebuild-index
    and simulate-retention have no parallel path. Each command with --jobs runs with one job,
    then three times with three (``hostile.judge``: jobs-differ, unstable)."""
    case = hostile.build_case(root, kind, role, random.Random(5), source)
    argvs = [argv for argv in hostile.commands(case, (1, 3, 3, 3))
             if "--jobs" in argv or argv[0] in ("rebuild-index", "simulate-retention")]
    runs = hostile.run_commands(case, argvs)
    _ok(runs)
    by_command: dict[tuple, list] = {}
    for run in runs:
        by_command.setdefault(hostile.without_jobs(run.argv), []).append(run)
    assert {len(group) for command, group in by_command.items() if command[0] in ("recover", "diff")} == {4}
    assert (["verify", "--level", "deep", str(case.partition)] in map(list, by_command)) == (source == hostile.BIG)
    for command, group in by_command.items():
        outcomes = {(run.status, run.stderr) for run in group}
        assert len(outcomes) == 1, (command, [(run.argv, run.status, run.stderr) for run in group])
        status, stderr = outcomes.pop()
        assert status != 70 and "internal error" not in stderr and "Traceback" not in stderr, (command, stderr)
        seglog_lines = [line for line in stderr.splitlines() if line.startswith("seglog:")]
        if seglog_lines:  # (dump's other lines are Kafka's, as kafka-dump-log prints them)
            assert stderr == seglog_lines[0] + "\n" and str(case.target) in stderr, (command, stderr)
