"""Hostile clients, round 2, against the simulator's engine (no sockets): a subscription that
must not take a queue down, delivery that costs the work done, bounded inflation of a bomb."""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trustme
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import AckStatus, CompressionAlgorithmType
from pybmq.printable import escape_controls
from pybmq.sim import admin
from pybmq.sim.auth import (
    BACKOFF_MAX_S,
    FREE_FAILURES,
    REAUTH_BURST,
    AuthConfig,
    AuthThrottle,
    SessionAuth,
)
from pybmq.sim.broker import Broker
from pybmq.sim.config import BrokerConfig
from pybmq.sim.expressions import ExpressionError, compile_expression
from pybmq.sim.queues import MAX_INFLATED_PROPERTIES, StoredMessage
from pybmq.sim.routing import RoutingMode
from pybmq.sim.server import BrokerSimulator
from pybmq.sim.tls import server_tls_context
from pybmq.wire.expressions import ExpressionLimits, check_limits, complexity
from pybmq.wire.properties import MessageProperties

from tests.sim.test_sim_engine import PRIORITY, broker, failure, guid, peer

__all__ = ["broker"]  # the fixture, used by name

CHAIN = "||".join(["x"] * 1365)  # 4,093 characters: accepted by the old simulator


def test_the_broker_limits_are_counted_as_the_broker_counts() -> None:
    assert complexity("x > 1 && y < 2") == (5, 2)  # >, &&, <, and each property reference
    assert complexity("exists(x) && !flag") == (4, 2)
    assert complexity("!" * 11 + "x") == (12, 1)  # upstream's own "too many operators (12)"
    check_limits("a == 1 && b == 2 && c == 3")  # 8 operators: within
    with pytest.raises(ExpressionError, match="too complex") as too_complex:
        compile_expression(
            "a == 1 && b == 2 && c == 3 && d == 4", BrokerConfig().subscription_limits
        )
    assert too_complex.value.code == "e_TOO_COMPLEX"
    with pytest.raises(ExpressionError, match="too long") as too_long:
        compile_expression("x == " + "1" * 130, BrokerConfig().subscription_limits)
    assert too_long.value.code == "e_TOO_LONG"


def test_a_huge_subscription_is_refused_and_the_queue_stays_up(broker: Broker) -> None:
    producer, attacker, legit = peer(broker), peer(broker), peer(broker)
    producer.producer(PRIORITY)
    attacker.open(PRIORITY, 1, 2)
    for text in (CHAIN, "!" * 4000 + "x", "(" * 2000 + "x" + ")" * 2000):
        category, message = failure(attacker.configure(1, expression=text))
        assert category == "E_INVALID_ARGUMENT" and "too long" in message
        assert len(message) < 200  # no echo, no traceback
    legit.consumer(PRIORITY, expression="x == 1")
    for n in range(5):
        producer.put(0, n, properties=MessageProperties({"x": 1}))
    assert producer.acks() == [(AckStatus.SUCCESS, guid(n)) for n in range(5)]
    assert len(legit.pushes()) == 5
    assert not producer.session.closed and broker.stats.internal_errors == 0


def test_evaluation_never_raises_even_without_limits() -> None:
    """A simulator configured without the broker's limits still parses and evaluates deep
    expressions without an exception escaping into the data plane."""
    with pytest.raises(ExpressionError, match="too complex"):
        compile_expression("(" * 2000 + "x" + ")" * 2000)
    deep = compile_expression("!" * 900 + "x")  # parses, may be too deep to evaluate
    assert deep({"x": True}) in (True, False)
    chain = compile_expression(CHAIN)
    assert chain({"x": False}) is False  # 1,365 levels: false, not RecursionError


