"""``pybmq post -`` reading stdin: MB of input per second for one long line, plain and as a JSON
Lines record, at two sizes. The reading must be linear in the input: the time ratio of the big
line to the small one (twice the bytes) should be about 2, not 4. Both sizes are over the C
allocator's largest mmap threshold (32 MiB), so neither line is helped by buffers reused from
the heap: below it, small lines run faster per byte for that reason alone.

The reference, measured in the same run on the same bytes, is ``json.loads`` of the record alone:
the part no line reader can avoid. The line is fed in stdin's own 64 KiB chunks.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from pybmq.cli.content import stdin_messages

from bench.common import Result, best_seconds

MIB = 1 << 20
CHUNK = 1 << 16


def _record(size: int) -> bytes:
    head, tail = b'{"payload": "', b'"}\n'
    return head + b"a" * (size - len(head) - len(tail)) + tail


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    view = memoryview(data)
    for start in range(0, len(data), CHUNK):
        yield bytes(view[start : start + CHUNK])


def _read(data: bytes, jsonl: bool) -> int:
    async def run() -> int:
        count = 0
        async for batch in stdin_messages(jsonl, None, _chunks(data)):
            count += sum(len(message.payload) for message in batch)
        return count

    return asyncio.run(run())


def run(quick: bool) -> list[Result]:
    small, big = (MIB, 2 * MIB) if quick else (64 * MIB, 128 * MIB)
    repeat = 1 if quick else 3
    results = []
    seconds: dict[tuple[str, int], float] = {}
    for size in (small, big):
        record = _record(size)
        line = b"b" * (size - 1) + b"\n"
        seconds["jsonl", size] = best_seconds(lambda r=record: _read(r, True), repeat)
        seconds["plain", size] = best_seconds(lambda n=line: _read(n, False), repeat)
        seconds["json.loads", size] = best_seconds(lambda r=record: json.loads(r), repeat)
    label = f"{big // MIB} MiB line"
    for kind, name in (
        ("jsonl", "post --jsonl -"),
        ("plain", "post -"),
        ("json.loads", "json.loads alone (reference)"),
    ):
        results.append(Result(f"{name}, {label}", big / MIB / seconds[kind, big], "MB/s"))
    for kind, name in (("jsonl", "post --jsonl -"), ("plain", "post -")):
        ratio = seconds[kind, big] / seconds[kind, small]
        results.append(
            Result(
                f"{name}: {label} ÷ {small // MIB} MiB line, time",
                ratio,
                "x",
                "linear: ≈ 2, quadratic: ≈ 4",
            )
        )
    return results
