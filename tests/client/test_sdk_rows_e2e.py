"""The smaller rows of issue 28 over real sockets: ``user_agent_prefix``, queue names over 64
characters refused locally and by the simulator, and the blocking API's ``message.confirm()``."""

from __future__ import annotations

import time
import warnings

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.client.sync import Session
from pybmq.errors import BrokerError, UsageError
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator

from tests.helpers.hostile import unconfirmed

pytestmark = pytest.mark.timeout(60)

DOMAIN = "bmq://bmq.test.mem.priority/"


async def test_user_agent_prefix_reaches_the_broker() -> None:
    async with BrokerSimulator() as sim:
        options = SessionOptions(user_agent_prefix="acme-wrapper/2.1")
        async with AsyncSession(sim.url, options=options):
            [client] = sim.broker.sessions
            identity = client.client_identity
        assert identity is not None
        assert identity.user_agent.startswith("acme-wrapper/2.1 pybmq/")
        async with AsyncSession(sim.url):
            identity = sim.broker.sessions[-1].client_identity
        assert identity is not None and identity.user_agent.startswith("pybmq/")
    with pytest.raises(UsageError):
        SessionOptions(user_agent_prefix="bad\nprefix")


async def test_queue_names_over_64_characters_are_refused_locally_and_by_the_simulator() -> None:
    async with BrokerSimulator() as sim, AsyncSession(sim.url) as session:
        await session.open_queue(DOMAIN + "q" * 64, write=True)  # the limit itself is fine
        with pytest.raises(UsageError, match="QUEUE_NAME_TOO_LONG"):
            await session.open_queue(DOMAIN + "q" * 65, write=True)
        assert sim.broker.queue(DOMAIN + "q" * 65) is None  # nothing was sent
        # A client that does not check gets the simulator's refusal.
        engine = session.engine
        op_id, queue_id = engine.open_queue(DOMAIN + "r" * 64, engine.now, write=True)
        request = engine.data_to_send()
        too_long = request.replace(b"r" * 64, b"r" * 65, 1)
        assert session.transport is not None
        session.transport.write(_fix_length(too_long, len(too_long) - len(request)))
        with pytest.raises(BrokerError, match="exceeds 64 characters"):
            await session.driver.operation(op_id)
        del queue_id


def _fix_length(event: bytes, grown: int) -> bytes:
    """The event header's length field (its first 4 bytes, big-endian, low 31 bits) grown."""
    length = int.from_bytes(event[:4], "big")
    return (length + grown).to_bytes(4, "big") + event[4:]


def test_the_blocking_apis_message_confirm_confirms() -> None:
    uri = DOMAIN + "sdk-blocking-confirm"
    with ThreadedBrokerSimulator() as sim, Session(sim.url) as session:
        queue = session.open_queue(uri, read=True, write=True)
        queue.post(b"confirm me")
        message = queue.get(timeout=10)
        assert unconfirmed(sim, uri) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "coroutine was never awaited"
            message.confirm()
        deadline = time.monotonic() + 5
        while unconfirmed(sim, uri) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert unconfirmed(sim, uri) == 0
