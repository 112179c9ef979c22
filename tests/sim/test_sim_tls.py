"""The simulator's TLS as the broker's TLS listener behaves: TLS 1.3 only whatever the versions
list says, no client certificate asked for unless configured, TLS from the first byte (a plain
client is refused before any negotiation), a TLS listener beside the plain one (kept across a
restart), and certificate files that cannot be read refused before it listens (``pybmq sim``
names the flag)."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.errors import SessionStoppedError, TlsHandshakeError, UsageError
from pybmq.sim.server import BrokerSimulator, SimulatorError
from pybmq.sim.tls import ignored_versions, security_settings, server_tls_context
from pybmq.testing.certificates import TestCertificates

from tests.helpers.cli import running_sim

pytestmark = [pytest.mark.timeout(60), pytest.mark.tls]

URI = "bmq://bmq.test.mem.priority/sim-tls"


@pytest.fixture
def certificates(tmp_path: Path) -> TestCertificates:
    return TestCertificates.make(tmp_path / "certs")


def served(certificates: TestCertificates, **values: object) -> ssl.SSLContext:
    return server_tls_context(
        str(certificates.certificate), str(certificates.key), **values  # type: ignore[arg-type]
    )


async def tls_version_of(url: str, client: ssl.SSLContext) -> str | None:
    host, port = url.removeprefix("tcp://").split(":")
    _, writer = await asyncio.open_connection(host, int(port), ssl=client)
    version = writer.get_extra_info("ssl_object").version()
    writer.close()
    return version  # type: ignore[no-any-return]


def client_context(certificates: TestCertificates) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certificates.ca))


@pytest.mark.parametrize("versions", ["TLSv1.3", "TLSv1.2", "TLSv1.2, TLSv1.3\tTLSv1.1"])
async def test_tls_1_3_only_whatever_the_versions_list_says(
    certificates: TestCertificates, versions: str
) -> None:
    async with BrokerSimulator(tls=served(certificates, versions=versions)) as sim:
        assert await tls_version_of(sim.url, client_context(certificates)) == "TLSv1.3"
        old = client_context(certificates)
        old.maximum_version = ssl.TLSVersion.TLSv1_2
        with pytest.raises((ssl.SSLError, ConnectionError)):  # refused, or hung up on
            await tls_version_of(sim.url, old)
        options = SessionOptions(tls=old, reconnect=False)
        with pytest.raises(TlsHandshakeError) as error:
            await AsyncSession(sim.url, options=options).start()
        assert error.value.reason == "handshake"
    assert ignored_versions(versions) == [v for v in ("TLSv1.2", "TLSv1.1") if v in versions]


async def test_no_client_certificate_is_asked_for_unless_configured(
    certificates: TestCertificates, tmp_path: Path
) -> None:
    without_cert = SessionOptions(tls_ca=str(certificates.ca), reconnect=False)
    async with BrokerSimulator(tls=served(certificates)) as sim:
        session = AsyncSession(sim.url, options=without_cert)
        await session.start()
        await session.stop()
    required = served(certificates, client_ca=str(certificates.ca))
    async with BrokerSimulator(tls=required) as sim:
        with pytest.raises(SessionStoppedError):
            async with AsyncSession(sim.url, options=without_cert):
                pass


async def test_a_plain_client_is_refused_before_negotiating(
    certificates: TestCertificates,
) -> None:
    async with BrokerSimulator(tls=served(certificates)) as sim:
        with pytest.raises(SessionStoppedError, match="during negotiation"):
            await AsyncSession(sim.url, options=SessionOptions(reconnect=False)).start()
        assert sim.broker.stats.sessions == 0  # the handshake failed: no session began


async def test_a_tls_listener_beside_the_plain_one_across_a_restart(
    certificates: TestCertificates,
) -> None:
    options = SessionOptions(tls_ca=str(certificates.ca))
    async with BrokerSimulator(tls=served(certificates), tls_port=0) as sim:
        assert sim.tls_port != sim.port
        ports = (sim.port, sim.tls_port)
        async with (
            AsyncSession(sim.url) as plain,
            AsyncSession(sim.tls_url, options=options) as secure,
        ):
            writer = await plain.open_queue(URI, write=True)
            reader = await secure.open_queue(URI, read=True)
            assert (await writer.post(b"plain to tls")).ok
            assert (await asyncio.wait_for(reader.get(), 10)).payload == b"plain to tls"
        await sim.restart()
        assert (sim.port, sim.tls_port) == ports
        async with AsyncSession(sim.tls_url, options=options):
            pass


async def test_a_tls_port_needs_a_context() -> None:
    with pytest.raises(UsageError, match="tls_port"):
        BrokerSimulator(tls_port=0)
    async with BrokerSimulator() as sim:
        with pytest.raises(SimulatorError, match="no TLS"):
            _ = sim.tls_url


def test_unreadable_certificate_files_stop_it_before_it_listens(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.pem")
    with pytest.raises(UsageError, match="cannot load TLS files"):
        server_tls_context(missing, missing)
    with pytest.raises(UsageError, match="cannot load TLS files"):
        security_settings(tls_cert=missing, tls_key=missing)
    unreadable = tmp_path / "garbage.pem"
    unreadable.write_text("not a certificate\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pybmq.cli",
            "sim",
            "--port",
            "0",
            "--tls-cert",
            str(unreadable),
            "--tls-key",
            str(unreadable),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "--tls-cert" in result.stderr and "Traceback" not in result.stderr


def test_pybmq_sim_tls_port_prints_both_listeners(certificates: TestCertificates) -> None:
    served = ["--tls-cert", str(certificates.certificate), "--tls-key", str(certificates.key)]
    with running_sim("--tls-port", "0", *served, "--tls-versions", "TLSv1.2,TLSv1.3") as line:
        assert line.startswith("pybmq sim listening on tcp://127.0.0.1:")
        assert " and TLS on tcp://127.0.0.1:" in line
    lone = subprocess.run(
        [sys.executable, "-m", "pybmq.cli", "sim", "--tls-port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert lone.returncode == 2 and "--tls-port needs --tls-cert" in lone.stderr
