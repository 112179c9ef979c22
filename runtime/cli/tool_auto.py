"""``pybmq tool --mode auto``: bmqtool's automatic producer or consumer.

With ``--queueflags`` holding ``write`` it posts ``--eventscount`` events (0: until stopped) of
``--eventsize`` messages, ``--postrate`` events every ``--postinterval`` ms, each payload
``--messagepattern`` followed by its number (``msg000000042``) or ``--msgsize`` bytes, with
``--messageProperties``; with ``read`` it consumes (``-c`` confirms). Every second it prints
bmqtool's stats line (``produced |`` or ``consumed |`` then rates and counts), and ``--log FILE``
gets one line per PUT, ACK, PUSH and CONFIRM in bmqtool's file-logger shape (``PUT uri|[
autoValue = n ]|GUID|payload``), which upstream's retransmission tests read back.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import itertools
import time
from typing import IO, TYPE_CHECKING, Any

from pybmq.cli import tool_output as out
from pybmq.errors import PybmqError

__all__ = ["ACK_CODES", "FileLog", "Stats", "run_auto"]

if TYPE_CHECKING:
    import argparse

    from pybmq.client.aio import AsyncSession
    from pybmq.client.aio_queue import AsyncQueue
    from pybmq.client.events import Ack
    from pybmq.client.options import SessionOptions

ACK_CODES = {"SUCCESS": 0, "UNKNOWN": -1, "TIMEOUT": -2, "NOT_CONNECTED": -3, "CANCELED": -4,
             "NOT_READY": -8, "LIMIT_MESSAGES": -100, "LIMIT_BYTES": -101,
             "STORAGE_FAILURE": -104}  # fmt: skip


class FileLog:
    """bmqtool's ``--log`` file: one flushed line per message event (a killed tool loses none)."""

    def __init__(self, path: str | None) -> None:
        self._file: IO[str] | None = None  # held open for the run, closed by close()
        if path:
            self._file = open(path, "a", encoding="ascii", errors="replace")  # noqa: SIM115

    def write(self, category: str, *fields: str) -> None:
        if self._file is None:
            return
        now = datetime.datetime.now().strftime("%d%b%Y_%H:%M:%S.%f")[:-3].upper()
        self._file.write(f"{now} {category} {'|'.join(fields)}\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class Stats:
    """Messages and bytes since the start and in the last interval (bmqtool's stats line)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.messages = self.bytes = self._last_messages = self._last_bytes = 0
        self._last = time.monotonic()

    def add(self, size: int) -> None:
        self.messages += 1
        self.bytes += size

    def line(self) -> str:
        now = time.monotonic()
        span = max(now - self._last, 1e-6)
        delta, delta_bytes = self.messages - self._last_messages, self.bytes - self._last_bytes
        self._last, self._last_messages, self._last_bytes = now, self.messages, self.bytes
        rate = int(delta / span)
        return (
            f"{self.kind} |{rate:>14} |{delta:>14} |{delta_bytes:>12} B ||"
            f"{rate:>14} |{delta:>14} |{delta_bytes:>12} B"
        )


def _payload(args: argparse.Namespace, number: int) -> bytes:
    if args.messagepattern:
        return f"{args.messagepattern}{number:09d}".encode()
    size: int = args.msgsize
    return b"x" * max(size, 0)


async def run_auto(args: argparse.Namespace, log: out.ToolLog, options: SessionOptions) -> int:
    """The automatic mode, until its posts are ACKed (producer) or it is stopped."""
    from pybmq.client.aio import AsyncSession

    flags = {f.strip().lower() for f in (args.queueflags or "").split(",") if f.strip()}
    session = AsyncSession(options=options)
    file_log = FileLog(args.log)
    stats = Stats("produced" if "write" in flags else "consumed")
    try:
        await session.start(timeout=float(args.timeout))
        log.info("Session started.", "BMQTOOL.APPLICATION")
        messages, size = args.maxunconfirmed
        queue = await session.open_queue(
            args.queueuri, read="read" in flags, write="write" in flags, ack="ack" in flags,
            max_unconfirmed_messages=messages, max_unconfirmed_bytes=size,
        )  # fmt: skip
        printer = asyncio.get_running_loop().create_task(_print_stats(stats))
        try:
            if "write" in flags:
                await _produce(args, session, queue, flags, stats, file_log, log)
            else:
                await _consume(args, queue, stats, file_log)
        finally:
            printer.cancel()
            print(stats.line(), flush=True)  # the last interval's figures
    except PybmqError as exc:
        log.error(f"auto mode: {exc}", "BMQTOOL.APPLICATION")
        return 1
    finally:
        with contextlib.suppress(PybmqError, OSError):
            await session.stop()
        file_log.close()
    print(f"\nFinal stats: {stats.kind} {stats.messages} messages [{stats.bytes} B]", flush=True)
    return 0


async def _print_stats(stats: Stats) -> None:
    print("Mode     | Msg/s         | Delta         | Bytes/s       || Evt/s         | Delta"
          "         | Bytes/s", flush=True)  # fmt: skip
    while True:
        await asyncio.sleep(1.0)
        print(stats.line(), flush=True)


async def _produce(
    args: argparse.Namespace,
    session: AsyncSession,
    queue: AsyncQueue,
    flags: set[str],
    stats: Stats,
    file_log: FileLog,
    log: out.ToolLog,
) -> None:
    count, seconds = args.eventscount
    properties = {
        p["name"]: int(p["value"]) if p["type"] == "E_INT" else p["value"]
        for p in args.messageProperties
    } or None
    ids = itertools.count(1)
    pending: set[int] = set()
    all_acked = asyncio.Event()
    done_posting = False

    def on_ack(correlation: int, ack: Ack) -> None:
        file_log.write("ACK", args.queueuri, f"[ autoValue = {correlation} ]",
                       ack.guid.hex().upper(), f"{ACK_CODES.get(ack.status.value, -1)}", "")  # fmt: skip
        pending.discard(correlation)
        if done_posting and not pending:
            all_acked.set()

    began = time.monotonic()
    interval = max(args.postinterval, 0) / 1000
    number = events = turn = 0
    while (count <= 0 or events < count) and (seconds <= 0 or time.monotonic() - began < seconds):
        for _ in range(max(args.postrate, 1)):
            if count > 0 and events >= count:
                break
            for _ in range(max(args.eventsize, 1)):
                payload = _payload(args, number)
                correlation = next(ids)
                if "ack" in flags:
                    pending.add(correlation)
                    callback: Any = lambda ack, c=correlation: on_ack(c, ack)  # noqa: E731
                    guid = queue.post_nowait(payload, properties=properties, on_ack=callback)
                else:
                    guid = queue.post_nowait(payload, properties=properties, ack=False)
                file_log.write("PUT", args.queueuri, f"[ autoValue = {correlation} ]",
                               guid.hex().upper(), payload.decode("ascii", "replace"))  # fmt: skip
                stats.add(len(payload))
                number += 1
            events += 1
        await session.drain()
        turn += 1
        if interval:
            await asyncio.sleep(max(0.0, began + turn * interval - time.monotonic()))
    done_posting = True
    if "ack" in flags:
        if pending:
            await all_acked.wait()
        log.info("All posted messages have been acknowledged", "BMQTOOL.APPLICATION")


async def _consume(
    args: argparse.Namespace, queue: AsyncQueue, stats: Stats, file_log: FileLog
) -> None:
    async for message in queue:
        guid = message.guid.hex().upper()
        payload = message.payload if message.error is None else b""
        file_log.write("PUSH", args.queueuri, guid, payload.decode("ascii", "replace"))
        stats.add(len(payload))
        if args.confirmmsg:
            message.confirm_nowait()
            file_log.write("CONFIRM", args.queueuri, guid, "")
