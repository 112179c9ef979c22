"""``pybmq decode``'s engine on captures: MB of capture per second, text and JSON Lines.

Two kinds of capture, each about 11 MB:

- the Java SDK's I/O dump (a real session: negotiation, opens, PUSHes, ACKs), repeated: tiny
  events (127 bytes on average, most of them 1-entry ACKs), the worst case per byte;
- post/consume traffic as ``pybmq tap`` would see it: PUT events of 64 messages, their ACKs, the
  PUSHes and CONFIRMs, with 100-byte (``pybmq post``'s default) and 1 KiB payloads.

The reference, measured in the same run on the same capture, is what a client pays to read it:
framing plus the client's own message readers (``iter_put``, ``iter_push``, ``iter_ack`` ...).
The decode/read ratio shows what printing every field (``render_stream``, what ``pybmq decode``
runs) costs on top of that.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pybmq.generated.wire_codec import EventType
from pybmq.wire.batches import (
    AckEventBuilder,
    ConfirmEventBuilder,
    iter_ack,
    iter_confirm,
    iter_reject,
)
from pybmq.wire.framing import iter_events
from pybmq.wire.push import PushEventBuilder, iter_push
from pybmq.wire.put import PutEventBuilder, iter_put
from pybmq.wire.render import render_stream

from bench.common import Result, best_seconds

DUMP = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "vectors"
    / "java-sdk"
    / "bmq_io_dump_1551267643131.bin"
)


def traffic(payload_size: int, total: int, batch: int = 64) -> bytes:
    """``total`` bytes (or a little more) of PUT, ACK, PUSH and CONFIRM events."""
    payload = (bytes(range(256)) * (payload_size // 256 + 1))[:payload_size]
    events: list[bytes] = []
    size = 0
    number = 1
    while size < total:
        put, ack = PutEventBuilder(), AckEventBuilder()
        push, confirm = PushEventBuilder(), ConfirmEventBuilder()
        for _ in range(batch):
            guid = number.to_bytes(16, "big")
            put.add(1, payload, correlation_id=number & 0xFFFFFF, ack_requested=True)
            ack.add(0, number & 0xFFFFFF, guid, 1)
            push.add(1, guid, payload)
            confirm.add(1, guid)
            number += 1
        for builder in (put, ack, push, confirm):
            for event in builder.finish():
                events.append(event)
                size += len(event)
    return b"".join(events)


_READERS: dict[object, Callable[[Any], Iterable[object]]] = {
    EventType.PUT: iter_put,
    EventType.PUSH: iter_push,
    EventType.ACK: iter_ack,
    EventType.CONFIRM: iter_confirm,
    EventType.REJECT: iter_reject,
}


def _chunks(data: bytes, size: int = 1 << 20) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _rates(name: str, capture: bytes, repeat: int) -> list[Result]:
    chunks = _chunks(capture)

    def text() -> None:
        write = io.StringIO().write
        for event in render_stream(chunks):
            write(event)

    def jsonl() -> None:
        write = io.StringIO().write
        for event in render_stream(chunks, as_json=True):
            write(event)

    def read() -> None:
        for event in iter_events(capture):
            reader = _READERS.get(getattr(event, "type", None))
            if reader is not None:
                for _ in reader(event):
                    pass

    def mb_per_s(fn: Callable[[], object]) -> float:
        return len(capture) / best_seconds(fn, repeat) / 1e6

    reference = mb_per_s(read)
    rows = []
    for kind, fn in (("text", text), ("json", jsonl)):
        rate = mb_per_s(fn)
        note = f"{len(capture) / 1e6:.1f} MB; {rate / reference:.3f}x read alone"
        rows.append(Result(f"decode {kind}, {name}", rate, "MB/s", note))
    rows.append(Result(f"read alone (reference), {name}", reference, "MB/s"))
    return rows


def run(quick: bool) -> list[Result]:
    size = 200_000 if quick else 11_000_000
    repeat = 1 if quick else 3
    one = DUMP.read_bytes()
    captures = {
        "Java SDK dump": one * max(1, size // len(one)),
        "traffic 100 B": traffic(100, size),
        "traffic 1 KiB": traffic(1024, size),
    }
    return [row for name, capture in captures.items() for row in _rates(name, capture, repeat)]
