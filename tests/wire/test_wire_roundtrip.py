"""Build -> parse round trips for every event type, and hostile input into every decoder."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.errors import EncodeError, ProtocolError
from pybmq.generated.wire_codec import PropertyType
from pybmq.wire.batches import (
    AckEventBuilder,
    ConfirmEventBuilder,
    RejectEventBuilder,
    iter_ack,
    iter_confirm,
    iter_reject,
)
from pybmq.wire.compression import decompress
from pybmq.wire.control import decode_control, decode_control_event, encode_control_event
from pybmq.wire.framing import EventReader, split_events
from pybmq.wire.guid import MessageGuidGenerator, guid_from_hex, guid_hex, parse_guid
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder, iter_push
from pybmq.wire.put import PutEventBuilder, iter_put

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

names = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from("abcXYZ019"),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=11),
)
typed_values = st.one_of(
    st.tuples(st.just(PropertyType.BOOL), st.booleans()),
    st.tuples(st.just(PropertyType.CHAR), st.integers(-128, 127)),
    st.tuples(st.just(PropertyType.SHORT), st.integers(-(1 << 15), (1 << 15) - 1)),
    st.tuples(st.just(PropertyType.INT32), st.integers(-(1 << 31), (1 << 31) - 1)),
    st.tuples(st.just(PropertyType.INT64), st.integers(-(1 << 63), (1 << 63) - 1)),
    st.tuples(st.just(PropertyType.STRING), st.text(max_size=40)),
    st.tuples(st.just(PropertyType.BINARY), st.binary(max_size=40)),
)
properties = st.dictionaries(names, typed_values, max_size=8).map(MessageProperties)
guids = st.binary(min_size=16, max_size=16)
payloads = st.one_of(
    st.binary(max_size=64), st.binary(min_size=1024, max_size=1500).map(lambda b: b * 3)
)


@SETTINGS
@given(properties, st.booleans())
def test_properties_round_trip_both_formats(props: MessageProperties, extended: bool) -> None:
    area = props.encode(extended)
    if not props:
        assert area == b""
        return
    assert len(area) % 4 == 0
    again = MessageProperties.decode(area, extended=extended)
    assert again.typed_items() == props.typed_items()
    assert again.encode(extended) == area
    other = MessageProperties.decode(props.encode(not extended), extended=not extended)
    assert other.typed_items() == props.typed_items()


def test_property_limits() -> None:
    props = MessageProperties()
    for i in range(255):
        props.set_int32(f"p{i}", i)
    with pytest.raises(EncodeError):
        props.set_int32("one-too-many", 0)
    with pytest.raises(EncodeError):
        props.set("n" * 4096, 1)
    with pytest.raises(EncodeError):
        props.set_char("c", 128)
    with pytest.raises(EncodeError):
        props.set_string("_system", "x")  # upstream: names start with a letter or digit
    with pytest.raises(EncodeError):
        props.set_bool("b", 1)  # type: ignore[arg-type]
    assert MessageProperties.decode(props.encode(), extended=True)["p254"] == 254


@SETTINGS
@given(
    st.lists(st.tuples(payloads, st.one_of(st.none(), properties), guids), min_size=1, max_size=30),
    st.integers(1, 1000),
    st.sampled_from([0, 1]),
    st.booleans(),
)
def test_put_round_trip(
    messages: list[tuple[bytes, MessageProperties | None, bytes]],
    repeat: int,
    compression: int,
    extended: bool,
) -> None:
    builder = PutEventBuilder(max_event_size=64 * 1024)
    expected = []
    for i in range(repeat):  # up to 1000 messages, drawn from a smaller pool
        payload, props, guid = messages[i % len(messages)]
        builder.add(
            i, payload, guid=guid, properties=props, compression=compression,
            extended_properties=extended, ack_requested=bool(i & 1),
        )  # fmt: skip
        expected.append((i, guid, payload, props if props else None))
    events = builder.finish()
    assert all(len(e) <= 64 * 1024 for e in events)
    got = [
        (m.queue_id, m.guid, m.payload, m.properties)
        for e in events
        for m in iter_put(e, verify_crc=True)
    ]
    assert got == expected


@SETTINGS
@given(
    st.lists(st.tuples(payloads, st.one_of(st.none(), properties), guids), min_size=1, max_size=20),
    st.integers(1, 1000),
    st.sampled_from([0, 1]),
    st.one_of(
        st.none(),
        st.lists(
            st.tuples(st.integers(0, 2**32 - 1), st.one_of(st.none(), st.integers(0, 63))),
            max_size=4,
        ),
    ),
    st.booleans(),
    st.sampled_from([7, 8]),
)
def test_push_round_trip(
    messages: list[tuple[bytes, MessageProperties | None, bytes]],
    repeat: int,
    compression: int,
    infos: list[tuple[int, int | None]] | None,
    group: bool,
    header_words: int,
) -> None:
    builder = PushEventBuilder(max_event_size=64 * 1024)
    for i in range(repeat):
        payload, props, guid = messages[i % len(messages)]
        builder.add(
            i, guid, payload, properties=props, compression=compression,
            sub_queue_infos=infos, msg_group_id="group-1" if group else None,
            extended_properties=header_words == 8, header_words=header_words,
        )  # fmt: skip
    got = [m for e in builder.finish() for m in iter_push(e)]
    assert len(got) == repeat
    for i, m in enumerate(got):
        payload, props, guid = messages[i % len(messages)]
        assert (m.queue_id, m.guid, m.payload) == (i, guid, payload)
        assert m.properties == (props if props else None)
        assert m.msg_group_id == ("group-1" if group else None)
        want = [(s, 0x80 if r is None else r) for s, r in infos] if infos else []
        assert [
            (x.sub_queue_id, x.rda_unlimited << 7 | x.rda_counter) for x in m.sub_queue_infos
        ] == want


def test_push_packed_option_and_implicit_payload() -> None:
    builder = PushEventBuilder()
    builder.add(3, b"g" * 16, b"", packed_rda=5, implicit_payload=True)
    builder.add(3, b"h" * 16, b"data", packed_rda=None)
    first, second = iter_push(builder.finish()[0])
    assert first.implicit_payload and first.payload == b""
    assert [(i.sub_queue_id, i.rda_counter) for i in first.sub_queue_infos] == [(0, 5)]
    assert second.sub_queue_infos[0].rda_unlimited == 1 and second.payload == b"data"


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.integers(0, 15), st.integers(0, 2**24 - 1), guids, st.integers(-(2**31), 2**31 - 1)
        ),
        max_size=50,
    ),
    st.integers(1, 1000),
)
def test_ack_round_trip(entries: list[tuple[int, int, bytes, int]], repeat: int) -> None:
    builder = AckEventBuilder(max_event_size=4096)
    all_entries = (entries * repeat)[:1000] if entries else []
    builder.add_many(all_entries)
    events = builder.finish()
    got = [(a.status, a.correlation_id, a.guid, a.queue_id) for e in events for a in iter_ack(e)]
    assert got == all_entries


@SETTINGS
@given(
    st.lists(
        st.tuples(st.integers(-(2**31), 2**31 - 1), guids, st.integers(-(2**31), 2**31 - 1)),
        min_size=1,
        max_size=50,
    ),
    st.integers(1, 1000),
)
def test_confirm_and_reject_round_trip(entries: list[tuple[int, bytes, int]], repeat: int) -> None:
    all_entries = (entries * repeat)[:1000]
    for builder_cls, iterate in (
        (ConfirmEventBuilder, iter_confirm),
        (RejectEventBuilder, iter_reject),
    ):
        builder = builder_cls(max_event_size=2048)
        half = len(all_entries) // 2
        builder.add_many(all_entries[:half])
        for q, g, s in all_entries[half:]:
            builder.add(q, g, s)
        got = [tuple(c) for e in builder.finish() for c in iterate(e)]
        assert got == all_entries


def test_batch_builders_refuse_bad_entries() -> None:
    with pytest.raises(EncodeError):
        AckEventBuilder().add_many([(0, 1 << 24, b"g" * 16, 1)])
    with pytest.raises(EncodeError):
        AckEventBuilder().add(16, 0, b"g" * 16, 1)
    with pytest.raises(EncodeError):
        ConfirmEventBuilder().add_many([(1, b"short", 0)])
    with pytest.raises(EncodeError):
        ConfirmEventBuilder().add(1 << 31, b"g" * 16, 0)


# -- robustness -----------------------------------------------------------------------------------


def _consume(data: bytes) -> None:
    """Run every decoder over ``data``; only ProtocolError may escape."""
    for decoder in (
        lambda d: [(m.properties and dict(m.properties)) for m in iter_put(d, verify_crc=True)],
        lambda d: [(m.properties and dict(m.properties)) for m in iter_push(d)],
        lambda d: list(iter_ack(d)),
        lambda d: list(iter_confirm(d)),
        lambda d: list(iter_reject(d)),
        decode_control_event,
        decode_control,
        split_events,
        lambda d: EventReader(max_event_size=1 << 16).feed(d),
        lambda d: dict(MessageProperties.decode(d, extended=True)),
        lambda d: dict(MessageProperties.decode(d, extended=False)),
    ):
        with contextlib.suppress(ProtocolError):
            decoder(data)


def _valid_events() -> list[bytes]:
    props = MessageProperties({"a": 1, "b": "text", "c": b"\x00\x01"})
    put = PutEventBuilder()
    put.add(1, b"payload", correlation_id=5, properties=props)
    put.add(
        2, b"z" * 2000, correlation_id=6, properties=props, compression=1, extended_properties=False
    )
    push = PushEventBuilder()
    push.add(
        1, b"g" * 16, b"payload", properties=props, sub_queue_infos=[(1, 3)], msg_group_id="gid"
    )
    push.add(1, b"g" * 16, b"y" * 2000, compression=1)
    ack = AckEventBuilder()
    ack.add(0, 1, b"g" * 16, 1)
    confirm = ConfirmEventBuilder()
    confirm.add(1, b"g" * 16, 0)
    return [
        *put.finish(), *push.finish(), *ack.finish(), *confirm.finish(),
        encode_control_event(b'{"status":{}}', 1), props.encode(True), props.encode(False),
    ]  # fmt: skip


VALID = _valid_events()


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_protocol_error(data: bytes) -> None:
    _consume(data)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(VALID),
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 10_000),
)
def test_mutated_events_raise_only_protocol_error(
    base: bytes, flips: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(base)
    for at, value in flips:
        data[at % len(data)] = value
    _consume(bytes(data))
    _consume(bytes(data[: cut % (len(data) + 1)]))


def test_zlib_bomb_is_refused() -> None:
    bomb = zlib.compress(b"\0" * (8 << 20))
    assert len(bomb) < 10_000
    with pytest.raises(ProtocolError, match="inflates beyond"):
        decompress(bomb, 1, max_size=1 << 20)
    push = PushEventBuilder()
    push.add(1, b"g" * 16, bomb, raw=True, compression=1)
    with pytest.raises(ProtocolError, match="inflates beyond"):
        list(iter_push(push.finish()[0], max_decompressed_size=1 << 20))
    with pytest.raises(ProtocolError, match="truncated zlib"):
        decompress(bomb[:100], 1)


# -- GUIDs ------------------------------------------------------------------------------------------


def test_guids_follow_the_cpp_layout_and_are_unique() -> None:
    gen = MessageGuidGenerator(session_id=7)
    many = [gen.generate() for _ in range(2000)] + gen.generate_many(2000)
    assert len(set(many)) == len(many)
    fields = [parse_guid(g) for g in many]
    assert {f.version for f in fields} == {1}
    assert [f.counter for f in fields] == list(range(4000))
    assert all(f.client_id == gen.client_id_hex for f in fields)
    assert [f.timer_tick for f in fields] == sorted(f.timer_tick for f in fields)
    assert MessageGuidGenerator(session_id=7).client_id != gen.client_id  # new start time
    assert guid_from_hex(guid_hex(many[0])) == many[0]


def test_guids_differ_across_processes() -> None:
    code = "from pybmq.wire.guid import MessageGuidGenerator as G; g = G(session_id=1); print(g.client_id_hex, g.generate().hex())"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        ).stdout
        for _ in range(2)
    }
    assert len(outs) == 2 and len({o.split()[0] for o in outs}) == 2
    assert os.getpid() > 0


def test_io_dump_push_messages_decode(java_vectors: Path) -> None:
    events, _ = split_events((java_vectors / "bmq_io_dump_1551267643131.bin").read_bytes())
    pushes = [m for e in events if e.type == 4 for m in iter_push(e)]
    acks = [a for e in events if e.type == 5 for a in iter_ack(e)]
    assert pushes and acks
    assert all(len(m.guid) == 16 for m in pushes)
