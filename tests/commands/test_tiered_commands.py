"""The other commands on a tiered partition built from real broker segments
(tests/tiered_builder.py): read as one log, they report what they report on the original."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_seglog

SOURCE = "kafka-4.2.0/replicas/transactional/broker-1/events-0"  # segments 0, 2169, 4361; 66 commits, 20 aborts


@pytest.fixture
def tiered(corpus, tmp_path):
    source = corpus / SOURCE
    if not source.is_dir():
        pytest.skip(f"{source} not in this corpus")
    from tests.tiered_builder import build_tiered
    remote_dir, local_dir = build_tiered(source, tmp_path, [0, 2169], [4361])
    return source, remote_dir, local_dir


def test_transactions_read_remote_and_local_as_one_log(tiered):
    source, remote_dir, local_dir = tiered
    original = json.loads(run_seglog("transactions", "--format", "json", "--now", "0", str(source)).stdout)
    joined = run_seglog("transactions", "--format", "json", "--now", "0", "--remote",
                        str(remote_dir.parent), str(local_dir.parent))
    got = json.loads(joined.stdout)
    assert original["counts"]["committed"] == 66 and original["counts"]["aborted"] == 20
    assert got["transactions"] == original["transactions"]
    assert (got["counts"], got["txnIndexMismatches"], got["problems"]) == (
        original["counts"], original["txnIndexMismatches"], original["problems"])
    local_only = json.loads(run_seglog("transactions", "--format", "json", "--now", "0", str(local_dir)).stdout)
    assert local_only["counts"]["committed"] < 66  # the local part alone lacks the remote transactions


def test_verify_cli_of_the_pair(tiered):
    _source, remote_dir, local_dir = tiered
    result = run_seglog("verify", "--format", "json", str(remote_dir), str(local_dir))
    document = json.loads(result.stdout)
    assert result.exit_code == 0 and document["status"] == "clean"
    [partition] = document["partitions"]
    assert (partition["remotePath"], partition["logStartOffset"], partition["logEndOffset"]) == (
        str(remote_dir), 0, 4734)


@pytest.mark.parametrize("command", ["rebuild-index", "recover"])
def test_writing_commands_never_touch_remote_storage(tiered, command):
    """A remote fileset without its .index: rebuild-index and recover would write one, but remote
    storage is read only: refused before any lock, backup or journal is made."""
    _source, remote_dir, _local_dir = tiered
    next(remote_dir.glob("*.index")).unlink()
    root = remote_dir.parent.parent
    before = sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*"))
    result = run_seglog(command, "--apply", str(remote_dir))
    assert result.exit_code == 6
    assert "seglog reads remote storage and never writes it; nothing was changed" in result.err
    assert sorted((str(p.relative_to(root)), p.stat().st_size) for p in root.rglob("*")) == before


def test_verify_remote_option_is_a_path(tiered):
    _source, remote_dir, local_dir = tiered
    for path in remote_dir.glob("00000000000000002169-*"):  # remote storage lost 2169..4360
        path.unlink()
    by_option = run_seglog("verify", "--format", "jsonl", "--remote", str(remote_dir.parent), str(local_dir))
    by_path = run_seglog("verify", "--format", "jsonl", str(remote_dir.parent), str(local_dir))
    assert by_option.exit_code == by_path.exit_code == 3
    assert by_option.stdout == by_path.stdout
    codes = [json.loads(line)["code"] for line in by_option.out.splitlines()]
    assert codes.count("TIERED_OFFSET_GAP") == 1


def test_dump_pairs_a_remote_root_with_a_log_dir(tiered):
    source, remote_dir, local_dir = tiered
    joined = run_seglog("dump", "--deep-iteration", str(remote_dir.parent), str(local_dir.parent))
    original = run_seglog("dump", "--deep-iteration", str(source))
    assert joined.exit_code == original.exit_code == 0
    body = [line for line in joined.out.splitlines() if not line.startswith("Dumping ")]
    assert body == [line for line in original.out.splitlines() if not line.startswith("Dumping ")]
    dumped = [line.split("/")[-1] for line in joined.out.splitlines() if line.startswith("Dumping ")]
    assert [name[:20] for name in dumped] == ["00000000000000000000", "00000000000000002169", "00000000000000004361"]
