"""Real messages in and out of the CLI: what ``post`` reads (a payload argument, files, stdin
lines or JSON Lines) and what ``consume`` writes (JSON Lines, a one-line ``--format`` template,
raw files in a folder).

One JSON Lines record is one message, the same shape both ways, so ``consume --jsonl`` output
fed to ``post --jsonl -`` posts the same payloads with the same typed properties::

    {"queue": "bmq://d/q", "guid": "0000...", "payload": "text",
     "properties": {"n": {"type": "int64", "value": 3}}, "compression": "none"}

A payload that is not UTF-8 is written as ``"payload_base64"`` instead of ``"payload"``; a
binary property's value is base64. ``post`` needs only ``payload`` (or ``payload_base64``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import string
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
    "FORMAT_FIELDS",
    "ContentError",
    "Outgoing",
    "Sink",
    "check_format",
    "file_messages",
    "folder_sink",
    "format_fields",
    "format_sink",
    "jsonl_sink",
    "message_record",
    "parse_record",
    "print_sink",
    "stdin_chunks",
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


def _type_names() -> dict[str, Any]:
    from pybmq.generated.wire_codec import PropertyType

    names = ("bool", "char", "short", "int32", "int64", "string", "binary")
    return {name: PropertyType[name.upper()] for name in names}


# --------------------------------------------------------------------------- JSON Lines


def message_record(message: ReceivedMessage, base64_payload: bool = False) -> dict[str, Any]:
    """A received message as one JSON-ready record (see the module docstring)."""
    from pybmq.client.events import CompressedMessage

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
    compressed = isinstance(message.message, CompressedMessage)
    record["compression"] = "zlib" if compressed else "none"
    return record


def _payload_of(record: dict[str, Any], where: str) -> bytes:
    if "payload" in record:
        if not isinstance(record["payload"], str):
            raise ContentError(f"{where}: 'payload' must be a string")
        payload = record["payload"].encode("utf-8")
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
    from pybmq.errors import EncodeError
    from pybmq.wire.properties import MessageProperties

    given = record.get("properties")
    if not given:
        return None
    if not isinstance(given, dict):
        raise ContentError(f"{where}: 'properties' must be an object")
    types = _type_names()
    properties = MessageProperties()
    for name, item in given.items():
        if not isinstance(item, dict) or item.get("type") not in types or "value" not in item:
            raise ContentError(
                f"{where}: property {name!r} must be {{\"type\": one of {', '.join(types)}, "
                '"value": ...}'
            )
        value = item["value"]
        try:
            if item["type"] == "binary":
                value = base64.b64decode(value, validate=True)
            properties.set(name, value, types[item["type"]])
        except (EncodeError, binascii.Error, TypeError, ValueError) as exc:
            raise ContentError(f"{where}: property {name!r}: {exc}") from None
    return properties


def parse_record(line: bytes, where: str) -> Outgoing | None:
    """One JSON Lines record as a message to post; None for a record of a message that could
    not be read when it was consumed (it carries an ``error``, no payload)."""
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ContentError(f"{where}: not a JSON object ({exc})") from None
    if not isinstance(record, dict):
        raise ContentError(f"{where}: not a JSON object")
    if "error" in record and "payload" not in record and "payload_base64" not in record:
        return None
    compression = record.get("compression")
    if compression not in (None, "none", "zlib"):
        raise ContentError(f'{where}: \'compression\' must be "none" or "zlib"')
    return Outgoing(_payload_of(record, where), _properties_of(record, where), compression)


# --------------------------------------------------------------------------- sources


def file_messages(paths: Iterable[str], properties: MessageProperties | None) -> list[Outgoing]:
    """One message per file, its bytes as they are (read before connecting)."""
    messages = []
    for path in paths:
        payload = Path(path).read_bytes()
        if not payload:
            raise ContentError(
                f"--file {path}: the file is empty (the broker takes no empty payload)"
            )
        messages.append(Outgoing(payload, properties))
    return messages


async def stdin_chunks(stream: IO[bytes] | None = None) -> AsyncIterator[bytes]:
    """Chunks of stdin as they come, read by a daemon thread: the loop keeps answering
    heartbeats while the producer pauses, and a signal never waits for a blocked read."""
    source = stream if stream is not None else sys.stdin.buffer
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=16)

    def read() -> None:
        while True:
            try:
                chunk = source.read1(_STDIN_CHUNK)  # type: ignore[union-attr,attr-defined]
            except (OSError, ValueError):
                chunk = b""
            future = asyncio.run_coroutine_threadsafe(chunks.put(chunk), loop)
            try:
                future.result()
            except BaseException:  # the loop is gone: nobody reads any more
                return
            if not chunk:
                return

    threading.Thread(target=read, name="pybmq-stdin", daemon=True).start()
    while chunk := await chunks.get():
        yield chunk


async def stdin_messages(
    jsonl: bool, properties: MessageProperties | None, chunks: AsyncIterator[bytes]
) -> AsyncIterator[list[Outgoing]]:
    """Batches of messages from stdin: one per line (empty lines skipped), or one per JSON
    Lines record with ``jsonl``."""
    rest = b""
    number = 0
    async for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        batch: list[Outgoing] = []
        for line in lines:
            number += 1
            try:
                message = _line_message(line, number, jsonl, properties)
            except ContentError:
                if batch:
                    yield batch  # the lines before the bad one are posted
                raise
            if message is not None:
                batch.append(message)
        if batch:
            yield batch
    if rest and (message := _line_message(rest, number + 1, jsonl, properties)):
        yield [message]


def _line_message(
    line: bytes, number: int, jsonl: bool, properties: MessageProperties | None
) -> Outgoing | None:
    if not line.strip() if jsonl else not line:
        return None
    if jsonl:
        return parse_record(line, f"stdin line {number}")
    return Outgoing(line, properties)


# --------------------------------------------------------------------------- sinks

FORMAT_FIELDS = {
    "payload": "the payload as text (bytes that are not UTF-8 as \\xNN)",
    "payload_base64": "the payload in base64",
    "size": "payload bytes",
    "guid": "the message GUID in hex",
    "queue": "the queue URI",
    "properties": "the properties as JSON (name: value)",
    "compression": "none or zlib, as it arrived",
    "n": "the message's number in this run, from 1",
}


def check_format(template: str) -> str:
    """The ``--format`` template with ``\\n`` and ``\\t`` made real; only FORMAT_FIELDS, no
    attribute access, no format specs that do not fit the field."""
    from pybmq.errors import UsageError

    try:
        fields = [field for _, field, _, _ in string.Formatter().parse(template) if field]
    except ValueError as exc:
        raise UsageError(f"--format: {exc}") from None
    for field in fields:
        if field not in FORMAT_FIELDS:
            raise UsageError(
                f"--format: unknown field {{{field}}} (fields: {', '.join(FORMAT_FIELDS)})"
            )
    expanded = template.replace("\\n", "\n").replace("\\t", "\t")
    try:
        expanded.format(**{name: "" for name in FORMAT_FIELDS} | {"size": 0, "n": 0})
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--format: {exc}") from None
    return expanded


def format_fields(message: ReceivedMessage, number: int) -> dict[str, Any]:
    error = message.error
    payload = b"" if error is not None else message.payload
    properties = {
        name: base64.b64encode(value).decode() if isinstance(value, bytes) else value
        for name, value in (message.properties.items() if error is None else ())
    }
    return {
        "payload": payload.decode("utf-8", "backslashreplace"),
        "payload_base64": base64.b64encode(payload).decode("ascii"),
        "size": len(payload),
        "guid": message.guid.hex(),
        "queue": message.queue.uri,
        "properties": json.dumps(properties),
        "compression": message_record(message)["compression"] if error is None else "none",
        "n": number,
    }


Sink = Callable[["ReceivedMessage", int], None]


def jsonl_sink(out: IO[str], base64_payload: bool) -> Sink:
    def write(message: ReceivedMessage, number: int) -> None:
        out.write(json.dumps(message_record(message, base64_payload)) + "\n")

    return write


def format_sink(out: IO[str], template: str) -> Sink:
    def write(message: ReceivedMessage, number: int) -> None:
        out.write(template.format(**format_fields(message, number)) + "\n")

    return write


def print_sink(out: IO[str]) -> Sink:
    def write(message: ReceivedMessage, number: int) -> None:
        payload = b"" if message.error is not None else message.payload
        out.write(f"{payload.decode(errors='replace')} {dict(message.properties) or ''}\n")

    return write


def folder_sink(folder: str) -> Sink:
    """Each payload, raw, to ``FOLDER/<number>-<guid>.bin`` (the number keeps the order)."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)

    def write(message: ReceivedMessage, number: int) -> None:
        if message.error is None:
            (root / f"{number:08d}-{message.guid.hex()}.bin").write_bytes(message.payload)

    return write
