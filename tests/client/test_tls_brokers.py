"""The client over TLS to a broker with a plain and a TLS listener: the simulator, and the real
broker built with TLS (``$BMQ_BROKER_TLS_BIN``). Round trips through the asyncio and the blocking
sessions (1,000 messages through the asyncio one), a message crossing from the plain listener to
the TLS one, and each way of getting it wrong answered with a typed error: a CA that did not sign
the broker's certificate, another host name, an expired certificate, a plain client on the TLS
port, and a TLS client on the plain port (within the handshake bound, not the connect timeout)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pybmq
import pytest
import trustme
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.errors import SessionStoppedError, TlsHandshakeError
from pybmq.testing.brokers import BrokerHandle
from pybmq.testing.certificates import TestCertificates

from tests.helpers.tls import post_in_order, round_trip_count, running_tls_broker

pytestmark = [pytest.mark.timeout(120), pytest.mark.tls]


def queue_uri(tag: str) -> str:
    return f"bmq://bmq.test.mem.priority/tls-{tag}-{uuid.uuid4().hex[:8]}"


def trusting(broker: BrokerHandle, **values: object) -> SessionOptions:
    return SessionOptions(tls_ca=str(broker.tls_ca), **values)  # type: ignore[arg-type]


async def test_a_thousand_messages_round_trip_over_tls(tls_broker: BrokerHandle) -> None:
    count = 1000  # the representative round trip: 1,000 messages in every run
    uri = queue_uri("aio")
    assert tls_broker.tls_url is not None
    async with AsyncSession(tls_broker.tls_url, options=trusting(tls_broker)) as session:
        queue = await session.open_queue(uri, read=True, write=True)
        acks = await post_in_order(queue, [b"m%04d" % n for n in range(count)])
        assert all(ack.ok for ack in acks)
        received = []
        for _ in range(count):
            message = await asyncio.wait_for(queue.get(), 10)
            received.append(message.payload)
            await message.confirm()
    assert received == [b"m%04d" % n for n in range(count)]


def test_round_trip_with_the_blocking_session_by_host_name(tls_broker: BrokerHandle) -> None:
    count = round_trip_count(100)
    uri = queue_uri("sync")
    assert tls_broker.tls_url is not None
    by_name = tls_broker.tls_url.replace("127.0.0.1", "localhost")  # the certificate has both
    with pybmq.Session(by_name, options=trusting(tls_broker)) as session:
        queue = session.open_queue(uri, read=True, write=True)
        assert all(queue.post(b"s%04d" % n).ok for n in range(count))
        received = []
        for message in queue:
            received.append(message.payload)
            queue.confirm(message)
            if len(received) == count:
                break
    assert received == [b"s%04d" % n for n in range(count)]


async def test_posted_on_the_plain_listener_read_on_the_tls_one(tls_broker: BrokerHandle) -> None:
    uri = queue_uri("cross")
    assert tls_broker.tls_url is not None
    async with (
        AsyncSession(tls_broker.url) as plain,
        AsyncSession(tls_broker.tls_url, options=trusting(tls_broker)) as secure,
    ):
        reader = await secure.open_queue(uri, read=True)
        writer = await plain.open_queue(uri, write=True)
        for n in range(20):
            assert (await writer.post(b"x%d" % n)).ok
        got = [(await asyncio.wait_for(reader.get(), 10)).payload for _ in range(20)]
    assert got == [b"x%d" % n for n in range(20)]


async def test_a_ca_that_did_not_sign_the_certificate(
    tls_broker: BrokerHandle, tmp_path: Path
) -> None:
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    assert tls_broker.tls_url is not None
    session = AsyncSession(tls_broker.tls_url, options=SessionOptions(tls_ca=str(other)))
    with pytest.raises(TlsHandshakeError, match="not trusted") as error:
        await session.start()
    assert error.value.reason == "certificate"


async def test_another_host_name(tls_broker: BrokerHandle) -> None:
    options = trusting(tls_broker, tls_server_name="broker.elsewhere.example")
    assert tls_broker.tls_url is not None
    with pytest.raises(TlsHandshakeError, match="another host name") as error:
        await AsyncSession(tls_broker.tls_url, options=options).start()
    assert error.value.reason == "certificate"


async def test_a_plain_client_on_the_tls_port(tls_broker: BrokerHandle) -> None:
    assert tls_broker.tls_url is not None
    began = time.monotonic()
    with pytest.raises(SessionStoppedError, match="TLS") as error:
        await AsyncSession(tls_broker.tls_url).start()
    assert not isinstance(error.value, TlsHandshakeError)  # the client spoke no TLS at all
    assert time.monotonic() - began < 10


async def test_a_tls_client_on_the_plain_port_fails_within_three_seconds(
    tls_broker: BrokerHandle,
) -> None:
    """The default handshake bound (2 s), not the 10 s connect timeout."""
    began = time.monotonic()
    with pytest.raises(TlsHandshakeError, match=r"is the broker listening for TLS\?") as error:
        await AsyncSession(tls_broker.url, options=trusting(tls_broker)).start()
    elapsed = time.monotonic() - began
    # The real broker never answers a ClientHello on its plain port; the simulator closes a
    # connection whose first frame is that big at once.
    expected = "timeout" if tls_broker.is_real else "handshake"
    assert error.value.reason == expected
    assert elapsed < 3.0, elapsed


@pytest.mark.parametrize("kind", ["sim", "real"])
async def test_an_expired_certificate(kind: str, tmp_path: Path) -> None:
    expired = TestCertificates.make(tmp_path, expired=True)
    with running_tls_broker(kind, expired) as broker:
        assert broker.tls_url is not None
        with pytest.raises(TlsHandshakeError, match="has expired") as error:
            await AsyncSession(broker.tls_url, options=trusting(broker)).start()
    assert error.value.reason == "certificate"
