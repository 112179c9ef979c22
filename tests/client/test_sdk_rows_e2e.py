"""The smaller rows of issue 28 over real sockets: ``user_agent_prefix``, queue names over 64
characters refused locally and by the simulator, and the blocking API's ``message.confirm()``."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from pybmq._version import __version__
from pybmq.client.aio import AsyncSession
from pybmq.client.options import SessionOptions
from pybmq.client.sync import Session
from pybmq.errors import BrokerError, UsageError
from pybmq.sim.server import BrokerSimulator, ThreadedBrokerSimulator

from tests.helpers.hostile import unconfirmed

pytestmark = pytest.mark.timeout(60)

DOMAIN = "bmq://bmq.test.mem.priority/"


async def test_user_agent_prefix_reaches_the_broker() -> None:
    async with BrokerSimulator() as sim:
        options = SessionOptions(user_agent_prefix="acme-wrapper/2.1")
        async with AsyncSession(sim.url, options=options):
            [client] = sim.broker.sessions
            identity = client.client_identity
        assert identity is not None
        assert identity.user_agent == f"acme-wrapper/2.1 pybmq:{__version__}"
        async with AsyncSession(sim.url):
            identity = sim.broker.sessions[-1].client_identity
        assert identity is not None and identity.user_agent == f"pybmq:{__version__}"
    with pytest.raises(UsageError):
        SessionOptions(user_agent_prefix="bad\nprefix")


PRINT_NAME = (
    "from pybmq.client.options import SessionOptions\nprint(SessionOptions().process_name)\n"
)


@pytest.mark.parametrize(
    "layout, argv, expected",
    [
        ({"app/__init__.py": "", "app/__main__.py": PRINT_NAME}, ["-m", "app"], "app"),
        ({"job.py": PRINT_NAME}, ["-m", "job"], "job"),
        ({"my job.py": PRINT_NAME}, ["my job.py"], "my job.py"),  # printable ASCII: kept
    ],
)
def test_process_name_is_the_module_run_or_the_scripts_name(
    tmp_path: Path, layout: dict[str, str], argv: list[str], expected: str
) -> None:
    # The negotiation's processName: what a broker's logs and admin listing call the client.
    for name, text in layout.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    run = subprocess.run(
        [sys.executable, *argv], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == expected


async def test_queue_names_over_64_characters_are_refused_locally_and_by_the_simulator() -> None:
    async with BrokerSimulator() as sim, AsyncSession(sim.url) as session:
        await session.open_queue(DOMAIN + "q" * 64, write=True)  # the limit itself is fine
        with pytest.raises(UsageError, match="QUEUE_NAME_TOO_LONG"):
            await session.open_queue(DOMAIN + "q" * 65, write=True)
        assert sim.broker.queue(DOMAIN + "q" * 65) is None  # nothing was sent
        # A client that does not check gets the simulator's refusal.
        engine = session.engine
        op_id, queue_id = engine.open_queue(DOMAIN + "r" * 64, engine.now, write=True)
        request = engine.data_to_send()
        too_long = request.replace(b"r" * 64, b"r" * 65, 1)
        assert session.transport is not None
        session.transport.write(_fix_length(too_long, len(too_long) - len(request)))
        with pytest.raises(BrokerError, match="exceeds 64 characters"):
            await session.driver.operation(op_id)
        del queue_id


def _fix_length(event: bytes, grown: int) -> bytes:
    """The event header's length field (its first 4 bytes, big-endian, low 31 bits) grown."""
    length = int.from_bytes(event[:4], "big")
    return (length + grown).to_bytes(4, "big") + event[4:]


def test_the_blocking_apis_message_confirm_confirms() -> None:
    uri = DOMAIN + "sdk-blocking-confirm"
    with ThreadedBrokerSimulator() as sim, Session(sim.url) as session:
        queue = session.open_queue(uri, read=True, write=True)
        queue.post(b"confirm me")
        message = queue.get(timeout=10)
        assert unconfirmed(sim, uri) == 1
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "coroutine was never awaited"
            message.confirm()
        deadline = time.monotonic() + 5
        while unconfirmed(sim, uri) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert unconfirmed(sim, uri) == 0
