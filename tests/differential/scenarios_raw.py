"""The differential catalogue, round two: what a client would never send, over raw connections —
consumer parameters a broker refuses (and the negative flow control that aborts it), the codes of
an open's refusals, the same GUID twice in one PUT event, an empty message, properties that do
not decode, and a properties area that overruns its message. Registered into ``SCENARIOS`` when
imported (``test_differential`` imports it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pybmq.client.aio import AsyncSession
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import AckStatus, EventType, PutHeaderFlags
from pybmq.wire.batches import iter_ack
from pybmq.wire.control import decode_control_as, encode_control
from pybmq.wire.properties import MessageProperties
from pybmq.wire.put import PutEventBuilder

from tests.differential.scenarios import PRIORITY, Outcome, _hello, _open, _read_event, scenario

READ, WRITE, ACK_FLAG = 2, 4, 8  # QueueFlags bits
ACK = int(PutHeaderFlags.ACK_REQUESTED)
PROPERTIES = int(PutHeaderFlags.MESSAGE_PROPERTIES)
INT_MIN = -(2**31)


def _guid(n: int) -> bytes:
    return b"\x40" + n.to_bytes(15, "big")


class RawClient:
    """A negotiated connection that sends what it is told and reports what comes back."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def __init__(self) -> None:
        self.r_id = 0

    async def connect(self, url: str) -> RawClient:
        host, port = url.removeprefix("tcp://").rsplit(":", 1)
        self.reader, self.writer = await asyncio.open_connection(host, int(port))
        self.writer.write(_hello())
        await asyncio.wait_for(_read_event(self.reader), 5)
        return self

    def close(self) -> None:
        self.writer.close()

    async def control(self, message: Any) -> str:
        """Send a ControlMessage: "ok", "<category> <code>" of a failure, or "closed"."""
        self.r_id += 1
        message.r_id = self.r_id
        self.writer.write(encode_control(message))
        while True:
            try:
                kind, event = await asyncio.wait_for(_read_event(self.reader), 5)
            except (asyncio.IncompleteReadError, ConnectionError):
                return "closed"
            if kind == EventType.CONTROL:
                answer, _ = decode_control_as(event, ctrl.ControlMessage)
                status = answer.status
                return "ok" if status is None else f"{status.category.name} {status.code}"

    async def put(self, *messages: tuple[int, bytes, int], settle: float = 1.0) -> list[Any]:
        """One PUT event on queue id 1 ((GUID number, application data, flags) each); then what
        comes back within ``settle`` s: [status name, GUID number] per ACK, "closed" if the
        broker hangs up."""
        builder = PutEventBuilder()
        for n, data, flags in messages:
            schema = 1 if flags & PROPERTIES else None
            builder.add(1, data, guid=_guid(n), raw=True, flags=flags, schema_id=schema)
        for event in builder.finish():
            self.writer.write(event)
        got: list[Any] = []
        while True:
            try:
                kind, event = await asyncio.wait_for(_read_event(self.reader), settle)
            except asyncio.TimeoutError:
                return got
            except (asyncio.IncompleteReadError, ConnectionError):
                return [*got, "closed"]
            if kind == EventType.ACK:
                got.extend(
                    [AckStatus(a.status).name, int.from_bytes(a.guid[1:], "big")]
                    for a in iter_ack(event)
                )


@asynccontextmanager
async def raw(url: str, writing: str | None = None) -> AsyncIterator[RawClient]:
    """A negotiated raw connection for the block (with ``writing``, that queue open for writing,
    ACKs asked for, as queue id 1)."""
    client = await RawClient().connect(url)
    try:
        if writing is not None:
            opened = await client.control(_open(writing, 1, WRITE | ACK_FLAG, write_count=1))
            assert opened == "ok", opened
        yield client
    finally:
        client.close()


async def _received(url: str, queue: str, settle: float = 1.0) -> list[list[str]]:
    """What a pybmq consumer of ``queue`` receives: [payload, error type or ""] each."""
    got: list[list[str]] = []
    async with AsyncSession(url) as session:
        reader = await session.open_queue(queue, read=True)
        while True:
            try:
                message = await asyncio.wait_for(reader.get(), settle)
            except asyncio.TimeoutError:
                return got
            error = message.error  # read before the payload: a property error shows here
            got.append([message.payload.decode(), type(error).__name__ if error else ""])
            await message.confirm()


def _configure(q_id: int, expression: str = "", **consumer: int) -> ctrl.ControlMessage:
    values = {
        "max_unconfirmed_messages": 10,
        "max_unconfirmed_bytes": 1 << 20,
        "consumer_priority": 0,
        "consumer_priority_count": 1,
        **consumer,
    }
    text = ctrl.Expression(version=ctrl.ExpressionVersion.E_VERSION_1, text=expression)
    subscription = ctrl.Subscription(
        s_id=1,
        expression=text if expression else ctrl.Expression(),
        consumers=[ctrl.ConsumerInfo(**values)],
    )
    params = ctrl.StreamParameters(subscriptions=[subscription])
    return ctrl.ControlMessage(
        configure_stream=ctrl.ConfigureStream(q_id=q_id, stream_parameters=params)
    )


# -- consumer parameters --------------------------------------------------------------------------


