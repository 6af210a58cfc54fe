"""``seglog dump`` against the real ``kafka-dump-log.sh`` output of Kafka 4.2.0.

Every golden run in ../shared/corpus (kafka-4.2.0/golden*, public-golden) is replayed with the
same flags in the same working directory; stdout must be identical, the golden stderr lines
(stack-trace frames aside, ``$DATA_DIR`` standing for the data dir) must appear in order, and
the exit status must match.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CORPUS, requires_corpus, restore_preallocated, run_seglog

FLAGS = {
    "plain": [],
    "deep-iteration+print-data-log": ["--deep-iteration", "--print-data-log"],
    "index-sanity-check": ["--index-sanity-check"],
    "verify-index-only": ["--verify-index-only"],
    "offsets-decoder": ["--offsets-decoder"],
    "transaction-log-decoder": ["--transaction-log-decoder"],
    "cluster-metadata-decoder": ["--cluster-metadata-decoder"],
    "remote-log-metadata-decoder": ["--remote-log-metadata-decoder"],
    "share-group-state-decoder": ["--share-group-state-decoder"],
}
DECODER_FLAGS: set = set()  # every internal-topic decoder is done (issue 8)
# golden directory -> data directory it was made in (relative to the corpus)
GOLDEN_DIRS = {
    "kafka-4.2.0/golden": "kafka-4.2.0/data",
    "kafka-4.2.0/golden-extra": "kafka-4.2.0/data-extra",
    "kafka-4.2.0/golden-live-copy": "kafka-4.2.0/live-copy",
    "kafka-4.2.0/share-groups/golden": "kafka-4.2.0/share-groups/data",
    "kafka-4.2.0/tiered/golden": "kafka-4.2.0/tiered/data",
    "public-golden": "public",
}
# golden runs not replayed: the remote log index cache's files are named <offset>_<segment uuid>,
# which kafka-dump-log fails on with a JVM NumberFormatException (exit 1); seglog refuses them
# with its own one-line message instead
NOT_REPLAYED = {"kafka-4.2.0/tiered/golden": ("remote-log-index-cache/",)}


def _cases():
    if not CORPUS.is_dir():
        return []
    cases = []
    for golden_dir, data_dir in GOLDEN_DIRS.items():
        root = CORPUS / golden_dir
        for out in sorted(root.rglob("*.out")):
            rel = out.relative_to(root).as_posix()[: -len(".out")]
            relpath, _, flags = rel.rpartition(".")
            if flags not in FLAGS:
                stem, _, last = relpath.rpartition(".")
                relpath, flags = stem, f"{last}.{flags}"
                if flags not in FLAGS:
                    continue
            if relpath.startswith(NOT_REPLAYED.get(golden_dir, ())):
                continue
            cases.append(pytest.param(f"{golden_dir}/{relpath}", data_dir, relpath, flags,
                                      id=f"{golden_dir}:{relpath}:{flags}"))
    # recovery cases: <case>/<phase>-dumps/<file>.<flags>.out, run in <case>/<phase> on plain-0/<file>
    for dumps in sorted((CORPUS / "kafka-4.2.0" / "recovery-cases").glob("*/*-dumps")):
        phase = dumps.name[: -len("-dumps")]
        golden_dir = dumps.relative_to(CORPUS).as_posix()
        data_dir = (dumps.parent / phase).relative_to(CORPUS).as_posix()
        for out in sorted(dumps.glob("*.out")):
            name, _, flags = out.name[: -len(".out")].rpartition(".")
            if flags in FLAGS:
                cases.append(pytest.param(f"{golden_dir}/{name}", data_dir, f"plain-0/{name}", flags,
                                          id=f"{golden_dir}:{name}:{flags}"))
    return cases


@pytest.fixture(params=["compiled", "python"])
def engine(request):
    """Both code paths must print Kafka's output: the compiled hot loops and the pure-Python
    reference (what runs where no C compiler was available at install time)."""
    from seglog_cli.storage.log import native

    if request.param == "compiled" and not native.available():
        pytest.skip("the compiled module is not built")
    native.set_enabled(request.param == "compiled")
    yield request.param
    native.set_enabled(True)


@pytest.fixture(scope="session")
def recovery_copy(corpus, tmp_path_factory) -> Path:
    """kafka-4.2.0/recovery-cases with the preallocated index tails restored."""
    import shutil

    target = tmp_path_factory.mktemp("recovery") / "recovery-cases"
    shutil.copytree(corpus / "kafka-4.2.0" / "recovery-cases", target)
    restore_preallocated(target, "kafka-4.2.0/recovery-cases")
    return target


def _golden_stderr_lines(text: str, data_dir: Path) -> list[str]:
    lines = []
    for line in text.replace("$DATA_DIR", str(data_dir)).splitlines():
        if line.startswith("\tat ") or line.startswith("\t... "):
            continue  # JVM stack frames
        lines.append(line)
    return lines


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("golden_stem,data_dir,relpath,flags", _cases())
def test_dump_matches_kafka_dump_log(golden_stem, data_dir, relpath, flags, live_copy, recovery_copy, engine):
    if flags in DECODER_FLAGS:
        pytest.skip("internal-topic decoders are issue 8")
    golden = CORPUS / f"{golden_stem}.{flags}"
    if not golden.with_name(golden.name + ".rc").exists():
        pytest.skip("incomplete golden: the recorded run left no .rc (and an empty .out)")
    if data_dir.endswith("live-copy"):
        workdir = live_copy
    elif data_dir.startswith("kafka-4.2.0/recovery-cases/"):
        workdir = recovery_copy / data_dir[len("kafka-4.2.0/recovery-cases/"):]
    else:
        workdir = CORPUS / data_dir
    result = run_seglog("dump", *FLAGS[flags], "--files", relpath, cwd=workdir)

    expected_out = golden.with_name(golden.name + ".out").read_bytes()
    assert result.stdout == expected_out, _first_difference(result.stdout, expected_out)

    expected_err = _golden_stderr_lines(golden.with_name(golden.name + ".err").read_text("utf-8"), workdir.resolve())
    actual_err = result.err.splitlines()
    assert actual_err[: len(expected_err)] == expected_err
    expected_rc = int(golden.with_name(golden.name + ".rc").read_text().strip())
    assert result.exit_code == expected_rc


def _first_difference(actual: bytes, expected: bytes) -> str:
    a, e = actual.split(b"\n"), expected.split(b"\n")
    for n, (x, y) in enumerate(zip(a, e)):
        if x != y:
            return f"line {n + 1} differs:\n  seglog: {x[:400]!r}\n  kafka:  {y[:400]!r}"
    return f"line counts differ: seglog {len(a)}, kafka {len(e)}"
