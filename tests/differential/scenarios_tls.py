"""The differential catalogue's TLS cases: a broker with a plain and a TLS listener (the
simulator's ``tls_port``; the real broker built from upstream's TLS pull request,
``$BMQ_BROKER_TLS_BIN``), each case what a client observes: messages over TLS, from the plain
listener to the TLS one, the TLS version served (1.3, whatever the configured list says), a TLS
1.2 client refused, no client certificate needed, and the refusals (a plain client on the TLS
port, a TLS client on the plain one, a CA that did not sign the certificate, another host name).
Registered into ``SCENARIOS`` when imported (``test_differential`` imports it)."""

from __future__ import annotations

import asyncio
import ssl
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.errors import PybmqError, TlsHandshakeError
from pybmq.testing.certificates import TestCertificates

from tests.differential.scenarios import BROKERS, PRIORITY, WAIT, Outcome, Scenario, scenario


class TlsUrl(str):
    """The plain listener's URL, as every scenario gets one, carrying the TLS listener's URL and
    the PEM file of the CA that signed the broker's certificate."""

    tls_url: str
    tls_ca: str


@asynccontextmanager
async def tls_broker(kind: str, versions: str = "TLSv1.3") -> AsyncIterator[str]:
    """A fresh broker of ``kind`` with a TLS listener beside its plain one, serving
    ``versions`` (its tlsConfig.versions) and certificates made for it."""
    with tempfile.TemporaryDirectory(prefix="pybmq-diff-tls-") as folder:
        made = TestCertificates.make(Path(folder) / "certs")
        if kind == "real":
            from pybmq.testing.broker_config import TlsListener
            from pybmq.testing.brokers import NO_TLS_BROKER_REASON
            from pybmq.testing.real_broker import RealBroker, broker_executable, free_port

            executable = broker_executable(tls=True)
            if executable is None:
                pytest.skip(NO_TLS_BROKER_REASON)
            listener = TlsListener(free_port(), made.ca, made.certificate, made.key, versions)
            with RealBroker(executable, Path(folder) / "broker", tls=listener) as real:
                yield _url(real.url, real.tls_url, made)
            return
        from pybmq.sim.server import BrokerSimulator
        from pybmq.sim.tls import server_tls_context

        context = server_tls_context(str(made.certificate), str(made.key), versions=versions)
        async with BrokerSimulator(tls=context, tls_port=0) as sim:
            yield _url(sim.url, sim.tls_url, made)


def _url(plain: str, secure: str, made: TestCertificates) -> TlsUrl:
    url = TlsUrl(plain)
    url.tls_url, url.tls_ca = secure, str(made.ca)
    return url


def tls_scenario(versions: str = "TLSv1.3") -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        BROKERS[fn.__name__] = lambda kind: tls_broker(kind, versions)
        return scenario(fn)

    return register


def _tls(url: str) -> TlsUrl:
    assert isinstance(url, TlsUrl), "a TLS scenario runs on tls_broker"
    return url


def trusting(url: TlsUrl, **values: object) -> SessionOptions:
    return SessionOptions(tls_ca=url.tls_ca, reconnect=False, **values)  # type: ignore[arg-type]


async def start_outcome(url: str, options: SessionOptions) -> dict[str, object]:
    """Start a session: "ok", or the error's type (a TLS one with its reason)."""
    try:
        async with AsyncSession(url, options=options):
            return {"start": "ok"}
    except TlsHandshakeError as exc:
        return {"start": "TlsHandshakeError", "reason": exc.reason}
    except PybmqError as exc:
        return {"start": type(exc).__name__}


async def negotiated_version(url: str, context: ssl.SSLContext) -> str:
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, int(port), ssl=context, server_hostname="localhost"), WAIT
        )
    except (ssl.SSLError, ConnectionError):
        return "refused"
    version = str(writer.get_extra_info("ssl_object").version())
    writer.close()
    return version


