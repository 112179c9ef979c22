"""``RealBroker``'s process handling, first with stand-ins (no broker needed): a typed error that
names the console output when the executable exits or never listens, SIGTERM escalating to
SIGKILL; then, when ``$BMQ_BROKER_BIN`` names one, the real broker: a session through it, a crash
that file-backed queues survive and in-memory ones do not, and BASIC authentication."""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest
from pybmq.client.options import Credential, SessionOptions
from pybmq.client.sync import Session
from pybmq.errors import AuthenticationError, PybmqError
from pybmq.testing.brokers import BrokerUnavailable, running_broker
from pybmq.testing.real_broker import BROKER_BIN_ENV, BrokerStartError, RealBroker

pytestmark = pytest.mark.timeout(120)

FAKE = Path(__file__).with_name("fake_broker.py")


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fake-bmqbrkr"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_an_executable_that_exits_is_a_typed_error_naming_its_output(tmp_path: Path) -> None:
    broker = RealBroker(_script(tmp_path, "echo 'cannot read config' ; exit 3"), tmp_path / "b")
    with pytest.raises(BrokerStartError) as info:
        broker.start()
    text = str(info.value)
    assert "exited with status 3" in text and str(broker.console) in text
    assert "cannot read config" in text and str(broker.settings.logs) in text


def test_an_executable_that_never_listens_is_killed_after_the_bound(tmp_path: Path) -> None:
    broker = RealBroker(_script(tmp_path, "exec sleep 60"), tmp_path / "b", start_timeout=0.5)
    began = time.monotonic()
    with pytest.raises(BrokerStartError, match=r"did not listen on 127\.0\.0\.1"):
        broker.start()
    assert time.monotonic() - began < 10
    assert not broker.running


def test_missing_executable_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(BrokerStartError, match="could not be run"):
        RealBroker(tmp_path / "nothing-here", tmp_path / "b").start()


@pytest.mark.parametrize("ignore_term", [False, True])
def test_start_stop_kill_restart_on_the_same_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ignore_term: bool
) -> None:
    if ignore_term:
        monkeypatch.setenv("IGNORE_TERM", "1")
    fake = _script(tmp_path, f'exec "{sys.executable}" "{FAKE}" "$@"')
    with RealBroker(fake, stop_timeout=1.0) as broker:
        folder, port, first = broker.folder, broker.port, broker.pid
        assert broker.running and broker.url == f"tcp://127.0.0.1:{port}"
        broker.kill()
        assert not broker.running and broker.pid is None
        broker.start()
        assert broker.port == port and broker.pid != first
        began = time.monotonic()
        broker.restart()  # SIGTERM; ignored -> SIGKILL after stop_timeout
        assert broker.running and time.monotonic() - began < 8
    assert not broker.running and not folder.exists()


def test_a_port_taken_before_the_broker_listens_is_picked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under pytest-xdist another process may take the port RealBroker picked before its broker
    listens: it picks another and starts again; a port it was given is not changed."""
    import socket

    import pybmq.testing.real_broker as real_broker

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    picks = iter([port])
    pick = real_broker.free_port
    monkeypatch.setattr(real_broker, "free_port", lambda: next(picks, None) or pick())
    fake = _script(tmp_path, f'exec "{sys.executable}" "{FAKE}" "$@"')
    try:
        with RealBroker(fake, tmp_path / "own") as broker:
            assert broker.running and broker.port != port
        with pytest.raises(BrokerStartError, match="exited with status 6"):
            RealBroker(fake, tmp_path / "given", port=port).start()
    finally:
        taken.close()


def test_real_kind_without_an_executable_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BROKER_BIN_ENV, raising=False)
    with pytest.raises(BrokerUnavailable, match=BROKER_BIN_ENV), running_broker("real"):
        pass
    with running_broker("auto") as broker:
        assert broker.kind == "sim" and broker.sim is not None and not broker.is_real


# -- the real broker ------------------------------------------------------------------------------

PERSISTENT = "bmq://bmq.test.persistent.priority/crash"
IN_MEMORY = "bmq://bmq.test.mem.priority/crash"


def _post(url: str, uri: str, payloads: list[bytes]) -> None:
    with Session(url) as session:
        queue = session.open_queue(uri, write=True)
        assert all(queue.post(p).ok for p in payloads)


def _drain(url: str, uri: str, expect: int, wait: float = 5.0) -> list[bytes]:
    """Everything the queue delivers within ``wait`` s (or until one more than ``expect``)."""
    got: list[bytes] = []
    with Session(url) as session:
        queue = session.open_queue(uri, read=True)
        deadline = time.monotonic() + wait
        while len(got) <= expect and (left := deadline - time.monotonic()) > 0:
            try:
                message = queue.get(timeout=min(0.5 if len(got) >= expect else left, left))
            except TimeoutError:
                if len(got) >= expect:
                    break
                continue
            got.append(message.payload)
            queue.confirm(message)
    return got


def test_file_backed_queue_survives_a_crash_in_memory_does_not(
    bmq_real_broker: RealBroker,
) -> None:
    url = bmq_real_broker.url
    _post(url, PERSISTENT, [b"p-%d" % i for i in range(10)])
    _post(url, IN_MEMORY, [b"m-%d" % i for i in range(10)])
    bmq_real_broker.kill()
    bmq_real_broker.start()
    assert _drain(url, PERSISTENT, 10) == [b"p-%d" % i for i in range(10)]
    assert _drain(url, IN_MEMORY, 0, wait=1.0) == []


def _basic(user: str, password: str) -> SessionOptions:
    return SessionOptions(
        credential_provider=lambda: Credential("BASIC", f"{user}:{password}".encode())
    )


@pytest.mark.bmq_broker(basic_users={"alice": "S3cret"})
def test_basic_authentication_right_wrong_missing(bmq_real_broker: RealBroker) -> None:
    url = bmq_real_broker.url
    with Session(url, options=_basic("alice", "S3cret")) as session:
        queue = session.open_queue(IN_MEMORY, write=True)
        assert queue.post(b"x").ok
    with pytest.raises(AuthenticationError), Session(url, options=_basic("alice", "wrong")):
        pass
    with pytest.raises(PybmqError), Session(url):
        pass


def test_executable_from_the_environment_is_what_runs(bmq_real_broker: RealBroker) -> None:
    assert bmq_real_broker.executable == os.environ[BROKER_BIN_ENV]
    assert bmq_real_broker.log_files(), "the broker writes its log under the test folder"


def test_free_ports_are_picked_below_the_ephemeral_range() -> None:
    """Outgoing connections take their source ports from the kernel's ephemeral range: a port
    picked there could be taken before the broker listens (under pytest-xdist, by another
    worker's client), so free_port picks below it."""
    from pybmq.testing.real_broker import PICK_FROM, _ephemeral_start, free_port

    ports = {free_port() for _ in range(20)}
    assert all(PICK_FROM <= port < _ephemeral_start() for port in ports)
    assert len(ports) > 1  # picked at random: parallel pickers rarely meet
