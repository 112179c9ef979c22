"""TLS between the client and ``pybmq sim`` over loopback, with a CA made in the test: success
(context or CA path, with reconnect), wrong CA, wrong host name, client certificates, and TLS
against a plain broker and the other way round."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Iterator

import pytest
import trustme
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.errors import SessionStoppedError, TlsHandshakeError, UsageError
from pybmq.sim.server import BrokerSimulator
from pybmq.sim.tls import server_tls_context

pytestmark = pytest.mark.timeout(60)

QUEUE = "bmq://bmq.test.mem.priority/tls"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def pems(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    folder = tmp_path_factory.mktemp("tls")
    server = ca.issue_cert("localhost", "127.0.0.1")
    client = ca.issue_cert("client.example")
    paths = {"ca": folder / "ca.pem", "cert": folder / "cert.pem", "key": folder / "key.pem"}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    server.cert_chain_pems[0].write_to_path(str(paths["cert"]))
    server.private_key_pem.write_to_path(str(paths["key"]))
    client_pem = folder / "client.pem"
    client.private_key_and_cert_chain_pem.write_to_path(str(client_pem))
    yield {**{k: str(v) for k, v in paths.items()}, "client": str(client_pem)}


@pytest.fixture
async def tls_sim(pems: dict[str, str]) -> AsyncIterator[BrokerSimulator]:
    async with BrokerSimulator(tls=server_tls_context(pems["cert"], pems["key"])) as sim:
        yield sim


async def roundtrip(url: str, options: SessionOptions) -> None:
    async with AsyncSession(url, options=options) as session:
        queue = await session.open_queue(QUEUE, read=True, write=True)
        assert (await queue.post(b"over tls")).ok
        message = await asyncio.wait_for(queue.get(), 10)
        assert message.payload == b"over tls"
        await message.confirm()


async def test_tls_with_a_ca_path(tls_sim: BrokerSimulator, pems: dict[str, str]) -> None:
    await roundtrip(tls_sim.url, SessionOptions(tls_ca=pems["ca"]))


async def test_tls_with_a_context_and_reconnect(tls_sim: BrokerSimulator, ca: trustme.CA) -> None:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    session = AsyncSession(tls_sim.url, options=SessionOptions(tls=context, reconnect=True))
    await session.start()
    try:
        await tls_sim.restart()
        for _ in range(200):
            if session.reconnects:
                break
            await asyncio.sleep(0.05)
        assert session.reconnects == 1
    finally:
        await session.stop()


async def test_wrong_ca_is_a_clear_handshake_error(tls_sim: BrokerSimulator) -> None:
    other = ssl.create_default_context()
    trustme.CA().configure_trust(other)
    with pytest.raises(TlsHandshakeError, match=r"TLS handshake .* not trusted") as error:
        await AsyncSession(tls_sim.url, options=SessionOptions(tls=other)).start()
    assert error.value.reason == "certificate"


async def test_wrong_host_name_is_refused(tls_sim: BrokerSimulator, pems: dict[str, str]) -> None:
    options = SessionOptions(tls_ca=pems["ca"], tls_server_name="broker.elsewhere")
    with pytest.raises(TlsHandshakeError, match="another host name") as error:
        await AsyncSession(tls_sim.url, options=options).start()
    assert error.value.reason == "certificate"


async def test_tls_client_against_a_plain_broker(pems: dict[str, str]) -> None:
    async with BrokerSimulator() as plain:
        session = AsyncSession(
            plain.url, options=SessionOptions(tls_ca=pems["ca"]), connect_timeout=5
        )
        with pytest.raises(SessionStoppedError, match="TLS"):
            await session.start()


async def test_plain_client_against_a_tls_broker(tls_sim: BrokerSimulator) -> None:
    with pytest.raises(SessionStoppedError, match="TLS"):
        await AsyncSession(tls_sim.url, options=SessionOptions(request_timeout=5)).start()


async def test_client_certificate_required(pems: dict[str, str]) -> None:
    context = server_tls_context(pems["cert"], pems["key"], client_ca=pems["ca"])
    async with BrokerSimulator(tls=context) as sim:
        with_cert = SessionOptions(
            tls_ca=pems["ca"], tls_cert=pems["client"], tls_key=pems["client"]
        )
        await roundtrip(sim.url, with_cert)
        with pytest.raises(SessionStoppedError):
            await roundtrip(sim.url, SessionOptions(tls_ca=pems["ca"], request_timeout=5))


async def test_tls_client_against_a_silent_port_fails_within_the_handshake_bound(
    pems: dict[str, str],
) -> None:
    """A port that accepts and never answers (what a plain BlazingMQ port does with a
    ClientHello): a typed error with the hint once tls_handshake_timeout is over, long before
    the connect timeout."""

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the client gives up
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    options = SessionOptions(tls_ca=pems["ca"], tls_handshake_timeout=0.5, reconnect=False)
    session = AsyncSession(f"tcp://127.0.0.1:{port}", options=options, connect_timeout=10)
    loop = asyncio.get_running_loop()
    began = loop.time()
    try:
        with pytest.raises(TlsHandshakeError, match="is the broker listening for TLS") as error:
            await session.start()
    finally:
        server.close()
    assert error.value.reason == "timeout"
    assert "0.5 s" in str(error.value)
    assert loop.time() - began < 5


def test_the_handshake_bound_is_checked() -> None:
    assert SessionOptions().tls_handshake_timeout == 2.0
    with pytest.raises(UsageError, match="tls_handshake_timeout"):
        SessionOptions(tls_handshake_timeout=0)
