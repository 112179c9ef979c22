"""``pybmq decode FILE``: print the events of a capture as trees (or JSON).

The file holds one or more concatenated events (raw bytes, or a hex dump with ``--hex``); zero
filler after the last event is reported, anything else that does not frame is an error naming
its offset (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pybmq.errors import ProtocolError, UsageError

if TYPE_CHECKING:
    pass

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
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", type=Path, help="file of concatenated events ('-' for stdin)")
    parser.add_argument("--hex", action="store_true", help="the file is a hex dump, not raw bytes")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--properties",
        choices=["extended", "old"],
        help="the file is a bare message-properties area in this format, not events",
    )
    parser.add_argument(
        "--payload-bytes",
        type=int,
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
    try:
        return _decode(args)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error; silence the flush at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _decode(args: argparse.Namespace) -> int:
    from pybmq.wire.dissect import dissect, render_text

    data = _read(args.file, args.hex)
    if args.properties:
        return _decode_properties(data, args.properties == "extended", args.json)
    limit = None if args.payload_bytes < 0 else args.payload_bytes
    nodes = []
    try:
        for node in dissect(data, limit):
            if args.json:
                nodes.append(node)
            else:
                print(render_text(node))
                print()
    except ProtocolError:
        sys.stdout.flush()
        raise
    if args.json:
        for node in nodes:  # the previews are for people; JSON carries the hex
            for message in node.get("messages", []):
                message["payload"].pop("preview", None)
            node.pop("body_preview", None)
        json.dump(nodes, sys.stdout, indent=2)
        print()
    return 0
