"""The message commands of ``pybmq tool``: what comes in (PUSH: kept for ``list`` and
``confirm``, printed with -d) and what goes out (``post``, ``batch-post``, and their ACKs).

``Messages`` is a part of :class:`pybmq.cli.tool_session.ToolSession` (which opens and closes the
queues): it reads the session's queue table and session, and prints to the same log.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pybmq.cli import tool_output as out
from pybmq.cli.tool_grammar import Command
from pybmq.errors import PybmqError

__all__ = ["Messages", "QueueEntry"]

if TYPE_CHECKING:
    from pybmq.cli.tool_session import ToolSession
    from pybmq.client.aio_queue import AsyncQueue, ReceivedMessage
    from pybmq.client.events import Ack


@dataclass
class QueueEntry:
    """One queue the tool opened: its URI as given, its correlation number, its flags, the
    client's queue, and the messages received and not confirmed (insertion ordered by GUID)."""

    uri: str
    correlation: int
    flags: frozenset[str]
    queue: AsyncQueue | None = None
    messages: dict[bytes, ReceivedMessage] = field(default_factory=dict)
    reader: asyncio.Task[None] | None = None


class Messages:
    """post, batch-post, list, confirm, and each reader queue's PUSHes."""

    def __init__(self, owner: ToolSession, *, dump: bool, auto_confirm: bool) -> None:
        self._owner = owner
        self.log = owner.log
        self.dump = dump
        self.auto_confirm = auto_confirm

    async def read(self, entry: QueueEntry, queue: AsyncQueue) -> None:
        """Take each message as it comes: keep it for list/confirm (or confirm it at once with
        -c), then print its event and, with -d, the message."""
        with contextlib.suppress(PybmqError):
            async for message in queue:
                if self.auto_confirm:
                    with contextlib.suppress(PybmqError):
                        message.confirm_nowait()
                else:
                    entry.messages.setdefault(message.guid, message)
                if self.log.silent:
                    continue
                self.log.info(
                    '==> EVENT received: [ type = "MESSAGE" rawEventType = PUSH ]',
                    "BMQTOOL.APPLICATION",
                )
                if self.dump:
                    self.log.info(self._push_text(entry, message), "BMQTOOL.APPLICATION")

    @staticmethod
    def _push_text(entry: QueueEntry, message: ReceivedMessage) -> str:
        text = (
            f"PUSH #0: [ type = PUSH queue = {out.queue_id(entry.uri, entry.correlation)} "
            f"correlationId = {out.UNSET} GUID = {message.guid.hex().upper()} ]"
        )
        if message.error is None:
            props = out.property_text(message.properties)
            if props:
                text += f" with properties: {props}"
        return text

    async def post(self, command: Command) -> None:
        uri = command["uri"]
        if not uri:
            self.log.error("'uri' is mandatory")
            return
        entry = self._owner.entry(uri)
        if entry is None or entry.queue is None:
            return
        self.log.info(f"--> Posting message: {out.command_text(command.fields)}")
        compression = command["compressionAlgorithmType"].lower()
        if compression not in ("none", "zlib"):
            self.log.warn(
                f"'{command['compressionAlgorithmType']}' is not a valid compression type, "
                "message will be sent uncompressed."
            )
            compression = "none"
        properties = None
        if "messageProperties" in command.given:
            properties = {
                p["name"]: int(p["value"]) if p["type"] == "E_INT" else p["value"]
                for p in command["messageProperties"]
            }
        result = "SUCCESS"
        for text in command["payload"]:
            try:
                self._post_one(entry, entry.queue, text.encode(), properties, compression)
            except (PybmqError, ValueError) as exc:
                result = out.failure(exc)[0]
                break
        level = out.INFO if result == "SUCCESS" else out.ERROR
        self.log.write(level, f"<-- session.post() => {out.generic(result)}")

    def _post_one(
        self,
        entry: QueueEntry,
        queue: AsyncQueue,
        payload: bytes,
        properties: dict[str, Any] | None,
        compression: str,
    ) -> None:
        if "ack" in entry.flags:
            correlation = self._owner.next_id()
            queue.post_nowait(
                payload,
                properties=properties,
                on_ack=lambda ack: self._on_ack(entry, correlation, ack),
                compression=compression,
            )
        else:
            queue.post_nowait(payload, properties=properties, ack=False, compression=compression)

    def _on_ack(self, entry: QueueEntry, correlation: int, ack: Ack) -> None:
        status = ack.status.value
        if status != "SUCCESS":
            self.log.error(
                f"Failed ACK for queue '{entry.uri}' [status: {status}, "
                f"GUID: {ack.guid.hex().upper()}]{': ' + ack.reason if ack.reason else ''}",
                "BMQTOOL.APPLICATION",
            )
        if self.log.silent:
            return
        self.log.info(
            f'==> EVENT received: [ type = "MESSAGE" rawEventType = ACK queue = {entry.uri} ]',
            "BMQTOOL.APPLICATION",
        )
        if self.dump:
            self.log.info(
                f"ACK #0: [ type = ACK status = {status} correlationId = [ autoValue = "
                f"{correlation} ] GUID = {ack.guid.hex().upper()} queue = "
                f"{out.queue_id(entry.uri, entry.correlation)} ]",
                "BMQTOOL.APPLICATION",
            )

    async def batch_post(self, command: Command) -> None:
        """``eventsCount`` events (0: until stopped) of ``eventSize`` messages of ``msgSize``
        bytes, ``postRate`` events every ``postInterval`` ms."""
        entry = self._owner.entry(command["uri"])
        if entry is None or entry.queue is None or self._owner.session is None:
            return
        queue, session = entry.queue, self._owner.session
        size, per_event = max(command["msgSize"], 0), max(command["eventSize"], 0)
        count, rate = command["eventsCount"], max(command["postRate"], 1)
        interval = max(command["postInterval"], 0) / 1000
        payload = b"x" * size
        events = 0
        began = time.monotonic()
        turn = 0
        try:
            while per_event and (count <= 0 or events < count):
                for _ in range(rate):
                    if count > 0 and events >= count:
                        break
                    for _ in range(per_event):
                        self._post_one(entry, queue, payload, None, "none")
                    events += 1
                await session.drain()
                turn += 1
                if interval and (count <= 0 or events < count):
                    await asyncio.sleep(max(0.0, began + turn * interval - time.monotonic()))
        except PybmqError as exc:
            self.log.error(f"batch-post stopped after {events} events: {exc}")
            return
        self.log.info("All messages have been posted")

    async def list_(self, command: Command) -> None:
        uri = command["uri"]
        if uri is None:
            entries = list(self._owner.queues.values())
        elif uri in self._owner.queues:
            entries = [self._owner.queues[uri]]
        else:
            self.log.error(f"unknown queue '{uri}'")
            return
        rows = []
        for entry in entries:
            for message in entry.messages.values():
                payload = message.payload if message.error is None else b""
                props = message.properties if message.error is None else None
                rows.append((entry.uri, entry.correlation, message.guid, payload, props))
        self.log.info(out.listing(rows))

    async def confirm(self, command: Command) -> None:
        uri, spec = command["uri"], command["guid"]
        if not spec:
            self.log.error("'guid' is mandatory")
            return
        if not self._owner.valid_uri(uri):
            return
        entry = self._owner.entry(uri)
        if entry is None:
            return
        guids = self._select(entry, spec)
        if guids is None:
            return
        if not guids:
            self.log.info("No messages to confirm")
            return
        for guid in guids:
            message = entry.messages.pop(guid)
            self.log.info(f"--> Confirming message with GUID {guid.hex().upper()}")
            try:
                message.confirm_nowait()
                result = "SUCCESS"
            except PybmqError as exc:
                result = out.failure(exc)[0]
            level = out.INFO if result == "SUCCESS" else out.ERROR
            self.log.write(level, f"<-- session.confirmMessage() => {out.generic(result)}")

    def _select(self, entry: QueueEntry, spec: str) -> list[bytes] | None:
        """``*`` all, ``+n`` the oldest n, ``-n`` the newest n, else one GUID in hex."""
        held = list(entry.messages)
        if spec == "*":
            return held
        if spec[0] in "+-":
            try:
                n = int(spec)
            except ValueError:
                self.log.error(f"'{spec}' is not a valid GUID")
                return None
            return held[:n] if n > 0 else held[len(held) + n :] if n < 0 else []
        try:
            guid = bytes.fromhex(spec)
        except ValueError:
            guid = b""
        if len(guid) != 16:
            self.log.error(f"'{spec}' is not a valid GUID")
            return None
        if guid not in entry.messages:
            self.log.error(f"'{spec.upper()}' NOT found")
            return None
        return [guid]