def test_lenient_limits_are_configurable(broker: Broker) -> None:
    lenient = Broker(BrokerConfig(subscription_limits=ExpressionLimits(4096, 4096, 4096)))
    producer, attacker, legit = peer(lenient), peer(lenient), peer(lenient)
    producer.producer(PRIORITY)
    attacker.consumer(PRIORITY, expression=CHAIN, priority=5)
    legit.consumer(PRIORITY, expression="exists(x)")
    producer.put(0, 1, properties=MessageProperties({"x": True}))
    producer.put(0, 2, properties=MessageProperties({"x": False}))
    assert [a[0] for a in producer.acks()] == [AckStatus.SUCCESS] * 2
    received = [p.guid for p in attacker.pushes()] + [p.guid for p in legit.pushes()]
    assert sorted(received) == [guid(1), guid(2)]
    assert not producer.session.closed and lenient.stats.internal_errors == 0


def test_delivery_examines_each_message_once(broker: Broker) -> None:
    """A waiting backlog is not rescanned on every PUT: evaluations grow with the messages
    posted, not with messages x backlog (the old simulator evaluated ~N^2/2)."""
    producer, picky = peer(broker), peer(broker)
    producer.producer(PRIORITY)
    picky.consumer(PRIORITY, expression="x == 1")
    queue = broker.queue(PRIORITY)
    assert queue is not None
    (consumer,) = queue.streams["__default"].consumers
    calls = 0
    inner = consumer.matches
    assert inner is not None

    def counting(props: object) -> bool:
        nonlocal calls
        calls += 1
        return inner(props)  # type: ignore[arg-type,no-any-return]

    consumer.matches = counting
    for n in range(2000):  # nobody matches these: they wait
        producer.put(0, n, properties=MessageProperties({"x": 2}))
    assert calls == 2000 and queue.pending_count() == 2000
    producer.put(0, 5000, properties=MessageProperties({"x": 1}))
    assert calls == 2001 and [p.guid for p in picky.pushes()] == [guid(5000)]
    # A new subscription re-examines the backlog once.
    other = peer(broker)
    other.consumer(PRIORITY, s_id=2, expression="x == 2", messages=10)
    assert len(other.pushes()) == 10
    other.confirm(1, *range(10))
    assert len(other.pushes()) == 10


def _old_format_bomb(claimed_area: int, inflated: int) -> bytes:
    """Old-format application data (properties compressed with the payload): a header that
    claims a ``claimed_area``-byte properties area, then zeros up to ``inflated`` bytes."""
    header = MessageProperties({"x": 1}).encode(extended=False)
    words = claimed_area // 4
    first = int.from_bytes(header[:4], "big")
    first = (first & ~0xFFFF) | (words & 0xFFFF) if claimed_area else first
    packer = zlib.compressobj(9)
    out = [packer.compress(first.to_bytes(4, "big") + header[4:])]
    chunk = bytes(1 << 20)
    left = inflated
    while left > 0:
        out.append(packer.compress(chunk[: min(left, len(chunk))]))
        left -= len(chunk)
    out.append(packer.flush())
    return b"".join(out)


def test_a_zlib_bomb_costs_a_subscription_check_its_properties_only() -> None:
    bomb = _old_format_bomb(0, 64 << 20)  # a real small header, then 64 MiB of zeros
    started = time.perf_counter()
    for n in range(16):
        message = StoredMessage(guid(n), b"", bomb, True, CompressionAlgorithmType.ZLIB, 0)
        assert message.property_values() == {"x": 1}
    assert time.perf_counter() - started < 1.0  # the old code inflated 16 x 64 MiB
    assert MAX_INFLATED_PROPERTIES <= 1 << 20


# -- admin commands ------------------------------------------------------------------------------


def test_an_ordinary_client_that_sends_an_admin_command_is_disconnected(broker: Broker) -> None:
    producer, intruder = peer(broker), peer(broker)  # both negotiated as E_TCPCLIENT
    producer.producer(PRIORITY)
    producer.put(0, *range(100))
    assert len(producer.acks()) == 100
    command = ctrl.AdminCommand(command="DOMAINS DOMAIN bmq.test.mem.priority QUEUE q PURGE *")
    intruder.send(intruder.encode(ctrl.ControlMessage(r_id=1, admin_command=command)))
    assert intruder.session.closed and "not an admin connection" in str(
        intruder.session.close_reason
    )
    assert broker.queue(PRIORITY).pending_count() == 100  # type: ignore[union-attr]


