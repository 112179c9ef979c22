"""The two generated models agree: construct (reference) and the struct codec (hot path).

The codec module holds only what the runtime uses: every struct's ``struct.Struct`` and bit
layout (the dissector), the ``unpack_x`` readers, the SHIFT/MASK constants of the bit-fields the
hot path reads and writes by hand, and views (several units and the words after a header in one
unpack). Each is checked against the construct model on random values and random bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pybmq.codegen.layout import SPEC_NAME, Struct, load_spec
from pybmq.errors import DecodeError, EncodeError
from pybmq.generated import wire_codec, wire_layout, wire_messages
from pybmq.generated.wire_codec import EventType
from pybmq.wire.batches import AckEventBuilder
from pybmq.wire.framing import event_header_bytes, split_events
from pybmq.wire.put import PutEventBuilder

SPEC_PATH = Path(wire_codec.__file__).resolve().parent.parent / "schema" / SPEC_NAME
SPEC = load_spec(SPEC_PATH)
RAW_SPEC = yaml.safe_load(SPEC_PATH.read_text())
STRUCTS = {s.name: s for s in SPEC.structs}
WITH_UNPACK = sorted(n for n in STRUCTS if "unpack" in SPEC.codec(n).exports)
WITH_BITS = sorted(n for n in STRUCTS if SPEC.codec(n).bits)


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
        if "record" in SPEC.codec(name).exports:
            assert getattr(wire_codec, name)._fields == tuple(f.name for f in struct.fields)
        bits = wire_codec.BIT_LAYOUTS[name]
        assert [b[0] for b in bits] == [f.name for f in struct.fields]
        assert [b[1] for b in bits] == [sum(w for _, _, w in bits[:i]) for i in range(len(bits))]
        assert sum(w for _, _, w in bits) == struct.size * 8


def test_shared_layouts_hold() -> None:
    """The three batch headers share one layout, and the PUT and PUSH headers their first two
    words and the schema id's format (what readers of either, a dissector's, may rely on)."""
    layouts = wire_codec.BIT_LAYOUTS
    assert layouts["AckHeader"][:2] == layouts["ConfirmHeader"][:2] == layouts["RejectHeader"][:2]
    assert layouts["PutHeader"][:5] == layouts["PushHeader"][:5]
    assert wire_messages.PUT_SCHEMA_ID.format == wire_messages.PUSH_SCHEMA_ID.format


@pytest.mark.parametrize("name", sorted(STRUCTS))
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_values_encode_identically(name: str, data: st.DataObject) -> None:
    """construct's bytes, read by the struct's Struct and the bit constants, give the values
    back; writing the values with the same constants gives construct's bytes."""
    fields = data.draw(values(STRUCTS[name]))
    reference = wire_layout.STRUCTS[name].build(fields)
    parsed = wire_layout.STRUCTS[name].parse(reference)
    assert {k: parsed[k] for k in fields} == fields
    units = wire_codec.STRUCTS[name].unpack(reference)
    assert wire_codec.STRUCTS[name].pack(*units) == reference
    const = STRUCTS[name].const
    for unit, value in zip(STRUCTS[name].units, units, strict=True):
        if unit.whole:
            assert value == fields[unit.fields[0].name]
            continue
        for f in unit.fields:
            prefix = f"{const}_{f.name.upper()}"
            if not hasattr(wire_codec, f"{prefix}_SHIFT") and not hasattr(
                wire_codec, f"{prefix}_MASK"
            ):
                continue  # the runtime reads this one through the Struct or not at all
            shift = getattr(wire_codec, f"{prefix}_SHIFT", 0)
            mask = getattr(wire_codec, f"{prefix}_MASK", None)
            if mask is None:  # the unit's top bits (the shift alone reads them), or write-only
                if shift + f.width == unit.size * 8:
                    assert value >> shift == fields[f.name]
            else:
                assert (value >> shift) & mask == fields[f.name]  # reading
            field_bits = ((1 << f.width) - 1) << shift
            assert fields[f.name] << shift == value & field_bits  # writing
    for group, members in RAW_SPEC["codec"].get(name, {}).get("groups", {}).items():
        layout = {n: (first, width) for n, first, width in wire_codec.BIT_LAYOUTS[name]}
        first = layout[members[0]][0]
        word = int.from_bytes(reference[first // 32 * 4 : first // 32 * 4 + 4], "big")
        expected = 0
        for m in members:
            expected = (expected << layout[m][1]) | fields[m]
        shift = getattr(wire_codec, f"{const}_{group.upper()}_SHIFT", 0)
        mask = getattr(wire_codec, f"{const}_{group.upper()}_MASK")
        assert (word >> shift) & mask == expected
    for value_name, split in RAW_SPEC["codec"].get(name, {}).get("splits", {}).items():
        parts = split["parts"] if isinstance(split, dict) else split
        widths = {n: width for n, _, width in wire_codec.BIT_LAYOUTS[name]}
        whole = 0
        for p in parts:
            whole = (whole << widths[p]) | fields[p]
        if isinstance(split, dict) and split.get("mask"):
            assert (
                getattr(wire_codec, f"{const}_{value_name.upper()}_MASK")
                == (1 << sum(widths[p] for p in parts)) - 1
            )
        rebuilt = 0
        for i, p in enumerate(parts):
            at = getattr(wire_codec, f"{const}_{p.upper()}_AT", 0)
            rebuilt |= fields[p] << at  # joining the parts
            if i:  # splitting the value (the top part needs no mask)
                assert (whole >> at) & getattr(wire_codec, f"{const}_{p.upper()}_MASK") == fields[p]
            else:
                assert whole >> at == fields[p]
        assert rebuilt == whole


@pytest.mark.parametrize("name", WITH_UNPACK)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_random_bytes_decode_identically(name: str, data: st.DataObject) -> None:
    raw = data.draw(st.binary(min_size=STRUCTS[name].size, max_size=STRUCTS[name].size))
    parsed = wire_layout.STRUCTS[name].parse(raw)
    fast = getattr(wire_codec, f"unpack_{STRUCTS[name].snake}")(raw)
    assert fast._asdict() == {k: parsed[k] for k in fast._fields}


@pytest.mark.parametrize("view", [v.name for v in SPEC.views])
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_views_read_what_construct_reads(view: str, data: st.DataObject) -> None:
    """A view gives the values of its struct's units (reserved ones skipped), then the words
    after the struct, at its offset."""
    spec = next(v for v in SPEC.views if v.name == view)
    fast = getattr(wire_codec, view)
    assert getattr(wire_codec, f"{view}_OFFSET", 0) == spec.offset
    if not spec.struct:
        raw = data.draw(st.binary(min_size=fast.size, max_size=fast.size))
        assert fast.unpack(raw) == (int.from_bytes(raw, "big"),)
        return
    struct = STRUCTS[spec.struct]
    fields = data.draw(values(struct))
    tail = data.draw(st.binary(min_size=8, max_size=8))
    raw = wire_layout.STRUCTS[spec.struct].build(fields) + tail
    got = fast.unpack_from(raw, spec.offset)
    units = wire_codec.STRUCTS[spec.struct].unpack_from(raw)
    starts, pos = [], 0
    for unit in struct.units:
        starts.append(pos)
        pos += unit.size
    expected = [
        value
        for unit, start, value in zip(struct.units, starts, units, strict=True)
        if start >= spec.offset
        and start < spec.offset + fast.size
        and not (unit.whole and unit.fields[0].name.startswith("reserved"))
    ]
    extra = len(got) - len(expected)
    after = struct.size
    for i in range(extra):
        expected.append(int.from_bytes(raw[after + 4 * i : after + 4 * i + 4], "big"))
    assert list(got) == expected


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
    """The runtime's writers: the bytes of a header, and EncodeError for a value that does not
    fit (the generated checked encoders had no runtime user and are gone)."""
    good = wire_codec.EventHeader(0, 8, 1, 11, 2, 0, 0)
    assert event_header_bytes(EventType.HEARTBEAT_REQ, 8) == bytes.fromhex("000000084b020000")
    assert wire_codec.unpack_event_header(bytes.fromhex("000000084b020000")) == good
    with pytest.raises(EncodeError):
        PutEventBuilder().add(1 << 31, b"x", guid=b"\0" * 16)
    with pytest.raises(EncodeError):
        AckEventBuilder().add(0, 0, b"short", 0)
    with pytest.raises(DecodeError) as info:
        wire_codec.unpack_put_header(b"\0" * 40, 8)
    assert info.value.offset == 8
