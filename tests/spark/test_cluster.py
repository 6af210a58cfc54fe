"""The Spark sources shipped the way PySpark jobs are shipped, on a real standalone cluster.

One module fixture builds a seglog wheel from this tree and a packed environment (venv-pack),
starts a master and a worker on 127.0.0.1 from pyspark's own scripts, and runs:

* the README's standalone command: ``spark-submit --archives env.tar.gz#environment`` with
  ``PYSPARK_PYTHON=./environment/bin/python`` (tests/spark/cluster_job.py, relative paths);
* ``seglog verify --spark spark://...`` on a relative dir, the archive passed as
  ``spark.archives`` through PYSPARK_SUBMIT_ARGS and the executors' Python as ``spark.pyspark.python``;
* the ``--py-files`` route: the seglog wheel shipped to nodes that have pyarrow and seglog's
  compiled dependencies but not seglog.

The cluster is stopped as soon as they are done; the tests compare what they wrote with
``seglog dump --format jsonl`` / ``seglog verify --format jsonl`` record for record. Under
pytest-xdist the first worker to get here does the runs and the others read its results.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

from tests.conftest import CORPUS, CORPUS_MISSING, run_seglog
from tests.spark.conftest import arrow_records, dump_records, spark_missing

pytestmark = [pytest.mark.spark, pytest.mark.cluster,
              pytest.mark.skipif(spark_missing() is not None, reason=spark_missing() or ""),
              pytest.mark.skipif(not CORPUS.is_dir(), reason=CORPUS_MISSING),
              pytest.mark.skipif(importlib.util.find_spec("venv_pack") is None,
                                 reason="venv-pack is not installed (pip install -e '.[test]')")]

DATA = Path("kafka-4.2.0/data")
TXN = DATA / "txn-0"
BROKERS = [Path("kafka-4.2.0/replicas/in-sync/broker-1"), Path("kafka-4.2.0/replicas/in-sync/broker-2")]
JOB = Path(__file__).with_name("cluster_job.py")


def _shared_dir(tmp_path_factory) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The runs' outputs: {name: directory}, and the marker log of the executors' interpreters."""
    shared = _shared_dir(tmp_path_factory)
    work = shared / "seglog-cluster"
    with open(shared / "seglog-cluster.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = work / "done.json"
        if not done.exists():
            work.mkdir(exist_ok=True)
            try:
                result = _run_on_cluster(work)
            except Exception:
                result = {"error": traceback.format_exc()}
            done.write_text(json.dumps(result))
    result = json.loads(done.read_text())
    if "error" in result:
        pytest.fail("the cluster runs failed:\n" + result["error"])
    return result


def _rel(path: Path, cwd: Path) -> str:
    return os.path.relpath(CORPUS / path, cwd)


def _run_on_cluster(work: Path) -> dict:
    from tests.spark.cluster import PYTHON_MARKER, Standalone, base_env, build_wheel, nodes_python, packed_env

    clock = [time.monotonic()]
    seconds = {}

    def lap(name: str) -> None:
        clock.append(time.monotonic())
        seconds[name] = round(clock[-1] - clock[-2], 1)

    wheel = build_wheel(work)
    archive = packed_env(work, wheel)
    nodes = nodes_python(work)
    lap("environments")
    marker = work / "interpreters.txt"
    driver = work / "driver"  # the driver's working dir: the paths below are relative to it
    driver.mkdir()
    args = [_rel(DATA, driver), _rel(TXN, driver), *[_rel(b, driver) for b in BROKERS]]
    tree = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}  # the driver imports this tree's seglog
    cluster = Standalone(work).start()
    lap("cluster start")
    result = {"master": cluster.master_url, "marker": str(marker), "seconds": seconds}
    try:
        # 1. the packed environment (the README's standalone command)
        out = work / "archive"
        out.mkdir()
        done = cluster.submit(JOB, str(out), *args, "archive", cwd=driver, driver_python=sys.executable,
                              options=("--archives", f"{archive}#environment"),
                              conf={f"spark.executorEnv.{PYTHON_MARKER}": str(marker)},
                              env={**tree, "PYSPARK_PYTHON": "./environment/bin/python"})
        result["archive"] = _outcome(done, out, work)
        lap("archive job")

        # 2. seglog verify --spark on a relative dir, from a Python-started session
        env = {**base_env(), **tree, "PYSPARK_SUBMIT_ARGS": (
            f"--conf spark.archives={archive}#environment --conf spark.pyspark.python=./environment/bin/python "
            f"--conf spark.executorEnv.{PYTHON_MARKER}={marker} --conf spark.driver.host=127.0.0.1 "
            "--conf spark.driver.bindAddress=127.0.0.1 pyspark-shell")}
        verify = subprocess.run([sys.executable, "-m", "seglog_cli", "verify", "--spark", cluster.master_url,
                                 "--format", "jsonl", "--no-progress", _rel(DATA, driver)],
                                cwd=driver, env=env, capture_output=True, text=True, timeout=600)
        result["verify"] = {**_outcome(verify, driver, work, "verify"), "out": verify.stdout}
        lap("verify --spark")

        # 3. --py-files: the wheel, on nodes that have pyarrow but not seglog (the driver too);
        # pyspark puts only .zip, .egg and .jar py-files on the workers' path: the wheel as .zip
        out = work / "pyfiles"
        out.mkdir()
        shipped = work / "seglog.zip"
        shutil.copyfile(wheel, shipped)
        done = cluster.submit(JOB, str(out), *args, "pyfiles", cwd=driver, driver_python=str(nodes),
                              options=("--py-files", str(shipped)),
                              conf={"spark.pyspark.python": str(nodes),
                                    f"spark.executorEnv.{PYTHON_MARKER}": str(marker)})
        result["pyfiles"] = _outcome(done, out, work)
        lap("py-files job")
    finally:
        cluster.stop()
    lap("cluster stop")
    result["driver"] = str(driver)
    result["worker"] = str(work / "worker")
    return result


