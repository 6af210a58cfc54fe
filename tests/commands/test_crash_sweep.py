"""Issue 15, enumerated: every writing command killed before each of its write steps in turn.

One test per fixture of ``tests/crash_sweep.py`` (a command on real corpus partitions), each
running every kill point of its reference run, not a sample: after each kill nothing is lost,
verify finds nothing new, nothing beside the log dir changed, and running the command again ends
byte for byte where an uninterrupted run ends. Then two timed trials (``tests/crash_sweep_timed.py``):
one let finish and one killed at a random time; the same command line again must end there too
and, after a run that had finished, say it had nothing to do. Slow (deselect with ``-m "not
slow"``), but part of the default suite; pytest-xdist spreads the fixtures over the workers.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests import crash_sweep, crash_sweep_timed


@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize("name", [fixture.name for fixture in crash_sweep.FIXTURES])
def test_every_kill_point_keeps_the_promise(corpus, tmp_path, name):
    fixture = crash_sweep.BY_NAME[name]
    jobs = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2  # two cores: xdist's workers, or the sweep's
    result = crash_sweep.sweep(fixture, tmp_path, jobs=jobs, timed=2)
    lines = "\n".join(failure.line() for failure in result.failures)
    assert result.points >= result.floor, f"{result.points} kill points for {result.floor} files changed\n{lines}"
    assert result.trials == 2 and result.finished >= 1, lines
    failed = {failure.point for failure in result.failures}
    assert not result.failures, f"{len(result.failures)} failures at {len(failed)} of {result.points} points:\n{lines}"


@pytest.mark.slow
@pytest.mark.parametrize("name", [fixture.name for fixture in crash_sweep.SCALE_FIXTURES])
def test_kill_points_across_a_whole_log_dir_keep_the_promise(tmp_path, name):
    """recover --apply of a killed broker's 300-partition log dir (and its undo): three kill points
    spread over its hundreds of write steps, the first and the last among them (``python -m
    tests.crash_sweep --command scale --sample N`` runs more)."""
    fixture = crash_sweep.BY_NAME[name]
    jobs = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
    result = crash_sweep.sweep(fixture, tmp_path, jobs=jobs, sample=3)
    lines = "\n".join(failure.line() for failure in result.failures)
    assert result.points == 3, lines
    assert not result.failures, f"{len(result.failures)} failures:\n{lines}"


def test_sampled_kill_points_span_the_run():
    assert crash_sweep.sampled(700, 3) == [1, 351, 700]
    assert crash_sweep.sampled(2, 5) == [1, 2]


# -- the checks themselves (no corpus): a broken check would let every kill point pass ----------

ORIGINAL = {"p-0/a.log": b"a" * 100, "p-0/b.log": b"b" * 100, "p-0/c.index": b"c" * 40, "p-0/d.snapshot": b"d" * 10}


def _write(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def test_bytes_appended_to_truncated_into_the_backup_renamed_or_backed_up_are_not_lost(tmp_path):
    log_dir, backups = tmp_path / "data", tmp_path / "backups"
    _write(log_dir, {"p-0/a.log": b"a" * 100 + b"new", "p-0/b.log": b"b" * 60, "p-0/c.index.deleted": b"c" * 40})
    _write(backups, {"run/files/0000-b.log": b"b" * 40, "run/files/0001-d.snapshot": b"d" * 10})
    assert crash_sweep.lost_files(ORIGINAL, log_dir, [backups]) == []


def test_bytes_kept_nowhere_are_lost(tmp_path):
    log_dir, backups = tmp_path / "data", tmp_path / "backups"
    _write(log_dir, {"p-0/a.log": b"a" * 99, "p-0/b.log": b"B" * 100, "p-0/c.index": b"c" * 40})
    _write(backups, {"run/files/0000-a.log": b"a" * 2})  # not the tail cut off a.log
    lost = crash_sweep.lost_files(ORIGINAL, log_dir, [backups])
    assert lost == ["p-0/a.log (100 bytes, now 99 bytes)", "p-0/b.log (100 bytes, now 100 bytes)",
                    "p-0/d.snapshot (10 bytes, removed)"]


def test_state_difference_names_missing_extra_and_changed_files():
    expected = {"x": "1", "y": "2", "z": "3"}
    assert crash_sweep.state_difference(expected, dict(expected)) == ""
    assert crash_sweep.state_difference(expected, {"x": "1", "y": "9", "w": "4"}) == "missing z; extra w; changed y"


def test_verify_errors_are_relative_to_the_log_dir(tmp_path):
    log_dir = tmp_path / "data"
    shutil.copytree(crash_sweep.REPO / "examples" / "logdir", log_dir)
    assert crash_sweep.verify_errors(log_dir) == set()
    crash_sweep._flip("orders-0/00000000000000000000.log", 8000)(log_dir)
    errors = crash_sweep.verify_errors(log_dir)
    assert errors and {path for path, code, offset in errors} == {"orders-0/00000000000000000000.log"}


# -- timed trials (no corpus: the example log dir, one index rebuilt, and the undo of that) ---------

def _example_without_an_index(log_dir: Path) -> None:
    shutil.copytree(crash_sweep.REPO / "examples" / "logdir", log_dir)
    (log_dir / "orders-0" / "00000000000000000120.index").unlink()


REBUILD = crash_sweep.Fixture("rebuild-example", "", "orders-0", ("rebuild-index", "--apply"),
                              build=_example_without_an_index)
UNDO = crash_sweep.Fixture("undo-rebuild-example", "", "orders-0", ("undo", "--apply"), undo_of=REBUILD,
                           build=_example_without_an_index)


def _undo_reference(tmp_path: Path) -> crash_sweep.Reference:
    """What the undo leaves: the fixture before the rebuild."""
    pristine = tmp_path / "pristine"
    crash_sweep.copy_fixture(REBUILD, pristine)
    return crash_sweep.Reference([], 0, {}, crash_sweep.digests(crash_sweep.read_tree(pristine)), seconds=1.0)


def test_an_undo_run_again_after_it_finished_says_already_undone(tmp_path):
    """The kill -9 harness's case: a kill that lands after undo finished; the same undo again
    names it (the ``done`` check), exits 0 and changes nothing. A kill at once: the run again
    does it all."""
    reference = _undo_reference(tmp_path)
    problems, finished = crash_sweep_timed.timed_trial(UNDO, reference, None, tmp_path / "let-finish")
    assert finished and problems == []
    problems, finished = crash_sweep_timed.timed_trial(UNDO, reference, 0.0, tmp_path / "at-once")
    assert not finished and problems == []


def test_a_run_again_that_does_not_say_it_is_done_fails_the_done_check(tmp_path, monkeypatch):
    monkeypatch.setitem(crash_sweep_timed.NOTHING_TO_DO, "undo", ": never said: ")
    problems, finished = crash_sweep_timed.timed_trial(UNDO, _undo_reference(tmp_path), None, tmp_path / "trial")
    assert finished and [check for check, _why in problems] == ["done"]
    assert "does not say ': never said:'" in problems[0][1] and "already undone by" in problems[0][1]


def test_timed_kills_reach_past_the_end_of_the_run():
    """The first trial is let finish; the others are drawn from 0 to 1.25 times the reference
    run's duration (some after it), the same for the same seed and fixture."""
    reference = crash_sweep.Reference([], 0, {}, {}, seconds=2.0)
    times = crash_sweep_timed.delays(UNDO, reference, 200, seed=7)
    assert times[0] is None and all(0 <= t <= 2.5 for t in times[1:])
    assert sum(t > 2.0 for t in times[1:]) > 20  # about a fifth: kills after the command finished
    assert times == crash_sweep_timed.delays(UNDO, reference, 200, seed=7)
    assert times != crash_sweep_timed.delays(UNDO, reference, 200, seed=8)
