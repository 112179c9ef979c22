"""The last small rows of issue 28 over real sockets: ``total_size`` on received messages, the
compression chosen per post, and ``start(timeout=...)``."""

from __future__ import annotations

import asyncio
import time
import zlib

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import (
    CompressedMessage,
    SlowConsumerHighWatermark,
    SlowConsumerNormal,
)
from pybmq.client.fsm import SessionState
from pybmq.client.options import SessionOptions
from pybmq.client.sync import Session
from pybmq.errors import RequestTimeoutError, UsageError
from pybmq.sim.server import BrokerSimulator
from pybmq.wire.properties import MessageProperties

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/rows2"


async def test_total_size_is_the_application_data_as_on_the_wire() -> None:
    props = {"kind": "order", "n": 3}
    area = len(MessageProperties(props).encode())
    payload = b"z" * 5000
    options = SessionOptions(compression_threshold=1024, reconnect=False)
    async with BrokerSimulator() as sim, AsyncSession(sim.url, options=options) as session:
        queue = await session.open_queue(QUEUE, read=True, write=True)
        assert (await queue.post(b"plain")).ok
        assert (await queue.post(b"with properties", properties=props)).ok
        assert (await queue.post(payload)).ok
        plain = await asyncio.wait_for(queue.get(), 5)
        with_properties = await asyncio.wait_for(queue.get(), 5)
        compressed = await asyncio.wait_for(queue.get(), 5)
    assert plain.total_size == len(b"plain")
    assert with_properties.total_size == area + len(b"with properties")
    assert isinstance(compressed.message, CompressedMessage)
    assert compressed.total_size < 200 < len(payload)  # the compressed size, not 5000
    assert abs(compressed.total_size - len(zlib.compress(payload))) < 32
    assert compressed.payload == payload


async def test_compression_chosen_per_post_overrides_the_session_threshold() -> None:
    payload = b"y" * 4000
    for threshold in (0, 1024):
        options = SessionOptions(compression_threshold=threshold, reconnect=False)
        async with BrokerSimulator() as sim, AsyncSession(sim.url, options=options) as session:
            queue = await session.open_queue(QUEUE, read=True, write=True)
            assert (await queue.post(payload, compression="zlib")).ok
            assert (await queue.post(payload, compression="none")).ok
            queue.post_nowait(b"t" * 64, compression="zlib")  # under 1024, small
            queue.post_nowait(payload)  # the session's default
            got = [await asyncio.wait_for(queue.get(), 5) for _ in range(4)]
            with pytest.raises(UsageError, match="compression must be"):
                queue.post_nowait(payload, compression="lz4")
        kinds = [isinstance(m.message, CompressedMessage) for m in got]
        assert kinds == [True, False, True, threshold > 0], threshold
        assert [m.payload for m in got] == [payload, payload, b"t" * 64, payload]
        assert got[1].total_size == len(payload)


async def _silent_broker() -> tuple[asyncio.AbstractServer, str]:
    """A TCP peer that accepts and never answers (the negotiation never ends)."""

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read(-1)
        finally:
            writer.close()  # from 3.12 the server's wait_closed() waits for every connection

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"tcp://127.0.0.1:{port}"


async def test_start_takes_a_timeout_of_its_own() -> None:
    server, url = await _silent_broker()
    async with server:
        session = AsyncSession(url)  # start_timeout is 60 s: the call's own bound wins
        began = time.monotonic()
        with pytest.raises(RequestTimeoutError, match=r"within 0\.3s"):
            await session.start(timeout=0.3)
        assert time.monotonic() - began < 2
        assert session.state is SessionState.STOPPED
        assert session.transport is None
        with pytest.raises(UsageError):
            await AsyncSession(url).start(timeout=0)
        # Without a timeout, a broker that answers starts as before.
        async with BrokerSimulator() as sim:
            ok = AsyncSession(sim.url)
            await ok.start(timeout=5)
            await ok.stop()


def test_the_blocking_session_start_takes_a_timeout() -> None:
    async def serve() -> None:
        server, url = await _silent_broker()
        async with server:
            session = Session(url)
            began = time.monotonic()
            with pytest.raises(RequestTimeoutError):
                await asyncio.to_thread(session.start, timeout=0.3)
            assert time.monotonic() - began < 3
            session.stop()

    asyncio.run(serve())


async def test_slow_consumer_events_when_the_backlog_crosses_its_marks() -> None:
    events: list[object] = []
    options = SessionOptions(slow_consumer_watermarks=(5, 20), reconnect=False)
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url, options=options, on_event=events.append) as session,
    ):
        queue = await session.open_queue(QUEUE, read=True, write=True)
        for i in range(19):
            assert (await queue.post(b"m%d" % i)).ok
        while session.undelivered < 19:
            await asyncio.sleep(0.01)
        assert not events  # 19 not taken: under the high mark
        assert (await queue.post(b"m19")).ok
        while session.undelivered < 20:
            await asyncio.sleep(0.01)
        assert events == [SlowConsumerHighWatermark(20)]
        assert (await queue.post(b"m20")).ok  # still high: no second event
        while session.undelivered < 21:
            await asyncio.sleep(0.01)
        taken = queue.get_many_nowait(15)  # 6 left: not yet down to the low mark
        assert len(taken) == 15 and len(events) == 1
        queue.get_nowait()  # 5 left
        assert events == [SlowConsumerHighWatermark(20), SlowConsumerNormal(5)]
        queue.get_many_nowait(5)
    assert len(events) == 2
    with pytest.raises(UsageError):
        SessionOptions(slow_consumer_watermarks=(20, 20))
