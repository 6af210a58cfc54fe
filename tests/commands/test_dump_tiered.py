"""``seglog dump`` of tiered storage (kafka-4.2.0/tiered, LocalTieredStorage's layout).

kafka-dump-log 4.2 cannot read the remote names (``NumberFormatException`` on
``<offset>-<uuid>.log``, recorded in ``golden-remote/``), so the corpus also dumped the same
files through ``remote-by-offset/`` links under Kafka's local names: seglog's dump of each remote
file under its remote name must print exactly what kafka-dump-log printed through the link, the
``Dumping`` line aside. The runs kafka-dump-log completed on the remote names themselves
(``.snapshot``, ``.leader_epoch_checkpoint``) must match byte for byte. A remote directory given
with its local one dumps as one log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands.test_dump_golden import FLAGS
from tests.conftest import CORPUS, requires_corpus, run_seglog

TIERED = CORPUS / "kafka-4.2.0" / "tiered"
REMOTE_DIR = "kafka-tiered-storage/tiered-0-NgDFhHPYTFCyTgfmgOxB0w"


def _runs(golden: str, completed_only: bool = False) -> list:
    root = TIERED / golden
    if not root.is_dir():
        return []
    out = []
    for path in sorted(root.rglob("*.out")):
        if completed_only and path.with_suffix(".rc").read_text().strip() != "0":
            continue  # kafka-dump-log's NumberFormatException on a remote name: compared by offset instead
        stem, flags = path.name[: -len(".out")].rsplit(".", 1)
        rel = path.parent.relative_to(root) / stem
        out.append(pytest.param(rel.as_posix(), flags, id=f"{golden}:{rel.as_posix()}:{flags}"))
    return out


def _remote_name(by_offset_relpath: str) -> str:
    """tiered-0/00000000000000001040.log -> the remote file's path relative to remote/."""
    base, ext = Path(by_offset_relpath).name.split(".", 1)
    [match] = (TIERED / "remote" / REMOTE_DIR).glob(f"{base}-*.{ext}")
    return f"{REMOTE_DIR}/{match.name}"


def _golden(golden: str, relpath: str, flags: str) -> tuple[bytes, int]:
    stem = TIERED / golden / f"{relpath}.{flags}"
    return (stem.with_name(stem.name + ".out").read_bytes(),
            int(stem.with_name(stem.name + ".rc").read_text().strip()))


@requires_corpus
@pytest.mark.parametrize("relpath,flags", _runs("golden-remote-by-offset"))
def test_remote_files_dump_as_kafka_dumps_them_under_local_names(relpath, flags):
    expected, rc = _golden("golden-remote-by-offset", relpath, flags)
    remote = _remote_name(relpath)
    result = run_seglog("dump", *FLAGS[flags], "--files", remote, cwd=TIERED / "remote")
    # the file's path appears in the Dumping line (and the sanity-check line): the remote name here
    expected = expected.replace(f"{relpath}\n".encode(), f"{remote}\n".encode()).replace(
        f"{relpath} passed".encode(), f"{remote} passed".encode())
    assert result.stdout == expected
    assert result.exit_code == rc == 0


@requires_corpus
@pytest.mark.parametrize("relpath,flags", _runs("golden-remote", completed_only=True))
def test_remote_names_kafka_dump_log_reads(relpath, flags):
    expected, rc = _golden("golden-remote", relpath, flags)
    result = run_seglog("dump", *FLAGS[flags], "--files", relpath, cwd=TIERED / "remote")
    assert (result.stdout, result.exit_code) == (expected, rc)
    if relpath.endswith(".leader_epoch_checkpoint"):
        assert result.err == f"Ignoring unknown file {relpath}\n"


@requires_corpus
def test_remote_and_local_dump_as_one_log():
    """remote 0 and 1040 (below the local log start 2080), then local 2080, 3120, 4160: what
    kafka-dump-log printed for each of these files, in that order."""
    if not (TIERED / "remote").is_dir():
        pytest.skip("no tiered/remote in this corpus")
    result = run_seglog("dump", f"remote/{REMOTE_DIR}", "data/tiered-0", cwd=TIERED)
    expected = b""
    for base in (0, 1040):
        golden, _ = _golden("golden-remote-by-offset", f"tiered-0/{base:020d}.log", "plain")
        remote = _remote_name(f"tiered-0/{base:020d}.log")
        expected += golden.replace(f"Dumping tiered-0/{base:020d}.log\n".encode(),
                                   f"Dumping remote/{remote}\n".encode(), 1)
    for base in (2080, 3120, 4160):
        golden, _ = _golden("golden", f"tiered-0/{base:020d}.log", "plain")
        expected += golden.replace(b"Dumping tiered-0/", b"Dumping data/tiered-0/", 1)
    assert result.exit_code == 0
    assert result.stdout == expected
