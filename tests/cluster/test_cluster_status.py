"""A settled cluster as its brokers and ``pybmq admin`` describe it (skipped without
``$BMQ_BROKER_BIN``): every member names the same ACTIVE leader and the same ACTIVE primary of
each partition, the proxy forwards to a member, and ``pybmq admin CLUSTERS CLUSTER <name>
STATUS --json`` prints a member's and the proxy's status as JSON."""

from __future__ import annotations

import json

import pytest
from pybmq.client.sync import Session
from pybmq.testing.cluster import RealCluster

from tests.helpers.cli import run_pybmq

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


def test_the_members_agree_on_one_active_leader_and_primaries(
    shared_cluster: RealCluster,
) -> None:
    views = [shared_cluster.view(node) for node in (1, 2, 3)]
    leader = views[0].leader
    assert leader in (1, 2, 3)
    for ident, view in enumerate(views, 1):
        assert view.node_id == ident and view.leader == leader and view.leader_active
        # Legacy mode: the leader is the primary of both partitions.
        assert view.primaries == (leader, leader) and all(view.primaries_active)
        assert view.available == {1, 2, 3}
    assert shared_cluster.leader() is shared_cluster.primary() is shared_cluster.node(leader)
    assert shared_cluster.primary(1) is shared_cluster.node(leader)
    proxy = shared_cluster.proxy_view()
    assert proxy.active_node in (1, 2, 3) and proxy.available


def test_messages_go_in_at_the_proxy_and_out_at_every_node(shared_cluster: RealCluster) -> None:
    uri = "bmq://bmq.test.persistent.fanout.sc/status-roundtrip"
    with Session(shared_cluster.proxy_url) as producer:
        writer = producer.open_queue(uri, write=True)
        assert all(writer.post(b"m%d" % i).ok for i in range(3))
    for app, url in zip(("foo", "bar", "baz"), shared_cluster.urls, strict=True):
        with Session(url) as consumer:
            reader = consumer.open_queue(f"{uri}?id={app}", read=True)
            got = []
            for _ in range(3):
                message = reader.get(timeout=10)
                got.append(message.payload)
                reader.confirm(message)
            assert got == [b"m0", b"m1", b"m2"], (app, url)


def test_a_cluster_refuses_in_memory_queues_it_cannot_replicate(
    shared_cluster: RealCluster,
) -> None:
    from pybmq.errors import BrokerError

    with Session(shared_cluster.urls[0]) as session:
        with pytest.raises(BrokerError) as info:
            session.open_queue("bmq://bmq.test.mem.priority/not-here", write=True)
        assert info.value.category == "E_UNKNOWN"
        session.open_queue("bmq://bmq.test.mem.broadcast/here", write=True)


def _status(url: str, cluster: str, *extra: str) -> tuple[int, dict[str, object] | None, str]:
    done = run_pybmq("admin", "CLUSTERS", "CLUSTER", cluster, "STATUS", *extra, broker=url)
    try:
        document = json.loads(done.stdout) if "--json" in extra else None
    except ValueError:
        document = None
    return done.returncode, document, done.stdout + done.stderr


def test_pybmq_admin_prints_a_members_status_as_json(shared_cluster: RealCluster) -> None:
    leader = shared_cluster.node_id(shared_cluster.leader())
    for url in shared_cluster.urls:
        code, document, output = _status(url, shared_cluster.name, "--json")
        assert code == 0 and document is not None, output
        status = document["result"]["clusterStatus"]  # type: ignore[index]
        elector = status["electorInfo"]
        assert elector["leaderStatus"] == "ACTIVE"
        assert elector["leaderNode"] == f"[node{leader}, {leader}]"
        partitions = status["partitionsInfo"]["partitions"]
        assert [(p["primaryNode"], p["primaryStatus"]) for p in partitions] == [
            (f"[node{leader}, {leader}]", "ACTIVE")
        ] * 2
        nodes = {n["description"]: n["status"] for n in status["nodeStatuses"]["nodes"]}
        assert nodes == {f"[node{i}, {i}]": "E_AVAILABLE" for i in (1, 2, 3)}


def test_pybmq_admin_prints_the_proxys_status_and_refuses_an_unknown_cluster(
    shared_cluster: RealCluster,
) -> None:
    code, document, output = _status(shared_cluster.proxy_url, shared_cluster.name, "--json")
    assert code == 0 and document is not None, output
    proxy = document["result"]["clusterProxyStatus"]  # type: ignore[index]
    assert proxy["activeNodeDescription"].startswith("[node")
    code, document, output = _status(shared_cluster.urls[0], "no-such-cluster", "--json")
    assert code == 1 and document is not None, output
    assert "not found" in document["result"]["error"]["message"]  # type: ignore[index]
    code, _, output = _status(shared_cluster.urls[0], shared_cluster.name)
    assert code == 0 and "ACTIVE" in output, output
