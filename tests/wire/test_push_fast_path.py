"""decode_push's fast path for PUSHes with one sub-queue info option (what brokers send most)
returns exactly what the general path does, and still refuses malformed messages."""

from __future__ import annotations

import pybmq.generated.wire_messages as wire_messages
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pybmq.errors import ProtocolError
from pybmq.wire.options import encode_sub_queue_ids_old, parse_options
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder, decode_push

GUID = bytes([0x40]) + bytes(range(1, 16))


@pytest.mark.parametrize("with_properties", [False, True])
@pytest.mark.parametrize("option", ["plain", "packed", "old"])
def test_one_option_pushes_decode_fully(with_properties: bool, option: str) -> None:
    properties = MessageProperties({"k": "v", "n": 3}) if with_properties else None
    builder = PushEventBuilder()
    for i in range(5):
        if option == "plain":
            builder.add(
                7, GUID, b"payload-%d" % i, properties=properties, sub_queue_infos=[(9, None)]
            )
        elif option == "packed":
            builder.add(7, GUID, b"payload-%d" % i, properties=properties, packed_rda=5)
        else:
            builder.add(
                7, GUID, b"payload-%d" % i, properties=properties,
                options=encode_sub_queue_ids_old([9]),
            )  # fmt: skip
    [event] = builder.finish()
    messages = decode_push(event)
    assert [m.payload for m in messages] == [b"payload-%d" % i for i in range(5)]
    for m in messages:
        assert (m.queue_id, m.guid, m.header_words, m.compression) == (7, GUID, 8, 0)
        assert m.options and len(m.options) == {"plain": 12, "packed": 4, "old": 8}[option]
        [info] = m.sub_queue_infos
        if option != "packed":
            assert (info.sub_queue_id, info.rda_unlimited) == (9, 1)
        else:
            assert (info.sub_queue_id, info.rda_counter) == (0, 5)
        assert (dict(m.properties) if m.properties is not None else None) == (
            {"k": "v", "n": 3} if with_properties else None
        )


def test_fast_path_refuses_bad_padding() -> None:
    builder = PushEventBuilder()
    builder.add(7, GUID, b"abc", sub_queue_infos=[(9, None)])
    [event] = builder.finish()
    broken = bytearray(event)
    broken[-1] = 9  # the padding byte must be 1..4
    with pytest.raises(ProtocolError, match="padding"):
        decode_push(bytes(broken))


def test_option_is_parsed_once_per_event_not_per_message(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = parse_options

    def counting(*args: object) -> object:
        calls.append(args)
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(wire_messages, "read_options", counting)
    builder = PushEventBuilder()
    for i in range(50):
        builder.add(7, GUID, b"p%d" % i, sub_queue_infos=[(9, None)])
        builder.add(7, GUID, b"o%d" % i, options=encode_sub_queue_ids_old([9]))
    [event] = builder.finish()
    messages = decode_push(event)
    assert len(messages) == 100
    assert len(calls) == 2  # once per distinct option value, not per message
    assert {m.sub_queue_ids for m in messages} == {(9,)}


@pytest.mark.parametrize("header_words", [8, 7])
@pytest.mark.parametrize("with_properties", [False, True])
def test_no_option_pushes_decode_fully_and_refuse_bad_bytes(
    header_words: int, with_properties: bool
) -> None:
    """The 32- and 28-byte header branches (no options): same fields as built, and bad padding
    bytes (0, 5) or a properties area of 0 words or past the message raise ProtocolError."""
    properties = MessageProperties({"k": "v", "n": 3}) if with_properties else None
    builder = PushEventBuilder()
    for i in range(4):
        builder.add(7, GUID, b"payload-%d" % i, properties=properties, header_words=header_words)
    [event] = builder.finish()
    messages = decode_push(event)
    assert [m.payload for m in messages] == [b"payload-%d" % i for i in range(4)]
    for m in messages:
        assert (m.queue_id, m.guid, m.header_words, m.options, m.sub_queue_infos) == (
            7, GUID, header_words, b"", ()
        )  # fmt: skip
        # A 28-byte header has no schema id, so its properties read as the old format; the
        # builder still wrote the extended one, so only the area's bounds are compared there.
        assert bool(m.properties_area) == with_properties
        if header_words == 8:
            assert (dict(m.properties) if m.properties is not None else None) == (
                {"k": "v", "n": 3} if with_properties else None
            )
    for bad in (0, 5):
        broken = bytearray(event)
        broken[-1] = bad
        with pytest.raises(ProtocolError, match="padding"):
            decode_push(bytes(broken))
    if with_properties:
        area_word = 8 + header_words * 4  # first message: event header, PushHeader
        for words in (0, 0xFFFFFF):
            broken = bytearray(event)
            broken[area_word + 1 : area_word + 4] = words.to_bytes(3, "big")
            with pytest.raises(ProtocolError):
                decode_push(bytes(broken))


def general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every option shape miss the one-option fast path."""
    for name in (
        "ONE_SUB_QUEUE_ID_OLD_OPTION",
        "ONE_SUB_QUEUE_INFO_OPTION",
        "PACKED_SUB_QUEUE_INFO_OPTION",
    ):
        monkeypatch.setattr(wire_messages, name, -1)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    shapes=st.lists(
        st.tuples(
            st.sampled_from([7, 8]),  # header words
            st.sampled_from(["plain", "packed", "old"]),
            st.binary(max_size=40),  # payload
            st.booleans(),  # properties
            st.integers(0, 2**31 - 1),  # sub-queue id / RDA counter
        ),
        min_size=1,
        max_size=6,
    ),
    cut=st.integers(0, 3),
)
def test_one_option_fast_path_equals_the_general_path(
    monkeypatch: pytest.MonkeyPatch, shapes: list[tuple[int, str, bytes, bool, int]], cut: int
) -> None:
    """Any mix of 28/32-byte headers, option kinds, payloads and properties reads the same
    through the fast path and the general one, and a cut event fails the same way."""
    builder = PushEventBuilder()
    for i, (words, option, payload, props, number) in enumerate(shapes):
        properties = MessageProperties({"k": "v", "n": i}) if props else None
        extra: dict[str, object] = {
            "plain": {"sub_queue_infos": [(number, None)]},
            "packed": {"packed_rda": number % 64},
            "old": {"options": encode_sub_queue_ids_old([number])},
        }[option]
        builder.add(
            i, GUID, payload, properties=properties, header_words=words,
            extended_properties=words == 8, **extra,  # type: ignore[arg-type]
        )  # fmt: skip
    [event] = builder.finish()
    if cut:  # a shorter event whose header still declares the full length
        event = event[: -4 * cut]

    def read() -> object:
        try:
            return decode_push(event)
        except ProtocolError as exc:
            return str(exc)

    fast = read()
    with monkeypatch.context() as patch:
        general_path(patch)
        general = read()
    assert fast == general
