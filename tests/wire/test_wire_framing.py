"""Event framing and control/heartbeat events against the Java SDK vectors and bad input."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pybmq.errors import ProtocolError
from pybmq.generated.wire_codec import EncodingType, EventType
from pybmq.wire.control import (
    HEARTBEAT_REQ_EVENT,
    HEARTBEAT_RSP_EVENT,
    decode_control_event,
    encode_control_event,
)
from pybmq.wire.framing import Event, EventReader, Filler, iter_events, split_events
from pybmq.wire.padding import padding_for

DUMP = "bmq_io_dump_1551267643131"


def event_vectors(java_vectors: Path) -> list[Path]:
    return [
        p
        for p in sorted(java_vectors.glob("*.bin"))
        if not p.name.startswith("msg_props") and p.name != "broker_response_20032018.bin"
    ]


def test_every_event_vector_frames_with_zero_filler_only(java_vectors: Path) -> None:
    for path in event_vectors(java_vectors):
        data = path.read_bytes()
        events, filler = split_events(data)
        assert events, path.name
        end = events[-1].offset + events[-1].header.length
        assert end + (filler.size if filler else 0) == len(data), path.name
        if filler:
            assert filler.offset == end and not any(data[end:])


def test_truncated_vector_is_reported_with_offset(java_vectors: Path) -> None:
    # This capture is 2 bytes shorter than the event it declares (104 bytes).
    data = (java_vectors / "broker_response_20032018.bin").read_bytes()
    with pytest.raises(ProtocolError) as info:
        split_events(data)
    assert info.value.offset == 0 and "104" in str(info.value)


def test_io_dump_decodes_whole_when_fed_in_recorded_chunks(java_vectors: Path) -> None:
    data = (java_vectors / f"{DUMP}.bin").read_bytes()
    sizes = [
        int(line.split()[1])
        for line in (java_vectors / f"{DUMP}.idx").read_text().split("\n")
        if line
    ]
    assert sum(sizes) == len(data)
    reader = EventReader()
    streamed: list[Event] = []
    pos = 0
    for size in sizes:
        streamed.extend(reader.feed(data[pos : pos + size]))
        pos += size
    assert reader.at_boundary()
    whole, filler = split_events(data)
    assert filler is None
    assert [e.data for e in streamed] == [e.data for e in whole]
    assert [e.offset for e in streamed] == [e.offset for e in whole]
    assert {e.type for e in whole} == {EventType.CONTROL, EventType.PUSH, EventType.ACK}


def test_control_vectors_round_trip(java_vectors: Path) -> None:
    seen = set()
    for path in event_vectors(java_vectors):
        for event in split_events(path.read_bytes())[0]:
            if event.type != EventType.CONTROL:
                continue
            encoding, payload = decode_control_event(event)
            seen.add(encoding)
            rebuilt = encode_control_event(
                payload, encoding, fragment_bit=event.header.fragment_bit
            )
            assert rebuilt == event.data, path.name
            if encoding == EncodingType.JSON:
                assert payload.startswith(b"{") and payload.endswith(b"}")
    assert seen == {EncodingType.BER, EncodingType.JSON}


def test_control_event_layout() -> None:
    event = encode_control_event(b'{"a":1}', EncodingType.JSON)
    assert event[:8] == bytes.fromhex("00000010 41020000".replace(" ", ""))[:6] + b"\x20\x00"
    assert event[8:] == b'{"a":1}\x01'
    assert encode_control_event(b"abcd", EncodingType.BER)[-4:] == b"\x04" * 4


def test_heartbeats_are_bare_headers() -> None:
    assert bytes.fromhex("000000084b020000") == HEARTBEAT_REQ_EVENT
    assert bytes.fromhex("000000084c020000") == HEARTBEAT_RSP_EVENT
    (event,) = EventReader().feed(HEARTBEAT_REQ_EVENT)
    assert event.type == EventType.HEARTBEAT_REQ


@pytest.mark.parametrize("length", [0, 1, 7])
def test_too_small_length_is_refused_with_offset(length: int) -> None:
    reader = EventReader()
    assert reader.feed(HEARTBEAT_REQ_EVENT) != []
    with pytest.raises(ProtocolError) as info:
        reader.feed(length.to_bytes(4, "big"))
    assert info.value.offset == 8
    with pytest.raises(ProtocolError):
        reader.feed(b"more")  # the stream stays failed


def test_oversized_length_is_refused_before_the_body_arrives() -> None:
    reader = EventReader(max_event_size=1024)
    with pytest.raises(ProtocolError) as info:
        reader.feed((1025).to_bytes(4, "big"))
    assert "maximum event size" in str(info.value)
    # The default limit is upstream's soft maximum (512 MiB): 2**31-1 is refused at once.
    with pytest.raises(ProtocolError):
        EventReader().feed(b"\x7f\xff\xff\xff")


def test_header_words_must_fit_the_event() -> None:
    with pytest.raises(ProtocolError, match="header words"):
        EventReader().feed(bytes.fromhex("0000000841010000"))
    with pytest.raises(ProtocolError, match="header words"):
        EventReader().feed(bytes.fromhex("0000000841030000") + b"\0" * 4)


def test_non_zero_tail_in_a_file_is_an_error() -> None:
    with pytest.raises(ProtocolError) as info:
        list(iter_events(HEARTBEAT_REQ_EVENT + b"\x00\x01"))
    assert info.value.offset == 8
    assert list(iter_events(HEARTBEAT_REQ_EVENT + b"\0\0"))[-1] == Filler(8, 2)


def test_padding_rule() -> None:
    assert [len(padding_for(n)) for n in range(8)] == [4, 3, 2, 1, 4, 3, 2, 1]


def test_control_padding_errors_are_protocol_errors() -> None:
    bad = bytearray(encode_control_event(b"abc", EncodingType.JSON))
    bad[-1] = 9
    with pytest.raises(ProtocolError):
        decode_control_event(bytes(bad))
    bad[-1] = 1
    bad[6] = 0x60  # encoding 3
    with pytest.raises(ProtocolError, match="encoding"):
        decode_control_event(bytes(bad))
    with pytest.raises(ProtocolError, match="CONTROL"):
        decode_control_event(HEARTBEAT_REQ_EVENT)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(1, 50))
def test_arbitrary_bytes_into_the_reader_raise_only_protocol_error(data: bytes, chunk: int) -> None:
    reader = EventReader(max_event_size=4096)
    try:
        for i in range(0, len(data), chunk):
            for event in reader.feed(data[i : i + chunk]):
                assert len(event.data) == event.header.length
                if event.type == EventType.CONTROL:
                    decode_control_event(event)
    except ProtocolError:
        pass
    with contextlib.suppress(ProtocolError):
        split_events(data)


def test_control_helpers_decode_and_reencode_every_control_vector(java_vectors: Path) -> None:
    from pybmq.generated.bmqp_ctrlmsg import ControlMessage, NegotiationMessage
    from pybmq.wire.control import decode_control, encode_control

    kinds = set()
    for path in event_vectors(java_vectors):
        for event in split_events(path.read_bytes())[0]:
            if event.type != EventType.CONTROL:
                continue
            encoding, message = decode_control(event)
            kinds.add(type(message))
            again = encode_control(message, encoding)
            assert decode_control(again) == (encoding, message)
            if encoding == EncodingType.JSON:
                # Compact JSON has one form, so it re-encodes byte for byte (BER has several).
                assert again == event.data, path.name
    assert kinds == {ControlMessage, NegotiationMessage}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.binary(max_size=300), min_size=1, max_size=20),
    st.lists(st.integers(1, 97), min_size=1, max_size=10),
)
def test_reader_frames_any_chunking_like_the_whole_buffer(
    payloads: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(
        encode_control_event(p, EncodingType.JSON) if i % 3 else HEARTBEAT_REQ_EVENT
        for i, p in enumerate(payloads)
    )
    reader = EventReader()
    got: list[Event] = []
    pos = 0
    i = 0
    while pos < len(stream):
        size = cuts[i % len(cuts)]
        got.extend(reader.feed(stream[pos : pos + size]))
        pos += size
        i += 1
    whole, filler = split_events(stream)
    assert filler is None and reader.at_boundary()
    assert [(e.offset, e.data) for e in got] == [(e.offset, e.data) for e in whole]
    assert len(whole) == len(payloads)


def test_check_event_names_what_is_wrong_with_an_event_header() -> None:
    from pybmq.errors import DecodeError
    from pybmq.generated.wire_codec import EventType
    from pybmq.wire.framing import check_event, event_header_bytes

    with pytest.raises(DecodeError, match="truncated EventHeader: need 8 bytes, 2 left"):
        check_event(b"\0\0", EventType.ACK)
    ack = event_header_bytes(EventType.ACK, 12, type_specific=3) + bytes(4)
    assert check_event(ack, EventType.ACK) == (8, 12, 3)
    with pytest.raises(ProtocolError, match="expected a PUSH event, got ACK"):
        check_event(ack, EventType.PUSH)
    with pytest.raises(ProtocolError, match="declares 12 bytes but only 8"):
        check_event(ack[:8], EventType.ACK)
    bad_words = ack[:5] + b"\x04" + ack[6:]  # 4 header words in a 12-byte event
    with pytest.raises(ProtocolError, match="4 header words for a 12-byte event"):
        check_event(bad_words, EventType.ACK)
