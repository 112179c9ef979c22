"""Control messages: encode and decode cost per message in each codec (µs/message).

Messages: the SDK's openQueue request, the broker's openQueueResponse, and the ClientIdentity
negotiation as the official SDK sends it (tests/vectors/official-sdk).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pybmq.generated.bmqp_ctrlmsg import (
    ControlMessage,
    NegotiationMessage,
    OpenQueue,
    OpenQueueResponse,
    QueueHandleParameters,
    RoutingConfiguration,
)
from pybmq.generated.bmqp_ctrlmsg_ber import decode_ber, encode_ber
from pybmq.generated.bmqp_ctrlmsg_json import decode_json, encode_json

from bench.common import Result, best_seconds

CAPTURE = (
    Path(__file__).resolve().parent.parent
    / "tests"
    / "vectors"
    / "official-sdk"
    / "nego_client_identity_blazingmq_1.2.2.bin"
)


def _messages() -> list[tuple[str, object]]:
    params = QueueHandleParameters(
        uri="bmq://bmq.test.persistent.priority/my-queue", q_id=7, flags=12, read_count=1
    )
    raw = CAPTURE.read_bytes()
    negotiation = decode_ber(NegotiationMessage, raw[8 : len(raw) - raw[-1]])
    return [
        ("openQueue", ControlMessage(r_id=1, open_queue=OpenQueue(handle_parameters=params))),
        (
            "openQueueResponse",
            ControlMessage(
                r_id=1,
                open_queue_response=OpenQueueResponse(
                    original_request=OpenQueue(handle_parameters=params),
                    routing_configuration=RoutingConfiguration(flags=2),
                ),
            ),
        ),
        ("clientIdentity", negotiation),
    ]


def _per_message_us(fn: Callable[[], object], count: int) -> tuple[float, float]:
    """(wall, CPU) µs per call, each the best of 5 runs. On a shared machine the CPU figure is the
    one to compare: the wall figure includes time spent waiting for a core."""

    def loop() -> None:
        for _ in range(count):
            fn()

    wall = best_seconds(loop, repeat=5) / count * 1e6
    cpu = float("inf")
    for _ in range(5):
        start = time.process_time()
        loop()
        cpu = min(cpu, time.process_time() - start)
    return wall, cpu / count * 1e6


def run(quick: bool) -> list[Result]:
    count = 20 if quick else 3000
    results = []
    for name, message in _messages():
        cls = type(message)
        as_ber = encode_ber(message)
        as_json = encode_json(message)
        for codec, encode, decode, data in (
            ("BER", encode_ber, decode_ber, as_ber),
            ("JSON", encode_json, decode_json, as_json),
        ):
            for op, fn in (
                ("encode", lambda e=encode, m=message: e(m)),
                ("decode", lambda d=decode, c=cls, b=data: d(c, b)),
            ):
                wall, cpu = _per_message_us(fn, count)
                note = f"{len(data)} bytes; wall {wall:.1f} µs"
                results.append(Result(f"ctrlmsg {codec} {op} {name}", cpu, "µs/msg CPU", note))
    return results
