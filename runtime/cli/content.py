"""Real messages in and out of the CLI: what ``post`` reads (a payload argument, files, stdin
lines or JSON Lines) and the JSON Lines record ``consume --jsonl`` writes (``pybmq.cli.sinks``
has the other outputs).

One JSON Lines record is one message, the same shape both ways, so ``consume --jsonl`` output
fed to ``post --jsonl -`` posts the same payloads with the same typed properties::

    {"queue": "bmq://d/q", "guid": "0000...", "payload": "text",
     "properties": {"n": {"type": "int64", "value": 3}}, "compression": "none"}

A payload that is not UTF-8 is written as ``"payload_base64"`` instead of ``"payload"``; a
binary property's value is base64. ``post`` needs only ``payload`` (or ``payload_base64``).

Every input is read with bounds (a line's size, a file's size) and in time linear in its size;
input that cannot be posted is a ``ContentError`` naming the flag and the record (exit status
2), never an exception of Python's own.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pybmq.errors import PybmqError

if TYPE_CHECKING:
    from pybmq.client.aio_queue import ReceivedMessage
    from pybmq.wire.properties import MessageProperties

__all__ = [
    "DEFAULT_MAX_LINE",
    "ContentError",
    "Outgoing",
    "checked_files",
    "compression_of",
    "file_messages",
    "message_record",
    "parse_record",
    "stdin_chunks",
    "stdin_lines",
    "stdin_messages",
]

_STDIN_CHUNK = 1 << 16


class ContentError(PybmqError):
    """Input that cannot be posted (bad JSON Lines record, empty payload); names where it is."""


@dataclass(frozen=True)
class Outgoing:
    """One message to post."""

    payload: bytes
    properties: MessageProperties | None = None
    compression: str | None = None  # "zlib" or "none" for this message; None: --compress-above
    where: str = ""  # the record it was read from, for an error that names it


def _type_names() -> dict[str, Any]:
    from pybmq.generated.wire_codec import PropertyType

    names = ("bool", "char", "short", "int32", "int64", "string", "binary")
    return {name: PropertyType[name.upper()] for name in names}


# --------------------------------------------------------------------------- JSON Lines


def message_record(message: ReceivedMessage, base64_payload: bool = False) -> dict[str, Any]:
    """A received message as one JSON-ready record (see the module docstring)."""
    record: dict[str, Any] = {"queue": message.queue.uri, "guid": message.guid.hex()}
    error = message.error
    if error is not None:
        record["error"] = str(error)
        return record
    payload = message.payload
    if base64_payload:
        record["payload_base64"] = base64.b64encode(payload).decode("ascii")
    else:
        try:
            record["payload"] = payload.decode("utf-8")
        except UnicodeDecodeError:
            record["payload_base64"] = base64.b64encode(payload).decode("ascii")
    properties: dict[str, Any] = {}
    typed = getattr(message.properties, "typed_items", None)
    for name, ptype, value in typed() if typed is not None else []:
        if isinstance(value, bytes):
            value = base64.b64encode(value).decode("ascii")
        properties[name] = {"type": ptype.name.lower(), "value": value}
    if properties:
        record["properties"] = properties
    record["compression"] = compression_of(message)
    return record


def compression_of(message: ReceivedMessage) -> str:
    """How the message arrived: "zlib" or "none"."""
    from pybmq.client.events import CompressedMessage

    return "zlib" if isinstance(message.message, CompressedMessage) else "none"


def _payload_of(record: dict[str, Any], where: str) -> bytes:
    if "payload" in record:
        if not isinstance(record["payload"], str):
            raise ContentError(f"{where}: 'payload' must be a string")
        try:
            payload = record["payload"].encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: "\ud800"
            raise ContentError(
                f"{where}: 'payload' is not Unicode text ({exc.reason} at character "
                f"{exc.start}); binary payloads go in 'payload_base64'"
            ) from None
    elif "payload_base64" in record:
        try:
            payload = base64.b64decode(record["payload_base64"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise ContentError(f"{where}: 'payload_base64' is not base64") from None
    else:
        raise ContentError(f"{where}: no 'payload' nor 'payload_base64'")
    if not payload:
        raise ContentError(f"{where}: empty payload (the broker takes none)")
    return payload


def _properties_of(record: dict[str, Any], where: str) -> MessageProperties | None:
    from pybmq.wire.properties import MessageProperties

    given = record.get("properties")
    if not given:
        return None
    if not isinstance(given, dict):
        raise ContentError(f"{where}: 'properties' must be an object")
    types = _type_names()
    properties = MessageProperties()
    for name, item in given.items():
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str) or kind not in types or "value" not in item:
            raise ContentError(
                f"{where}: property {name!r} must be {{\"type\": one of {', '.join(types)}, "
                '"value": ...}'
            )
        value = item["value"]
        try:
            if kind == "binary":
                value = base64.b64decode(value, validate=True)
            properties.set(name, value, types[kind])
        except (PybmqError, binascii.Error, TypeError, ValueError, OverflowError) as exc:
            text = str(exc)  # the property's own checks name it already
            if not text.startswith(f"property {name!r}"):
                text = f"property {name!r}: {text}"
            raise ContentError(f"{where}: {text}") from None
    try:  # what each property lets through but not all of them together (the area's size)
        properties.encode()
    except (PybmqError, TypeError, ValueError, OverflowError) as exc:
        raise ContentError(f"{where}: 'properties': {exc}") from None
    return properties


def parse_record(line: bytes, where: str) -> Outgoing | None:
    """One JSON Lines record as a message to post; None for a record of a message that could
    not be read when it was consumed (it carries an ``error``, no payload)."""
    try:
        record = json.loads(line)
    except ValueError as exc:  # also UnicodeDecodeError, and an integer of too many digits
        raise ContentError(f"{where}: not a JSON object ({exc})") from None
    except RecursionError:
        raise ContentError(f"{where}: nested too deep to be a message record") from None
    if not isinstance(record, dict):
        raise ContentError(f"{where}: not a JSON object")
    if "error" in record and "payload" not in record and "payload_base64" not in record:
        return None
    compression = record.get("compression")
    if compression not in (None, "none", "zlib"):
        raise ContentError(f'{where}: \'compression\' must be "none" or "zlib"')
    return Outgoing(
        _payload_of(record, where), _properties_of(record, where), compression, where=where
    )


# --------------------------------------------------------------------------- sources

# The longest stdin line ``post -`` takes by default: twice the largest payload, room for any
# message the broker takes written in base64 with its properties. ``--max-line-size`` sets it.
DEFAULT_MAX_LINE = 2 * (1 << 26)


def checked_files(paths: Iterable[str]) -> list[str]:
    """``--file`` paths, each checked before anything connects: readable, not empty, not over
    the largest payload. ``-`` (stdin, read whole as one message) at most once."""
    from pybmq.generated.wire_codec import PUT_MAX_PAYLOAD_SIZE_SOFT

    paths = list(paths)
    if paths.count("-") > 1:
        raise ContentError("--file -: stdin can be read only once")
    for path in paths:
        if path == "-":
            continue
        try:
            size = Path(path).stat().st_size
        except OSError as exc:
            raise ContentError(f"--file {path}: cannot read it ({exc.strerror})") from None
        if not size:
            raise ContentError(
                f"--file {path}: the file is empty (the broker takes no empty payload)"
            )
        if size > PUT_MAX_PAYLOAD_SIZE_SOFT:
            raise ContentError(
                f"--file {path}: {size} bytes, over the largest payload "
                f"({PUT_MAX_PAYLOAD_SIZE_SOFT} bytes)"
            )
    return paths


def _read_file(path: str) -> bytes:
    """One ``--file``'s bytes, read when its turn comes (never more than one payload's worth)."""
    from pybmq.generated.wire_codec import PUT_MAX_PAYLOAD_SIZE_SOFT

    try:
        if path == "-":
            payload = sys.stdin.buffer.read(PUT_MAX_PAYLOAD_SIZE_SOFT + 1)
        else:
            with open(path, "rb") as stream:
                payload = stream.read(PUT_MAX_PAYLOAD_SIZE_SOFT + 1)
    except OSError as exc:
        raise ContentError(f"--file {path}: cannot read it ({exc.strerror})") from None
    if not payload:
        raise ContentError(f"--file {path}: empty (the broker takes no empty payload)")
    if len(payload) > PUT_MAX_PAYLOAD_SIZE_SOFT:
        raise ContentError(
            f"--file {path}: over the largest payload ({PUT_MAX_PAYLOAD_SIZE_SOFT} bytes)"
        )
    return payload


async def file_messages(
    paths: list[str], properties: MessageProperties | None
) -> AsyncIterator[list[Outgoing]]:
    """One message per file, its bytes as they are, each read just before it is posted."""
    for path in paths:
        yield [Outgoing(_read_file(path), properties, where=f"--file {path}")]


async def stdin_chunks(stream: IO[bytes] | None = None) -> AsyncIterator[bytes]:
    """Chunks of stdin as they come, read by a daemon thread: the loop keeps answering
    heartbeats while the producer pauses, and a signal never waits for a blocked read. Stdin
    is read with ``os.read`` on its descriptor, holding no lock of ``sys.stdin``'s: a read
    still blocked when the run ends cannot stall the interpreter's exit."""
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=16)
    if stream is None:
        fd = sys.stdin.fileno()
        read_chunk: Callable[[], bytes] = lambda: os.read(fd, _STDIN_CHUNK)  # noqa: E731
    else:
        read_chunk = lambda: stream.read1(_STDIN_CHUNK)  # type: ignore[attr-defined]  # noqa: E731

    def read() -> None:
        while True:
            try:
                chunk = read_chunk()
            except (OSError, ValueError):
                chunk = b""
            put = chunks.put(chunk)
            try:
                future = asyncio.run_coroutine_threadsafe(put, loop)
            except RuntimeError:  # the loop is closed: nobody reads any more
                put.close()
                return
            try:
                future.result()
            except BaseException:  # the loop stopped first
                return
            if not chunk:
                return

    threading.Thread(target=read, name="pybmq-stdin", daemon=True).start()
    while chunk := await chunks.get():
        yield chunk


