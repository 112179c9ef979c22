"""Fault injection in the simulator's broker engine (sans-I/O: bytes and a clock we pass)."""

from __future__ import annotations

import pytest
from pybmq.errors import UsageError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import AckStatus, EventType
from pybmq.sim.broker import Broker
from pybmq.sim.config import BrokerConfig
from pybmq.sim.faults import FaultConfig, FaultInjector
from pybmq.sim.queues import SimQueue, StoredMessage
from pybmq.sim.routing import RoutingMode
from pybmq.wire.control import HEARTBEAT_REQ_EVENT

from tests.sim.test_sim_engine import PEERS, PRIORITY, Peer, guid, peer


def faulty_broker(**faults: object) -> tuple[Broker, FaultInjector]:
    PEERS.clear()
    injector = FaultInjector(FaultConfig(**faults))  # type: ignore[arg-type]
    return (
        Broker(BrokerConfig(heartbeat_interval_ms=1000, max_missed_heartbeats=3), injector),
        injector,
    )


def test_drop_after_n_events_closes_the_connection_each_time() -> None:
    broker, injector = faulty_broker(drop_after_events=3)
    p = peer(broker)  # event 1: the ClientIdentity
    p.producer(PRIORITY)  # event 2
    p.send(HEARTBEAT_REQ_EVENT)  # event 3: dropped after it is handled
    assert p.session.closed and p.session.close_reason == "fault injection: connection dropped"
    assert injector.dropped == 1
    q = peer(broker)
    q.producer(PRIORITY)
    assert not q.session.closed  # the count is per connection


def test_random_drops_are_reproducible_with_a_seed_and_capped() -> None:
    def run() -> list[bool]:
        broker, injector = faulty_broker(drop_probability=0.5, seed=11, max_drops=3)
        closed = []
        for _ in range(10):
            p = peer(broker)
            for _ in range(3):
                p.send(HEARTBEAT_REQ_EVENT)
            closed.append(injector.dropped)
        return closed

    first = run()
    assert first == run()
    assert first[-1] == 3


def test_nack_share_and_ack_delay() -> None:
    broker, injector = faulty_broker(nack_share=1.0, ack_delay_ms=500)
    p = peer(broker)
    p.producer(PRIORITY)
    p.send(_put_event(1), now=1.0)
    assert p.acks() == []  # held back
    assert broker.next_deadline() == pytest.approx(1.5)
    broker.on_timer(1.5)
    p.pump()
    assert p.acks() == [(AckStatus.STORAGE_FAILURE, guid(1))]
    assert injector.nacked == 1


def test_silent_heartbeats_and_refused_negotiation() -> None:
    broker, _ = faulty_broker(answer_heartbeats=False)
    p = peer(broker)
    p.send(HEARTBEAT_REQ_EVENT)
    assert p.take(EventType.HEARTBEAT_RSP) == []
    broker.on_timer(
        1.5
    )  # silent for more than one interval: a broker would probe; this one does not
    p.pump()
    assert p.take(EventType.HEARTBEAT_REQ) == []

    broker, _ = faulty_broker(refuse_negotiation=True)
    q = Peer(broker)
    PEERS[id(q.session)] = q
    response = q.negotiate()
    assert response.result.category == ctrl.StatusCategory.E_REFUSED
    assert q.session.closed


def test_invalid_fault_configs() -> None:
    for kwargs in (
        {"drop_after_events": 0},
        {"drop_probability": 2.0},
        {"nack_share": -0.1},
        {"ack_delay_ms": -1},
    ):
        with pytest.raises(UsageError):
            FaultConfig(**kwargs)  # type: ignore[arg-type]


def test_dedup_window_acks_a_retransmission_and_expires() -> None:
    queue = SimQueue.create(PRIORITY, RoutingMode.PRIORITY)
    message = StoredMessage(guid(1), b"", b"x", False, 0, 0)
    queue.post(message, now=0.0, dedup_window=10.0)
    assert queue.post(message, now=5.0, dedup_window=10.0) == []
    assert (queue.posted, queue.duplicates) == (1, 1)
    queue.post(StoredMessage(guid(2), b"", b"y", False, 0, 0), now=20.0, dedup_window=10.0)
    assert len(queue._seen) == 1  # guid(1) left the window: memory stays bounded
    queue.post(message, now=21.0, dedup_window=10.0)
    assert queue.posted == 3  # outside the window it is a new message


def _put_event(n: int) -> bytes:
    from pybmq.wire.put import PutEventBuilder

    builder = PutEventBuilder()
    builder.add(0, b"payload", guid=guid(n), ack_requested=True)
    (event,) = builder.finish()
    return event
