"""Host health suspension reaches the broker as the official SDK's C++ core sends it: a reader
queue is configured with no subscription when the host turns unhealthy and with its options again
when it recovers (a writer-only queue sends nothing). The same program runs on the installed
official SDK and on compat through a recording relay; the broker's refusal gives the …Failed
events."""

from __future__ import annotations

import importlib
from types import ModuleType

import pybmq.compat as blazingmq
import pytest
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import EventType
from pybmq.sim.server import BrokerHooks, ThreadedBrokerSimulator
from pybmq.sim.session import ClientSession
from pybmq.uri import parse_broker_url
from pybmq.wire.control import decode_control_as

from tests.helpers.compat_scenarios import Recorder
from tests.helpers.wire_tap import WireTap

pytestmark = pytest.mark.timeout(120)
READER = "bmq://bmq.test.mem.priority/compat-health-r"
WRITER = "bmq://bmq.test.mem.priority/compat-health-w"


def _sdk(name: str) -> ModuleType:
    if name == "official":
        try:
            return importlib.import_module("blazingmq")
        except ImportError:
            pytest.skip("the official blazingmq package is not installed here")
    return blazingmq


def _configures(tap: WireTap, first: int) -> list[ctrl.ConfigureStream]:
    """The ConfigureStream requests the client sent from event ``first`` on."""
    out = []
    for event in tap.events()[first:]:
        if event.header.type == EventType.CONTROL:
            message = decode_control_as(event, ctrl.ControlMessage)[0]
            if message.configure_stream is not None:
                out.append(message.configure_stream)
    return out


def _consumers(configure: ctrl.ConfigureStream) -> list[tuple[int, int, int]]:
    return [
        (c.max_unconfirmed_messages, c.max_unconfirmed_bytes, c.consumer_priority)
        for s in configure.stream_parameters.subscriptions
        for c in s.consumers
    ]


@pytest.mark.parametrize("sdk_name", ["official", "compat"])
def test_suspension_and_resumption_on_the_wire(sdk_name: str, bmq_broker_url: str) -> None:
    sdk = _sdk(sdk_name)
    recorder = Recorder()
    monitor = sdk.BasicHealthMonitor()
    options = sdk.QueueOptions(
        max_unconfirmed_messages=7, consumer_priority=3, suspends_on_bad_host_health=True
    )
    with WireTap(*parse_broker_url(bmq_broker_url)) as tap:
        session = sdk.Session(
            recorder.on_event, recorder.on_message, broker=tap.url, host_health_monitor=monitor
        )
        try:
            session.open_queue(READER, read=True, options=options)
            session.open_queue(WRITER, write=True, options=options)
            before = len(tap.events())
            monitor.set_unhealthy()
            assert recorder.wait_count("<QueueSuspended", 2)
            with pytest.raises(sdk.Error, match="QUEUE_SUSPENDED"):
                session.post(WRITER, b"refused while suspended")
            suspended = _configures(tap, before)
            middle = len(tap.events())
            monitor.set_healthy()
            assert recorder.wait_count("<HostHealthRestored", 1)
            session.post(WRITER, b"accepted again")
            resumed = _configures(tap, middle)
        finally:
            session.stop()
    assert [_consumers(c) for c in suspended] == [[]]  # the reader only, with no subscription
    assert [_consumers(c) for c in resumed] == [[(7, 33554432, 3)]]
    events = [i for i in recorder.items if not i.startswith("message")]
    assert events[0] == "<Connected>"
    assert events[1] == "<HostUnhealthy>"
    assert sorted(events[2:4]) == sorted(f"<QueueSuspended: {uri}>" for uri in (READER, WRITER))
    assert sorted(events[4:6]) == sorted(f"<QueueResumed: {uri}>" for uri in (READER, WRITER))
    assert events[6:] == ["<HostHealthRestored>", "<Disconnected>"]


class SilentWhenAsked(BrokerHooks):
    """Answers nothing while ``silent`` is set: the broker does not take the request."""

    silent = False

    def outgoing(self, session: ClientSession, data: bytes) -> bytes:
        return b"" if self.silent else data


def test_a_refused_suspension_or_resumption_gives_the_failed_events() -> None:
    hooks = SilentWhenAsked()
    recorder = Recorder()
    monitor = blazingmq.BasicHealthMonitor()
    options = blazingmq.QueueOptions(suspends_on_bad_host_health=True)
    timeouts = blazingmq.Timeouts(configure_queue_timeout=0.5, disconnect_timeout=1.0)
    with ThreadedBrokerSimulator(hooks=hooks) as sim:
        session = blazingmq.Session(
            recorder.on_event,
            recorder.on_message,
            broker=sim.url,
            timeout=timeouts,
            host_health_monitor=monitor,
        )
        try:
            session.open_queue(READER, read=True, options=options)
            hooks.silent = True
            monitor.set_unhealthy()
            assert recorder.wait_count("<QueueSuspendFailed", 1)
            monitor.set_healthy()
            assert recorder.wait_count("<QueueResumeFailed", 1)
            assert recorder.wait_count("<HostHealthRestored", 1)
        finally:
            hooks.silent = False
            session.stop()
    failed = [i for i in recorder.items if "Failed" in i]
    assert [i.split(":")[0] for i in failed] == ["<QueueSuspendFailed", "<QueueResumeFailed"]
    assert all(READER in i for i in failed)
