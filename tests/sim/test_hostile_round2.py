"""Hostile clients, round 2, against the simulator's engine (no sockets): a subscription that
must not take a queue down, delivery that costs the work done, bounded inflation of a bomb."""

from __future__ import annotations

import time
import zlib

import pytest
from pybmq.generated.wire_codec import AckStatus, CompressionAlgorithmType
from pybmq.sim.broker import Broker
from pybmq.sim.config import BrokerConfig
from pybmq.sim.expressions import ExpressionError, compile_expression
from pybmq.sim.queues import MAX_INFLATED_PROPERTIES, StoredMessage
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
