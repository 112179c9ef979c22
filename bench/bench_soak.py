"""Soak: hostile connections against ``pybmq sim`` while a normal producer/consumer pair works.

The attackers (garbage bytes, one-byte drips, oversized control headers, sockets that never
negotiate; and, as clients that negotiate, consumers with a huge credit that never read,
producers of zlib bombs for them, consumers of the pair's queue with a subscription that matches
nothing, and ordinary clients that send admin commands purging the pair's queue) reconnect in a
loop for the whole duration. With ``--tls`` (the default when ``trustme`` is installed) the
simulator serves TLS only, so every raw-socket attacker is a garbage, dripping or stalled TLS
handshake. The pair posts and consumes ``messages`` messages; the same pair is first measured
against an unattacked simulator, and the attacked run is reported as a ratio to it. Also
reported: the simulator's peak RSS and lost or stuck messages (must be 0).

    python -m bench bench_soak                          # 500 attackers, 60 s, 100k messages
    python -m bench.bench_soak --duration 5 --attackers 50 --messages 5000 [--no-tls]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

from pybmq.client.aio import AsyncSession
from pybmq.client.loadgen import Stats, consume_messages, make_payload, post_messages
from pybmq.client.options import SessionOptions
from pybmq.errors import PybmqError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import CompressionAlgorithmType, EventType
from pybmq.uri import parse_broker_url
from pybmq.wire.control import encode_control
from pybmq.wire.framing import event_header_bytes
from pybmq.wire.put import PutEventBuilder

from bench.common import Result, print_table

PAYLOAD = make_payload(100)
QUEUE = "bmq://bmq.test.mem.priority/bench-soak"
STALLED = "bmq://bmq.test.mem.priority/bench-soak-stalled"
_BOMB: list[bytes] = []


def _bomb() -> bytes:
    """A valid zlib stream that inflates to 64 MiB of zeros (about 64 KiB), made once."""
    if not _BOMB:
        packer = zlib.compressobj(9)
        chunk = bytes(1 << 20)
        _BOMB.append(b"".join([packer.compress(chunk) for _ in range(64)] + [packer.flush()]))
    return _BOMB[0]


async def _until_closed(reader: asyncio.StreamReader, deadline: float) -> None:
    loop = asyncio.get_running_loop()
    while (left := deadline - loop.time()) > 0:
        try:
            if not await asyncio.wait_for(reader.read(65536), left):
                return
        except (TimeoutError, asyncio.TimeoutError, ConnectionError):
            return


async def _garbage(writer: asyncio.StreamWriter, rng: random.Random) -> None:
    writer.write(rng.randbytes(4096))


async def _drip(writer: asyncio.StreamWriter, rng: random.Random) -> None:
    for _ in range(100):
        writer.write(b"\0")
        await asyncio.sleep(2.0)


async def _huge_control(writer: asyncio.StreamWriter, rng: random.Random) -> None:
    writer.write(event_header_bytes(EventType.CONTROL, 30 << 20) + b"{" * 65536)


async def _silent(writer: asyncio.StreamWriter, rng: random.Random) -> None:
    await asyncio.sleep(3600)


ATTACKS: tuple[Callable[[asyncio.StreamWriter, random.Random], Coroutine[Any, Any, None]], ...] = (
    _garbage,
    _drip,
    _huge_control,
    _silent,
)


async def _stalled(session: AsyncSession, stop_at: float) -> None:
    """A consumer with a huge credit that never reads what it is sent."""
    await session.open_queue(
        STALLED, read=True, max_unconfirmed_messages=10**6, max_unconfirmed_bytes=1 << 40
    )
    if session.transport is not None:
        session.transport.pause_reading()
    await asyncio.sleep(max(stop_at - asyncio.get_running_loop().time(), 0.0))


async def _bomber(session: AsyncSession, stop_at: float) -> None:
    """A producer of PUT events of 8 zlib bombs (64 MiB each when inflated), every 2 s."""
    queue = await session.open_queue(STALLED, write=True, ack=False)
    qid = session.engine.queues[queue.queue_id].qid
    loop = asyncio.get_running_loop()
    while loop.time() < stop_at and session.transport is not None:
        builder = PutEventBuilder()
        for _ in range(8):
            builder.add(qid, _bomb(), guid=os.urandom(16), raw=True,
                        compression=CompressionAlgorithmType.ZLIB)  # fmt: skip
        for event in builder.finish():
            session.transport.write(event)
        await asyncio.sleep(2.0)


async def _subscriber(session: AsyncSession, stop_at: float) -> None:
    """A consumer of the pair's queue, on top priority, whose (legal, 8-operator) expression
    matches none of its messages: every message is checked against it, none waits for it."""
    await session.open_queue(
        QUEUE, read=True, consumer_priority=5, subscriptions=("kind == 1 && n > 2 && n < 9",)
    )
    await asyncio.sleep(max(stop_at - asyncio.get_running_loop().time(), 0.0))


async def _admin_intruder(session: AsyncSession, stop_at: float) -> None:
    """An ordinary client that sends an admin command purging the pair's queue (the broker
    disconnects it, and purges nothing); it comes back every half second."""
    command = ctrl.AdminCommand(
        command="DOMAINS DOMAIN bmq.test.mem.priority QUEUE bench-soak PURGE *"
    )
    message = ctrl.ControlMessage(r_id=2**30, admin_command=command)
    if session.transport is not None:
        session.transport.write(encode_control(message, "JSON"))
    loop = asyncio.get_running_loop()
    while loop.time() < stop_at and session.transport is not None:
        await asyncio.sleep(0.5)
        if session.state.value != "STARTED":
            return


SESSION_ATTACKS: dict[int, Callable[[AsyncSession, float], Coroutine[Any, Any, None]]] = {
    1: _subscriber,
    3: _stalled,
    5: _admin_intruder,
    7: _bomber,
}


async def _session_attacker(
    url: str, options: SessionOptions, index: int, stop_at: float, counts: list[int]
) -> None:
    """Attack as a client that negotiates, starting again whenever its session ends."""
    attack = SESSION_ATTACKS[index % 10]
    loop = asyncio.get_running_loop()
    while loop.time() < stop_at:
        await asyncio.sleep(0.5 if attack is _admin_intruder else 0.0)
        session = AsyncSession(url, options=options)
        try:
            await session.start()
            counts[0] += 1
            await attack(session, stop_at)
        except (PybmqError, OSError):
            await asyncio.sleep(0.5)
        finally:
            with contextlib.suppress(PybmqError, OSError, asyncio.TimeoutError):
                await asyncio.wait_for(session.stop(), 5.0)


async def _attacker(host: str, port: int, index: int, stop_at: float, counts: list[int]) -> None:
    """Attack with one kind, reconnecting whenever the simulator closes the connection."""
    rng = random.Random(index)
    attack = ATTACKS[index % len(ATTACKS)]
    loop = asyncio.get_running_loop()
    while loop.time() < stop_at:
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            await asyncio.sleep(0.5)
            continue
        counts[0] += 1
        task = asyncio.ensure_future(attack(writer, rng))
        await _until_closed(reader, stop_at)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, OSError):
            await task
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        await asyncio.sleep(0.1)  # a crowd of hostile connections, not a connect flood


async def _pair(url: str, options: SessionOptions, messages: int) -> tuple[Stats, Stats]:
    async with (
        AsyncSession(url, options=options) as producer,
        AsyncSession(url, options=options) as consumer,
    ):
        writer = await producer.open_queue(QUEUE, write=True)
        reader = await consumer.open_queue(QUEUE, read=True)
        consuming = asyncio.ensure_future(consume_messages(reader, messages, idle_timeout=60.0))
        posted = await post_messages(writer, messages, PAYLOAD, window=1000, measure_latency=True)
        consumed = await consuming
    return posted, consumed


async def _run(
    url: str, options: SessionOptions, messages: int, attackers: int, duration: float
) -> dict[str, float]:
    host, port = parse_broker_url(url)
    loop = asyncio.get_running_loop()
    stop_at = loop.time() + duration
    counts = [0]
    # Of every 10 attackers, one each is a subscriber, a stalled consumer, an admin intruder and
    # a bomber (clients that negotiate); the rest are raw sockets.
    tasks = [
        asyncio.ensure_future(
            _session_attacker(url, options, i, stop_at, counts)
            if i % 10 in SESSION_ATTACKS
            else _attacker(host, port, i, stop_at, counts)
        )
        for i in range(attackers)
    ]
    if attackers:
        await asyncio.sleep(min(2.0, duration / 4))  # let the attack build up first
    posted, consumed = await _pair(url, options, messages)
    await asyncio.gather(*tasks)
    latencies = sorted(posted.latencies)
    return {
        "rate": consumed.count / max(posted.seconds, consumed.seconds, 1e-9),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else 0.0,
        "median_ms": 1000 * statistics.median(latencies) if latencies else 0.0,
        "lost": messages - consumed.count,
        "failed": posted.failed,
        "connections": counts[0],
    }


def _peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


@contextlib.contextmanager
def _sim(pids: list[int], tls: bool) -> Iterator[tuple[str, SessionOptions]]:
    """``pybmq sim`` in its own process (serving TLS only with ``tls``): its URL and the options
    a client needs to reach it."""
    args, options = [], SessionOptions()
    with tempfile.TemporaryDirectory(prefix="pybmq-soak-") as folder:
        if tls:
            import trustme  # a test dependency: --no-tls runs without it

            ca = trustme.CA()
            cert = ca.issue_cert("127.0.0.1")
            paths = [Path(folder, name) for name in ("cert.pem", "key.pem", "ca.pem")]
            cert.cert_chain_pems[0].write_to_path(str(paths[0]))
            cert.private_key_pem.write_to_path(str(paths[1]))
            ca.cert_pem.write_to_path(str(paths[2]))
            args = ["--tls-cert", str(paths[0]), "--tls-key", str(paths[1])]
            options = SessionOptions(tls_ca=str(paths[2]))
        sim = subprocess.Popen(
            [sys.executable, "-m", "pybmq.cli", "sim", "--port", "0", *args],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        pids.append(sim.pid)
        try:
            assert sim.stdout is not None
            url = sim.stdout.readline().strip().rsplit(" ", 1)[-1]
            if not url.startswith("tcp://"):
                raise RuntimeError(f"pybmq sim did not start: {url!r}")
            yield url, options
        finally:
            sim.send_signal(signal.SIGTERM)
            try:
                sim.wait(20)
            except subprocess.TimeoutExpired:
                sim.kill()
                sim.wait(10)


def _have_trustme() -> bool:
    try:
        import trustme  # noqa: F401
    except ImportError:
        return False
    return True


def measure(messages: int, attackers: int, duration: float, tls: bool = True) -> list[Result]:
    results = []
    figures = {}
    tls = tls and _have_trustme()
    for label, count in (("unattacked", 0), ("attacked", attackers)):
        pids: list[int] = []
        with _sim(pids, tls) as (url, options):
            started = time.perf_counter()
            run = asyncio.run(_run(url, options, messages, count, duration if count else 0.0))
            run["seconds"] = time.perf_counter() - started
            run["rss_mib"] = _peak_rss_mib(pids[0]) if os.path.exists("/proc") else float("nan")
        figures[label] = run
    base, hit = figures["unattacked"], figures["attacked"]
    note = f"{attackers} attackers, {duration:.0f}s, {messages} messages{', TLS' if tls else ''}"
    results += [
        Result("soak: pair rate unattacked", base["rate"], "msg/s"),
        Result("soak: pair rate attacked / unattacked", hit["rate"] / base["rate"], "x", note),
        Result("soak: ACK p99 unattacked", base["p99_ms"], "ms"),
        Result("soak: ACK p99 attacked / unattacked", hit["p99_ms"] / base["p99_ms"], "x", note),
        Result("soak: sim peak RSS unattacked", base["rss_mib"], "MiB"),
        Result("soak: sim peak RSS attacked", hit["rss_mib"], "MiB", note),
        Result("soak: attacker connections", hit["connections"], "conn"),
        Result("soak: lost or stuck messages", hit["lost"] + base["lost"], "msg"),
        Result("soak: NACKed or failed posts", hit["failed"] + base["failed"], "msg"),
    ]
    return results


def run(quick: bool) -> list[Result]:
    if quick:
        return measure(messages=2_000, attackers=20, duration=3.0)
    return measure(messages=100_000, attackers=500, duration=60.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_soak")
    parser.add_argument("--duration", type=float, default=60.0, help="attack seconds (60)")
    parser.add_argument("--attackers", type=int, default=500, help="hostile connections (500)")
    parser.add_argument("--messages", type=int, default=100_000, help="the pair's messages")
    parser.add_argument("--no-tls", action="store_true", help="serve plain TCP, not TLS")
    args = parser.parse_args(argv)
    print_table(measure(args.messages, args.attackers, args.duration, tls=not args.no_tls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
