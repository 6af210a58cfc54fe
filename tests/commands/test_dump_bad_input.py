"""``seglog dump`` on bad input: a clear one-line error and a documented exit status, never a
traceback or a hang.

Exit statuses of ``seglog dump`` (its ``--help``): 0 dumped; 1 some input damaged where
kafka-dump-log would stop (seglog carried on); 2 usage error; 4 an input could not be read.
70 ("seglog: internal error") is a bug and fails every test here, as does a Python traceback.

Most runs are in-process (``run_seglog``) for speed; a few are real processes, to see what a
shell sees: no traceback on stderr, and ``seglog dump big.log | head -1`` ending quietly.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CORPUS, REPO, requires_corpus, run_seglog
from tests.fuzz_helpers import (
    NAMES,
    control_batch,
    damaged_logs,
    examples,
    legacy_entry,
    offset_index_for,
    time_index_for,
    v2_batch,
)

OK, WARNINGS, USAGE, UNREADABLE = 0, 1, 2, 4
FORMATS = ("text", "jsonl")
FUZZ = settings(max_examples=examples(60), deadline=2000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SUBPROCESS_TIMEOUT = 120


def valid_log() -> bytes:
    """A small segment: v2 none/gzip/zstd, a legacy entry, a COMMIT marker."""
    parts = [v2_batch(0, base_offset=0), v2_batch(1, base_offset=4), v2_batch(4, base_offset=8),
             legacy_entry(1, 0, offset=12), control_batch(1, struct.pack(">hi", 0, 1), base_offset=13)]
    return b"".join(bytes(part) for part in parts)


def check(result, expected, names=(), fmt: str = "text"):
    """The exit status is one of ``expected``; stderr holds no traceback and no internal error;
    every ``seglog:`` line (one line by construction) names one of ``names``, unless it is a
    usage error; in jsonl every stdout line is a JSON value."""
    expected = {expected} if isinstance(expected, int) else set(expected)
    err = result.err
    assert "Traceback" not in err, err
    assert "internal error" not in err, err
    assert result.exit_code in expected, (result.exit_code, err)
    for line in err.splitlines():
        if line.startswith("seglog:") and not line.startswith("seglog: usage error:"):
            assert any(str(name) in line for name in names), f"{line!r} names none of {names}"
    if fmt == "jsonl":
        for line in result.out.splitlines():
            json.loads(line)
    return result


def dump(*args, fmt: str = "text"):
    return run_seglog("dump", "--format", fmt, *map(str, args))


# -- random bytes under every name ---------------------------------------------------------------

FLAG_SETS = [(), ("--deep-iteration",), ("--print-data-log",), ("--no-resync", "--deep-iteration"),
             ("--verify-index-only",), ("--index-sanity-check",), ("--max-bytes", "100"),
             ("--value-decoder-class", "IntegerDecoder", "--key-decoder-class", "LongDecoder"),
             ("--skip-record-metadata", "--print-data-log"), ("--payload-encoding", "hex", "--deep-iteration"),
             ("--from-offset", "3", "--to-offset", "30", "--deep-iteration"),
             ("--from-timestamp", "1700000000002", "--to-timestamp", "2030-01-01T00:00:00Z")]

# kind -> (exit statuses with no sibling .log, with a valid sibling .log)
EXPECTED = {
    "log": ({OK, WARNINGS}, {OK, WARNINGS}),
    "checkpoint": ({OK, WARNINGS}, {OK, WARNINGS}),
    "index": ({UNREADABLE}, {OK, WARNINGS}),
    "timeindex": ({UNREADABLE}, {OK, WARNINGS}),
    "snapshot": ({OK, WARNINGS}, {OK, WARNINGS}),
    "txnindex": ({OK, WARNINGS}, {OK, WARNINGS}),
}


@FUZZ
@given(data=st.binary(max_size=800) | st.builds(lambda head, rest: struct.pack(">qi", 0, head) + rest,
                                                st.integers(-2**31, 2**31 - 1), st.binary(max_size=300)),
       kind=st.sampled_from(sorted(NAMES)), fmt=st.sampled_from(FORMATS), with_log=st.booleans(),
       flags=st.sampled_from(FLAG_SETS))
def test_random_bytes_with_every_suffix(data, kind, fmt, with_log, flags):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / NAMES[kind]
        path.write_bytes(data)
        if with_log and kind != "log":
            (Path(tmp) / NAMES["log"]).write_bytes(valid_log())
        result = dump(*flags, path, fmt=fmt)
        check(result, EXPECTED[kind][with_log], [path.name, NAMES["log"]], fmt)


@FUZZ
@given(files=st.fixed_dictionaries({kind: st.none() | st.binary(max_size=200) for kind in NAMES}),
       fmt=st.sampled_from(FORMATS), types=st.sampled_from(["all", "log", "index,timeindex", "snapshot,txnindex"]))
def test_directory_of_random_files(files, fmt, types):
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "orders-0"
        directory.mkdir()
        for kind, content in files.items():
            if content is not None:
                (directory / NAMES[kind]).write_bytes(content)
        result = dump("--types", types, "--deep-iteration", directory, fmt=fmt)
        # a partition's segment files are found through its .log; snapshots on their own
        present = {kind for kind, content in files.items() if content is not None}
        wanted = set(NAMES) if types == "all" else set(types.split(","))
        dumped = {kind for kind in present & wanted if kind in ("snapshot", "checkpoint") or "log" in present}
        expected = {OK, WARNINGS} if dumped else UNREADABLE
        check(result, expected, [directory.name] + list(NAMES.values()), fmt)


@FUZZ
@given(data=damaged_logs(), fmt=st.sampled_from(FORMATS), flags=st.sampled_from(FLAG_SETS))
def test_damaged_batches(data, fmt, flags):
    """Valid batches of every magic and codec, damaged (CRC mostly fixed up): both renderers."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / NAMES["log"]
        path.write_bytes(data)
        check(dump(*flags, path, fmt=fmt), {OK, WARNINGS}, [path.name], fmt)


