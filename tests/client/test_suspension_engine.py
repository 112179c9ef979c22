"""Host-health suspension in the engine, bytes only: what goes on the wire when the host turns
unhealthy and healthy again, across a reconnect, and against a user configure in flight."""

from __future__ import annotations

import pytest
from pybmq.client.engine import ClientEngine
from pybmq.client.events import (
    HostHealthRestored,
    HostUnhealthy,
    OperationCompleted,
    QueueResumed,
    QueueSuspended,
    StateRestored,
)
from pybmq.client.fsm import HealthState
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.errors import QueueSuspendedError
from pybmq.generated import bmqp_ctrlmsg as ctrl

from tests.helpers.engine import broker_response, control, reply, sent_events

URI = "bmq://bmq.test.mem.priority/suspension"
SENSITIVE = QueueOptions(suspends_on_bad_host_health=True, max_unconfirmed_messages=9)


def configures(engine: ClientEngine, answer: bool = True) -> list[list[ctrl.Subscription]]:
    """The subscriptions of each ConfigureStream the engine sent (answered unless told not)."""
    out = []
    for event in sent_events(engine):
        request = control(event)
        if answer:
            reply(engine, request)
        if request.configure_stream is not None:
            out.append(list(request.configure_stream.stream_parameters.subscriptions))
    return out


def engine_with_reader(reconnect: bool = False) -> tuple[ClientEngine, int]:
    engine = ClientEngine(SessionOptions(reconnect=reconnect))
    engine.start(0.0)
    engine.connection_made(0.0)
    engine.data_to_send()
    engine.receive_data(broker_response(), 0.0)
    _op, queue_id = engine.open_queue(URI, 0.0, read=True, write=True, options=SENSITIVE)
    reply(engine, control(sent_events(engine)[0]))
    configures(engine)
    engine.next_events()
    return engine, queue_id


def test_suspend_sends_no_subscription_and_resume_sends_the_options_again() -> None:
    engine, queue_id = engine_with_reader()
    engine.set_host_health(False, 1.0)
    assert configures(engine) == [[]]
    events = engine.next_events()
    assert [type(e) for e in events] == [HostUnhealthy, QueueSuspended]
    with pytest.raises(QueueSuspendedError):
        engine.post(queue_id, b"x", 1.0)
    engine.set_host_health(True, 2.0)
    [subscriptions] = configures(engine)
    assert subscriptions[0].consumers[0].max_unconfirmed_messages == 9
    assert [type(e) for e in engine.next_events()] == [QueueResumed, HostHealthRestored]
    engine.post(queue_id, b"x", 2.0)


def test_a_user_configure_in_flight_goes_first() -> None:
    engine, queue_id = engine_with_reader()
    op_id = engine.configure_queue(queue_id, SENSITIVE, 1.0)
    engine.set_host_health(False, 1.0)
    # Only the user's configure is out; the suspension follows its answer.
    assert len(configures(engine, answer=True)) == 1
    assert configures(engine) == [[]]
    events = engine.next_events()
    assert OperationCompleted(op_id) in events
    assert any(isinstance(e, QueueSuspended) for e in events)


def test_reconnect_while_suspended_reopens_with_no_subscription_then_resumes() -> None:
    engine, queue_id = engine_with_reader(reconnect=True)
    engine.set_host_health(False, 1.0)
    configures(engine, answer=False)  # the suspend request is lost with the connection
    engine.connection_lost(2.0)
    assert engine.queues[queue_id].health is HealthState.SUSPENDED
    engine.connection_made(3.0)
    engine.data_to_send()
    engine.receive_data(broker_response(), 3.0)
    reply(engine, control(sent_events(engine)[0]))  # reopen
    assert configures(engine) == [[]]  # reopened suspended
    events = engine.next_events()
    assert any(isinstance(e, StateRestored) for e in events)
    assert sum(isinstance(e, QueueSuspended) for e in events) == 1
    engine.set_host_health(True, 4.0)
    [subscriptions] = configures(engine)
    assert len(subscriptions) == 1
    assert any(isinstance(e, HostHealthRestored) for e in engine.next_events())


def test_configured_insensitive_while_suspended_resumes_at_once() -> None:
    engine, queue_id = engine_with_reader()
    engine.set_host_health(False, 1.0)
    configures(engine)
    engine.next_events()
    engine.configure_queue(queue_id, QueueOptions(max_unconfirmed_messages=4), 2.0)
    [subscriptions] = configures(engine)  # the resume, with the new options
    assert subscriptions[0].consumers[0].max_unconfirmed_messages == 4
    events = engine.next_events()
    assert any(isinstance(e, QueueResumed) and e.error is None for e in events)
    assert engine.queues[queue_id].health is HealthState.ACTIVE
    assert not engine.queues[queue_id].options.suspends_on_bad_host_health
    # Still unhealthy: no HostHealthRestored until the monitor says healthy.
    assert not any(isinstance(e, HostHealthRestored) for e in events)
    engine.set_host_health(True, 3.0)
    assert configures(engine) == []
    assert [type(e) for e in engine.next_events()] == [HostHealthRestored]
