"""pytest fixtures for code that talks to BlazingMQ: a fresh simulator per test.

Installed as a pytest plugin (entry point ``pytest11``), so in any project with pybmq installed:

    def test_my_producer(bmq_broker_url):
        run_my_producer(broker=bmq_broker_url)   # e.g. "tcp://127.0.0.1:40123"

``bmq_sim`` is the running ``ThreadedBrokerSimulator`` (use ``bmq_sim.call(fn)`` to inspect the
broker's queues); it works from both synchronous and asyncio tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pybmq.sim.server import ThreadedBrokerSimulator


@pytest.fixture
def bmq_sim() -> Iterator[ThreadedBrokerSimulator]:
    """A broker simulator on 127.0.0.1 and an ephemeral port, stopped after the test."""
    from pybmq.sim.server import (
        ThreadedBrokerSimulator,  # imported late: plugin loading stays cheap
    )

    sim = ThreadedBrokerSimulator()
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def bmq_broker_url(bmq_sim: ThreadedBrokerSimulator) -> str:
    """``tcp://127.0.0.1:<port>`` of a fresh simulator."""
    return bmq_sim.url
