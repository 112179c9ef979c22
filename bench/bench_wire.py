"""Wire-layer hot paths: PUT encode, PUSH decode, ACK/CONFIRM batches; fast codec vs construct.

Workload (as in the project's goals): 100-byte payloads with 2 properties, 1000 messages per
event, CRC32-C included in PUT encode. The construct rows do the same work through the generated
reference model (``pybmq.generated.wire_layout``) so the ratio is visible.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from crc32c import crc32c
from pybmq.generated import wire_layout
from pybmq.generated.wire_codec import PADDING
from pybmq.wire.batches import AckEventBuilder, ConfirmEventBuilder, iter_ack, iter_confirm
from pybmq.wire.guid import MessageGuidGenerator
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder, iter_push
from pybmq.wire.put import PutEventBuilder, decode_put

from bench.common import Result


def _load() -> str:
    try:
        return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        return ""


def run(quick: bool) -> list[Result]:
    n = 50 if quick else 1000
    repeat = 1 if quick else 41
    batch = 1 if quick else 5
    guids = MessageGuidGenerator().generate_many(n)
    payloads = [bytes([i % 251]) * 100 for i in range(n)]
    props = MessageProperties({"encoding": 3, "source": "bench"})
    area = props.encode(True)

    def put_add_many() -> int:
        builder = PutEventBuilder()
        builder.add_many(5, payloads, guids, properties=props)
        builder.finish()
        return n

    def put_add() -> int:
        builder = PutEventBuilder()
        for payload, guid in zip(payloads, guids, strict=True):
            builder.add(5, payload, guid=guid, properties=props, ack_requested=True)
        builder.finish()
        return n

    def put_construct() -> int:
        build = wire_layout.PutHeader.build
        parts = []
        props_crc = crc32c(area)
        for payload, guid in zip(payloads, guids, strict=True):
            app = len(area) + len(payload)
            pad = PADDING[app & 3]
            header = build(
                {"flags": 3, "message_words": (36 + app + len(pad)) // 4, "options_words": 0,
                 "compression": 0, "header_words": 9, "queue_id": 5, "guid": guid,
                 "crc32c": crc32c(payload, props_crc), "schema_id": 1, "reserved": 0}
            )  # fmt: skip
            parts += (header, area, payload, pad)
        b"".join(parts)
        return n

    put_builder = PutEventBuilder()
    put_builder.add_many(5, payloads, guids, properties=props)
    (put_event,) = put_builder.finish()

    def put_decode() -> int:
        return len(decode_put(put_event, verify_crc=True))

    push = PushEventBuilder()
    for payload, guid in zip(payloads, guids, strict=True):
        push.add(5, guid, payload, properties=props)
    (push_event,) = push.finish()

    def push_decode() -> int:
        return len(list(iter_push(push_event)))

    def push_decode_props() -> int:
        count = 0
        for m in iter_push(push_event):
            count += len(m.properties)  # type: ignore[arg-type]
        return n if count == 2 * n else 0

    def push_construct() -> int:
        parse = wire_layout.PushHeader.parse
        data = push_event
        pos = 8
        out = []
        while pos < len(data):
            h = parse(data[pos : pos + 32])
            end = pos + h.message_words * 4
            start = pos + 32
            asize = int.from_bytes(data[start + 1 : start + 4], "big") * 4
            out.append((h, data[start : start + asize], data[start + asize : end - data[end - 1]]))
            pos = end
        return len(out)

    acks = [(0, i, guid, 5) for i, guid in enumerate(guids)]
    confirms = [(5, guid, 0) for guid in guids]

    def ack_build() -> int:
        builder = AckEventBuilder()
        builder.add_many(acks)
        builder.finish()
        return n

    ack_builder = AckEventBuilder()
    ack_builder.add_many(acks)
    (ack_event,) = ack_builder.finish()

    def ack_parse() -> int:
        return len(list(iter_ack(ack_event)))

    def confirm_build() -> int:
        builder = ConfirmEventBuilder()
        builder.add_many(confirms)
        builder.finish()
        return n

    confirm_builder = ConfirmEventBuilder()
    confirm_builder.add_many(confirms)
    (confirm_event,) = confirm_builder.finish()

    def confirm_parse() -> int:
        return len(list(iter_confirm(confirm_event)))

    def ack_build_construct() -> int:
        build = wire_layout.AckMessage.build
        b"".join(
            build({"reserved": 0, "status": s, "correlation_id": c, "guid": g, "queue_id": q})
            for s, c, g, q in acks
        )
        return n

    def ack_parse_construct() -> int:
        parse = wire_layout.AckMessage.parse
        body = ack_event[12:]
        return len([parse(body[i : i + 24]) for i in range(0, len(body), 24)])

    def rate(fn: Callable[[], int], samples: int = 0) -> float:
        """Items per second of CPU time, best of ``repeat`` samples of ``batch`` calls each: on a
        shared machine wall-clock time mostly measures the neighbours, and even CPU time swings
        with them (caches, frequency), so many short samples give the undisturbed figure.
        ``python -m bench.instructions`` gives a load-independent count to compare with."""
        fn()  # warm up: specialise the bytecode, fill the allocator's free lists
        best = 0.0
        for _ in range(samples or repeat):
            start = time.thread_time()
            items = sum(fn() for _ in range(batch))
            elapsed = time.thread_time() - start
            best = max(best, items / elapsed if elapsed > 0 else 0.0)
        return best

    load = _load()
    rows = [
        ("PUT encode, add_many (CRC32C, 2 props)", put_add_many, put_construct, "goal 700k/s"),
        ("PUT encode, add (checked, per message)", put_add, None, ""),
        ("PUT decode, CRC32C verified (broker side)", put_decode, None, ""),
        ("PUSH decode (properties lazy)", push_decode, push_construct, "goal 1M/s"),
        ("PUSH decode + properties parsed", push_decode_props, None, ""),
        ("ACK batch build", ack_build, ack_build_construct, "goal 2M/s"),
        ("ACK batch parse", ack_parse, ack_parse_construct, "goal 2M/s"),
        ("CONFIRM batch build", confirm_build, None, "goal 2M/s"),
        ("CONFIRM batch parse", confirm_parse, None, "goal 2M/s"),
    ]
    results = []
    for name, fast, slow, goal in rows:
        fast_rate = rate(fast)
        note = ", ".join(x for x in (goal, load) if x)
        results.append(Result(f"wire: {name}", fast_rate, "msg/s (CPU)", note))
        if slow is not None:
            slow_rate = rate(slow, 3)  # ~50x slower: fewer samples keep the run short
            results.append(
                Result(
                    f"wire: {name} [construct]",
                    slow_rate,
                    "msg/s (CPU)",
                    f"fast path {fast_rate / slow_rate:.0f}x faster",
                )
            )
    return results
