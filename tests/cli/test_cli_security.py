"""``pybmq post`` and ``consume`` with ``--auth``/``--auth-file`` and ``--tls-ca`` against a
simulator that requires both (subprocesses, loopback)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from pybmq.sim.auth import AuthConfig
from pybmq.sim.config import BrokerConfig
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.sim.tls import server_tls_context

pytestmark = pytest.mark.timeout(120)

QUEUE = "bmq://bmq.test.mem.priority/cli-security"
SECRET = "cli-secret-never-printed"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_pem, key_pem, ca_pem = tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "ca.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_pem))
    cert.private_key_pem.write_to_path(str(key_pem))
    ca.cert_pem.write_to_path(str(ca_pem))
    users = tmp_path / "users"
    users.write_text(f"dave:{SECRET}\n")
    material = tmp_path / "material"
    material.write_text(f"dave:{SECRET}\n")
    config = BrokerConfig(auth=AuthConfig(basic={"dave": SECRET}, anonymous=False))
    tls = server_tls_context(str(cert_pem), str(key_pem))
    with ThreadedBrokerSimulator(config, tls=tls) as sim:
        yield sim.url, ca_pem, material


def pybmq(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pybmq.cli", *args],
        capture_output=True,
        text=True,
        timeout=90,
    )


def test_post_and_consume_with_auth_and_tls(secured: tuple[str, Path, Path]) -> None:
    url, ca, material = secured
    flags = ["--broker", url, "--auth", "BASIC", "--auth-file", str(material), "--tls-ca", str(ca)]
    posted = pybmq("post", QUEUE, "--count", "50", "--quiet", *flags)
    assert posted.returncode == 0, posted.stderr
    assert "ACKed 50, NACKed 0" in posted.stdout
    consumed = pybmq("consume", QUEUE, "--count", "50", "--quiet", *flags)
    assert consumed.returncode == 0, consumed.stderr
    assert "received 50, confirmed 50" in consumed.stdout
    for output in (posted, consumed):
        assert SECRET not in output.stdout + output.stderr


def test_wrong_material_fails_without_printing_it(
    secured: tuple[str, Path, Path], tmp_path: Path
) -> None:
    url, ca, _ = secured
    wrong = tmp_path / "wrong"
    wrong.write_text("dave:not-" + SECRET)
    flags = ["--broker", url, "--auth", "BASIC", "--auth-file", str(wrong), "--tls-ca", str(ca)]
    result = pybmq("post", QUEUE, "--quiet", *flags)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert result.returncode == 3  # the CLI's connection/broker failure exit code
    assert "authentication refused" in output and SECRET not in output
