"""Failover under load on a replicated cluster of real brokers (skipped without
``$BMQ_BROKER_BIN``): the primary SIGKILLed and restarted while a producer posts and a consumer
confirms, through the nodes and through the proxy, on an eventual and a strong consistency
domain. Every post has exactly one outcome, at least 99 % are ACKed, no ACKed post is lost, no
post reported failed is delivered, the consumer receives everything, and no client tries the
dead node while another is up (a lost connection's first retry goes to another endpoint);
duplicates (the same message delivered again, same GUID) are reported.

With a de-duplication window on the consumer, which sits on the node that dies and holds a
batch of unconfirmed messages there, the redeliveries are held back: no message reaches the
application twice, every ACKed one reaches it.

Three runs here (one kill each, a few thousand posts) are the CI subset; ``make cluster-soak``
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


def test_dedup_window_keeps_failover_duplicates_from_the_consumer(bmq_cluster: RealCluster) -> None:
    """The consumer on the primary, confirming in batches of 50: when the primary dies, what it
    held unconfirmed is redelivered on its new connection (same GUIDs), which the window holds
    back; its late confirms go to the new connection."""
    figures = run_failover(
        bmq_cluster,
        domain=EVENTUAL,
        producer_via="proxy",
        consumer_via="nodes",
        min_posts=2000,
        dedup_window=100_000,
        confirm_every=50,
    )
    check(figures)
    assert figures.connection_losses["consumer"] >= 1, figures.connection_losses
    assert figures.held_back > 0, figures.summary()  # the failover did redeliver
    assert figures.duplicates == 0, figures.summary()


@pytest.mark.skipif(not SOAK, reason="the soak: make cluster-soak (PYBMQ_CLUSTER_SOAK=1)")
@pytest.mark.parametrize("window", [0, 100_000], ids=["without-window", "with-window"])
def test_soak_dedup_window(bmq_cluster: RealCluster, window: int) -> None:
    """The same with three kills, and without the window for comparison (duplicates reported)."""
    figures = run_failover(
        bmq_cluster,
        domain=STRONG,
        producer_via="proxy",
        consumer_via="nodes",
        kills=3,
        min_posts=6000,
        dedup_window=window,
        confirm_every=50,
    )
    check(figures)
    if window:
        assert figures.duplicates == 0, figures.summary()


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
