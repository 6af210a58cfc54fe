"""bench_remote.py keeps working: a 12 MiB segment (more than one 8 MiB window) through a moto
S3 server in its own process. No timing is asserted; the bytes fetched are."""

from __future__ import annotations

import pytest

from tests.s3_server import missing_packages

pytestmark = pytest.mark.skipif(missing_packages() is not None, reason=str(missing_packages()))


def test_bench_remote_runs_and_a_seek_fetches_the_index_and_one_window():
    from tests.benchmarks import bench_remote

    results = bench_remote.main(["--size-mb", "12", "--repeat", "1", "--skip-layers"])
    seek = results["from_offset"]
    assert seek["status"] == 0 and seek["records_shown"] == 10
    # the index, then one window from the batch the index points at (here cut by the file's end)
    assert seek["index_bytes"] < seek["fetched_bytes"] <= seek["index_bytes"] + seek["window_bytes"]
    assert seek["fetched_bytes"] < 0.6 * seek["segment_bytes"] and seek["requests"] == 2
    dump = results["deep_dump"]
    assert dump["local_seconds"] > 0 and dump["s3_seconds"] > 0 and dump["transfer_floor_seconds"] > 0
    assert set(dump["peak_rss_mb"]) == {"local", "s3", "s3_arrow_reads"}
