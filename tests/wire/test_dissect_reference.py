"""The dissector reads headers with the fast codec; every field it shows is what the construct
reference model (``wire_layout``) reads from the same bytes, short (older peers') headers included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pybmq.codegen.layout import SPEC_NAME, load_spec
from pybmq.generated import wire_codec, wire_layout
from pybmq.wire.dissect import dissect_event, hexdump
from pybmq.wire.framing import Event, split_events
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.put import PutEventBuilder

_BATCH = {"ACK": wire_layout.AckHeader, "CONFIRM": wire_layout.ConfirmHeader}
_BATCH["REJECT"] = wire_layout.RejectHeader
_NAMES = {id(v): k for k, v in wire_layout.STRUCTS.items()}
SPEC = {
    s.name: s
    for s in load_spec(
        Path(wire_codec.__file__).resolve().parent.parent / "schema" / SPEC_NAME
    ).structs
}


def reference(struct: Any, data: bytes, offset: int, size: int) -> dict[str, Any]:
    """The construct reading: the header zero-extended to its struct, absent fields left out."""
    full = struct.sizeof()
    parsed = struct.parse(data[offset : offset + min(size, full)].ljust(full, b"\0"))
    present, bit = set(), 0
    for field in SPEC[_NAMES[id(struct)]].fields:
        if bit < size * 8:
            present.add(field.name)
        bit += field.width
    return {k: (v.hex() if isinstance(v, bytes) else v) for k, v in parsed.items() if k in present}


def check(event: Event) -> int:
    node = dissect_event(event)
    data, checked = event.data, 1
    assert {k: v for k, v in node["event_header"].items() if k != "type_name"} == reference(
        wire_layout.EventHeader, data, 0, 8
    )
    for message in node.get("messages", []):
        struct = wire_layout.PutHeader if node["type"] == "PUT" else wire_layout.PushHeader
        header = dict(message["header"])
        for extra in ("flags_names", "compression_name", "correlation_id"):
            header.pop(extra, None)
        start = message["offset"] - event.offset
        assert header == reference(struct, data, start, header["header_words"] * 4)
        checked += 1
    if node["type"] in _BATCH:
        struct = _BATCH[node["type"]]
        assert node["header"] == reference(struct, data, event.header_size, struct.sizeof())
        checked += 1
    return checked


def test_every_java_vector_header_matches_the_reference(java_vectors: Path) -> None:
    checked = 0
    for path in sorted(java_vectors.glob("*.bin")):
        if path.name.startswith(("msg_props", "broker_response")):
            continue  # not events
        for event in split_events(path.read_bytes())[0]:
            checked += check(event)
    assert checked > 2500  # the io dump alone holds over 2000 headers


def test_short_headers_show_only_the_fields_they_hold() -> None:
    push = PushEventBuilder()
    push.add(3, bytes(range(16)), b"old peer", header_words=7)
    put = PutEventBuilder()
    put.add(5, b"old producer", correlation_id=9, header_words=8)
    for data in (*push.finish(), *put.finish()):
        (event,) = split_events(data)[0]
        assert check(event) == 2
        header = dissect_event(event)["messages"][0]["header"]
        assert "schema_id" not in header and "reserved" not in header


def test_hexdump_lines() -> None:
    data = bytes(range(30, 50))
    assert hexdump(data, 18) == [
        "     0:   1e1f2021 22232425 26272829 2a2b2c2d     |.. !\"#$%&'()*+,-|",
        "    16:   2e2f                                    |./              |",
        "        ... 2 more bytes",
    ]
    assert hexdump(b"", None) == []


@pytest.mark.parametrize("size", [*range(1, 34), 64, 65])
def test_hexdump_lines_of_every_short_size(size: int) -> None:
    """Each line as written out by hand: offset, four groups of 4 bytes, the printable column
    (one line and longer dumps take different paths)."""
    data = bytes((i * 37 + size) % 256 for i in range(size))
    expected = []
    for at in range(0, size, 16):
        line = data[at : at + 16]
        groups = " ".join(line[i : i + 4].hex() for i in range(0, len(line), 4))
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in line)
        expected.append(f"{at:6}:   {groups:35}     |{shown:16}|")
    assert hexdump(data, None) == expected
    assert hexdump(data, 64) == expected[:4] + (
        [f"        ... {size - 64} more bytes"] if size > 64 else []
    )
