"""bench_replay_clients.py keeps working: a few hundred records through each client into the
tests' cluster (the ``kafka_cluster`` fixture), every record's offset checked, and the clients'
refusals it reports are the ones they make. No timing is asserted."""

from __future__ import annotations

from tests.benchmarks import bench_replay_clients


def test_bench_replay_clients_runs_on_few_records(kafka_cluster, tmp_path):
    report = bench_replay_clients.main(["--records", "300", "--partitions", "2", "--repeat", "1", "--quiet",
                                        "--json", str(tmp_path / "clients.json")], cluster=kafka_cluster)
    throughput = report["throughput"]
    expected = {name: "ok" for name in bench_replay_clients.CLIENTS}
    if kafka_cluster.kind == "tansu":  # aiokafka's InitProducerId v0 (shortfalls["init_producer_id_v0_v2"])
        expected["aiokafka"] = "broker shortfall"
    assert {name: result["status"] for name, result in throughput.items()} == expected
    measured = [r for r in throughput.values() if r["status"] == "ok"]
    assert all(r["records_per_second"] > 0 and r["mb_per_second"] > 0 for r in measured)
    assert bench_replay_clients.exit_status(report) == 0

    fidelity = report["fidelity"]
    assert set(fidelity["confluent-kafka"].values()) == {"ok"}
    assert fidelity["kafka-python"]["null header value"].startswith("refused: TypeError")
    for name in ("kafka-python", "aiokafka-plain"):
        assert fidelity[name]["null key and value"].startswith("refused")
        assert fidelity[name]["repeated header keys"] == fidelity[name]["old CreateTime"] == "ok"
    assert (tmp_path / "clients.json").is_file()


def test_a_failing_client_makes_the_exit_status_1(kafka_cluster, monkeypatch):
    def fail(self, topic, records):
        raise RuntimeError("lost")

    monkeypatch.setattr(bench_replay_clients.KafkaPythonClient, "send_all", fail)
    report = bench_replay_clients.main(["--records", "10", "--repeat", "1", "--clients", "kafka-python", "--quiet"],
                                       cluster=kafka_cluster)
    assert report["throughput"]["kafka-python"]["status"] == "failed"
    assert bench_replay_clients.exit_status(report) == 1