@settings(FUZZ, max_examples=examples(40))
@given(value=st.none() | st.binary(max_size=60), type_id=st.sampled_from([0, 1, 2, 3, 4, 5, 6, 9]),
       fmt=st.sampled_from(FORMATS))
def test_control_records_with_any_value(value, type_id, fmt):
    """Whatever a control record's value holds, the text and JSON renderers cope."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / NAMES["log"]
        path.write_bytes(bytes(control_batch(type_id, value)))
        check(dump("--deep-iteration", path, fmt=fmt), {OK, WARNINGS}, [path.name], fmt)


# -- files that are not what their name says ----------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", sorted(NAMES))
def test_empty_files(tmp_path, kind, fmt):
    (tmp_path / NAMES["log"]).write_bytes(b"")
    path = tmp_path / NAMES[kind]
    path.write_bytes(b"")
    result = check(dump(path, fmt=fmt), WARNINGS if kind == "snapshot" else OK, [path.name], fmt)
    if kind == "snapshot":  # Kafka prints the schema error and goes on: a damaged input
        assert "Snapshot failed schema validation" in result.err


@pytest.mark.parametrize("fmt", FORMATS)
def test_directory_without_segments(tmp_path, fmt):
    empty = tmp_path / "orders-0"
    empty.mkdir()
    (empty / "leader-epoch-checkpoint").write_text("0\n0\n")
    result = check(dump(empty, fmt=fmt), UNREADABLE, [empty.name], fmt)
    assert "no files to dump" in result.err


@pytest.mark.parametrize("fmt", FORMATS)
def test_directory_without_the_requested_kinds(tmp_path, fmt):
    partition = tmp_path / "orders-0"
    partition.mkdir()
    (partition / NAMES["log"]).write_bytes(valid_log())
    check(dump("--types", "txnindex", partition, fmt=fmt), UNREADABLE, [partition.name], fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ["missing.log", "missing.index", "missing", "missing-dir/",
                                  "00000000000000000000.snapshot"])
def test_nonexistent_path(tmp_path, name, fmt):
    path = tmp_path / name
    result = check(dump(path, fmt=fmt), UNREADABLE, [path.name or name.rstrip("/")], fmt)
    assert "no such file" in result.err


def test_nonexistent_path_does_not_stop_the_others(tmp_path):
    good = tmp_path / NAMES["log"]
    good.write_bytes(valid_log())
    result = check(dump(tmp_path / "gone.log", good), UNREADABLE, ["gone.log", good.name])
    assert f"Dumping {good}" in result.out and "baseOffset: 13" in result.out


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ["nodot", "00000000000000000000.log.deleted", "00000000000000000000.index.swap",
                                  "00000000000000000000.LOG", "leader-epoch-checkpoint"])
def test_unknown_file_is_ignored_like_kafka(tmp_path, name, fmt):
    path = tmp_path / name
    path.write_bytes(valid_log())
    result = check(dump(path, fmt=fmt), OK, [path.name], fmt)
    assert f"Ignoring unknown file {path}" in result.err


@pytest.mark.parametrize("fmt", FORMATS)
def test_index_renamed_log(tmp_path, fmt):
    log = valid_log()
    path = tmp_path / NAMES["log"]
    path.write_bytes(offset_index_for(log) + time_index_for(log))
    check(dump("--deep-iteration", path, fmt=fmt), {OK, WARNINGS}, [path.name], fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["index", "timeindex", "txnindex", "snapshot"])
def test_log_renamed_index(tmp_path, kind, fmt):
    path = tmp_path / NAMES[kind]
    path.write_bytes(valid_log())
    expected = UNREADABLE if kind in ("index", "timeindex") else {OK, WARNINGS}
    check(dump(path, fmt=fmt), expected, [path.name, NAMES["log"]], fmt)
    (tmp_path / NAMES["log"]).write_bytes(valid_log())  # now with its segment's .log
    check(dump(path, fmt=fmt), {OK, WARNINGS}, [path.name, NAMES["log"]], fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_timeindex_without_its_index_and_log(tmp_path, fmt):
    log = valid_log()
    path = tmp_path / NAMES["timeindex"]
    path.write_bytes(time_index_for(log))
    result = check(dump(path, fmt=fmt), UNREADABLE, [path.name, NAMES["log"]], fmt)
    assert ".log is needed" in result.err
    (tmp_path / NAMES["log"]).write_bytes(log)  # .log back, .index still missing
    check(dump(path, fmt=fmt), {OK, WARNINGS}, [path.name], fmt)
    assert not (tmp_path / NAMES["index"]).exists()  # unlike Kafka, seglog creates nothing


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_segment_at_every_position(tmp_path, fmt):
    log = valid_log()
    path = tmp_path / NAMES["log"]
    for cut in range(0, len(log) + 1, 7):
        path.write_bytes(log[:cut])
        check(dump("--deep-iteration", path, fmt=fmt), {OK, WARNINGS}, [path.name], fmt)


def _corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    picked = []
    for partition in ("codecs-0", "txn-0", "idem-0", "__cluster_metadata-0"):
        directory = CORPUS / "kafka-4.2.0" / "data" / partition
        for suffix in (".log", ".index", ".timeindex", ".snapshot", ".txnindex", ".checkpoint"):
            picked += sorted(directory.glob(f"*{suffix}"))[:1]
    return [p for p in picked if p.stat().st_size <= 2 << 20]


@requires_corpus
@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_real_files(tmp_path, fmt):
    for source in _corpus_files():
        copy = tmp_path / source.parent.name
        copy.mkdir(exist_ok=True)
        for sibling in source.parent.glob(source.name.split(".")[0] + ".*"):
            if sibling.is_file():
                shutil.copy(sibling, copy / sibling.name)
        data = source.read_bytes()
        target = copy / source.name
        for cut in sorted({0, 1, 11, 17, 60, 61, len(data) // 3, len(data) // 2, len(data) - 1}):
            if cut <= len(data):
                target.write_bytes(data[:cut])
                check(dump("--deep-iteration", target, fmt=fmt), {OK, WARNINGS}, [target.name, source.parent.name], fmt)
        target.write_bytes(data)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="running as root: chmod 000 does not stop root from reading")
@pytest.mark.parametrize("fmt", FORMATS)
def test_unreadable_file_and_directory(tmp_path, fmt):
    path = tmp_path / NAMES["log"]
    path.write_bytes(valid_log())
    locked = tmp_path / "locked-0"
    locked.mkdir()
    path.chmod(0)
    locked.chmod(0)
    try:
        result = check(dump(path, locked, fmt=fmt), UNREADABLE, [path.name, locked.name], fmt)
        assert "Permission denied" in result.err
    finally:
        path.chmod(0o644)
        locked.chmod(0o755)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run seglog as an unprivileged user")
def test_unreadable_file_and_directory_as_nobody():
    """As root, the same check through a real process run as ``nobody``."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        directory.chmod(0o755)
        path = directory / NAMES["log"]
        path.write_bytes(valid_log())
        locked = directory / "locked-0"
        locked.mkdir()
        readable = directory / "00000000000000000014.log"
        readable.write_bytes(valid_log())
        readable.chmod(0o644)
        path.chmod(0)
        locked.chmod(0)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                               sys.executable, "-m", "seglog_cli", "dump", str(path), str(locked), str(readable)],
                              capture_output=True, timeout=SUBPROCESS_TIMEOUT, cwd=directory,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
        err = proc.stderr.decode()
        if "Permission denied" in err and "seglog" not in err:
            pytest.skip(f"nobody cannot run the interpreter here: {err.strip()}")
        assert "Traceback" not in err and "internal error" not in err, err
        assert proc.returncode == UNREADABLE, err
        assert f"seglog: {path}: cannot open: Permission denied" in err
        assert f"seglog: {locked}: cannot list directory: Permission denied" in err
        assert "baseOffset: 13" in proc.stdout.decode()  # the readable file is still dumped


