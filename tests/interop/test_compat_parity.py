"""The same programs on the official SDK and on ``pybmq.compat``: everything observable must match.

Each scenario of ``tests/compat_scenarios.py`` (written against the official API only) runs twice
in subprocesses, once with ``blazingmq`` and once with ``pybmq.compat`` imported as the SDK,
against one ``pybmq sim`` in this process; the two JSON reports — event sequences and reprs,
exception types and messages, received payloads and property types, callback-thread facts — must
be equal, and the simulator must have seen no protocol violation from either.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pybmq.sim.server import BrokerHooks, ThreadedBrokerSimulator
from pybmq.sim.session import ClientSession

from tests.helpers import compat_scenarios
from tests.helpers.compat_scenarios import SCENARIOS

SCENARIOS_FILE = Path(compat_scenarios.__file__)

pytestmark = pytest.mark.timeout(180)


class NackNamedQueues(BrokerHooks):
    """Queues named ``...-nack-<code>`` get every post NACKed with that wire status code; the
    broker's answer to anything about a queue named ``...-hang-...`` is lost."""

    def outgoing(self, session: ClientSession, data: bytes) -> bytes:
        return b"" if b"-hang-" in data else data

    def ack_status(self, session: ClientSession, queue_uri: str, guid: bytes, status: int) -> int:
        if "-nack-" in queue_uri:
            return int(queue_uri.rsplit("-", 1)[1])
        return status


@pytest.fixture
def sim() -> Iterator[ThreadedBrokerSimulator]:
    with ThreadedBrokerSimulator(hooks=NackNamedQueues()) as simulator:
        yield simulator


def run_scenario(module: str, scenario: str, url: str, tag: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(SCENARIOS_FILE), module, scenario, url, tag],
        capture_output=True,
        text=True,
        timeout=120,
    )
    reports = [line[2:] for line in done.stdout.splitlines() if line.startswith("@@")]
    assert (
        done.returncode == 0 and len(reports) == 1
    ), f"{module} {scenario}: rc={done.returncode}\nstdout:{done.stdout[-2000:]}\nstderr:{done.stderr[-3000:]}"
    return json.loads(reports[0])  # type: ignore[no-any-return]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_behaviour_as_the_official_sdk(sim: ThreadedBrokerSimulator, scenario: str) -> None:
    official = run_scenario("blazingmq", scenario, sim.url, "official")
    ours = run_scenario("pybmq.compat", scenario, sim.url, "dropin")
    assert ours == official
    assert sim.call(lambda broker: list(broker.stats.violations)) == []
