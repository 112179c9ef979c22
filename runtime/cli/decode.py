"""``pybmq decode FILE``: print the events of a capture as trees (or JSON).

The file holds one or more concatenated events (raw bytes, or a hex dump with ``--hex``); zero
filler after the last event is reported, anything else that does not frame is an error naming
its offset (exit status 2), after every event before it has been printed. A capture recorded by
``pybmq tap`` is recognised and each event shows its connection, direction and time. Raw input is read in
chunks and printed as it goes (constant memory); --json writes one JSON object per line.

example: pybmq decode capture.bin --json | head
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pybmq.cli.common import closed_pipe_is_quiet, describe
from pybmq.cli.validate import as_path, input_file, integer
from pybmq.errors import UsageError

__all__ = ["add_parser", "handler", "parse_hex"]

_XXD_LINE = re.compile(r"^\s*[0-9a-fA-F]+:\s")


def parse_hex(text: str) -> bytes:
    """Plain hex (any whitespace, optional 0x) or ``xxd``-style lines (address and ASCII dropped)."""
    digits = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        if _XXD_LINE.match(line):
            line = line.split(":", 1)[1]
            line = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        digits.append(re.sub(r"0x|\s", "", line, flags=re.IGNORECASE))
    joined = "".join(digits)
    try:
        return bytes.fromhex(joined)
    except ValueError:
        raise UsageError("the --hex input is not a hex dump") from None


def add_parser(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "decode",
        help="print the BlazingMQ events in a file as a tree",
        description=describe(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "file", type=as_path(input_file), help="file of concatenated events ('-' for stdin)"
    )
    parser.add_argument("--hex", action="store_true", help="the file is a hex dump, not raw bytes")
    parser.add_argument(
        "--json", action="store_true", help="JSON Lines: one object per event (or filler)"
    )
    parser.add_argument(
        "--properties",
        choices=["extended", "old"],
        help="the file is a bare message-properties area in this format, not events",
    )
    parser.add_argument(
        "--payload-bytes",
        type=integer(-1),
        default=64,
        metavar="N",
        help="payload bytes to show per message (-1: all; default 64)",
    )
    parser.set_defaults(func=handler)


def _read(path: Path, as_hex: bool) -> bytes:
    try:
        raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    return parse_hex(raw.decode("ascii", "replace")) if as_hex else raw


def _decode_properties(data: bytes, extended: bool, as_json: bool) -> int:
    from pybmq.wire.properties import MessageProperties

    props = MessageProperties.decode(data, extended=extended)
    rows = [
        {"name": n, "type": t.name, "value": v.hex() if isinstance(v, bytes) else v}
        for n, t, v in props.typed_items()
    ]
    if as_json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        print(
            f"[MessageProperties] {'extended' if extended else 'old'} format, {len(rows)} properties"
        )
        for row in rows:
            print(f"\t{row['name']} ({row['type']}) = {row['value']!r}")
    return 0


def handler(args: argparse.Namespace) -> int:
    with closed_pipe_is_quiet():
        return _decode(args)
    return 0  # the reader went away


_CHUNK = 1 << 20


def _chunks(path: Path) -> Iterator[bytes]:
    """The raw input, a chunk at a time."""
    try:
        stream = sys.stdin.buffer if str(path) == "-" else path.open("rb")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    with stream:
        while chunk := stream.read(_CHUNK):
            yield chunk


def _decode(args: argparse.Namespace) -> int:
    from pybmq.wire.capture import is_capture
    from pybmq.wire.render import render_stream

    if args.properties:
        data = _read(args.file, args.hex)
        return _decode_properties(data, args.properties == "extended", args.json)
    chunks: Iterator[bytes] = iter([_read(args.file, True)] if args.hex else _chunks(args.file))
    first = next(chunks, b"")
    chunks = itertools.chain([first], chunks)
    limit = None if args.payload_bytes < 0 else args.payload_bytes
    count = 0
    write = sys.stdout.write
    try:  # one write per event
        for text in render_stream(chunks, limit, args.json, is_capture(first)):
            count += 1
            write(text)
    finally:
        sys.stdout.flush()
    if count == 0:
        print(f"pybmq decode: {args.file} is empty: no events", file=sys.stderr)
        return 1
    return 0
