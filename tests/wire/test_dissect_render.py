"""``render_stream`` (what ``pybmq decode`` prints, without building trees for the common
events) prints exactly ``render_text`` / ``json.dumps`` of ``dissect_stream``'s trees: every
Java SDK vector, generated traffic of every message shape, tap captures, and inputs that fail.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pybmq.errors import ProtocolError
from pybmq.generated.wire_codec import CompressionAlgorithmType, EventType
from pybmq.wire.batches import AckEventBuilder, ConfirmEventBuilder, RejectEventBuilder
from pybmq.wire.capture import MAGIC, encode_record
from pybmq.wire.control import HEARTBEAT_REQ_EVENT
from pybmq.wire.dissect import Node, dissect_capture, dissect_stream
from pybmq.wire.framing import split_events
from pybmq.wire.options import encode_sub_queue_ids_old
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder
from pybmq.wire.put import PutEventBuilder
from pybmq.wire.render import render_stream, render_text

LIMITS = [64, None, 0, 5, 16]


def printed(texts: Iterable[str]) -> tuple[list[str], str | None]:
    """What was printed, then the error that stopped it (if any)."""
    out: list[str] = []
    try:
        for text in texts:
            out.append(text)
    except ProtocolError as exc:
        return out, str(exc)
    return out, None


def through_trees(nodes: Iterator[Node], as_json: bool) -> Iterator[str]:
    for node in nodes:
        yield json.dumps(node) + "\n" if as_json else render_text(node) + "\n\n"


def check(data: bytes, dissector: Callable[..., Iterator[Node]] = dissect_stream) -> int:
    """Both ways give the same output (and error) for every payload limit; returns how much
    was printed."""
    capture = dissector is dissect_capture
    total = 0
    for limit in LIMITS:
        for as_json in (False, True):
            fast = printed(render_stream([data], limit, as_json, capture))
            slow = printed(through_trees(dissector([data], limit, previews=not as_json), as_json))
            assert fast == slow, (limit, as_json)
            total += len("".join(fast[0]))
    return total


def traffic() -> bytes:
    """Every message shape: plain, properties (both formats), options, group ids, short
    headers, compression, empty and odd-sized payloads; ACK, CONFIRM and REJECT entries;
    a heartbeat between them."""
    put, push = PutEventBuilder(), PushEventBuilder()
    ack, confirm, reject = AckEventBuilder(), ConfirmEventBuilder(), RejectEventBuilder()
    for i in range(60):
        payload = bytes((i * 7 + k) % 256 for k in range(i * 5))
        props = MessageProperties({"k": f"v{i}", "n": i}) if i % 9 == 4 else None
        zlib = i % 11 == 3 and len(payload) > 0
        put.add(
            i % 4,
            payload,
            correlation_id=i,
            ack_requested=bool(i % 2),
            properties=props,
            extended_properties=i % 2 == 0,
            msg_group_id=f"g{i}" if i % 13 == 5 else None,
            compression=CompressionAlgorithmType.ZLIB if zlib else CompressionAlgorithmType.NONE,
        )
        guid = i.to_bytes(16, "big")
        push.add(i % 4, guid, payload, properties=props,
                 sub_queue_infos=[(i, None)] if i % 8 == 6 else None)  # fmt: skip
        ack.add(i % 3, i, guid, i % 4)
        confirm.add(i % 4, guid, i % 2)
        reject.add(i % 4, guid)
    plain_put, plain_push = PutEventBuilder(), PushEventBuilder()
    for i in range(20):
        plain_put.add(1, bytes(range(i * 6)), correlation_id=i, ack_requested=True)
        plain_push.add(1, i.to_bytes(16, "big"), bytes(range(i * 6)))
    old_push, old_put = PushEventBuilder(), PutEventBuilder()
    old_push.add(3, bytes(range(16)), b"old peer", header_words=7)
    old_put.add(5, b"old producer", correlation_id=9, header_words=8)
    events = [HEARTBEAT_REQ_EVENT]
    for builder in (plain_put, plain_push, put, push, ack, confirm, reject, old_push, old_put):
        events += builder.finish()
    return b"".join(events)


def test_every_java_vector_prints_the_same(java_vectors: Path) -> None:
    total = 0
    for path in sorted(java_vectors.glob("*.bin")):
        if not path.name.startswith("msg_props"):  # bare property areas, not events
            total += check(path.read_bytes())
    assert total > 4_000_000  # the io dump alone prints over 400 kB per limit and format


def test_every_message_shape_prints_the_same() -> None:
    data = traffic()
    assert check(data) > 0
    assert check(data + b"\x00" * 12) > 0  # then the filler


def test_a_tap_capture_prints_the_same() -> None:
    events, _ = split_events(traffic())
    records = [encode_record(i % 2, i % 3, 1_700_000_000_123_456_789 + i, e.data)
               for i, e in enumerate(events)]  # fmt: skip
    assert check(MAGIC + b"".join(records), dissect_capture) > 0


@pytest.mark.parametrize("cut", [3, 40, 100])
def test_what_prints_before_an_error_is_the_same(cut: int) -> None:
    data = traffic()
    broken = data[:-cut] + b"\x00\x00\x01\x00" + b"\x41" * 12
    fast, error = printed(render_stream([broken]))
    assert error is not None and fast  # it did fail, after printing the events before
    check(broken)


def test_the_options_json_cache_is_bounded_and_right_past_its_bound() -> None:
    from types import SimpleNamespace

    from pybmq.wire import dissect

    dissect._OPTIONS_JSON.clear()
    try:
        for i in range(dissect._OPTIONS_JSON_MAX + 50):
            info = SimpleNamespace(sub_queue_id=i, rda_counter=0, rda_unlimited=0, rda_poisonous=0)
            message = SimpleNamespace(
                options=i.to_bytes(4, "big"), sub_queue_infos=[info], msg_group_id=None
            )
            text = dissect.options_json(message)
            assert json.loads(text)["sub_queue_infos"][0]["sub_queue_id"] == i
        assert len(dissect._OPTIONS_JSON) == dissect._OPTIONS_JSON_MAX
    finally:
        dissect._OPTIONS_JSON.clear()


def test_the_fragment_caches_are_bounded_and_right_past_their_bound() -> None:
    """More distinct event and message heads and properties than the caches hold, and properties too big to
    be cached: the caches stop at their bound and everything still prints as the trees do."""
    from pybmq.wire import dissect, render

    caches = (
        render._HEADS,
        render._BATCH_HEADS,
        render._PROPERTIES,
        *render._MESSAGE_HEADS.values(),
    )
    for cache in caches:
        cache.clear()
    events = []
    for i in range(dissect.FRAGMENTS_MAX + 60):
        push = PushEventBuilder()
        push.add(1, i.to_bytes(16, "big"), b"p" * (4 * i),  # distinct lengths
                 properties=MessageProperties({"k": f"v{i}"}), extended_properties=i % 2 == 0)  # fmt: skip
        events += push.finish()
    big = PushEventBuilder()
    big.add(
        1, bytes(16), b"x", properties=MessageProperties({"big": "b" * dissect.FRAGMENT_KEY_MAX})
    )
    events += big.finish() * 2
    try:
        data = b"".join(events)
        for as_json in (False, True):  # (one payload limit: the payloads are big)
            fast = printed(render_stream([data], 16, as_json))
            slow = printed(through_trees(dissect_stream([data], 16, previews=not as_json), as_json))
            assert fast == slow and len(fast[0]) == len(events)
        pushes = render._MESSAGE_HEADS[EventType.PUSH]
        assert len(render._HEADS) == len(render._PROPERTIES) == dissect.FRAGMENTS_MAX
        assert len(pushes) == dissect.FRAGMENTS_MAX
        assert all(len(area) <= dissect.FRAGMENT_KEY_MAX for _, _, area in render._PROPERTIES)
    finally:
        for cache in caches:
            cache.clear()


_MESSAGE = st.tuples(
    st.sampled_from(["put", "push"]),
    st.sampled_from([None, 7, 8, 9]),  # header words (None: the builder's own)
    st.binary(max_size=70),  # payload
    st.sampled_from([None, "old", "extended"]),  # properties
    st.sampled_from([None, "info", "packed", "old-ids", "group"]),  # options
    st.booleans(),  # compressed
    st.integers(0, 2**24 - 1),  # correlation id / sub-queue id
)


@settings(max_examples=120, deadline=None)
@given(
    messages=st.lists(_MESSAGE, min_size=1, max_size=12),
    limit=st.sampled_from(LIMITS),
    as_json=st.booleans(),
)
def test_fuzzed_messages_print_as_the_trees(
    messages: list[tuple[str, int | None, bytes, str | None, str | None, bool, int]],
    limit: int | None,
    as_json: bool,
) -> None:
    """PUTs and PUSHes of any mix of header sizes, properties, options and compression, and
    ACK, CONFIRM and REJECT entries (their cached fragments warm from earlier examples), print
    exactly as their trees do."""
    put, push = PutEventBuilder(), PushEventBuilder()
    ack, confirm, reject = AckEventBuilder(), ConfirmEventBuilder(), RejectEventBuilder()
    for kind, words, payload, props, option, zlib, number in messages:
        guid = number.to_bytes(16, "little")
        if number % 3 == 0:
            ack.add(number % 16, number, guid, number % 4)
        elif number % 3 == 1:
            confirm.add(number % 5, guid, number % 3)
        else:
            reject.add(number % 5, guid, number % 3)
        properties = MessageProperties({"k": f"v{number % 5}", "n": number}) if props else None
        common: dict[str, Any] = {
            "properties": properties,
            "extended_properties": props == "extended",
            "compression": CompressionAlgorithmType.ZLIB if zlib else CompressionAlgorithmType.NONE,
        }
        if kind == "put":
            if words is not None and words >= 8:
                common["header_words"] = words + 1  # 8 is an older producer's PutHeader
            group = f"g%{number % 3}" if option == "group" else None
            put.add(number % 4, payload, correlation_id=number, msg_group_id=group, **common)
        else:
            if words is not None:
                common["header_words"] = min(words, 8)
            if option == "info":
                common["sub_queue_infos"] = [(number % 7, None)]
            elif option == "packed":
                common["packed_rda"] = number % 64
            elif option == "old-ids":
                common["options"] = encode_sub_queue_ids_old([number % 7])
            elif option == "group":
                common["msg_group_id"] = f"g%{number % 3}"
            push.add(number % 4, number.to_bytes(16, "big"), payload, **common)
    builders = (put, push, ack, confirm, reject)
    data = b"".join(event for b in builders for event in b.finish())
    fast = printed(render_stream([data], limit, as_json))
    slow = printed(through_trees(dissect_stream([data], limit, previews=not as_json), as_json))
    assert fast == slow
