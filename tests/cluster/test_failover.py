"""Failover under load on a replicated cluster of real brokers (skipped without
``$BMQ_BROKER_BIN``): the primary SIGKILLed and restarted while a producer posts and a consumer
confirms, through the nodes and through the proxy, on an eventual and a strong consistency
domain. Every post has exactly one outcome, at least 99 % are ACKed, no ACKed post is lost, no
post reported failed is delivered, the consumer receives everything, and no client tries the
dead node while another is up (a lost connection's first retry goes to another endpoint);
duplicates (the same message delivered again, same GUID) are reported.

Two runs here (one kill each, a few thousand posts) are the CI subset; ``make cluster-soak``
runs every combination with three kills and more posts (``PYBMQ_CLUSTER_SOAK=1``).
"""

from __future__ import annotations

import os

import pytest
from pybmq.testing.cluster import RealCluster

from tests.cluster.failover import EVENTUAL, STRONG, Figures, run_failover

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

SOAK = os.environ.get("PYBMQ_CLUSTER_SOAK") == "1"


def check(figures: Figures) -> None:
    print(figures.summary())  # the figures, for the run's log (pytest -s, or on a failure)
    several = figures.without_one_outcome
    assert not several, f"posts without exactly one outcome: {list(several.items())[:5]}"
    assert figures.ack_ratio >= 0.99, figures.summary()
    assert not figures.lost, f"ACKed and not delivered: {sorted(figures.lost)[:5]}"
    assert not figures.lies, f"reported failed and delivered: {sorted(figures.lies)[:5]}"
    assert not figures.strangers, f"delivered, never posted so: {sorted(figures.strangers)[:5]}"
    assert len(figures.kills) >= 1 and all(k.new_primary != k.node for k in figures.kills)
    dials = [k.dials_to_dead for k in figures.kills]
    assert not any(dials), f"reconnect attempts to the dead node, per kill: {dials}"


def run_and_check(
    cluster: RealCluster, domain: str, producer_via: str, consumer_via: str, kills: int, posts: int
) -> Figures:
    figures = run_failover(
        cluster,
        domain=domain,
        producer_via=producer_via,
        consumer_via=consumer_via,
        kills=kills,
        min_posts=posts,
    )
    check(figures)
    return figures


@pytest.mark.parametrize(
    ("domain", "producer_via", "consumer_via"),
    [(EVENTUAL, "nodes", "proxy"), (STRONG, "proxy", "nodes")],
    ids=["eventual-producer-on-nodes", "strong-producer-on-proxy"],
)
def test_primary_killed_under_load(
    bmq_cluster: RealCluster, domain: str, producer_via: str, consumer_via: str
) -> None:
    figures = run_and_check(bmq_cluster, domain, producer_via, consumer_via, kills=1, posts=3000)
    # The client on the primary lost its connection and came back.
    hit = "producer" if producer_via == "nodes" else "consumer"
    assert figures.connection_losses[hit] >= 1, figures.connection_losses


@pytest.mark.skipif(not SOAK, reason="the soak: make cluster-soak (PYBMQ_CLUSTER_SOAK=1)")
@pytest.mark.parametrize("domain", [EVENTUAL, STRONG], ids=["eventual", "strong"])
@pytest.mark.parametrize(
    ("producer_via", "consumer_via"),
    [("nodes", "proxy"), ("proxy", "nodes"), ("nodes", "nodes"), ("proxy", "proxy")],
)
def test_soak_three_kills(
    bmq_cluster: RealCluster, domain: str, producer_via: str, consumer_via: str
) -> None:
    run_and_check(bmq_cluster, domain, producer_via, consumer_via, kills=3, posts=12_000)
