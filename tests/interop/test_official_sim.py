"""The official SDK against ``pybmq sim``: producer → consumer through the simulator.

Each side is an official-SDK process; the simulator runs in this process on an ephemeral port.
What is checked on the receiving side: every payload, every property with its type, the count,
and that every ACK was SUCCESS; on the broker side, that no protocol violation was logged.
"""

from __future__ import annotations

from typing import Any

from pybmq.sim.server import BrokerConfig, BrokerHooks, ThreadedBrokerSimulator
from pybmq.sim.session import ClientSession

from tests.interop.official import run_official, start_official

ALL_TYPES: dict[str, dict[str, Any]] = {
    "flag": {"type": "BOOL", "value": True},
    "letter": {"type": "CHAR", "value": b"A".hex()},
    "small": {"type": "SHORT", "value": -1234},
    "medium": {"type": "INT32", "value": 2_000_000_000},
    "large": {"type": "INT64", "value": -(2**40) - 7},
    "text": {"type": "STRING", "value": "héllo wörld"},
    "blob": {"type": "BINARY", "value": bytes(range(256)).hex()},
}


def messages(count: int, size: int = 100, properties: bool = True) -> list[dict[str, Any]]:
    """``count`` distinct messages; with ``properties``, every property type plus a sequence number."""
    out = []
    tag = "p" if properties else "n"
    for i in range(count):
        payload = (f"{tag}{size}-message {i} ".encode() * size)[:size]
        props = dict(ALL_TYPES, seq={"type": "INT32", "value": i}) if properties else {}
        out.append({"payload": payload.hex(), "properties": props})
    return out


def job(sim: ThreadedBrokerSimulator, queue: str, **extra: Any) -> dict[str, Any]:
    return {"broker": sim.url, "queue": queue, "timeout": 20, **extra}


def check_received(received: list[dict[str, Any]], sent: list[dict[str, Any]]) -> None:
    assert len(received) == len(sent)
    by_payload = {m["payload"]: m for m in received}
    for original in sent:
        got = by_payload[original["payload"]]
        assert got["properties"] == original["properties"]


def transfer(
    sim: ThreadedBrokerSimulator, queue: str, sent: list[dict[str, Any]], **producer: Any
) -> None:
    consumer = start_official("consume", job(sim, queue, count=len(sent)))
    consumer.wait_for("ready")
    produced = run_official("produce", job(sim, queue, messages=sent, **producer))
    assert produced.returncode == 0, produced.describe()
    acks = produced.of("ack")
    assert len(acks) == len(sent) and {a["status"] for a in acks} == {
        "SUCCESS"
    }, produced.describe()
    consumed = consumer.finish()
    assert consumed.returncode == 0, consumed.describe()
    check_received(consumed.of("message"), sent)
    assert sim.call(lambda b: list(b.stats.violations)) == []


def test_official_producer_to_official_consumer(bmq_sim: ThreadedBrokerSimulator) -> None:
    transfer(bmq_sim, "bmq://bmq.test.mem.priority/interop-props", messages(20))
    stats = bmq_sim.call(lambda b: (b.stats.puts, b.stats.acks, b.stats.confirms))
    assert stats == (20, 20, 20)


def test_official_with_zlib_compression(bmq_sim: ThreadedBrokerSimulator) -> None:
    # The SDK compresses only payloads above its threshold; 5000 bytes is well above it.
    sent = messages(5, size=5000) + messages(3, size=50, properties=False)
    transfer(bmq_sim, "bmq://bmq.test.mem.priority/interop-zlib", sent, compression="zlib")


def test_official_fanout_each_app_gets_every_message(bmq_sim: ThreadedBrokerSimulator) -> None:
    sent = messages(6)
    queue = "bmq://bmq.test.mem.fanout/interop-fanout"
    consumers = [
        start_official("consume", job(bmq_sim, f"{queue}?id={app}", count=6))
        for app in ("foo", "bar")
    ]
    for consumer in consumers:
        consumer.wait_for("ready")
    produced = run_official("produce", job(bmq_sim, queue, messages=sent))
    assert {a["status"] for a in produced.of("ack")} == {"SUCCESS"}, produced.describe()
    for consumer in consumers:
        result = consumer.finish()
        assert result.returncode == 0, result.describe()
        check_received(result.of("message"), sent)
    # baz had no consumer: its copies wait in the queue.
    assert bmq_sim.call(lambda b: b.queue(queue).pending_count("baz")) == 6  # type: ignore[union-attr]


