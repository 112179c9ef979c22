"""The client against ``pybmq sim`` over real loopback sockets: the whole life of a session."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

import pytest
from pybmq.aio import AsyncSession
from pybmq.client_options import QueueOptions, SessionOptions
from pybmq.errors import SessionStoppedError, UsageError
from pybmq.sim import BrokerSimulator
from pybmq.sync import Session

pytestmark = pytest.mark.timeout(60)

PRIORITY = "bmq://bmq.test.mem.priority/e2e"
FANOUT = "bmq://bmq.test.mem.fanout/e2e"


@pytest.fixture
async def broker() -> AsyncIterator[str]:
    async with BrokerSimulator(host="127.0.0.1", port=0) as sim:
        yield f"tcp://127.0.0.1:{sim.port}"


async def take(queue, n: int, confirm: bool = True) -> list[bytes]:  # type: ignore[no-untyped-def]
    payloads = []
    for _ in range(n):
        message = await asyncio.wait_for(queue.get(), 10)
        payloads.append(message.payload)
        if confirm:
            await message.confirm()
    return payloads


async def test_open_post_ack_consume_confirm_close_stop(broker: str) -> None:
    async with AsyncSession(broker) as session:
        assert session.info is not None
        writer = await session.open_queue(PRIORITY, write=True)
        reader = await session.open_queue(PRIORITY, read=True)
        acks = await asyncio.gather(*(writer.post(b"msg-%d" % i) for i in range(20)))
        assert all(ack.ok for ack in acks)
        assert len({ack.guid for ack in acks}) == 20
        assert await take(reader, 20) == [b"msg-%d" % i for i in range(20)]
        await reader.close()
        await writer.close()
        with pytest.raises(UsageError):
            writer.post_nowait(b"after close")
    assert session.state.value == "STOPPED"
    with pytest.raises(SessionStoppedError):
        await session.open_queue(PRIORITY, read=True)


async def test_post_nowait_callbacks_and_iteration(broker: str) -> None:
    async with AsyncSession(broker) as session:
        writer = await session.open_queue(PRIORITY, write=True)
        reader = await session.open_queue(PRIORITY, read=True)
        done = asyncio.get_running_loop().create_future()
        acked = []

        def on_ack(ack):  # type: ignore[no-untyped-def]
            acked.append(ack)
            if len(acked) == 500 and not done.done():
                done.set_result(None)

        for i in range(500):
            writer.post_nowait(b"%d" % i, on_ack=on_ack)
        await asyncio.wait_for(done, 10)
        assert all(a.ok for a in acked)
        got = []
        async for message in reader:
            got.append(int(message.payload))
            message.confirm_nowait()
            if len(got) == 500:
                break
        assert got == list(range(500))


async def test_priority_consumers_share_round_robin(broker: str) -> None:
    async with AsyncSession(broker) as s1, AsyncSession(broker) as s2, AsyncSession(broker) as p:
        r1 = await s1.open_queue(PRIORITY, read=True)
        r2 = await s2.open_queue(PRIORITY, read=True)
        writer = await p.open_queue(PRIORITY, write=True)
        acks = await asyncio.gather(*(writer.post(b"%d" % i) for i in range(20)))
        assert all(a.ok for a in acks)
        first = await take(r1, 10)
        second = await take(r2, 10)
        assert sorted(int(x) for x in first + second) == list(range(20))
        assert first and second


async def test_fanout_app_ids_each_get_every_message(broker: str) -> None:
    async with AsyncSession(broker) as session:
        foo = await session.open_queue(FANOUT + "?id=foo", read=True)
        bar = await session.open_queue(FANOUT + "?id=bar", read=True)
        writer = await session.open_queue(FANOUT, write=True)
        for i in range(5):
            assert (await writer.post(b"f%d" % i)).ok
        expected = [b"f%d" % i for i in range(5)]
        assert await take(foo, 5) == expected
        assert await take(bar, 5) == expected


async def test_properties_round_trip(broker: str) -> None:
    properties = {"name": "pybmq", "count": 7, "big": 2**40, "flag": True, "blob": b"\x00\x01"}
    async with AsyncSession(broker) as session:
        writer = await session.open_queue(PRIORITY, write=True)
        reader = await session.open_queue(PRIORITY, read=True)
        assert (await writer.post(b"with properties", properties=properties)).ok
        message = await asyncio.wait_for(reader.get(), 10)
        assert message.payload == b"with properties"
        assert message.properties == properties
        await message.confirm()


async def test_compressed_payload_round_trips(broker: str) -> None:
    payload = b"compress me " * 1000
    async with AsyncSession(broker, options=SessionOptions(compression_threshold=1024)) as session:
        writer = await session.open_queue(PRIORITY, write=True)
        reader = await session.open_queue(PRIORITY, read=True)
        assert (await writer.post(payload)).ok
        assert (await writer.post(b"small")).ok
        assert await take(reader, 2) == [payload, b"small"]


async def test_standalone_configure_changes_priority(broker: str) -> None:
    async with AsyncSession(broker) as session:
        reader = await session.open_queue(PRIORITY, read=True)
        await reader.configure(QueueOptions(consumer_priority=5, max_unconfirmed_messages=10))
        writer = await session.open_queue(PRIORITY, write=True)
        assert (await writer.post(b"after configure")).ok
        assert await take(reader, 1) == [b"after configure"]


async def test_unreachable_broker_is_a_clear_error() -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(SessionStoppedError, match="cannot connect"):
        await AsyncSession(f"tcp://127.0.0.1:{port}").start()


async def test_cli_post_then_consume(broker: str) -> None:
    uri = "bmq://bmq.test.mem.priority/cli"

    async def cli(*args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "pybmq.cli", *args, "--broker", broker, "--quiet",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 50)
        assert process.returncode == 0, err.decode()
        return out.decode()

    posted = await cli("post", uri, "--count", "300", "--size", "64", "--properties", "k=v,n=3")
    assert "posted 300 messages of 64 B" in posted and "msgs/s" in posted
    consumed = await cli("consume", uri, "--count", "300")
    assert "consumed and confirmed 300 messages" in consumed


async def test_sync_session_from_a_thread(broker: str) -> None:
    def script() -> list[bytes]:
        acked = []
        with Session(broker) as session:
            writer = session.open_queue(PRIORITY, write=True)
            reader = session.open_queue(PRIORITY, read=True)
            assert writer.post(b"sync-0").ok
            done = __import__("threading").Event()

            def on_ack(ack):  # type: ignore[no-untyped-def]
                acked.append(ack)
                done.set()

            writer.post_async(b"sync-1", on_ack=on_ack)
            assert done.wait(10)
            got = []
            for _ in range(2):
                message = reader.get(timeout=10)
                reader.confirm(message)
                got.append(message.payload)
            reader.close()
        assert acked[0].ok
        return got

    assert await asyncio.to_thread(script) == [b"sync-0", b"sync-1"]


async def test_ack_timeout_gives_a_local_nack() -> None:
    """A broker that opens queues but never ACKs: the post resolves with a local TIMEOUT NACK."""
    from engine_helpers import broker_response, reply_bytes
    from pybmq.client_events import AckStatus
    from pybmq.engine import decode_control
    from pybmq.framing import EventReader
    from pybmq.generated import bmqp_ctrlmsg as ctrl
    from pybmq.generated.wire_codec import EventType

    puts = 0

    async def silent_broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal puts
        framer = EventReader()
        negotiated = False
        while data := await reader.read(65536):
            for event in framer.feed(data):
                if event.header.type == EventType.PUT:
                    puts += 1
                elif not negotiated:
                    negotiated = True
                    writer.write(broker_response())
                elif event.header.type == EventType.CONTROL:
                    writer.write(reply_bytes(decode_control(event, ctrl.ControlMessage)[0]))
        writer.close()

    server = await asyncio.start_server(silent_broker, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        options = SessionOptions(ack_timeout=0.2)
        async with AsyncSession(f"tcp://127.0.0.1:{port}", options=options) as session:
            writer = await session.open_queue(PRIORITY, write=True)
            ack = await asyncio.wait_for(writer.post(b"never acked"), 5)
            assert ack.status is AckStatus.TIMEOUT and ack.local and not ack.ok
            assert "no ACK within 0.2s" in ack.reason
            assert puts == 1
    finally:
        server.close()
        await server.wait_closed()