def client_context(url: TlsUrl, maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=url.tls_ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if maximum is not None:
        context.maximum_version = maximum
    return context


@tls_scenario()
async def tls_messages_over_the_tls_listener(url: str) -> Outcome:
    secure = _tls(url)
    async with AsyncSession(secure.tls_url, options=trusting(secure)) as session:
        queue = await session.open_queue(PRIORITY, read=True, write=True)
        statuses = {(await queue.post(b"t%d" % n)).status.name for n in range(10)}
        got = []
        for _ in range(10):
            message = await asyncio.wait_for(queue.get(), WAIT)
            got.append(message.payload.decode())
            await message.confirm()
    return {"acks": sorted(statuses), "received": got}


@tls_scenario()
async def tls_plain_listener_to_tls_listener(url: str) -> Outcome:
    secure = _tls(url)
    async with (
        AsyncSession(secure) as plain,
        AsyncSession(secure.tls_url, options=trusting(secure)) as tls,
    ):
        reader = await tls.open_queue(PRIORITY, read=True)
        writer = await plain.open_queue(PRIORITY, write=True)
        for n in range(5):
            await writer.post(b"p%d" % n)
        got = [(await asyncio.wait_for(reader.get(), WAIT)).payload.decode() for _ in range(5)]
    return got


async def versions_served(secure: TlsUrl) -> dict[str, str]:
    """What a client offering TLS 1.2 and 1.3 gets, and one offering 1.2 only."""
    return {
        "default_client": await negotiated_version(secure.tls_url, client_context(secure)),
        "tls_1_2_client": await negotiated_version(
            secure.tls_url, client_context(secure, ssl.TLSVersion.TLSv1_2)
        ),
    }


@tls_scenario()
async def tls_version_served(url: str) -> Outcome:
    secure = _tls(url)
    only_1_2 = client_context(secure, ssl.TLSVersion.TLSv1_2)
    return {
        **await versions_served(secure),
        "pybmq_tls_1_2": await start_outcome(
            secure.tls_url, SessionOptions(tls=only_1_2, reconnect=False)
        ),
    }


@tls_scenario(versions="TLSv1.2,TLSv1.3")
async def tls_versions_list_naming_1_2_still_serves_1_3_only(url: str) -> Outcome:
    return await versions_served(_tls(url))


@tls_scenario()
async def tls_no_client_certificate_needed(url: str) -> Outcome:
    secure = _tls(url)
    return await start_outcome(secure.tls_url, trusting(secure))


@tls_scenario()
async def tls_plain_client_on_the_tls_port(url: str) -> Outcome:
    secure = _tls(url)
    return await start_outcome(secure.tls_url, SessionOptions(reconnect=False))


@tls_scenario()
async def tls_client_on_the_plain_port(url: str) -> Outcome:
    """Refused within the handshake bound, with the hint (the real broker says nothing, so the
    bound ends it; the simulator hangs up: the reason differs, what a user reads does not)."""
    secure = _tls(url)
    began = time.monotonic()
    try:
        await AsyncSession(secure, options=trusting(secure)).start()
    except TlsHandshakeError as exc:
        return {
            "error": "TlsHandshakeError",
            "hint": "is the broker listening for TLS?" in str(exc),
            "within_3_s": time.monotonic() - began < 3.0,
        }
    return {"error": None}


@tls_scenario()
async def tls_a_ca_that_did_not_sign_the_certificate(url: str) -> Outcome:
    secure = _tls(url)
    other = TestCertificates.make(Path(secure.tls_ca).parent.parent / "other")
    return await start_outcome(
        secure.tls_url, SessionOptions(tls_ca=str(other.ca), reconnect=False)
    )


@tls_scenario()
async def tls_another_host_name(url: str) -> Outcome:
    secure = _tls(url)
    return await start_outcome(
        secure.tls_url, trusting(secure, tls_server_name="elsewhere.example")
    )
