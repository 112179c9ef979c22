"""Authentication and TLS of the simulator as users start it: ``pybmq sim`` flags (as a
subprocess) and the pytest plugin's ``bmq_sim`` marker."""

from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from pybmq.client.options import Credential, SessionOptions
from pybmq.client.sync import Session
from pybmq.errors import AuthenticationError, SessionStoppedError, UsageError
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.sim.tls import security_settings

pytestmark = pytest.mark.timeout(60)

USERS = Path(tempfile.mkdtemp(prefix="pybmq-auth-")) / "users"  # the marker needs it at import
# Every process that imports this module makes the folder (each pytest-xdist worker collects it,
# one runs the fixture that removes it): the others remove theirs on exit.
atexit.register(shutil.rmtree, USERS.parent, True)
QUEUE = "bmq://bmq.test.mem.priority/security"


def basic(user: str, password: str) -> SessionOptions:
    return SessionOptions(
        credential_provider=lambda: Credential("BASIC", f"{user}:{password}".encode())
    )


@pytest.fixture(scope="module", autouse=True)
def users_file() -> object:
    USERS.write_text("carol:open-sesame\n")
    yield
    shutil.rmtree(USERS.parent)


@pytest.mark.bmq_sim(auth=[f"BASIC:{USERS}"], auth_lifetime_ms=60000)
def test_marker_configures_the_fixture(bmq_sim: ThreadedBrokerSimulator) -> None:
    with Session(bmq_sim.url, options=basic("carol", "open-sesame")) as session:
        queue = session.open_queue(QUEUE, write=True)
        assert queue.post(b"x").ok
    with pytest.raises(AuthenticationError):
        Session(bmq_sim.url, options=basic("carol", "nope")).start()
    with pytest.raises(SessionStoppedError, match="authentication"):
        Session(bmq_sim.url, options=SessionOptions(request_timeout=5)).start()


def test_settings_are_checked() -> None:
    with pytest.raises(UsageError):
        security_settings(tls_cert="only-cert.pem")
    with pytest.raises(UsageError):
        security_settings(auth_lifetime_ms=1000)
    assert security_settings() == (None, None)


def test_cli_flags() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0", "--auth", f"BASIC:{USERS}"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.rsplit(" ", 1)[-1].strip()
        assert url.startswith("tcp://"), line
        with Session(url, options=basic("carol", "open-sesame")) as session:
            assert session.open_queue(QUEUE, write=True).post(b"y").ok
        with pytest.raises(AuthenticationError, match="Invalid username or password"):
            Session(url, options=basic("carol", "wrong")).start()
    finally:
        process.terminate()
        process.wait(30)