async def stdin_lines(
    chunks: AsyncIterator[bytes], max_line: int, what: str
) -> AsyncIterator[list[bytes]]:
    """The lines of ``chunks`` (without their newline), a batch per chunk. Each byte is looked
    at once (time linear in the input), and no more than ``max_line`` bytes of one line are
    held: a longer line is refused as soon as it is seen, naming its number."""
    held: list[bytes] = []
    size = 0
    number = 0

    def too_long() -> ContentError:
        return ContentError(
            f"{what} line {number + 1}: longer than --max-line-size {max_line} bytes"
        )

    async for chunk in chunks:
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if size + end - start > max_line:
                if lines:
                    yield lines
                raise too_long()
            held.append(chunk[start:end])
            lines.append(b"".join(held))
            held, size = [], 0
            number += 1
            start = end + 1
        if lines:
            yield lines
        if start < len(chunk):
            size += len(chunk) - start
            if size > max_line:
                raise too_long()
            held.append(chunk[start:])
    if held:
        yield [b"".join(held)]


async def stdin_messages(
    jsonl: bool,
    properties: MessageProperties | None,
    chunks: AsyncIterator[bytes],
    max_line: int = DEFAULT_MAX_LINE,
) -> AsyncIterator[list[Outgoing]]:
    """Batches of messages from stdin: one per line (empty lines skipped), or one per JSON
    Lines record with ``jsonl``. A bad line ends the reading (``ContentError`` naming it);
    the lines before it are posted."""
    what = "--jsonl stdin" if jsonl else "stdin"
    number = 0
    async for lines in stdin_lines(chunks, max_line, what):
        batch: list[Outgoing] = []
        for line in lines:
            number += 1
            try:
                message = _line_message(line, f"{what} line {number}", jsonl, properties)
            except ContentError:
                if batch:
                    yield batch
                raise
            if message is not None:
                batch.append(message)
        if batch:
            yield batch


def _line_message(
    line: bytes, where: str, jsonl: bool, properties: MessageProperties | None
) -> Outgoing | None:
    if jsonl:
        return parse_record(line, where) if line.strip() else None
    return Outgoing(line, properties, where=where) if line else None