@scenario
async def raw_configure_with_bad_consumer_priorities(url: str) -> Outcome:
    cases = {
        "priority_none_count_1": {"consumer_priority": INT_MIN},
        "count_0": {"consumer_priority_count": 0},
        "count_negative": {"consumer_priority_count": -1},
        "priority_none_count_0": {"consumer_priority": INT_MIN, "consumer_priority_count": 0},
        "priority_max": {"consumer_priority": 2**31 - 1},
    }
    out = {}
    async with raw(url) as client:
        for q_id, (name, consumer) in enumerate(cases.items(), 1):
            opened = await client.control(_open(f"{PRIORITY}-prio{q_id}", q_id, READ, read_count=1))
            out[name] = [opened, await client.control(_configure(q_id, **consumer))]
    return out


async def _negative(url: str, **consumer: int) -> Outcome:
    """A reader configured with negative flow control, and whether the broker is still there."""
    async with raw(url) as client:
        opened = await client.control(_open(f"{PRIORITY}-negative", 1, READ, read_count=1))
        configured = await client.control(_configure(1, **consumer))
    try:
        async with raw(url):
            broker = "up"
    except OSError:
        broker = "gone"
    return {"open": opened, "configure": configured, "broker": broker}


@scenario
async def raw_subscription_with_a_bad_expression(url: str) -> Outcome:
    """An expression that does not parse, sent as is: the client refuses it before sending (as
    the official SDKs compile it first), so only a raw peer gets it to the broker."""
    async with raw(url) as client:
        opened = await client.control(_open(f"{PRIORITY}-badexpr", 1, READ, read_count=1))
        configured = await client.control(_configure(1, expression="n %% == 1"))
    return {"open": opened, "configure": configured}


@scenario
async def raw_configure_with_negative_max_unconfirmed_messages(url: str) -> Outcome:
    return await _negative(url, max_unconfirmed_messages=-1)


@scenario
async def raw_configure_with_negative_max_unconfirmed_bytes(url: str) -> Outcome:
    return await _negative(url, max_unconfirmed_bytes=-1)


@scenario
async def raw_open_refusal_codes(url: str) -> Outcome:
    good = f"{PRIORITY}-codes"
    cases = {
        "not_a_uri": _open("not a uri", 1, WRITE, write_count=1),
        "no_queue_name": _open("bmq://bmq.test.mem.priority", 2, WRITE, write_count=1),
        "no_domain": _open("bmq://", 3, WRITE, write_count=1),
        "space_in_queue_name": _open(f"{good} x", 4, WRITE, write_count=1),
        "queue_name_of_65": _open(f"bmq://bmq.test.mem.priority/{'q' * 65}", 5, WRITE),
        "unknown_domain": _open("bmq://bmq.no.such/raw", 6, WRITE, write_count=1),
        "no_flags": _open(good, 7, 0),
        "counts_disagree": _open(good, 8, READ, read_count=0),
    }
    async with raw(url) as client:
        return {name: await client.control(request) for name, request in cases.items()}


# -- PUTs -----------------------------------------------------------------------------------------


@scenario
async def raw_put_same_guid_twice_in_one_event(url: str) -> Outcome:
    queue = f"{PRIORITY}-same-guid"
    async with raw(url, writing=queue) as client:
        one_event = await client.put(
            (1, b"a", ACK), (2, b"b", 0), (1, b"a-again", ACK), (3, b"c", ACK)
        )
        retransmitted = await client.put((1, b"a-later", ACK))
    return {
        "acks": one_event,
        "retransmission_acks": retransmitted,
        "received": await _received(url, queue),
    }


@scenario
async def raw_put_with_an_empty_message(url: str) -> Outcome:
    queue = f"{PRIORITY}-empty-raw"
    async with raw(url, writing=queue) as client:
        event = await client.put((1, b"first", ACK), (2, b"", ACK), (3, b"third", ACK))
        after = await client.put((4, b"after", ACK))  # is the connection still there?
    return {"acks": event, "after_acks": after, "received": await _received(url, queue)}


@scenario
async def raw_put_with_properties_that_do_not_decode(url: str) -> Outcome:
    queue = f"{PRIORITY}-bad-properties"
    good = MessageProperties({"n": 3}).encode(extended=True)
    bad_type = bytearray(good)
    bad_type[6] = (bad_type[6] & 0x07) | (15 << 3)  # a property type that does not exist
    bad_count = bytearray(good)
    bad_count[5] = 2  # two properties claimed, one there
    async with raw(url, writing=queue) as client:
        acks = await client.put(
            (1, bytes(bad_type) + b"bad-type", ACK | PROPERTIES),
            (2, bytes(bad_count) + b"bad-count", ACK | PROPERTIES),
            (3, good + b"good", ACK | PROPERTIES),
        )
    return {"acks": acks, "received": await _received(url, queue)}


@scenario
async def raw_put_with_a_properties_area_past_its_message(url: str) -> Outcome:
    queue = f"{PRIORITY}-overrun"
    async with raw(url, writing=queue) as client:
        # The area's header claims more words than the message has: the event does not parse.
        event = await client.put(
            (1, b"first", ACK), (2, b"\x01\x02\x03\x04\x05\x06\x07\x08x", ACK | PROPERTIES)
        )
        after = await client.put((3, b"after", ACK))  # "closed" if the connection was
    return {"acks": event, "after_acks": after, "received": await _received(url, queue)}
