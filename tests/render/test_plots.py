"""The pictures: ``simulate-retention --plot`` and the partition layout (seglog_cli/render/plots.py).

What a picture shows is checked from its numbers (the disk-use steps, the bars' colours and
spans in the SVG) and from the command's behaviour: the format from the file name, the errors
before any work, the same bytes on every run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytest.importorskip("matplotlib", reason="the plot extra is not installed (pip install -e '.[test]')")

from seglog_cli.render.plots import (  # noqa: E402
    DELETED,
    DUE,
    READABLE,
    PartitionSchedule,
    PlotError,
    disk_use,
    layout_figure,
    picture_format,
    read_layout,
)
from seglog_cli.storage.config.topic_config import TopicConfig  # noqa: E402
from seglog_cli.storage.retention.retention import read_partition_state  # noqa: E402
from seglog_cli.storage.retention.retention_timeline import schedule_segments  # noqa: E402

NOW = 1767226200000  # 2026-01-01T00:10:00Z
ARGS = ["--config", "retention.ms=600000", "--now", "2026-01-01T00:10:00Z", "--at", "+2m", "--at", "+10m"]


@pytest.fixture
def logdir(tmp_path) -> Path:
    shutil.copytree(REPO / "examples" / "logdir", tmp_path / "logdir")
    return tmp_path / "logdir"


def seglog(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seglog_cli", *args], capture_output=True, text=True, cwd=cwd)


def test_the_format_comes_from_the_name():
    assert picture_format("a/b.PNG") == "png" and picture_format("x.svg") == "svg"
    for name in ("x.pdf", "x", "x.svg.gz"):
        with pytest.raises(PlotError, match=r"\.png or \.svg"):
            picture_format(name)


def test_disk_use_steps_down_as_segments_are_removed_then_their_files(logdir):
    state = read_partition_state(logdir / "orders-0")
    schedules = schedule_segments(state, TopicConfig(retention_ms=600000), NOW)
    partitions = [PartitionSchedule("orders-0", schedules)]
    first = schedules[0]
    times = [NOW, first.removed_by - 1, first.removed_by, first.files_gone_by, max(s.files_gone_by for s in schedules)]
    readable, on_disk = disk_use(partitions, times)
    assert readable[0] == on_disk[0] == state.size == 40502
    assert readable[1] == state.size and readable[2] == state.size - first.segment.size
    assert on_disk[2] == state.size, "a removed segment's .deleted files stay until file.delete.delay.ms"
    assert on_disk[3] == state.size - first.segment.size
    assert readable[-1] == on_disk[-1] == 0


def test_plot_draws_every_segment_and_the_marks(logdir, tmp_path):
    picture = tmp_path / "timeline.svg"
    done = seglog("simulate-retention", *ARGS, "--plot", str(picture), str(logdir))
    assert done.returncode == 0, done.stderr
    svg = picture.read_text()
    for label in ("orders-0 0..119", "orders-0 120..239", "orders-0 240..299", "orders-1 0..159", "payments-0 0..5",
                  "__consumer_offsets-0 0..2", "now", "--at", "renamed .deleted"):
        assert label in svg, label
    # six segments, each with its three phases (readable, deletable, .deleted)
    for colour in (READABLE, DUE, DELETED):
        assert len(re.findall(f"fill: ?{colour}", svg)) >= 6, colour


def test_plot_png_is_a_png_and_the_output_is_unchanged(logdir, tmp_path):
    plain = seglog("simulate-retention", *ARGS, "--format", "text", str(logdir))
    drawn = seglog("simulate-retention", *ARGS, "--format", "text", "--plot", str(tmp_path / "t.png"), str(logdir))
    assert drawn.returncode == plain.returncode == 0
    assert drawn.stdout == plain.stdout and drawn.stderr == plain.stderr
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_same_svg_every_run(logdir, tmp_path):
    pictures = []
    for name in ("a.svg", "b.svg"):
        assert seglog("simulate-retention", *ARGS, "--plot", str(tmp_path / name), str(logdir)).returncode == 0
        pictures.append((tmp_path / name).read_bytes())
    assert pictures[0] == pictures[1]


@pytest.mark.parametrize(("args", "message"), [
    (["--plot", "t.pdf"], r"\.png or \.svg"),
    (["--plot", "t.svg", "--model", "--records-per-sec", "1", "--record-size", "100"], "--model has none"),
])
def test_plot_usage_errors_come_before_any_work(args, message, logdir, tmp_path):
    done = seglog("simulate-retention", *args, str(logdir), cwd=tmp_path)
    assert done.returncode == 2 and re.search(message, done.stderr), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.glob("t.*"))


def test_plot_into_a_directory_that_does_not_exist_is_cannot_write(logdir, tmp_path):
    done = seglog("simulate-retention", *ARGS, "--plot", str(tmp_path / "no" / "t.svg"), str(logdir))
    assert done.returncode == 6, done.stderr
    assert done.stderr.startswith(f"seglog: {tmp_path / 'no' / 't.svg'}: cannot write the picture")


def test_without_matplotlib_plot_says_how_to_get_it(logdir, tmp_path):
    # a None in sys.modules makes `import matplotlib` fail as it does where it is not installed
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['matplotlib'] = None; "
                           "from seglog_cli.cli import main; sys.exit(main(sys.argv[1:]))",
                           "simulate-retention", "--plot", str(tmp_path / "t.svg"), str(logdir)],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == "seglog: usage error: pictures need matplotlib: pip install 'seglog[plot]'"


def test_layout_reads_the_checkpoints_and_files(logdir, tmp_path):
    partition = logdir / "orders-0"
    layout = read_layout(partition, read_partition_state(partition))
    assert [(base, following) for base, following, _, _ in layout.segments] == [(0, 120), (120, 240), (240, 300)]
    assert all(suffixes == (".index", ".timeindex") for _, _, _, suffixes in layout.segments)
    assert layout.snapshots == [120, 240, 300]
    assert layout.markers == {"log start offset": 0, "recovery point": 300, "high watermark": 300,
                              "log end offset": 300}
    checkpoint = logdir / "recovery-point-offset-checkpoint"
    checkpoint.write_text(checkpoint.read_text().replace("orders 0 300", "orders 0 120"))
    (partition / "00000000000000000120.timeindex").unlink()
    layout = read_layout(partition, read_partition_state(partition))
    assert layout.markers["recovery point"] == 120 and layout.segments[1][3] == (".index",)
    layout_figure(layout, tmp_path / "layout.svg", "svg")
    svg = (tmp_path / "layout.svg").read_text()
    assert "recovery point 120" in svg and "segment 240 (active)" in svg and "(no index files)" not in svg


def test_disk_use_is_the_definition_on_random_schedules():
    """The sweep (one sort, a bisect per time) gives what summing every segment at every time gives."""
    import random
    from types import SimpleNamespace

    rng = random.Random(7)
    for _ in range(200):
        schedules = []
        for _ in range(rng.randint(0, 30)):
            removed = rng.choice([None, rng.randint(0, 50)])
            gone = None if removed is None else removed + rng.randint(0, 10)
            schedules.append(SimpleNamespace(segment=SimpleNamespace(size=rng.randint(0, 100)),
                                             removed_by=removed, files_gone_by=gone))
        times = sorted(rng.randint(-5, 70) for _ in range(20))
        readable = [sum(s.segment.size for s in schedules if s.removed_by is None or t < s.removed_by) for t in times]
        on_disk = [sum(s.segment.size for s in schedules if s.files_gone_by is None or t < s.files_gone_by)
                   for t in times]
        assert disk_use([PartitionSchedule("p", schedules)], times) == (readable, on_disk)
