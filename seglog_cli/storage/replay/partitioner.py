"""Kafka's default partitioner for keyed records (``BuiltInPartitioner.partitionForKey``):
``toPositive(murmur2(key)) % numPartitions``, with ``Utils.murmur2`` (MurmurHash2, 32 bits,
seed ``0x9747b28c``, the key's bytes read as little-endian 32-bit words). Records with a null key
have no partition of their own in Kafka (the producer's sticky partitioner picks one per batch);
replay keeps them in their source partition's number modulo the destination's count."""

from __future__ import annotations

SEED = 0x9747B28C
M = 0x5BD1E995
MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """``Utils.murmur2``: the signed 32-bit hash Java computes."""
    length = len(data)
    h = (SEED ^ length) & MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * M) & MASK
        k ^= k >> 24
        k = (k * M) & MASK
        h = ((h * M) & MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * M) & MASK
    h ^= h >> 13
    h = (h * M) & MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """``Utils.toPositive(Utils.murmur2(key)) % partitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions
