"""Argument types that check a value while the command line is parsed, before anything connects.

Each is an ``argparse`` ``type=``: a bad value raises ``ArgumentTypeError``, which argparse prints
as ``argument --flag: why`` and turns into exit status 2, so no operator mistake ever reaches a
socket or ends as a traceback. ``tests/cli/test_cli_arguments.py`` walks every subcommand and tries
invalid values on each flag that uses them.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "INT_MAX",
    "PORT_MAX",
    "as_path",
    "auth_spec",
    "broker_url",
    "byte_size",
    "existing_dir",
    "host_port",
    "input_file",
    "integer",
    "listen_failure",
    "output_dir",
    "port",
    "readable_file",
    "seconds",
    "share",
    "shown",
    "text",
    "writable_file",
]

PORT_MAX = 65535
INT_MAX = 2**63 - 1


def shown(text: str) -> str:
    """``text`` printable on any stream: bytes that were not UTF-8 on the command line (kept
    by Python as surrogates) shown as ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def text(value: str) -> str:
    """A non-empty string of valid UTF-8."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    if shown(value) != value:
        raise argparse.ArgumentTypeError(f"{shown(value)!r} is not valid UTF-8")
    return value


def _number(value: str, kind: Callable[[str], float]) -> float:
    text(value)
    try:
        number = kind(value)
    except ValueError:
        name = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"{shown(value)!r} is not {name}") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"{value!r} is not a finite number")
    return number


def seconds(value: str) -> float:
    """A duration in seconds, > 0 and at most 10**9 (no overflow in the loop's timers)."""
    number = _number(value, float)
    if not 0 < number <= 10**9:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, not {value}")
    return number


class integer:  # lower case: it is used as a function, type=integer(0)
    """An integer in ``low..high`` (by default at most 2**63-1: never an overflow further on)."""

    __name__ = "integer"

    def __init__(self, low: int, high: int = INT_MAX) -> None:
        self.low = low
        self.high = high

    def __call__(self, value: str) -> int:
        number = int(_number(value, int))
        if not self.low <= number <= self.high:
            bound = f">= {self.low}" if self.high == INT_MAX else f"{self.low}..{self.high}"
            raise argparse.ArgumentTypeError(f"must be {bound}, not {value}")
        return number


port = integer(0, PORT_MAX)

_UNITS = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


class byte_size:  # lower case: used as a function, type=byte_size(1)
    """A size in bytes, as a number or with a binary unit (``512MiB``, ``1GiB``), in
    ``low..high``."""

    __name__ = "byte_size"

    def __init__(self, low: int, high: int = INT_MAX) -> None:
        self.low = low
        self.high = high

    def __call__(self, value: str) -> int:
        text(value)
        digits = value.strip().rstrip("BbIiKkMmGgTt")
        unit = value.strip()[len(digits) :].upper()
        if unit not in _UNITS or not digits.isdigit() or len(digits) > 20:
            raise argparse.ArgumentTypeError(
                f"{shown(value)!r} is not a size (bytes, or with KiB, MiB, GiB, TiB)"
            )
        number = int(digits) * _UNITS[unit]
        if not self.low <= number <= self.high:
            raise argparse.ArgumentTypeError(
                f"must be {self.low}..{self.high} bytes, not {shown(value)}"
            )
        return number


def share(value: str) -> float:
    """A probability or share, 0..1."""
    number = _number(value, float)
    if not 0 <= number <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {value}")
    return number


def readable_file(value: str) -> str:
    """An existing regular file this process can read."""
    text(value)
    path = Path(value)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"cannot read {value}: a directory, not a file")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"cannot read {value}: no such file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"cannot read {value}: permission denied")
    return value


def input_file(value: str) -> str:
    """``readable_file``, or ``-`` for stdin."""
    return value if value == "-" else readable_file(value)


def writable_file(value: str) -> str:
    """A file to create or replace: not a directory, in an existing writable directory."""
    text(value)
    path = Path(value)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} is a directory, not a file")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"no such directory: {parent}")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {value}: permission denied")
    return value


def output_dir(value: str) -> str:
    """A directory to write files into: an existing writable one, or one its parent can hold."""
    text(value)
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{value} exists and is not a folder")
    where = path if path.exists() else path.parent
    if not where.is_dir():
        raise argparse.ArgumentTypeError(f"no such directory: {where}")
    if not os.access(where, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write into {where}: permission denied")
    return value


def host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (host may be empty: 127.0.0.1)."""
    text(value)
    host, sep, number = value.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT")
    return host or "127.0.0.1", port(number)


def auth_spec(value: str) -> str:
    """``MECH`` or ``MECH:FILE`` (the simulator's ``--auth``): the file must exist."""
    text(value)
    mechanism, sep, path = value.partition(":")
    if not mechanism:
        raise argparse.ArgumentTypeError(f"{value!r} has no mechanism (MECH[:FILE])")
    if sep:
        readable_file(path)
    return value


def broker_url(value: str) -> str:
    """``tcp://host[:port]``."""
    from pybmq.errors import UsageError
    from pybmq.uri import parse_broker_url

    text(value)
    try:
        parse_broker_url(value)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def existing_dir(value: str) -> str:
    """An existing directory."""
    text(value)
    if not Path(value).is_dir():
        what = "not a directory" if Path(value).exists() else "no such directory"
        raise argparse.ArgumentTypeError(f"{what}: {value}")
    return value


def as_path(check: Callable[[str], str]) -> Callable[[str], Path]:
    """``check``, giving a ``Path`` (for the commands that work on paths)."""

    def parse(value: str) -> Path:
        return Path(check(value))

    parse.__name__ = check.__name__
    return parse


def listen_failure(flag: str, value: object, exc: OSError) -> str:
    """A bind error as a usage message naming the flag (busy port, address not here)."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{flag} {value}: cannot listen there: {reason}"
