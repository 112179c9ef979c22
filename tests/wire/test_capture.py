"""The tap's capture records: round trip in any chunking, clean errors for bad files, and
payload masking that keeps every length, header and property."""

from __future__ import annotations

from typing import Any

import pytest
from pybmq.errors import ProtocolError
from pybmq.generated import bmqp_ctrlmsg as ctrl
from pybmq.generated.wire_codec import EventType
from pybmq.wire.capture import MAGIC, MASK_BYTE, encode_record, iter_records, mask_event
from pybmq.wire.control import HEARTBEAT_REQ_EVENT, decode_authentication, encode_authentication
from pybmq.wire.framing import MAX_EVENT_SIZE
from pybmq.wire.properties import MessageProperties
from pybmq.wire.push import PushEventBuilder, iter_push
from pybmq.wire.put import PutEventBuilder, iter_put


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


# -- masking ----------------------------------------------------------------------------------


SECRET = b"top secret payload " * 70  # 1330 bytes: compressible


def test_put_and_push_payloads_are_masked_length_and_properties_kept() -> None:
    props = MessageProperties({"who": "me", "n": 3})
    put = PutEventBuilder(compression_threshold=1024)
    put.add(1, SECRET, correlation_id=1, properties=props)
    put.add(1, b"tiny", correlation_id=2)
    put.add(1, SECRET, correlation_id=3, properties=props, compression=1)  # zlib, extended
    put.add(1, SECRET, correlation_id=4, properties=props, compression=1, extended_properties=False)
    push = PushEventBuilder()
    push.add(1, bytes(16), SECRET, properties=props)
    push.add(1, bytes(range(16)), b"", implicit_payload=True)
    for event in (*put.finish(), *push.finish()):
        masked = mask_event(event)
        assert len(masked) == len(event) and masked[:8] == event[:8]
        assert b"secret" not in masked and b"tiny" not in masked
        iterate: Any = iter_put if event[4] & 0x3F == EventType.PUT else iter_push
        before = list(iterate(event, decompress=False))
        after = list(iterate(masked, decompress=False))
        assert [len(m.payload) for m in after] == [len(m.payload) for m in before]
        assert [m.properties_area for m in after] == [m.properties_area for m in before]
        assert all(set(m.payload) <= {MASK_BYTE} for m in after)
        assert [m.payload for m in after].count(b"") == [m.payload for m in before].count(b"")


def test_other_events_are_kept_and_malformed_ones_masked_whole() -> None:
    assert mask_event(HEARTBEAT_REQ_EVENT) == HEARTBEAT_REQ_EVENT
    put = PutEventBuilder()
    put.add(1, b"abc", correlation_id=1)
    (event,) = put.finish()
    broken = event[:-1] + b"\x09"  # invalid padding byte
    masked = mask_event(broken)
    assert masked[:8] == broken[:8] and set(masked[8:]) == {MASK_BYTE}


def test_authentication_material_is_masked() -> None:
    for encoding in ("BER", "JSON"):
        request = ctrl.AuthenticationRequest(mechanism="BASIC", data=b"user:password")
        event = encode_authentication(
            ctrl.AuthenticationMessage(authentication_request=request), encoding
        )
        masked = mask_event(event)
        assert b"password" not in masked and len(masked) == len(event)
        message, used = decode_authentication(masked)
        assert used.name == encoding
        assert message.authentication_request is not None
        assert message.authentication_request.mechanism == "BASIC"
        assert message.authentication_request.data == b"X" * len(b"user:password")


# -- cut events (format 2) and the snap-length framer ---------------------------------------


def test_a_cut_record_keeps_the_events_length_and_format_1_is_still_read() -> None:
    from pybmq.wire.capture import MAGIC_1, record_size

    cut = encode_record(1, 7, 5, HEARTBEAT_REQ_EVENT, length=4096)
    assert len(cut) == record_size(8, 4096) == 17 + 4 + 8
    (record,) = iter_records([MAGIC + cut])
    assert (record.direction, record.connection, record.length, record.truncated) == (
        1,
        7,
        4096,
        True,
    )
    assert record.event == HEARTBEAT_REQ_EVENT and record.offset == len(MAGIC) + 21
    old = MAGIC_1 + encode_record(0, 1, 2, HEARTBEAT_REQ_EVENT)
    (record,) = iter_records([old])
    assert not record.truncated and record.length == 8
    not_cut = bytes([0x80]) + cut[1:17] + (8).to_bytes(4, "big") + HEARTBEAT_REQ_EVENT
    with pytest.raises(ProtocolError, match="a cut record of 8 bytes for an event of 8"):
        list(iter_records([MAGIC + not_cut]))


def test_a_record_that_is_not_one_event_is_a_protocol_error() -> None:
    from pybmq.wire.dissect import dissect_capture

    with pytest.raises(ProtocolError, match="not one event"):
        list(dissect_capture([MAGIC + encode_record(0, 1, 2, bytes(8))]))


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_the_snap_framer_cuts_big_events_and_holds_no_more_than_the_snaplen(chunk: int) -> None:
    from pybmq.wire.capture import SnapFramer
    from pybmq.wire.framing import event_header_bytes

    big = event_header_bytes(EventType.PUT, 10_000) + bytes(range(256)) * 39 + bytes(8)
    stream = HEARTBEAT_REQ_EVENT + big + HEARTBEAT_REQ_EVENT
    framer = SnapFramer(100)
    got = []
    for i in range(0, len(stream), chunk):
        got += framer.feed(stream[i : i + chunk])
        assert framer.held <= 100
    assert got == [(HEARTBEAT_REQ_EVENT, 8), (big[:100], 10_000), (HEARTBEAT_REQ_EVENT, 8)]
    with pytest.raises(ProtocolError):
        framer.feed(b"\x00" * 8)  # an event of length 0
    with pytest.raises(ProtocolError):
        framer.feed(HEARTBEAT_REQ_EVENT)  # the stream is lost: every later feed raises
    with pytest.raises(ValueError):
        SnapFramer(7)
