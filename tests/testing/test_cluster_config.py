"""A cluster's configuration, as ``pybmq.testing.broker_config`` writes it for each role (no
broker needed): every member gets the whole cluster with the test election timings and its own
storage and name, a proxy lists the nodes as a proxy cluster, and both serve the domains a cluster
can replicate, the strongly consistent ones included."""

from __future__ import annotations

from pathlib import Path

import pytest
from pybmq.generated import mqbcfg, mqbcfg_json, mqbconf, mqbconf_json
from pybmq.testing.broker_config import (
    TEST_DOMAINS,
    BrokerSettings,
    ClusterLayout,
    ClusterMember,
    ElectionTimings,
    write_config_dir,
)

LAYOUT = ClusterLayout(
    "itc", tuple(ClusterMember(i, f"node{i}", 32000 + i) for i in (1, 2, 3)), partitions=2
)


def _clusters(config: Path) -> mqbcfg.ClustersDefinition:
    return mqbcfg_json.decode_json(
        mqbcfg.ClustersDefinition, (config / "clusters.json").read_bytes()
    )


def _broker(config: Path) -> mqbcfg.Configuration:
    return mqbcfg_json.decode_json(mqbcfg.Configuration, (config / "bmqbrkrcfg.json").read_bytes())


def test_a_member_gets_the_whole_cluster_with_test_timings(tmp_path: Path) -> None:
    settings = BrokerSettings(port=32002, folder=tmp_path, cluster=LAYOUT, node_id=2)
    config = write_config_dir(settings)
    broker = _broker(config)
    assert broker.app_config.host_name == "node2"  # how a broker finds itself among the nodes
    tcp = broker.app_config.network_interfaces.tcp_interface
    assert tcp is not None and tcp.port == 32002
    (cluster,) = _clusters(config).my_clusters
    assert cluster.name == "itc"
    assert [(n.id, n.name) for n in cluster.nodes] == [(1, "node1"), (2, "node2"), (3, "node3")]
    assert [n.transport.tcp.endpoint for n in cluster.nodes if n.transport.tcp] == [
        "tcp://127.0.0.1:32001",
        "tcp://127.0.0.1:32002",
        "tcp://127.0.0.1:32003",
    ]
    assert cluster.master_assignment == mqbcfg.MasterAssignmentAlgorithm.E_LEADER_IS_MASTER_ALL
    assert not cluster.cluster_attributes.is_csl_mode_enabled  # legacy mode
    assert not cluster.cluster_attributes.is_fsm_workflow
    timings = ElectionTimings()
    assert cluster.elector.leader_sync_delay_ms == timings.leader_sync_delay_ms < 80000
    assert cluster.elector.initial_wait_timeout_ms == timings.initial_wait_ms
    partitions = cluster.partition_config
    assert partitions.num_partitions == 2
    assert partitions.location == str(settings.storage) and settings.storage.is_dir()
    assert partitions.sync_config.startup_wait_duration_ms == timings.startup_wait_ms


def test_a_proxy_lists_the_nodes_as_a_proxy_cluster(tmp_path: Path) -> None:
    settings = BrokerSettings(port=32010, folder=tmp_path, cluster=LAYOUT)
    assert settings.is_proxy
    config = write_config_dir(settings)
    assert _broker(config).app_config.host_name == "localhost"
    clusters = _clusters(config)
    assert clusters.my_clusters == []
    (proxy,) = clusters.proxy_clusters
    assert proxy.name == "itc" and [n.name for n in proxy.nodes] == ["node1", "node2", "node3"]


@pytest.mark.parametrize("node_id", [1, None], ids=["member", "proxy"])
def test_a_cluster_serves_the_domains_it_can_replicate(tmp_path: Path, node_id: int | None) -> None:
    port = 32001 if node_id else 32010
    config = write_config_dir(
        BrokerSettings(port=port, folder=tmp_path, cluster=LAYOUT, node_id=node_id)
    )
    names = sorted(p.stem for p in (config / "domains").glob("*.json"))
    # In memory, a clustered queue can only be a broadcast one; every file-backed one is served.
    assert names == sorted(
        n for n in TEST_DOMAINS if ".persistent." in n or n.endswith(".broadcast")
    )
    assert "bmq.test.persistent.priority.sc" in names
    for name in names:
        variant = mqbconf_json.decode_json(
            mqbconf.DomainVariant, (config / "domains" / f"{name}.json").read_bytes()
        )
        assert variant.definition is not None and variant.definition.location == "itc"
        strong = variant.definition.parameters.consistency.strong is not None
        assert strong == name.endswith(".sc")


def test_settings_that_cannot_work_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="node_id is for a member"):
        BrokerSettings(port=1, folder=tmp_path, node_id=1)
    with pytest.raises(ValueError, match="its member's port"):
        BrokerSettings(port=1, folder=tmp_path, cluster=LAYOUT, node_id=1)
    with pytest.raises(ValueError, match="no node 7"):
        BrokerSettings(port=1, folder=tmp_path, cluster=LAYOUT, node_id=7)
    with pytest.raises(ValueError, match="leader_sync_delay_ms"):
        ElectionTimings(leader_sync_delay_ms=1000, startup_wait_ms=1500)
    with pytest.raises(ValueError, match="initial_wait_ms"):
        ElectionTimings(initial_wait_ms=500, max_random_wait_ms=1000)