def _outcome(done: subprocess.CompletedProcess, out: Path, work: Path, name: str | None = None) -> dict:
    """A run's exit status and its stderr's lines other than Spark's INFO (all of it in logs/)."""
    log = work / "logs" / f"{name or out.name}.err"
    log.write_text(done.stderr)
    log.with_suffix(".out").write_text(done.stdout)
    lines = [line for line in done.stderr.splitlines() if " INFO " not in line]
    return {"dir": str(out), "rc": done.returncode, "err": f"{log}:\n" + "\n".join(lines)[-8000:]}


def _job(runs, name: str) -> Path:
    run = runs[name]
    assert run["rc"] == 0, run["err"]
    return Path(run["dir"])


def _read(path: Path):
    import pyarrow as pa

    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _interpreters(runs) -> list[str]:
    return Path(runs["marker"]).read_text().splitlines() if Path(runs["marker"]).exists() else []


def test_packed_environment_dataframe_equals_jsonl(runs):
    """spark-submit --archives env.tar.gz#environment, PYSPARK_PYTHON=./environment/bin/python:
    the driver plans with its own interpreter, the tasks run the packed one, and the rows of a
    relative log dir are the dump's, record for record."""
    out = _job(runs, "archive")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pythonExec"] == "./environment/bin/python"
    assert summary["executorPython"] == "./environment/bin/python"
    assert summary["driver"] == sys.executable
    worker = runs["worker"] + "/"
    packed = [p for p in _interpreters(runs) if p.endswith("/environment/bin/python")]
    assert packed and all(p.startswith(worker) for p in packed)  # unpacked in the executor's work dir
    expected = dump_records([CORPUS / DATA])
    assert len(expected) > 10_000
    table = _read(out / "records.arrow")
    assert arrow_records(table) == expected
    assert set(table.column("logDir").to_pylist()) == {str(CORPUS / DATA)}  # resolved on the driver


