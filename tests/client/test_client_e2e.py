"""The client against ``pybmq sim`` over real loopback sockets: the whole life of a session."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import AsyncIterator

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.options import QueueOptions, SessionOptions
from pybmq.client.sync import Session
from pybmq.errors import SessionStoppedError, UsageError
from pybmq.wire.properties import MessageProperties

from tests.helpers.brokers import BROKER_KINDS, broker_url

pytestmark = pytest.mark.timeout(60)

PRIORITY = "bmq://bmq.test.mem.priority/e2e"
FANOUT = "bmq://bmq.test.mem.fanout/e2e"


@pytest.fixture(params=BROKER_KINDS)
async def broker(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    async with broker_url(request) as url:
        yield url


async def take(queue, n: int, confirm: bool = True) -> list[bytes]:  # type: ignore[no-untyped-def]
    payloads = []
    for _ in range(n):
        message = await asyncio.wait_for(queue.get(), 10)
        payloads.append(message.payload)
        if confirm:
            await message.confirm()
    return payloads


async def test_open_post_ack_consume_confirm_close_stop(broker: str) -> None:
    async with AsyncSession(broker) as session, AsyncSession(broker) as consumer:
        assert session.info is not None
        writer = await session.open_queue(PRIORITY, write=True)
        reader = await consumer.open_queue(PRIORITY, read=True)
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
    async with AsyncSession(broker) as session, AsyncSession(broker) as consumer:
        writer = await session.open_queue(PRIORITY, write=True)
        reader = await consumer.open_queue(PRIORITY, read=True)
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
    # One session per app here; the same-session case is the next test.
    async with AsyncSession(broker) as s1, AsyncSession(broker) as s2, AsyncSession(broker) as p:
        foo = await s1.open_queue(FANOUT + "?id=foo", read=True)
        bar = await s2.open_queue(FANOUT + "?id=bar", read=True)
        writer = await p.open_queue(FANOUT, write=True)
        for i in range(5):
            assert (await writer.post(b"f%d" % i)).ok
        expected = [b"f%d" % i for i in range(5)]
        assert await take(foo, 5) == expected
        assert await take(bar, 5) == expected


async def test_properties_of_every_type_round_trip(broker: str) -> None:
    typed = MessageProperties()
    typed.set_bool("flag", True)
    typed.set_char("char", -5)
    typed.set_short("short", 30000)
    typed.set_int32("int32", -(2**31))
    typed.set_int64("int64", 2**40)
    typed.set_string("name", "pybmq ✓")
    typed.set_binary("blob", b"\x00\x01\xff")
    plain = {"n": 7, "s": "text", "b": b"raw", "t": False}
    async with AsyncSession(broker) as session, AsyncSession(broker) as consumer:
        writer = await session.open_queue(PRIORITY, write=True)
        reader = await consumer.open_queue(PRIORITY, read=True)
        assert (await writer.post(b"typed", properties=typed)).ok
        assert (await writer.post(b"plain", properties=plain)).ok
        first = await asyncio.wait_for(reader.get(), 10)
        second = await asyncio.wait_for(reader.get(), 10)
        assert first.payload == b"typed"
        assert isinstance(first.properties, MessageProperties)
        assert sorted(first.properties.typed_items()) == sorted(typed.typed_items())
        assert {t.name for _, t, _ in first.properties.typed_items()} == {
            "BOOL",
            "CHAR",
            "SHORT",
            "INT32",
            "INT64",
            "STRING",
            "BINARY",
        }
        assert dict(second.properties) == plain
        await first.confirm()
        await second.confirm()


async def test_compressed_payload_round_trips(broker: str) -> None:
    payload = b"compress me " * 1000
    options = SessionOptions(compression_threshold=1024)
    async with AsyncSession(broker, options=options) as session, AsyncSession(broker) as consumer:
        writer = await session.open_queue(PRIORITY, write=True)
        reader = await consumer.open_queue(PRIORITY, read=True)
        assert (await writer.post(payload)).ok
        assert (await writer.post(b"small")).ok
        assert await take(reader, 2) == [payload, b"small"]


async def test_standalone_configure_changes_priority(broker: str) -> None:
    async with AsyncSession(broker) as session, AsyncSession(broker) as consumer:
        reader = await consumer.open_queue(PRIORITY, read=True)
        await reader.configure(QueueOptions(consumer_priority=5, max_unconfirmed_messages=10))
        writer = await session.open_queue(PRIORITY, write=True)
        assert (await writer.post(b"after configure")).ok
        assert await take(reader, 1) == [b"after configure"]


async def test_unreachable_broker_is_a_clear_error() -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    unretrieved: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    try:
        with pytest.raises(SessionStoppedError, match="cannot connect"):
            await AsyncSession(f"tcp://127.0.0.1:{port}").start()
        gc.collect()  # an abandoned future with an exception reports itself when collected
    finally:
        loop.set_exception_handler(None)
    assert unretrieved == []


async def test_cli_post_then_consume(broker: str) -> None:
    uri = "bmq://bmq.test.mem.priority/cli"

    async def cli(*args: str) -> str:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "pybmq.cli",
            *args,
            "--broker",
            broker,
            "--quiet",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 50)
        assert process.returncode == 0, err.decode()
        return out.decode()

    posted = await cli("post", uri, "--count", "300", "--size", "64", "--properties", "k=v,n=3")
    assert "posted 300 of 64 B, ACKed 300" in posted and "msgs/s" in posted
    consumed = await cli("consume", uri, "--count", "300")
    assert "received 300, confirmed 300, unconfirmed 0" in consumed


async def test_sync_session_from_a_thread(broker: str) -> None:
    def script() -> list[bytes]:
        acked = []
        with Session(broker) as session, Session(broker) as consumer:
            writer = session.open_queue(PRIORITY, write=True)
            reader = consumer.open_queue(PRIORITY, read=True)
            assert writer.post(b"sync-0").ok
            done = __import__("threading").Event()

            def on_ack(ack):  # type: ignore[no-untyped-def]
                acked.append(ack)
                done.set()

            writer.post_async(b"sync-1", on_ack=on_ack)
            assert done.wait(10)
            many_acked = __import__("threading").Semaphore(0)
            guids = writer.post_many(
                [b"many-%d" % i for i in range(100)], on_ack=lambda ack: many_acked.release()
            )
            assert len(set(guids)) == 100
            for _ in range(100):
                assert many_acked.acquire(timeout=10)
            got = []
            for _ in range(102):
                message = reader.get(timeout=10)
                reader.confirm(message)
                got.append(message.payload)
            reader.close()
        assert acked[0].ok
        return got

    expected = [b"sync-0", b"sync-1", *(b"many-%d" % i for i in range(100))]
    assert await asyncio.to_thread(script) == expected


async def test_ack_timeout_gives_a_local_nack() -> None:
    """A broker that opens queues but never ACKs: the post resolves with a local TIMEOUT NACK."""
    from pybmq.client.events import AckStatus
    from pybmq.generated import bmqp_ctrlmsg as ctrl
    from pybmq.generated.wire_codec import EventType
    from pybmq.wire.control import decode_control_as
    from pybmq.wire.framing import EventReader

    from tests.helpers.engine import broker_response, reply_bytes

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
                    writer.write(reply_bytes(decode_control_as(event, ctrl.ControlMessage)[0]))
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


async def test_backpressure_while_the_broker_does_not_read() -> None:
    """Over the write high-water mark, drain() (and so post()) waits until the socket drains."""
    from pybmq.generated import bmqp_ctrlmsg as ctrl
    from pybmq.generated.wire_codec import EventType
    from pybmq.wire.control import decode_control_as
    from pybmq.wire.framing import EventReader

    from tests.helpers.engine import broker_response, reply_bytes

    resume = asyncio.Event()

    async def stalled_broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        framer = EventReader()
        negotiated = False
        while data := await reader.read(65536):
            for event in framer.feed(data):
                if not negotiated:
                    negotiated = True
                    writer.write(broker_response())
                elif event.header.type == EventType.CONTROL:
                    request = decode_control_as(event, ctrl.ControlMessage)[0]
                    writer.write(reply_bytes(request))
                    if request.open_queue is not None:
                        await resume.wait()  # stop reading: the client's buffers fill up
        writer.close()

    server = await asyncio.start_server(stalled_broker, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        session = AsyncSession(f"tcp://127.0.0.1:{port}", write_high_water=64 * 1024)
        await session.start()
        writer = await session.open_queue(PRIORITY, write=True, ack=False)
        payload = b"x" * 16384
        for _ in range(10_000):  # bounded: ~160 MB would overflow any loopback buffer
            writer.post_nowait(payload)
            await asyncio.sleep(0)
            if not session.writable:
                break
        assert not session.writable
        drained = asyncio.ensure_future(session.drain())
        for _ in range(10):
            await asyncio.sleep(0)
        assert not drained.done()
        resume.set()
        await asyncio.wait_for(drained, 20)
        assert session.writable
        await asyncio.wait_for(session.stop(), 20)
    finally:
        server.close()
        await server.wait_closed()


async def test_sync_session_on_message_runs_on_one_dispatcher_thread(broker: str) -> None:
    import threading

    def script() -> tuple[list[bytes], set[str]]:
        got: list[bytes] = []
        threads: set[str] = set()
        done = threading.Event()
        with Session(broker) as producer, Session(broker) as consumer:
            holder: dict[str, object] = {}

            def on_message(message) -> None:  # type: ignore[no-untyped-def]
                threads.add(threading.current_thread().name)
                got.append(message.payload)
                holder["queue"].confirm(message)  # type: ignore[attr-defined]
                if len(got) == 20:
                    done.set()

            holder["queue"] = consumer.open_queue(PRIORITY, read=True, on_message=on_message)
            writer = producer.open_queue(PRIORITY, write=True)
            for i in range(20):
                writer.post_async(b"cb-%d" % i)
            assert done.wait(10)
        return got, threads

    got, threads = await asyncio.to_thread(script)
    assert got == [b"cb-%d" % i for i in range(20)]
    assert threads == {"pybmq-dispatch"}


async def test_broker_going_away_fails_everything_pending() -> None:
    """The broker stops mid-session: a waiting post, a waiting get and new calls all fail clearly."""
    from pybmq.generated import bmqp_ctrlmsg as ctrl
    from pybmq.generated.wire_codec import EventType
    from pybmq.wire.control import decode_control_as
    from pybmq.wire.framing import EventReader

    from tests.helpers.engine import broker_response, reply_bytes

    got_put = asyncio.Event()

    async def vanishing_broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        framer = EventReader()
        negotiated = False
        while data := await reader.read(65536):
            for event in framer.feed(data):
                if event.header.type == EventType.PUT:
                    got_put.set()
                    writer.transport.abort()  # hang up without a word
                    return
                if not negotiated:
                    negotiated = True
                    writer.write(broker_response())
                elif event.header.type == EventType.CONTROL:
                    writer.write(reply_bytes(decode_control_as(event, ctrl.ControlMessage)[0]))

    server = await asyncio.start_server(vanishing_broker, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        # Reconnect is on by default (issue 28); this is about the session that ends.
        session = AsyncSession(f"tcp://127.0.0.1:{port}", options=SessionOptions(reconnect=False))
        await session.start()
        queue = await session.open_queue(PRIORITY, read=True, write=True)
        waiting_get = asyncio.ensure_future(queue.get())
        with pytest.raises(SessionStoppedError, match="post not acknowledged"):
            await asyncio.wait_for(queue.post(b"lost"), 10)
        assert got_put.is_set()
        with pytest.raises(SessionStoppedError):
            await asyncio.wait_for(waiting_get, 10)
        with pytest.raises(SessionStoppedError):
            await session.open_queue(PRIORITY + "-2", read=True)
        assert "connection" in (session.stop_reason or "")
        await session.stop()  # idempotent after a loss
    finally:
        server.close()
        await server.wait_closed()


async def test_higher_consumer_priority_takes_every_message(broker: str) -> None:
    async with AsyncSession(broker) as s1, AsyncSession(broker) as s2, AsyncSession(broker) as p:
        high = await s1.open_queue(PRIORITY, read=True, consumer_priority=5)
        low = await s2.open_queue(PRIORITY, read=True, options=QueueOptions(consumer_priority=0))
        with pytest.raises(UsageError, match="unknown queue option"):
            await s1.open_queue(PRIORITY + "-x", read=True, priority=5)
        writer = await p.open_queue(PRIORITY, write=True)
        acks = await asyncio.gather(*(writer.post(b"%d" % i) for i in range(10)))
        assert all(a.ok for a in acks)
        assert await take(high, 10) == [b"%d" % i for i in range(10)]
        # A no-op round trip on the low consumer's session: anything pushed would be here now.
        await low.configure(consumer_priority=0, max_unconfirmed_messages=100)
        assert low.get_nowait() is None


async def test_fanout_apps_and_writer_in_one_session_share_a_qid(broker: str) -> None:
    """As the official SDK does: one qId for the queue, a subId per appId, PUSH routed by subId."""
    async with AsyncSession(broker) as session:
        foo = await session.open_queue(FANOUT + "-one?id=foo", read=True)
        bar = await session.open_queue(FANOUT + "-one?id=bar", read=True)
        writer = await session.open_queue(FANOUT + "-one", write=True)
        queues = session.engine.queues
        assert len({q.qid for q in queues.values()}) == 1
        assert len({q.sub_id for q in queues.values()}) == 3
        for i in range(5):
            assert (await writer.post(b"g%d" % i)).ok
        expected = [b"g%d" % i for i in range(5)]
        assert await take(foo, 5) == expected
        assert await take(bar, 5) == expected
        await foo.close()
        assert (await writer.post(b"after foo closed")).ok
        assert await take(bar, 1) == [b"after foo closed"]


async def test_posts_and_confirms_of_one_loop_turn_leave_in_one_event_each() -> None:
    """The shell flushes once per loop turn: 100 post_nowait calls → one PUT event on the wire;
    100 confirms → one CONFIRM event."""
    from pybmq.generated import bmqp_ctrlmsg as ctrl
    from pybmq.generated.wire_codec import EventType
    from pybmq.wire.batches import iter_confirm
    from pybmq.wire.control import decode_control_as
    from pybmq.wire.framing import EventReader
    from pybmq.wire.push import PushEventBuilder
    from pybmq.wire.put import iter_put

    from tests.helpers.engine import broker_response, reply_bytes

    puts: list[int] = []
    confirms: list[int] = []
    seen = asyncio.Event()

    async def counting_broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        framer = EventReader()
        negotiated = False
        while data := await reader.read(1 << 20):
            for event in framer.feed(data):
                if event.header.type == EventType.PUT:
                    messages = list(iter_put(event))
                    puts.append(len(messages))
                    pushes = PushEventBuilder()
                    for m in messages:  # echo them back as PUSHes to the reader (qId 0)
                        pushes.add(0, m.guid, m.payload)
                    for chunk in pushes.finish():
                        writer.write(chunk)
                elif event.header.type == EventType.CONFIRM:
                    confirms.append(len(list(iter_confirm(event))))
                    seen.set()
                elif not negotiated:
                    negotiated = True
                    writer.write(broker_response())
                elif event.header.type == EventType.CONTROL:
                    writer.write(reply_bytes(decode_control_as(event, ctrl.ControlMessage)[0]))
        writer.close()

    server = await asyncio.start_server(counting_broker, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with AsyncSession(f"tcp://127.0.0.1:{port}") as session:
            queue = await session.open_queue(PRIORITY, read=True, write=True, ack=False)
            with pytest.raises(UsageError, match="ack=False"):
                await queue.post(b"would wait forever")
            for i in range(100):
                queue.post_nowait(b"turn-%d" % i)
            received = [await asyncio.wait_for(queue.get(), 10) for _ in range(100)]
            assert [m.payload for m in received] == [b"turn-%d" % i for i in range(100)]
            for message in received:
                message.confirm_nowait()
            await asyncio.wait_for(seen.wait(), 10)
            assert puts == [100]
            assert confirms == [100]
    finally:
        server.close()
        await server.wait_closed()


async def test_sync_session_start_failure_is_clean() -> None:
    import threading

    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()

    def script() -> None:
        before = {t.name for t in threading.enumerate()}
        session = Session(f"tcp://127.0.0.1:{port}")
        with pytest.raises(SessionStoppedError, match="cannot connect"):
            session.start()
        with pytest.raises(SessionStoppedError):
            session.open_queue(PRIORITY, read=True)
        session.stop()  # idempotent
        assert {t.name for t in threading.enumerate()} - before == set()

    await asyncio.to_thread(script)