def _session(broker: Broker, client_type: ctrl.ClientType, user: str | None) -> Any:
    identity = ctrl.ClientIdentity(client_type=client_type)
    auth = SimpleNamespace(principal=user)
    return SimpleNamespace(broker=broker, client_identity=identity, auth=auth)


def test_admin_users_is_the_authorization_rule() -> None:
    broker = Broker(BrokerConfig(admin_users=frozenset({"ops"})))
    request = ctrl.AdminCommand(command="CLUSTERS LIST")
    allowed = admin.handle_request(_session(broker, ctrl.ClientType.E_TCPADMIN, "ops"), request)
    assert allowed.admin_command_response.text == "pybmq-sim (local)"  # type: ignore[union-attr]
    refused = admin.handle_request(_session(broker, ctrl.ClientType.E_TCPADMIN, "bob"), request)
    assert "not authorized" in refused.admin_command_response.text  # type: ignore[union-attr]
    with pytest.raises(ProtocolError, match="not an admin connection"):
        admin.handle_request(_session(broker, ctrl.ClientType.E_TCPCLIENT, "ops"), request)


def test_list_is_paged_and_answers_are_bounded() -> None:
    broker = Broker()
    queue = broker.store.get_or_create(PRIORITY, RoutingMode.PRIORITY)
    for n in range(5000):
        queue.store(StoredMessage(guid(n), b"", b"x", False, 0, 0))
    text = admin.answer(
        broker,
        "ENCODING JSON_COMPACT DOMAINS DOMAIN bmq.test.mem.priority QUEUE q LIST 0 unlimited",
    )
    contents = json.loads(text)["queueContents"]
    assert len(contents["messages"]) == admin.MAX_LIST_MESSAGES
    assert contents["totalQueueMessages"] == 5000
    text = admin.answer(
        broker, "ENCODING JSON_COMPACT DOMAINS DOMAIN bmq.test.mem.priority QUEUE q LIST 4500 1000"
    )
    assert len(json.loads(text)["queueContents"]["messages"]) == 500
    assert len(admin.answer(broker, "HELP " * 800)) <= admin.MAX_ANSWER_SIZE


def test_control_characters_are_escaped_in_answers() -> None:
    broker = Broker()
    text = admin.answer(broker, "BOGUS\x00\x1b[2J")
    assert "\x00" not in text and "\x1b" not in text and "\\x1b[2J" in text
    assert escape_controls("a\x1b]0;owned\x07b\nc") == "a\\x1b]0;owned\\x07b\nc"


# -- authentication ------------------------------------------------------------------------------


def _auth(
    auth: SessionAuth, data: bytes, now: float, throttle: AuthThrottle | None = None
) -> tuple[bool, str]:
    response, ok = auth.answer(
        ctrl.AuthenticationRequest(mechanism="BASIC", data=data), now, throttle, "10.0.0.1"
    )
    assert response.authentication_response is not None
    return ok, response.authentication_response.status.message


def test_wrong_guesses_from_one_host_back_off() -> None:
    config = AuthConfig(basic={"alice": "right"}, anonymous=False)
    throttle = AuthThrottle()
    for n in range(FREE_FAILURES):
        assert _auth(SessionAuth(config), b"alice:wrong", n * 0.001, throttle)[0] is False
    assert throttle.blocked_for("10.0.0.1", "alice", 0.01) == 0.0
    _auth(SessionAuth(config), b"alice:wrong", 0.01, throttle)  # earns the first backoff
    ok, message = _auth(SessionAuth(config), b"alice:right", 0.02, throttle)
    assert not ok and "retry in" in message  # unchecked while blocked
    assert throttle.blocked_for("10.0.0.2", "alice", 0.02) == 0.0  # other hosts are not affected
    later = 0.02 + BACKOFF_MAX_S
    assert _auth(SessionAuth(config), b"alice:right", later, throttle)[0] is True
    assert throttle.blocked_for("10.0.0.1", "alice", later) == 0.0  # a success resets it


