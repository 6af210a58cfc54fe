"""A real Spark standalone cluster on 127.0.0.1 for the cluster tests: a master and a worker
started from pyspark's own ``bin/spark-class``, a packed environment (venv-pack) of seglog
built from this working tree, and ``spark-submit`` runs against them.

Everything lives under one work dir (logs included) and every process started here is
stopped by :meth:`Standalone.stop` (its process group: the worker's executors with it).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYTHON_MARKER = "SEGLOG_TEST_INTERPRETER_LOG"
# a line in the packed environment's site-packages: each interpreter started from it (an
# executor's Python worker daemon) appends its sys.executable to the file the variable names
MARKER_PTH = ("import os, sys; p = os.environ.get('" + PYTHON_MARKER + "'); "
              "p and open(p, 'a').write(sys.executable + '\\n')\n")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def base_env() -> dict:
    """The environment of every process started here: loopback only, no PYSPARK_* or
    PYTHONPATH left over from the test process (the local session fixture sets some)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK_", "SPARK_")) and k != "PYTHONPATH"}
    env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1", SPARK_NO_DAEMONIZE="1")
    return env


def _pip(*args: str, cwd: Path) -> None:
    # no PYTHONPATH: pip would take a seglog on it (a source tree's .egg-info) as installed
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


def _pinned(*names: str) -> list[str]:
    """``name==version`` of what this interpreter has (pip's cache has those wheels)."""
    return [f"{name}=={importlib.metadata.version(name)}" for name in names]


def build_wheel(work: Path) -> Path:
    """A seglog wheel built from this working tree."""
    out = work / "wheels"
    _pip("wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(REPO), cwd=work)
    return next(out.glob("seglog-*.whl"))


def make_venv(target: Path, *requirements: str, marker: bool = False) -> Path:
    """A venv at ``target`` (this interpreter's base Python, no pip in it) with ``requirements``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, timeout=120)
    python = target / "bin" / "python"
    _pip("--python", str(python), "install", "--quiet", *requirements, cwd=target.parent)
    if marker:
        site = next(target.glob("lib/python*/site-packages"))
        (site / "zz_seglog_test_marker.pth").write_text(MARKER_PTH)
    return python


def packed_env(work: Path, wheel: Path) -> Path:
    """``env.tar.gz``: venv-pack of a venv with seglog (the wheel, with its dependencies) and
    pyarrow; pyspark itself comes from the nodes' Spark (pyspark.zip on the workers' path)."""
    import venv_pack

    make_venv(work / "env", str(wheel), *_pinned("pyarrow"), marker=True)
    output = work / "env.tar.gz"
    env = venv_pack.Env(str(work / "env"))
    for pattern in ("lib/python*/site-packages/pyarrow/include/*", "lib/python*/site-packages/pyarrow/tests/*",
                    "lib/python*/site-packages/pyarrow/src/*"):
        env = env.exclude(pattern)
    env.pack(output=str(output), compress_level=1)
    return output


def nodes_python(work: Path) -> Path:
    """A Python as on nodes that have pyarrow and seglog's compiled dependencies but not
    seglog (the ``--py-files`` wheel route)."""
    return make_venv(work / "nodes", *_pinned("pyarrow", "crc32c", "construct", "cramjam", "lz4", "zstandard"),
                     marker=True)


class Standalone:
    """A standalone master and one worker (2 cores) on 127.0.0.1."""

    def __init__(self, work: Path):
        self.work = work
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.processes: list[subprocess.Popen] = []
        self.master_url = ""

    def start(self) -> "Standalone":
        conf = self.work / "daemons.conf"
        conf.write_text("spark.master.rest.enabled false\nspark.worker.cleanup.enabled false\n")
        spark_class = str(spark_home() / "bin" / "spark-class")
        master_log = self.logs / "master.log"
        self._spawn([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0",
                     "--webui-port", "0", "--properties-file", str(conf)], master_log)
        self.master_url = self._wait(master_log, r"Starting Spark master at (spark://\S+)").group(1)
        worker_log = self.logs / "worker.log"
        self._spawn([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", "0",
                     "--webui-port", "0", "--cores", "2", "--memory", "2g", "--work-dir", str(self.work / "worker"),
                     "--properties-file", str(conf), self.master_url], worker_log)
        self._wait(worker_log, r"Successfully registered with master")
        return self

    def _spawn(self, command: list[str], log: Path) -> None:
        with open(log, "wb") as out:
            self.processes.append(subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=base_env(),
                                                   cwd=self.work, start_new_session=True))

    def _wait(self, log: Path, pattern: str, timeout: float = 180):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, log.read_text(errors="replace"))
            if found:
                return found
            if any(p.poll() is not None for p in self.processes):
                break
            time.sleep(0.5)
        raise RuntimeError(f"{log.name}: no {pattern!r} in time:\n{log.read_text(errors='replace')[-3000:]}")

    def stop(self) -> None:
        for process in reversed(self.processes):  # the worker (and its executors) first
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=30)
        self.processes.clear()

    def submit(self, script: Path, *args: str, cwd: Path, driver_python: str, conf: dict, env: dict | None = None,
               options: tuple = (), timeout: float = 600) -> subprocess.CompletedProcess:
        """``spark-submit --master <this cluster> [options] --conf k=v ... script args`` in ``cwd``."""
        command = [str(spark_home() / "bin" / "spark-submit"), "--master", self.master_url, *options]
        for key, value in {**loopback_conf(), **conf}.items():
            command += ["--conf", f"{key}={value}"]
        environment = {**base_env(), "PYSPARK_DRIVER_PYTHON": driver_python, **(env or {})}
        return subprocess.run([*command, str(script), *args], cwd=cwd, env=environment, capture_output=True,
                              text=True, timeout=timeout)


def loopback_conf() -> dict:
    return {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1", "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false", "spark.executor.memory": "1g",
            "spark.sql.session.timeZone": "UTC"}
