"""pytest fixtures for code that talks to BlazingMQ: a fresh simulator per test.

Installed as a pytest plugin (entry point ``pytest11``), so in any project with pybmq installed:

    def test_my_producer(bmq_broker_url):
        run_my_producer(broker=bmq_broker_url)   # e.g. "tcp://127.0.0.1:40123"

``bmq_sim`` is the running ``ThreadedBrokerSimulator`` (use ``bmq_sim.call(fn)`` to inspect the
broker's queues); it works from both synchronous and asyncio tests. A test can ask for
authentication and TLS with the keywords of ``pybmq sim``'s flags:

    @pytest.mark.bmq_sim(auth=["BASIC:users.txt"], auth_lifetime_ms=60000,
                         tls_cert="cert.pem", tls_key="key.pem", tls_client_ca=None)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pybmq.sim.server import ThreadedBrokerSimulator

__all__ = ["bmq_broker_url", "bmq_sim"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "bmq_sim(auth, auth_lifetime_ms, tls_cert, tls_key, tls_client_ca): "
        "authentication and TLS of the bmq_sim fixture",
    )


@pytest.fixture
def bmq_sim(request: pytest.FixtureRequest) -> Iterator[ThreadedBrokerSimulator]:
    """A broker simulator on 127.0.0.1 and an ephemeral port, stopped after the test."""
    # Imported late: plugin loading stays cheap.
    from pybmq.sim.config import BrokerConfig
    from pybmq.sim.server import ThreadedBrokerSimulator
    from pybmq.sim.tls import security_settings

    marker = request.node.get_closest_marker("bmq_sim")
    auth, tls = security_settings(**(marker.kwargs if marker else {}))
    sim = ThreadedBrokerSimulator(BrokerConfig(auth=auth), tls=tls)
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def bmq_broker_url(bmq_sim: ThreadedBrokerSimulator) -> str:
    """``tcp://127.0.0.1:<port>`` of a fresh simulator (TLS or not, clients use this URL)."""
    return bmq_sim.url
