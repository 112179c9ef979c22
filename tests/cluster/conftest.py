"""One settled cluster (3 nodes, a proxy, 2 partitions) for the tests of this folder that only
look at it: starting one costs seconds of two busy cores. A test that kills or restarts a node
takes its own (the ``bmq_cluster`` fixture) instead; one that uses this one leaves it settled.
Skipped without ``$BMQ_BROKER_BIN``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pybmq.testing.brokers import NO_BROKER_REASON
from pybmq.testing.cluster import RealCluster
from pybmq.testing.real_broker import broker_executable


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    executable = broker_executable()
    if executable is None:
        pytest.skip(NO_BROKER_REASON)
    folder = tmp_path_factory.mktemp("shared-cluster")
    with RealCluster(executable, folder, partitions=2) as cluster:
        yield cluster
