"""``pybmq decode`` on a file of zlib bombs: one message inflated at a time, each bounded."""

from __future__ import annotations

import gc
import tracemalloc
import zlib

from pybmq.generated.wire_codec import CompressionAlgorithmType
from pybmq.wire.dissect import MAX_INFLATED_MESSAGE, dissect
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.render import render_stream

from tests.helpers.hostile import zlib_bomb

ZLIB = CompressionAlgorithmType.ZLIB


def _bombs(count: int, inflated: int) -> bytes:
    bomb = zlib_bomb(inflated)
    builder = PushEventBuilder()
    for n in range(count):
        builder.add(1, n.to_bytes(16, "big"), bomb, raw=True, compression=ZLIB)
    builder.add(1, bytes(15) + b"\xff", zlib.compress(b"fine" * 1000), raw=True, compression=ZLIB)
    return b"".join(builder.finish())


def test_decoding_zlib_bombs_holds_one_bounded_message_at_a_time() -> None:
    data = _bombs(16, 4 * MAX_INFLATED_MESSAGE)  # 16 x 16 MiB in a few hundred KiB
    gc.collect()
    tracemalloc.start()
    try:
        text = "".join(render_stream([data], payload_limit=None))
        _, text_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        nodes = list(dissect(data, payload_limit=None))
        _, tree_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text.count("payload not decompressed") == 16
    assert "66696e65" in text  # the legitimate message still inflates ("fine")
    (event,) = nodes
    notes = [m.get("note", "") for m in event["messages"]]
    assert sum("inflates beyond" in n for n in notes) == 16 and notes[-1] == ""
    # The old decoder inflated every message of the event at once (16 x 16 MiB here).
    assert text_peak < 4 * MAX_INFLATED_MESSAGE, f"{text_peak >> 20} MiB"
    assert tree_peak < 4 * MAX_INFLATED_MESSAGE, f"{tree_peak >> 20} MiB"
