"""Reading a log dir from S3 (issue 16): bytes fetched, scan speed against local, and which
ranged-read layer to use. Ratios are measured in the same run; nothing is asserted.

The S3 server is moto's (``ThreadedMotoServer``, S3 over HTTP on loopback) in its own process,
so it does not share this process's GIL. The data is one partition of a generated segment
(``make_segment.py``, uncompressed ~3 KB batches by default) with the indexes seglog's
``rebuild-index`` writes (Kafka's).

Steps:

* ``from_offset``: ``seglog dump --print-data-log --from-offset X --to-offset X+9`` with X in the
  middle of the segment: bytes the ranged reads returned (counted by seglog's fetch layer,
  ``remote_files.STATS``) against the segment's size and against what is needed (the ``.index``
  plus one read-ahead window).
* ``deep_dump``: ``seglog dump --deep-iteration --print-data-log`` of the partition, whole
  processes writing to /dev/null, from ``s3://`` and from the local files; wall time, ratio
  (goal: within 1.3x) and peak RSS; and the transfer floor, the server handing over the
  segment's bytes in sequential 8 MiB ranged reads, measured between the runs (a scan from S3
  cannot beat the slower of the floor and the local scan: ``s3_over_floor``).
* ``layers``: sequential 8 MiB ranged reads of the whole segment through fsspec/s3fs
  (``cat_file``) and through ``pyarrow.fs.S3FileSystem`` (``read_at``), MB/s each.

    python tests/benchmarks/bench_remote.py --size-mb 256 --json bench-remote.json
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.make_segment import write_segment  # noqa: E402

BUCKET = "seglog-bench"
SERVER = """
import sys, time
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()  # until the benchmark closes the pipe
"""


def seglog_command() -> list[str]:
    return [sys.executable, "-m", "seglog_cli"]


def start_server() -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    port = int(process.stdout.readline())
    return process, f"http://127.0.0.1:{port}"


def make_partition(root: Path, size_mb: int, compression: str) -> dict:
    directory = root / "data" / "orders-0"
    meta = write_segment(directory / f"{0:020d}.log", size_mb * 1024 * 1024, compression=compression)
    subprocess.run(seglog_command() + ["rebuild-index", "--apply", str(directory)], check=True,
                   stdout=subprocess.DEVNULL)
    shutil.rmtree(root / "seglog-backups", ignore_errors=True)
    return meta


def upload(root: Path) -> None:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    fs.mkdir(BUCKET)
    for path in sorted((root / "data").rglob("*")):
        if path.is_file():
            fs.put_file(str(path), f"{BUCKET}/{path.relative_to(root).as_posix()}")


def step_from_offset(meta: dict, directory: Path) -> dict:
    from seglog_cli.cli import main
    from seglog_cli.storage.objectstore import remote_files

    middle = meta["next_offset"] // 2
    remote_files.STATS.update(bytes=0, requests=0)
    started = time.perf_counter()
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    with redirect_stdout(out):
        status = main(["dump", "--print-data-log", "--from-offset", str(middle), "--to-offset", str(middle + 9),
                       f"s3://{BUCKET}/data/orders-0"])
    seconds = time.perf_counter() - started
    shown = out.buffer.getvalue().decode().count("| offset: ")
    index = sum(p.stat().st_size for p in directory.glob("*.index"))
    fetched = remote_files.STATS["bytes"]
    return {"status": status, "records_shown": shown, "seconds": seconds,
            "fetched_bytes": fetched, "requests": remote_files.STATS["requests"], "segment_bytes": meta["size_bytes"],
            "index_bytes": index, "window_bytes": remote_files.WINDOW,
            "fetched_over_segment": fetched / meta["size_bytes"],
            "fetched_over_index_plus_window": fetched / (index + remote_files.WINDOW)}


# seglog's CLI in a fresh process that reports its own peak RSS on stderr's last line (VmHWM: the
# high-water mark of this program; ru_maxrss would also count the forking parent's)
RSS_WRAPPER = """
import sys
from seglog_cli.cli import main
status = main(sys.argv[1:])
sys.stdout.flush()
with open("/proc/self/status") as status_file:
    print(next(line.split()[1] for line in status_file if line.startswith("VmHWM:")), file=sys.stderr)
