"""Live against the official SDK: its ClientIdentity decodes and re-encodes exactly, and it
accepts the negotiation and disconnect answers our codecs write.

A plain asyncio server on an ephemeral 127.0.0.1 port plays the broker for a few events; the official
`blazingmq` SDK runs in a subprocess pointed at it, bounded in time and killed if still running.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest
from eventframe import BER, CONTROL, JSON, make_event, split_event
from pybmq.generated.bmqp_ctrlmsg import (
    BrokerResponse,
    ClientIdentity,
    ClientLanguage,
    ClientType,
    ControlMessage,
    DisconnectResponse,
    NegotiationMessage,
    Status,
    StatusCategory,
)
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber, encode_ber
from pybmq.generated.bmqp_ctrlmsg_json import encode_json

pytest.importorskip("blazingmq")

CLIENT = textwrap.dedent("""
    import os, sys
    import blazingmq

    print(os.getpid(), flush=True)
    # Starting the session connects and negotiates; our server never answers, so this blocks
    # until the test kills us.
    blazingmq.Session(lambda event: None, broker=f"tcp://127.0.0.1:{sys.argv[1]}", timeout=30)
    """)


async def _read_event(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readexactly(8)
    length = int.from_bytes(head[:4], "big") & 0x7FFFFFFF
    return head + await reader.readexactly(length - 8)


@pytest.mark.interop
@pytest.mark.timeout(60)
async def test_official_sdk_client_identity(tmp_path: Path) -> None:
    received: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            event = await _read_event(reader)
            if not received.done():
                received.set_result(event)
        except Exception as exc:  # surfaced through the future
            if not received.done():
                received.set_exception(exc)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    script = tmp_path / "sdk_client.py"
    script.write_text(CLIENT)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(port),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        pid = int(await asyncio.wait_for(proc.stdout.readline(), 30))
        raw = await asyncio.wait_for(received, 30)
    finally:
        if proc.returncode is None:
            proc.kill()
        await asyncio.wait_for(proc.wait(), 30)
        server.close()
        await server.wait_closed()

    event = split_event(raw)
    assert (event.type, event.type_specific, event.version, event.header_words) == (
        CONTROL,
        BER,
        1,
        2,
    )
    msg = decode_ber(NegotiationMessage, event.payload)
    ci = msg.client_identity
    assert ci is not None and msg.selection == "client_identity"
    assert ci.pid == pid
    assert ci.client_type == ClientType.E_TCPCLIENT
    assert ci.sdk_language == ClientLanguage.E_CPP
    assert ci.protocol_version == 1 and ci.session_id >= 1 and ci.cluster_node_id == -1
    assert "PROTOCOL_ENCODING:BER,JSON" in ci.features.split(";")
    assert ci.process_name == str(script)  # the SDK reports sys.argv[0]
    assert len(ci.guid_info.client_id) == 12 and ci.guid_info.nano_seconds_from_epoch > 0
    again = encode_ber(msg)
    assert again == event.payload
    assert make_event(again, BER) == raw


SESSION_CLIENT = textwrap.dedent("""
    import sys, blazingmq
    session = blazingmq.Session(
        lambda event: print("EVENT", type(event).__name__, flush=True),
        broker=f"tcp://127.0.0.1:{sys.argv[1]}",
        timeout=20,
    )
    print("CONNECTED", flush=True)
    session.stop()
    print("STOPPED", flush=True)
    """)


@pytest.mark.interop
@pytest.mark.timeout(90)
@pytest.mark.parametrize("encoding", [BER, JSON])
async def test_official_sdk_accepts_our_negotiation_and_disconnect(encoding: int) -> None:
    """Our BrokerResponse (BER or JSON) lets the official SDK connect; its BER disconnect request
    decodes and re-encodes exactly; our disconnectResponse lets it stop cleanly."""
    seen: list[ControlMessage] = []
    finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    encode = encode_ber if encoding == BER else encode_json

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            hello = split_event(await _read_event(reader))
            assert decode_ber(NegotiationMessage, hello.payload).selection == "client_identity"
            identity = ClientIdentity(
                protocol_version=1,
                client_type=ClientType.E_TCPBROKER,
                process_name="pybmq-test-broker",
                pid=1,
                host_name="localhost",
                features="PROTOCOL_ENCODING:BER,JSON;MPS:MESSAGE_PROPERTIES_EX",
                cluster_name="pybmq",
            )
            answer = NegotiationMessage(
                broker_response=BrokerResponse(
                    result=Status(category=StatusCategory.E_SUCCESS),
                    protocol_version=1,
                    broker_version=999999,
                    broker_identity=identity,
                )
            )
            writer.write(make_event(encode(answer), encoding))
            await writer.drain()
            while True:
                event = split_event(await _read_event(reader))
                if event.type != CONTROL:
                    continue
                assert event.type_specific == BER  # the SDK keeps sending BER
                request = decode_ber(ControlMessage, event.payload)
                assert encode_ber(request) == event.payload
                seen.append(request)
                if request.disconnect is not None:
                    reply = ControlMessage(r_id=request.r_id, disconnect_response=DisconnectResponse())
                    writer.write(make_event(encode(reply), encoding))
                    await writer.drain()
                    break
            finished.set_result(None)
        except Exception as exc:
            if not finished.done():
                finished.set_exception(exc)
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SESSION_CLIENT,
        str(port),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        await asyncio.wait_for(finished, 10)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        server.close()
        await server.wait_closed()
    lines = out.decode().split()
    assert "CONNECTED" in lines and "STOPPED" in lines
    assert lines.index("CONNECTED") < lines.index("STOPPED")
    assert [m.selection for m in seen] == ["disconnect"]
    assert seen[0].r_id is not None
