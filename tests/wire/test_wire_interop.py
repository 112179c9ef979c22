"""Live: PUT events from the official C++-core SDK decode, and our encoder reproduces them byte for
byte; our ACK events are accepted by it.

A small asyncio "broker" on an ephemeral 127.0.0.1 port does just enough (negotiation, open queue,
close, disconnect, heartbeats) for the official ``blazingmq`` SDK, running in a subprocess, to post
two messages: one with properties of several types, one large enough to be zlib-compressed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import CompressionAlgorithmType, EncodingType, EventType
from pybmq.wire.batches import AckEventBuilder, iter_confirm
from pybmq.wire.control import HEARTBEAT_RSP_EVENT, decode_control, encode_control
from pybmq.wire.framing import Event, EventReader
from pybmq.wire.guid import MessageGuidGenerator, parse_guid
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.put import PutEventBuilder, PutMessage, iter_put

pytest.importorskip("blazingmq")

URI = "bmq://bmq.test.mem.priority/wire-interop"
SMALL = b"x" * 100
LARGE = b"hello wire layer " * 200  # 3400 bytes: compressed by the SDK (>= 1024, shrinks)

CLIENT = textwrap.dedent(f"""
    import json, sys, threading
    import blazingmq

    acks = []
    done = threading.Event()

    def on_ack(ack):
        acks.append([ack.status.name, ack.guid.hex()])
        if len(acks) == 2:
            done.set()

    session = blazingmq.Session(
        lambda event: None,
        broker=f"tcp://127.0.0.1:{{sys.argv[1]}}",
        message_compression_algorithm=blazingmq.CompressionAlgorithmType.ZLIB,
        timeout=20,
    )
    session.open_queue({URI!r}, write=True, timeout=20)
    session.post(
        {URI!r},
        {SMALL!r},
        properties={{"encoding": 3, "source": "sdk", "flag": True, "big": 1 << 40, "raw": b"\\x00\\x01"}},
        property_type_overrides={{"big": blazingmq.PropertyType.INT64}},
        on_ack=on_ack,
    )
    session.post({URI!r}, {LARGE!r}, properties={{"kind": "large"}}, on_ack=on_ack)
    done.wait(20)
    print("@@" + json.dumps(acks), flush=True)
    session.close_queue({URI!r}, timeout=20)
    session.stop()
    """)


EXTENDED = "PROTOCOL_ENCODING:BER,JSON;MPS:MESSAGE_PROPERTIES_EX"
OLD = "PROTOCOL_ENCODING:BER,JSON"


def _broker_response(identity: ctrl.ClientIdentity, features: str) -> ctrl.NegotiationMessage:
    return ctrl.NegotiationMessage(
        broker_response=ctrl.BrokerResponse(
            result=ctrl.Status(category=ctrl.StatusCategory.E_SUCCESS, code=0, message=""),
            protocol_version=1,
            broker_version=999999,
            is_deprecated_sdk=False,
            broker_identity=ctrl.ClientIdentity(
                protocol_version=1,
                sdk_version=999999,
                client_type=ctrl.ClientType.E_TCPBROKER,
                process_name="pybmq-wire-test",
                pid=os.getpid(),
                session_id=1,
                host_name="localhost",
                features=features,
                cluster_name="wire-test",
                cluster_node_id=-1,
                sdk_language=ctrl.ClientLanguage.E_CPP,
                guid_info=ctrl.GuidInfo(client_id="", nano_seconds_from_epoch=0),
            ),
            heartbeat_interval_ms=3000,
            max_missed_heartbeats=10,
        )
    )


def _answer(request: ctrl.ControlMessage) -> ctrl.ControlMessage | None:
    if request.open_queue is not None:
        return ctrl.ControlMessage(
            r_id=request.r_id,
            open_queue_response=ctrl.OpenQueueResponse(
                original_request=request.open_queue,
                routing_configuration=ctrl.RoutingConfiguration(flags=0),
                deduplication_time_ms=300000,
            ),
        )
    if request.close_queue is not None:
        return ctrl.ControlMessage(
            r_id=request.r_id, close_queue_response=ctrl.CloseQueueResponse()
        )
    if request.disconnect is not None:
        return ctrl.ControlMessage(r_id=request.r_id, disconnect_response=ctrl.DisconnectResponse())
    if request.configure_queue_stream is not None:
        return ctrl.ControlMessage(
            r_id=request.r_id,
            configure_queue_stream_response=ctrl.ConfigureQueueStreamResponse(
                request=request.configure_queue_stream
            ),
        )
    return None


class FakeBroker:
    """Just enough broker for one producer session; records what it receives."""

    def __init__(self, features: str = EXTENDED) -> None:
        self.features = features
        self.identity: ctrl.ClientIdentity | None = None
        self.put_events: list[Event] = []
        self.got_puts = asyncio.Event()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        framer = EventReader()
        try:
            while data := await reader.read(65536):
                for event in framer.feed(data):
                    for reply in self.handle(event):
                        writer.write(reply)
                await writer.drain()
        finally:
            writer.close()

    def handle(self, event: Event) -> list[bytes]:
        if event.type == EventType.CONTROL and self.identity is None:
            encoding, nego = decode_control(event, ctrl.NegotiationMessage)
            assert isinstance(nego, ctrl.NegotiationMessage) and nego.client_identity is not None
            self.identity = nego.client_identity
            response = _broker_response(self.identity, self.features)
            return [encode_control(response, EncodingType.JSON)]
        if event.type == EventType.CONTROL:
            encoding, request = decode_control(event, ctrl.ControlMessage)
            assert isinstance(request, ctrl.ControlMessage)
            answer = _answer(request)
            return [encode_control(answer, encoding)] if answer is not None else []
        if event.type == EventType.HEARTBEAT_REQ:
            return [HEARTBEAT_RSP_EVENT]
        if event.type == EventType.PUT:
            self.put_events.append(event)
            acks = AckEventBuilder()
            for m in iter_put(event, verify_crc=True):
                acks.add(0, m.correlation_id if m.guid[4:] == bytes(12) else 0, m.guid, m.queue_id)
            if sum(len(list(iter_put(e))) for e in self.put_events) >= 2:
                self.got_puts.set()
            return acks.finish()
        return []


def _reencode(messages: list[PutMessage]) -> bytes:
    """Our encoder, from the decoded values only (not the captured bytes)."""
    builder = PutEventBuilder()
    for m in messages:
        builder.add(
            m.queue_id,
            m.payload,
            guid=m.guid,
            properties=m.properties,
            ack_requested=m.ack_requested,
            compression=CompressionAlgorithmType.ZLIB,
            extended_properties=m.extended_properties,
            schema_id=m.schema_id,
        )
    (event,) = builder.finish()
    return event


@pytest.mark.interop
@pytest.mark.timeout(90)
@pytest.mark.parametrize("features", [EXTENDED, OLD], ids=["extended", "old-properties"])
async def test_official_sdk_puts_and_our_acks(tmp_path: Path, features: str) -> None:
    broker = FakeBroker(features)
    server = await asyncio.start_server(broker.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    script = tmp_path / "sdk_producer.py"
    script.write_text(CLIENT)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(port),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    acks: list[Any] = []
    try:
        await asyncio.wait_for(broker.got_puts.wait(), 45)
        assert proc.stdout is not None
        while True:
            line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
            assert line, "the SDK exited without reporting its acks"
            if line.startswith("@@"):
                acks = json.loads(line[2:])
                break
        await asyncio.wait_for(proc.wait(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        server.close()
        await server.wait_closed()

    messages = [m for e in broker.put_events for m in iter_put(e, verify_crc=True)]
    assert [m.payload for m in messages] == [SMALL, LARGE]
    small, large = messages
    extended = features == EXTENDED
    # With MPS:MESSAGE_PROPERTIES_EX the SDK sends extended properties, announced by a non-zero
    # schema id (it numbers its property schemas: wire value = id << 1 | recycled); without it,
    # the old format (schema id 0), and then compresses properties and payload together.
    assert small.extended_properties == extended
    assert small.compression == CompressionAlgorithmType.NONE
    assert small.properties is not None
    assert dict(small.properties) == {
        "encoding": 3, "source": "sdk", "flag": True, "big": 1 << 40, "raw": b"\x00\x01"
    }  # fmt: skip
    assert large.compression == CompressionAlgorithmType.ZLIB
    wire = [m for e in broker.put_events for m in iter_put(e, decompress=False)][1]
    assert bool(wire.properties_area) == extended  # old format: properties inside the zlib data
    assert large.properties is not None and dict(large.properties) == {"kind": "large"}
    # GUIDs: version 1, the client id the SDK announced in its GuidInfo, counters in order.
    assert broker.identity is not None
    fields = [parse_guid(m.guid) for m in messages]
    assert {f.version for f in fields} == {1}
    assert {f.client_id for f in fields} == {broker.identity.guid_info.client_id.upper()}
    assert fields[1].counter == fields[0].counter + 1
    # Our encoder, fed the decoded values, writes exactly the SDK's bytes (zlib output included).
    for event in broker.put_events:
        assert _reencode(list(iter_put(event))) == event.data
    # The SDK accepted our ACK events: both posts acknowledged, with the GUIDs it generated.
    assert acks == [["SUCCESS", m.guid.hex()] for m in messages]


CONSUMER = textwrap.dedent(f"""
    import json, sys, threading
    import blazingmq

    got = []
    done = threading.Event()

    def on_message(message, handle):
        got.append({{
            "data": message.data.hex(),
            "guid": message.guid.hex(),
            "properties": {{k: (v.hex() if isinstance(v, bytes) else v)
                           for k, v in message.properties.items()}},
            "types": {{k: t.name for k, t in message.property_types.items()}},
        }})
        handle.confirm()
        if len(got) == 3:
            done.set()

    session = blazingmq.Session(
        lambda event: None, on_message=on_message,
        broker=f"tcp://127.0.0.1:{{sys.argv[1]}}", timeout=20,
    )
    session.open_queue({URI!r}, read=True, timeout=20)
    print("@@ready", flush=True)
    done.wait(20)
    print("@@" + json.dumps(got), flush=True)
    session.close_queue({URI!r}, timeout=20)
    session.stop()
    """)


class FakeBrokerForConsumer(FakeBroker):
    """Sends PUSH events built by our PushEventBuilder once the consumer is configured."""

    def __init__(self, pushes: list[dict[str, Any]]) -> None:
        super().__init__()
        self.pushes = pushes
        self.queue_id: int | None = None
        self.confirm_events: list[Event] = []
        self.got_confirms = asyncio.Event()

    def handle(self, event: Event) -> list[bytes]:
        if event.type == EventType.CONTROL and self.identity is not None:
            encoding, request = decode_control(event, ctrl.ControlMessage)
            assert isinstance(request, ctrl.ControlMessage)
            if request.open_queue is not None:
                self.queue_id = request.open_queue.handle_parameters.q_id
            answer = _answer(request)
            if request.configure_stream is not None:
                answer = ctrl.ControlMessage(
                    r_id=request.r_id,
                    configure_stream_response=ctrl.ConfigureStreamResponse(
                        request=request.configure_stream
                    ),
                )
            out = [encode_control(answer, encoding)] if answer is not None else []
            configured = request.configure_queue_stream or request.configure_stream
            if configured is not None and self.pushes and self.queue_id is not None:
                builder = PushEventBuilder()
                for push in self.pushes:
                    builder.add(self.queue_id, **push)
                self.pushes = []
                out.extend(builder.finish())
            return out
        if event.type == EventType.CONFIRM:
            self.confirm_events.append(event)
            if sum(len(list(iter_confirm(e))) for e in self.confirm_events) >= 3:
                self.got_confirms.set()
            return []
        return super().handle(event)


@pytest.mark.interop
@pytest.mark.timeout(90)
async def test_official_sdk_reads_our_pushes_and_confirms(tmp_path: Path) -> None:
    guids = MessageGuidGenerator().generate_many(3)
    props = MessageProperties({"encoding": 3, "name": "pybmq", "ok": True})
    props.set_int64("big", -(1 << 40))
    props.set_binary("raw", b"\x00\xff")
    pushes: list[dict[str, Any]] = [
        {"guid": guids[0], "payload": SMALL, "properties": props},
        {"guid": guids[1], "payload": LARGE, "properties": MessageProperties({"kind": "large"}),
         "compression": CompressionAlgorithmType.ZLIB},
        {"guid": guids[2], "payload": b"plain", "packed_rda": None},
    ]  # fmt: skip
    broker = FakeBrokerForConsumer(pushes)
    server = await asyncio.start_server(broker.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    script = tmp_path / "sdk_consumer.py"
    script.write_text(CONSUMER)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(port),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    got: list[dict[str, Any]] = []
    try:
        assert proc.stdout is not None
        while True:
            line = (await asyncio.wait_for(proc.stdout.readline(), 45)).decode()
            assert line, "the SDK exited without reporting its messages"
            if line.startswith("@@[") or line.startswith("@@{"):
                got = json.loads(line[2:])
                break
        await asyncio.wait_for(broker.got_confirms.wait(), 30)
        await asyncio.wait_for(proc.wait(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        server.close()
        await server.wait_closed()

    assert [bytes.fromhex(m["data"]) for m in got] == [SMALL, LARGE, b"plain"]
    assert [bytes.fromhex(m["guid"]) for m in got] == guids
    assert got[0]["properties"] == {
        "encoding": 3, "name": "pybmq", "ok": True, "big": -(1 << 40), "raw": "00ff"
    }  # fmt: skip
    assert got[0]["types"] == {
        "encoding": "INT32", "name": "STRING", "ok": "BOOL", "big": "INT64", "raw": "BINARY"
    }  # fmt: skip
    assert got[1]["properties"] == {"kind": "large"} and got[2]["properties"] == {}
    confirms = [c for e in broker.confirm_events for c in iter_confirm(e)]
    assert [(c.queue_id, c.guid, c.sub_queue_id) for c in confirms] == [
        (broker.queue_id, g, 0) for g in guids
    ]
