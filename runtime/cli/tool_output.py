"""What ``pybmq tool`` prints: log records in bmqtool's ``--logFormat``, and the texts of its
records (statuses, events, messages, listings) in the shape bmqtool prints them, which
upstream's integration-test apparatus matches line by line.

Only the shape is bmqtool's: every value (GUIDs, URIs, statuses, properties) is pybmq's own.
"""

from __future__ import annotations

import asyncio
import datetime
import inspect
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import IO, Any

from pybmq.errors import (
    BrokerError,
    QueueSuspendedError,
    RequestTimeoutError,
    SessionStoppedError,
    UsageError,
)
from pybmq.printable import escape_controls

__all__ = [
    "DEFAULT_FORMAT",
    "ERROR",
    "INFO",
    "LEVELS",
    "RESULT_CODES",
    "SEVERITY",
    "UNSET",
    "WARN",
    "ToolLog",
    "command_text",
    "failure",
    "generic",
    "listing",
    "payload_head",
    "property_text",
    "queue_id",
    "quoted",
    "session_event",
    "status",
    "status_record",
]

DEFAULT_FORMAT = r"%d (%t) %s %F:%l %m\n"

# bmqtool's --verbosity names, by threshold (a record is printed when its level >= threshold).
LEVELS = {"trace": 0, "debug": 1, "info": 2, "warning": 3, "error": 4, "fatal": 5, "silent": 9}
SEVERITY = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
INFO, WARN, ERROR = 2, 3, 4

# bmqt's result codes by name (GenericResult, then the open/configure/close extras).
RESULT_CODES = {
    "SUCCESS": 0,
    "UNKNOWN": -1,
    "TIMEOUT": -2,
    "NOT_CONNECTED": -3,
    "CANCELED": -4,
    "NOT_SUPPORTED": -5,
    "REFUSED": -6,
    "INVALID_ARGUMENT": -7,
    "NOT_READY": -8,
    "ALREADY_OPENED": 100,
    "ALREADY_IN_PROGRESS": 101,
    "ALREADY_CLOSED": 100,
}
UNSET = '[ "* unset *" ]'


def _date(now: datetime.datetime) -> str:
    return now.strftime("%d%b%Y_%H:%M:%S").upper() + f".{now.microsecond // 1000:03d}"


def _unescape(fmt: str) -> str:
    """The format as the shell would have meant it: one pair of surrounding quotes dropped (the
    apparatus passes ``--logFormat="..."`` without a shell), ``\\n`` and ``\\t`` made real."""
    if len(fmt) >= 2 and fmt[0] == fmt[-1] and fmt[0] in "\"'":
        fmt = fmt[1:-1]
    return fmt.replace("\\n", "\n").replace("\\t", "\t")


class ToolLog:
    """Writes records to ``out`` in a BALL-style format (``%d`` date, ``%t`` thread, ``%s``
    severity, ``%c`` category, ``%F``/``%f`` file, ``%l`` line, ``%m`` message, ``%p`` pid,
    ``%%``), each flushed at once: the reader matches lines as they come."""

    def __init__(
        self, fmt: str = DEFAULT_FORMAT, verbosity: str = "info", out: IO[str] | None = None
    ):
        self._format = _unescape(fmt)
        self.threshold = LEVELS[verbosity.lower()]
        self._out = out if out is not None else sys.stdout
        self._lock = threading.Lock()  # records from pybmq's logging may come from other threads

    @property
    def silent(self) -> bool:
        return self.threshold >= LEVELS["silent"]

    def write(self, level: int, message: str, category: str = "BMQTOOL.INTERACTIVE") -> None:
        if level < self.threshold:
            return
        file, line = _caller()
        values = {
            "d": _date(datetime.datetime.now()),
            "t": str(threading.get_ident()),
            "s": SEVERITY[min(level, 5)],
            "c": category,
            "F": os.path.basename(file),
            "f": file,
            "l": str(line),
            "m": message,
            "p": str(os.getpid()),
            "%": "%",
        }
        text = _render(self._format, values)
        if not text.endswith("\n"):
            text += "\n"
        with self._lock:
            try:
                self._out.write(text)
                self._out.flush()
            except (BrokenPipeError, ValueError):  # the reader went away: nothing to tell it
                pass

    def info(self, message: str, category: str = "BMQTOOL.INTERACTIVE") -> None:
        self.write(INFO, message, category)

    def warn(self, message: str, category: str = "BMQTOOL.INTERACTIVE") -> None:
        self.write(WARN, message, category)

    def error(self, message: str, category: str = "BMQTOOL.INTERACTIVE") -> None:
        self.write(ERROR, message, category)


def _caller() -> tuple[str, int]:
    """The file and line of the first caller outside this module (what %F and %l show)."""
    frame = inspect.currentframe()
    while frame is not None and frame.f_back is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    if frame is None:  # an interpreter without frames
        return "tool.py", 0
    return frame.f_code.co_filename, frame.f_lineno


