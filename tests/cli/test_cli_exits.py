"""Every way a ``post``/``consume`` run ends prints its summary with the documented exit code:
SIGTERM (143) and SIGHUP (129) like Ctrl-C, and a broker that accepts the connection but does
not answer (5), named by the stage that did not finish and the timeout that fired."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pybmq.cli.main import main
from pybmq.client.aio_link import Link
from pybmq.sim.faults import FaultConfig
from pybmq.sim.server import ThreadedBrokerSimulator
from pybmq.wire.framing import EventReader

from tests.helpers.cli import run_pybmq as pybmq
from tests.helpers.cli import signal_mid_run

pytestmark = pytest.mark.timeout(180)

QUEUE = "bmq://bmq.test.mem.priority/exits"


def last_json(text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text.strip().splitlines()[-1])
    return document


@pytest.mark.parametrize(
    "command, sig, code, label",
    [
        ("consume", signal.SIGTERM, 143, "terminated"),
        ("consume", signal.SIGHUP, 129, "hung up"),
        ("post", signal.SIGTERM, 143, "terminated"),
        ("post", signal.SIGHUP, 129, "hung up"),
    ],
)
def test_sigterm_and_sighup_end_with_the_summary(
    command: str, sig: signal.Signals, code: int, label: str
) -> None:
    with ThreadedBrokerSimulator(faults=FaultConfig(ack_delay_ms=200)) as sim:
        done = signal_mid_run(command, QUEUE, sim.url, sig, settle=0.3)
    out, err = done.stdout, done.stderr
    assert done.returncode == code, err[-2000:]
    document = last_json(out)
    assert document["outcome"] == label and document["exit_code"] == code
    assert document["reason"] == f"stopped by {sig.name}"
    if command == "post":
        assert document["posted"] > 0
        assert document["posted"] == document["acked"] + document["unresolved"]
    assert "Traceback" not in err


@pytest.fixture
def silent_broker() -> Iterator[str]:
    """Accepts connections (the backlog), never reads nor answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize("command", ["post", "consume"])
def test_a_silent_broker_names_the_negotiate_stage(command: str, silent_broker: str) -> None:
    started = time.monotonic()
    result = pybmq(
        command, QUEUE, "--request-timeout", "1", "--timeout", "20", "--json", broker=silent_broker
    )
    assert time.monotonic() - started < 15
    assert result.returncode == 5, result.stderr
    document = last_json(result.stdout)
    assert document["outcome"] == "no answer"
    assert "negotiate" in document["reason"] and "--request-timeout 1 s" in document["reason"]
    assert document["seconds"] >= 1  # the summary's time covers the wait to negotiate
    assert "Traceback" not in result.stderr
    text = pybmq(command, QUEUE, "--request-timeout", "0.5", broker=silent_broker)
    assert text.returncode == 5 and "negotiate stage within --request-timeout 0.5 s" in text.stdout


class OpenBlackhole:
    """A proxy to a real broker that passes the client's first event (the negotiation) and
    drops everything the client sends after it: the session negotiates, then opening a queue
    gets no answer."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("tcp://").rsplit(":", 1)
        self.upstream = (host, int(port))
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"tcp://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            broker = socket.create_connection(self.upstream)
            threading.Thread(target=self._forward, args=(client, broker, 1), daemon=True).start()
            threading.Thread(target=self._forward, args=(broker, client, None), daemon=True).start()

    @staticmethod
    def _forward(source: socket.socket, sink: socket.socket, events: int | None) -> None:
        framer = EventReader()
        passed = 0
        try:
            while data := source.recv(65536):
                if events is None:
                    sink.sendall(data)
                    continue
                for event in framer.feed(data):
                    if passed < events:
                        sink.sendall(event.data)
                        passed += 1
        except OSError:
            pass

    def close(self) -> None:
        self.server.close()


def test_a_broker_silent_at_open_names_the_open_stage() -> None:
    with ThreadedBrokerSimulator() as sim:
        proxy = OpenBlackhole(sim.url)
        try:
            result = pybmq("consume", QUEUE, "--request-timeout", "1", "--json", broker=proxy.url)
        finally:
            proxy.close()
    assert result.returncode == 5, result.stderr
    reason = last_json(result.stdout)["reason"]
    assert "open stage within --request-timeout 1 s" in reason, reason


def test_a_connect_timeout_names_the_connect_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    async def never(self: Link, host: str, port: int) -> None:
        raise asyncio.TimeoutError

    monkeypatch.setattr(Link, "connect", never)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["post", QUEUE, "--broker", "tcp://127.0.0.1:1", "--connect-timeout", "2"])
    assert status == 5
    assert "connect stage within --connect-timeout 2 s" in out.getvalue()
