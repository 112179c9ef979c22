"""Killing and restarting members of a cluster (skipped without ``$BMQ_BROKER_BIN``): the
primary's death makes another member the ACTIVE leader and primary, file-backed messages survive
it, and the dead node comes back as an available follower; a follower's death changes nothing."""

from __future__ import annotations

import pytest
from pybmq.client.sync import Session
from pybmq.testing.cluster import RealCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

QUEUE = "bmq://bmq.test.persistent.priority/kill-restart"


@pytest.mark.bmq_cluster(proxy=False)
def test_primary_and_follower_killed_and_restarted(bmq_cluster: RealCluster) -> None:
    cluster = bmq_cluster
    assert cluster.proxy is None
    with Session(cluster.urls[0]) as session:
        writer = session.open_queue(QUEUE, write=True)
        assert all(writer.post(b"before-%d" % i).ok for i in range(5))
    old = cluster.node_id(cluster.primary())
    cluster.kill(old)
    assert not cluster.node(old).running
    view = cluster.wait_ready()  # two of three: still a quorum
    new = view.leader
    assert new is not None and new != old and view.primaries == (new,)
    assert view.available == {1, 2, 3} - {old}
    cluster.start(old)
    view = cluster.settled_view()
    assert view.leader == new and view.available == {1, 2, 3}  # back as a follower
    assert cluster.view(old).leader == new and cluster.view(old).node_id == old
    follower = next(i for i in (1, 2, 3) if i != new)
    cluster.restart(follower)  # a clean stop and start
    assert cluster.node_id(cluster.primary()) == new
    with Session(cluster.node(follower).url) as session:
        reader = session.open_queue(QUEUE, read=True)
        got = []
        for _ in range(5):
            message = reader.get(timeout=10)
            got.append(message.payload)
            reader.confirm(message)
    assert got == [b"before-%d" % i for i in range(5)]
