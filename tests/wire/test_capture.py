"""The tap's capture records: round trip in any chunking, and clean errors for bad files."""

from __future__ import annotations

import pytest
from pybmq.errors import ProtocolError
from pybmq.wire.capture import MAGIC, encode_record, iter_records
from pybmq.wire.control import HEARTBEAT_REQ_EVENT
from pybmq.wire.framing import MAX_EVENT_SIZE


def capture() -> bytes:
    return (
        MAGIC
        + encode_record(0, 1, 1_700_000_000_000_000_000, HEARTBEAT_REQ_EVENT)
        + encode_record(1, 2, 1_700_000_000_000_000_001, HEARTBEAT_REQ_EVENT)
    )


@pytest.mark.parametrize("size", [1, 5, 1 << 20])
def test_records_round_trip_in_any_chunking(size: int) -> None:
    data = capture()
    records = list(iter_records([data[i : i + size] for i in range(0, len(data), size)]))
    assert [(r.direction, r.connection, r.event) for r in records] == [
        (0, 1, HEARTBEAT_REQ_EVENT),
        (1, 2, HEARTBEAT_REQ_EVENT),
    ]
    assert records[0].offset == len(MAGIC) + 17


def test_bad_captures_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError, match="not a pybmq tap capture"):
        list(iter_records([b"x" * 40]))
    with pytest.raises(ProtocolError, match="truncated record"):
        list(iter_records([capture()[:-3]]))
    huge = MAGIC + encode_record(0, 1, 0, b"")[:13] + (MAX_EVENT_SIZE + 1).to_bytes(4, "big")
    with pytest.raises(ProtocolError, match="exceeds the maximum"):
        list(iter_records([huge]))
