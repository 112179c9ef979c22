"""``RealCluster``'s process handling with stand-ins for the broker (no broker needed): every wait
is bounded and fails with a typed error naming each broker's console output and logs, a failed
start leaves nothing running, and without an executable there is no cluster. The real thing is
tested in tests/cluster."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from pybmq.testing.brokers import BrokerUnavailable
from pybmq.testing.cluster import (
    ClusterNotReadyError,
    ClusterStartError,
    RealCluster,
    running_cluster,
)
from pybmq.testing.real_broker import BROKER_BIN_ENV

from tests.testing.test_real_broker import FAKE, _script

pytestmark = pytest.mark.timeout(120)


def _fake(tmp_path: Path) -> Path:
    return _script(tmp_path, f'exec "{sys.executable}" "{FAKE}" "$@"')


def test_a_node_that_cannot_start_fails_the_cluster_and_nothing_is_left(tmp_path: Path) -> None:
    cluster = RealCluster(_script(tmp_path, "echo 'bad config' ; exit 3"), nodes=2)
    folder = cluster.folder
    with pytest.raises(ClusterStartError) as info, cluster:
        pass
    text = str(info.value)
    assert "exited with status 3" in text and "bad config" in text
    assert str(cluster.node(1).console) in text or str(cluster.node(2).console) in text
    assert not any(b.running for b in [*cluster.nodes.values(), cluster.proxy])
    assert not folder.exists()


def test_members_that_never_answer_are_a_bounded_error_naming_every_log(tmp_path: Path) -> None:
    cluster = RealCluster(_fake(tmp_path), tmp_path / "c", nodes=2, ready_timeout=1.0)
    began = time.monotonic()
    with pytest.raises(ClusterStartError, match="did not settle within 1 s") as info, cluster:
        pass
    assert time.monotonic() - began < 20
    text = str(info.value)
    for broker in [*cluster.nodes.values(), cluster.proxy]:
        assert broker is not None and not broker.running
        assert str(broker.console) in text and str(broker.settings.logs) in text
    assert "node 1: RequestTimeoutError" in text  # what each member last said


def test_a_member_that_dies_while_settling_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXIT_AFTER", "0.5")
    cluster = RealCluster(_fake(tmp_path), tmp_path / "c", nodes=1, proxy=False)
    with pytest.raises(ClusterStartError, match=r"node1 exited \(status 3\)"), cluster:
        pass


def test_addresses_and_summary_before_settling(tmp_path: Path) -> None:
    cluster = RealCluster(_fake(tmp_path), tmp_path / "c", nodes=3, ask_timeout=0.5)
    try:
        cluster.start(wait=False)
        assert len(cluster.urls) == 3 and cluster.urls[0] == cluster.node(1).url
        assert cluster.proxy_url not in cluster.urls
        with pytest.raises(ClusterNotReadyError, match="not settled"):
            cluster.primary()
        summary = cluster.summary()
        json.dumps(summary)
        assert summary["leader"] is None and [n["id"] for n in summary["nodes"]] == [1, 2, 3]
        assert summary["proxy"]["url"] == cluster.proxy_url
        with pytest.raises(ValueError, match="no node 4"):
            cluster.node(4)
    finally:
        cluster.close()
    assert not any(b.running for b in cluster.nodes.values())
    without = RealCluster(_fake(tmp_path), tmp_path / "d", nodes=1, proxy=False)
    with pytest.raises(ValueError, match="no proxy"):
        _ = without.proxy_url


def test_no_executable_no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BROKER_BIN_ENV, raising=False)
    with pytest.raises(BrokerUnavailable, match=BROKER_BIN_ENV), running_cluster():
        pass