def test_another_users_failures_never_lock_a_user_out() -> None:
    config = AuthConfig(basic={"alice": "right", "mallory": "m"}, anonymous=False)
    throttle = AuthThrottle()
    for n in range(50):  # far past the free failures, from alice's own host
        assert _auth(SessionAuth(config), b"mallory:guess", n * 0.01, throttle)[0] is False
        assert _auth(SessionAuth(config), b"alice:right", n * 0.01 + 0.005, throttle)[0] is True
    assert throttle.blocked_for("10.0.0.1", "mallory", 0.5) > 0


def test_attempts_refused_during_a_backoff_do_not_extend_it() -> None:
    config = AuthConfig(basic={"alice": "right"}, anonymous=False)
    throttle = AuthThrottle()
    for _ in range(FREE_FAILURES + 1):
        _auth(SessionAuth(config), b"alice:wrong", 0.0, throttle)
    announced = throttle.blocked_for("10.0.0.1", "alice", 0.0)
    assert announced > 0
    for n in range(100):  # a client reconnecting into the block, wrong or right
        ok, message = _auth(SessionAuth(config), b"alice:right", n * announced / 200, throttle)
        assert not ok and "retry in" in message
    # Once the announced backoff has passed, the right password is accepted.
    assert _auth(SessionAuth(config), b"alice:right", announced + 0.001, throttle)[0] is True


def test_reauthentication_keeps_its_principal_and_is_rate_limited() -> None:
    config = AuthConfig(basic={"alice": "a", "bob": "b"}, anonymous=False, lifetime_ms=60_000)
    auth = SessionAuth(config)
    assert _auth(auth, b"alice:a", 0.0)[0]
    ok, message = _auth(auth, b"bob:b", 1.0)
    assert not ok and "different principal" in message
    storm = SessionAuth(config)
    results = [_auth(storm, b"alice:a", 5.0 + n * 0.001)[0] for n in range(REAUTH_BURST + 1)]
    assert all(results[:REAUTH_BURST]) and not results[-1]


def test_refusals_echo_nothing_of_the_material() -> None:
    config = AuthConfig(basic={"alice": "a"}, anonymous=False)
    code, message = config.check("BASIC", b"KEYID-1234:secret")
    assert code and "KEYID" not in message and "secret" not in message
    code, message = config.check("X" * 60_000, b"")
    assert code and len(message) < 200


# -- TLS handshakes and the connection cap -------------------------------------------------------


async def test_stalled_tls_handshakes_time_out_and_the_cap_holds(tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert_pem, key_pem, ca_pem = tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "ca.pem"
    cert.cert_chain_pems[0].write_to_path(str(cert_pem))
    cert.private_key_pem.write_to_path(str(key_pem))
    ca.cert_pem.write_to_path(str(ca_pem))
    config = BrokerConfig(tls_handshake_timeout_ms=300, max_connections=5)
    tls = server_tls_context(str(cert_pem), str(key_pem))
    async with BrokerSimulator(config, tls=tls) as sim:
        stalled = [await asyncio.open_connection(sim.host, sim.port) for _ in range(8)]
        await asyncio.sleep(0.1)
        assert sim._open_connections() == 5  # handshakes in progress count
        assert sim.broker.stats.refused_connections == 3
        for reader, writer in stalled:  # all closed: at the deadline, or as over the cap
            assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
        await asyncio.sleep(1.0)  # past the handshake timeout and its margin
        assert sim._open_connections() == 0
        options = SessionOptions(tls_ca=str(ca_pem))
        async with AsyncSession(sim.url, options=options) as client:  # served again
            await client.open_queue("bmq://bmq.test.mem.priority/tls", write=True)
