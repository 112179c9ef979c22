"""The generated PUT and PUSH readers and builders (``pybmq.generated.wire_messages``, rendered
from the layout spec's ``messages`` section) against the construct model of the same spec
(``pybmq.generated.wire_layout``): random events built by the fast builders are read back by the
construct model, slowly and obviously, and every field, option and byte of application data
must agree with what the fast readers return."""

from __future__ import annotations

from typing import Any

from construct import GreedyRange
from hypothesis import given, settings
from hypothesis import strategies as st
from pybmq.generated import wire_layout, wire_messages
from pybmq.generated.wire_codec import EVENT_HEADER_SIZE, WORD_SIZE, OptionType
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder, decode_push
from pybmq.wire.put import PutEventBuilder, decode_put

GUIDS = st.binary(min_size=16, max_size=16)
PAYLOADS = st.binary(min_size=0, max_size=48)
PROPERTIES = st.one_of(
    st.none(),
    st.dictionaries(
        st.text("abcdefgh", min_size=1, max_size=6),
        st.one_of(st.integers(-(2**31), 2**31 - 1), st.text(max_size=8), st.binary(max_size=8)),
        min_size=1,
        max_size=3,
    ),
)
INFOS = st.lists(
    st.tuples(st.integers(0, 2**31 - 1), st.one_of(st.none(), st.integers(0, 63))), max_size=3
)


def construct_messages(kind: str, event: bytes) -> list[Any]:
    """The messages of ``event`` as the construct model reads them (full headers only)."""
    header = wire_layout.EventHeader.parse(event[:EVENT_HEADER_SIZE])
    body = event[header.header_words * WORD_SIZE : header.length]
    return list(GreedyRange(wire_layout.MESSAGES[kind]).parse(body))


def construct_options(options: bytes) -> tuple[list[tuple[int, int]], str | None]:
    """(sub-queue id, RdaInfo byte) of each sub-queue info, and the group id, read with the
    construct model of the OptionHeader and the SubQueueInfo."""
    infos: list[tuple[int, int]] = []
    group = None
    pos = 0
    while pos < len(options):
        head = wire_layout.OptionHeader.parse(options[pos : pos + 4])
        if head.packed:
            infos.append((0, head.words & 0xFF))
            pos += 4
            continue
        body = options[pos + 4 : pos + head.words * WORD_SIZE]
        if head.type == OptionType.SUB_QUEUE_INFOS:
            size = head.type_specific * WORD_SIZE
            for at in range(0, len(body), size):
                info = wire_layout.SubQueueInfo.parse(body[at : at + size])
                rda = (info.rda_unlimited << 7) | (info.rda_poisonous << 6) | info.rda_counter
                infos.append((info.sub_queue_id, rda))
        elif head.type == OptionType.MSG_GROUP_ID:
            group = body[: len(body) - body[-1]].decode()
        pos += head.words * WORD_SIZE
    return infos, group


def split_app_data(flags: int, app_data: bytes) -> tuple[bytes, bytes]:
    """(properties area, payload) of uncompressed application data and its padding, by the
    construct model of the MessagePropertiesHeader."""
    data = app_data[: len(app_data) - app_data[-1]]
    if not flags & wire_messages.PUT_PROPERTIES_FLAG:
        return b"", data
    head = wire_layout.MessagePropertiesHeader.parse(data[:6])
    size = ((head.area_words_upper << 16) | head.area_words_lower) * WORD_SIZE
    return data[:size], data[size:]


def agree(kind: str, reference: Any, fast: Any) -> None:
    """One message as construct reads it and as the generated reader does."""
    header = reference.header
    for name in ("queue_id", "guid", "flags", "compression", "schema_id", "header_words"):
        assert getattr(fast, name) == header[name], name
    if kind == "PUT":
        assert fast.crc32c == header.crc32c
    assert fast.options == reference.options
    infos, group = construct_options(reference.options)
    assert [
        (i.sub_queue_id, (i.rda_unlimited << 7) | i.rda_counter) for i in fast.sub_queue_infos
    ] == infos
    assert fast.msg_group_id == group
    assert (fast.properties_area, fast.payload) == split_app_data(header.flags, reference.app_data)
    # The builder's header is the one construct builds from the same fields.
    assert wire_layout.STRUCTS[header_name(kind)].build(header) == header_bytes(kind, fast, header)


def header_name(kind: str) -> str:
    return "PutHeader" if kind == "PUT" else "PushHeader"


