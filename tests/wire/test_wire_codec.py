"""The two generated models agree: construct (reference) and the struct codec (hot path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pybmq.codegen.layout import SPEC_NAME, Struct, load_spec
from pybmq.errors import DecodeError, EncodeError
from pybmq.generated import wire_codec, wire_layout
from pybmq.wire.framing import split_events

SPEC = load_spec(Path(wire_codec.__file__).resolve().parent.parent / "schema" / SPEC_NAME)
STRUCTS = {s.name: s for s in SPEC.structs}


def codec(name: str, verb: str) -> Any:
    snake = STRUCTS[name].snake
    return getattr(wire_codec, f"pack_{snake}_into" if verb == "pack" else f"{verb}_{snake}")


def values(struct: Struct) -> st.SearchStrategy[dict[str, Any]]:
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for f in struct.fields:
        if f.is_bytes:
            fields[f.name] = st.binary(min_size=f.width // 8, max_size=f.width // 8)
        elif f.signed:
            fields[f.name] = st.integers(-(1 << 31), (1 << 31) - 1)
        else:
            fields[f.name] = st.integers(0, (1 << f.width) - 1)
    return st.fixed_dictionaries(fields)


def test_sizes_and_field_order_agree() -> None:
    for name, struct in STRUCTS.items():
        assert wire_layout.STRUCTS[name].sizeof() == wire_codec.STRUCTS[name].size == struct.size
        assert getattr(wire_codec, name)._fields == tuple(f.name for f in struct.fields)
        bits = getattr(wire_codec, f"{struct.const}_BITS")
        assert [b[0] for b in bits] == [f.name for f in struct.fields]
        assert [b[1] for b in bits] == [sum(w for _, _, w in bits[:i]) for i in range(len(bits))]
        assert sum(w for _, _, w in bits) == struct.size * 8


@pytest.mark.parametrize("name", sorted(STRUCTS))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_values_encode_identically(name: str, data: st.DataObject) -> None:
    fields = data.draw(values(STRUCTS[name]))
    record = getattr(wire_codec, name)(**fields)
    fast = codec(name, "encode")(record)
    reference = wire_layout.STRUCTS[name].build(fields)
    assert fast == reference
    parsed = wire_layout.STRUCTS[name].parse(fast)
    assert {k: parsed[k] for k in fields} == fields
    assert codec(name, "unpack")(fast) == record
    buf = bytearray(len(fast) + 3)
    codec(name, "pack")(buf, 3, **fields)
    assert bytes(buf[3:]) == fast


@pytest.mark.parametrize("name", sorted(STRUCTS))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_random_bytes_decode_identically(name: str, data: st.DataObject) -> None:
    raw = data.draw(st.binary(min_size=STRUCTS[name].size, max_size=STRUCTS[name].size))
    parsed = wire_layout.STRUCTS[name].parse(raw)
    fast = codec(name, "unpack")(raw)
    assert fast._asdict() == {k: parsed[k] for k in fast._fields}


def test_vector_headers_agree(java_vectors: Path) -> None:
    for path in java_vectors.glob("*.bin"):
        if path.name.startswith(("msg_props", "broker_response")):
            continue
        for event in split_events(path.read_bytes())[0]:
            head = event.data[:8]
            assert dict(wire_codec.unpack_event_header(head)._asdict()) == {
                k: v
                for k, v in wire_layout.EventHeader.parse(head).items()
                if not k.startswith("_")
            }


def test_checked_encode_and_truncated_decode() -> None:
    good = wire_codec.EventHeader(0, 8, 1, 11, 2, 0, 0)
    assert wire_codec.encode_event_header(good) == bytes.fromhex("000000084b020000")
    with pytest.raises(EncodeError):
        wire_codec.encode_event_header(good._replace(length=1 << 31))
    with pytest.raises(EncodeError):
        wire_codec.encode_put_header(
            wire_codec.PutHeader(0, 0, 0, 0, 9, 1 << 31, b"\0" * 16, 0, 0, 0)
        )
    with pytest.raises(EncodeError):
        wire_codec.encode_ack_message(wire_codec.AckMessage(0, 0, 0, b"short", 0))
    with pytest.raises(DecodeError) as info:
        wire_codec.unpack_put_header(b"\0" * 40, 8)
    assert info.value.offset == 8
