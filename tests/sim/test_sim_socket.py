"""The simulator over real loopback sockets: asyncio and thread shells, the CLI, the pytest plugin."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys

import pytest
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.bmqp_ctrlmsg_json import decode_json, encode_json
from pybmq.generated.wire_codec import EncodingType, EventType
from pybmq.sim.config import BrokerConfig
from pybmq.sim.server import BrokerSimulator, SimulatorError, ThreadedBrokerSimulator
from pybmq.wire.control import HEARTBEAT_REQ_EVENT, decode_control_event, encode_control_event
from pybmq.wire.framing import EventReader, event_header_bytes

pytestmark = pytest.mark.timeout(60)


def negotiation() -> bytes:
    identity = ctrl.ClientIdentity(
        protocol_version=1,
        client_type=ctrl.ClientType.E_TCPCLIENT,
        features="PROTOCOL_ENCODING:JSON;MPS:MESSAGE_PROPERTIES_EX",
        guid_info=ctrl.GuidInfo(client_id="0123456789AB", nano_seconds_from_epoch=1),
    )
    return encode_control_event(
        encode_json(ctrl.NegotiationMessage(client_identity=identity)), EncodingType.JSON
    )


async def read_event(reader: asyncio.StreamReader) -> bytes:
    header = await asyncio.wait_for(reader.readexactly(8), 10)
    length = int.from_bytes(header[:4], "big") & 0x7FFFFFFF
    return header + await asyncio.wait_for(reader.readexactly(length - 8), 10)


async def negotiate(
    url_port: int,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, ctrl.BrokerResponse]:
    reader, writer = await asyncio.open_connection("127.0.0.1", url_port)
    writer.write(negotiation())
    (event,) = EventReader().feed(await read_event(reader))
    _, payload = decode_control_event(event)
    response = decode_json(ctrl.NegotiationMessage, payload).broker_response
    assert response is not None
    return reader, writer, response


async def test_negotiate_then_violation_drops_the_connection() -> None:
    async with BrokerSimulator() as sim:
        assert sim.url == f"tcp://127.0.0.1:{sim.port}" and sim.port > 0
        reader, writer, response = await negotiate(sim.port)
        assert response.result.category == ctrl.StatusCategory.E_SUCCESS
        writer.write(event_header_bytes(EventType.PUSH, 12) + b"\0" * 4)  # a client may not PUSH
        assert await asyncio.wait_for(reader.read(), 10) == b""  # EOF: the broker hung up
        assert "may not send PUSH" in sim.broker.stats.violations[0]
        writer.close()


async def test_heartbeat_request_and_missed_heartbeats_over_a_socket() -> None:
    config = BrokerConfig(heartbeat_interval_ms=100, max_missed_heartbeats=3)
    async with BrokerSimulator(config) as sim:
        reader, writer, response = await negotiate(sim.port)
        assert response.heartbeat_interval_ms == 100
        writer.write(HEARTBEAT_REQ_EVENT)
        assert (await read_event(reader))[4] & 0x3F == EventType.HEARTBEAT_RSP
        # Stay silent: the broker asks, then gives up after 3 intervals.
        assert (await read_event(reader))[4] & 0x3F == EventType.HEARTBEAT_REQ
        rest = await asyncio.wait_for(reader.read(), 10)  # more requests, then EOF
        assert rest == HEARTBEAT_REQ_EVENT * (len(rest) // 8)
        await asyncio.wait_for(_closed(sim), 10)
        writer.close()


async def _closed(sim: BrokerSimulator) -> None:
    while not sim.broker.stats.violations:
        await asyncio.sleep(0.02)
    assert "missed heartbeats" in sim.broker.stats.violations[0]


async def test_stop_drops_every_connection() -> None:
    sim = BrokerSimulator()
    await sim.start()
    reader, writer, _ = await negotiate(sim.port)
    await sim.stop()
    assert await asyncio.wait_for(reader.read(), 10) == b""
    writer.close()
    with pytest.raises(SimulatorError):
        _ = sim.port


def test_threaded_simulator_and_port_conflicts() -> None:
    with ThreadedBrokerSimulator() as sim:
        with socket.create_connection(("127.0.0.1", sim.port), timeout=10) as sock:
            sock.sendall(negotiation())
            sock.settimeout(10)
            assert sock.recv(8)[4] & 0x3F == EventType.CONTROL
            assert sim.call(lambda b: len(b.sessions)) == 1
        with pytest.raises(SimulatorError):
            sim.start()
        with pytest.raises(SimulatorError, match="cannot listen"):
            ThreadedBrokerSimulator(port=sim.port).start()


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_cli_prints_its_address_and_stops_on_a_signal(stop_signal: signal.Signals) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("pybmq sim listening on tcp://127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(negotiation())
            sock.settimeout(10)
            assert sock.recv(8)[4] & 0x3F == EventType.CONTROL
        process.send_signal(stop_signal)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert process.returncode == 0, err
    assert "pybmq sim stopped: 1 sessions" in out


def test_pytest_plugin_fixture(bmq_broker_url: str) -> None:
    """``bmq_broker_url`` comes from the pybmq pytest plugin (entry point pytest11)."""
    from pybmq.client.sync import Session

    with Session(bmq_broker_url) as session:
        queue = session.open_queue("bmq://bmq.test.mem.priority/plugin", write=True)
        assert queue.post(b"hello").ok
