"""What a user sees when the broker is not there or not a broker, and where the broker comes from."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.client.sync import Session
from pybmq.errors import ProtocolError, SessionStoppedError, UsageError
from pybmq.sim.server import BrokerSimulator

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/diag"


@pytest.fixture
async def broker() -> AsyncIterator[str]:
    async with BrokerSimulator() as sim:
        yield sim.url


def test_bmq_broker_uri_is_the_default_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BMQ_BROKER_URI", "tcp://broker.example:31000")
    assert SessionOptions().broker_uri == "tcp://broker.example:31000"
    assert AsyncSession().broker == "tcp://broker.example:31000"
    assert Session().broker == "tcp://broker.example:31000"
    assert AsyncSession("tcp://other:1").broker == "tcp://other:1"
    monkeypatch.delenv("BMQ_BROKER_URI")
    assert SessionOptions().broker_uri == "tcp://localhost:30114"


def test_a_bad_bmq_broker_uri_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BMQ_BROKER_URI", "http://nope")
    with pytest.raises(UsageError):
        SessionOptions()


async def test_session_connects_to_bmq_broker_uri(
    broker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BMQ_BROKER_URI", broker)
    async with AsyncSession() as session:
        assert session.broker == broker
        assert session.info is not None


async def test_connect_timeout_says_why() -> None:
    # A listening socket whose backlog is full never completes a handshake: nothing accepts.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(8):
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            fillers.append(filler)
        session = AsyncSession(f"tcp://127.0.0.1:{port}", connect_timeout=0.5)
        with pytest.raises(SessionStoppedError, match=r"cannot connect to .*: \S"):
            await session.start()
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


async def test_refused_connection_names_the_reason() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(
        SessionStoppedError, match=r"cannot connect to .*: Connect call failed|refused"
    ):
        await AsyncSession(f"tcp://127.0.0.1:{port}").start()


async def test_an_http_server_is_not_a_blazingmq_broker() -> None:
    async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await reader.read()
        writer.close()

    server = await asyncio.start_server(http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(ProtocolError, match=r"not a BlazingMQ broker .*HTTP/1\.1"):
            await AsyncSession(f"tcp://127.0.0.1:{port}").start()
    finally:
        server.close()
        await server.wait_closed()


async def test_debug_log_tells_connect_negotiate_open_close(
    broker: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="pybmq.client")
    async with AsyncSession(broker) as session:
        queue = await session.open_queue(QUEUE, write=True)
        await queue.close()
    text = "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)
    for needle in ("connecting to", "negotiated with", "opened " + QUEUE, "closing " + QUEUE,
                   "stopping the session", "stopped"):  # fmt: skip
        assert needle in text
