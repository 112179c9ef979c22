"""Load-independent cross-check of the wire hot paths: Python bytecode instructions executed per
message (counted with an opcode-level trace), which does not move with the machine's load the way
CPU-time figures do. ``python -m bench.opcount``; compare the figures before and after a change.

Counts Python-level work only (C-level calls such as ``struct.unpack_from`` count as one call
instruction), so it complements, not replaces, the timed rows of ``bench_wire``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from pybmq.wire.guid import MessageGuidGenerator
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder, decode_push, iter_push
from pybmq.wire.put import PutEventBuilder

N = 1000


def count_instructions(fn: Callable[[], object]) -> int:
    """Bytecode instructions executed by ``fn()`` (all Python frames below it)."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "call":
            frame.f_trace_opcodes = True
        elif event == "opcode":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def workload() -> dict[str, Callable[[], object]]:
    guids = MessageGuidGenerator().generate_many(N)
    payloads = [bytes([i % 251]) * 100 for i in range(N)]
    props = MessageProperties({"encoding": 3, "source": "bench"})
    push = PushEventBuilder()
    for payload, guid in zip(payloads, guids, strict=True):
        push.add(5, guid, payload, properties=props)
    (event,) = push.finish()

    def put_add_many() -> None:
        builder = PutEventBuilder()
        builder.add_many(5, payloads, guids, properties=props)
        builder.finish()

    return {
        "PUT encode, add_many": put_add_many,
        "PUSH decode_push": lambda: decode_push(event),
        "PUSH list(iter_push)": lambda: list(iter_push(event)),
    }


def main() -> None:
    for name, fn in workload().items():
        print(f"{name:<24} {count_instructions(fn) / N:8.1f} bytecode instructions/msg")


if __name__ == "__main__":
    main()