def _render(fmt: str, values: Mapping[str, str]) -> str:
    out = []
    i = 0
    while i < len(fmt):
        char = fmt[i]
        if char == "%" and i + 1 < len(fmt):
            out.append(values.get(fmt[i + 1], ""))
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


# ---------------------------------------------------------------------------- record texts


def quoted(value: str) -> str:
    return '"' + value.replace('"', '\\"') + '"'


def queue_id(uri: str, correlation: int) -> str:
    return f"[ uri = {uri} correlationId = [ autoValue = {correlation} ] ]"


def status_record(uri: str, correlation: int, result: str, description: str = "") -> str:
    """An open/configure/close status as bmqa prints it."""
    code = RESULT_CODES.get(result, -1)
    why = f" errorDescription = {quoted(description)}" if description else ""
    return f'[ queueId = {queue_id(uri, correlation)} result = "{result} ({code})"{why} ]'


def status(uri: str, correlation: int, result: str, description: str = "") -> str:
    """What bmqtool prints after ``=>``: the result's name, then the status."""
    return f"{result} ({status_record(uri, correlation, result, description)})"


def failure(exc: BaseException) -> tuple[str, str]:
    """A client error as bmqt's result name and a description."""
    if isinstance(exc, BrokerError):
        name = exc.category.removeprefix("E_")
        return (name if name in RESULT_CODES else "UNKNOWN"), exc.broker_message or name
    if isinstance(exc, (RequestTimeoutError, asyncio.TimeoutError)):
        return "TIMEOUT", str(exc) or "timeout"
    if isinstance(exc, SessionStoppedError):
        return "NOT_CONNECTED", str(exc)
    if isinstance(exc, QueueSuspendedError):
        return "NOT_READY", str(exc)
    if isinstance(exc, UsageError):
        return "INVALID_ARGUMENT", str(exc)
    return "UNKNOWN", str(exc)


def generic(result: str) -> str:
    return f"{result} ({RESULT_CODES.get(result, -1)})"


def command_text(fields: Mapping[str, Any]) -> str:
    """A command's fields as bmqtool echoes them (``--> Opening queue: [ uri = "..." ... ]``)."""
    parts = []
    for name, value in fields.items():
        parts.append(f"{name} = {_value_text(value)}")
    return "[ " + " ".join(parts) + " ]"


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quoted(value)
    if isinstance(value, dict):
        return "[ " + " ".join(f"{k} = {_value_text(v)}" for k, v in value.items()) + " ]"
    if isinstance(value, list):
        return "[ " + " ".join(_value_text(v) for v in value) + " ]" if value else "[ ]"
    return str(value)


def session_event(
    kind: str, status_code: int = 0, correlation: int | None = None, description: str = ""
) -> str:
    result = next((name for name, code in RESULT_CODES.items() if code == status_code), "UNKNOWN")
    cid = UNSET if correlation is None else f"[ autoValue = {correlation} ]"
    why = f" errorDescription = {quoted(description)}" if description else ""
    return (
        f'==> EVENT received: [ type = "SESSION" sessionEventType = {kind} '
        f"statusCode = {status_code} result = {result} correlationId = {cid}{why} ]"
    )


def property_text(properties: Mapping[str, Any] | None) -> str:
    """Properties as bmqa prints them, sorted by name: ``[ s (STRING) = "a" x (INT32) = 10 ]``."""
    if not properties:
        return ""
    typed = getattr(properties, "typed_items", None)
    if typed is not None:
        items = [(name, kind.name, value) for name, kind, value in typed()]
    else:
        items = [(name, _inferred_type(value), value) for name, value in properties.items()]
    parts = [f"{name} ({kind}) = {_property_value(value)}" for name, kind, value in sorted(items)]
    return "[ " + " ".join(parts) + " ]"


def _inferred_type(value: Any) -> str:
    if isinstance(value, bool):
        return "BOOL"
    if isinstance(value, int):
        return "INT32" if -(2**31) <= value < 2**31 else "INT64"
    if isinstance(value, (bytes, bytearray)):
        return "BINARY"
    return "STRING"


def _property_value(value: Any) -> str:
    if isinstance(value, str):
        return quoted(escape_controls(value, keep_lines=False))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray)):
        return value.hex().upper()
    return str(value)


def payload_head(payload: bytes, limit: int = 32) -> str:
    """The first ``limit`` bytes, printable ASCII as is and the rest as ``.``."""
    return "".join(chr(b) if 32 <= b < 127 else "." for b in payload[:limit])


def listing(entries: Iterable[tuple[str, int, bytes, bytes, Mapping[str, Any] | None]]) -> str:
    """``list``'s record: a count line, then one line per unconfirmed message."""
    rows = list(entries)
    lines = [f"Unconfirmed message listing: {len(rows)} messages"]
    for index, (uri, correlation, guid, payload, properties) in enumerate(rows, 1):
        line = (
            f"  #{index:3d}  [{guid.hex().upper()}] Queue: '{queue_id(uri, correlation)}' = "
            f"'{payload_head(payload)}'"
        )
        props = property_text(properties)
        if props:
            line += f", with properties: {props}"
        lines.append(line)
    return "\n".join(lines)
