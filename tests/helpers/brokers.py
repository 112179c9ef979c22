"""The suites' broker, simulator or real: ``broker_url(kind)`` for an async fixture, so a test
file parametrizes its existing ``broker`` fixture over both without touching the test bodies.

    @pytest.fixture(params=BROKER_KINDS)
    async def broker(request: pytest.FixtureRequest) -> AsyncIterator[str]:
        async with broker_url(request) as url:
            yield url

The simulator runs in the test's own loop (as the suites always ran it); the real broker is a
``pybmq.testing.real_broker.RealBroker``, skipped with the reason when ``$BMQ_BROKER_BIN`` is
unset. A test marked ``bmq_sim_only("why")`` runs only on the simulator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest
from pybmq.sim.server import BrokerSimulator
from pybmq.testing import BROKER_KINDS, skip_if_sim_only
from pybmq.testing.brokers import NO_BROKER_REASON
from pybmq.testing.real_broker import RealBroker, broker_executable

__all__ = ["BROKER_KINDS", "broker_url", "broker_url_sync", "real_broker"]


@contextmanager
def real_broker(**options: Any) -> Iterator[RealBroker]:
    """A real broker for the block; skips the test when there is none."""
    executable = broker_executable()
    if executable is None:
        pytest.skip(NO_BROKER_REASON)
    with RealBroker(executable, **options) as broker:
        yield broker


@contextmanager
def broker_url_sync(request: pytest.FixtureRequest) -> Iterator[str]:
    """For synchronous fixtures: the plugin's ``bmq_sim`` (a simulator on its own thread), or
    the real broker. A test that also asks for ``bmq_sim`` inspects the simulator: it runs on the
    simulator only."""
    if request.param == "real" and "bmq_sim" in request.fixturenames:
        pytest.skip("simulator only: the test inspects the simulator (bmq_sim)")
    skip_if_sim_only(request)
    if request.param == "real":
        with real_broker() as real:
            yield real.url
    else:
        yield request.getfixturevalue("bmq_sim").url


@asynccontextmanager
async def broker_url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """The URL of a fresh broker of the kind ``request.param`` names."""
    skip_if_sim_only(request)
    if request.param == "real":
        with real_broker() as real:
            yield real.url
    else:
        async with BrokerSimulator() as sim:
            yield sim.url
