"""The simulator's queue semantics, without any wire: priority, round-robin, flow control, fan-out,
broadcast, redelivery."""

from __future__ import annotations

from pybmq.sim.queues import Consumer, SimQueue, StoredMessage
from pybmq.sim.routing import RoutingMode, routing_mode
from pybmq.uri import parse_queue_uri


def msg(n: int, size: int = 10) -> StoredMessage:
    return StoredMessage(n.to_bytes(16, "big"), b"", b"x" * size, False, 0, 0)


def consumer(owner: str, priority: int = 0, messages: int = 100, size: int = 1 << 20) -> Consumer:
    return Consumer(owner, 0, 0, priority, messages, size)


def attach(queue: SimQueue, c: Consumer, app: str = "__default") -> Consumer:
    queue.streams[app].attach(c)
    return c


def owners(deliveries: list[tuple[Consumer, StoredMessage]]) -> list[object]:
    return [c.owner for c, _ in deliveries]


def pairs(runs: list[tuple[Consumer, list[StoredMessage]]]) -> list[tuple[Consumer, StoredMessage]]:
    """``SimQueue.deliver()``'s runs of (consumer, messages) as (consumer, message) pairs."""
    return [(c, m) for c, messages in runs for m in messages]


def test_uri_and_domain_rules() -> None:
    uri = parse_queue_uri("bmq://bmq.test.mem.fanout/orders?id=foo")
    assert uri is not None
    assert (uri.domain, uri.queue, uri.app_id, uri.canonical) == (
        "bmq.test.mem.fanout",
        "orders",
        "foo",
        "bmq://bmq.test.mem.fanout/orders",
    )
    assert parse_queue_uri("http://x/y") is None
    assert parse_queue_uri("bmq://domain-only") is None
    assert routing_mode("bmq.test.mem.priority") is RoutingMode.PRIORITY
    assert routing_mode("my.broadcast") is RoutingMode.BROADCAST
    assert routing_mode("bmq.test.mem.unknown") is None
    assert routing_mode("bmq.test.persistent.fanout.sc") is RoutingMode.FANOUT
    assert routing_mode("bmq.test.sc") is None


def test_round_robin_among_highest_priority_only() -> None:
    q = SimQueue.create("bmq://d.priority/q", RoutingMode.PRIORITY)
    attach(q, consumer("low", priority=1))
    attach(q, consumer("a", priority=5))
    attach(q, consumer("b", priority=5))
    out = []
    for n in range(4):
        out += q.post(msg(n))
    assert owners(out) == ["a", "b", "a", "b"]


def test_flow_control_holds_messages_until_confirm() -> None:
    q = SimQueue.create("bmq://d.priority/q", RoutingMode.PRIORITY)
    c = attach(q, consumer("a", messages=2))
    delivered = [d for n in range(5) for d in q.post(msg(n))]
    assert len(delivered) == 2 and q.pending_count() == 3
    assert c.confirm(msg(0).guid)
    assert not c.confirm(msg(0).guid)  # already confirmed
    assert [m.guid for _, m in pairs(q.deliver())] == [msg(2).guid]


def test_byte_limit_and_paused_consumer() -> None:
    q = SimQueue.create("bmq://d.priority/q", RoutingMode.PRIORITY)
    c = attach(q, consumer("a", size=25))
    out = [d for n in range(4) for d in q.post(msg(n, size=10))]
    assert len(out) == 3  # 0, 10, 20 bytes outstanding were each below 25
    paused = attach(q, consumer("p", priority=9, messages=0))
    assert not paused.active and q.deliver() == []
    assert c.unconfirmed_bytes == 30


def test_lower_priority_gets_nothing_while_higher_is_full() -> None:
    q = SimQueue.create("bmq://d.priority/q", RoutingMode.PRIORITY)
    attach(q, consumer("high", priority=2, messages=1))
    attach(q, consumer("low", priority=1))
    out = [d for n in range(3) for d in q.post(msg(n))]
    assert owners(out) == ["high"] and q.pending_count() == 2


def test_unconfirmed_messages_go_to_the_next_consumer_in_order() -> None:
    q = SimQueue.create("bmq://d.priority/q", RoutingMode.PRIORITY)
    first = attach(q, consumer("first", priority=2))
    attach(q, consumer("second", priority=1))
    for n in range(3):
        q.post(msg(n))
    first.confirm(msg(1).guid)
    q.streams["__default"].detach(first)
    out = pairs(q.deliver())
    assert owners(out) == ["second", "second"]
    assert [m.guid for _, m in out] == [msg(0).guid, msg(2).guid]


def test_fanout_copies_per_app_and_broadcast_stores_nothing() -> None:
    fan = SimQueue.create("bmq://d.fanout/q", RoutingMode.FANOUT)
    attach(fan, consumer("foo"), "foo")
    attach(fan, consumer("baz"), "baz")
    out = fan.post(msg(1))
    assert sorted(owners(out)) == ["baz", "foo"] and fan.pending_count("bar") == 1

    cast = SimQueue.create("bmq://d.broadcast/q", RoutingMode.BROADCAST)
    assert cast.post(msg(1)) == []  # nobody listening: gone
    attach(cast, consumer("a"))
    attach(cast, consumer("b"))
    assert sorted(owners(cast.post(msg(2)))) == ["a", "b"]
    assert cast.pending_count() == 0


def test_duplicate_guid_is_not_stored_twice() -> None:
    q = SimQueue.create("bmq://d.priority/q", RoutingMode.PRIORITY)
    q.post(msg(7))
    q.post(msg(7))
    assert q.pending_count() == 1 and q.duplicates == 1
