"""Where ``consume`` writes each message before confirming it: JSON Lines, a ``--format`` line,
``--print`` text, a raw file in ``--out-dir``.

Text output (``--format``, ``--print``) is for a terminal: control characters from a message
(ESC, BEL, a carriage return, a newline that would fake a second record) are written as
``\\xNN`` (``pybmq.printable``), unless ``raw``; one message is one line, at most ``limit``
characters, else it is not written and ``RenderError`` says why. JSON Lines stays exact (JSON
escapes every control character itself) and files get the payload's bytes as they are.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from pybmq.cli.content import compression_of, message_record
from pybmq.cli.template import LineTooLong, RenderError, Template
from pybmq.printable import escape_controls

if TYPE_CHECKING:
    from pybmq.client.aio_queue import ReceivedMessage

__all__ = [
    "Sink",
    "Value",
    "field_values",
    "folder_sink",
    "format_sink",
    "jsonl_sink",
    "print_sink",
]

Sink = Callable[["ReceivedMessage", int], None]
Value = Callable[[int], "str | int"]


def _content(message: ReceivedMessage) -> bytes:
    if message.error is not None:
        raise RenderError(f"its payload cannot be read ({message.error})")
    return message.payload


def _text(message: ReceivedMessage, cut: int) -> str:
    """The payload as text, its first ``cut + 1`` characters at most (the most a line can
    show, plus one to tell that there is more): a big payload is never decoded whole."""
    data = _content(message)
    return data[: 4 * cut + 8].decode("utf-8", "backslashreplace")[: cut + 1]


def _one_line(text: str) -> str:
    return escape_controls(text, keep_lines=False)


def _base64(message: ReceivedMessage, cut: int) -> str:
    data = _content(message)
    return base64.b64encode(data[: 3 * (cut // 4 + 1)]).decode("ascii")


def _properties(message: ReceivedMessage) -> dict[str, Any]:
    _content(message)
    return {
        name: base64.b64encode(value).decode() if isinstance(value, bytes) else value
        for name, value in message.properties.items()
    }


def field_values(message: ReceivedMessage, number: int) -> dict[str, Value]:
    """Each ``--format`` field of ``message`` (texts unescaped), computed only when the
    template uses it."""
    return {
        "payload": lambda cut: _text(message, cut),
        "payload_base64": lambda cut: _base64(message, cut),
        "size": lambda cut: len(_content(message)),
        "guid": lambda cut: message.guid.hex(),
        "queue": lambda cut: message.queue.uri,
        "properties": lambda cut: json.dumps(_properties(message)),
        "compression": lambda cut: compression_of(message),
        "n": lambda cut: number,
    }


def jsonl_sink(out: IO[str], base64_payload: bool) -> Sink:
    def write(message: ReceivedMessage, number: int) -> None:
        out.write(json.dumps(message_record(message, base64_payload)) + "\n")

    return write


def format_sink(out: IO[str], template: Template, raw: bool, limit: int) -> Sink:
    def write(message: ReceivedMessage, number: int) -> None:
        line = template.render(field_values(message, number), limit, None if raw else _one_line)
        out.write(line + "\n")

    return write


def print_sink(out: IO[str], raw: bool, limit: int) -> Sink:
    """The payload as text, then its properties as a Python dict (``repr`` escapes them)."""

    def write(message: ReceivedMessage, number: int) -> None:
        text = _text(message, limit)
        if len(text) <= limit:
            text = text if raw else _one_line(text)
        if len(text) > limit:
            raise LineTooLong(f"the payload is over {limit} characters")
        given = dict(message.properties)
        properties = repr(given) if given else ""
        if len(text) + 1 + len(properties) > limit:
            raise LineTooLong(f"the line would be over {limit} characters")
        out.write(f"{text} {properties}\n")

    return write


def folder_sink(folder: str) -> Sink:
    """Each payload, raw, to ``FOLDER/<number>-<guid>.bin`` (the number keeps the order)."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)

    def write(message: ReceivedMessage, number: int) -> None:
        if message.error is None:
            (root / f"{number:08d}-{message.guid.hex()}.bin").write_bytes(message.payload)

    return write