def header_bytes(kind: str, fast: Any, header: Any) -> bytes:
    """The header the generated builder writes for the same message."""
    options, app = header.options_words * WORD_SIZE, len(fast.properties_area) + len(fast.payload)
    if kind == "PUT":
        built, _, _ = wire_messages.put_message_header(
            fast.flags, options, app, fast.compression, fast.header_words, fast.queue_id,
            fast.guid, fast.crc32c, fast.schema_id,
        )  # fmt: skip
        return built
    built, _, _ = wire_messages.push_message_header(
        fast.flags, options, app, fast.compression, fast.header_words, fast.queue_id, fast.guid,
        fast.schema_id,
    )  # fmt: skip
    return built


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(
        st.tuples(
            st.integers(-(2**31), 2**31 - 1), GUIDS, PAYLOADS, PROPERTIES, st.booleans(),
            st.one_of(st.none(), st.text("abc", min_size=1, max_size=20)),
        ),
        min_size=1,
        max_size=5,
    ),
    many=st.booleans(),
)  # fmt: skip
def test_put_events_read_as_construct_reads_them(messages: list[Any], many: bool) -> None:
    builder = PutEventBuilder()
    if many:  # the run builder: one queue and one properties object for all
        queue, _, _, props, ack, _ = messages[0]
        properties = MessageProperties(props) if props else None
        builder.add_many(
            queue, [m[2] or b"x" for m in messages], [m[1] for m in messages],
            properties=properties, ack_requested=ack,
        )  # fmt: skip
    else:
        for queue, guid, payload, props, ack, group in messages:
            properties = MessageProperties(props) if props else None
            builder.add(
                queue, payload or b"x", guid=guid, properties=properties, ack_requested=ack,
                msg_group_id=group,
            )  # fmt: skip
    [event] = builder.finish()
    fast = decode_put(event, decompress=False, verify_crc=True)
    reference = construct_messages("PUT", event)
    assert len(fast) == len(reference) == len(messages)
    for ref, message in zip(reference, fast, strict=True):
        agree("PUT", ref, message)


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(
        st.tuples(
            st.integers(-(2**31), 2**31 - 1), GUIDS, PAYLOADS, PROPERTIES,
            st.one_of(st.none(), INFOS, st.integers(0, 63)),
            st.one_of(st.none(), st.text("abc", min_size=1, max_size=20)),
        ),
        min_size=1,
        max_size=5,
    )
)  # fmt: skip
def test_push_events_read_as_construct_reads_them(messages: list[Any]) -> None:
    builder = PushEventBuilder()
    for queue, guid, payload, props, infos, group in messages:
        options: dict[str, Any] = {}
        if isinstance(infos, int):
            options["packed_rda"] = infos
        elif infos is not None:
            options["sub_queue_infos"] = infos
        properties = MessageProperties(props) if props else None
        builder.add(
            queue, guid, payload or b"x", properties=properties, msg_group_id=group, **options
        )
    [event] = builder.finish()
    fast = decode_push(event, decompress=False)
    reference = construct_messages("PUSH", event)
    assert len(fast) == len(reference) == len(messages)
    for ref, message in zip(reference, fast, strict=True):
        agree("PUSH", ref, message)


@settings(max_examples=60, deadline=None)
@given(
    header_size=st.sampled_from(range(6, 15, 2)),
    property_header_size=st.sampled_from(range(6, 15, 2)),
    data_size=st.integers(0, 4000),
    count=st.integers(1, 255),
)
def test_the_properties_header_is_the_one_construct_builds_and_reads(
    header_size: int, property_header_size: int, data_size: int, count: int
) -> None:
    header, pad = wire_messages.properties_header(
        header_size, property_header_size, data_size, count
    )
    total = header_size + data_size
    words = (total + len(pad)) // WORD_SIZE
    assert len(header) == header_size and (total + len(pad)) % WORD_SIZE == 0
    assert header[:6] == wire_layout.MessagePropertiesHeader.build(
        {
            "reserved": 0,
            "property_header_size_2x": property_header_size // 2,
            "header_size_2x": header_size // 2,
            "area_words_upper": words >> 16,
            "area_words_lower": words & 0xFFFF,
            "reserved2": 0,
            "num_properties": count,
        }
    )
    area = header + bytes(data_size) + pad
    assert wire_messages.read_properties_header(area) == (
        header_size,
        property_header_size,
        len(area),
        count,
    )
    assert wire_messages.properties_area_size(area, 0, len(area)) == len(area)
