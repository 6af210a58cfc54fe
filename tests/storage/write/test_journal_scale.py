"""The write protocol at scale: a manifest written and read one step at a time (its layout, its
checksum, its growth), a run over more partition directories than the process may hold open,
and an undo of a big run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seglog_cli.storage.write import durable
from seglog_cli.storage.write.file_steps import FileStep
from seglog_cli.storage.write.manifest import MANIFEST, StepList, manifest_checksum, read_manifest
from seglog_cli.storage.write.safety import BackupError
from seglog_cli.storage.write.undo import undo
from seglog_cli.storage.write.write_session import WriteSession

REPO = Path(__file__).resolve().parents[3]


def _log_dir(root: Path, partitions: int) -> Path:
    """A log dir of ``partitions`` directories, each with a small file seglog may rewrite."""
    log_dir = root / "data"
    log_dir.mkdir(parents=True)
    (log_dir / "meta.properties").write_text("version=1\n")
    for n in range(partitions):
        partition = log_dir / f"t-{n}"
        partition.mkdir()
        (partition / "00000000000000000000.index").write_bytes(bytes([n % 256]) * 16)
    return log_dir


def _files(log_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(log_dir)): p.read_bytes() for p in sorted(log_dir.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def _run(log_dir: Path, backups: Path, partitions: int) -> Path:
    steps = [FileStep("write", log_dir / f"t-{n}" / "00000000000000000000.index", f"partition {n}",
                      data=b"\x01" * (n % 7 + 1)) for n in range(partitions)]
    with WriteSession([log_dir], "rebuild-index", backups, argv=["test"]) as session:
        return session.apply(steps)


def test_the_manifest_has_one_line_per_step_and_is_read_back_lazily(tmp_path):
    log_dir = _log_dir(tmp_path, 12)
    backup = _run(log_dir, tmp_path / "b", 12)
    text = (backup / MANIFEST).read_text()
    document = json.loads(text)  # one JSON document, as any reader expects
    assert document["state"] == "complete" and len(document["steps"]) == 12
    assert document["checksum"] == manifest_checksum(document)  # the canonical checksum, as before
    lines = text.splitlines()
    step_lines = [line for line in lines if '"op":"write"' in line]
    assert len(step_lines) == 12  # each step on a line of its own
    read = read_manifest(backup)
    assert isinstance(read["steps"], StepList) and len(read["steps"]) == 12
    assert list(read["steps"]) == document["steps"] and read["steps"][-1] == document["steps"][-1]
    assert {k: v for k, v in read.items() if k != "steps"} == {k: v for k, v in document.items() if k != "steps"}


def test_an_edited_step_line_is_refused(tmp_path):
    log_dir = _log_dir(tmp_path, 3)
    backup = _run(log_dir, tmp_path / "b", 3)
    path = backup / MANIFEST
    path.write_text(path.read_text().replace('"why":"partition 1"', '"why":"partition 9"'))
    with pytest.raises(BackupError, match="checksum"):
        read_manifest(backup)


def test_the_manifest_grows_linearly_with_the_steps(tmp_path):
    small = (_run(_log_dir(tmp_path / "s", 50), tmp_path / "bs", 50) / MANIFEST).stat().st_size
    large = (_run(_log_dir(tmp_path / "l", 200), tmp_path / "bl", 200) / MANIFEST).stat().st_size
    assert large < 4.3 * small


def test_a_tree_keeps_few_directories_open_and_a_run_and_its_undo_are_exact(tmp_path, monkeypatch):
    monkeypatch.setattr(durable, "OPEN_DIRECTORIES", 3)
    log_dir = _log_dir(tmp_path, 20)
    before = _files(log_dir)
    opened = len(os.listdir("/proc/self/fd"))
    backup = _run(log_dir, tmp_path / "b", 20)
    assert len(os.listdir("/proc/self/fd")) <= opened + 1
    assert all(data.startswith(b"\x01") for name, data in _files(log_dir).items() if name.endswith(".index"))
    undo(backup, backup_root=tmp_path / "undone")
    assert _files(log_dir) == before


RUN_WITH_FEW_DESCRIPTORS = textwrap.dedent("""
    import resource, sys
    from pathlib import Path
    resource.setrlimit(resource.RLIMIT_NOFILE, (320, 320))
    sys.path.insert(0, sys.argv[3])
    from tests.storage.write.test_journal_scale import _run
    print(_run(Path(sys.argv[1]), Path(sys.argv[2]), 500))
""")


def test_a_run_over_more_partitions_than_descriptors_the_process_may_open(tmp_path):
    """500 partition directories changed by a process allowed 320 descriptors: one journal."""
    log_dir = _log_dir(tmp_path, 500)
    result = subprocess.run([sys.executable, "-c", RUN_WITH_FEW_DESCRIPTORS, str(log_dir), str(tmp_path / "b"),
                             str(REPO)], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    (backup,) = (tmp_path / "b").iterdir()
    assert len(read_manifest(backup)["steps"]) >= 500
    assert not (log_dir / ".seglog-journal").exists()


def test_an_interrupted_big_run_is_rolled_back_from_its_manifest(tmp_path):
    """Killed in the middle of its steps: the next writer rolls it back from the lines on disk."""
    log_dir = _log_dir(tmp_path, 40)
    before = _files(log_dir)
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        sys.path.insert(0, sys.argv[3])
        from tests.storage.write.test_journal_scale import _run
        _run(Path(sys.argv[1]), Path(sys.argv[2]), 40)
    """)
    env = dict(os.environ, SEGLOG_FAULT_AT="100")
    killed = subprocess.run([sys.executable, "-c", script, str(log_dir), str(tmp_path / "b"), str(REPO)],
                            capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert killed.returncode == durable.FAULT_EXIT_STATUS, killed.stderr[-2000:]
    assert (log_dir / ".seglog-journal").exists() and _files(log_dir) != before
    with WriteSession([log_dir], "undo", tmp_path / "b2") as session:
        assert any("rolled back" in note for note in session.notes)
    assert _files(log_dir) == before
