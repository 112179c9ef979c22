"""What distributed tracing costs the asyncio shell's post and consume paths.

Three variants of each path, on one loop with the simulator, CPU time of this thread, samples
interleaved and the best of each kept:

- "no hook": the path's body as it was before tracing existed (the engine's ``post`` and the
  flush scheduling; the ``ReceivedMessage`` list and the delivery bookkeeping), called directly;
- "off": the real ``AsyncQueue`` methods of a session without a tracer (tracing is a layer of
  its own, ``TracedQueue``: what is left is the call to the post primitive the layer wraps)
  — goal: within 5 % of "no hook";
- "on": a session with an OpenTelemetry SDK ``TracerProvider`` (spans recorded, no exporter:
  the cost of making them, not of shipping them).

Post: ``post_nowait`` of 100-byte payloads with two properties and a shared ``on_ack`` (only the
calls are timed, the ACKs are awaited after). Consume: ``deliver_many`` of a run of messages
(what the session does per PUSH event) and ``get_many_nowait`` taking them.
"""

from __future__ import annotations

import asyncio
import gc
import time
import types
from collections.abc import Callable, Mapping
from typing import Any

from pybmq.client.aio import AsyncSession
from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage
from pybmq.client.events import Ack, Message
from pybmq.client.loadgen import make_payload
from pybmq.client.options import SessionOptions
from pybmq.sim.server import BrokerSimulator
from pybmq.wire.properties import MessageProperties

from bench.common import Result

PAYLOAD = make_payload(100)
PROPERTIES = {"encoding": 3, "source": "bench"}
QUEUE = "bmq://bmq.test.mem.priority/bench-tracing"


def _on_ack(ack: Ack) -> None:
    return None


def _old_post_nowait(
    self: AsyncQueue,
    payload: bytes,
    *,
    properties: Mapping[str, Any] | None = None,
    on_ack: Callable[[Ack], object] | None = None,
    ack: bool = True,
) -> bytes:
    """``AsyncQueue.post_nowait`` as it was before tracing (the same body, no check)."""
    driver = self.driver
    guid = driver.engine.post(
        self.queue_id, payload, driver.now(), properties=properties, context=on_ack, ack=ack
    )
    driver.schedule_flush()
    return guid


def _old_deliver_many(
    self: AsyncQueue, messages: list[Message], generation: int, received_at: float
) -> None:
    """``AsyncQueue.deliver_many`` as it was before tracing."""
    self._messages.extend(
        [ReceivedMessage(self, message, generation, received_at) for message in messages]
    )
    if self._counted:
        self.driver.delivered(len(messages))
    waiters = self._waiters
    for _ in messages:
        if not waiters:
            break
        self._wake_one()


def _post(post: Callable[..., bytes], count: int) -> None:
    for _ in range(count):
        post(PAYLOAD, properties=PROPERTIES, on_ack=_on_ack)


def _timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.thread_time()
    fn()
    return time.thread_time() - start


async def _measure(quick: bool) -> dict[str, float]:
    from opentelemetry.sdk.trace import TracerProvider

    count = 500 if quick else 5_000
    samples = 1 if quick else 12
    best: dict[str, float] = {}

    def keep(name: str, seconds: float) -> None:
        if seconds > 0:
            best[name] = max(best.get(name, 0.0), count / seconds)

    options = SessionOptions(reconnect=False)
    traced = SessionOptions(reconnect=False, tracer_provider=TracerProvider())
    async with (
        BrokerSimulator() as sim,
        AsyncSession(sim.url, options=options) as plain,
        AsyncSession(sim.url, options=traced) as tracing,
    ):
        queues = {
            "plain": await plain.open_queue(QUEUE, write=True),
            "traced": await tracing.open_queue(QUEUE, write=True),
        }
        readers = {
            "plain": await plain.open_queue(QUEUE + "-r", read=True, max_unconfirmed_messages=0),
            "traced": await tracing.open_queue(QUEUE + "-r", read=True, max_unconfirmed_messages=0),
        }
        old_post = types.MethodType(_old_post_nowait, queues["plain"])
        props = MessageProperties(PROPERTIES)
        messages = [
            Message(0, i.to_bytes(16, "big"), PAYLOAD, props, None, None, 120) for i in range(count)
        ]
        consumers: list[tuple[str, str, bool]] = [
            ("consume no hook", "plain", True),
            ("consume off", "plain", False),
            ("consume on", "traced", False),
        ]
        for round_ in range(samples):
            variants: list[tuple[str, AsyncSession, Callable[[], object]]] = [
                ("post no hook", plain, lambda: _post(old_post, count)),
                ("post off", plain, lambda: _post(queues["plain"].post_nowait, count)),
                ("post on", tracing, lambda: _post(queues["traced"].post_nowait, count)),
            ]
            # Each round starts with another variant: none is always first after a pause.
            shift = round_ % 3
            variants = variants[shift:] + variants[:shift]
            for name, session, fn in variants:
                keep(name, _timed(fn))
                await session.drain()
                while session.engine.unacked_count:
                    await asyncio.sleep(0.001)
            for name, key, old in consumers[shift:] + consumers[:shift]:
                reader = readers[key]
                deliver = (
                    types.MethodType(_old_deliver_many, reader) if old else reader.deliver_many
                )
                generation = reader.driver.engine.generation
                queue_messages = [m._replace(queue_id=reader.queue_id) for m in messages]

                def consume(
                    reader: AsyncQueue = reader,
                    deliver: Any = deliver,
                    batch: list[Message] = queue_messages,
                    generation: int = generation,
                ) -> None:
                    deliver(batch, generation, 0.0)
                    reader.get_many_nowait(count)

                keep(name, _timed(consume))
    return best


def run(quick: bool) -> list[Result]:
    best = asyncio.run(_measure(quick))
    out = []
    for path in ("post", "consume"):
        base, off, on = best[f"{path} no hook"], best[f"{path} off"], best[f"{path} on"]
        out += [
            Result(f"tracing {path}: no hook", base, "msg/s", "CPU time, the path before tracing"),
            Result(
                f"tracing {path}: off",
                off,
                "msg/s",
                f"{(base / off - 1) * 100:+.1f} % cost, goal < 5 %",
            ),
            Result(
                f"tracing {path}: on",
                on,
                "msg/s",
                f"+{(1 / on - 1 / base) * 1e6:.1f} us per message, SDK spans, no exporter",
            ),
        ]
    return out
