"""``dissect_stream`` gives what ``dissect`` gives, whatever the chunking, holding one event."""

from __future__ import annotations

from pathlib import Path

import pytest
from pybmq.errors import ProtocolError
from pybmq.wire.dissect import dissect, dissect_stream
from pybmq.wire.framing import MAX_EVENT_SIZE


def chunked(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize("size", [1, 7, 4096, 1 << 20])
def test_same_nodes_as_the_whole_buffer(java_vectors: Path, size: int) -> None:
    for name in ("bmq_io_dump_1551267643131.bin", "msg_ack_20072018.bin"):
        data = (java_vectors / name).read_bytes()
        assert list(dissect_stream(chunked(data, size))) == list(dissect(data))


def test_errors_name_the_stream_offset(java_vectors: Path) -> None:
    data = (java_vectors / "msg_put_multi.bin").read_bytes()
    nodes = []
    with pytest.raises(ProtocolError, match=f"offset {len(data)}"):
        for node in dissect_stream(chunked(data + b"\x00\x00\x00\x03\x41\x02\x00\x00", 5)):
            nodes.append(node)
    assert len(nodes) == 1  # the good event came out before the error
    with pytest.raises(ProtocolError, match="truncated"):
        list(dissect_stream([data[:-3]]))
    with pytest.raises(ProtocolError, match="non-zero bytes after the zero filler"):
        list(dissect_stream([data, b"\x00" * 8, b"\x01"]))


def test_a_huge_declared_length_is_refused_before_buffering_it() -> None:
    header = (MAX_EVENT_SIZE + 1).to_bytes(4, "big") + b"\x41\x02\x00\x00"
    with pytest.raises(ProtocolError, match="exceeds the maximum"):
        list(dissect_stream([header]))
