"""Brokers for tests: the simulator or the real ``bmqbrkr``, in pytest or out of it.

Outside pytest (pytest is not needed, nor imported):

    from pybmq.testing import running_broker

    with running_broker("real") as broker:     # "sim", "real", or "auto"
        run_my_producer(broker=broker.url)

    with running_broker("real", tls=True) as broker:   # a TLS listener too, with a test CA
        run_my_producer(broker=broker.tls_url, tls_ca=broker.tls_ca)

A replicated cluster of real brokers with a proxy (``pybmq.testing.cluster``):

    with running_cluster() as cluster:          # 3 nodes and a proxy, settled before use
        run_my_producer(broker=cluster.proxy_url, endpoints=cluster.urls)

In pytest, the plugin (``pybmq.testing.plugin``, registered when pybmq is installed) gives the
fixtures ``bmq_sim``, ``bmq_broker_url``, ``bmq_real_broker``, ``bmq_any_broker``,
``bmq_any_broker_url`` and ``bmq_cluster``. Every name is imported when first used, so importing this package costs
nothing, and a fixture asked for without pytest installed says so.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BrokerHandle",
    "BrokerUnavailable",
    "RealBroker",
    "RealCluster",
    "TestCertificates",
    "bmq_any_broker",
    "bmq_any_broker_url",
    "bmq_broker_url",
    "bmq_cluster",
    "bmq_real_broker",
    "bmq_sim",
    "running_broker",
    "running_cluster",
    "skip_if_sim_only",
]

# Where each public name lives; the plugin's need pytest.
_HOMES = {
    "BrokerHandle": "pybmq.testing.brokers",
    "BrokerUnavailable": "pybmq.testing.brokers",
    "running_broker": "pybmq.testing.brokers",
    "RealBroker": "pybmq.testing.real_broker",
    "TestCertificates": "pybmq.testing.certificates",
    "RealCluster": "pybmq.testing.cluster",
    "running_cluster": "pybmq.testing.cluster",
    **{
        name: "pybmq.testing.plugin"
        for name in (
            "BROKER_KINDS",
            "bmq_any_broker",
            "bmq_any_broker_url",
            "bmq_broker_url",
            "bmq_cluster",
            "bmq_real_broker",
            "bmq_sim",
            "skip_if_sim_only",
        )
    },
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pybmq.testing' has no attribute {name!r}")
    try:
        module = importlib.import_module(home)
    except ModuleNotFoundError as exc:
        if exc.name != "pytest":
            raise
        raise ModuleNotFoundError(
            f"pybmq.testing.{name} is part of the pytest plugin, which needs pytest "
            "(pip install pytest); running_broker and RealBroker do not",
            name="pytest",
        ) from None
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(__all__)
