"""Tiered partitions built from real broker segments, as Kafka 4.2's RemoteLogManager and
LocalTieredStorage would have left them (core/src/main/java/kafka/log/remote/RemoteLogManager.java
``copyLogSegment``; storage/src/test/java/org/apache/kafka/server/log/remote/storage/
RemoteLogSegmentFileset.java for the names): each copied segment's ``.log``, ``.index``,
``.timeindex`` and ``.txnindex`` byte for byte under ``<base>-<segment id>.<type>``, the producer
snapshot taken at the next segment's base offset as ``.snapshot``, and the leader epoch cache up to
the segment's end as ``.leader_epoch_checkpoint``. The local part keeps the segments not deleted by
local retention.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
from pathlib import Path

from seglog_cli.storage.log.checkpoints import format_leader_epoch_checkpoint, read_leader_epoch_checkpoint
from seglog_cli.storage.log.remote_layout import remote_file_name


def segment_id(seed: str) -> str:
    return base64.urlsafe_b64encode(hashlib.md5(seed.encode()).digest()).decode().rstrip("=")


def build_tiered(source: Path, target: Path, remote_bases: list[int], local_bases: list[int],
                 topic_id: str | None = None) -> tuple[Path, Path]:
    """``source`` (a broker's partition dir) -> (remote partition dir, local partition dir) under
    ``target``: ``remote/kafka-tiered-storage/<topic>-<p>-<topic id>/`` and ``data/<topic>-<p>/``."""
    topic_id = topic_id or _topic_id(source)
    bases = sorted(int(p.name[:20]) for p in source.glob("*.log"))
    remote = target / "remote" / "kafka-tiered-storage" / f"{source.name}-{topic_id}"
    local = target / "data" / source.name
    remote.mkdir(parents=True)
    shutil.copytree(source, local)
    epochs = read_leader_epoch_checkpoint(source / "leader-epoch-checkpoint")
    for base in remote_bases:
        next_base = bases[bases.index(base) + 1]
        uid = segment_id(f"{source}:{base}")
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            if (source / f"{base:020d}{suffix}").is_file():
                shutil.copyfile(source / f"{base:020d}{suffix}", remote / remote_file_name(base, uid, suffix))
        shutil.copyfile(source / f"{next_base:020d}.snapshot", remote / remote_file_name(base, uid, ".snapshot"))
        (remote / remote_file_name(base, uid, ".leader_epoch_checkpoint")).write_bytes(
            format_leader_epoch_checkpoint([e for e in epochs if e.start_offset < next_base]))
    for base in bases:
        if base not in local_bases:
            for path in local.glob(f"{base:020d}.*"):
                if not path.name.endswith(".snapshot"):
                    path.unlink()
            snapshot = local / f"{base:020d}.snapshot"
            if snapshot.exists():
                snapshot.unlink()
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return remote, local


def _topic_id(source: Path) -> str:
    for line in (source / "partition.metadata").read_text().splitlines():
        if line.startswith("topic_id:"):
            return line.split(":", 1)[1].strip()
    raise ValueError(f"no topic id in {source}/partition.metadata")
