"""``pybmq decode``'s engine on captures: MB of capture per second, text and JSON Lines.

Three kinds of capture, each about 11 MB:

- the Java SDK's I/O dump (a real session: negotiation, opens, PUSHes, ACKs), repeated: tiny
  events (127 bytes on average, most of them 1-entry ACKs; its PUSHes carry 28-byte headers,
  sub-queue options and old-format properties), the worst case per byte;
- post/consume traffic as ``pybmq tap`` would see it: PUT events of 64 messages, their ACKs, the
  PUSHes and CONFIRMs, with 100-byte (``pybmq post``'s default) and 1 KiB payloads;
- a mixed capture where little repeats: PUTs and PUSHes of 16 messages with payloads of random
  bytes and sizes (40-400 bytes), properties in both formats with a value that changes every
  message, sub-queue options (plain, packed, old-style ids, 28-byte headers), group ids, one
  message in eight zlib-compressed (2 KiB of text), and their ACKs and CONFIRMs.

The reference, measured in the same run on the same capture, is what a client pays to read it:
the ``EventReader`` fed the same 1 MiB chunks, plus the client's own message readers
(``iter_put``, ``iter_push``, ``iter_ack`` ...). The decode/read ratio shows what printing
every field (``render_stream``, what ``pybmq decode`` runs) costs on top of that.
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pybmq.generated.wire_codec import CompressionAlgorithmType, EventType
from pybmq.wire.batches import (
    AckEventBuilder,
    ConfirmEventBuilder,
    iter_ack,
    iter_confirm,
    iter_reject,
)
from pybmq.wire.framing import EventReader
from pybmq.wire.options import encode_sub_queue_ids_old
from pybmq.wire.properties import MessageProperties
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


Builders = tuple[PutEventBuilder, AckEventBuilder, PushEventBuilder, ConfirmEventBuilder]


def _capture(total: int, batch: int, add: Callable[[Builders, int, int], None]) -> bytes:
    """``total`` bytes (or a little more) of PUT, ACK, PUSH and CONFIRM events, in rounds of
    ``batch`` messages: ``add(builders, number, i)`` adds message ``number`` (from 1), the
    ``i``-th of its round, to each builder."""
    events: list[bytes] = []
    size = 0
    number = 1
    while size < total:
        builders = (PutEventBuilder(), AckEventBuilder(), PushEventBuilder(), ConfirmEventBuilder())
        for i in range(batch):
            add(builders, number, i)
            number += 1
        for builder in builders:
            for event in builder.finish():
                events.append(event)
                size += len(event)
    return b"".join(events)


def traffic(payload_size: int, total: int, batch: int = 64) -> bytes:
    """``total`` bytes (or a little more) of PUT, ACK, PUSH and CONFIRM events."""
    payload = (bytes(range(256)) * (payload_size // 256 + 1))[:payload_size]

    def add(builders: Builders, number: int, i: int) -> None:
        put, ack, push, confirm = builders
        guid = number.to_bytes(16, "big")
        put.add(1, payload, correlation_id=number & 0xFFFFFF, ack_requested=True)
        ack.add(0, number & 0xFFFFFF, guid, 1)
        push.add(1, guid, payload)
        confirm.add(1, guid)

    return _capture(total, batch, add)


def mixed(total: int, batch: int = 16) -> bytes:
    """``total`` bytes (or a little more) of PUT, ACK, PUSH and CONFIRM events where little
    repeats (see the module's docstring)."""
    rng = random.Random(16)
    text = b"the quick brown fox jumps over the lazy dog " * 48

    def add(builders: Builders, number: int, i: int) -> None:
        put, ack, push, confirm = builders
        guid = rng.randbytes(16)
        zlib = number % 8 == 0
        payload = text[: 2048 + number % 64] if zlib else rng.randbytes(rng.randrange(40, 400))
        properties = (
            MessageProperties({"timestamp": number, "routingId": f"r-{number % 97}"})
            if i % 2
            else None
        )
        compression = CompressionAlgorithmType.ZLIB if zlib else CompressionAlgorithmType.NONE
        extended = i % 4 != 1
        put.add(
            i % 4, payload, correlation_id=number & 0xFFFFFF, ack_requested=True,
            properties=properties, extended_properties=extended, compression=compression,
            msg_group_id=f"group-{number % 5}" if i % 5 == 0 else None,
        )  # fmt: skip
        option: dict[str, Any] = [
            {"sub_queue_infos": [(i % 3, None)]},
            {"packed_rda": i % 64},
            {"options": encode_sub_queue_ids_old([i % 3])},
            {"msg_group_id": f"group-{number % 5}"},
        ][i % 4]
        push.add(
            i % 4, guid, payload, properties=properties, extended_properties=extended,
            compression=compression, header_words=7 if i % 4 == 2 else 8, **option,
        )  # fmt: skip
        ack.add(0, number & 0xFFFFFF, guid, i % 4)
        confirm.add(i % 4, guid, i % 3)

    return _capture(total, batch, add)


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
        framer = EventReader()
        for chunk in chunks:
            for event in framer.feed(chunk):
                reader = _READERS.get(event.type)
                if reader is not None:
                    for _ in reader(event):
                        pass

    # Rounds of all three in turn, the best of each kept: a burst of load on this shared machine
    # hits the reference and the decoders alike.
    best = {"read": float("inf"), "text": float("inf"), "json": float("inf")}
    for _ in range(repeat):
        for kind, fn in (("read", read), ("text", text), ("json", jsonl)):
            best[kind] = min(best[kind], best_seconds(fn, 1))
    reference = len(capture) / best["read"] / 1e6
    rows = []
    for kind in ("text", "json"):
        rate = len(capture) / best[kind] / 1e6
        note = f"{len(capture) / 1e6:.1f} MB; {rate / reference:.3f}x read alone"
        rows.append(Result(f"decode {kind}, {name}", rate, "MB/s", note))
    rows.append(Result(f"read alone (reference), {name}", reference, "MB/s"))
    return rows


def run(quick: bool) -> list[Result]:
    size = 200_000 if quick else 11_000_000
    repeat = 1 if quick else 5
    one = DUMP.read_bytes()
    captures = {
        "Java SDK dump": one * max(1, size // len(one)),
        "traffic 100 B": traffic(100, size),
        "traffic 1 KiB": traffic(1024, size),
        "mixed": mixed(size),
    }
    return [row for name, capture in captures.items() for row in _rates(name, capture, repeat)]