sys.exit(status)
"""


def _timed(args: list[str], reader: str = "fsspec", rss: dict | None = None, name: str = "") -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *args], check=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env={**os.environ, "SEGLOG_REMOTE_READER": reader})
    seconds = time.perf_counter() - started
    if rss is not None:
        rss[name] = max(rss.get(name, 0), int(done.stderr.split()[-1]) // 1024)
    return seconds


def _transfer_seconds(size: int, chunk: int = 8 * 1024 * 1024) -> float:
    """The server handing over the segment's bytes, one 8 MiB ranged read after another
    (fsspec/s3fs ``cat_file``, the layer seglog uses): the floor of any scan from S3."""
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    key = f"{BUCKET}/data/orders-0/{0:020d}.log"
    fs.cat_file(key, start=0, end=1)
    started = time.perf_counter()
    for pos in range(0, size, chunk):
        fs.cat_file(key, start=pos, end=min(size, pos + chunk))
    return time.perf_counter() - started


def step_deep_dump(root: Path, repeat: int, size: int) -> dict:
    """Whole processes; the S3 runs with seglog's ranged-read layer (fsspec/s3fs ``cat_file``)
    and with pyarrow's S3 client (``SEGLOG_REMOTE_READER=arrow``)."""
    flags = ["dump", "--deep-iteration", "--print-data-log"]
    times: dict[str, list] = {"local": [], "s3": [], "s3_arrow_reads": [], "transfer_floor": []}
    rss: dict[str, int] = {}
    for _ in range(repeat):  # interleaved (the machine's load changes), best of each
        times["local"].append(_timed(flags + [str(root / "data" / "orders-0")], rss=rss, name="local"))
        times["transfer_floor"].append(_transfer_seconds(size))
        times["s3"].append(_timed(flags + [f"s3://{BUCKET}/data/orders-0"], rss=rss, name="s3"))
        times["s3_arrow_reads"].append(_timed(flags + [f"s3://{BUCKET}/data/orders-0"], reader="arrow", rss=rss,
                                              name="s3_arrow_reads"))
    best = {name: min(values) for name, values in times.items()}
    return {"local_seconds": best["local"], "s3_seconds": best["s3"], "ratio": best["s3"] / best["local"],
            "s3_arrow_reads_seconds": best["s3_arrow_reads"],
            "ratio_arrow_reads": best["s3_arrow_reads"] / best["local"], "goal": 1.3,
            "transfer_floor_seconds": best["transfer_floor"],
            "s3_over_floor": best["s3"] / max(best["transfer_floor"], best["local"]),
            "runs": times, "peak_rss_mb": rss}


def step_layers(endpoint: str, meta: dict, chunk: int = 8 * 1024 * 1024) -> dict:
    import s3fs
    from pyarrow import fs as pafs

    key, size = f"{BUCKET}/data/orders-0/{0:020d}.log", meta["size_bytes"]
    fsspec_fs = s3fs.S3FileSystem(skip_instance_cache=True)
    arrow = pafs.S3FileSystem(endpoint_override=endpoint.split("://", 1)[1], scheme="http", region="us-east-1",
                              access_key=os.environ["AWS_ACCESS_KEY_ID"], secret_key=os.environ["AWS_SECRET_ACCESS_KEY"])

    def with_fsspec():
        return sum(len(fsspec_fs.cat_file(key, start=pos, end=min(size, pos + chunk))) for pos in range(0, size, chunk))

    def with_arrow():
        with arrow.open_input_file(key) as handle:
            return sum(len(handle.read_at(min(chunk, size - pos), pos)) for pos in range(0, size, chunk))

    fsspec_fs.cat_file(key, start=0, end=1)  # connections and credentials set up before timing
    with arrow.open_input_file(key) as handle:
        handle.read_at(1, 0)
    best = {"fsspec_s3fs_mb_s": 0.0, "pyarrow_s3_mb_s": 0.0}
    for _ in range(2):  # interleaved, best of two
        for name, read in (("fsspec_s3fs_mb_s", with_fsspec), ("pyarrow_s3_mb_s", with_arrow)):
            started = time.perf_counter()
            total = read()
            best[name] = max(best[name], total / (time.perf_counter() - started) / 1e6)
    return {**best, "chunk_bytes": chunk}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=256, help="segment size (default 256)")
    parser.add_argument("--compression", default="none", help="codec of the generated batches (default none)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each deep dump (best kept; default 2)")
    parser.add_argument("--skip-layers", action="store_true", help="no fsspec/pyarrow comparison")
    parser.add_argument("--json", help="also write the results to this file")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="remote-bench-"))
    server, endpoint = start_server()
    saved = {key: os.environ.get(key) for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                                  "AWS_DEFAULT_REGION")}
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                       "AWS_DEFAULT_REGION": "us-east-1"})
    try:
        meta = make_partition(root, args.size_mb, args.compression)
        upload(root)
        results = {"segment": {k: meta[k] for k in ("size_bytes", "batches", "records", "compression")},
                   "from_offset": step_from_offset(meta, root / "data" / "orders-0"),
                   "deep_dump": step_deep_dump(root, args.repeat, meta["size_bytes"])}
        if not args.skip_layers:
            results["layers"] = step_layers(endpoint, meta)
    finally:
        server.stdin.close()
        server.terminate()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    print(json.dumps(results, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return results


if __name__ == "__main__":
    main()
