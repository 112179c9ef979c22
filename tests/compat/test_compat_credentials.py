"""``authn_credential_provider=`` as the official SDK's pull request #61 defines it: a callable
returning ``(mechanism, data)`` or None, called for the first authentication and again for each
re-authentication. Against ``pybmq sim --auth`` (re-authenticating every second under a 6 s
lifetime) and the real broker with BASIC users (again after a broker restart, which makes the
session connect and authenticate anew); a provider with nothing to give never starts a session."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pybmq.compat as blazingmq
import pytest
from pybmq.client.options import Credential
from pybmq.compat.credentials import credential_provider
from pybmq.sim.auth import AuthConfig
from pybmq.sim.config import BrokerConfig
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.helpers.brokers import real_broker
from tests.helpers.cli import running_sim, sim_url

pytestmark = pytest.mark.timeout(120)

PASSWORD = "compat-provider-secret"
URI = "bmq://bmq.test.mem.priority/compat-provider"


class Counting:
    """A provider that counts its calls and hands out ``answer``."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self) -> Any:
        with self.lock:
            self.calls += 1
        return self.answer


class Events:
    def __init__(self) -> None:
        self.items: list[str] = []
        self.messages: list[bytes] = []
        self.changed = threading.Condition()

    def on_event(self, event: Any) -> None:
        with self.changed:
            self.items.append(type(event).__name__)
            self.changed.notify_all()

    def on_message(self, message: Any, handle: Any) -> None:
        handle.confirm()
        with self.changed:
            self.messages.append(message.data)
            self.changed.notify_all()

    def wait(self, predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
        with self.changed:
            return self.changed.wait_for(predicate, timeout)


def raising() -> tuple[str, bytes]:
    raise RuntimeError("token service down")


def test_the_provider_takes_what_the_pull_request_takes(caplog: pytest.LogCaptureFixture) -> None:
    good = credential_provider(lambda: ("BASIC", b"alice:pw"))
    assert good is not None and good() == Credential("BASIC", b"alice:pw")
    assert credential_provider(None) is None
    bad_ones: list[Callable[[], Any]] = [
        lambda: None,
        lambda: "BASIC alice:pw",
        lambda: ("BASIC", "alice:pw"),
        lambda: (1, b"x"),
        lambda: ("BASIC", b"x", "extra"),
        lambda: ["BASIC", b"x"],
        lambda: ("", b"x"),
        raising,
    ]
    with caplog.at_level(logging.ERROR, logger="pybmq.compat"):
        for bad in bad_ones:
            adapted = credential_provider(bad)
            assert adapted is not None and adapted() is None
    assert sum("authentication credential callback" in r.message for r in caplog.records) == 7
    assert "token service down" not in caplog.text.split("Traceback")[0]
    with pytest.raises(TypeError, match="callable"):
        credential_provider(5)  # type: ignore[arg-type]


def test_session_options_carry_it_in_the_pull_requests_place() -> None:
    def provider() -> tuple[str, bytes]:
        return ("BASIC", b"x")

    options = blazingmq.SessionOptions(None, None, None, provider)
    assert options.authn_credential_provider is provider
    assert options == blazingmq.SessionOptions(authn_credential_provider=provider)
    assert options != blazingmq.SessionOptions(authn_credential_provider=lambda: None)
    assert "authn_credential_provider=" in repr(options)
    assert blazingmq.SessionOptions().authn_credential_provider is None
    assert "authn_credential_provider" not in repr(blazingmq.SessionOptions())


@pytest.fixture
def sim_with_auth(tmp_path: Path) -> Iterator[str]:
    """``pybmq sim --auth BASIC:FILE --auth-lifetime-ms 6000`` as a user starts it: clients must
    authenticate, and again every second (the C++ rule: min(90 %, lifetime - 5 s))."""
    users = tmp_path / "users"
    users.write_text(f"alice:{PASSWORD}\n")
    with running_sim("--auth", f"BASIC:{users}", "--auth-lifetime-ms", "6000") as line:
        yield sim_url(line)


def test_first_authentication_and_each_reauthentication_against_pybmq_sim_auth(
    sim_with_auth: str,
) -> None:
    provider = Counting(("BASIC", f"alice:{PASSWORD}".encode()))
    events = Events()
    with blazingmq.Session(
        events.on_event,
        on_message=events.on_message,
        broker=sim_with_auth,
        authn_credential_provider=provider,
    ) as session:
        session.open_queue(URI, read=True, write=True)
        session.post(URI, b"first")
        assert events.wait(lambda: events.messages == [b"first"])
        began = provider.calls
        deadline = time.monotonic() + 20
        while provider.calls < began + 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert provider.calls >= began + 2  # re-authenticated twice, asking each time
        session.post(URI, b"after re-authenticating")
        assert events.wait(lambda: len(events.messages) == 2)
    assert events.items == ["Connected", "Disconnected"]  # never dropped


def test_with_options_and_a_provider_with_nothing_to_give() -> None:
    auth = AuthConfig(basic={"alice": PASSWORD}, anonymous=False)
    with ThreadedBrokerSimulator(BrokerConfig(auth=auth)) as sim:
        good = Counting(("BASIC", f"alice:{PASSWORD}".encode()))
        options = blazingmq.SessionOptions(authn_credential_provider=good)
        with blazingmq.Session.with_options(lambda e: None, None, sim.url, options):
            assert good.calls == 1
        empty = Counting(None)
        timeouts = blazingmq.Timeouts(connect_timeout=1.5)
        began = time.monotonic()
        with pytest.raises(blazingmq.exceptions.BrokerTimeoutError, match="TIMEOUT"):
            blazingmq.Session(
                lambda e: None, broker=sim.url, timeout=timeouts, authn_credential_provider=empty
            )
        assert time.monotonic() - began < 10
        assert empty.calls >= 2  # asked again on every attempt


def test_the_real_broker_first_and_after_a_restart() -> None:
    with real_broker(basic_users={"alice": PASSWORD}) as broker:
        provider = Counting(("BASIC", f"alice:{PASSWORD}".encode()))
        events = Events()
        with blazingmq.Session(
            events.on_event,
            on_message=events.on_message,
            broker=broker.url,
            authn_credential_provider=provider,
        ) as session:
            session.open_queue(URI, read=True, write=True)
            session.post(URI, b"before")
            assert events.wait(lambda: events.messages == [b"before"])
            assert provider.calls == 1
            broker.restart()  # the session reconnects, so it authenticates again
            assert events.wait(lambda: "StateRestored" in events.items, 60)
            assert provider.calls >= 2
            session.post(URI, b"after")
            assert events.wait(lambda: b"after" in events.messages)
        wrong = Counting(("BASIC", b"alice:wrong"))
        with pytest.raises(blazingmq.exceptions.BrokerTimeoutError):
            blazingmq.Session(
                lambda e: None,
                broker=broker.url,
                timeout=blazingmq.Timeouts(connect_timeout=2.0),
                authn_credential_provider=wrong,
            )
        assert wrong.calls >= 1
