"""Admin commands, sans-I/O: ``pybmq.client.admin.AdminEngine`` against the simulator's broker
engine, bytes passed by hand. The simulator's documented subset, its errors and its bounds; the
engine's negotiation, heartbeats and bounds."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pybmq.client.admin import MAX_PENDING_COMMANDS, AdminEngine
from pybmq.client.options import Credential, SessionOptions
from pybmq.errors import (
    AuthenticationError,
    AuthenticationTimeoutError,
    BrokerError,
    ProtocolError,
    UsageError,
)
from pybmq.generated.wire_codec import EventType
from pybmq.sim.admin import COMMANDS, MAX_COMMAND_LENGTH
from pybmq.sim.auth import AuthConfig
from pybmq.sim.broker import Broker
from pybmq.sim.config import BrokerConfig, BrokerHooks
from pybmq.sim.queues import StoredMessage
from pybmq.sim.routing import RoutingMode
from pybmq.wire.control import HEARTBEAT_REQ_EVENT, HEARTBEAT_RSP_EVENT
from pybmq.wire.framing import EventReader, event_header_bytes

PRIORITY = "bmq://bmq.test.mem.priority/q"
FANOUT = "bmq://bmq.test.mem.fanout/f"


def ask(broker: Broker, *commands: str) -> list[str]:
    """Negotiate as an admin client and send ``commands``; their answers, in order."""
    engine = AdminEngine()
    session = broker.connect("admin-peer", 0.0)
    for command in commands:
        engine.command(command)
    answers = []
    for _ in range(10):
        session.receive_data(engine.data_to_send(), 0.0)
        answers += [a.text for a in engine.receive_data(session.data_to_send())]
        if not engine.pending:
            break
    assert engine.negotiated and not engine.pending
    return answers


def ask_json(broker: Broker, command: str) -> Any:
    (text,) = ask(broker, f"ENCODING JSON_COMPACT {command}")
    return json.loads(text)


def store(broker: Broker, uri: str, mode: RoutingMode, count: int, size: int = 10) -> None:
    queue = broker.store.get_or_create(uri, mode)
    for n in range(count):
        message = StoredMessage(bytes([0x40, n]) + bytes(14), b"", b"x" * size, False, 0, 0)
        queue.post(message)


@pytest.fixture
def broker() -> Broker:
    broker = Broker()
    store(broker, PRIORITY, RoutingMode.PRIORITY, 5)
    store(broker, FANOUT, RoutingMode.FANOUT, 3)
    return broker


def test_help_lists_every_supported_command(broker: Broker) -> None:
    (text,) = ask(broker, "help")
    assert all(command in text for command, _ in COMMANDS)
    document = ask_json(broker, "HELP")
    assert [c["command"] for c in document["help"]["commands"]] == [c for c, _ in COMMANDS]


def test_stat_show_lists_queues_per_app(broker: Broker) -> None:
    (text,) = ask(broker, "STAT SHOW")
    assert "puts 0" in text
    rows = [line.split() for line in text.splitlines()[2:]]
    assert [PRIORITY, "__default", "5", "0", "0", "5"] in rows
    assert {tuple(r[:3]) for r in rows if r[0] == FANOUT} == {
        (FANOUT, app, "3") for app in ("foo", "bar", "baz")
    }


def test_domain_infos_and_cluster_list(broker: Broker) -> None:
    info = ask_json(broker, "DOMAINS DOMAIN bmq.test.mem.priority INFOS")["domainInfo"]
    assert info["queueUris"] == [PRIORITY]
    assert json.loads(info["configJson"])["routing"] == "priority"
    (text,) = ask(broker, "domains domain bmq.test.mem.fanout infos")
    assert FANOUT in text and "fanout" in text
    clusters = ask_json(broker, "CLUSTERS LIST")["clusterList"]["clusters"]
    assert clusters == [{"locality": "local", "name": "pybmq-sim"}]


def test_list_and_purge_a_queue(broker: Broker) -> None:
    contents = ask_json(broker, "DOMAINS DOMAIN bmq.test.mem.priority QUEUE q LIST 1 2")
    contents = contents["queueContents"]
    assert contents["totalQueueMessages"] == 5 and contents["offset"] == 1
    assert [m["guid"][:4] for m in contents["messages"]] == ["4001", "4002"]
    assert all(m["sizeBytes"] == 10 for m in contents["messages"])
    purged = ask_json(broker, "DOMAINS DOMAIN bmq.test.mem.priority QUEUE q PURGE *")
    (details,) = [p["queue"] for p in purged["purgedQueues"]["queues"]]
    assert (details["numMessagesPurged"], details["numBytesPurged"]) == (5, 50)
    queue = broker.queue(PRIORITY)
    assert queue is not None and queue.pending_count() == 0
    assert (queue.held_messages, queue.held_bytes) == (0, 0)  # the quota is released


def test_purge_one_app_of_a_fanout_queue_then_the_domain(broker: Broker) -> None:
    (text,) = ask(broker, "DOMAINS DOMAIN bmq.test.mem.fanout QUEUE f PURGE bar")
    assert text == f"Purged 3 message(s) (30 bytes) from {FANOUT}, appId bar"
    queue = broker.queue(FANOUT)
    assert queue is not None
    assert [queue.pending_count(app) for app in ("foo", "bar", "baz")] == [3, 0, 3]
    purged = ask_json(broker, "DOMAINS DOMAIN bmq.test.mem.fanout PURGE")["purgedQueues"]
    assert [q["queue"]["numMessagesPurged"] for q in purged["queues"]] == [3, 0, 3]
    assert (
        ask(broker, "ENCODING JSON_PRETTY DOMAINS DOMAIN bmq.test.mem.fanout PURGE")[0].count("\n")
        > 3
    )


@pytest.mark.parametrize(
    ("command", "error"),
    [
        ("", "empty command"),
        ("BROKERCONFIG DUMP", "not supported by the simulator: BROKERCONFIG DUMP"),
        ("DOMAINS DOMAIN no.such INFOS", "domain 'no.such' does not exist"),
        ("DOMAINS DOMAIN bmq.test.mem.priority QUEUE nope PURGE *", "queue 'nope' not found"),
        ("DOMAINS DOMAIN bmq.test.mem.fanout QUEUE f PURGE qux", "has no appId 'qux'"),
        ("DOMAINS DOMAIN bmq.test.mem.priority QUEUE q LIST a b", "LIST needs integers"),
        ("ENCODING XML HELP", "ENCODING must be followed by one of TEXT, JSON_COMPACT"),
        ("HELP " + "x" * MAX_COMMAND_LENGTH, f"(at most {MAX_COMMAND_LENGTH})"),
    ],
)
def test_errors_are_error_results(broker: Broker, command: str, error: str) -> None:
    (text,) = ask(broker, command)
    assert text.startswith("Error: ") and error in text
    if not command.startswith("ENCODING") and len(command) < 100:  # too long: read as text
        assert error in ask_json(broker, command)["error"]["message"]


def test_refused_negotiation_is_a_broker_error() -> None:
    class Refuse(BrokerHooks):
        def refuse_negotiation(self, session: Any) -> str | None:
            return "no admins today"

    broker = Broker(hooks=Refuse())
    engine = AdminEngine()
    session = broker.connect("admin-peer", 0.0)
    session.receive_data(engine.data_to_send(), 0.0)
    with pytest.raises(BrokerError, match="no admins today"):
        engine.receive_data(session.data_to_send())


def test_engine_answers_heartbeats_and_bounds_what_it_holds() -> None:
    engine = AdminEngine()
    engine.data_to_send()  # the negotiation
    assert engine.receive_data(HEARTBEAT_REQ_EVENT) == []
    assert engine.data_to_send() == HEARTBEAT_RSP_EVENT
    for _ in range(MAX_PENDING_COMMANDS):
        engine.command("HELP")
    with pytest.raises(UsageError, match=f"at most {MAX_PENDING_COMMANDS}"):
        engine.command("HELP")
    with pytest.raises(ProtocolError, match="not a BlazingMQ broker"):
        AdminEngine().receive_data(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    with pytest.raises(ProtocolError, match="exceeds the maximum"):
        AdminEngine(max_event_size=1 << 20).receive_data(event_header_bytes(1, (1 << 20) + 8))


def test_authentication_first_and_commands_held_until_negotiated() -> None:
    broker = Broker(BrokerConfig(auth=AuthConfig(basic={"ops": "secret"}, anonymous=False)))
    good = SessionOptions(credential_provider=lambda: Credential("BASIC", b"ops:secret"))
    engine = AdminEngine(good)
    engine.command("HELP")
    data = engine.data_to_send()
    assert [e.type for e in EventReader().feed(data)] == [EventType.AUTHENTICATION]  # alone
    session = broker.connect("admin-peer", 0.0)
    answers: list[str] = []
    for _ in range(5):
        session.receive_data(data, 0.0)
        answers += [a.text for a in engine.receive_data(session.data_to_send())]
        data = engine.data_to_send()
    assert engine.authenticated and engine.negotiated and answers[0].startswith("Commands:")
    bad = SessionOptions(credential_provider=lambda: Credential("BASIC", b"ops:guess"))
    refused = AdminEngine(bad)
    session = broker.connect("admin-peer", 0.0)
    session.receive_data(refused.data_to_send(), 0.0)
    with pytest.raises(AuthenticationError, match="Invalid username or password"):
        refused.receive_data(session.data_to_send())


def test_the_engine_authenticates_again_before_the_lifetime_runs_out() -> None:
    """A 10 s lifetime: the engine authenticates again at 5 s (min(90 %, lifetime - 5 s)), the
    broker extends the credential, and the session outlives the first lifetime; a refused or
    unanswered re-authentication ends it."""
    config = AuthConfig(basic={"ops": "secret"}, anonymous=False, lifetime_ms=10_000)
    broker = Broker(BrokerConfig(auth=config, heartbeat_interval_ms=60_000))
    passwords = iter(["secret", "secret", "secret", "guess"])
    options = SessionOptions(
        credential_provider=lambda: Credential("BASIC", f"ops:{next(passwords)}".encode()),
        request_timeout=2.0,
    )
    engine = AdminEngine(options)
    session = broker.connect("admin-peer", 0.0)

    def exchange(now: float) -> list[str]:
        answers: list[str] = []
        for _ in range(5):
            session.receive_data(engine.data_to_send(), now)
            answers += [a.text for a in engine.receive_data(session.data_to_send(), now)]
        return answers

    engine.command("HELP")
    assert exchange(0.0)[0].startswith("Commands:")
    assert engine.authentications == 1 and engine.next_deadline() == 5.0
    engine.handle_timeout(5.0)  # due: the request goes out, its answer due within 2 s
    assert engine.next_deadline() == 7.0
    assert exchange(5.0) == [] and engine.authentications == 2
    assert engine.next_deadline() == 10.0
    session.on_timer(12.0)  # past the first lifetime (10 s): still open
    assert not session.closed
    engine.command("HELP")
    assert exchange(12.0)[0].startswith("Commands:")
    engine.handle_timeout(12.0)  # overdue since 10 s: authenticate now
    assert exchange(12.0) == [] and engine.authentications == 3
    engine.handle_timeout(17.0)  # the provider now gives a wrong password
    with pytest.raises(AuthenticationError, match="Invalid username or password"):
        exchange(17.0)
    silent = AdminEngine(
        SessionOptions(
            credential_provider=lambda: Credential("BASIC", b"ops:secret"), request_timeout=2.0
        )
    )
    silent.data_to_send()  # never answered
    assert silent.next_deadline() == 2.0
    silent.handle_timeout(1.0)
    with pytest.raises(AuthenticationTimeoutError, match="within 2s"):
        silent.handle_timeout(2.0)
