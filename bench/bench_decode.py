"""``pybmq decode``'s engine on a capture: MB of capture per second, text and JSON Lines.

The capture is the Java SDK's I/O dump (a real session: negotiation, opens, PUTs, PUSHes, ACKs,
CONFIRMs) repeated to about 11 MB. The reference, measured in the same run, is framing alone
(``iter_events``): the decode/framing ratio shows what dissecting and rendering cost on top.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from pathlib import Path

from pybmq.wire.dissect import dissect_stream, render_text
from pybmq.wire.framing import iter_events

from bench.common import Result

DUMP = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "vectors"
    / "java-sdk"
    / "bmq_io_dump_1551267643131.bin"
)


def _chunks(data: bytes, size: int = 1 << 20) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _mb_per_s(fn: Callable[[], object], size: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return size / best / 1e6


def run(quick: bool) -> list[Result]:
    one = DUMP.read_bytes()
    capture = one * (1 if quick else max(1, 11_000_000 // len(one)))
    repeat = 1 if quick else 3
    chunks = _chunks(capture)

    def text() -> None:
        sink = io.StringIO()
        for node in dissect_stream(chunks):
            sink.write(render_text(node))

    def jsonl() -> None:
        sink = io.StringIO()
        for node in dissect_stream(chunks):
            sink.write(json.dumps(node))

    def framing() -> None:
        for _ in iter_events(capture):
            pass

    reference = _mb_per_s(framing, len(capture), repeat)
    rows = []
    for name, fn in (("text", text), ("json", jsonl)):
        rate = _mb_per_s(fn, len(capture), repeat)
        note = f"{len(capture) / 1e6:.1f} MB capture; {rate / reference:.3f}x framing alone"
        rows.append(Result(f"decode {name}", rate, "MB/s", note))
    rows.append(Result("framing alone (reference)", reference, "MB/s"))
    return rows
