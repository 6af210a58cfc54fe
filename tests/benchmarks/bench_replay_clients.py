"""Which Kafka client ``seglog replay`` should produce with: produce throughput of the same
records through confluent-kafka (librdkafka), kafka-python and aiokafka, each in the
configuration replay needs (idempotent producer, acks=all, every record's offset reported
back for the progress file), and what each client can reproduce exactly.

The cluster is the one the tests use (``tests/kafka_cluster.py``): tansu started on a free
loopback port, or the Kafka SEGLOG_TEST_KAFKA_BOOTSTRAP names. Steps:

    fidelity    each client produces the records a log dir can hold that a client may refuse
                or change (null key and value, a null header value, repeated header keys,
                empty key and value, a CreateTime timestamp), one topic per client; read back
                with librdkafka: "ok", "refused: ..." or "changed: ..." per record
    throughput  N records (default 200,000: 20 B keys, ~200 B values, one header, explicit
                partition and timestamp, over 4 partitions) into a fresh topic per run, from the
                first send to the last acknowledgement (producer connected and its producer id
                obtained before); each client collects every record's (partition, offset), and
                the run is checked: per partition the offsets are 0..n-1 and the partition's
                end offset is n (no record lost or written twice). Runs interleave the
                clients; the median of ``--repeat`` (default 3) is reported

A client that fails makes the exit status 1, unless the failure is a broker shortfall the
cluster names (tansu's InitProducerId v0, the only version aiokafka sends: its idempotent
producer cannot start on tansu); "aiokafka-plain" (acks=all, not idempotent) is measured as a
reference either way. The cluster shares the machine's CPUs with the clients. Nothing asserts
a time; ``test_bench_replay_clients_smoke.py`` checks it runs.

    python tests/benchmarks/bench_replay_clients.py --records 200000 --json bench-replay-clients.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.kafka_cluster import running_cluster  # noqa: E402

START_TIMESTAMP = 1_767_225_600_000  # 2026-01-01T00:00:00Z
BATCH_BYTES = 256 * 1024
EDGE_RECORDS = {  # name -> (key, value, headers, timestamp)
    "null key and value": (None, None, [], START_TIMESTAMP),
    "null header value": (b"k", b"v", [("n", None)], START_TIMESTAMP + 1),
    "repeated header keys": (b"k", bytes(range(256)), [("dup", b"1"), ("dup", b"\xff")], START_TIMESTAMP + 2),
    "empty key and value": (b"", b"", [], START_TIMESTAMP + 3),
    "old CreateTime": (b"k", b"v", [], 1_000_000_000_000),
}


class BrokerShortfall(Exception):
    """A client failed on something the broker does not do as Kafka does (a key of the
    cluster's ``shortfalls``)."""

    def __init__(self, key: str, detail: str):
        super().__init__(f"{key}: {detail}")
        self.key = key


# -- the clients: open (connected, producer id obtained: one acknowledged record into ``warmup``),
# send_all -> [(partition, offset)] of every record, close -----------------------------------------

class ConfluentClient:
    name, idempotent = "confluent-kafka", True

    def open(self, bootstrap: str, warmup: str) -> None:
        from confluent_kafka import Producer
        self.delivered, self.errors = [], []
        self.producer = Producer({
            "bootstrap.servers": bootstrap, "enable.idempotence": self.idempotent, "acks": "all",
            "linger.ms": 5, "batch.size": BATCH_BYTES, "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576, "on_delivery": self._delivered})
        self.producer.produce(warmup, b"warm-up")
        self.producer.flush(30)
        self.delivered = []

    def _delivered(self, error, message) -> None:
        if error is not None:
            self.errors.append(error)
        else:
            self.delivered.append((message.partition(), message.offset()))

    def send_all(self, topic: str, records: list) -> list:
        produce, poll = self.producer.produce, self.producer.poll
        for i, (key, value, headers, timestamp, partition) in enumerate(records):
            while True:
                try:
                    produce(topic, value, key, partition=partition, timestamp=timestamp, headers=headers)
                    break
                except BufferError:
                    poll(0.01)
            if i % 1000 == 0:
                poll(0)
        if self.producer.flush(60) or self.errors:
            raise RuntimeError(f"{len(self.errors)} records not delivered: {self.errors[:1]}")
        return self.delivered

    def close(self) -> None:
        self.producer = None


class KafkaPythonClient:
    name = "kafka-python"

    def open(self, bootstrap: str, warmup: str) -> None:
        from kafka import KafkaProducer
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=5,
                                      batch_size=BATCH_BYTES)
        self.producer.send(warmup, b"warm-up").get(30)

    def send_all(self, topic: str, records: list) -> list:
        send = self.producer.send
        futures = [send(topic, key=key, value=value, headers=headers, partition=partition, timestamp_ms=timestamp)
                   for key, value, headers, timestamp, partition in records]
        self.producer.flush(60)
        failed = [f.exception for f in futures if not f.succeeded()]
        if failed:
            raise RuntimeError(f"{len(failed)} records not delivered: {failed[0]!r}")
        return [(f.value.partition, f.value.offset) for f in futures]

    def close(self) -> None:
        self.producer.close(10)


class AioKafkaClient:
    name, idempotent = "aiokafka", True

    def open(self, bootstrap: str, warmup: str) -> None:
        from aiokafka.errors import UnknownError
        self.loop = asyncio.new_event_loop()
        try:
            self.loop.run_until_complete(self._start(bootstrap, warmup))
        except UnknownError as exc:  # InitProducerId v0 answered UNKNOWN_SERVER_ERROR
            self.close()
            raise BrokerShortfall("init_producer_id_v0_v2", f"AIOKafkaProducer.start(): {exc!r}") from None

    async def _start(self, bootstrap: str, warmup: str) -> None:
        from aiokafka import AIOKafkaProducer
        self.producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=self.idempotent, acks="all",
                                         linger_ms=5, max_batch_size=BATCH_BYTES)
        await self.producer.start()
        await self.producer.send_and_wait(warmup, b"warm-up")

    def send_all(self, topic: str, records: list) -> list:
        return self.loop.run_until_complete(self._send_all(topic, records))

    async def _send_all(self, topic: str, records: list) -> list:
        send = self.producer.send
        futures = [await send(topic, key=key, value=value, headers=headers, partition=partition, timestamp_ms=timestamp)
                   for key, value, headers, timestamp, partition in records]
        results = await asyncio.gather(*futures, return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            raise RuntimeError(f"{len(failed)} records not delivered: {failed[0]!r}")
        return [(r.partition, r.offset) for r in results]

    def close(self) -> None:
        self.loop.run_until_complete(self.producer.stop())
        self.loop.close()


class AioKafkaPlainClient(AioKafkaClient):
    name, idempotent = "aiokafka-plain", False


CLIENTS = {client.name: client for client in (ConfluentClient, KafkaPythonClient, AioKafkaClient, AioKafkaPlainClient)}
LABELS = {"confluent-kafka": "confluent-kafka (librdkafka)", "kafka-python": "kafka-python",
          "aiokafka": "aiokafka", "aiokafka-plain": "aiokafka, not idempotent (reference)"}


# -- steps -------------------------------------------------------------------------------------

def make_records(count: int, partitions: int, value_bytes: int, key_bytes: int, seed: int = 7) -> list:
    """(key, value, headers, timestamp, partition) tuples: random values of ``value_bytes`` ± 25 %."""
    rng = random.Random(seed)
    pool = rng.randbytes(1 << 20)
    records = []
    for i in range(count):
        size = rng.randint(value_bytes * 3 // 4, value_bytes * 5 // 4)
        start = rng.randrange(len(pool) - size)
        key = (b"%0*d" % (key_bytes, i))[-key_bytes:]
        records.append((key, pool[start:start + size], [("seglog.source", b"orders-%d" % (i % partitions))],
                        START_TIMESTAMP + i, i % partitions))
    return records


def payload_bytes(records: list) -> int:
    return sum(len(k) + len(v) + sum(len(h) + len(hv) for h, hv in hs) for k, v, hs, _t, _p in records)


def step_fidelity(cluster, name: str) -> dict:
    """What the client does with each of EDGE_RECORDS: "ok", "refused: ..." or "changed: ..."."""
    topic = cluster.create_topic(cluster.new_topic(f"fidelity-{name}"))
    client = CLIENTS[name]()
    client.open(cluster.bootstrap, cluster.create_topic(cluster.new_topic("warmup")))
    sent, outcome = [], {}
    try:
        for label, (key, value, headers, timestamp) in EDGE_RECORDS.items():
            try:
                client.send_all(topic, [(key, value, headers, timestamp, 0)])
                sent.append(label)
            except Exception as exc:  # noqa: BLE001 (the client's refusal is the finding)
                outcome[label] = f"refused: {type(exc).__name__}: {exc}"[:160]
    finally:
        client.close()
    for label, record in zip(sent, cluster.read(topic, 0, "read_uncommitted")):
        key, value, headers, timestamp = EDGE_RECORDS[label]
        got = (record["key"], record["value"], record["headers"], record["timestamp"])
        outcome[label] = "ok" if got == (key, value, headers, timestamp) else f"changed: {got!r}"[:160]
    return {label: outcome.get(label, "not read back") for label in EDGE_RECORDS}


def run_once(cluster, name: str, records: list, partitions: int) -> float:
    """Seconds from the first send to the last acknowledgement; raises if the topic does not
    then hold every record exactly once."""
    topic = cluster.create_topic(cluster.new_topic(f"bench-{name}"), partitions=partitions)
    warmup = cluster.create_topic(cluster.new_topic("warmup"))
    client = CLIENTS[name]()
    client.open(cluster.bootstrap, warmup)
    try:
        started = time.perf_counter()
        delivered = client.send_all(topic, records)
        seconds = time.perf_counter() - started
    finally:
        client.close()
    check_exactly_once(cluster, topic, delivered, records, partitions)
    for done in cluster.admin().delete_topics([topic, warmup]).values():  # tansu keeps everything in memory
        done.result(30)
    return seconds


def check_exactly_once(cluster, topic: str, delivered: list, records: list, partitions: int) -> None:
    for partition in range(partitions):
        expected = sum(1 for r in records if r[4] == partition)
        offsets = sorted(o for p, o in delivered if p == partition)
        end = cluster.end_offset(topic, partition)
        if offsets != list(range(expected)) or end != expected:
            raise RuntimeError(f"partition {partition}: {expected} records sent, {len(offsets)} acknowledged "
                               f"({len(set(offsets))} distinct offsets), end offset {end}")


def measure(cluster, names: list, records: list, partitions: int, repeat: int) -> dict:
    """Per client: runs (seconds), or the failure that stopped it."""
    results = {name: {"seconds": []} for name in names}
    for _ in range(repeat):
        for name in names:
            result = results[name]
            if "error" in result:
                continue
            try:
                result["seconds"].append(run_once(cluster, name, records, partitions))
            except BrokerShortfall as exc:
                result.update(error=str(exc), shortfall=exc.key in cluster.shortfalls)
            except Exception as exc:  # noqa: BLE001 (reported, and the exit status says so)
                result.update(error=f"{type(exc).__name__}: {exc}"[:300], shortfall=False)
    return results


def summarise(results: dict, records: list) -> dict:
    count, size = len(records), payload_bytes(records)
    for result in results.values():
        if "error" in result:
            result["status"] = "broker shortfall" if result["shortfall"] else "failed"
            continue
        median = statistics.median(result["seconds"])
        result.update(status="ok", records_per_second=round(count / median),
                      mb_per_second=round(size / median / 1e6, 2))
    base = results.get("confluent-kafka", {}).get("records_per_second")
    for result in results.values():
        if base and result.get("records_per_second"):
            result["confluent_over_this"] = round(base / result["records_per_second"], 2)
    return results


def client_versions() -> dict:
    import aiokafka
    import confluent_kafka
    import kafka
    return {"confluent-kafka": f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})",
            "kafka-python": kafka.__version__, "aiokafka": aiokafka.__version__,
            "aiokafka-plain": aiokafka.__version__}


def client_features() -> dict:
    """Exactly-once and security support per client: transactions from the producer's methods,
    SASL mechanisms from the library (librdkafka's: those its build accepts; aiokafka's: the list
    in its aiokafka/conn.py). Idempotence, headers and per-record timestamps are in every one's
    send call (and measured: throughput, fidelity)."""
    from aiokafka import AIOKafkaProducer
    from confluent_kafka import KafkaException, Producer
    from kafka import KafkaProducer

    librdkafka_sasl = []
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER"):
        try:  # no bootstrap.servers: nothing connects
            Producer({"security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism, "sasl.username": "u",
                      "sasl.password": "p"})
            librdkafka_sasl.append(mechanism)
        except KafkaException:
            pass
    try:
        from kafka.net.sasl import SASL_MECHANISMS
        kafka_python_sasl = sorted(SASL_MECHANISMS)
    except ImportError:
        kafka_python_sasl = ["?"]

    def transactions(producer) -> str:
        methods = ("begin_transaction", "commit_transaction", "abort_transaction", "send_offsets_to_transaction")
        return "yes" if all(hasattr(producer, m) for m in methods) else "no"

    aiokafka = {"idempotence": "enable_idempotence (InitProducerId v0 only)",
                "transactions": transactions(AIOKafkaProducer),
                "sasl": ["PLAIN", "GSSAPI", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"], "ssl": "ssl_context"}
    return {"confluent-kafka": {"idempotence": "enable.idempotence", "transactions": transactions(Producer),
                                "sasl": librdkafka_sasl, "ssl": "ssl.* (OpenSSL)"},
            "kafka-python": {"idempotence": "enable_idempotence", "transactions": transactions(KafkaProducer),
                             "sasl": kafka_python_sasl, "ssl": "ssl_* (Python ssl)"},
            "aiokafka": aiokafka, "aiokafka-plain": {**aiokafka, "idempotence": "off (reference row)"}}


def exit_status(report: dict) -> int:
    """1 if a client failed (a broker shortfall the cluster names is not a failure)."""
    failed = any(r["status"] == "failed" for r in report["throughput"].values())
    broken = any(v.startswith("failed") for outcome in report["fidelity"].values() for v in outcome.values())
    return 1 if failed or broken else 0


# -- report --------------------------------------------------------------------------------------

def print_report(report: dict) -> None:
    workload = report["workload"]
    print(f"cluster: {report['cluster']['kind']} at {report['cluster']['bootstrap']}; {workload['records']:,} records, "
          f"{workload['payload_bytes'] / 1e6:.1f} MB of keys, values and headers, {workload['partitions']} partitions; "
          f"median of {workload['repeat']}")
    print(f"{'client':38} {'version':28} {'status':17} {'records/s':>10} {'MB/s':>7} {'x slower':>8}"
          "  (x slower: confluent-kafka's records/s over the client's)")
    for name, result in report["throughput"].items():
        rate = f"{result['records_per_second']:,}" if "records_per_second" in result else "-"
        mbps = f"{result['mb_per_second']:.1f}" if "mb_per_second" in result else "-"
        ratio = f"{result['confluent_over_this']:.2f}" if "confluent_over_this" in result else "-"
        print(f"{LABELS[name]:38} {report['versions'][name]:28} {result['status']:17} {rate:>10} {mbps:>7} {ratio:>8}")
        if "error" in result:
            print(f"    {result['error']}")
    print("\nexactly-once support:")
    for name, features in report["features"].items():
        print(f"  {LABELS[name]:38} idempotence: {features['idempotence']}; transactions: {features['transactions']}; "
              f"SASL: {' '.join(features['sasl'])}; SSL: {features['ssl']}")
    print("\nfidelity (produced by the client, read back with librdkafka):")
    for name, outcome in report["fidelity"].items():
        for label, verdict in outcome.items():
            print(f"  {LABELS[name]:38} {label:22} {verdict}")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000, help="records per run (default 200,000)")
    parser.add_argument("--value-bytes", type=int, default=200, help="mean value size (default 200)")
    parser.add_argument("--key-bytes", type=int, default=20, help="key size (default 20)")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of each topic (default 4)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per client, median reported (default 3)")
    parser.add_argument("--clients", default=",".join(CLIENTS), help=f"comma-separated (default {','.join(CLIENTS)})")
    parser.add_argument("--quiet", action="store_true", help="no table")
    parser.add_argument("--json", help="also write the results to this file")
    return parser.parse_args(argv)


def main(argv=None, cluster=None) -> dict:
    """The report; ``cluster``: a running one (the tests' fixture) instead of starting tansu."""
    args = parse_args(argv)
    names = [name.strip() for name in args.clients.split(",") if name.strip()]
    unknown = set(names) - set(CLIENTS)
    if unknown:
        raise SystemExit(f"unknown clients: {', '.join(sorted(unknown))} (known: {', '.join(CLIENTS)})")
    records = make_records(args.records, args.partitions, args.value_bytes, args.key_bytes)
    with ExitStack() as stack:
        cluster = cluster or stack.enter_context(running_cluster())
        fidelity = {}
        for name in names:
            try:
                fidelity[name] = step_fidelity(cluster, name)
            except BrokerShortfall as exc:
                fidelity[name] = {label: f"not measured: {exc.key}" for label in EDGE_RECORDS}
            except Exception as exc:  # noqa: BLE001 (reported, and the exit status says so)
                fidelity[name] = {label: f"failed: {type(exc).__name__}: {exc}"[:160] for label in EDGE_RECORDS}
        throughput = summarise(measure(cluster, names, records, args.partitions, args.repeat), records)
        report = {"cluster": {"kind": cluster.kind, "bootstrap": cluster.bootstrap},
                  "workload": {"records": len(records), "payload_bytes": payload_bytes(records),
                               "partitions": args.partitions, "repeat": args.repeat},
                  "versions": client_versions(), "throughput": throughput, "fidelity": fidelity,
                  "features": {name: features for name, features in client_features().items() if name in names}}
    if not args.quiet:
        print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    sys.exit(exit_status(main()))
