"""The FastStream suite: ``broker_url`` is a fresh simulator, and the real broker when
``$BMQ_BROKER_BIN`` names one. Every test here is marked ``faststream``; each module skips as a
whole when the extra is not installed."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.helpers.brokers import BROKER_KINDS, broker_url


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/faststream/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.faststream)


@pytest.fixture(params=BROKER_KINDS)
async def any_broker(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """The URL of a simulator, then of a real broker (skipped without one)."""
    async with broker_url(request) as url:
        yield url


@pytest.fixture
async def sim_broker() -> AsyncIterator[str]:
    """The URL of a simulator on the test's loop."""
    from pybmq.sim.server import BrokerSimulator

    async with BrokerSimulator() as sim:
        yield sim.url


@pytest.fixture(autouse=True)
def quiet_faststream() -> Iterator[None]:
    """FastStream logs a line per message at INFO: kept to warnings so failures stay readable."""
    logger = logging.getLogger("blazingmq")
    level = logger.level
    logger.setLevel(logging.WARNING)
    yield
    logger.setLevel(level)
