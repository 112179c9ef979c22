"""Live against the official SDK: its ClientIdentity and its queue requests decode and re-encode
exactly, and it accepts the answers our codecs write (negotiation, open/configure/close, disconnect).

A plain asyncio server on an ephemeral 127.0.0.1 port plays the broker for a few events; the official
`blazingmq` SDK runs in a subprocess pointed at it, bounded in time and killed if still running.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest
from pybmq.generated.bmqp_ctrlmsg import (
    BrokerResponse,
    ClientIdentity,
    ClientLanguage,
    ClientType,
    CloseQueueResponse,
    ConfigureQueueStreamResponse,
    ControlMessage,
    DisconnectResponse,
    NegotiationMessage,
    OpenQueueResponse,
    RoutingConfiguration,
    Status,
    StatusCategory,
)
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber, encode_ber
from pybmq.generated.bmqp_ctrlmsg_json import encode_json

from tests.helpers.eventframe import BER, CONTROL, JSON, make_event, split_event

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
    uri = "bmq://bmq.test.mem.priority/pybmq-codec"
    events = []  # appended from the SDK's thread; written once, from this one
    # Progress goes to its own file: the SDK's C++ core writes to stdout from its threads, so
    # marker lines printed there can come out glued to its output.
    progress = open(sys.argv[2], "w", buffering=1)
    session = blazingmq.Session(
        lambda event: events.append(type(event).__name__),
        on_message=lambda message, handle: None,
        broker=f"tcp://127.0.0.1:{sys.argv[1]}",
        timeout=20,
    )
    progress.write("CONNECTED\\n")
    session.open_queue(uri, read=True, write=True, timeout=20)
    progress.write("OPENED\\n")
    session.close_queue(uri, timeout=20)
    progress.write("CLOSED\\n")
    session.stop()
    progress.write("STOPPED\\n")
    progress.write("EVENTS " + ",".join(events) + "\\n")
    progress.close()
    """)


def _answer(request: ControlMessage) -> ControlMessage:
    """What a broker answers to each request the SDK sends in this session."""
    if request.open_queue is not None:
        return ControlMessage(
            r_id=request.r_id,
            open_queue_response=OpenQueueResponse(
                original_request=request.open_queue,
                routing_configuration=RoutingConfiguration(flags=0),
            ),
        )
    if request.configure_queue_stream is not None:
        response = ConfigureQueueStreamResponse(request=request.configure_queue_stream)
        return ControlMessage(r_id=request.r_id, configure_queue_stream_response=response)
    if request.close_queue is not None:
        return ControlMessage(r_id=request.r_id, close_queue_response=CloseQueueResponse())
    if request.disconnect is not None:
        return ControlMessage(r_id=request.r_id, disconnect_response=DisconnectResponse())
    raise AssertionError(f"unexpected request {request.selection}")


@pytest.mark.interop
@pytest.mark.timeout(90)
@pytest.mark.parametrize("encoding", [BER, JSON])
async def test_official_sdk_runs_a_queue_session_on_our_answers(
    encoding: int, tmp_path: Path
) -> None:
    """The official SDK connects, opens, configures and closes a queue and disconnects, all on
    answers our codecs wrote (BER, or JSON); each of its BER requests decodes to the expected
    fields and re-encodes to the same bytes."""
    progress_file = tmp_path / "progress.txt"
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
                writer.write(make_event(encode(_answer(request)), encoding))
                await writer.drain()
                if request.disconnect is not None:
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
        str(progress_file),
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
    lines = progress_file.read_text().splitlines()
    assert lines[:4] == ["CONNECTED", "OPENED", "CLOSED", "STOPPED"], out.decode()[-2000:]
    assert lines[4].startswith("EVENTS ") and "Connected" in lines[4].split(" ", 1)[1].split(",")
    assert [m.selection for m in seen] == [
        "open_queue",
        "configure_queue_stream",
        "configure_queue_stream",
        "close_queue",
        "disconnect",
    ]
    assert [m.r_id for m in seen] == [1, 2, 3, 4, 5]
    open_request, configure, deconfigure, close, _ = seen
    assert open_request.open_queue is not None
    params = open_request.open_queue.handle_parameters
    assert (params.uri, params.q_id, params.flags) == (
        "bmq://bmq.test.mem.priority/pybmq-codec",
        0,
        6,
    )
    assert (params.read_count, params.write_count, params.admin_count) == (1, 1, 0)
    assert configure.configure_queue_stream is not None
    stream = configure.configure_queue_stream.stream_parameters
    assert (stream.max_unconfirmed_messages, stream.consumer_priority_count) == (1000, 1)
    assert deconfigure.configure_queue_stream is not None
    assert deconfigure.configure_queue_stream.stream_parameters.consumer_priority == -(2**31)
    assert close.close_queue is not None and close.close_queue.is_final
    assert close.close_queue.handle_parameters == params
