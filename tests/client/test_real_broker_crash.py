"""A producer with reconnect on a file-backed queue while the real broker is SIGKILLed and
restarted three times (skipped without ``$BMQ_BROKER_BIN``): every post gets exactly one outcome
(an ACK, a NACK or a refusal at post), and every ACKed message is delivered afterwards; with the
default options, at least 99 % of 20,000 posts are ACKed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict

import pytest
from pybmq.client.aio import AsyncSession
from pybmq.client.events import Ack, ConnectionLost, Reconnected
from pybmq.client.options import SessionOptions
from pybmq.client.reconnect import ReconnectPolicy
from pybmq.client.sync import Session
from pybmq.errors import PybmqError
from pybmq.testing.real_broker import RealBroker

pytestmark = pytest.mark.timeout(240)

QUEUE = "bmq://bmq.test.persistent.priority/crash-under-load"
POSTS = 3000  # at least this many, at about 2,500/s; then slower until the last crash is done
MAX_POSTS = 20_000  # a bound if the crashes take far longer than expected
CRASHES = 3
# One endpoint: retry faster than the default policy, so the crashes come close together.
POLICY = ReconnectPolicy(initial_delay=0.05, max_delay=0.5, isolation_period=0.5)


def _consume_all(url: str, idle: float = 3.0, bound: float = 60.0) -> list[bytes]:
    got: list[bytes] = []
    with Session(url) as session:
        queue = session.open_queue(QUEUE, read=True)
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline:
            try:
                message = queue.get(timeout=idle)
            except TimeoutError:
                break
            got.append(message.payload)
            queue.confirm(message)
    return got


def test_every_post_has_one_outcome_and_every_ack_is_delivered(
    bmq_real_broker: RealBroker,
) -> None:
    outcomes: dict[bytes, list[str]] = defaultdict(list)
    lock = threading.Lock()
    options = SessionOptions(reconnect=True, reconnect_policy=POLICY, ack_timeout=30.0)
    posted = threading.Event()
    events: list[object] = []
    crashes_done = [0]
    during_crashes: list[int] = []
    total = [0]  # posts made

    def record(payload: bytes, outcome: str) -> None:
        with lock:
            outcomes[payload].append(outcome)

    with Session(bmq_real_broker.url, options=options, on_event=events.append) as session:
        writer = session.open_queue(QUEUE, write=True)

        def produce() -> None:
            i = 0
            while i < MAX_POSTS and (i < POSTS or crashes_done[0] < CRASHES):
                payload = b"crash-%05d" % i

                def on_ack(ack: Ack, payload: bytes = payload) -> None:
                    record(payload, "ack" if ack.ok else f"nack {ack.status}")

                try:
                    writer.post_async(payload, on_ack=on_ack)
                except PybmqError as exc:
                    record(payload, f"refused {type(exc).__name__}")
                if i % 50 == 49:
                    # About 2,500 posts/s, then 500/s: posting goes on until every crash is done
                    # (a slow broker restart must not let the stream end before the crashes).
                    time.sleep(0.02 if i < POSTS else 0.1)
                i += 1
            with lock:
                during_crashes.append(crashes_done[0])
                total[0] = i
            posted.set()

        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        for crash in range(1, CRASHES + 1):
            time.sleep(0.3)
            bmq_real_broker.kill()
            time.sleep(0.2)
            bmq_real_broker.start()
            crashes_done[0] += 1
            # The next crash only once the session is back (bounded), so each one hits it.
            deadline = time.monotonic() + 30
            while sum(isinstance(e, Reconnected) for e in events) < crash:
                assert time.monotonic() < deadline, f"no reconnection after crash {crash}"
                time.sleep(0.02)
        assert posted.wait(120), "the producer did not finish posting"
        producer.join(10)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with lock:
                if len(outcomes) == total[0]:
                    break
            time.sleep(0.1)

    with lock:
        assert during_crashes[0] == CRASHES, "posting ended before the crashes could hit it"
        assert len(outcomes) == total[0], f"{total[0] - len(outcomes)} posts have no outcome"
        several = {p: o for p, o in outcomes.items() if len(o) != 1}
        assert not several, f"posts with more than one outcome: {list(several.items())[:5]}"
        acked = {p for p, (o,) in outcomes.items() if o == "ack"}
    assert acked, "nothing was ACKed"
    # The crashes hit the session: it lost the broker and came back each time.
    assert sum(isinstance(e, ConnectionLost) for e in events) >= CRASHES, events
    assert sum(isinstance(e, Reconnected) for e in events) >= CRASHES, events
    delivered = _consume_all(bmq_real_broker.url)
    missing = acked - set(delivered)
    assert not missing, f"{len(missing)} ACKed messages were not delivered: {sorted(missing)[:5]}"


DEFAULT_POSTS = 20_000
CRASH_AT = (2_000, 8_000, 14_000)  # the posts at which the broker is killed


async def _post_through_crashes(broker: RealBroker) -> tuple[dict[bytes, list[str]], int]:
    """20,000 posts as fast as the documented loop goes, every option at its default, while
    the broker is SIGKILLed and restarted three times; each post's outcomes, and the crashes."""
    outcomes: dict[bytes, list[str]] = defaultdict(list)
    crashes = 0
    loop = asyncio.get_running_loop()

    async def restart() -> None:
        nonlocal crashes
        await asyncio.sleep(0.3)
        await loop.run_in_executor(None, broker.start)
        crashes += 1

    async with AsyncSession(broker.url) as session:
        writer = await session.open_queue(QUEUE, write=True)
        crashing: list[asyncio.Future[None]] = []
        for i in range(DEFAULT_POSTS):
            if i in CRASH_AT:  # the posts go on while the broker is down and starting
                if crashing:  # one broker process at a time
                    await asyncio.wait_for(crashing[-1], 60)
                broker.kill()
                crashing.append(asyncio.ensure_future(restart()))
            payload = b"default-%05d" % i

            def on_ack(ack: Ack, payload: bytes = payload) -> None:
                outcomes[payload].append("ack" if ack.ok else f"nack {ack.status.value}")

            try:
                await session.drain()
                writer.post_nowait(payload, on_ack=on_ack)
            except PybmqError as exc:
                outcomes[payload].append(f"refused {type(exc).__name__}")
        await asyncio.wait_for(asyncio.gather(*crashing), 180)
        deadline = time.monotonic() + 90
        while sum(map(len, outcomes.values())) < DEFAULT_POSTS and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    return outcomes, crashes


def test_default_options_ride_out_three_crashes(bmq_real_broker: RealBroker) -> None:
    """With the defaults, posts made while the broker restarts wait for it (the byte budget and
    ``max_buffered_posts`` make them wait, not fail): nearly every post is ACKed."""
    outcomes, crashes = asyncio.run(_post_through_crashes(bmq_real_broker))
    assert crashes == CRASHES
    assert len(outcomes) == DEFAULT_POSTS
    several = {p: o for p, o in outcomes.items() if len(o) != 1}
    assert not several, f"posts with more than one outcome: {list(several.items())[:5]}"
    acked = {p for p, (o,) in outcomes.items() if o == "ack"}
    others = [o for (o,) in outcomes.values() if o != "ack"]
    assert len(acked) >= 0.99 * DEFAULT_POSTS, (len(acked), sorted(set(others))[:5])
    delivered = _consume_all(bmq_real_broker.url)
    missing = acked - set(delivered)
    assert not missing, f"{len(missing)} ACKed messages were not delivered: {sorted(missing)[:5]}"