def test_official_with_old_style_configure_queue_stream() -> None:
    """Without SUBSCRIPTIONS:CONFIGURE_STREAM advertised the SDK uses configureQueueStream."""
    with ThreadedBrokerSimulator(BrokerConfig(advertise_subscriptions=False)) as sim:
        transfer(sim, "bmq://bmq.test.mem.priority/interop-old-configure", messages(5))
        queue = "bmq://bmq.test.mem.fanout/interop-old-configure"
        consumer = start_official("consume", job(sim, f"{queue}?id=baz", count=3))
        consumer.wait_for("ready")
        produced = run_official("produce", job(sim, queue, messages=messages(3)))
        assert {a["status"] for a in produced.of("ack")} == {"SUCCESS"}, produced.describe()
        result = consumer.finish()
        assert result.returncode == 0, result.describe()
        check_received(result.of("message"), messages(3))
        assert sim.call(lambda b: list(b.stats.violations)) == []


def test_unconfirmed_messages_go_to_the_next_official_consumer(
    bmq_sim: ThreadedBrokerSimulator,
) -> None:
    queue = "bmq://bmq.test.mem.priority/interop-redelivery"
    sent = messages(8)
    produced = run_official("produce", job(bmq_sim, queue, messages=sent))
    assert {a["status"] for a in produced.of("ack")} == {"SUCCESS"}, produced.describe()
    # The first consumer takes everything, confirms nothing and goes away.
    first = run_official("consume", job(bmq_sim, queue, count=len(sent), confirm=False))
    assert first.returncode == 0 and len(first.of("message")) == len(sent), first.describe()
    second = run_official("consume", job(bmq_sim, queue, count=len(sent)))
    assert second.returncode == 0, second.describe()
    check_received(second.of("message"), sent)
    assert {m["guid"] for m in second.of("message")} == {m["guid"] for m in first.of("message")}
    assert bmq_sim.call(lambda b: (b.stats.redelivered, b.stats.confirms)) == (len(sent), len(sent))


def test_official_answers_heartbeats() -> None:
    """A session idle for many heartbeat intervals stays up: the SDK answers every request."""
    config = BrokerConfig(heartbeat_interval_ms=100, max_missed_heartbeats=3)
    with ThreadedBrokerSimulator(config) as sim:
        result = run_official(
            "consume", job(sim, "bmq://bmq.test.mem.priority/idle", count=0, linger=1.5)
        )
        assert result.returncode == 0, result.describe()
        assert not result.of("error")
        assert sim.call(lambda b: (b.stats.sessions, list(b.stats.violations))) == (1, [])


def test_official_sees_open_failure_for_an_unknown_domain(bmq_sim: ThreadedBrokerSimulator) -> None:
    result = run_official(
        "produce", job(bmq_sim, "bmq://bmq.test.mem.nosuch/q", messages=messages(1))
    )
    assert result.returncode == 1, result.describe()
    (error,) = result.of("error")
    assert "does not exist" in error["error"], result.describe()  # our status message reached it


def test_official_gets_nacks_with_their_status() -> None:
    class NackEveryOther(BrokerHooks):
        def __init__(self) -> None:
            self.count = 0

        def ack_status(
            self, session: ClientSession, queue_uri: str, guid: bytes, status: int
        ) -> int:
            self.count += 1
            return 6 if self.count % 2 == 0 else status  # 6 = STORAGE_FAILURE on the wire

    with ThreadedBrokerSimulator(hooks=NackEveryOther()) as sim:
        result = run_official(
            "produce", job(sim, "bmq://bmq.test.mem.priority/nacks", messages=messages(4))
        )
        assert result.returncode == 0, result.describe()
        assert (
            sorted(a["status"] for a in result.of("ack"))
            == ["STORAGE_FAILURE"] * 2 + ["SUCCESS"] * 2
        )