def test_read_committed_on_the_cluster(runs):
    """read_committed on the corpus's txn-0: 199 of 339 rows, what a read_committed consumer gets
    (tests/spark/test_source_options.py checks the same against seglog transactions locally)."""
    report = json.loads(run_seglog("transactions", "--format", "json", "--topic", "txn",
                                   str(CORPUS / DATA)).out)
    aborted = [(t["producerId"], t["firstOffset"], t["markerOffset"]) for t in report["transactions"]
               if t["state"] == "aborted" and t["partition"] == "txn-0"]
    expected = [r for r in dump_records([CORPUS / TXN]) if not r[14] and not any(
        pid == r[11] and first <= r[4] <= marker for pid, first, marker in aborted)]
    assert len(expected) == 199
    assert arrow_records(_read(_job(runs, "archive") / "committed.arrow")) == expected


def test_replicas_told_apart_by_log_dir(runs):
    table = _read(_job(runs, "archive") / "replicas.arrow")
    per_broker = [dump_records([CORPUS / b]) for b in BROKERS]
    assert arrow_records(table) == per_broker[0] + per_broker[1]
    assert table.column("logDir").to_pylist() == (
        [str(CORPUS / BROKERS[0])] * len(per_broker[0]) + [str(CORPUS / BROKERS[1])] * len(per_broker[1]))


def test_where_reads_only_that_partitions_splits(runs):
    """where(topic, partition, offset range) with pushdown: only plain-1's splits holding those
    offsets are planned and run as tasks (of the whole log dir's)."""
    from seglog_cli.spark.plan import parse_options, plan_splits

    for name in ("archive", "pyfiles"):
        out = _job(runs, name)
        summary = json.loads((out / "summary.json").read_text())
        options = {"splitBytes": "65536"}
        every = plan_splits([str(CORPUS / DATA)], parse_options(options))
        wanted = plan_splits([str(CORPUS / DATA / "plain-1")],
                             parse_options({**options, "fromOffset": "2000", "toOffset": "2099"}))
        assert summary["allPartitions"] == len(every) > 20
        assert summary["wherePartitions"] == summary["whereTasks"] == len(wanted) <= 2
        rows = arrow_records(_read(out / "where.arrow"))
        assert rows == [r for r in dump_records([CORPUS / DATA / "plain-1"]) if 2000 <= r[4] <= 2099]
        assert len(rows) == 100


def test_verify_spark_on_a_relative_dir_equals_the_local_run(runs):
    """seglog verify --spark spark://... DIR (DIR relative to the driver's working dir) prints
    what seglog verify prints, with the same exit status, the tasks on the packed interpreter."""
    verify = runs["verify"]
    relative = _rel(DATA, Path(runs["driver"]))
    local = run_seglog("verify", "--format", "jsonl", "--no-progress", relative, cwd=Path(runs["driver"]))
    assert verify["rc"] == local.exit_code, verify["err"]
    assert verify["out"].splitlines() == local.out.splitlines()
    assert relative.startswith("..") and relative in verify["out"]  # the paths as given
    # its tasks ran the packed interpreter (spark.pyspark.python), as the archive job's did:
    # two applications' executors started ./environment/bin/python
    apps = {Path(p).parents[3].name for p in _interpreters(runs) if p.endswith("/environment/bin/python")}
    assert len(apps) == 2, apps


def test_py_files_wheel_on_nodes_without_seglog(runs):
    """--py-files seglog.zip (the wheel, renamed) where the nodes' Python has pyarrow and seglog's compiled
    dependencies but not seglog: the same rows (the compiled loops do not load from a zip:
    the pure-Python engine runs, same results)."""
    out = _job(runs, "pyfiles")
    summary = json.loads((out / "summary.json").read_text())
    nodes = str(Path(runs["marker"]).parent / "nodes" / "bin" / "python")
    assert summary["pythonExec"] == nodes
    assert nodes in _interpreters(runs)
    assert arrow_records(_read(out / "records.arrow")) == dump_records([CORPUS / DATA])
