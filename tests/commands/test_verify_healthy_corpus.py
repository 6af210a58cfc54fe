"""``seglog verify`` on every log dir a healthy broker left: exit 0 and not one warning.

A warning on a healthy broker's files teaches operators to ignore warnings. This walks each
broker-written log dir in the corpus that no test damaged: the cleanly stopped broker (``data``,
``data-extra``), share groups (whose state partitions the share coordinator prunes, moving the log
start offset past the first batches), tiered storage's local log dir (alone, and with its remote
storage and metadata as one log), and every replica of the replica cases (kill -9 states
included: the broker loads them as they are)."""

from __future__ import annotations

import json
import pytest

from tests.conftest import CORPUS, CORPUS_MISSING, run_seglog

ROOT = CORPUS / "kafka-4.2.0"
HEALTHY = ["data", "data-extra", "share-groups/data", "tiered/data", "tiered/remote tiered/data"]


def _log_dirs() -> list:
    if not ROOT.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=CORPUS_MISSING))]
    found = HEALTHY + sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("replicas/*/broker-*") if p.is_dir())
    return [pytest.param(name, id=name) for name in found]


@pytest.mark.corpus
@pytest.mark.parametrize("name", _log_dirs())
def test_a_healthy_broker_log_dir_verifies_clean(name):
    result = run_seglog("verify", "--format", "json", *(str(ROOT / part) for part in name.split()))
    report = json.loads(result.out)
    noisy = [f"{f['code']} {f['path']}: {f['message']}" for p in report["partitions"] for f in p["findings"]
             if f["severity"] != "info"] + [f"{f['code']} {f['path']}" for f in report["findings"]
                                            if f["severity"] != "info"]
    assert result.exit_code == 0 and not noisy, "\n".join(noisy)
    assert report["summary"]["partitions"] > 0