# -- bad options ----------------------------------------------------------------------------------

BAD_OPTIONS = [
    ["--max-bytes", "-5"],
    ["--max-bytes", "lots"],
    ["--max-message-size", "-1"],
    ["--format", "xml"],
    ["--payload-encoding", "rot13"],
    ["--types", "foo"],
    ["--types", ","],
    ["--from-timestamp", "notatime"],
    ["--to-timestamp", "2024-13-45"],
    ["--from-offset", "ten"],
    ["--key-decoder-class", "com.example.MyDecoder"],
    ["--no-such-option"],
    ["--from-offset"],
]


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=lambda o: " ".join(o))
def test_bad_options_are_one_line_usage_errors(tmp_path, options):
    log = tmp_path / NAMES["log"]
    log.write_bytes(valid_log())
    args = options if options == ["--from-offset"] else options + [str(log)]
    result = run_seglog("dump", *args)
    assert result.exit_code == USAGE, result.err
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("seglog: usage error: "), result.err
    assert result.stdout == b""


def test_no_input_is_a_usage_error():
    result = run_seglog("dump", "--deep-iteration")
    assert result.exit_code == USAGE
    assert result.err.strip() == "seglog: usage error: give at least one file or directory (or --files a,b)"


def test_no_arguments_prints_help():
    result = run_seglog("dump")
    assert result.exit_code == USAGE and "Traceback" not in result.err
    assert "Exit status" in result.out + result.err


