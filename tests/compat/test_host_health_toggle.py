"""A BasicHealthMonitor toggled fast gives the official SDK's alternating sequence, and a session
without ``on_message`` takes health changes without a traceback (issue 28)."""

from __future__ import annotations

import time

import pybmq.compat as blazingmq
import pytest
from pybmq.sim.server import ThreadedBrokerSimulator

from tests.helpers.compat_scenarios import Recorder

pytestmark = pytest.mark.timeout(60)
QUEUE = "bmq://bmq.test.mem.priority/compat-health-toggle"
EXPECTED = [
    "<Connected>",
    "<HostUnhealthy>",
    "<HostHealthRestored>",
    "<HostUnhealthy>",
    "<HostHealthRestored>",
    "<Disconnected>",
]


def _kinds(items: list[str]) -> list[str]:
    return [i.split(":")[0].split(" ")[0].rstrip(">") + ">" for i in items if i.startswith("<")]


@pytest.mark.parametrize("sensitive_writer", [False, True])
@pytest.mark.parametrize("run", range(3))
def test_fast_toggle_alternates_and_no_on_message_is_fine(
    sensitive_writer: bool, run: int, capfd: pytest.CaptureFixture[str]
) -> None:
    del run
    recorder = Recorder()
    monitor = blazingmq.BasicHealthMonitor()
    with ThreadedBrokerSimulator() as sim:
        session = blazingmq.Session(recorder.on_event, broker=sim.url, host_health_monitor=monitor)
        if sensitive_writer:  # no on_message: a reader cannot be opened
            session.open_queue(
                QUEUE,
                write=True,
                options=blazingmq.QueueOptions(suspends_on_bad_host_health=True),
            )
        monitor.set_unhealthy()
        monitor.set_healthy()
        monitor.set_unhealthy()
        monitor.set_healthy()
        deadline = time.monotonic() + 10
        while _kinds(recorder.items).count("<HostHealthRestored>") < 2:
            assert time.monotonic() < deadline, recorder.items
            time.sleep(0.01)
        session.stop()
    kinds = [k for k in _kinds(recorder.items) if k in EXPECTED]
    assert kinds == EXPECTED, recorder.items
    err = capfd.readouterr().err
    assert "Traceback" not in err and "AssertionError" not in err
