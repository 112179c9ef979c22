"""The commands of ``pybmq tool``, run over pybmq's asyncio client.

``ToolSession`` holds what bmqtool's interactive mode holds: one session (made anew at each
``start``), the queues it opened by URI, and per reader queue the messages received and not yet
confirmed, in arrival order (what ``list`` shows and ``confirm`` takes). Each command prints
its ``-->`` and ``<--`` records; session events, ACKs and PUSHes print as they come.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pybmq.cli import tool_output as out
from pybmq.cli.tool_grammar import Command
from pybmq.cli.tool_messages import Messages, QueueEntry
from pybmq.errors import (
    PybmqError,
    RequestTimeoutError,
    SessionStoppedError,
    UsageError,
)
from pybmq.uri import parse_queue_uri

__all__ = ["QUEUE_FLAGS", "START_TIMEOUT", "ToolSession", "parse_flags"]

if TYPE_CHECKING:
    from pybmq.client.aio import AsyncSession
    from pybmq.client.aio_queue import AsyncQueue
    from pybmq.client.options import SessionOptions

START_TIMEOUT = 5.0  # bmqtool's interactive start waits this long
QUEUE_FLAGS = frozenset({"read", "write", "ack", "admin"})


def parse_flags(text: str) -> frozenset[str] | None:
    words = frozenset(w.strip().lower() for w in text.split(",") if w.strip())
    if not words or words - QUEUE_FLAGS:
        return None
    return words


class ToolSession:
    """The session side of ``pybmq tool``: one method per verb."""

    def __init__(
        self,
        log: out.ToolLog,
        make_options: Callable[[], SessionOptions],
        *,
        dump: bool = False,
        auto_confirm: bool = False,
    ) -> None:
        self.log = log
        self._make_options = make_options
        self.messages = Messages(self, dump=dump, auto_confirm=auto_confirm)
        self.session: AsyncSession | None = None
        self.queues: dict[str, QueueEntry] = {}
        self._ids = itertools.count(1)  # bmqt's CorrelationId::autoValue()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._starting = False  # a start is connecting

    # ------------------------------------------------------------------ dispatch

    async def run(self, command: Command) -> None:
        handler = {
            "start": self.start,
            "stop": self.stop,
            "open": self.open,
            "configure": self.configure,
            "close": self.close,
            "post": self.messages.post,
            "list": self.messages.list_,
            "confirm": self.messages.confirm,
            "batch-post": self.messages.batch_post,
        }[command.verb]
        await handler(command)

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ session

    async def start(self, command: Command) -> None:
        self.log.info(f"--> Starting session: {out.command_text(command.fields)}")
        if self.session is not None or self._starting:
            self.log.info(f"<-- session.start({START_TIMEOUT}) => {out.generic('SUCCESS')}")
            return
        if command["async"]:
            self.log.info(f"<-- session.start({START_TIMEOUT}) => {out.generic('SUCCESS')}")
            self._spawn(self._start_async())
            return
        result = await self._begin()
        level = out.INFO if result == "SUCCESS" else out.ERROR
        self.log.write(level, f"<-- session.start({START_TIMEOUT}) => {out.generic(result)}")
        if result == "SUCCESS":
            self._event("CONNECTED")

    async def _start_async(self) -> None:
        result = await self._begin()
        if result == "SUCCESS":
            self._event("CONNECTED")
        else:
            self._event("CONNECTION_TIMEOUT", out.RESULT_CODES.get(result, -1))

    async def _begin(self) -> str:
        """Start a session within START_TIMEOUT (bmqtool's start keeps connecting until then),
        a new one for each attempt while the broker refuses the connection; the result's name."""
        from pybmq.client.aio import AsyncSession

        self._starting = True
        deadline = time.monotonic() + START_TIMEOUT
        try:
            while True:
                session = AsyncSession(options=self._make_options(), on_event=self._on_event)
                try:
                    await session.start(timeout=max(deadline - time.monotonic(), 0.01))
                except BaseException as exc:
                    with contextlib.suppress(PybmqError, OSError):
                        await session.stop()
                    if not isinstance(exc, PybmqError):
                        raise  # cancelled (a stop or quit while starting)
                    refused = isinstance(exc, SessionStoppedError) and isinstance(
                        exc.__cause__, OSError
                    )
                    if refused and deadline - time.monotonic() > 0.2:
                        await asyncio.sleep(0.2)
                        continue
                    if refused or isinstance(exc, RequestTimeoutError):
                        return "TIMEOUT"
                    return out.failure(exc)[0]
                self.session = session
                return "SUCCESS"
        except PybmqError as exc:  # the options themselves
            return out.failure(exc)[0]
        finally:
            self._starting = False

    async def stop(self, command: Command) -> None:
        self.log.info(f"--> Stopping session: {out.command_text(command.fields)}")
        await self.shutdown()
        self.log.info("<-- session.stop()")

    async def shutdown(self) -> None:
        """Stop the session (if started) and forget its queues and messages."""
        session, self.session = self.session, None
        entries = list(self.queues.values())
        self.queues.clear()
        if session is None:
            return
        with contextlib.suppress(PybmqError, OSError):
            await session.stop()
        for entry in entries:
            if entry.reader is not None:
                entry.reader.cancel()
        for task in list(self._tasks):
            task.cancel()
        self._event("DISCONNECTED")

    def _event(
        self, kind: str, code: int = 0, correlation: int | None = None, description: str = ""
    ) -> None:
        if not self.log.silent:
            self.log.info(
                out.session_event(kind, code, correlation, description), "BMQTOOL.APPLICATION"
            )

    def _on_event(self, event: object) -> None:
        """The client's resilience events as bmqt's session events."""
        from pybmq.client import events as ev

        if isinstance(event, ev.ConnectionLost):
            if "heartbeat" in event.reason.lower():  # what upstream's SDK logs for a dead peer
                self.log.warn(f"#TCP_DEAD_CHANNEL {event.reason}", "BMQTOOL.APPLICATION")
            self._event("CONNECTION_LOST", description=event.reason)
        elif isinstance(event, ev.Reconnected):
            self._event("RECONNECTED")
        elif isinstance(event, ev.StateRestored):
            self._event("STATE_RESTORED")
        elif isinstance(event, ev.QueueReopened):
            entry = next(
                (
                    e
                    for e in self.queues.values()
                    if e.queue is not None and e.queue.queue_id == event.queue_id
                ),
                None,
            )
            correlation = entry.correlation if entry is not None else None
            if event.error is None:
                self._event("QUEUE_REOPEN_RESULT", 0, correlation)
            else:
                name, why = out.failure(event.error)
                self._event("QUEUE_REOPEN_RESULT", out.RESULT_CODES.get(name, -1), correlation, why)
        elif isinstance(event, ev.SlowConsumerHighWatermark):
            self._event("SLOWCONSUMER_HIGHWATERMARK")
        elif isinstance(event, ev.SlowConsumerNormal):
            self._event("SLOWCONSUMER_NORMAL")

    # ------------------------------------------------------------------ queues

    def next_id(self) -> int:
        """The next bmqt ``CorrelationId::autoValue()`` (queues and posts share the counter)."""
        return next(self._ids)

    def entry(self, uri: str) -> QueueEntry | None:
        entry = self.queues.get(uri)
        if entry is None or entry.queue is None:
            self.log.error(f"unknown queue '{uri}'")
            return None
        return entry

    def valid_uri(self, uri: str) -> bool:
        if not uri:
            self.log.error("'uri' is mandatory")
            return False
        if parse_queue_uri(uri) is None:
            self.log.error(f"The uri ('{uri}') is not valid: not bmq://domain/queue[?id=appId]")
            return False
        return True

    @staticmethod
    def _queue_options(command: Command) -> dict[str, Any]:
        """The client's queue options for an open or configure command; UsageError for a
        subscription bmqtool refuses (an expression given empty, or one that does not parse)."""
        from pybmq.client.subscriptions import Subscription

        subscriptions = []
        for s in command["subscriptions"]:
            if "expression" in s and not s["expression"]:
                raise UsageError("an empty subscription expression")
            subscriptions.append(
                Subscription(
                    expression=s.get("expression", ""),
                    consumer_priority=s.get("consumerPriority"),
                    max_unconfirmed_messages=s.get("maxUnconfirmedMessages"),
                    max_unconfirmed_bytes=s.get("maxUnconfirmedBytes"),
                    name=str(s.get("correlationId", "")),
                )
            )
        return {
            "max_unconfirmed_messages": command["maxUnconfirmedMessages"],
            "max_unconfirmed_bytes": command["maxUnconfirmedBytes"],
            "consumer_priority": command["consumerPriority"],
            "subscriptions": tuple(subscriptions),
        }

    def _checked_options(self, command: Command) -> dict[str, Any] | None:
        """The queue options, or None after bmqtool's "Invalid subscriptions" record (no
        ``<--`` record follows: bmqtool's apparatus sees the command not complete)."""
        try:
            return self._queue_options(command)
        except UsageError as exc:
            self.log.error(f"Invalid subscriptions: {exc}")
            return None

    async def open(self, command: Command) -> None:
        uri = command["uri"]
        if not self.valid_uri(uri):
            return
        flags = parse_flags(command["flags"])
        if flags is None:
            self.log.error(f"Invalid flag(s) '{command['flags']}'")
            return
        self.log.info(f"--> Opening queue: {out.command_text(command.fields)}")
        options = self._checked_options(command)
        if options is None:
            return
        correlation = self.next_id()
        verb = "openQueueAsync" if command["async"] else "openQueueSync"
        work = self._open(options, uri, flags, correlation, verb)
        if command["async"]:
            self._spawn(work)
        else:
            await work

    async def _open(
        self, options: dict[str, Any], uri: str, flags: frozenset[str], correlation: int, verb: str
    ) -> None:
        existing = self.queues.get(uri)
        if existing is not None:
            result = "ALREADY_OPENED" if existing.queue is not None else "ALREADY_IN_PROGRESS"
            self._result(verb, uri, correlation, result, result)
            return
        session = self.session
        if session is None:
            self._result(verb, uri, correlation, "NOT_CONNECTED", "the session is not started")
            return
        entry = QueueEntry(uri, correlation, flags)
        self.queues[uri] = entry
        try:
            queue = await session.open_queue(
                uri, read="read" in flags, write="write" in flags, ack="ack" in flags, **options
            )
        except (PybmqError, asyncio.TimeoutError) as exc:
            if self.queues.get(uri) is entry:
                del self.queues[uri]
            self._result(verb, uri, correlation, *out.failure(exc))
            return
        if self.queues.get(uri) is not entry:  # stopped meanwhile
            return
        entry.queue = queue
        self._result(verb, uri, correlation, "SUCCESS")
        if "read" in flags:
            entry.reader = asyncio.get_running_loop().create_task(self.messages.read(entry, queue))

    def _result(self, verb: str, uri: str, correlation: int, result: str, why: str = "") -> None:
        level = out.INFO if result == "SUCCESS" else out.ERROR
        why = why if result != "SUCCESS" else ""
        if verb.endswith("Async") and not self.log.silent:
            kind = {"open": "OPEN", "configure": "CONFIGURE", "close": "CLOSE"}[verb[:-10]]
            record = out.status_record(uri, correlation, result, why)
            self.log.info(f"==> {kind}_QUEUE_RESULT received: {record}")
        self.log.write(
            level, f"<-- session.{verb}() => {out.status(uri, correlation, result, why)}"
        )

    async def configure(self, command: Command) -> None:
        uri = command["uri"]
        if not self.valid_uri(uri):
            return
        entry = self.entry(uri)
        if entry is None or entry.queue is None:
            return
        options = self._checked_options(command)
        if options is None:
            return
        self.log.info(f"--> Configuring queue: {out.command_text(command.fields)}")
        verb = "configureQueueAsync" if command["async"] else "configureQueueSync"
        work = self._configure(entry, entry.queue, options, verb)
        if command["async"]:
            self._spawn(work)
        else:
            await work

    async def _configure(
        self, entry: QueueEntry, queue: AsyncQueue, options: dict[str, Any], verb: str
    ) -> None:
        try:
            await queue.configure(**options)
        except (PybmqError, asyncio.TimeoutError) as exc:
            self._result(verb, entry.uri, entry.correlation, *out.failure(exc))
        else:
            self._result(verb, entry.uri, entry.correlation, "SUCCESS")

    async def close(self, command: Command) -> None:
        uri = command["uri"]
        if not uri:
            self.log.error("'uri' is mandatory")
            return
        entry = self.entry(uri)
        if entry is None or entry.queue is None:
            return
        self.log.info(f"--> Closing queue: {out.command_text(command.fields)}")
        verb = "closeQueueAsync" if command["async"] else "closeQueueSync"
        work = self._close(entry, entry.queue, verb)
        if command["async"]:
            self._spawn(work)
        else:
            await work

    async def _close(self, entry: QueueEntry, queue: AsyncQueue, verb: str) -> None:
        try:
            await queue.close()
        except (PybmqError, asyncio.TimeoutError) as exc:
            result, why = out.failure(exc)
            if isinstance(exc, RequestTimeoutError):  # the client gave the queue up as closed
                self._forget(entry)
            self._result(verb, entry.uri, entry.correlation, result, why)
            return
        self._forget(entry)
        self._result(verb, entry.uri, entry.correlation, "SUCCESS")

    def _forget(self, entry: QueueEntry) -> None:
        if self.queues.get(entry.uri) is entry:
            del self.queues[entry.uri]
        if entry.reader is not None:
            entry.reader.cancel()