# -- decoders that cannot decode ----------------------------------------------------------------

@pytest.mark.parametrize("decoder", ["IntegerDecoder", "LongDecoder"])
def test_decoder_on_a_short_value_names_the_record(tmp_path, decoder):
    """Kafka's tool dies with BufferUnderflowException; seglog says where and carries on."""
    path = tmp_path / NAMES["log"]
    path.write_bytes(bytes(v2_batch(0, [(b"k", b"ab", []), (b"k", b"\0" * 8, [])], base_offset=5)))
    result = check(dump("--value-decoder-class", decoder, path), WARNINGS, [path.name])
    assert f"seglog: {path}: position 0: offset 5: {decoder}: a 2-byte value" in result.err
    assert "offset: 6" in result.out and "payload: 0" in result.out


# -- real processes -----------------------------------------------------------------------------

def _seglog_process(*args, cwd=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "seglog_cli", "dump", *map(str, args)], capture_output=True,
                          timeout=SUBPROCESS_TIMEOUT, cwd=cwd or REPO, **kwargs)


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_process_on_garbage_has_no_traceback(tmp_path, kind):
    path = tmp_path / NAMES[kind]
    path.write_bytes(bytes(range(256)) * 3 + b"\0\0\0\x05" * 50)
    (tmp_path / "nodot").write_bytes(b"x")
    proc = _seglog_process("--deep-iteration", path, tmp_path / "nodot", tmp_path / "missing.log", tmp_path)
    err = proc.stderr.decode()
    assert "Traceback" not in err and "internal error" not in err, err
    assert proc.returncode in (WARNINGS, UNREADABLE), err


def test_process_bad_option_has_no_traceback(tmp_path):
    proc = _seglog_process("--format", "xml", tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == USAGE and err.count("\n") == 1 and "Traceback" not in err, err


def _big_log(path: Path, size: int = 24 << 20) -> None:
    """Many copies of one batch, offsets renumbered (the CRC does not cover the base offset)."""
    batch = bytearray(v2_batch(0, [(b"key", b"v" * 900, []) for _ in range(100)]))
    with open(path, "wb") as out:
        for n in range(size // len(batch) + 1):
            struct.pack_into(">q", batch, 0, 100 * n)
            out.write(batch)


@pytest.mark.parametrize("fmt", FORMATS)
def test_closed_pipe_ends_quietly(tmp_path, fmt):
    """``seglog dump big.log | head -1``: exit 0, nothing on stderr."""
    path = tmp_path / NAMES["log"]
    _big_log(path)
    err = tmp_path / "stderr"
    script = (f'"{sys.executable}" -m seglog_cli dump --deep-iteration --print-data-log --format {fmt} '
              f'"{path}" 2>"{err}" | head -1; exit "${{PIPESTATUS[0]}}"')
    proc = subprocess.run(["bash", "-c", script], capture_output=True, timeout=SUBPROCESS_TIMEOUT, cwd=REPO)
    assert proc.stdout.decode().startswith(("Dumping", '{"type":"file"'))
    assert proc.stdout.count(b"\n") == 1
    assert err.read_text() == ""
    assert proc.returncode == OK
