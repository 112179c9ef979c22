"""atheris target for the wire decoders (not run in CI).

    pip install atheris && python tests/fuzz/fuzz_wire.py -max_total_time=600

Any exception other than ProtocolError escaping a decoder is a bug.
"""

from __future__ import annotations

import contextlib
import sys

import atheris  # type: ignore[import-not-found]

with atheris.instrument_imports():
    from pybmq.errors import ProtocolError
    from pybmq.wire.batches import iter_ack, iter_confirm, iter_reject
    from pybmq.wire.control import decode_control
    from pybmq.wire.framing import EventReader, split_events
    from pybmq.wire.properties import MessageProperties
    from pybmq.wire.push import iter_push
    from pybmq.wire.put import iter_put


def one_input(data: bytes) -> None:
    for decoder in (
        lambda d: [m.properties and dict(m.properties) for m in iter_put(d, verify_crc=True)],
        lambda d: [m.properties and dict(m.properties) for m in iter_push(d)],
        lambda d: list(iter_ack(d)),
        lambda d: list(iter_confirm(d)),
        lambda d: list(iter_reject(d)),
        decode_control,
        split_events,
        lambda d: EventReader(max_event_size=1 << 20).feed(d),
        lambda d: dict(MessageProperties.decode(d, extended=True)),
        lambda d: dict(MessageProperties.decode(d, extended=False)),
    ):
        with contextlib.suppress(ProtocolError):
            decoder(data)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
